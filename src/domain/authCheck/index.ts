/**
 * The Auth Check tool (docs/scripts.md "Auth Check"): compares a
 * Record Array with a Check Array position by position. Pure and deterministic, so the
 * script runtime runs it inside the call workflow; docs/scripts.md documents every rule.
 */
import { getPath, namespaceOf, plainReference, fieldPathReference, renderTemplate } from '../scripts/templates.js';
import { comparableText, comparePosition, type FailureReason, type PositionOutcome } from './matching.js';
import { reextractFromTranscript, type TranscriptTurn } from './transcript.js';

export { exactMatch, semanticMatch, exactForm, closeWords, editDistance, editBudget, comparePosition } from './matching.js';
export { extractAnswer, reextractFromTranscript, type TranscriptTurn, type AnswerKind } from './transcript.js';

/** The step's tool name in scripts. */
export const AUTH_CHECK_TOOL = 'Auth | Check';
/** The variable namespace the tool owns: scripts read it and never write it. */
export const AUTH_CHECK_NAMESPACE = 'auth_check';

/** The tool's settings as written in the script (entries unresolved: literals, `{{refs}}`, `{{ref}}.field`). */
export interface AuthCheckSettings {
  record_array: ReadonlyArray<string | number>;
  check_array: ReadonlyArray<string | number>;
  required_match_count?: string | number | null;
  exact?: string | boolean | null;
  check_transcript?: ReadonlyArray<string | boolean> | string | null;
  raw_data?: string | null;
}

export type AuthCheckStatus = 'verified' | 'failed' | 'insufficient_data' | 'error';
export type AuthCheckMethod = 'exact' | 'semantic' | 'mixed';

/** Every variable of the auth_check namespace, written on every run. */
export interface AuthCheckVariables {
  verified: boolean;
  status: AuthCheckStatus;
  matched_count: number;
  required_count: number;
  matched_checks: string[];
  failed_checks: string[];
  exact_match: boolean;
  semantic_match: boolean;
  method: AuthCheckMethod;
  notes: string;
  verified_data: string;
}

export interface PositionResult {
  position: number;
  record_value: string | null;
  check_value: string | null;
  outcome: PositionOutcome;
  reason?: FailureReason;
  /** True when Check Transcript refreshed the check value of this position. */
  refreshed?: boolean;
}

export interface RecordResult {
  /** Index of the record in the record set. */
  record: number;
  matched_count: number;
  verified: boolean;
  positions: PositionResult[];
}

/** A Check Transcript refresh written back into the variable the Check Array entry references. */
export interface VariableWrite {
  variable: string;
  value: string;
  previous: string;
  position: number;
}

export interface AuthCheckRun {
  variables: AuthCheckVariables;
  /** The step's output `result` (rule 8). */
  result: boolean;
  mode: 'single' | 'record_set';
  /** Per-position results of the single record, or of the reported record of a record set. */
  positions: PositionResult[];
  /** Every record of a record set (record_set mode only). */
  records?: RecordResult[];
  writes: VariableWrite[];
}

export interface AuthCheckContext {
  /** A variable's current value, undefined when not set. */
  lookup(name: string): unknown;
  /** Region for numeric dates (03/04/1985): DEFAULT_PHONE_REGION. */
  region: string;
  /** The live transcript so far (for Check Transcript). */
  transcript: readonly TranscriptTurn[];
}

type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

const blank = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

/** Required Match Count: blank = every position; a literal whole number of at least 1; anything else is invalid. */
export function parseRequiredMatchCount(value: AuthCheckSettings['required_match_count'], positions: number): Parsed<number> {
  if (blank(value)) return { ok: true, value: positions };
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 1) return { ok: true, value };
  if (typeof value === 'string' && /^\d+$/.test(value.trim()) && Number(value.trim()) >= 1 && Number.isSafeInteger(Number(value.trim()))) {
    return { ok: true, value: Number(value.trim()) };
  }
  return { ok: false, message: `Required Match Count ${JSON.stringify(value)} is not a whole number of at least 1` };
}

