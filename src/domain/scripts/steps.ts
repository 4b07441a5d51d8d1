/**
 * The pure step logic of scripts (the script runner, workflows/scriptRunner.ts, drives
 * it inside the call workflow): the starting variables of a call, conditions, step order,
 * objectives, structured data, and how the simulated callee answers an ask step.
 */
import { normalizeDate, spokenDate } from '../dates.js';
import type { AnswerKind } from '../authCheck/transcript.js';
import type { Condition, ScriptDefinition, ScriptStep } from './definition.js';
import { getPath, getVariable, plainReference, renderTemplate, renderValue, type Scope } from './templates.js';

/** What a call gives its script to start with (docs/scripts.md, "Variables"). */
export interface ScriptCallData {
  contact: Record<string, unknown>;
  /** Linked objects by type name (object_data), overlaid with the call's objects map. */
  objects: Record<string, unknown>;
  call: Record<string, unknown>;
}

/** The variables at the first step: contact.*, objects.*, call.*. */
export function initialScope(data: ScriptCallData): Scope {
  const contact = { ...data.contact };
  if (!contact.full_name) {
    const full = [contact.first_name, contact.last_name].filter((v) => typeof v === 'string' && v.trim()).join(' ');
    if (full) contact.full_name = full;
  }
  return { contact, objects: { ...data.objects }, call: { ...data.call } };
}

/** Renders every string of a JSON value as a template; a string that is one `{{ref}}` keeps the variable's own value. */
export function renderJson(value: unknown, scope: Scope): unknown {
  if (typeof value === 'string') {
    const ref = plainReference(value);
    if (ref) return getVariable(scope, ref) ?? '';
    return renderTemplate(value, (name) => getVariable(scope, name));
  }
  if (Array.isArray(value)) return value.map((v) => renderJson(v, scope));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderJson(v, scope)]));
  return value;
}

/** Text for the agent to say: the template filled, stray spaces before punctuation removed. */
export function renderSpeech(template: string, scope: Scope): string {
  return renderTemplate(template, (name) => getVariable(scope, name))
    .replace(/\s+([,.!?])/g, '$1')
    .replace(/\s{2,}/g, ' ')
    .trim();
}

function isEmpty(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === 'string') return value.trim() === '';
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.keys(value).length === 0;
  return false;
}

/** equals / not_equals compare text case-insensitively (true equals "true"); null equals an unset variable. */
function sameValue(actual: unknown, expected: string | number | boolean | null): boolean {
  if (expected === null) return actual === undefined || actual === null;
  return renderValue(actual).trim().toLowerCase() === String(expected).trim().toLowerCase();
}

export function evaluateCondition(condition: Condition, scope: Scope, visited: ReadonlySet<string>): boolean {
  if ('step_reached' in condition) return visited.has(condition.step_reached);
  const value = getVariable(scope, condition.variable);
  if (condition.is_empty !== undefined) return isEmpty(value) === condition.is_empty;
  if (condition.equals !== undefined) return sameValue(value, condition.equals);
  return !sameValue(value, condition.not_equals ?? null);
}

/** The step after `step` when it names none: the following one in the list, or the end of the script. */
export function followingStepId(script: ScriptDefinition, step: ScriptStep): string | undefined {
  const index = script.steps.findIndex((s) => s.id === step.id);
  return script.steps[index + 1]?.id;
}

export interface ObjectiveResult {
  objective: string;
  met: boolean;
}

/** Each objective met or not at the end of the run: a plain one when the script reached its end, else by its condition. */
export function evaluateObjectives(script: ScriptDefinition, scope: Scope, visited: ReadonlySet<string>, completed: boolean): ObjectiveResult[] {
  return script.objectives.map((o) =>
    typeof o === 'string' ? { objective: o, met: completed } : { objective: o.objective, met: evaluateCondition(o.met_when, scope, visited) },
  );
}

/** structured_data: each declared key with its variable's value at the end (null when unset). */
export function collectStructuredData(script: ScriptDefinition, scope: Scope): Record<string, unknown> {
  return Object.fromEntries(Object.entries(script.structured_data).map(([key, variable]) => [key, getVariable(scope, variable) ?? null]));
}

// ------------------------------------------------------------------ the simulated callee

const CONTACT_ALIASES: Record<string, string> = {
  name: 'full_name',
  full_name: 'full_name',
  caller_name: 'full_name',
  first_name: 'first_name',
  given_name: 'first_name',
  last_name: 'last_name',
  surname: 'last_name',
  family_name: 'last_name',
  email: 'email',
  email_address: 'email',
  phone: 'phone_number',
  phone_number: 'phone_number',
  address: 'address',
  location: 'location',
  gender: 'gender',
  age: 'age',
  title: 'title',
};
const BIRTH_DATE_FIELDS = ['date_of_birth', 'dob', 'birth_date', 'birthdate', 'birthday'];

/** A field of a linked object, searched type by type in name order (a list reads its newest item). */
function objectField(objects: Record<string, unknown>, fields: readonly string[]): unknown {
  for (const type of Object.keys(objects).sort()) {
    for (const field of fields) {
      const value = getPath(objects, `${type}.${field}`);
      if (value !== undefined && value !== null && renderValue(value).trim() !== '') return value;
    }
  }
  return undefined;
}

