-- Webhook deliveries that carried X-Webhook-Id (docs/webhooks.md): the same id on the
-- same hook within 24 hours answers the same run_id and runs nothing again. The primary
-- key makes that exact under concurrent duplicates; an expired row is taken over in place
-- by the next delivery with its id, and old rows are purged a few at a time on delivery.
CREATE TABLE hook_deliveries (
  hook_id uuid NOT NULL REFERENCES hooks (id),
  delivery_id text NOT NULL,
  run_id uuid NOT NULL UNIQUE,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (hook_id, delivery_id)
);
CREATE INDEX hook_deliveries_received_idx ON hook_deliveries (received_at);