/** Exact: Yes or blank = exact matching only; No = semantic matching also allowed. Anything else stays exact. */
export function parseExact(value: AuthCheckSettings['exact']): { semanticAllowed: boolean; note?: string } {
  if (blank(value) || value === true) return { semanticAllowed: false };
  if (value === false) return { semanticAllowed: true };
  const v = String(value).trim().toLowerCase();
  if (v === 'yes' || v === 'true') return { semanticAllowed: false };
  if (v === 'no' || v === 'false') return { semanticAllowed: true };
  return { semanticAllowed: false, note: `Exact ${JSON.stringify(value)} is not Yes or No; exact matching only.` };
}

/** Check Transcript: one true/false per Check Array position, or not set. A string may list them comma-separated or as JSON. */
export function parseCheckTranscript(value: AuthCheckSettings['check_transcript'], checkLength: number): Parsed<boolean[] | undefined> {
  if (blank(value)) return { ok: true, value: undefined };
  let entries: unknown[];
  if (typeof value === 'string') {
    const text = value.trim();
    if (text.startsWith('[')) {
      try {
        const parsed: unknown = JSON.parse(text);
        entries = Array.isArray(parsed) ? parsed : [parsed];
      } catch {
        return { ok: false, message: `Check Transcript ${JSON.stringify(value)} is not a list of true and false` };
      }
    } else entries = text.split(',');
  } else entries = [...(value as ReadonlyArray<unknown>)];
  const flags: boolean[] = [];
  for (const [i, entry] of entries.entries()) {
    const v = typeof entry === 'boolean' ? String(entry) : typeof entry === 'string' ? entry.trim().toLowerCase() : '';
    if (v !== 'true' && v !== 'false') return { ok: false, message: `Check Transcript value ${JSON.stringify(entry)} at position ${i} is not true or false` };
    flags.push(v === 'true');
  }
  if (flags.length !== checkLength) {
    return { ok: false, message: `Check Transcript has ${flags.length} value${flags.length === 1 ? '' : 's'} for ${checkLength} Check Array position${checkLength === 1 ? '' : 's'}` };
  }
  return { ok: true, value: flags };
}

/** An entry's value: a plain `{{ref}}` keeps the variable's own value; anything else is rendered as text. */
function resolveEntry(entry: string | number, ctx: AuthCheckContext): unknown {
  if (typeof entry === 'number') return entry;
  const ref = plainReference(entry);
  if (ref) return ctx.lookup(ref);
  return renderTemplate(entry, (name) => ctx.lookup(name));
}

/** A record set from Raw Data: a JSON array of records, or one JSON object (a set of one). */
export function parseRecordSet(source: unknown): Parsed<unknown[]> {
  let data = source;
  if (typeof source === 'string') {
    if (source.trim() === '') return { ok: false, message: 'Raw Data is empty' };
    try {
      data = JSON.parse(source);
    } catch {
      return { ok: false, message: 'Raw Data is not JSON' };
    }
  }
  if (Array.isArray(data)) return data.length > 0 ? { ok: true, value: data } : { ok: false, message: 'Raw Data holds no records' };
  if (typeof data === 'object' && data !== null) return { ok: true, value: [data] };
  return { ok: false, message: source === undefined || source === null ? 'Raw Data is not set' : 'Raw Data is not a JSON record set' };
}

const text = (v: unknown) => comparableText(v) ?? null;
const positionsList = (n: number) => Array.from({ length: n }, (_, i) => String(i));

function comparePositions(recordValues: unknown[], checkValues: unknown[], refreshed: Set<number>, positions: number, semanticAllowed: boolean, region: string): PositionResult[] {
  return Array.from({ length: positions }, (_, i): PositionResult => {
    const base = { position: i, record_value: i < recordValues.length ? text(recordValues[i]) : null, check_value: i < checkValues.length ? text(checkValues[i]) : null };
    const extra = refreshed.has(i) ? { refreshed: true } : {};
    if (i >= recordValues.length || i >= checkValues.length) return { ...base, outcome: 'failed', reason: 'unpartnered', ...extra };
    return { ...base, ...comparePosition(recordValues[i], checkValues[i], { semanticAllowed, region }), ...extra };
  });
}

const matchedOf = (positions: PositionResult[]) => positions.filter((p) => p.outcome !== 'failed').length;

