-- Calls (docs/calls.md) and the team concurrency ceiling
-- shared by phone calls and web sessions (docs/calls.md).

-- One row per call: the read model the status, result and list endpoints serve. The call
-- workflow (id call-<id>) moves it; conditional updates keep every transition single.
CREATE TABLE calls (
  id uuid PRIMARY KEY,
  -- Insertion order: the tie-breaker of the newest-first listing when created_at is equal.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  team_id uuid NOT NULL REFERENCES teams (id),
  contact_id uuid NOT NULL REFERENCES contacts (id),
  script_id uuid NOT NULL REFERENCES scripts (id),
  type text NOT NULL CHECK (type IN ('outbound', 'inbound', 'web')),
  -- The team's number the call is made from (the did of a web call; null for browser-only).
  from_number text,
  -- The callee's number when the call was scheduled (null for web calls).
  to_number text,
  status text NOT NULL DEFAULT 'scheduled' CHECK (status IN (
    'scheduled', 'in-progress', 'completed', 'voicemail', 'dropout', 'hang-up', 'rang-out',
    'failed', 'cancelled', 'User rejected', 'User unavailable')),
  progress text NOT NULL,
  scheduled_time timestamptz NOT NULL,
  actual_time timestamptz,
  end_time timestamptz,
  duration integer,
  end_reason text,
  -- Post-call analysis: empty until analysed_at is set, a few seconds after the terminal status.
  call_summary text,
  transcript text,
  transcript_json jsonb,
  structured_data jsonb,
  objectives jsonb,
  recording_url text,
  rating jsonb,
  post_call_actions jsonb NOT NULL DEFAULT '[]'::jsonb,
  analysed_at timestamptz,
  -- What happened during the call, written as it happens and never served before analysis:
  -- conversation turns [{ role, text }] and the script runtime's System Notes.
  conversation jsonb NOT NULL DEFAULT '[]'::jsonb,
  system_notes jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- The objects map sent when the call was scheduled (already linked to the contact).
  objects jsonb,
  provider text,
  provider_call_id text,
  original_call_id uuid REFERENCES calls (id),
  participant_identity text,
  -- Null until the call workflow is known to exist: the reconciler starts what is missing.
  workflow_started_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  modified_at timestamptz NOT NULL DEFAULT now()
);
-- Newest-first listing and keyset paging: (created_at, seq) descending within a team.
CREATE INDEX calls_team_created_idx ON calls (team_id, created_at DESC, seq DESC);
CREATE INDEX calls_team_status_created_idx ON calls (team_id, status, created_at DESC, seq DESC);
CREATE INDEX calls_team_type_created_idx ON calls (team_id, type, created_at DESC, seq DESC);
CREATE INDEX calls_team_contact_created_idx ON calls (team_id, contact_id, created_at DESC, seq DESC);
-- The reconciler's scan: calls not yet finished.
CREATE INDEX calls_open_idx ON calls (modified_at) WHERE status IN ('scheduled', 'in-progress');
CREATE INDEX calls_original_idx ON calls (original_call_id) WHERE original_call_id IS NOT NULL;

-- Slots under teams.max_concurrent, held by a web session (until it expires or passes to
-- its call) or by a call (until it is terminal). Liveness is derived, never trusted from
-- explicit release alone: a session slot is live while expires_at > now(), a call slot
-- while its call is not terminal. Acquisition locks the team row, so counting is exact.
CREATE TABLE concurrency_slots (
  holder_id text PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams (id),
  kind text NOT NULL CHECK (kind IN ('call', 'session')),
  call_id uuid REFERENCES calls (id),
  expires_at timestamptz,
  acquired_at timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'call') = (call_id IS NOT NULL)),
  CHECK (kind = 'call' OR expires_at IS NOT NULL)
);
CREATE INDEX concurrency_slots_team_idx ON concurrency_slots (team_id);
CREATE UNIQUE INDEX concurrency_slots_call_idx ON concurrency_slots (call_id) WHERE call_id IS NOT NULL;

-- Phone calls that are due and wait for a slot, served first come first served: ordered
-- by the call's scheduled_time, then by its creation order.
CREATE TABLE call_slot_waiters (
  call_id uuid PRIMARY KEY REFERENCES calls (id),
  team_id uuid NOT NULL REFERENCES teams (id),
  enqueued_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX call_slot_waiters_team_idx ON call_slot_waiters (team_id);
