// The operator CLI (README, "The operator CLI") as a function: src/cli/main.ts runs it with the
// process's arguments, environment and streams; tests run it in-process with their own
// (test/support/cli.ts), which saves a process start per command.
// With --json a command prints exactly one JSON object on stdout; errors go to stderr
// with a non-zero exit code.
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { ensureLocalSecrets } from '../config/localSecrets.js';
import { openDatabase, openTemporal, type Database, type Temporal } from '../infrastructure.js';
import { createLogger } from '../logging/logger.js';
import { UseCaseError } from '../services/errors.js';
import { CliError, type CliCommand, type CliContext } from './command.js';
import { cliCommands } from './commands/index.js';

function usage(commands: CliCommand[]): string {
  const lines = ['Usage: npm run --silent admin -- <command> [options] [--json]', '', 'Commands:'];
  for (const c of commands) {
    const opts = Object.entries(c.options ?? {})
      .map(([name, o]) => (o.required ? `--${name} ${name.toUpperCase()}` : `[--${name} ${o.type === 'string' ? name.toUpperCase() : ''}]`.replace(' ]', ']')))
      .join(' ');
    lines.push(`  ${[c.name, ...(c.positionals ?? []), opts].filter(Boolean).join(' ')}`);
    lines.push(`      ${c.summary}`);
    for (const [name, o] of Object.entries(c.options ?? {})) lines.push(`      --${name.padEnd(16)} ${o.description}`);
  }
  lines.push('', 'Global options:', '  --json             print exactly one JSON object on stdout', '  --help             this text');
  lines.push('', 'Environment: DATABASE_URL (else the embedded Postgres of DATA_DIR, with the secrets of DATA_DIR/secrets.json), TEMPORAL_ADDRESS, DEFAULT_PHONE_REGION, SECRETS_ENCRYPTION_KEY.');
  return lines.join('\n');
}

/**
 * On the embedded database the CLI is part of the local install: it shares `npm start`'s
 * generated secrets (the key that encrypts hook secrets among them), generating them first
 * when it runs before the service ever did. With DATABASE_URL they come from the environment.
 */
function loadCliConfig(env: NodeJS.ProcessEnv): Config {
  const config = loadConfig(env);
  if (config.DATABASE_URL) return config;
  ensureLocalSecrets(config.DATA_DIR, env);
  return loadConfig(env);
}

function findCommand(commands: CliCommand[], argv: string[]): { command: CliCommand; rest: string[] } | undefined {
  const words = argv.filter((a) => !a.startsWith('-'));
  for (const length of [2, 1]) {
    const name = words.slice(0, length).join(' ');
    const command = commands.find((c) => c.name === name);
    if (command) {
      const rest = [...argv];
      for (const word of name.split(' ')) rest.splice(rest.indexOf(word), 1);
      return { command, rest };
    }
  }
  return undefined;
}

function createContext(config: Config): CliContext & { close(): Promise<void> } {
  // The CLI's own logs never touch stdout.
  const logger = createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL, 2);
  let database: Promise<Database> | undefined;
  let temporal: Promise<Temporal> | undefined;
  return {
    config,
    db: async () => (await (database ??= openDatabase(config, logger))).pool,
    temporal: async (): Promise<Client> => {
      if (!config.TEMPORAL_ADDRESS) {
        // Attach to the dev server `npm start` runs; never start a second one from the CLI.
        config = { ...config, TEMPORAL_ADDRESS: `127.0.0.1:${config.TEMPORAL_DEV_PORT}` };
      }
      return (await (temporal ??= openTemporal(config, logger))).client;
    },
    async close() {
      await (await temporal?.catch(() => undefined))?.close();
      await (await database?.catch(() => undefined))?.close();
    },
  };
}

/** Where a run of the CLI reads its settings and writes its output. */
export interface AdminIo {
  env: NodeJS.ProcessEnv;
  stdout(text: string): void;
  stderr(text: string): void;
}

async function main(argv: string[], io: AdminIo): Promise<number> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  if (args.includes('--help') || args[0] === 'help') {
    io.stdout(`${usage(cliCommands)}\n`);
    return 0;
  }
  // No command is a usage error: like every failure, its message goes to stderr.
  if (args.length === 0) throw new CliError(`a command is required.\n\n${usage(cliCommands)}`);
  const found = findCommand(cliCommands, args);
  if (!found) throw new CliError(`unknown command: ${args.filter((a) => !a.startsWith('-')).slice(0, 2).join(' ')}. Run with --help for the list.`);
  const { command, rest } = found;
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(Object.entries(command.options ?? {}).map(([n, o]) => [n, { type: o.type }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    throw new CliError(`${(err as Error).message}\nUsage: ${command.name} ${Object.keys(command.options ?? {}).map((o) => `--${o}`).join(' ')}`);
  }
  const ctx = createContext(loadCliConfig(io.env));
  try {
    const result = await command.run(ctx, { options: parsed.values as Record<string, string | boolean | undefined>, positionals: parsed.positionals });
    io.stdout(`${json ? JSON.stringify(result) : command.text(result)}\n`);
    return 0;
  } finally {
    await ctx.close();
  }
}

/** Runs one CLI command; resolves to the process exit code (0, 1 for an operator error, 2 for a bug). */
export async function runAdmin(argv: string[], io: AdminIo): Promise<number> {
  try {
    return await main(argv, io);
  } catch (err) {
    // A use case's refusal (not found, wrong state, ...) is an operator error like a CliError.
    const known = err instanceof CliError || err instanceof ConfigError || err instanceof UseCaseError;
    io.stderr(`admin: ${known ? (err as Error).message : (err as Error).stack ?? String(err)}\n`);
    return known ? 1 : 2;
  }
}
