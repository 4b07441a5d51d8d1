import { transcriptText } from '../domain/calls.js';
import { scriptResultFromNotes } from '../domain/scripts/steps.js';
import type { CallAnalysis } from '../db/repositories/calls.js';
import type { AnalysisInput, CallAnalyser } from './analyser.js';

const STOP_WORDS = new Set(['the', 'a', 'an', 'and', 'or', 'to', 'of', 'for', 'with', 'their', 'his', 'her', 'its', 'our', 'your', 'on', 'in', 'at', 'by', 'is', 'be', 'that', 'this', 'contact', 'caller', 'call', 'user']);

/** Lower-cased word stems (first five letters) of the words that carry meaning. */
function stems(text: string): string[] {
  return text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 2 && !STOP_WORDS.has(w))
    .map((w) => w.slice(0, 5));
}

const OUTCOME_SENTENCES: Record<string, string> = {
  completed: 'The call was answered and the script ran to its end.',
  voicemail: 'The call reached voicemail.',
  'rang-out': 'The call rang out without an answer.',
  'User rejected': 'The callee rejected the call.',
  'User unavailable': 'The callee could not be reached.',
  'hang-up': 'The callee hung up before the script ended.',
  dropout: 'The connection dropped during the call.',
  failed: 'The call failed for a technical reason.',
  cancelled: 'The call was cancelled before it started.',
};

/**
 * Derives every result field from the conversation alone, the same way every time:
 * - transcript / transcript_json: the turns, role-prefixed;
 * - objectives: an objective is met when the callee took part in the conversation and a
 *   meaningful word of it (by stem) appears in the transcript or the System Notes;
 * - structured_data: outcome, turn counts and the callee's answers in order;
 * - call_summary: who was called, the outcome, and what was said.
 */
export class DeterministicAnalyser implements CallAnalyser {
  readonly name = 'deterministic';

  async analyse(input: AnalysisInput): Promise<CallAnalysis> {
    const turns = input.turns;
    const userTurns = turns.filter((t) => t.role === 'user');
    const agentTurns = turns.filter((t) => t.role === 'agent');
    const conversed = userTurns.length > 0 && input.status !== 'voicemail';
    const haystack = new Set(stems([...turns.map((t) => t.text), ...input.systemNotes.map((n) => `${n.kind} ${n.text}`)].join(' ')));
    // When the script runtime ran the script, its own verdicts are the objectives (docs/scripts.md).
    const scripted = scriptResultFromNotes(input.systemNotes);
    const objectives = scripted
      ? scripted.objectives
      : input.objectives.map((objective) => ({
          objective,
          met: conversed && stems(objective).some((s) => haystack.has(s)),
        }));
    const who = input.contact.full_name || [input.contact.first_name, input.contact.last_name].filter(Boolean).join(' ') || input.contact.phone_number || 'the contact';
    const met = objectives.filter((o) => o.met).length;
    const summary = [
      `Call to ${who} with the script "${input.scriptName}".`,
      OUTCOME_SENTENCES[input.status] ?? `The call ended with status ${input.status}.`,
      turns.length ? `${agentTurns.length} agent and ${userTurns.length} callee turn(s) were exchanged.` : 'Nothing was said.',
      objectives.length ? `${met} of ${objectives.length} objective(s) met.` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return {
      call_summary: summary,
      transcript: transcriptText(turns),
      transcript_json: turns.map((t) => ({ role: t.role, text: t.text })),
      structured_data: {
        outcome: input.status,
        end_reason: input.endReason,
        duration_seconds: input.durationSeconds,
        answered: userTurns.length > 0,
        turn_count: turns.length,
        agent_turn_count: agentTurns.length,
        user_turn_count: userTurns.length,
        user_answers: userTurns.map((t) => t.text),
        objectives_met: met,
        objectives_total: objectives.length,
        ...(scripted?.structured_data ?? {}),
      },
      objectives,
      recording_url: input.recordingUrl,
    };
  }
}
