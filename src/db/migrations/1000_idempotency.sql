-- Idempotency keys (docs/idempotency.md): one row per team, endpoint ("POST /api/v1/x") and key.
-- state 'in_progress' while the first request runs (attempt_id names that run, locked_at
-- when it started, for the stale take-over); 'done' with the kept status, serialised body
-- and headers. Rows live 24 hours; expired ones are pruned in small batches by expires_at.
CREATE TABLE idempotency_keys (
  team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  endpoint text NOT NULL,
  idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
  request_hash text NOT NULL,
  state text NOT NULL CHECK (state IN ('in_progress', 'done')),
  attempt_id uuid NOT NULL,
  locked_at timestamptz NOT NULL DEFAULT now(),
  response_status integer,
  response_body text,
  response_headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (team_id, endpoint, idempotency_key),
  CHECK (state = 'in_progress' OR (response_status IS NOT NULL AND response_body IS NOT NULL))
);

CREATE INDEX idempotency_keys_expires_at_idx ON idempotency_keys (expires_at);
