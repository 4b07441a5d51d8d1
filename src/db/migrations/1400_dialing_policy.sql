-- Dialing policy (docs/calls.md, "Dialing policy"): contacts' time zones, a team's default
-- calling window, zone, retry policy and dial rate, the do-not-call list, retry chains and
-- calling windows on calls and batches, and the shared store of the dial pacer.

-- The contact's IANA zone; null = derived from the number, else the team's default.
ALTER TABLE contacts ADD COLUMN timezone text;

-- Set by the operator (admin teams set-policy); a team without a row has no window (any
-- time), no default zone, no retries and no team dial rate.
CREATE TABLE team_dialing_policies (
  team_id uuid PRIMARY KEY REFERENCES teams (id),
  -- { days, start, end } in the callee's local time; null = any time.
  calling_window jsonb,
  -- The zone of callees whose zone is neither set nor derivable from their number.
  timezone text,
  -- status -> { max_attempts, delay_seconds }; null = no retries.
  retry_policy jsonb,
  -- Dial attempts per second across the team's numbers; null = only the per-number rate.
  dial_rate double precision CHECK (dial_rate > 0),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Numbers the team must never call. One row per (team, E.164 number): the primary key is the
-- lookup of every create-phone-call and dial, so its cost does not grow with the list.
CREATE TABLE do_not_call (
  team_id uuid NOT NULL REFERENCES teams (id),
  phone_number text NOT NULL,
  -- Insertion order: the tie-breaker of the newest-first listing.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  reason text,
  -- api: POST /api/v1/do-not-call; call: the callee asked during a call (call_id).
  source text NOT NULL CHECK (source IN ('api', 'call')),
  call_id uuid,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (team_id, phone_number)
);
CREATE INDEX do_not_call_team_created_idx ON do_not_call (team_id, created_at DESC, seq DESC);

-- Calls: their place in a retry chain, and the dialing policy resolved when they were
-- scheduled (a retry keeps its chain's window, zone and policy).
ALTER TABLE calls
  -- 1 for the first call of a chain; original_call_id names that first call on the others.
  ADD COLUMN attempt integer NOT NULL DEFAULT 1,
  -- The retry this call's end scheduled, set in the retry's own insert.
  ADD COLUMN next_attempt_call_id uuid,
  ADD COLUMN retry_policy jsonb,
  -- The window the call waits for (null = any time) and the zone it is read in.
  ADD COLUMN calling_window jsonb,
  ADD COLUMN timezone text,
  -- Not dialled before this instant: the first opening of its window at or after
  -- scheduled_time, moved on when the window closes before the call could start.
  ADD COLUMN dial_after timestamptz;

-- Batches: a calling window and a retry policy for their calls. calling_window_set says the
-- batch overrides the team's window (calling_window null with it set = any time).
ALTER TABLE batches
  ADD COLUMN calling_window jsonb,
  ADD COLUMN calling_window_set boolean NOT NULL DEFAULT false,
  ADD COLUMN retry_policy jsonb;

-- A contact's chain in a batch: the call it is on now (null = its first call, call_id).
ALTER TABLE batch_contacts ADD COLUMN current_call_id uuid;

-- The dial pacer's store when REDIS_URL is unset: rate-limiter-flexible's Postgres limiter
-- (its own column layout), one row per pacing key and slot of time.
CREATE TABLE dial_pacing (
  key varchar(255) PRIMARY KEY,
  points integer NOT NULL DEFAULT 0,
  expire bigint
);
