-- A key whose answer is not kept (400, 401, 403, 429, a 5xx before any change) is marked
-- 'released' instead of deleted: the next request with the key claims it again whatever
-- its body, and keeps the record's created_at, from which the request's deterministic
-- resource id is derived; so a retry after a released failure reuses the id, while a key
-- reused after its record expired gets a fresh one.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_state_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_state_check CHECK (state IN ('in_progress', 'done', 'released'));
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_check;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_done_check
  CHECK (state <> 'done' OR (response_status IS NOT NULL AND response_body IS NOT NULL));
