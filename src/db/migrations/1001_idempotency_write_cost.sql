-- Cheaper writes on the request path (bench/idempotency.ts):
-- * no foreign key to teams: it made every claim lock its team's row (FOR KEY SHARE),
--   so concurrent requests of one team contended on it; records expire within 24 hours
--   and are only ever read by their team's requests;
-- * room on every page for the completion's new row version, so that keeping a response
--   is a HOT update (no new index entries: it changes no indexed column).
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_team_id_fkey;
ALTER TABLE idempotency_keys SET (fillfactor = 60);
