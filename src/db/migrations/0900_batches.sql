-- Batches (docs/batches.md): call every contact of a list once with a script.
-- The batch workflow (id batch-<id>) keeps its intake in Postgres, not in its history:
-- batch_contacts holds one row per contact taken in, and its primary key is what makes
-- "never called twice by one batch" hold whatever the workflow or a retried activity does.

CREATE TABLE batches (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  team_id uuid NOT NULL REFERENCES teams (id),
  list_id uuid NOT NULL REFERENCES lists (id),
  script_id uuid NOT NULL REFERENCES scripts (id),
  -- E.164, one of the team's numbers.
  from_number text NOT NULL,
  status text NOT NULL DEFAULT 'scheduled'
    CHECK (status IN ('scheduled', 'running', 'paused', 'completed', 'cancelled', 'failed')),
  -- Why an ended batch ended (all_called, cancelled, list_deleted, script_not_found, ...).
  end_reason text,
  start_at timestamptz NOT NULL,
  -- The intake's position in the list: every member with list_contacts.seq <= intake_seq
  -- has been taken in (members only ever get larger seqs).
  intake_seq bigint NOT NULL DEFAULT 0,
  started_at timestamptz,
  ended_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batches_team_created_idx ON batches (team_id, created_at DESC, id);
-- The notifier's lookup: active batches of a list.
CREATE INDEX batches_active_list_idx ON batches (list_id) WHERE status IN ('scheduled', 'running', 'paused');

-- One row per (batch, contact), ever. call_id is derived from (batch_id, contact_id), so
-- scheduling the call again after a crash or a retry finds the same call.
--   pending  taken in, not called yet
--   calling  its call was handed to the call engine and is not terminal yet
--   done     its call ended; call_status holds the terminal status
--   skipped  not called: removed from the list before its call, or no phone number
-- A skipped contact that is added to the list again becomes pending again.
CREATE TABLE batch_contacts (
  batch_id uuid NOT NULL REFERENCES batches (id),
  contact_id uuid NOT NULL REFERENCES contacts (id),
  -- list_contacts.seq when taken in: calls go out in the order contacts joined the list.
  seq bigint NOT NULL,
  call_id uuid NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'calling', 'done', 'skipped')),
  call_status text,
  skip_reason text,
  added_at timestamptz NOT NULL DEFAULT now(),
  dispatched_at timestamptz,
  finished_at timestamptz,
  PRIMARY KEY (batch_id, contact_id)
);
CREATE INDEX batch_contacts_pending_idx ON batch_contacts (batch_id, seq) WHERE state = 'pending';
CREATE INDEX batch_contacts_calling_idx ON batch_contacts (batch_id) WHERE state = 'calling';

-- Progress counters, moved in the same transaction as the batch_contacts rows they count,
-- so reading progress costs the same for ten contacts or a hundred thousand. bucket is
-- pending, calling, skipped, or done:<terminal call status>.
CREATE TABLE batch_counts (
  batch_id uuid NOT NULL REFERENCES batches (id),
  bucket text NOT NULL,
  n bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (batch_id, bucket)
);
