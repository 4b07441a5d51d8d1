/**
 * Secrets at rest (docs/security.md): hook and webhook endpoint signing secrets are stored
 * sealed under SECRETS_ENCRYPTION_KEY. This pass, run when the API starts, seals what is not
 * sealed under the current key yet: rows written before encryption existed, and rows of a
 * previous key once the key was rotated (SECRETS_ENCRYPTION_KEY_PREVIOUS still opens them).
 * Kept idempotent answers are not re-sealed: they expire within 24 hours.
 */
import { secretBox, type Config } from '../config/index.js';
import type { Queryable } from '../db/pool.js';
import { listHookSecretsToReseal, replaceHookSecret } from '../db/repositories/hooks.js';
import { listWebhookEndpointSecretsToReseal, replaceWebhookEndpointSecrets } from '../db/repositories/webhookEndpoints.js';
import type { Logger } from '../logging/logger.js';
import { SecretUnreadable, type SecretBox } from '../secrets/secretBox.js';
import { hookSecretContext } from './hooks.js';
import { webhookEndpointSecretContext } from './webhookEndpoints.js';

const BATCH = 500;

export interface SecretsAtRestDeps {
  pool: Queryable;
  config: Pick<Config, 'SECRETS_ENCRYPTION_KEY' | 'SECRETS_ENCRYPTION_KEY_PREVIOUS'>;
  logger?: Logger;
}

export interface SecretsAtRestReport {
  /** Rows whose secrets this pass sealed under the current key. */
  sealed: number;
  /** Rows no configured key opens (left as they are): a wrong or missing key. */
  unreadable: number;
}

/**
 * Seals every hook and webhook endpoint secret not sealed under the current key. Safe to
 * run from several processes at once: a row changes only while it still holds what was read.
 */
export async function sealSecretsAtRest(deps: SecretsAtRestDeps): Promise<SecretsAtRestReport> {
  const box = secretBox(deps.config);
  const report: SecretsAtRestReport = { sealed: 0, unreadable: 0 };
  const firstError: { err?: SecretUnreadable } = {};
  const reseal = (stored: string, context: string): string => box.seal(box.open(stored, context), context);
  const attempt = async (write: () => Promise<boolean>) => {
    try {
      if (await write()) report.sealed += 1;
    } catch (err) {
      if (!(err instanceof SecretUnreadable)) throw err;
      report.unreadable += 1;
      firstError.err ??= err;
    }
  };

  for (let after: string | null = null; ; ) {
    const hooks = await listHookSecretsToReseal(deps.pool, box.currentPrefix, after, BATCH);
    for (const hook of hooks) {
      await attempt(() => replaceHookSecret(deps.pool, hook.id, hook.secret, reseal(hook.secret, hookSecretContext(hook.token_hash))));
    }
    if (hooks.length < BATCH) break;
    after = hooks[hooks.length - 1].id;
  }
  for (let after: string | null = null; ; ) {
    const endpoints = await listWebhookEndpointSecretsToReseal(deps.pool, box.currentPrefix, after, BATCH);
    for (const endpoint of endpoints) {
      const context = webhookEndpointSecretContext(endpoint.id);
      await attempt(() =>
        replaceWebhookEndpointSecrets(deps.pool, endpoint.id, endpoint, {
          secret: current(box, endpoint.secret, context, reseal),
          previous_secret: endpoint.previous_secret === null ? null : current(box, endpoint.previous_secret, context, reseal),
        }),
      );
    }
    if (endpoints.length < BATCH) break;
    after = endpoints[endpoints.length - 1].id;
  }

  if (report.sealed > 0) deps.logger?.info({ sealed: report.sealed, keyId: box.keyId }, 'sealed stored secrets under the current SECRETS_ENCRYPTION_KEY');
  if (report.unreadable > 0) {
    deps.logger?.error(
      { unreadable: report.unreadable, keyId: box.keyId, err: firstError.err },
      'stored hook or webhook endpoint secrets cannot be decrypted with SECRETS_ENCRYPTION_KEY or SECRETS_ENCRYPTION_KEY_PREVIOUS: those hooks and endpoints fail until the key they were written with is configured',
    );
  }
  return report;
}

/** The value as it is when already sealed under the current key, else re-sealed. */
function current(box: SecretBox, stored: string, context: string, reseal: (stored: string, context: string) => string): string {
  return box.isCurrent(stored) ? stored : reseal(stored, context);
}
