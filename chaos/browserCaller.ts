// Browser calls that really talk, for the chaos run: werift peers (test/support/webrtcPeer.ts,
// Opus like Chrome) that dial the media edge with a session minted through the API, as
// bench/voiceTurns.ts does, and answer each of the agent's prompts with festival-made speech
// (test/support/spokenOpus.ts) once the prompt has ended.
import { SipTestClient } from '../test/support/sipClient.js';
import { opusSilence, spokenOpus } from '../test/support/spokenOpus.js';
import { BrowserPeer } from '../test/support/webrtcPeer.js';

/** The agent's prompt has ended when no packet came for this long (the edge sends nothing while silent). */
const PROMPT_END_QUIET_MS = 400;

export interface Bootstrap {
  ws_url: string;
  target: string;
  headers: Record<string, string>;
}

/** Answers encoded once as 20 ms Opus frames, shared by every caller. */
export class SpokenAnswers {
  private constructor(
    readonly answers: Buffer[][],
    readonly silence: Buffer,
  ) {}

  static async prepare(texts: string[]): Promise<SpokenAnswers> {
    const answers: Buffer[][] = [];
    for (const text of texts) answers.push(await spokenOpus(text));
    return new SpokenAnswers(answers, opusSilence());
  }
}

/**
 * One browser call: dials, answers each prompt in turn, and resolves how it ended: 'bye'
 * (the agent hung up), or the error that ended it (the edge killed: the socket closed).
 * `onLive` is called once media flows.
 */
export async function browserCall(bootstrap: Bootstrap, spokenAnswers: SpokenAnswers, onLive: () => void, timeoutMs = 120_000): Promise<string> {
  let sip: SipTestClient;
  try {
    sip = await SipTestClient.connect(bootstrap.ws_url);
  } catch (err) {
    // The edge is down (killed, restarting): the caller's page would show an error.
    return `error: ${(err as Error).message}`;
  }
  const peer = new BrowserPeer('opus', { decode: false });
  let lastPacketAt = 0;
  let heardSincePrompt = false;
  let speaking: Buffer[] = [];
  let finished = false;
  peer.onPacket(() => {
    lastPacketAt = performance.now();
    heardSincePrompt = true;
  });
  // A browser's audio device: a frame every 20 ms, the answer being spoken or silence.
  const started = performance.now();
  let sent = 0;
  const clock = setInterval(() => {
    for (const due = Math.floor((performance.now() - started) / 20); sent < due; sent++) peer.sendEncoded(speaking.shift() ?? spokenAnswers.silence);
  }, 10);
  try {
    const dialog = sip.invite({ target: bootstrap.target, headers: bootstrap.headers, sdp: await peer.offer() });
    const ok = await sip.answered(dialog, 30_000);
    if (ok.status !== 200) return `refused ${ok.status}`;
    await peer.accept(ok.body);
    await peer.connected(20_000);
    onLive();
    const bye = sip.waitFor((m) => m.kind === 'request' && m.method === 'BYE', timeoutMs, 'the agent hanging up').then(() => 'bye');
    const closed = sip.closed.then(({ code }) => `socket closed ${code}`);
    let next = 0;
    const answering = (async () => {
      while (!finished && next < spokenAnswers.answers.length) {
        await new Promise((r) => setTimeout(r, 20));
        if (heardSincePrompt && speaking.length === 0 && performance.now() - lastPacketAt >= PROMPT_END_QUIET_MS) {
          heardSincePrompt = false;
          speaking = [...spokenAnswers.answers[next++]];
        }
      }
      return new Promise<string>(() => {});
    })();
    return await Promise.race([bye, closed, answering]);
  } catch (err) {
    return `error: ${(err as Error).message}`;
  } finally {
    finished = true;
    clearInterval(clock);
    // A peer that never connected can take long to close: the caller does not wait for it.
    await Promise.race([peer.close().catch(() => {}), new Promise((r) => setTimeout(r, 3000))]);
    await sip.close().catch(() => {});
  }
}
