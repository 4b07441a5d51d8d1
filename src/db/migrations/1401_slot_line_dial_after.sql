-- The slot line meets the calling window (docs/calls.md, "Dialing policy"): windows, slots
-- and pacing are decided in one order, and the line is where a closed window takes effect.
-- A call's place in the line is the instant it may first be dialled, dial_after (its
-- scheduled time, or the opening of its calling window, moved on when the window closes
-- before it started), then creation: a call outside its window is not due, so no release
-- hands it a slot and no call behind it waits for it, and a call whose window opens joins
-- the line at that instant. Calls without a window (dial_after = scheduled_time, or null
-- for calls from before 1400) keep the order of 1300. The two functions below are those of
-- 1300_slot_dispatcher.sql with scheduled_time read as COALESCE(dial_after, scheduled_time).

DROP INDEX calls_slot_line_idx;
CREATE INDEX calls_slot_line_idx ON calls (team_id, (COALESCE(dial_after, scheduled_time)), seq)
  WHERE status = 'scheduled' AND type <> 'web' AND slot_granted_at IS NULL;

CREATE OR REPLACE FUNCTION slots_grant_line(p_team uuid, p_free integer, p_before_time timestamptz, p_before_seq bigint)
RETURNS TABLE (granted_call uuid, was_waiting boolean)
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  n integer := 0;
BEGIN
  IF p_free <= 0 THEN
    RETURN;
  END IF;
  FOR r IN
    SELECT c.id, c.progress FROM calls c
     WHERE c.team_id = p_team AND c.status = 'scheduled' AND c.type <> 'web' AND c.slot_granted_at IS NULL
       AND COALESCE(c.dial_after, c.scheduled_time) <= now()
       AND (p_before_time IS NULL OR (COALESCE(c.dial_after, c.scheduled_time), c.seq) < (p_before_time, p_before_seq))
     ORDER BY COALESCE(c.dial_after, c.scheduled_time), c.seq
  LOOP
    -- Re-checked under the row lock: a call cancelled meanwhile is skipped.
    UPDATE calls c SET slot_granted_at = now() WHERE c.id = r.id AND c.status = 'scheduled' AND c.slot_granted_at IS NULL;
    CONTINUE WHEN NOT FOUND;
    INSERT INTO concurrency_slots (holder_id, team_id, kind, call_id) VALUES (r.id::text, p_team, 'call', r.id);
    granted_call := r.id;
    was_waiting := r.progress = 'waiting_for_slot';
    RETURN NEXT;
    n := n + 1;
    EXIT WHEN n >= p_free;
  END LOOP;
  IF n > 0 THEN
    UPDATE team_slots ts SET in_use = ts.in_use + n WHERE ts.team_id = p_team;
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION request_call_slot(p_team uuid, p_call uuid, OUT outcome text, OUT call_status text, OUT max_slots integer, OUT woken uuid[])
LANGUAGE plpgsql AS $$
DECLARE
  used integer;
  me record;
  holds boolean;
  granted integer;
BEGIN
  SELECT l.max_slots, l.used INTO max_slots, used FROM slots_lock_team(p_team) l;
  SELECT c.status, COALESCE(c.dial_after, c.scheduled_time) AS scheduled_time, c.seq INTO me FROM calls c WHERE c.id = p_call AND c.team_id = p_team;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'call % not found', p_call USING ERRCODE = 'no_data_found';
  END IF;
  call_status := me.status;
  woken := '{}';
  holds := EXISTS (SELECT 1 FROM concurrency_slots s WHERE s.call_id = p_call);
  IF me.status = 'in-progress' OR (me.status = 'scheduled' AND holds) THEN
    outcome := 'granted';
    RETURN;
  END IF;
  IF me.status <> 'scheduled' THEN
    outcome := 'not_scheduled';
    IF holds THEN
      DELETE FROM concurrency_slots s WHERE s.call_id = p_call;
      UPDATE team_slots ts SET in_use = ts.in_use - 1 WHERE ts.team_id = p_team RETURNING ts.in_use INTO used;
    END IF;
    -- Its slot, given back now or reclaimed as dead by the lock, goes to the line.
    woken := ARRAY(SELECT g.granted_call FROM slots_grant_line(p_team, max_slots - used, NULL, NULL) g WHERE g.was_waiting);
    RETURN;
  END IF;
  SELECT count(*), coalesce(array_agg(g.granted_call) FILTER (WHERE g.was_waiting), '{}')
    INTO granted, woken
    FROM slots_grant_line(p_team, max_slots - used, me.scheduled_time, me.seq) g;
  IF used + granted < max_slots THEN
    UPDATE calls c SET slot_granted_at = now() WHERE c.id = p_call AND c.status = 'scheduled';
    IF NOT FOUND THEN
      -- Cancelled since it was read.
      outcome := 'not_scheduled';
      SELECT c.status INTO call_status FROM calls c WHERE c.id = p_call;
      RETURN;
    END IF;
    INSERT INTO concurrency_slots (holder_id, team_id, kind, call_id) VALUES (p_call::text, p_team, 'call', p_call);
    UPDATE team_slots ts SET in_use = ts.in_use + 1 WHERE ts.team_id = p_team;
    outcome := 'granted';
  ELSE
    UPDATE calls c SET progress = 'waiting_for_slot', modified_at = now()
     WHERE c.id = p_call AND c.status = 'scheduled' AND c.progress IS DISTINCT FROM 'waiting_for_slot';
    outcome := 'waiting';
  END IF;
END
$$;

-- A cancelled or failed batch stops its contacts' retry chains: looked up by the chain's first call.
CREATE INDEX batch_contacts_call_idx ON batch_contacts (call_id);
