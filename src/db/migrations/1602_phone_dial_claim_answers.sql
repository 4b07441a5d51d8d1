-- The voice provider's answer to a claimed dial (docs/reliability.md, "One dial per call"):
-- written right after the provider answered, so a retried dial attempt of the same workflow
-- run (its local activity timed out under load after it claimed the dial) goes on with the
-- answer instead of dialling again or failing the call. NULL while the dial is out, and for
-- the SIP trunk's claims (the edge holds those calls).
ALTER TABLE phone_dial_claims ADD COLUMN answer jsonb;
