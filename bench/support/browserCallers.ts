// The callers of the voice benches (bench/voiceTurns.ts, bench/converse.ts), in their child
// process: werift peers (Opus like Chrome) that dial the media edge with a session minted
// through the API, answer each of the agent's prompts once it has ended (the edge sends no
// packets while it is silent) with answers encoded ahead, and time the agent's replies; and
// the parent's side of the child's message channel.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { SipTestClient } from '../../test/support/sipClient.js';
import { BrowserPeer } from '../../test/support/webrtcPeer.js';

/** One call for a caller: the session's bootstrap, dialled after `startDelayMs`. */
export interface CallOrder {
  sessionId: string;
  startDelayMs: number;
  bootstrap: { ws_url: string; target: string; headers: Record<string, string> };
}

export interface CallerResult {
  sessionId: string;
  /** End of the caller's sent speech → first packet of the agent's next audio, per answer. */
  turnsMs: number[];
  /** From the 200 OK to the agent's BYE. */
  seconds: number;
  error?: string;
}

interface LiveCaller {
  peer: BrowserPeer;
  /** Payloads still to send of the answer being spoken. */
  speaking: Buffer[];
  packets: number;
  lastPacketAt: number;
  /** When the last frame of the answer left, until the agent's next packet. */
  speechEndAt: number | undefined;
  turnsMs: number[];
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The 1-, 5- and 15-minute load averages. */
export const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

/** Callers that say `answers` in order, one each time the agent's audio has ended (`quietMs` without a packet). */
export class BrowserCallers {
  private readonly live = new Set<LiveCaller>();
  private readonly clock: NodeJS.Timeout;

  constructor(
    private readonly answers: Buffer[][],
    silence: Buffer,
    private readonly quietMs: number,
  ) {
    // One 20 ms clock for every caller, like a browser's audio device: each sends its answer's next frame, or silence.
    const started = performance.now();
    let ticks = 0;
    this.clock = setInterval(() => {
      for (const due = Math.floor((performance.now() - started) / 20); ticks < due; ticks++) {
        for (const c of this.live) {
          const payload = c.speaking.shift();
          c.peer.sendEncoded(payload ?? silence);
          if (payload && c.speaking.length === 0) c.speechEndAt = performance.now();
        }
      }
    }, 5);
  }

  /** Dials the order's session, answers every prompt, and waits for the agent's BYE. */
  async call(order: CallOrder): Promise<CallerResult> {
    await sleep(order.startDelayMs);
    const sip = await SipTestClient.connect(order.bootstrap.ws_url);
    const peer = new BrowserPeer('opus', { decode: false });
    const caller: LiveCaller = { peer, speaking: [], packets: 0, lastPacketAt: 0, speechEndAt: undefined, turnsMs: [] };
    peer.onPacket(() => {
      const now = performance.now();
      if (caller.speechEndAt !== undefined) {
        caller.turnsMs.push(now - caller.speechEndAt);
        caller.speechEndAt = undefined;
      }
      caller.packets++;
      caller.lastPacketAt = now;
    });
    let answeredAt = performance.now();
    const result = (error?: unknown): CallerResult => ({ sessionId: order.sessionId, turnsMs: caller.turnsMs, seconds: (performance.now() - answeredAt) / 1000, ...(error === undefined ? {} : { error: String(error) }) });
    try {
      const dialog = sip.invite({ target: order.bootstrap.target, headers: order.bootstrap.headers, sdp: await peer.offer() });
      const ok = await sip.answered(dialog, 20_000);
      if (ok.status !== 200) throw new Error(`INVITE answered ${ok.status}`);
      answeredAt = performance.now();
      await peer.accept(ok.body);
      await peer.connected(20_000);
      this.live.add(caller);
      const bye = sip.waitFor((m) => m.kind === 'request' && m.method === 'BYE', 120_000, 'the agent hanging up');
      for (const answer of this.answers) {
        // The agent's next audio, then its end.
        const heard = caller.packets;
        while (!(caller.packets > heard && caller.speechEndAt === undefined && performance.now() - caller.lastPacketAt >= this.quietMs)) await sleep(20);
        caller.speaking = [...answer];
        while (caller.speaking.length) await sleep(20);
      }
      await bye;
      return result();
    } catch (err) {
      return result(err);
    } finally {
      this.live.delete(caller);
      await peer.close();
      await sip.close();
    }
  }

  stop(): void {
    clearInterval(this.clock);
  }
}

/** Sends the child `message` and resolves with its answer of kind `answer` (its `error` rejects). */
export function askChild<Message, Answer extends { event: string; message?: string }>(child: ChildProcess, message: Message, answer: Answer['event']): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: Answer) => {
      if (m.event === 'error') reject(new Error(m.message));
      else if (m.event === answer) resolve(m);
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
    child.send(message as object);
  });
}
