-- Which media edge holds a create-web-call call's media (docs/web-calls.md, "Claims"). The
-- media edge claims the call before it binds a port for it: one claim per call, across all
-- edges, and only while the call is scheduled. A claim whose media never came up is handed
-- back (its claim_id names it, so a late release cannot drop a newer claim); the claim of a
-- call that connected stays with it.
CREATE TABLE web_call_claims (
  call_id uuid PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
  claim_id uuid NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now()
);