function methodOf(positions: PositionResult[]): AuthCheckMethod {
  const exact = positions.some((p) => p.outcome === 'exact');
  const semantic = positions.some((p) => p.outcome === 'semantic');
  return semantic ? (exact ? 'mixed' : 'semantic') : 'exact';
}

function describeFailures(positions: PositionResult[]): string {
  const failed = positions.filter((p) => p.outcome === 'failed');
  return failed.length ? ` Failed positions: ${failed.map((p) => `${p.position} (${p.reason})`).join(', ')}.` : '';
}

function notRun(status: 'insufficient_data' | 'error', note: string, required: number, positions: number): AuthCheckVariables {
  return {
    verified: false,
    status,
    matched_count: 0,
    required_count: required,
    matched_checks: [],
    // Nothing was compared: with insufficient data every position fails (rule 2); with invalid settings none was evaluated.
    failed_checks: status === 'insufficient_data' ? positionsList(positions) : [],
    exact_match: false,
    semantic_match: false,
    method: 'exact',
    notes: note,
    verified_data: '',
  };
}

/** Runs the tool once. Never throws for bad settings or data: those end in status error or insufficient_data. */
export function runAuthCheck(settings: AuthCheckSettings, ctx: AuthCheckContext): AuthCheckRun {
  const recordArray = settings.record_array ?? [];
  const checkArray = settings.check_array ?? [];
  const positions = Math.max(recordArray.length, checkArray.length);
  const required = parseRequiredMatchCount(settings.required_match_count, positions);
  const requiredCount = required.ok ? required.value : 0;
  const fieldPaths = recordArray.map((e) => (typeof e === 'string' ? fieldPathReference(e) : undefined));
  const mode = fieldPaths.some(Boolean) ? 'record_set' : 'single';
  const stop = (status: 'insufficient_data' | 'error', note: string): AuthCheckRun => ({
    variables: notRun(status, note, requiredCount, positions),
    result: false,
    mode,
    positions: [],
    writes: [],
  });

  if (recordArray.length === 0 || checkArray.length === 0) {
    const empty = [recordArray.length === 0 && 'Record Array', checkArray.length === 0 && 'Check Array'].filter(Boolean).join(' and ');
    return stop('insufficient_data', `Insufficient data: ${empty} ${empty.includes(' and ') ? 'are' : 'is'} empty.`);
  }
  const flags = parseCheckTranscript(settings.check_transcript, checkArray.length);
  const invalid = [!required.ok && required.message, !flags.ok && flags.message].filter(Boolean);
  if (invalid.length > 0) return stop('error', `Invalid settings: ${invalid.join('; ')}.`);
  const exact = parseExact(settings.exact);

  // Check values, refreshed from the transcript where Check Transcript asks for it (rule 5).
  const checkValues = checkArray.map((e) => resolveEntry(e, ctx));
  const refreshed = new Set<number>();
  const writes: VariableWrite[] = [];
  (flags.ok && flags.value ? flags.value : []).forEach((flag, i) => {
    if (!flag) return;
    const entry = checkArray[i];
    const variable = typeof entry === 'string' ? plainReference(entry) : undefined;
    const stored = comparableText(checkValues[i]) ?? '';
    const value = reextractFromTranscript(ctx.transcript, { variable, stored, region: ctx.region });
    if (value === undefined) return;
    checkValues[i] = value;
    refreshed.add(i);
    if (variable && namespaceOf(variable) !== AUTH_CHECK_NAMESPACE) writes.push({ variable, value, previous: stored, position: i });
  });

  const notes: string[] = [];
  if (exact.note) notes.push(exact.note);
  if (refreshed.size) notes.push(`Refreshed from the transcript: position${refreshed.size === 1 ? '' : 's'} ${[...refreshed].join(', ')}.`);

  let reported: PositionResult[];
  let verified: boolean;
  let records: RecordResult[] | undefined;
  let verifiedData = '';
  if (mode === 'single') {
    // Rule 7: plain references and literals; Raw Data is ignored.
    reported = comparePositions(recordArray.map((e) => resolveEntry(e, ctx)), checkValues, refreshed, positions, exact.semanticAllowed, ctx.region);
    verified = matchedOf(reported) >= requiredCount;
    const m = matchedOf(reported);
    notes.unshift(`${verified ? 'Verified' : 'Not verified'}: ${m} of ${positions} position${positions === 1 ? '' : 's'} matched (${requiredCount} required).${describeFailures(reported)}`);
  } else {
    // Rule 6: every record of the set, field paths read from the record.
    const source = blank(settings.raw_data) ? ctx.lookup(fieldPaths.find(Boolean)!.variable) : resolveEntry(settings.raw_data as string, ctx);
    const set = parseRecordSet(source);
    if (!set.ok) return stop('insufficient_data', `Insufficient data: ${set.message}.`);
    const shared = recordArray.map((e, i) => (fieldPaths[i] ? undefined : resolveEntry(e, ctx)));
    records = set.value.map((record, index) => {
      const values = recordArray.map((_, i) => (fieldPaths[i] ? getPath(record, fieldPaths[i]!.field) : shared[i]));
      const results = comparePositions(values, checkValues, refreshed, positions, exact.semanticAllowed, ctx.region);
      const matched = matchedOf(results);
      return { record: index, matched_count: matched, verified: matched >= requiredCount, positions: results };
    });
    const passing = records.filter((r) => r.verified);
    verified = passing.length > 0;
    // The record reported in the position variables: the best passing one, else the closest (first on ties).
    const best = (passing.length ? passing : records).reduce((a, b) => (b.matched_count > a.matched_count ? b : a));
    reported = best.positions;
    if (passing.length) verifiedData = JSON.stringify(set.value.length === 1 ? set.value[0] : passing.map((r) => set.value[r.record]));
    notes.unshift(
      `${verified ? 'Verified' : 'Not verified'}: ${passing.length} of ${records.length} record${records.length === 1 ? '' : 's'} verified` +
        `${passing.length ? ` (record${passing.length === 1 ? '' : 's'} ${passing.map((r) => r.record).join(', ')})` : ''}; ` +
        `record ${best.record} matched ${best.matched_count} of ${positions} (${requiredCount} required).${describeFailures(reported)}`,
    );
  }

  const semantic = reported.some((p) => p.outcome === 'semantic');
  const variables: AuthCheckVariables = {
    verified,
    status: verified ? 'verified' : 'failed',
    matched_count: matchedOf(reported),
    required_count: requiredCount,
    matched_checks: reported.filter((p) => p.outcome !== 'failed').map((p) => String(p.position)),
    failed_checks: reported.filter((p) => p.outcome === 'failed').map((p) => String(p.position)),
    exact_match: verified && !semantic,
    semantic_match: semantic,
    method: methodOf(reported),
    notes: notes.join(' '),
    verified_data: verifiedData,
  };
  return { variables, result: verified, mode, positions: reported, records, writes };
}

