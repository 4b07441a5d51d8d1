/**
 * The script's voicemail message as the agent says it on an answering machine (the
 * script's `voicemail_message`, docs/scripts.md): its template filled like any spoken line,
 * from the call's first variables (contact.*, objects.*, call.*), since no step has run.
 */
import type { ScriptDefinition } from './definition.js';
import { initialScope, renderSpeech, type ScriptCallData } from './steps.js';

/** The message to leave, or undefined when the script has none (or it fills to nothing). */
export function voicemailMessageOf(script: Pick<ScriptDefinition, 'voicemail_message'>, data: ScriptCallData): string | undefined {
  if (!script.voicemail_message) return undefined;
  const message = renderSpeech(script.voicemail_message, initialScope(data));
  return message === '' ? undefined : message;
}
