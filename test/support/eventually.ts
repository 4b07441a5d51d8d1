// Waiting in a test for what another loop or process does: nothing asserts how long it takes
// (a shared machine stretches it); the ceiling only turns a hang into a failure that names
// what never came.
import assert from 'node:assert/strict';

/** Resolves once `check` holds, asked every `everyMs`; fails naming `what` if it still does not after `timeoutMs`. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, { timeoutMs = 30_000, everyMs = 20 }: { timeoutMs?: number; everyMs?: number } = {}): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