/** The auth_check.* variables as dotted names (what a script reads). */
export function authCheckVariableEntries(variables: AuthCheckVariables): Record<string, unknown> {
  return Object.fromEntries(Object.entries(variables).map(([k, v]) => [`${AUTH_CHECK_NAMESPACE}.${k}`, v]));
}

/** One System Notes entry for a run: a summary line and the per-position results. */
export interface AuthCheckSystemNote {
  kind: 'auth_check';
  step_id: string;
  tool: typeof AUTH_CHECK_TOOL;
  status: AuthCheckStatus;
  verified: boolean;
  summary: string;
  positions: PositionResult[];
  records?: Array<Omit<RecordResult, 'positions'>>;
}

export function authCheckSystemNote(stepId: string, run: AuthCheckRun): AuthCheckSystemNote {
  const v = run.variables;
  const summary =
    `Auth Check ${v.status}: ${v.matched_count} matched, ${v.required_count} required, method ${v.method}` +
    `${v.matched_checks.length ? `; matched ${v.matched_checks.join(', ')}` : ''}${v.failed_checks.length ? `; failed ${v.failed_checks.join(', ')}` : ''}. ${v.notes}`;
  return {
    kind: 'auth_check',
    step_id: stepId,
    tool: AUTH_CHECK_TOOL,
    status: v.status,
    verified: v.verified,
    summary,
    positions: run.positions,
    ...(run.records ? { records: run.records.map(({ positions: _p, ...r }) => r) } : {}),
  };
}
