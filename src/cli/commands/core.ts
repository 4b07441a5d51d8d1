import { randomInt } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { secretBox } from '../../config/index.js';
import { generateApiKey } from '../../domain/apiKeys.js';
import { generateHookToken } from '../../domain/hookTokens.js';
import { normalizePhoneNumber } from '../../domain/phone.js';
import { DEMO_SCRIPT } from '../../domain/scripts/demoScript.js';
import { parseScriptDefinition } from '../../domain/scripts/definition.js';
import { withTransaction, type Queryable } from '../../db/pool.js';
import { insertApiKey, listApiKeys, revokeApiKey } from '../../db/repositories/apiKeys.js';
import { createHook } from '../../services/hooks.js';
import { addTeamNumber, setNumberInboundScript } from '../../services/phoneNumbers.js';
import { addPhoneNumber } from '../../db/repositories/phoneNumbers.js';
import { insertScript } from '../../db/repositories/scripts.js';
import { findTeam, insertTeam } from '../../db/repositories/teams.js';
import { CliError, positiveIntegerOption, requiredString, uuidArgument, type CliCommand, type CliContext } from '../command.js';

const DEFAULT_MAX_CONCURRENT = 10;

export async function requireTeam(db: Queryable, teamId: string): Promise<string> {
  uuidArgument(teamId, '--team');
  if (!(await findTeam(db, teamId))) throw new CliError(`team ${teamId} not found`);
  return teamId;
}

export function phoneOption(ctx: CliContext, value: string, name: string): string {
  const normalized = normalizePhoneNumber(value, ctx.config.DEFAULT_PHONE_REGION);
  if (!normalized) throw new CliError(`--${name} is not a valid phone number: ${value}`);
  return normalized;
}

async function createKey(db: Queryable, teamId: string, name: string) {
  const key = generateApiKey();
  const record = await insertApiKey(db, { teamId, prefix: key.prefix, hash: key.hash, name });
  return { key_id: record.id, api_key: key.apiKey, prefix: record.prefix, name: record.name };
}

