import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { isSupportedCountry } from 'libphonenumber-js';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, parseRetrySchedule } from '../domain/webhookEvents.js';
import { decodeSecretsKey, SecretBox } from '../secrets/secretBox.js';

/** Repository root: config/ sits two levels below it. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce
  .number({ message: 'must be a port number' })
  .int('must be a whole number')
  .min(0, 'must be between 0 and 65535')
  .max(65535, 'must be between 0 and 65535');

const url = (protocols: string[]) =>
  z.string().refine((v) => {
    try {
      return protocols.includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }, `must be a URL (${protocols.join(' or ')})`);

const SECRETS_KEY_FORMAT = 'must be 32 random bytes in base64 (44 characters) or hex (64 characters), such as the output of `openssl rand -base64 32`';

/** The vendor's chat-completions base URL: with it, LLM_API_KEY is required for a model to be configured. */
export const DEFAULT_LLM_BASE_URL = 'https://api.openai.com/v1';

const positiveInt = z.coerce.number({ message: 'must be a number' }).int('must be a whole number').positive('must be positive');

/** Every environment variable the service reads, with its default (README, "Configuration"). */
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: port.default(3000),
  // Only this machine unless told otherwise (docs/security.md); containers set 0.0.0.0.
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default(path.join(PROJECT_ROOT, '.data')),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  // The embedded Postgres's password; unset = generated into DATA_DIR/secrets.json (localSecrets.ts).
  EMBEDDED_POSTGRES_PASSWORD: z.string().min(16, 'must be at least 16 characters').optional(),
  TEMPORAL_ADDRESS: z.string().regex(/^[^\s:]+:\d+$/, 'must be host:port').optional(),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('voice-agent'),
  TEMPORAL_DEV_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  // The service worker's tuning (docs/calls.md, "Worker tuning"): threads that run workflow
  // code, and workflow tasks and local activities in flight at once.
  WORKER_WORKFLOW_THREADS: positiveInt.max(16, 'must be at most 16').default(1),
  WORKER_MAX_WORKFLOW_TASKS: positiveInt.default(40),
  WORKER_MAX_LOCAL_ACTIVITIES: positiveInt.default(100),
  // Where workers keep the workflow bundle, under the content of every file in it, so a restarted
  // worker reads it instead of running webpack again (docs/reliability.md, "Restarting fast").
  // Unset = <DATA_DIR>/workflow-bundles (.tools/workflow-bundles under the test runner: workflowBundleDir).
  WORKFLOW_BUNDLE_CACHE_DIR: z
    .string()
    .refine((dir) => !existsSync(dir) || statSync(dir).isDirectory(), 'must be a directory (a file of that name is there)')
    .optional(),
  TEMPORAL_CLI_PATH: z.string().min(1).default(path.join(PROJECT_ROOT, '.tools', 'bin', 'temporal')),
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  // Prometheus metrics (docs/observability.md): each process serves GET /metrics on a port of
  // its own, bound to METRICS_HOST (this machine only unless told otherwise; never the public API port).
  METRICS_ENABLED: booleanFlag.default(true),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  API_METRICS_PORT: port.default(9464),
  WORKER_METRICS_PORT: port.default(9465),
  MEDIA_EDGE_METRICS_PORT: port.default(9466),
  // The Temporal SDK's own worker metrics (its runtime's Prometheus exporter), in the worker process.
  TEMPORAL_METRICS_PORT: port.default(9467),
  // The same for the media edge's own Temporal workers (speech and dial activities), in `npm run media-edge`.
  MEDIA_EDGE_TEMPORAL_METRICS_PORT: port.default(9468),
  TRUST_PROXY: booleanFlag.default(false),
  DEFAULT_PHONE_REGION: z
    .string()
    .transform((v) => v.toUpperCase())
    .refine((v) => isSupportedCountry(v), 'must be a supported ISO 3166-1 alpha-2 region such as US')
    .default('US'),
  MEDIA_EDGE_WS_URL: url(['ws:', 'wss:']).optional(),
  MEDIA_EDGE_SIP_DOMAIN: z.string().min(1).optional(),
  MEDIA_EDGE_SIP_USERNAME: z.string().min(1).default('web-caller'),
  MEDIA_EDGE_SIP_PASSWORD: z.string().min(1).default('web-caller'),
  MEDIA_EDGE_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  // The SIP URI browsers dial (docs/web-calls.md); unset = sip:agent@<MEDIA_EDGE_SIP_DOMAIN>.
  MEDIA_EDGE_TARGET: z.string().regex(/^sips?:\S+$/i, 'must be a SIP URI such as sip:agent@edge.example.com').optional(),
  // simulator: the service plays the callee; sip: a media edge dials through the SIP trunk (docs/telephony.md, "Outbound calls").
  VOICE_PROVIDER: z.enum(['simulator', 'sip'], { message: 'must be simulator or sip' }).default('simulator'),
  // How long a phone call through the trunk rings before the edge sends CANCEL (rang-out).
  SIP_RING_TIMEOUT_SECONDS: positiveInt.max(600, 'must be at most 600').default(60),
  SIMULATOR_CALL_SECONDS: z.coerce.number({ message: 'must be a number' }).min(0, 'must not be negative').max(3600).default(3),
  KEY_LAST_USED_FLUSH_MS: positiveInt.default(5000),
  // Rate limits (docs/rate-limits.md): requests per rolling 60 s.
  RATE_LIMITS_ENABLED: booleanFlag.default(true),
  RATE_LIMIT_PER_IP: positiveInt.default(300),
  RATE_LIMIT_PER_IP_ENDPOINT: positiveInt.default(120),
  RATE_LIMIT_PER_IP_ENDPOINT_WRITES: positiveInt.default(60),
  RATE_LIMIT_PER_TOKEN_ENDPOINT: positiveInt.default(60),
  RATE_LIMIT_PER_IP_WEBHOOK: positiveInt.default(60),
  RATE_LIMIT_PER_KEY: positiveInt.default(120),
  RATE_LIMIT_PER_KEY_WRITES: positiveInt.default(60),
  RATE_LIMIT_PER_TEAM: positiveInt.default(300),
  RATE_LIMIT_PER_TEAM_WRITES: positiveInt.default(120),
  RATE_LIMIT_REDIS_TIMEOUT_MS: positiveInt.default(500),
  // Hooks signed with Standard Webhooks (docs/webhooks.md): how far webhook-timestamp may be
  // from the server's clock, either way, before the request is refused as stale or replayed.
  HOOK_SIGNATURE_TOLERANCE_SECONDS: positiveInt.max(3600, 'must be at most 3600').default(300),
  IDEMPOTENCY_STALE_AFTER_SECONDS: positiveInt.default(60),
  // Batches (docs/batches.md): poll interval, and calls outstanding per slot of the team ceiling.
  BATCH_POLL_SECONDS: z.coerce.number({ message: 'must be a number' }).positive('must be positive').max(3600).default(2),
  BATCH_WINDOW_FACTOR: positiveInt.default(2),
  // The admission line (docs/calls.md, "Admission"): due calls each worker admits a second
  // (hands a free slot and wakes), and how far past its due time a call scheduled ahead wakes
  // by itself when no admission came (the safety net; 0: every call wakes itself when due).
  ADMISSION_RATE_PER_SECOND: z.coerce.number({ message: 'must be a number' }).positive('must be positive').max(10_000, 'must be at most 10000').default(50),
  ADMISSION_SAFETY_NET_SECONDS: z.coerce.number({ message: 'must be a number' }).int('must be a whole number').min(0, 'must not be negative').max(86_400, 'must be at most 86400').default(3600),
  // Carrier pacing (docs/calls.md, "Carrier pacing"): dial attempts per second per caller number.
  DIAL_RATE_PER_NUMBER: z.coerce.number({ message: 'must be a number' }).positive('must be positive').max(1000, 'must be at most 1000').default(1),
  // Recordings (docs/media-edge.md, "Recordings"): where they are stored and how they are linked.
  RECORDINGS_STORE: z.enum(['local', 's3'], { message: 'must be local or s3' }).default('local'),
  // Unset = <DATA_DIR>/recordings (recordingsDir).
  RECORDINGS_DIR: z.string().min(1).optional(),
  S3_ENDPOINT: url(['http:', 'https:']).optional(),
  S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)').optional(),
  S3_REGION: z.string().regex(/^[a-z0-9-]+$/, 'must be a region name such as us-east-1').default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: booleanFlag.default(false),
  // The base of URLs handed out (recording_url, recording links); unset = http://127.0.0.1:<PORT>.
  PUBLIC_API_URL: url(['http:', 'https:']).optional(),
  RECORDING_LINK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  RECORDING_LINK_TTL_SECONDS: positiveInt.max(604_800, 'must be at most 604800 (7 days)').default(900),
  // Simulated calls' recordings spoken on first read (docs/media-edge.md, "Recordings"): how
  // many are made at once (one text2wave process each) and how many more may wait; past
  // that a read answers 503 with Retry-After.
  RECORDING_SYNTHESIS_CONCURRENCY: positiveInt.max(64, 'must be at most 64').default(2),
  RECORDING_SYNTHESIS_MAX_QUEUED: z.coerce.number({ message: 'must be a number' }).int('must be a whole number').min(0, 'must not be negative').max(10_000, 'must be at most 10000').default(20),
  // Event webhooks (docs/event-webhooks.md): whether endpoints may point at non-public
  // addresses (local development and tests), the delays between attempts, and how many
  // attempts one worker sends at once.
  WEBHOOK_ALLOW_PRIVATE_URLS: booleanFlag.default(false),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default(DEFAULT_WEBHOOK_RETRY_SCHEDULE)
    .transform((v, ctx) => {
      const schedule = parseRetrySchedule(v);
      if (!schedule) {
        ctx.addIssue({ code: 'custom', message: 'must be delays in seconds separated by commas, such as 5,300,1800' });
        return z.NEVER;
      }
      return schedule;
    }),
  WEBHOOK_MAX_CONCURRENT_SENDS: positiveInt.default(500),
  // The key that encrypts secrets kept in the database (docs/security.md): required by the
  // API, the worker and the CLI's hook commands (secretBox); npm start generates one.
  SECRETS_ENCRYPTION_KEY: z.string().refine((v) => decodeSecretsKey(v) !== undefined, SECRETS_KEY_FORMAT).optional(),
  // Earlier keys, comma-separated: they only decrypt, while a rotation completes.
  SECRETS_ENCRYPTION_KEY_PREVIOUS: z
    .string()
    .refine((v) => v.split(',').every((k) => decodeSecretsKey(k) !== undefined), `must be keys separated by commas, each ${SECRETS_KEY_FORMAT.slice('must be '.length)}`)
    .optional(),
  // Traces (docs/observability.md, "Traces"): spans go by OTLP over HTTP (protobuf) to
  // <endpoint>/v1/traces; unset = no tracing at all (no SDK loaded).
  OTEL_EXPORTER_OTLP_ENDPOINT: url(['http:', 'https:']).optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf'], { message: 'must be http/protobuf (the only OTLP protocol this service sends)' }).default('http/protobuf'),
  // Sent with every export (a collector's credentials): key=value pairs separated by commas.
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^\s*[^=,\s]+\s*=[^,]*(,\s*[^=,\s]+\s*=[^,]*)*$/, 'must be key=value pairs separated by commas')
    .optional(),
  // The spans' service.name; unset = voice-agent-api, voice-agent-worker, voice-agent-media-edge, or voice-agent (npm start).
  OTEL_SERVICE_NAME: z.string().regex(/^[\w.-]{1,100}$/, 'must be 1-100 letters, digits, dots, hyphens or underscores').optional(),
  // The language model (docs/agents.md, "Model settings"): an OpenAI-compatible chat-completions
  // service. A model is configured when LLM_API_KEY is set, or when LLM_BASE_URL points elsewhere
  // than the vendor's default (a self-hosted server may need no key); otherwise none is.
  LLM_BASE_URL: url(['http:', 'https:']).default(DEFAULT_LLM_BASE_URL),
  LLM_API_KEY: z.string().regex(/^\S+$/, 'must be one word without spaces').optional(),
  LLM_MODEL: z.string().regex(/^\S{1,200}$/, 'must be a model name without spaces').default('gpt-4.1-mini'),
  // One request to the model, from sending it to its last token.
  LLM_TIMEOUT_SECONDS: positiveInt.max(600, 'must be at most 600').default(30),
  // The post-call analyser (docs/agents.md, "ANALYSER=llm"): llm needs a model configured.
  ANALYSER: z.enum(['deterministic', 'llm'], { message: 'must be deterministic or llm' }).default('deterministic'),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly variable: string, detail: string) {
    super(`Invalid configuration: ${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the environment; throws ConfigError naming the first bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Record<keyof Config, string>> = {}): Config {
  const raw: Record<string, string | undefined> = {};
  for (const key of Object.keys(configSchema.shape)) {
    const value = overrides[key as keyof Config] ?? env[key];
    // An empty variable means "not set", as shells and compose files often leave them.
    raw[key] = value === '' ? undefined : value;
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const variable = String(issue.path[0] ?? 'environment');
    throw new ConfigError(variable, issue.message.replace(/^Invalid input: /, ''));
  }
  const config = parsed.data;
  if (config.RECORDINGS_STORE === 's3') {
    for (const variable of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
      if (!config[variable]) throw new ConfigError(variable, 'is required when RECORDINGS_STORE is s3');
    }
  }
  if (config.ANALYSER === 'llm' && !llmConfigured(config)) {
    throw new ConfigError('ANALYSER', `llm needs a model: set LLM_API_KEY (or LLM_BASE_URL to a server of your own)`);
  }
  return config;
}

/** Whether a language model is configured (LLM_API_KEY set, or LLM_BASE_URL not the vendor's). */
export function llmConfigured(config: Pick<Config, 'LLM_BASE_URL' | 'LLM_API_KEY'>): boolean {
  return Boolean(config.LLM_API_KEY) || config.LLM_BASE_URL.replace(/\/+$/, '') !== DEFAULT_LLM_BASE_URL;
}

/** Whether the public web-call path (create-web-session, create-web-call) is configured. */
export function webCallingConfigured(config: Config): boolean {
  return Boolean(config.MEDIA_EDGE_WS_URL && config.MEDIA_EDGE_SIP_DOMAIN);
}

/** Where the local recording store keeps its files. */
export function recordingsDir(config: Pick<Config, 'RECORDINGS_DIR' | 'DATA_DIR'>): string {
  return config.RECORDINGS_DIR ?? path.join(config.DATA_DIR, 'recordings');
}

/** Where the workers keep their workflow bundles (WORKFLOW_BUNDLE_CACHE_DIR); the test runs share one folder for all their processes. */
export function workflowBundleDir(config: Pick<Config, 'WORKFLOW_BUNDLE_CACHE_DIR' | 'DATA_DIR' | 'NODE_ENV'>): string {
  if (config.WORKFLOW_BUNDLE_CACHE_DIR) return config.WORKFLOW_BUNDLE_CACHE_DIR;
  return config.NODE_ENV === 'test' ? path.join(PROJECT_ROOT, '.tools', 'workflow-bundles') : path.join(config.DATA_DIR, 'workflow-bundles');
}

/** The API's public base URL, without a trailing slash. */
export function publicApiUrl(config: Pick<Config, 'PUBLIC_API_URL' | 'PORT'>): string {
  return (config.PUBLIC_API_URL ?? `http://127.0.0.1:${config.PORT}`).replace(/\/+$/, '');
}

const secretBoxes = new Map<string, SecretBox>();

/**
 * The box that encrypts the secrets kept in the database, under SECRETS_ENCRYPTION_KEY (and
 * opening with SECRETS_ENCRYPTION_KEY_PREVIOUS too); ConfigError when the key is unset.
 */
export function secretBox(config: Pick<Config, 'SECRETS_ENCRYPTION_KEY' | 'SECRETS_ENCRYPTION_KEY_PREVIOUS'>): SecretBox {
  const current = config.SECRETS_ENCRYPTION_KEY;
  if (!current) {
    throw new ConfigError(
      'SECRETS_ENCRYPTION_KEY',
      'is required: the key that encrypts hook and webhook endpoint secrets and kept idempotent answers in the database; 32 random bytes in base64, such as the output of `openssl rand -base64 32` (npm start generates one into DATA_DIR)',
    );
  }
  const cacheKey = `${current}|${config.SECRETS_ENCRYPTION_KEY_PREVIOUS ?? ''}`;
  let box = secretBoxes.get(cacheKey);
  if (!box) {
    const previous = (config.SECRETS_ENCRYPTION_KEY_PREVIOUS ?? '').split(',').filter((k) => k.trim() !== '');
    box = new SecretBox(decodeSecretsKey(current)!, previous.map((k) => decodeSecretsKey(k)!));
    secretBoxes.set(cacheKey, box);
  }
  return box;
}
