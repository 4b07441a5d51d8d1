/**
 * The default voice provider (VOICE_PROVIDER=simulator, docs/calls.md "Simulated outcomes"): it plays the callee.
 * The callee number's last four digits decide the outcome; any other number answers and
 * the script runs to its end. A call lasts about SIMULATOR_CALL_SECONDS.
 */
import type { ConversationTurn, EndReason } from '../domain/calls.js';
import { parseScriptDefinition } from '../domain/scripts/definition.js';
import { simulatedCalleeAnswers } from '../domain/scripts/steps.js';
import type { PlaceCallRequest, PlacedCall, SimulatedCallPlan, VoiceProvider } from './provider.js';

type Outcome = Pick<SimulatedCallPlan, 'status' | 'endReason' | 'answered' | 'doNotCall'>;

/** Outcome by the last four digits of the callee's number. */
export const SIMULATOR_OUTCOMES: Record<string, Outcome> = {
  '0001': { status: 'rang-out', endReason: 'no_answer', answered: false },
  '0002': { status: 'voicemail', endReason: 'voicemail', answered: true },
  '0003': { status: 'User rejected', endReason: 'declined', answered: false },
  '0004': { status: 'failed', endReason: 'provider_error', answered: false },
  '0005': { status: 'User unavailable', endReason: 'unreachable', answered: false },
  '0006': { status: 'hang-up', endReason: 'User Hangup', answered: true },
  '0007': { status: 'dropout', endReason: 'connection_lost', answered: true },
  // Answers, asks not to be called again and hangs up (docs/calls.md, "Simulated outcomes"). 3668 spells
  // DONT on a keypad, and keeps clear of the low numbers clients use for ordinary test calls.
  '3668': { status: 'hang-up', endReason: 'User Hangup', answered: true, doNotCall: true },
};
const ANSWERS: Outcome = { status: 'completed', endReason: 'agent_hangup', answered: true };

export function simulatedOutcome(to: string): Outcome {
  return SIMULATOR_OUTCOMES[to.replace(/\D/g, '').slice(-4)] ?? ANSWERS;
}

type Vars = Record<string, unknown>;

function lookup(vars: Vars, path: string): unknown {
  return path.split('.').reduce<unknown>((v, key) => (v && typeof v === 'object' ? (v as Vars)[key] : undefined), vars);
}

/** Fills {{contact.first_name}}-style references from the contact and linked objects. */
export function fillTemplate(text: string, vars: Vars): string {
  return text.replace(/\{\{\s*([\w.]+)\s*\}\}/g, (_, path: string) => {
    const value = lookup(vars, path);
    return value === undefined || value === null ? '' : String(value);
  }).replace(/\s+([,.!?])/g, '$1').replace(/\s{2,}/g, ' ').trim();
}

interface Step {
  id?: string;
  type?: string;
  text?: string;
  question?: string;
  prompt?: string;
  field?: string;
  answer?: string;
}

/**
 * The conversation the simulated callee has with the script: the agent says each step's
 * text; where a step asks something, the callee answers from its contact fields and
 * linked objects. A stand-in until the script runtime drives the call.
 */
export function simulatedConversation(request: PlaceCallRequest): ConversationTurn[] {
  const vars: Vars = { contact: request.contact, objects: request.objects, ...request.objects };
  const definition = (request.script.definition ?? {}) as { steps?: Step[] };
  const turns: ConversationTurn[] = [];
  for (const step of definition.steps ?? []) {
    const said = step.text ?? step.question ?? step.prompt;
    if (said) turns.push({ role: 'agent', text: fillTemplate(said, vars) });
    if (step.type === 'ask' || step.question) {
      const answer = step.answer ? fillTemplate(step.answer, vars) : step.field ? String(lookup(vars, step.field) ?? lookup(vars, `contact.${step.field}`) ?? "I'm not sure.") : 'Yes.';
      turns.push({ role: 'user', text: answer || "I'm not sure." });
    } else if (step.type !== 'end' && said && turns.length === 1) {
      const name = typeof request.contact.first_name === 'string' && request.contact.first_name ? `, this is ${request.contact.first_name}` : '';
      turns.push({ role: 'user', text: `Hi${name}.` });
    }
  }
  return turns;
}

export class SimulatorProvider implements VoiceProvider {
  readonly name = 'simulator';

  constructor(
    private readonly callSeconds: number,
    /** For the answers the callee gives (spoken dates). */
    private readonly region = 'US',
  ) {}

  async placeCall(request: PlaceCallRequest): Promise<PlacedCall> {
    const outcome = simulatedOutcome(request.to);
    const total = Math.max(0, this.callSeconds);
    const ringSeconds = outcome.answered ? Math.min(1, total / 3) : total;
    const talkSeconds = outcome.answered ? total - ringSeconds : 0;
    const full = simulatedConversation(request);
    let turns: ConversationTurn[] = [];
    switch (outcome.status) {
      case 'completed':
        turns = full;
        break;
      case 'voicemail': {
        const first = typeof request.contact.first_name === 'string' ? ` ${request.contact.first_name}` : '';
        turns = [
          { role: 'user', text: 'You have reached voicemail. Please leave a message after the tone.' },
          { role: 'agent', text: `Hello${first}, we tried to reach you and will call again. Goodbye.` },
        ];
        break;
      }
      case 'hang-up':
        turns = outcome.doNotCall
          ? [...full.slice(0, 1), { role: 'user', text: 'Please take me off your list and do not call me again.' }, { role: 'agent', text: 'Understood, we will not call you again. Goodbye.' }]
          : [...full.slice(0, 1), { role: 'user', text: "Sorry, I can't talk right now." }];
        break;
      case 'dropout':
        turns = full.slice(0, 2);
        break;
      default:
        turns = [];
    }
    // An answered call that completes runs the call's script: the callee's answers come with the plan.
    const parsed = outcome.status === 'completed' ? parseScriptDefinition(request.script.definition) : undefined;
    const answers = parsed?.ok ? simulatedCalleeAnswers(parsed.script, { contact: request.contact, objects: request.objects, call: request.call ?? {} }, this.region) : undefined;
    return {
      provider: this.name,
      providerCallId: `sim-${request.callId}`,
      mode: 'simulated',
      plan: {
        ...outcome,
        ringSeconds,
        talkSeconds,
        turns,
        recordingUrl: outcome.answered ? `https://recordings.simulator.invalid/${request.callId}.wav` : null,
        ...(answers ? { answers } : {}),
      },
    };
  }
}
