/**
 * The seam between a transport (WebRTC in a browser call, a carrier's media stream later)
 * and the conversation engine. The engine speaks and listens in one format only, whatever
 * carries the call: 20 ms frames of 16 kHz mono signed 16-bit PCM. Each transport decodes,
 * resamples and de-jitters into that, and paces what it is given out at one frame per 20 ms.
 */

export const SAMPLE_RATE = 16_000;
export const FRAME_MS = 20;
export const FRAME_SAMPLES = (SAMPLE_RATE * FRAME_MS) / 1000; // 320

/** One 20 ms frame: FRAME_SAMPLES samples of 16 kHz mono PCM. */
export type PcmFrame = Int16Array;

/**
 * What the far end's audio carried before it became 16 kHz frames: `telephone` is a phone
 * line's 300–3400 Hz at 8 kHz (G.711), `wideband` a browser's microphone. Recognisers are
 * chosen per band (speech/recognizerChoice.ts).
 */
export type AudioBand = 'wideband' | 'telephone';

/** Why a channel closed: the far end hung up, the engine hung up, or the media was lost. */
export type ChannelCloseReason = 'remote_hangup' | 'local_hangup' | 'media_lost';

export interface MediaChannel {
  /** The band of the far end's audio (absent: wideband). */
  readonly band?: AudioBand;
  /** The far end's audio, one frame every 20 ms in order (gaps filled with silence by the jitter buffer). */
  onInbound(listener: (frame: PcmFrame) => void): () => void;
  /** Agent audio actually sent to the far end, as it leaves (for recordings and latency figures). */
  onOutbound(listener: (frame: PcmFrame) => void): () => void;
  /** Queues agent audio; the transport sends one frame every 20 ms. */
  enqueue(frame: PcmFrame): void;
  /** Drops agent audio not yet sent (barge-in). */
  clear(): void;
  /** Resolves once every queued frame has been sent or cleared. */
  drained(): Promise<void>;
  /** Settles once, when the channel closes. */
  readonly closed: Promise<ChannelCloseReason>;
  /**
   * Keypad digits the far end keys (0-9, *, #, A-D), one call per key press, for transports
   * that carry them (a phone call's RFC 4733 events); absent where none can arrive.
   */
  onDigit?(listener: (digit: string) => void): () => void;
}
