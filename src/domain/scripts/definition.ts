/**
 * The script format (docs/scripts.md): an ordered graph of steps a voice agent follows on
 * a call, the script's objectives, the structured data it collects and optional simulated
 * callee answers. Validated with zod when a script is created (`admin scripts create`);
 * every error names the step and the field.
 */
import { z } from 'zod';
import { AUTH_CHECK_NAMESPACE, AUTH_CHECK_TOOL } from '../authCheck/index.js';
import { jsonNestedDeeperThan, MAX_JSON_DEPTH } from '../jsonNesting.js';
import { VARIABLE_NAME_RE, namespaceOf } from './templates.js';
import { jsonSchemaProblem } from '../../llm/jsonSchema.js';

/** Namespaces scripts read but never write: the tool's own, and the data the runtime provides. */
export const READ_ONLY_NAMESPACES: Record<string, string> = {
  [AUTH_CHECK_NAMESPACE]: 'the auth_check namespace belongs to the Auth Check tool; scripts read it and never write it',
  contact: 'contact.* holds the contact record and is read-only in a script',
  objects: 'objects.* holds the linked objects and is read-only in a script',
  call: 'call.* holds the call data and is read-only in a script',
  webhook: 'webhook.* is written by webhook steps only',
  steps: 'steps.* holds step outputs and is written by the runtime only',
};

const stepId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 letters, digits, "_" or "-"');
const text = (what: string) => z.string({ message: `${what} must be a string` }).min(1, `${what} must not be empty`).max(4000);
const variableName = z.string({ message: 'must be a variable name' }).regex(VARIABLE_NAME_RE, 'must be a variable name such as answers.date_of_birth');
/** A variable a step writes: a name outside the read-only namespaces. */
const writableVariable = variableName.superRefine((name, ctx) => {
  const reason = READ_ONLY_NAMESPACES[namespaceOf(name)];
  if (reason) ctx.addIssue({ code: 'custom', message: `cannot write ${name}: ${reason}` });
});
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const next = stepId.optional();

/** A test on one variable; exactly one of equals, not_equals, is_empty. */
export const variableConditionSchema = z
  .strictObject({
    variable: variableName,
    equals: scalar.optional(),
    not_equals: scalar.optional(),
    is_empty: z.boolean().optional(),
  })
  .refine((c) => [c.equals, c.not_equals, c.is_empty].filter((v) => v !== undefined).length === 1, {
    message: 'needs exactly one of equals, not_equals, is_empty',
  });
export type VariableCondition = z.infer<typeof variableConditionSchema>;

export const conditionSchema = z.union([variableConditionSchema, z.strictObject({ step_reached: stepId })], {
  message: 'must be { variable, equals | not_equals | is_empty } or { step_reached }',
});
export type Condition = z.infer<typeof conditionSchema>;

const base = { id: stepId, next };

export const sayStepSchema = z.strictObject({ ...base, type: z.literal('say'), text: text('text') });

/** `free` is `text` by another name; `digits` is a sequence of digits said one by one. */
export const ANSWER_KINDS = ['text', 'free', 'name', 'date', 'number', 'digits', 'yes_no'] as const;
/** What answers an ask step: speech, keypad digits, or either (the default). */
export const ANSWER_INPUTS = ['both', 'speech', 'dtmf'] as const;
export const askStepSchema = z.strictObject({
  ...base,
  type: z.literal('ask'),
  question: text('question'),
  variable: writableVariable,
  /** What the answer is; decides how the value is read from what the callee says, and how a recogniser listens. */
  expect: z.enum(ANSWER_KINDS).default('text'),
  /** Words or phrases the answer is likely to be (names, options): a recogniser's hint. */
  phrases: z.array(z.string().min(1).max(100), { message: 'phrases must be an array of strings' }).max(100).optional(),
  /**
   * How a phone caller may answer: spoken, keyed on the keypad (`dtmf`), or either. Absent means
   * `both`; a browser call has no keypad, so there every answer is spoken.
   */
  input: z.enum(ANSWER_INPUTS, { message: `input must be one of ${ANSWER_INPUTS.join(', ')}` }).optional(),
});

