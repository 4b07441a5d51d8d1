-- Which media edge dials a phone call through the SIP trunk (docs/telephony.md, "One call,
-- one INVITE"). The edge that takes a call's dial activity claims the call here before it
-- sends the INVITE: one claim per call, ever, across every edge and every retry of the
-- activity, and only while the call is in progress. A claim is never handed back: a retried
-- dial that finds another's claim does not dial again.
CREATE TABLE phone_dial_claims (
  call_id uuid PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
  claim_id uuid NOT NULL,
  -- The claiming edge's own task queue (the speech of the call runs there once answered).
  media_task_queue text NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now()
);
