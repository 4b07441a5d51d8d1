/**
 * Tells the agent's own echo from the caller while the agent speaks. A line returns some of
 * what it carries: a telephone hybrid reflects it (after the carrier's echo canceller, 30 dB
 * or more below the original), a browser's canceller leaves a residue. A voice-activity
 * model hears that residue as voice, since it is the agent's voice; a caller talking over
 * the agent is much louder. So, while the agent's audio has left within ECHO_TAIL_MS, voice
 * whose loudest frame stays more than `marginDb` below the loudest agent frame of that span
 * is taken for echo: it neither cuts the agent off nor becomes an answer.
 */
import { SILENCE_DBFS } from '../audio/level.js';

/** Echo comes back within this long of the agent audio that caused it (round trip and the canceller's tail). */
export const ECHO_TAIL_MS = 500;
/**
 * Voice this far below the agent's level is echo. A caller's speech reaches the edge within
 * about 15 dB of the synthesised voice; residual echo lies 30 dB or more below it.
 */
export const ECHO_MARGIN_DB = 25;

export class EchoGate {
  /** Levels of agent frames that left within the tail: descending levels, oldest first (a sliding maximum). */
  private readonly loudest: { at: number; level: number }[] = [];

  constructor(private readonly marginDb: number) {}

  /** An agent frame of `level` dBFS left at `at`. */
  agentFrame(level: number, at: number): void {
    while (this.loudest.length > 0 && this.loudest[this.loudest.length - 1].level <= level) this.loudest.pop();
    this.loudest.push({ at, level });
  }

  /** The loudest agent frame within the tail before `at` (SILENCE_DBFS when the agent was quiet). */
  agentLevel(at: number): number {
    while (this.loudest.length > 0 && this.loudest[0].at < at - ECHO_TAIL_MS) this.loudest.shift();
    return this.loudest[0]?.level ?? SILENCE_DBFS;
  }

  /** True when voice whose loudest frame is `voiceLevel` dBFS, heard at `at`, is the agent's echo. */
  isEcho(voiceLevel: number, at: number): boolean {
    const agent = this.agentLevel(at);
    return agent > SILENCE_DBFS && voiceLevel < agent - this.marginDb;
  }
}
