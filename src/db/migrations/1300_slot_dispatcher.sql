-- The slot dispatcher (docs/calls.md, "The concurrency ceiling"): a freed slot goes straight
-- to the next call in line, so granting a slot costs the same with ten calls waiting or ten
-- thousand. Semantics: src/db/repositories/concurrencySlots.ts; the service that wakes the
-- granted calls: src/services/callSlots.ts.

-- One row per team: the lock every change to the team's slots takes, and how many
-- concurrency_slots rows it has (kept in the same transaction as the rows, like
-- batch_counts). Dead slots (a session past expires_at, a call that ended without releasing)
-- stay counted until reclaimed, which only ever errs towards fewer grants; a team at its
-- ceiling reclaims them before it says no.
CREATE TABLE team_slots (
  team_id uuid PRIMARY KEY REFERENCES teams (id),
  in_use integer NOT NULL DEFAULT 0 CHECK (in_use >= 0)
);
INSERT INTO team_slots (team_id, in_use) SELECT team_id, count(*) FROM concurrency_slots GROUP BY team_id;

-- When the call was granted its slot (by its own request, or by a release handing the slot
-- on); null while it is in line.
ALTER TABLE calls ADD COLUMN slot_granted_at timestamptz;
UPDATE calls c SET slot_granted_at = s.acquired_at FROM concurrency_slots s WHERE s.call_id = c.id;

-- The line: a team's phone calls still scheduled without a slot, first come first served
-- (scheduled_time, then creation order). A granted call leaves the index, so the next call
-- in line is its first due entry, whatever else is granted and not yet started.
CREATE INDEX calls_slot_line_idx ON calls (team_id, scheduled_time, seq)
  WHERE status = 'scheduled' AND type <> 'web' AND slot_granted_at IS NULL;
DROP INDEX calls_team_scheduled_queue_idx;
-- A call of the line whose workflow asked and waits has progress 'waiting_for_slot': the
-- separate waiters table is no longer needed.
DROP TABLE call_slot_waiters;

-- Locks the team's slots and returns its ceiling and the slots it holds. A team at its
-- ceiling first reclaims its dead slots: liveness is derived, never trusted to a release.
CREATE FUNCTION slots_lock_team(p_team uuid, OUT max_slots integer, OUT used integer)
LANGUAGE plpgsql AS $$
DECLARE
  reclaimed integer;
BEGIN
  SELECT t.max_concurrent INTO max_slots FROM teams t WHERE t.id = p_team;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'team % not found', p_team USING ERRCODE = 'no_data_found';
  END IF;
  SELECT ts.in_use INTO used FROM team_slots ts WHERE ts.team_id = p_team FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO team_slots (team_id) VALUES (p_team) ON CONFLICT DO NOTHING;
    SELECT ts.in_use INTO used FROM team_slots ts WHERE ts.team_id = p_team FOR UPDATE;
  END IF;
  IF used >= max_slots THEN
    DELETE FROM concurrency_slots s
     WHERE s.team_id = p_team
       AND NOT ((s.kind = 'session' AND s.expires_at > clock_timestamp())
             OR (s.kind = 'call' AND EXISTS (SELECT 1 FROM calls c WHERE c.id = s.call_id AND c.status IN ('scheduled', 'in-progress'))));
    GET DIAGNOSTICS reclaimed = ROW_COUNT;
    IF reclaimed > 0 THEN
      UPDATE team_slots ts SET in_use = ts.in_use - reclaimed WHERE ts.team_id = p_team RETURNING ts.in_use INTO used;
    END IF;
  END IF;
END
$$;

-- Grants up to p_free slots to the team's line, first in line first, among the calls due
-- now; with p_before_time set (the scheduled_time and seq of the call asking), only to the
-- calls ahead of it. The caller holds the team's lock (slots_lock_team). Each row is a
-- granted call and whether its workflow was waiting for the grant (to be woken).
CREATE FUNCTION slots_grant_line(p_team uuid, p_free integer, p_before_time timestamptz, p_before_seq bigint)
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
       AND c.scheduled_time <= now()
       AND (p_before_time IS NULL OR (c.scheduled_time, c.seq) < (p_before_time, p_before_seq))
     ORDER BY c.scheduled_time, c.seq
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

