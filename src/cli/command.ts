import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import type { Pool } from '../db/pool.js';
import { isUuid } from '../domain/ids.js';

/** Raised for operator mistakes: printed on stderr without a stack, exit code 1. */
export class CliError extends Error {}

export interface CliContext {
  config: Config;
  db(): Promise<Pool>;
  temporal(): Promise<Client>;
}

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; description: string; required?: boolean }>;

export interface CliCommand {
  /** One or two words, e.g. "keys create". */
  name: string;
  summary: string;
  /** Positional arguments, e.g. ["KEY_ID"]. */
  positionals?: string[];
  options?: OptionSpec;
  run(ctx: CliContext, args: { options: Record<string, string | boolean | undefined>; positionals: string[] }): Promise<Record<string, unknown>>;
  /** Readable output for humans (without --json). */
  text(result: Record<string, unknown>): string;
}

export function requiredString(options: Record<string, string | boolean | undefined>, name: string): string {
  const value = options[name];
  if (typeof value !== 'string' || value.trim() === '') throw new CliError(`--${name} is required`);
  return value.trim();
}

export function positiveIntegerOption(options: Record<string, string | boolean | undefined>, name: string, fallback: number): number {
  const value = options[name];
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) throw new CliError(`--${name} must be a positive whole number`);
  return n;
}

export function uuidArgument(value: string | undefined, label: string): string {
  if (!value || !isUuid(value)) throw new CliError(`${label} must be a UUID`);
  return value;
}
