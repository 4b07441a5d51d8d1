/**
 * Post-call analysis behind an interface: after a call's terminal status, an analyser turns
 * what happened (the conversation, System Notes, the script's objectives) into the result
 * fields call_summary, transcript, transcript_json, structured_data, objectives and
 * recording_url. The built-in analyser is deterministic (the default); ANALYSER=llm asks a
 * language model (llm.ts).
 */
import type { ConversationTurn, SystemNote } from '../domain/calls.js';
import type { CallAnalysis } from '../db/repositories/calls.js';

export interface AnalysisInput {
  callId: string;
  status: string;
  endReason: string | null;
  durationSeconds: number | null;
  turns: ConversationTurn[];
  systemNotes: SystemNote[];
  objectives: string[];
  contact: { first_name?: string | null; last_name?: string | null; full_name?: string | null; phone_number?: string | null };
  scriptName: string;
  recordingUrl: string | null;
  /** The script's structured_data: output key → variable name. */
  structuredData?: Record<string, string>;
  /** The contact fields the script itself uses (`{{contact.first_name}}`): all an LLM analyser may pass on. */
  contactFields?: string[];
}

/** Where an analysis runs: the activity's attempt (1 the first time) and its cancellation. */
export interface AnalysisContext {
  attempt?: number;
  signal?: AbortSignal;
}

export interface CallAnalyser {
  readonly name: string;
  analyse(input: AnalysisInput, context?: AnalysisContext): Promise<CallAnalysis>;
}
