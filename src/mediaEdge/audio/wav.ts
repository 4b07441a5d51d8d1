/**
 * RIFF/WAVE files of 16-bit PCM: what the offline synthesisers write, what tests record and
 * what recordings are kept as. Any channel count and sample rate; other encodings are refused.
 */

export interface PcmAudio {
  sampleRate: number;
  channels: number;
  /** Interleaved signed 16-bit samples (frame i, channel c at i * channels + c). */
  samples: Int16Array;
}

const PCM_FORMAT = 1;
const EXTENSIBLE_FORMAT = 0xfffe;
/** Streaming writers (espeak-ng --stdout) put these in the size fields: "until the end of the file". */
const UNKNOWN_SIZES = new Set([0xffffffff, 0x7fffffff, 0]);
export const WAV_HEADER_BYTES = 44;

export class WavFormatError extends Error {
  constructor(message: string) {
    super(`Not a 16-bit PCM WAV file: ${message}`);
    this.name = 'WavFormatError';
  }
}

export interface WavLayout {
  sampleRate: number;
  channels: number;
  /** Byte offset of the first sample. */
  dataOffset: number;
  /** Bytes of samples, or undefined when the header does not know (a stream). */
  dataBytes: number | undefined;
}

/** Reads the header of a WAV file held in `bytes` (which may be only its beginning); undefined while more bytes are needed. */
export function readWavLayout(bytes: Uint8Array): WavLayout | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 12) return undefined;
  if (ascii(bytes, 0, 4) !== 'RIFF' || ascii(bytes, 8, 4) !== 'WAVE') throw new WavFormatError('no RIFF/WAVE header');
  let offset = 12;
  let format: { sampleRate: number; channels: number } | undefined;
  for (;;) {
    if (offset + 8 > bytes.length) return undefined;
    const id = ascii(bytes, offset, 4);
    const size = view.getUint32(offset + 4, true);
    const body = offset + 8;
    if (id === 'fmt ') {
      if (body + 16 > bytes.length) return undefined;
      const tag = view.getUint16(body, true);
      const channels = view.getUint16(body + 2, true);
      const sampleRate = view.getUint32(body + 4, true);
      const bits = view.getUint16(body + 14, true);
      let pcm = tag === PCM_FORMAT;
      if (tag === EXTENSIBLE_FORMAT) {
        if (body + 26 > bytes.length) return undefined;
        pcm = view.getUint16(body + 24, true) === PCM_FORMAT; // first two bytes of the sub-format GUID
      }
      if (!pcm) throw new WavFormatError(`format tag ${tag} is not PCM`);
      if (bits !== 16) throw new WavFormatError(`${bits} bits per sample`);
      if (channels < 1 || sampleRate < 1) throw new WavFormatError('no channels or no sample rate');
      format = { sampleRate, channels };
    } else if (id === 'data') {
      if (!format) throw new WavFormatError('data chunk before fmt chunk');
      return { ...format, dataOffset: body, dataBytes: UNKNOWN_SIZES.has(size) ? undefined : size };
    }
    offset = body + size + (size % 2); // chunks are padded to an even length
  }
}

/** Parses a whole WAV file of 16-bit PCM. */
export function readWav(bytes: Uint8Array): PcmAudio {
  const layout = readWavLayout(bytes);
  if (!layout) throw new WavFormatError('truncated header');
  const available = bytes.length - layout.dataOffset;
  let length = layout.dataBytes === undefined ? available : Math.min(layout.dataBytes, available);
  length -= length % (2 * layout.channels);
  return { sampleRate: layout.sampleRate, channels: layout.channels, samples: int16FromLittleEndian(bytes.subarray(layout.dataOffset, layout.dataOffset + length)) };
}

/** A WAV file (44-byte header, 16-bit PCM) of interleaved samples. */
export function writeWav(audio: PcmAudio): Buffer {
  const dataBytes = audio.samples.length * 2;
  const out = Buffer.alloc(WAV_HEADER_BYTES + dataBytes);
  out.write('RIFF', 0, 'ascii');
  out.writeUInt32LE(36 + dataBytes, 4);
  out.write('WAVE', 8, 'ascii');
  out.write('fmt ', 12, 'ascii');
  out.writeUInt32LE(16, 16);
  out.writeUInt16LE(PCM_FORMAT, 20);
  out.writeUInt16LE(audio.channels, 22);
  out.writeUInt32LE(audio.sampleRate, 24);
  out.writeUInt32LE(audio.sampleRate * audio.channels * 2, 28);
  out.writeUInt16LE(audio.channels * 2, 32);
  out.writeUInt16LE(16, 34);
  out.write('data', 36, 'ascii');
  out.writeUInt32LE(dataBytes, 40);
  for (let i = 0; i < audio.samples.length; i++) out.writeInt16LE(audio.samples[i], WAV_HEADER_BYTES + i * 2);
  return out;
}

/** The mean of the channels, as one mono channel. */
export function toMono(audio: PcmAudio): Int16Array {
  if (audio.channels === 1) return audio.samples;
  const frames = Math.floor(audio.samples.length / audio.channels);
  const out = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < audio.channels; c++) sum += audio.samples[i * audio.channels + c];
    out[i] = Math.round(sum / audio.channels);
  }
  return out;
}

/** Little-endian 16-bit samples (an odd trailing byte is ignored); copies, so any alignment works. */
export function int16FromLittleEndian(bytes: Uint8Array): Int16Array {
  const count = bytes.length >> 1;
  const out = new Int16Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
  for (let i = 0; i < count; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Samples as little-endian bytes (what pocketsphinx reads as raw audio). */
export function int16ToLittleEndian(samples: Int16Array): Buffer {
  const out = Buffer.allocUnsafe(samples.length * 2);
  for (let i = 0; i < samples.length; i++) out.writeInt16LE(samples[i], i * 2);
  return out;
}

function ascii(bytes: Uint8Array, at: number, length: number): string {
  return String.fromCharCode(...bytes.subarray(at, at + length));
}
