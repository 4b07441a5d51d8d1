-- A call that asks for its slot itself (due at once, or its safety net fired) while calls
-- sleeping in the admission line are due ahead of it waits behind them: the admission pacer
-- reaches it in line order and wakes it (docs/calls.md, "Admission"). Before, its request
-- granted every free slot to the calls ahead at once: one call created during a campaign's
-- burst would wake the whole line together, the burst the line exists to avoid. Without
-- sleeping calls ahead the request is 1401's.
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
    woken := ARRAY(SELECT g.granted_call FROM slots_grant_line(p_team, LEAST(max_slots - used, 1), NULL, NULL) g WHERE g.was_waiting);
    RETURN;
  END IF;
  IF EXISTS (
    SELECT 1 FROM calls c
     WHERE c.team_id = p_team AND c.status = 'scheduled' AND c.type <> 'web' AND c.slot_granted_at IS NULL AND c.wakes_on_grant
       AND COALESCE(c.dial_after, c.scheduled_time) <= now()
       AND (COALESCE(c.dial_after, c.scheduled_time), c.seq) < (me.scheduled_time, me.seq)
  ) THEN
    granted := max_slots;
  ELSE
    SELECT count(*), coalesce(array_agg(g.granted_call) FILTER (WHERE g.was_waiting), '{}')
      INTO granted, woken
      FROM slots_grant_line(p_team, max_slots - used, me.scheduled_time, me.seq) g;
  END IF;
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
