-- The admission line (docs/calls.md, "Admission"): calls that fall due wait in this line in
-- the database, not as workflow tasks in Temporal's queue. A call scheduled ahead sleeps in
-- its workflow until a grant wakes it (one slotGranted signal), with its own durable timer
-- far past its due time as the safety net; the admission pacer of each worker hands free
-- slots to the head of the line at a configured rate (src/services/admissionPacer.ts), and a
-- release hands on only the slot it freed. So 10,000 calls due at one instant cost no
-- workflow task until their turn, and the head of the line goes first.

-- Whether the call's workflow sleeps until its grant (set when the call is written, from the
-- same facts the workflow's input is made of: src/services/calls.ts). A call that does not
-- (due at once, or written before this) asks for its slot itself and is woken only when it
-- waits (progress waiting_for_slot), as before.
ALTER TABLE calls ADD COLUMN wakes_on_grant boolean NOT NULL DEFAULT false;

-- 1401's slots_grant_line, with was_waiting read as "its workflow must be woken": it waits
-- in line after asking, or sleeps in the admission line.
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
    SELECT c.id, c.progress, c.wakes_on_grant FROM calls c
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
    was_waiting := r.progress = 'waiting_for_slot' OR r.wakes_on_grant;
    RETURN NEXT;
    n := n + 1;
    EXIT WHEN n >= p_free;
  END LOOP;
  IF n > 0 THEN
    UPDATE team_slots ts SET in_use = ts.in_use + n WHERE ts.team_id = p_team;
  END IF;
END
$$;

-- 1300's release_slot, handing on only the slots this release freed: other free slots (2,000
-- at once when a burst falls due under a high ceiling) are the admission pacer's to hand out
-- at its rate, not the first release's.
CREATE OR REPLACE FUNCTION release_slot(p_holder text, p_grant boolean, OUT released_team uuid, OUT woken uuid[])
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
    -- At least one: a holder found above whose row is gone now was a dead slot the lock reclaimed.
    woken := ARRAY(SELECT g.granted_call FROM slots_grant_line(released_team, LEAST(lim - used, GREATEST(gone, 1)), NULL, NULL) g WHERE g.was_waiting);
  END IF;
END
$$;

-- Teams whose line has due calls and who have a free slot (without their lock: the grant
-- checks again under it), the team whose head has waited longest first. A skip scan of the
-- line's index, so its cost grows with the teams in line, not with the calls.
CREATE FUNCTION admission_line_teams(p_limit integer)
RETURNS TABLE (team_id uuid, head timestamptz)
LANGUAGE sql STABLE AS $$
  WITH RECURSIVE line_teams AS (
    (SELECT c.team_id FROM calls c
      WHERE c.status = 'scheduled' AND c.type <> 'web' AND c.slot_granted_at IS NULL
      ORDER BY c.team_id LIMIT 1)
    UNION ALL
    SELECT (SELECT c.team_id FROM calls c
             WHERE c.status = 'scheduled' AND c.type <> 'web' AND c.slot_granted_at IS NULL AND c.team_id > lt.team_id
             ORDER BY c.team_id LIMIT 1)
      FROM line_teams lt WHERE lt.team_id IS NOT NULL
  )
  SELECT lt.team_id, h.head FROM line_teams lt
    JOIN teams t ON t.id = lt.team_id
    LEFT JOIN team_slots ts ON ts.team_id = lt.team_id
    CROSS JOIN LATERAL (
      SELECT COALESCE(c.dial_after, c.scheduled_time) AS head FROM calls c
       WHERE c.team_id = lt.team_id AND c.status = 'scheduled' AND c.type <> 'web' AND c.slot_granted_at IS NULL
       ORDER BY COALESCE(c.dial_after, c.scheduled_time), c.seq LIMIT 1
    ) h
   WHERE lt.team_id IS NOT NULL AND h.head <= now() AND COALESCE(ts.in_use, 0) < t.max_concurrent
   ORDER BY h.head
   LIMIT p_limit
$$;

-- Hands up to p_limit of the team's free slots to the head of its line, under the team's
-- lock: each granted call and whether its workflow must be woken.
CREATE FUNCTION admit_from_line(p_team uuid, p_limit integer)
RETURNS TABLE (granted_call uuid, to_wake boolean)
LANGUAGE plpgsql AS $$
DECLARE
  lim integer;
  used integer;
BEGIN
  SELECT l.max_slots, l.used INTO lim, used FROM slots_lock_team(p_team) l;
  RETURN QUERY SELECT g.granted_call, g.was_waiting FROM slots_grant_line(p_team, LEAST(lim - used, p_limit), NULL, NULL) g;
END
$$;
