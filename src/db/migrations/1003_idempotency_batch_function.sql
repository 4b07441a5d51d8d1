-- The claims and completions of a batch of concurrent requests in one call (one round
-- trip, one commit), as single-row statements over the primary key. As one SQL statement
-- (UPDATE ... FROM unnest, INSERT ... SELECT FROM unnest) the batch either cost a full
-- plan on every call or, prepared, could settle on a generic plan that scans the whole
-- table; PL/pgSQL caches a plan per statement, and a primary-key lookup has only one.
-- Claims come in key order (the caller sorts them) so that concurrent batches lock rows
-- in the same order. Semantics: src/db/repositories/idempotency.ts runIdempotencyBatch.
--
-- The batch's commit does not wait for its WAL to reach disk (synchronous_commit off
-- for that transaction only), so a batch costs no disk round trip and requests do not
-- queue behind fsyncs. Safe for what idempotency guarantees: WAL is flushed in order, so
-- any durable write a handler made after its claim (inserting the call, with its own
-- synchronous commit) makes the claim durable too; a Postgres crash can lose at most the
-- last fraction of a second of records, whose requests then run again under the same
-- deterministic id (a lost claim had no durable effect yet; a lost completion leaves the
-- claim in progress, to be taken over once stale). See docs/idempotency.md.
CREATE FUNCTION idempotency_batch(
  claim_team uuid[], claim_endpoint text[], claim_key text[], claim_hash text[], claim_attempt uuid[],
  ttl_seconds double precision, stale_after_seconds double precision,
  done_team uuid[], done_endpoint text[], done_key text[], done_attempt uuid[],
  done_status integer[], done_body text[], done_headers jsonb[]
) RETURNS TABLE (out_claim boolean, out_attempt_id uuid, out_created_at timestamptz, out_reclaimed boolean)
LANGUAGE plpgsql AS $$
DECLARE
  i integer;
BEGIN
  -- This transaction (one batch, its own commit) does not wait for its WAL flush.
  PERFORM set_config('synchronous_commit', 'off', true);
  FOR i IN 1 .. coalesce(array_length(done_attempt, 1), 0) LOOP
    UPDATE idempotency_keys k
       SET state = 'done', response_status = done_status[i], response_body = done_body[i], response_headers = done_headers[i]
     WHERE k.team_id = done_team[i] AND k.endpoint = done_endpoint[i] AND k.idempotency_key = done_key[i]
       AND k.attempt_id = done_attempt[i] AND k.state = 'in_progress';
    IF FOUND THEN
      out_claim := false;
      out_attempt_id := done_attempt[i];
      out_created_at := NULL;
      out_reclaimed := NULL;
      RETURN NEXT;
    END IF;
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(claim_attempt, 1), 0) LOOP
    RETURN QUERY
    INSERT INTO idempotency_keys AS k
           (team_id, endpoint, idempotency_key, request_hash, state, attempt_id, locked_at, created_at, expires_at)
    VALUES (claim_team[i], claim_endpoint[i], claim_key[i], claim_hash[i], 'in_progress', claim_attempt[i],
            now(), now(), now() + make_interval(secs => ttl_seconds))
    ON CONFLICT (team_id, endpoint, idempotency_key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash,
           state = 'in_progress',
           attempt_id = EXCLUDED.attempt_id,
           locked_at = now(),
           created_at = CASE WHEN k.expires_at <= now() THEN now() ELSE k.created_at END,
           expires_at = CASE WHEN k.expires_at <= now() OR k.state = 'released' THEN EXCLUDED.expires_at ELSE k.expires_at END,
           response_status = NULL,
           response_body = NULL,
           response_headers = '{}'::jsonb
     WHERE k.expires_at <= now()
        OR k.state = 'released'
        OR (k.state = 'in_progress'
            AND k.request_hash = EXCLUDED.request_hash
            AND k.locked_at <= now() - make_interval(secs => stale_after_seconds))
    RETURNING true, k.attempt_id, k.created_at, (k.created_at <> k.locked_at);
  END LOOP;
END
$$;
