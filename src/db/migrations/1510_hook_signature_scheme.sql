-- How a signed hook's requests are signed (docs/webhooks.md "Signatures"): the body's HMAC in
-- X-Webhook-Signature, as every hook so far, or Standard Webhooks (webhook-id,
-- webhook-timestamp and webhook-signature over all three), which refuses stale timestamps.
ALTER TABLE hooks
  ADD COLUMN signature_scheme text NOT NULL DEFAULT 'x-webhook-signature'
    CHECK (signature_scheme IN ('x-webhook-signature', 'standard-webhooks'));
