-- Event webhooks (docs/event-webhooks.md): the URLs a team registers, the events recorded in
-- the transaction of the change that caused them (the outbox), one delivery per event and
-- endpoint (plus redeliveries), and every attempt of a delivery.

CREATE TABLE webhook_endpoints (
  id uuid PRIMARY KEY,
  team_id uuid NOT NULL REFERENCES teams (id),
  url text NOT NULL,
  -- The event types it receives; NULL means every type.
  events text[],
  description text,
  enabled boolean NOT NULL DEFAULT true,
  -- Why it is disabled: 'requested' (PATCH enabled false), 'endpoint_gone' (it answered 410),
  -- 'failing' (every attempt failed for 5 days). NULL while enabled.
  disabled_reason text CHECK (disabled_reason IN ('requested', 'endpoint_gone', 'failing')),
  -- Since when every attempt has failed; NULL after a success.
  failing_since timestamptz,
  -- Signing secrets (whsec_...), kept as given: signing needs them. The previous one keeps
  -- signing next to the new one until previous_secret_expires_at.
  secret text NOT NULL,
  previous_secret text,
  previous_secret_expires_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  deleted_at timestamptz,
  CHECK (enabled = (disabled_reason IS NULL))
);
CREATE INDEX webhook_endpoints_team_idx ON webhook_endpoints (team_id, created_at) WHERE deleted_at IS NULL;
-- The fan-out of every event looks here, in the transaction of a call's status change.
CREATE INDEX webhook_endpoints_live_idx ON webhook_endpoints (team_id) WHERE enabled AND deleted_at IS NULL;

CREATE TABLE webhook_events (
  -- evt_<32 hex>, derived from the entity and the type: one call.ended per call, ever.
  id text PRIMARY KEY,
  team_id uuid NOT NULL,
  type text NOT NULL,
  -- The call of a call.* event (the call_id filter of the deliveries).
  call_id uuid,
  -- json, not jsonb: the text is kept as built, so every delivery sends the same bytes.
  payload json NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE webhook_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- Insertion order: the tie-breaker of the keyset cursor.
  seq bigint GENERATED ALWAYS AS IDENTITY,
  team_id uuid NOT NULL,
  endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id),
  event_id text NOT NULL REFERENCES webhook_events (id),
  event_type text NOT NULL,
  call_id uuid,
  -- Set on a delivery made by redeliver: the delivery it repeats.
  redelivery_of uuid REFERENCES webhook_deliveries (id),
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'retrying', 'succeeded', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error text,
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz,
  -- Set once its workflow webhook-delivery-<id> is known to be started (the sweeper starts the rest).
  workflow_started_at timestamptz
);
-- One first delivery per event and endpoint, whatever retries or restarts record the event again.
CREATE UNIQUE INDEX webhook_deliveries_first_idx ON webhook_deliveries (event_id, endpoint_id) WHERE redelivery_of IS NULL;
CREATE INDEX webhook_deliveries_team_idx ON webhook_deliveries (team_id, created_at DESC, seq DESC);
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id, created_at DESC, seq DESC);
CREATE INDEX webhook_deliveries_call_idx ON webhook_deliveries (call_id) WHERE call_id IS NOT NULL;
CREATE INDEX webhook_deliveries_unstarted_idx ON webhook_deliveries (created_at) WHERE workflow_started_at IS NULL;
CREATE INDEX webhook_deliveries_open_idx ON webhook_deliveries (created_at) WHERE status IN ('pending', 'retrying');

CREATE TABLE webhook_delivery_attempts (
  delivery_id uuid NOT NULL REFERENCES webhook_deliveries (id),
  attempt integer NOT NULL,
  attempted_at timestamptz NOT NULL,
  status_code integer,
  latency_ms integer NOT NULL,
  error text,
  PRIMARY KEY (delivery_id, attempt)
);