/**
 * What the callee knows for the variable an ask step stores, from the contact and the
 * linked objects: the variable's last segment names a contact field (with aliases: name →
 * full_name, surname → last_name, ...) or a linked object field; date-of-birth names
 * (date_of_birth, dob, birth_date, birthday) and any `date` question without such a field
 * read the linked objects' birth-date fields.
 */
export function calleeKnowledge(variable: string, expect: AnswerKind, scope: Scope): unknown {
  const key = variable.split('.').pop()!.toLowerCase();
  const contact = (scope.contact ?? {}) as Record<string, unknown>;
  const objects = (scope.objects ?? {}) as Record<string, unknown>;
  const present = (v: unknown) => v !== undefined && v !== null && renderValue(v).trim() !== '';
  if (BIRTH_DATE_FIELDS.includes(key)) return objectField(objects, [key, ...BIRTH_DATE_FIELDS]);
  const alias = CONTACT_ALIASES[key];
  if (alias && present(contact[alias])) return contact[alias];
  if (present(contact[key])) return contact[key];
  const fromObjects = objectField(objects, [key]);
  if (fromObjects !== undefined) return fromObjects;
  if (expect === 'date') return objectField(objects, BIRTH_DATE_FIELDS);
  if (expect === 'name' && present(contact.full_name)) return contact.full_name;
  return undefined;
}

/**
 * What the simulated callee says to an ask step: the script's simulated answer for the
 * variable when there is one (a template, said as written); otherwise a sentence built from
 * what the callee knows ("My name is Jane Doe.", "It's April 3rd, 1985."); "I'm not sure."
 * when it knows nothing (and "Yes." to a yes/no question).
 */
export function simulatedCalleeAnswer(input: {
  variable: string;
  expect: AnswerKind;
  scope: Scope;
  simulatedAnswers: Readonly<Record<string, string>>;
  region: string;
}): string {
  const scripted = input.simulatedAnswers[input.variable];
  if (scripted !== undefined) return renderSpeech(scripted, input.scope);
  if (input.expect === 'yes_no') return 'Yes.';
  const known = calleeKnowledge(input.variable, input.expect, input.scope);
  if (known === undefined) return "I'm not sure.";
  const value = renderValue(known).trim();
  if (input.expect === 'date') {
    const iso = normalizeDate(value, input.region);
    return `It's ${iso ? spokenDate(iso) : value}.`;
  }
  if (input.expect === 'name') return `My name is ${value}.`;
  return `It's ${value}.`;
}

/**
 * What the simulated callee answers to each ask step of a script, by step id. The callee
 * answers from its own record (contact, objects, call), never from the script's working
 * variables, so every answer is known before the call starts.
 */
export function simulatedCalleeAnswers(script: ScriptDefinition, data: ScriptCallData, region: string): Record<string, string> {
  const scope = initialScope(data);
  const callee: Scope = { contact: scope.contact, objects: scope.objects, call: scope.call };
  const answers: Record<string, string> = {};
  for (const step of script.steps) {
    if (step.type !== 'ask') continue;
    answers[step.id] = simulatedCalleeAnswer({ variable: step.variable, expect: step.expect, scope: callee, simulatedAnswers: script.simulated_answers, region });
  }
  return answers;
}

// ------------------------------------------------------------------ for post-call analysis

/** The objective names a stored script declares (plain strings and `{ objective }` alike). */
export function objectiveNames(definition: unknown): string[] {
  const declared = (definition as { objectives?: unknown } | null | undefined)?.objectives;
  if (!Array.isArray(declared)) return [];
  return declared
    .map((o) => (typeof o === 'string' ? o : typeof o === 'object' && o !== null ? (o as { objective?: unknown }).objective : undefined))
    .filter((o): o is string => typeof o === 'string' && o.length > 0);
}

/** The structured_data a stored script declares: output key → variable name. */
export function structuredDataKeys(definition: unknown): Record<string, string> {
  const declared = (definition as { structured_data?: unknown } | null | undefined)?.structured_data;
  if (typeof declared !== 'object' || declared === null || Array.isArray(declared)) return {};
  return Object.fromEntries(Object.entries(declared).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** The contact fields a stored script's templates use (`{{contact.first_name}}` → first_name), sorted. */
export function contactFieldsUsed(definition: unknown): string[] {
  const text = JSON.stringify(definition ?? null);
  return [...new Set([...text.matchAll(/\bcontact\.([A-Za-z0-9_]+)/g)].map((m) => m[1]))].sort();
}

/** What a script run decided, as its closing `script_result` System Note carries it. */
export interface ScriptResultData {
  completed: boolean;
  last_step: string | null;
  steps_run: number;
  objectives: ObjectiveResult[];
  structured_data: Record<string, unknown>;
}

/** The System Note kind of a run's closing summary. */
export const SCRIPT_RESULT_NOTE_KIND = 'script_result';

/** The last script run's result among a call's System Notes, if the script ran. */
export function scriptResultFromNotes(notes: ReadonlyArray<{ kind: string; data?: unknown }>): ScriptResultData | undefined {
  for (let i = notes.length - 1; i >= 0; i--) {
    const data = notes[i].data as Partial<ScriptResultData> | undefined;
    if (notes[i].kind === SCRIPT_RESULT_NOTE_KIND && data && Array.isArray(data.objectives) && typeof data.structured_data === 'object' && data.structured_data !== null) {
      return data as ScriptResultData;
    }
  }
  return undefined;
}
