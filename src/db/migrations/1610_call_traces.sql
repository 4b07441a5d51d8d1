-- The trace a web call belongs to (docs/observability.md, "Traces"): the W3C traceparent of
-- what created the call (the create-web-call request, or the web session's redemption), kept
-- only while tracing is on. The media edge is given it with the call's claim or redemption,
-- so the call's events join that trace, as a phone call's join its dial activity's.
CREATE TABLE call_traces (
  call_id uuid PRIMARY KEY REFERENCES calls (id) ON DELETE CASCADE,
  traceparent text NOT NULL
);
