// Start-up's refusal of a bad setting, as the settings tests read it.
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../../src/config/index.js';

/** The message start-up stops with for `env` (a ConfigError); fails the test when it starts. */
export function configError(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail('start-up should have stopped');
}
