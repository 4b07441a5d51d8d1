import type { CliCommand } from '../command.js';
import { coreCommands } from './core.js';
import { hookCommands } from './hooks.js';
import { batchCommands } from './batches.js';
import { policyCommands } from './policies.js';

/** Every operator command; a capability adds its list here. */
export const cliCommands: CliCommand[] = [...coreCommands, ...policyCommands, ...hookCommands, ...batchCommands];
