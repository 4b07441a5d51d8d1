/**
 * The recording of a simulated call: its conversation spoken by a synthesiser, each turn
 * after the other, in the layout every recording has (stereo 16 kHz: caller left, agent
 * right), so it plays and is served exactly like a recording made by the media edge.
 */
import type { ConversationTurn } from '../domain/calls.js';
import { SYNTHESIS_SAMPLE_RATE, type SpeechSynthesis } from './synthesis.js';
import { encodeWav } from './wav.js';

const LEAD_IN_MS = 300;
const GAP_MS = 400;

export async function synthesiseConversation(turns: ConversationTurn[], speak: SpeechSynthesis): Promise<Buffer> {
  const spoken: { role: ConversationTurn['role']; samples: Int16Array }[] = [];
  // One turn at a time: a simulated call has a handful of turns, and festival takes a core each.
  for (const turn of turns) spoken.push({ role: turn.role, samples: await speak(turn.text) });
  const ms = (n: number) => Math.round((n * SYNTHESIS_SAMPLE_RATE) / 1000);
  const frames = ms(LEAD_IN_MS) + spoken.reduce((sum, s) => sum + s.samples.length + ms(GAP_MS), 0);
  const stereo = new Int16Array(frames * 2);
  let at = ms(LEAD_IN_MS);
  for (const { role, samples } of spoken) {
    const channel = role === 'user' ? 0 : 1;
    for (let i = 0; i < samples.length; i++) stereo[(at + i) * 2 + channel] = samples[i];
    at += samples.length + ms(GAP_MS);
  }
  return encodeWav(stereo, { sampleRate: SYNTHESIS_SAMPLE_RATE, channels: 2 });
}