const templateString = z.string().max(8000);
type JsonTemplate = string | number | boolean | null | JsonTemplate[] | { [k: string]: JsonTemplate };
const jsonTemplate: z.ZodType<JsonTemplate> = z.lazy(() =>
  z.union([templateString, z.number(), z.boolean(), z.null(), z.array(jsonTemplate), z.record(z.string(), jsonTemplate)]),
);

export const webhookStepSchema = z.strictObject({
  ...base,
  type: z.literal('webhook'),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST'),
  url: z
    .string({ message: 'url must be a string' })
    .min(1)
    .max(2000)
    .refine((u) => /^(https?:\/\/|\{\{)/i.test(u.trim()), 'url must start with http:// or https:// (or a {{variable}})'),
  headers: z.record(z.string(), templateString).default({}),
  /** JSON body; strings in it are templates. Not sent with GET. */
  body: jsonTemplate.optional(),
  timeout_seconds: z.number().int().min(1).max(30).default(10),
  /** Where to go when the request fails (network error, timeout, non-2xx); default: next. */
  on_error: stepId.optional(),
});

const arrayEntry = z.union([z.string().max(2000), z.number()]);
export const authCheckSettingsSchema = z.strictObject({
  record_array: z.array(arrayEntry, { message: 'record_array must be an array of values or {{variable}} references' }).max(50),
  check_array: z.array(arrayEntry, { message: 'check_array must be an array of values or {{variable}} references' }).max(50),
  // Checked when the step runs, not here: an invalid value ends the run with status error (docs/scripts.md).
  required_match_count: z.union([z.string(), z.number(), z.null()]).optional(),
  exact: z.union([z.enum(['Yes', 'No', 'yes', 'no']), z.boolean(), z.null(), z.literal('')], { message: 'exact must be Yes or No' }).optional(),
  check_transcript: z.union([z.array(z.union([z.string(), z.boolean()])), z.string(), z.null()]).optional(),
  raw_data: z.union([z.string(), z.null()]).optional(),
});

export const toolStepSchema = z.strictObject({
  ...base,
  type: z.literal('tool'),
  tool: z.literal(AUTH_CHECK_TOOL, { message: `tool must be "${AUTH_CHECK_TOOL}" (the only tool)` }),
  settings: authCheckSettingsSchema,
});

export const branchStepSchema = z.strictObject({
  ...base,
  type: z.literal('branch'),
  cases: z.array(z.strictObject({ when: conditionSchema, next: stepId })).min(1, 'cases needs at least one case'),
  /** Where to go when no case matches; default: next (or the following step). */
  default: stepId.optional(),
});

export const setStepSchema = z.strictObject({ ...base, type: z.literal('set'), variable: writableVariable, value: jsonTemplate });

export const endStepSchema = z.strictObject({ id: stepId, type: z.literal('end'), text: text('text').optional() });

/**
 * The callee asked not to be called again: the agent says `text` (optional) and the
 * callee's number joins the team's do-not-call list (source "call", naming the call).
 */
export const doNotCallStepSchema = z.strictObject({
  ...base,
  type: z.literal('do_not_call'),
  text: text('text').optional(),
  /** Kept as the list entry's reason; default "Asked during a call not to be called again". */
  reason: z.string({ message: 'reason must be a string' }).min(1, 'reason must not be empty').max(500).optional(),
});

/** How a transfer reaches the person: a blind SIP REFER, or the edge dials them and joins the two legs. */
export const TRANSFER_MODES = ['bridge', 'refer'] as const;
/** E.164: a plus, then 8 to 15 digits, the first not 0. */
const E164_RE = /^\+[1-9]\d{7,14}$/;
/** A SIP URI with a host: sip:user@host[:port][;params] (sips: too); no spaces or angle brackets. */
const SIP_URI_RE = /^sips?:([^@\s<>;]+@)?[A-Za-z0-9.\-[\]:]+(:\d{1,5})?(;[^\s<>]*)?$/i;

/**
 * Hands the caller to a person (docs/scripts.md, "Transfer"): `to` is an E.164 number (dialled
 * through the trunk) or a SIP URI. `bridge` (the default: it works through any trunk, and the
 * recording and transcript go on) has the edge dial the person, say `announcement` to them and
 * join the legs; `refer` sends a blind REFER and falls back to bridge when it is refused. A person
 * who does not answer within `ring_timeout_seconds` (default 30) sends the script to `on_failure`
 * (absent: on to `next`).
 */
export const transferStepSchema = z.strictObject({
  ...base,
  type: z.literal('transfer'),
  to: z
    .string({ message: 'to must be a string' })
    .trim()
    .refine((to) => E164_RE.test(to) || SIP_URI_RE.test(to), 'to must be an E.164 number (+15551234567) or a SIP URI (sip:agent@pbx.example.com)'),
  mode: z.enum(TRANSFER_MODES, { message: `mode must be one of ${TRANSFER_MODES.join(', ')}` }).default('bridge'),
  announcement: text('announcement').optional(),
  // How long a bridge rings the person before giving up (Twilio's <Dial timeout>, jambonz's dial timeout).
  ring_timeout_seconds: z
    .number({ message: 'ring_timeout_seconds must be a whole number of seconds from 5 to 300' })
    .int('ring_timeout_seconds must be a whole number of seconds from 5 to 300')
    .min(5, 'ring_timeout_seconds must be a whole number of seconds from 5 to 300')
    .max(300, 'ring_timeout_seconds must be a whole number of seconds from 5 to 300')
    .optional(),
  on_failure: stepId.optional(),
});
export type TransferStep = z.infer<typeof transferStepSchema>;

/** A tool's name as the model calls it (the chat-completions function name rules). */
const TOOL_NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;
/**
 * A tool the model may call in a converse step: its arguments are checked against `parameters`
 * (a JSON Schema whose type is object), stored under steps.<id>.tool and `variable`, and the
 * script goes on at `next`.
 */
export const converseToolSchema = z.strictObject({
  name: z.string({ message: 'name must be a string' }).regex(TOOL_NAME_RE, 'name must be 1 to 64 letters, digits, "_" or "-"'),
  description: text('description'),
  parameters: z
    .record(z.string(), z.unknown(), { message: 'parameters must be a JSON Schema object' })
    .superRefine((schema, ctx) => {
      if (schema.type !== 'object') ctx.addIssue({ code: 'custom', message: 'parameters.type must be "object" (a tool takes named arguments)' });
      const problem = jsonSchemaProblem(schema);
      if (problem) ctx.addIssue({ code: 'custom', message: `parameters ${problem}` });
    }),
  /** Where the script goes on once the model called the tool with valid arguments. */
  next: stepId,
  /** Also stores the arguments here (steps.<id>.tool always holds { name, arguments }). */
  variable: writableVariable.optional(),
});
export type ConverseTool = z.infer<typeof converseToolSchema>;

/** A converse step's default and largest number of model turns. */
export const CONVERSE_DEFAULT_MAX_TURNS = 10;
export const CONVERSE_MAX_TURNS = 50;

/**
 * A language model holds the conversation (docs/agents.md): `instructions` is its system prompt
 * (a template over contact.*, objects.*, call.* and earlier answers); `first_line`, when set,
 * is said first as written. It ends when the model calls one of `tools` (the script goes on at
 * the tool's next), after `max_turns` model turns (on_max_turns, else next), or when the model
 * service fails (on_error, else the call ends with a System Note).
 */
export const converseStepSchema = z.strictObject({
  ...base,
  type: z.literal('converse'),
  instructions: z.string({ message: 'instructions must be a string' }).min(1, 'instructions must not be empty').max(16000),
  first_line: text('first_line').optional(),
  max_turns: z
    .number({ message: `max_turns must be a whole number from 1 to ${CONVERSE_MAX_TURNS}` })
    .int(`max_turns must be a whole number from 1 to ${CONVERSE_MAX_TURNS}`)
    .min(1, `max_turns must be a whole number from 1 to ${CONVERSE_MAX_TURNS}`)
    .max(CONVERSE_MAX_TURNS, `max_turns must be a whole number from 1 to ${CONVERSE_MAX_TURNS}`)
    .default(CONVERSE_DEFAULT_MAX_TURNS),
  tools: z
    .array(converseToolSchema, { message: 'tools must be an array of { name, description, parameters, next }' })
    .max(20)
    .default([])
    .superRefine((tools, ctx) => {
      const names = new Set<string>();
      tools.forEach((tool, i) => {
        if (names.has(tool.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate tool name ${tool.name}` });
        names.add(tool.name);
      });
    }),
  on_max_turns: stepId.optional(),
  on_error: stepId.optional(),
});
export type ConverseStep = z.infer<typeof converseStepSchema>;

/** The caps of a call's model use (docs/agents.md, "Caps"), over every converse step of the call; defaults: modelUsage.ts. */
export const modelLimitsSchema = z.strictObject({
  turns_per_call: z.number({ message: 'turns_per_call must be a whole number from 1 to 500' }).int().min(1).max(500).optional(),
  tokens_per_call: z.number({ message: 'tokens_per_call must be a whole number from 100 to 1000000' }).int().min(100).max(1_000_000).optional(),
});

export const scriptStepSchema = z.discriminatedUnion(
  'type',
  [sayStepSchema, askStepSchema, webhookStepSchema, toolStepSchema, branchStepSchema, setStepSchema, endStepSchema, doNotCallStepSchema, transferStepSchema, converseStepSchema],
  { message: 'type must be one of say, ask, webhook, tool, branch, set, end, do_not_call, transfer, converse' },
);
export type ScriptStep = z.infer<typeof scriptStepSchema>;
export type AskStep = z.infer<typeof askStepSchema>;
export type WebhookStep = z.infer<typeof webhookStepSchema>;
export type ToolStep = z.infer<typeof toolStepSchema>;
export type BranchStep = z.infer<typeof branchStepSchema>;

/** An objective: a plain string is met when the script reaches an end step; with met_when, when its condition holds at the end. */
export const objectiveSchema = z.union([text('objective'), z.strictObject({ objective: text('objective'), met_when: conditionSchema })], {
  message: 'must be a string or { objective, met_when }',
});
export type Objective = z.infer<typeof objectiveSchema>;

export const scriptDefinitionSchema = z
  .strictObject({
    name: z.string().min(1).max(200),
    description: z.string().max(4000).optional(),
    objectives: z.array(objectiveSchema).max(50).default([]),
    /** Output key → variable name; the values at the end of the call become structured_data. */
    structured_data: z.record(z.string().regex(/^[A-Za-z0-9_]{1,64}$/, 'keys must be letters, digits or "_"'), variableName).default({}),
    /** Simulator only: variable → what the simulated callee says when an ask step stores that variable. */
    simulated_answers: z.record(z.string().regex(VARIABLE_NAME_RE, 'keys must be variable names'), z.string().max(2000)).default({}),
    /**
     * Said when an answering machine takes the call (docs/telephony.md, "Voicemail detection"): after its beep or the
     * end of its greeting, then the agent hangs up. A template over contact.*, objects.* and call.*. Without it a
     * machine's call just ends; either way the call's status is voicemail.
     */
    voicemail_message: text('voicemail_message').optional(),
    /**
     * Whether an outbound phone call's answer is screened for an answering machine (default true). false: the
     * script's first line is said at the answer, and a machine gets the script like a person.
     */
    voicemail_detection: z.boolean({ message: 'voicemail_detection must be true or false' }).optional(),
    /**
     * Caps on the language model's use per call, over all converse steps (docs/agents.md, "Caps"):
     * turns_per_call (default 40) and tokens_per_call (default 60,000). Past a cap, a converse step
     * goes on at on_max_turns as if its own max_turns had been reached.
     */
    model_limits: modelLimitsSchema.optional(),
    steps: z.array(scriptStepSchema).min(1, 'a script needs at least one step').max(500),
  })
  .superRefine((script, ctx) => {
    const ids = new Set<string>();
    script.steps.forEach((step, i) => {
      if (ids.has(step.id)) ctx.addIssue({ code: 'custom', path: ['steps', i, 'id'], message: `duplicate step id ${step.id}` });
      ids.add(step.id);
    });
    const target = (id: string | undefined, path: (string | number)[]) => {
      if (id !== undefined && !ids.has(id)) ctx.addIssue({ code: 'custom', path, message: `no step has id ${id}` });
    };
    script.steps.forEach((step, i) => {
      if (step.type !== 'end') target(step.next, ['steps', i, 'next']);
      if (step.type === 'webhook') target(step.on_error, ['steps', i, 'on_error']);
      if (step.type === 'transfer') target(step.on_failure, ['steps', i, 'on_failure']);
      if (step.type === 'converse') {
        target(step.on_max_turns, ['steps', i, 'on_max_turns']);
        target(step.on_error, ['steps', i, 'on_error']);
        step.tools.forEach((tool, j) => target(tool.next, ['steps', i, 'tools', j, 'next']));
      }
      if (step.type === 'branch') {
        target(step.default, ['steps', i, 'default']);
        step.cases.forEach((c, j) => {
          target(c.next, ['steps', i, 'cases', j, 'next']);
          if ('step_reached' in c.when) target(c.when.step_reached, ['steps', i, 'cases', j, 'when', 'step_reached']);
        });
      }
    });
    script.objectives.forEach((o, i) => {
      if (typeof o !== 'string' && 'step_reached' in o.met_when) target(o.met_when.step_reached, ['objectives', i, 'met_when', 'step_reached']);
    });
  });

export type ScriptDefinition = z.infer<typeof scriptDefinitionSchema>;
/** A script as written (defaults not yet applied), e.g. the demo script's source. */
export type ScriptDefinitionInput = z.input<typeof scriptDefinitionSchema>;

/** Where an issue is: `steps[2] (id "ask_dob").variable`, `objectives[0].met_when`. */
function describePath(path: readonly PropertyKey[], input: unknown): string {
  let out = '';
  path.forEach((p, i) => {
    if (typeof p === 'number') {
      out += `[${p}]`;
      if (i === 1 && path[0] === 'steps') {
        const id = (input as { steps?: Array<{ id?: unknown }> })?.steps?.[p]?.id;
        if (typeof id === 'string') out += ` (id "${id}")`;
      }
    } else out += `${out ? '.' : ''}${String(p)}`;
  });
  return out || 'script';
}

/** A script as parseScriptDefinition checked it: the normalised definition, or why it is invalid. */
export type CheckedScript = { ok: true; script: ScriptDefinition } | { ok: false; message: string };

/** Validates a script; the error names the step and field, e.g. `steps[2] (id "ask_dob").variable: cannot write ...`. */
export function parseScriptDefinition(input: unknown): CheckedScript {
  // Checked first: the schema (webhook bodies) and rendering walk the value recursively.
  if (jsonNestedDeeperThan(input, MAX_JSON_DEPTH)) return { ok: false, message: `script is nested deeper than ${MAX_JSON_DEPTH} levels` };
  const parsed = scriptDefinitionSchema.safeParse(input);
  if (parsed.success) return { ok: true, script: parsed.data };
  const message = parsed.error.issues
    .map((i) => `${describePath(i.path, input)}: ${i.message.replace(/^Invalid input: /, '')}`)
    .join('; ');
  return { ok: false, message };
}
