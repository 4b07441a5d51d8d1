/**
 * Temporal test environments backed by the project's own toolchain (scripts/bootstrap.mjs):
 *
 * - createTimeSkippingEnv(): the Java time-skipping test server (io.temporal:temporal-test-server)
 *   started through scripts/temporal-test-server/launch.sh. Use it for workflow tests that
 *   sleep, wait for timers or time out: awaiting a workflow result skips time.
 * - createLocalEnv(): the Temporal CLI dev server (.tools/bin/temporal), a full server in
 *   memory, real time. Use it when the test needs full server features the test server lacks
 *   (visibility queries / listing workflows, ListSearchAttributes, schedules, ...).
 *
 * Both register the project's custom search attributes (src/temporal/searchAttributes.ts),
 * without which the server rejects starting or upserting a workflow that carries them.
 * Call `env.teardown()` when done (it kills the server process).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SearchAttributeType, type LogLevel } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType, type SearchAttributeKey } from '@temporalio/common/lib/search-attributes.js';
import {
  TestWorkflowEnvironment,
  type LocalTestWorkflowEnvironmentOptions,
  type TimeSkippingTestWorkflowEnvironmentOptions,
} from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { SEARCH_ATTRIBUTE_DEFINITIONS } from '../../src/temporal/searchAttributes.js';

export { SEARCH_ATTRIBUTE_DEFINITIONS };

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

type DefinitionType = 'Keyword' | 'Int' | 'Datetime' | 'Text';
const TYPES: Record<DefinitionType, SearchAttributeType> = {
  Keyword: SearchAttributeType.KEYWORD,
  Int: SearchAttributeType.INT,
  Datetime: SearchAttributeType.DATETIME,
  Text: SearchAttributeType.TEXT,
};

/** The custom search attributes as SDK keys ({ name, type }), in definition order. */
export const SEARCH_ATTRIBUTES: SearchAttributeKey<SearchAttributeType>[] = Object.entries(
  SEARCH_ATTRIBUTE_DEFINITIONS as Record<string, DefinitionType>,
).map(([name, type]) => ({ name, type: TYPES[type] }));

/**
 * The node:test options of a workflow test: a limit of its own. A workflow the time-skipping
 * server strands (test/workflows/batchWorkflow.test.ts, on its poll) leaves its test waiting
 * for ever; without this the test holds its file until the runner's 600 s file limit and the
 * report names only the file. These tests take seconds, about half a minute on a busy machine.
 */
export const WORKFLOW_TEST = { timeout: 120_000 } as const;

/** The launcher of the Java time-skipping test server (override: TEMPORAL_TEST_SERVER_EXECUTABLE). */
export function testServerExecutable(): string {
  return process.env.TEMPORAL_TEST_SERVER_EXECUTABLE || path.join(ROOT, 'scripts', 'temporal-test-server', 'launch.sh');
}

/** The Temporal CLI binary (override: TEMPORAL_CLI_PATH). */
export function temporalCliPath(): string {
  return process.env.TEMPORAL_CLI_PATH || path.join(ROOT, '.tools', 'bin', 'temporal');
}

/**
 * Registers the custom search attributes on a server through the operator service.
 * Attributes that already exist are left alone (the server answers ALREADY_EXISTS).
 */
export async function registerSearchAttributes(env: TestWorkflowEnvironment, namespace = env.namespace ?? 'default'): Promise<void> {
  const searchAttributes: Record<string, number> = {};
  for (const { name, type } of SEARCH_ATTRIBUTES) searchAttributes[name] = encodeSearchAttributeIndexedValueType(type)!;
  try {
    await env.connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    // 6 = ALREADY_EXISTS: the whole request is rejected if one exists, so add the rest one by one.
    if ((err as { code?: number }).code !== 6) throw err;
    for (const [name, type] of Object.entries(searchAttributes)) {
      try {
        await env.connection.operatorService.addSearchAttributes({ namespace, searchAttributes: { [name]: type } });
      } catch (inner) {
        if ((inner as { code?: number }).code !== 6) throw inner;
      }
    }
  }
}

/**
 * The SDK's default logger prints every worker's INFO lines (webpack bundle, state changes)
 * into the test output. Before the first environment or worker of a test process, install
 * the Temporal runtime with a WARN logger (override: TEMPORAL_LOG_LEVEL=TRACE|DEBUG|INFO|WARN|ERROR).
 * A no-op when the runtime already exists (e.g. a test installed its own first).
 */
export function quietTemporalRuntime(): void {
  const level = (process.env.TEMPORAL_LOG_LEVEL?.toUpperCase() || 'WARN') as LogLevel;
  try {
    Runtime.install({ logger: new DefaultLogger(level) });
  } catch {
    /* already installed or instantiated */
  }
}

/**
 * A fresh time-skipping environment on its own Java test server (random free port), with
 * the custom search attributes registered. Start-up takes ~0.3–1 s.
 *
 * Test-server limits worth knowing: no visibility queries (client.workflow.list and
 * count are UNIMPLEMENTED), no ListSearchAttributes; search attributes set at start or
 * upserted by the workflow are visible through handle.describe().
 */
export async function createTimeSkippingEnv(opts: TimeSkippingTestWorkflowEnvironmentOptions = {}): Promise<TestWorkflowEnvironment> {
  quietTemporalRuntime();
  const env = await startingAgainIfSlow(() =>
    TestWorkflowEnvironment.createTimeSkipping({
      ...opts,
      server: { executable: { type: 'existing-path', path: testServerExecutable() }, ...opts.server },
    }),
  );
  try {
    await registerSearchAttributes(env, 'default');
  } catch (err) {
    await env.teardown();
    throw err;
  }
  return env;
}

/**
 * A fresh local environment on its own Temporal CLI dev server (in-memory SQLite, random
 * free port, no UI), with the custom search attributes registered. Real time, full server.
 */
export async function createLocalEnv(opts: LocalTestWorkflowEnvironmentOptions = {}): Promise<TestWorkflowEnvironment> {
  quietTemporalRuntime();
  return startingAgainIfSlow(() =>
    TestWorkflowEnvironment.createLocal({
      ...opts,
      server: {
        executable: { type: 'existing-path', path: temporalCliPath() },
        searchAttributes: SEARCH_ATTRIBUTES,
        ...opts.server,
      },
    }),
  );
}

/**
 * The SDK gives a server it starts 5 s to answer, then fails ("did not start within 5s"; see
 * docs/toolchain.md): on a machine busy with other work a JVM can miss that. Such a start is
 * tried again, up to three times in all, on a fresh port; any other failure is thrown at once.
 */
async function startingAgainIfSlow(start: () => Promise<TestWorkflowEnvironment>): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= 3 || !/did not start within/.test((err as Error)?.message ?? '')) throw err;
    }
  }
}
