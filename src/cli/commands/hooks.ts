import { secretBox } from '../../config/index.js';
import type { HookAutomation } from '../../domain/hookAutomation.js';
import { HOOK_SIGNATURE_SCHEMES, type HookSignatureScheme } from '../../domain/hookSignature.js';
import { findList } from '../../db/repositories/lists.js';
import { findTeamPhoneNumber } from '../../db/repositories/phoneNumbers.js';
import { findTeamScript } from '../../db/repositories/scripts.js';
import { createHook, listHooks, revokeHookById, type HookSummary } from '../../services/hooks.js';
import { CliError, requiredString, uuidArgument, type CliCommand } from '../command.js';
import { phoneOption, requireTeam } from './core.js';

function describeAutomation(automation: HookAutomation): string {
  switch (automation.kind) {
    case 'schedule_call':
      return `schedule_call (script ${automation.script_id}, from ${automation.from_number})`;
    case 'add_to_list':
      return `add_to_list (list ${automation.list_id})`;
    default:
      return 'none (runs are recorded, nothing else happens)';
  }
}

/** --signature: one of the schemes, or undefined when not given. */
function signatureOption(value: string | boolean | undefined): HookSignatureScheme | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string' && (HOOK_SIGNATURE_SCHEMES as readonly string[]).includes(value)) return value as HookSignatureScheme;
  throw new CliError(`--signature must be one of ${HOOK_SIGNATURE_SCHEMES.join(', ')}`);
}

/** Webhook hooks (docs/webhooks.md): create, list and revoke. */
export const hookCommands: CliCommand[] = [
  {
    name: 'hooks create',
    summary: 'Create a webhook trigger URL; with --script and --from each request schedules a call, with --list it adds the contact to a list',
    options: {
      team: { type: 'string', description: 'team id', required: true },
      secret: { type: 'string', description: 'HMAC-SHA256 signing secret (requests must then be signed, as --signature says)' },
      signature: {
        type: 'string',
        description:
          'how requests are signed: x-webhook-signature (default with --secret: X-Webhook-Signature, the HMAC of the body) or standard-webhooks (webhook-id, webhook-timestamp, webhook-signature; stale timestamps refused; a whsec_ secret, generated when --secret is not given)',
      },
      script: { type: 'string', description: 'script id for the schedule_call automation' },
      from: { type: 'string', description: "one of the team's numbers, for the schedule_call automation" },
      list: { type: 'string', description: 'list id for the add_to_list automation' },
    },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const secret = typeof options.secret === 'string' && options.secret !== '' ? options.secret : null;
      const signatureScheme = signatureOption(options.signature);
      if (signatureScheme === 'x-webhook-signature' && secret === null) throw new CliError('--signature x-webhook-signature needs --secret (the HMAC key)');
      // Checked before anything is written: a signed hook's secret is stored encrypted under SECRETS_ENCRYPTION_KEY.
      const box = secret === null && signatureScheme !== 'standard-webhooks' ? undefined : secretBox(ctx.config);
      const callOptions = options.script !== undefined || options.from !== undefined;
      let automation: HookAutomation = { kind: 'none' };
      if (callOptions && options.list !== undefined) throw new CliError('--list cannot be combined with --script and --from: a hook has one automation');
      if (callOptions) {
        const scriptId = uuidArgument(requiredString(options, 'script'), '--script');
        const from = phoneOption(ctx, requiredString(options, 'from'), 'from');
        if (!(await findTeamScript(db, teamId, scriptId))) throw new CliError(`script ${scriptId} not found in team ${teamId}`);
        if (!(await findTeamPhoneNumber(db, teamId, from))) throw new CliError(`number ${from} does not belong to team ${teamId}`);
        automation = { kind: 'schedule_call', script_id: scriptId, from_number: from };
      } else if (options.list !== undefined) {
        const listId = uuidArgument(requiredString(options, 'list'), '--list');
        if (!(await findList(db, teamId, listId))) throw new CliError(`list ${listId} not found in team ${teamId}`);
        automation = { kind: 'add_to_list', list_id: listId };
      }
      const hook = await createHook(db, { teamId, secret, automation, signatureScheme }, box);
      return { id: hook.id, token: hook.token, path: hook.path, secret: hook.secret };
    },
    text: (r) => `Hook ${r.id}: POST ${r.path}${r.secret ? ` (signed with secret ${r.secret})` : ' (unsigned)'}\n(the token in the path is not shown again)`,
  },
  {
    name: 'hooks list',
    summary: "List a team's webhook hooks: automation, whether and how signed, creation and revocation dates (never the token or secret)",
    options: { team: { type: 'string', description: 'team id', required: true } },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      return { hooks: await listHooks(db, teamId) };
    },
    text: (r) =>
      (r.hooks as HookSummary[])
        .map(
          (h) =>
            `${h.id}  ${describeAutomation(h.automation)}  ${h.signed ? `signed (${h.signature})` : 'unsigned'}  created ${h.created_at}${h.revoked_at ? `  revoked ${h.revoked_at}` : ''}`,
        )
        .join('\n') || 'No hooks',
  },
  {
    name: 'hooks revoke',
    summary: 'Revoke a webhook hook, immediately and permanently (its URL answers 404)',
    positionals: ['HOOK_ID'],
    async run(ctx, { positionals }) {
      const hookId = uuidArgument(positionals[0], 'HOOK_ID');
      const hook = await revokeHookById(await ctx.db(), hookId);
      if (!hook) throw new CliError(`hook ${hookId} not found`);
      return { id: hook.id, revoked_at: hook.revoked_at };
    },
    text: (r) => `Hook ${r.id} revoked at ${r.revoked_at}`,
  },
];
