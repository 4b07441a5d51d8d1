/**
 * The audio codecs the WebRTC transport negotiates, each turning RTP payloads into the
 * channel's 16 kHz mono PCM and back:
 * - Opus (opus/48000/2 in SDP) through libopus compiled to WebAssembly (opusscript). Opus
 *   decodes and encodes natively at 16 kHz, so no resampling: the RTP clock stays 48 kHz
 *   (960 ticks per 20 ms) whatever the internal rate.
 * - PCMU (G.711 μ-law, 8 kHz) as the fallback every WebRTC browser offers: μ-law and
 *   the half-band 8 ↔ 16 kHz converters (audio/halfband.ts).
 * - PCMA (G.711 A-law, 8 kHz), the same at 8 kHz in the other law: phone calls over a SIP
 *   trunk (src/mediaEdge/rtp/) take PCMU or PCMA, whichever the far end offers.
 */
import OpusScript from 'opusscript';
import { ALAW_DECODE_TABLE, ALAW_ENCODE_TABLE, MULAW_DECODE_TABLE, MULAW_ENCODE_TABLE } from '../audio/mulaw.js';
import { Downsampler2, Upsampler2 } from '../audio/halfband.js';
import { FRAME_SAMPLES, SAMPLE_RATE } from '../media/channel.js';

export type CodecName = 'opus' | 'PCMU' | 'PCMA';

export interface AudioCodec {
  readonly name: CodecName;
  /** RTP clock rate. */
  readonly clockRate: number;
  /** RTP clock ticks in one 20 ms frame. */
  readonly frameTicks: number;
  /** An RTP payload → 16 kHz PCM (any whole number of 20 ms frames; empty when undecodable). */
  decode(payload: Uint8Array): Int16Array;
  /** One 20 ms frame of 16 kHz PCM → one RTP payload. */
  encode(frame: Int16Array): Buffer;
  /** Frees the codec's memory (the Opus state lives in the WebAssembly heap). */
  close(): void;
}

/** Encoder complexity 5 of 10: a third of the CPU of 10 for speech that sounds the same. */
const OPUS_COMPLEXITY = 5;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_BITRATE = 4002;
const OPUS_BITRATE = 24_000;

class OpusCodec implements AudioCodec {
  readonly name = 'opus' as const;
  readonly clockRate = 48_000;
  readonly frameTicks = 960;
  private readonly encoder = new OpusScript(SAMPLE_RATE, 1, OpusScript.Application.VOIP);
  private readonly decoder = new OpusScript(SAMPLE_RATE, 1, OpusScript.Application.VOIP);
  private closed = false;

  constructor() {
    this.encoder.encoderCTL(OPUS_SET_COMPLEXITY, OPUS_COMPLEXITY);
    this.encoder.encoderCTL(OPUS_SET_BITRATE, OPUS_BITRATE);
  }

  decode(payload: Uint8Array): Int16Array {
    if (this.closed || payload.length === 0) return new Int16Array(0);
    try {
      const pcm = this.decoder.decode(Buffer.from(payload.buffer, payload.byteOffset, payload.length));
      // Copy out of the decoder's buffer into an aligned array of our own.
      return new Int16Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.length));
    } catch {
      return new Int16Array(0);
    }
  }

  encode(frame: Int16Array): Buffer {
    return this.encoder.encode(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength), FRAME_SAMPLES);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.encoder.delete();
    this.decoder.delete();
  }
}

/**
 * G.711 at 8 kHz, μ-law (PCMU) or A-law (PCMA), to and from the channel's 16 kHz by the
 * half-band converters (audio/halfband.ts): a quarter of the general resampler's CPU, which
 * every phone call pays 50 times a second each way. The law's tables are read inside the
 * converters' loops (decode while filling the upsampler, encode as each 8 kHz sample is made),
 * so no 8 kHz array is made in between.
 */
class G711Codec implements AudioCodec {
  readonly clockRate = 8000;
  readonly frameTicks = 160;
  private readonly up = new Upsampler2();
  private readonly down = new Downsampler2();
  private readonly decodeTable: Int16Array;
  private readonly encodeTable: Uint8Array;

  constructor(readonly name: 'PCMU' | 'PCMA') {
    [this.decodeTable, this.encodeTable] = name === 'PCMU' ? [MULAW_DECODE_TABLE, MULAW_ENCODE_TABLE] : [ALAW_DECODE_TABLE, ALAW_ENCODE_TABLE];
  }

  decode(payload: Uint8Array): Int16Array {
    return this.up.pushCodes(payload, this.decodeTable);
  }

  encode(frame: Int16Array): Buffer {
    // Half the samples, and one more when an odd sample is left over from the last frame.
    const out = Buffer.allocUnsafe((frame.length >> 1) + 1);
    const written = this.down.pushEncoded(frame, this.encodeTable, out, 0);
    return out.subarray(0, written);
  }

  close(): void {}
}

export function createCodec(name: CodecName): AudioCodec {
  return name === 'opus' ? new OpusCodec() : new G711Codec(name);
}
