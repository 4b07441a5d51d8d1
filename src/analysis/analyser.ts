/**
 * Post-call analysis behind an interface: after a call's terminal status, an analyser turns
 * what happened (the conversation, System Notes, the script's objectives) into the result
 * fields call_summary, transcript, transcript_json, structured_data, objectives and
 * recording_url. The built-in analyser is deterministic; an LLM-backed one can implement
 * the same interface.
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
}

export interface CallAnalyser {
  readonly name: string;
  analyse(input: AnalysisInput): Promise<CallAnalysis>;
}