/** A random valid US number for a demo team (area codes of large US cities). */
function demoPhoneNumber(): string {
  const areas = ['212', '415', '646', '312', '617', '206'];
  return `+1${areas[randomInt(areas.length)]}${randomInt(200, 1000)}${randomInt(1000, 10000)}`;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const coreCommands: CliCommand[] = [
  {
    name: 'bootstrap',
    summary: 'Create a team with one API key, the demo script, one owned number and one webhook hook that schedules a call',
    options: {
      'team-name': { type: 'string', description: 'team name (default "Demo team")' },
      'max-concurrent': { type: 'string', description: `concurrent-call ceiling (default ${DEFAULT_MAX_CONCURRENT})` },
    },
    async run(ctx, { options }) {
      const maxConcurrent = positiveIntegerOption(options, 'max-concurrent', DEFAULT_MAX_CONCURRENT);
      const name = typeof options['team-name'] === 'string' && options['team-name'].trim() ? options['team-name'].trim() : 'Demo team';
      // Before anything is written: without the key the hook's secret cannot be stored.
      const box = secretBox(ctx.config);
      return withTransaction(await ctx.db(), async (db) => {
        const team = await insertTeam(db, { name, maxConcurrent });
        const key = await createKey(db, team.id, 'Default');
        const script = await insertScript(db, { teamId: team.id, name: DEMO_SCRIPT.name, definition: DEMO_SCRIPT });
        const number = await addPhoneNumber(db, team.id, demoPhoneNumber());
        const secret = `whsec_${generateHookToken().token.slice(3)}`;
        const { automation: _automation, ...hook } = await createHook(
          db,
          { teamId: team.id, secret, automation: { kind: 'schedule_call', script_id: script.id, from_number: number.phone_number } },
          box,
        );
        return { team_id: team.id, api_key: key.api_key, key_id: key.key_id, script_id: script.id, from_number: number.phone_number, hook };
      });
    },
    text: (r) => {
      const hook = r.hook as Record<string, string>;
      return [
        `Team      ${r.team_id}`,
        `API key   ${r.api_key}   (shown once; id ${r.key_id})`,
        `Script    ${r.script_id}   (demo)`,
        `Number    ${r.from_number}`,
        `Hook      POST ${hook.path}   (secret ${hook.secret})`,
        '',
        `Try: curl -H "Authorization: Bearer ${r.api_key}" http://127.0.0.1:3000/api/v1/calls`,
      ].join('\n');
    },
  },
  {
    name: 'teams create',
    summary: 'Create a team',
    options: {
      name: { type: 'string', description: 'team name', required: true },
      'max-concurrent': { type: 'string', description: `concurrent-call ceiling (default ${DEFAULT_MAX_CONCURRENT})` },
    },
    async run(ctx, { options }) {
      const team = await insertTeam(await ctx.db(), {
        name: requiredString(options, 'name'),
        maxConcurrent: positiveIntegerOption(options, 'max-concurrent', DEFAULT_MAX_CONCURRENT),
      });
      return { team_id: team.id };
    },
    text: (r) => `Team ${r.team_id} created`,
  },
  {
    name: 'keys create',
    summary: 'Create an API key for a team (the full key is shown this once)',
    options: {
      team: { type: 'string', description: 'team id', required: true },
      name: { type: 'string', description: 'key name (default "Default")' },
    },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const name = typeof options.name === 'string' && options.name.trim() ? options.name.trim() : 'Default';
      return createKey(db, teamId, name);
    },
    text: (r) => `API key ${r.api_key}\n(id ${r.key_id}, prefix ${r.prefix}, name ${r.name}; it is not shown again)`,
  },
  {
    name: 'keys list',
    summary: "List a team's API keys: prefix, name, creation and last-used dates (never the key)",
    options: { team: { type: 'string', description: 'team id', required: true } },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const keys = await listApiKeys(db, teamId);
      return {
        keys: keys.map((k) => ({
          key_id: k.id,
          prefix: k.prefix,
          name: k.name,
          created_at: iso(k.created_at),
          last_used_at: iso(k.last_used_at),
          revoked_at: iso(k.revoked_at),
        })),
      };
    },
    text: (r) =>
      (r.keys as Array<Record<string, string | null>>)
        .map((k) => `${k.prefix}  ${k.name}  created ${k.created_at}  last used ${k.last_used_at ?? 'Never'}${k.revoked_at ? `  revoked ${k.revoked_at}` : ''}  (${k.key_id})`)
        .join('\n') || 'No keys',
  },
  {
    name: 'keys revoke',
    summary: 'Revoke an API key, immediately and permanently',
    positionals: ['KEY_ID'],
    async run(ctx, { positionals }) {
      const keyId = uuidArgument(positionals[0], 'KEY_ID');
      const key = await revokeApiKey(await ctx.db(), keyId);
      if (!key) throw new CliError(`key ${keyId} not found`);
      return { key_id: key.id, revoked_at: iso(key.revoked_at) };
    },
    text: (r) => `Key ${r.key_id} revoked at ${r.revoked_at}`,
  },
  {
    name: 'numbers add',
    summary: 'Give a team a phone number it can call from (and, with --inbound-script, take calls on)',
    options: {
      team: { type: 'string', description: 'team id', required: true },
      number: { type: 'string', description: 'phone number (E.164 or local format)', required: true },
      'inbound-script': { type: 'string', description: "script id the number's incoming calls run (docs/telephony.md, \"Inbound calls\")" },
    },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const phoneNumber = phoneOption(ctx, requiredString(options, 'number'), 'number');
      const inboundScriptId = options['inbound-script'] === undefined ? undefined : uuidArgument(requiredString(options, 'inbound-script'), '--inbound-script');
      const number = await addTeamNumber(db, { teamId, phoneNumber, inboundScriptId });
      return { number_id: number.id, phone_number: number.phone_number, inbound_script_id: number.inbound_script_id };
    },
    text: (r) => `Number ${r.phone_number} added (${r.number_id})${r.inbound_script_id ? `; incoming calls run script ${r.inbound_script_id}` : ''}`,
  },
  {
    name: 'numbers set-inbound',
    summary: "Set the script a team number's incoming calls run (--script), or stop it taking calls (--none)",
    positionals: ['NUMBER'],
    options: {
      team: { type: 'string', description: 'team id', required: true },
      script: { type: 'string', description: 'script id for incoming calls' },
      none: { type: 'boolean', description: 'no script: incoming calls to the number are refused (SIP 480)' },
    },
    async run(ctx, { options, positionals }) {
      if ((options.script === undefined) === (options.none === undefined)) throw new CliError('give exactly one of --script and --none');
      if (positionals.length !== 1) throw new CliError('NUMBER is required (one phone number)');
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const phoneNumber = normalizePhoneNumber(positionals[0], ctx.config.DEFAULT_PHONE_REGION);
      if (!phoneNumber) throw new CliError(`NUMBER is not a valid phone number: ${positionals[0]}`);
      const scriptId = options.none ? null : uuidArgument(requiredString(options, 'script'), '--script');
      const number = await setNumberInboundScript(db, { teamId, phoneNumber, scriptId });
      return { number_id: number.id, phone_number: number.phone_number, inbound_script_id: number.inbound_script_id };
    },
    text: (r) => (r.inbound_script_id ? `Incoming calls to ${r.phone_number} run script ${r.inbound_script_id}` : `${r.phone_number} takes no incoming calls`),
  },
  {
    name: 'scripts create',
    summary: 'Create a script from a JSON file (format: docs/scripts.md)',
    options: {
      team: { type: 'string', description: 'team id', required: true },
      file: { type: 'string', description: 'path of the script JSON file', required: true },
    },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const file = requiredString(options, 'file');
      let input: unknown;
      try {
        input = JSON.parse(await readFile(file, 'utf8'));
      } catch (err) {
        throw new CliError(`cannot read ${file} as JSON: ${(err as Error).message}`);
      }
      const parsed = parseScriptDefinition(input);
      if (!parsed.ok) throw new CliError(`invalid script: ${parsed.message}`);
      const script = await insertScript(db, { teamId, name: parsed.script.name, definition: parsed.script });
      return { script_id: script.id };
    },
    text: (r) => `Script ${r.script_id} created`,
  },
];
