// A recording link's signature (src/services/recordings.ts) is an HMAC-SHA256 under
// RECORDING_LINK_SECRET of `recording:<call_id in lower case>:<expires>`, in base64url.
// Pinned to a value computed outside this code
// (printf 'recording:<id>:<expires>' | openssl dgst -sha256 -hmac <secret> -binary | base64url),
// so a change of the format, which would revoke every link handed out, cannot pass unseen.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { recordingLinkSignature } from '../../src/services/recordings.js';

test("a recording link's signature is the base64url HMAC-SHA256 of recording:<call_id>:<expires>, the id in lower case", () => {
  const secret = 'test-recording-link-secret-0123';
  const expected = 'f7_81fpdw4RQR1TWR7_aTnUc3TiW4QhqqmcSbMWt1nQ';
  assert.equal(recordingLinkSignature(secret, '3f2504e0-4f89-11d3-9a0c-0305e82c3301', 1767225600), expected);
  assert.equal(recordingLinkSignature(secret, '3F2504E0-4F89-11D3-9A0C-0305E82C3301', 1767225600), expected);
  assert.notEqual(recordingLinkSignature(secret, '3f2504e0-4f89-11d3-9a0c-0305e82c3301', 1767225601), expected);
  assert.notEqual(recordingLinkSignature(`${secret}x`, '3f2504e0-4f89-11d3-9a0c-0305e82c3301', 1767225600), expected);
});
