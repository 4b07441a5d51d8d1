import type { BatchRecord } from '../../db/repositories/batches.js';
import { cancelBatch, createBatch, listBatches, pauseBatch, resumeBatch, showBatch, type BatchServiceDeps } from '../../services/batches.js';
import { batchWorkflowId, type BatchProgress } from '../../../workflows/contracts.js';
import { CliError, requiredString, uuidArgument, type CliCommand, type CliContext } from '../command.js';
import { requireTeam } from './core.js';
import { retryPolicyOption, WINDOW_OPTIONS, windowOption } from './policies.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

async function serviceDeps(ctx: CliContext): Promise<BatchServiceDeps> {
  return { pool: await ctx.db(), temporal: await ctx.temporal(), config: ctx.config };
}

function parseStartAt(value: string | boolean | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value.trim() : '';
  const date = new Date(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(date.getTime())) throw new CliError('--start-at must be an ISO 8601 date-time, e.g. 2030-01-31T09:00:00Z');
  return date;
}

function statusOnly(batch: BatchRecord) {
  return { batch_id: batch.id, status: batch.status };
}

function describe(batch: BatchRecord, progress: BatchProgress) {
  return {
    batch_id: batch.id,
    team_id: batch.team_id,
    list_id: batch.list_id,
    script_id: batch.script_id,
    from_number: batch.from_number,
    status: batch.status,
    end_reason: batch.end_reason,
    start_at: iso(batch.start_at),
    // null with calling_window_set false: the team's window applies.
    calling_window: batch.calling_window,
    calling_window_set: batch.calling_window_set,
    retry_policy: batch.retry_policy,
    started_at: iso(batch.started_at),
    ended_at: iso(batch.ended_at),
    created_at: iso(batch.created_at),
    workflow_id: batchWorkflowId(batch.id),
    progress,
  };
}

function progressText(p: BatchProgress): string {
  const done = Object.entries(p.done)
    .map(([status, n]) => `${status} ${n}`)
    .join(', ');
  return `${p.total} contacts: ${p.pending} pending, ${p.calling} calling (${p.in_progress} in progress), ${p.done_total} done${done ? ` (${done})` : ''}, ${p.skipped} skipped (${p.skipped_dnc} on the do-not-call list); ${p.attempts} calls made`;
}

const batchIdArg = (positionals: string[]) => uuidArgument(positionals[0], 'BATCH_ID');

/** Batches (docs/batches.md): call every contact of a list once, within the team's ceiling. */
export const batchCommands: CliCommand[] = [
  {
    name: 'batches create',
    summary: 'Call every contact of a list once with a script, from one of the team\'s numbers; contacts added to the list while the batch runs are called too',
    options: {
      team: { type: 'string', description: 'team id', required: true },
      list: { type: 'string', description: 'list id', required: true },
      script: { type: 'string', description: 'script id', required: true },
      from: { type: 'string', description: "one of the team's numbers", required: true },
      'start-at': { type: 'string', description: 'ISO 8601 date-time of the first call (default now)' },
      ...WINDOW_OPTIONS,
      'no-window': { type: 'boolean', description: "calls at any time, whatever the team's default window" },
      'retry-policy': { type: 'string', description: "JSON: status -> { max_attempts, delay_seconds } (default the team's)" },
    },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const listId = uuidArgument(requiredString(options, 'list'), '--list');
      const scriptId = uuidArgument(requiredString(options, 'script'), '--script');
      const fromNumber = requiredString(options, 'from');
      const startAt = parseStartAt(options['start-at']);
      const window = windowOption(options);
      if (window && options['no-window']) throw new CliError('--no-window and --window-days/--window-start/--window-end exclude each other');
      const callingWindow = options['no-window'] ? null : window;
      const retryPolicy = retryPolicyOption(options);
      const batch = await createBatch(await serviceDeps(ctx), { teamId, listId, scriptId, fromNumber, startAt, callingWindow, retryPolicy });
      return {
        batch_id: batch.id,
        status: batch.status,
        list_id: batch.list_id,
        script_id: batch.script_id,
        from_number: batch.from_number,
        start_at: iso(batch.start_at),
        calling_window: batch.calling_window,
        calling_window_set: batch.calling_window_set,
        retry_policy: batch.retry_policy,
        workflow_id: batchWorkflowId(batch.id),
      };
    },
    text: (r) => `Batch ${r.batch_id} ${r.status}, first call at ${r.start_at} (workflow ${r.workflow_id})`,
  },
  {
    name: 'batches list',
    summary: "List a team's batches, newest first",
    options: { team: { type: 'string', description: 'team id', required: true } },
    async run(ctx, { options }) {
      const db = await ctx.db();
      const teamId = await requireTeam(db, requiredString(options, 'team'));
      const batches = await listBatches({ pool: db }, teamId);
      return {
        batches: batches.map((b) => ({ batch_id: b.id, list_id: b.list_id, status: b.status, end_reason: b.end_reason, start_at: iso(b.start_at), created_at: iso(b.created_at) })),
      };
    },
    text: (r) =>
      (r.batches as Record<string, string | null>[]).map((b) => `${b.batch_id}  ${b.status}${b.end_reason ? ` (${b.end_reason})` : ''}  list ${b.list_id}  start ${b.start_at}`).join('\n') ||
      'No batches',
  },
  {
    name: 'batches show',
    summary: 'A batch: status and progress (contacts pending, calling, done by call status, skipped)',
    positionals: ['BATCH_ID'],
    async run(ctx, { positionals }) {
      const batchId = batchIdArg(positionals);
      const { batch, progress } = await showBatch({ pool: await ctx.db() }, batchId);
      return describe(batch, progress);
    },
    text: (r) =>
      [
        `Batch ${r.batch_id}: ${r.status}${r.end_reason ? ` (${r.end_reason})` : ''}`,
        `  list ${r.list_id}, script ${r.script_id}, from ${r.from_number}, start ${r.start_at}`,
        `  calling window ${r.calling_window_set ? (r.calling_window ? JSON.stringify(r.calling_window) : 'none (any time)') : "the team's"}, retry policy ${r.retry_policy ? JSON.stringify(r.retry_policy) : "the team's"}`,
        `  ${progressText(r.progress as BatchProgress)}`,
        `  workflow ${r.workflow_id}`,
      ].join('\n'),
  },
  {
    name: 'batches pause',
    summary: 'Pause a scheduled or running batch: no new calls go out (calls already handed out go on)',
    positionals: ['BATCH_ID'],
    async run(ctx, { positionals }) {
      const batchId = batchIdArg(positionals);
      return statusOnly(await pauseBatch(await serviceDeps(ctx), batchId));
    },
    text: (r) => `Batch ${r.batch_id} ${r.status}`,
  },
  {
    name: 'batches resume',
    summary: 'Resume a paused batch',
    positionals: ['BATCH_ID'],
    async run(ctx, { positionals }) {
      const batchId = batchIdArg(positionals);
      return statusOnly(await resumeBatch(await serviceDeps(ctx), batchId));
    },
    text: (r) => `Batch ${r.batch_id} ${r.status}`,
  },
  {
    name: 'batches cancel',
    summary: 'Cancel a batch: calls not started yet are cancelled, calls in progress end normally',
    positionals: ['BATCH_ID'],
    async run(ctx, { positionals }) {
      const batchId = batchIdArg(positionals);
      return statusOnly(await cancelBatch(await serviceDeps(ctx), batchId));
    },
    text: (r) => `Batch ${r.batch_id} ${r.status}`,
  },
];