-- A phone call's workflow asks for its slot. outcome: 'granted' (it holds one: granted now,
-- or earlier when a release handed it on), 'waiting' (its progress becomes waiting_for_slot;
-- a release will grant it and wake it), 'not_scheduled' (cancelled or ended meanwhile; a
-- slot it held is released). Free slots go to the due calls ahead of it first, whether or
-- not their workflows have asked yet; woken: the waiting calls granted on the way.
CREATE FUNCTION request_call_slot(p_team uuid, p_call uuid, OUT outcome text, OUT call_status text, OUT max_slots integer, OUT woken uuid[])
LANGUAGE plpgsql AS $$
DECLARE
  used integer;
  me record;
  holds boolean;
  granted integer;
BEGIN
  SELECT l.max_slots, l.used INTO max_slots, used FROM slots_lock_team(p_team) l;
  SELECT c.status, c.scheduled_time, c.seq INTO me FROM calls c WHERE c.id = p_call AND c.team_id = p_team;
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

-- Frees the slot a session or a call holds; with p_grant, hands the team's free slots to
-- its line. Returns the team (null when the holder had no slot) and the waiting calls granted.
CREATE FUNCTION release_slot(p_holder text, p_grant boolean, OUT released_team uuid, OUT woken uuid[])
LANGUAGE plpgsql AS $$
DECLARE
  lim integer;
  used integer;
  gone integer;
BEGIN
  woken := '{}';
  -- The team's lock first, then the row: the order every slot change takes.
  SELECT s.team_id INTO released_team FROM concurrency_slots s WHERE s.holder_id = p_holder;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT l.max_slots, l.used INTO lim, used FROM slots_lock_team(released_team) l;
  DELETE FROM concurrency_slots s WHERE s.holder_id = p_holder;
  GET DIAGNOSTICS gone = ROW_COUNT;
  IF gone > 0 THEN
    UPDATE team_slots ts SET in_use = ts.in_use - gone WHERE ts.team_id = released_team RETURNING ts.in_use INTO used;
  END IF;
  IF p_grant THEN
    woken := ARRAY(SELECT g.granted_call FROM slots_grant_line(released_team, lim - used, NULL, NULL) g WHERE g.was_waiting);
  END IF;
END
$$;

-- Hands the team's free slots to its line (after a cancel, a raised ceiling, or as the
-- reconciler's repair); returns the waiting calls granted.
CREATE FUNCTION grant_free_slots(p_team uuid, OUT woken uuid[])
LANGUAGE plpgsql AS $$
DECLARE
  lim integer;
  used integer;
BEGIN
  SELECT l.max_slots, l.used INTO lim, used FROM slots_lock_team(p_team) l;
  woken := ARRAY(SELECT g.granted_call FROM slots_grant_line(p_team, lim - used, NULL, NULL) g WHERE g.was_waiting);
END
$$;

-- A web session's slot until p_expires, if the team is below its ceiling; asking again for
-- the same session answers granted without a second slot.
CREATE FUNCTION acquire_session_slot(p_team uuid, p_session text, p_expires timestamptz, OUT granted boolean, OUT max_slots integer)
LANGUAGE plpgsql AS $$
DECLARE
  used integer;
BEGIN
  SELECT l.max_slots, l.used INTO max_slots, used FROM slots_lock_team(p_team) l;
  IF EXISTS (SELECT 1 FROM concurrency_slots s WHERE s.holder_id = p_session) THEN
    granted := true;
    RETURN;
  END IF;
  IF used >= max_slots THEN
    granted := false;
    RETURN;
  END IF;
  INSERT INTO concurrency_slots (holder_id, team_id, kind, expires_at) VALUES (p_session, p_team, 'session', p_expires);
  UPDATE team_slots ts SET in_use = ts.in_use + 1 WHERE ts.team_id = p_team;
  granted := true;
END
$$;
