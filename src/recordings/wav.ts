/** RIFF/WAVE with 16-bit PCM: the one format recordings are stored in. */

export const WAV_HEADER_BYTES = 44;

/** The 44-byte header of a 16-bit PCM WAV holding `dataBytes` bytes of samples. */
export function wavHeader(opts: { sampleRate: number; channels: number; dataBytes: number }): Buffer {
  const { sampleRate, channels, dataBytes } = opts;
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * channels * 2, 28); // byte rate
  h.writeUInt16LE(channels * 2, 32); // block align
  h.writeUInt16LE(16, 34); // bits per sample
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** A whole WAV file from interleaved samples. */
export function encodeWav(samples: Int16Array, opts: { sampleRate: number; channels: number }): Buffer {
  const data = Buffer.alloc(samples.length * 2);
  for (let i = 0; i < samples.length; i++) data.writeInt16LE(samples[i], i * 2);
  return Buffer.concat([wavHeader({ ...opts, dataBytes: data.length }), data]);
}

export interface DecodedWav {
  sampleRate: number;
  channels: number;
  /** Interleaved samples. */
  samples: Int16Array;
}

/**
 * Reads a 16-bit PCM WAV. A data chunk whose declared size is 0 or runs past the end (what a
 * writer that cannot seek back leaves, e.g. a WAV written to a pipe) is read to the end.
 */
export function decodeWav(buf: Buffer): DecodedWav {
  if (buf.length < 12 || buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') throw new Error('not a RIFF/WAVE file');
  let offset = 12;
  let format: { channels: number; sampleRate: number; bits: number; code: number } | undefined;
  while (offset + 8 <= buf.length) {
    const id = buf.toString('ascii', offset, offset + 4);
    const size = buf.readUInt32LE(offset + 4);
    const body = offset + 8;
    if (id === 'fmt ') {
      format = { code: buf.readUInt16LE(body), channels: buf.readUInt16LE(body + 2), sampleRate: buf.readUInt32LE(body + 4), bits: buf.readUInt16LE(body + 14) };
    } else if (id === 'data') {
      if (!format) throw new Error('WAV data before its fmt chunk');
      if (format.code !== 1 || format.bits !== 16) throw new Error(`unsupported WAV format ${format.code}/${format.bits} bits (16-bit PCM only)`);
      const end = size === 0 || body + size > buf.length ? buf.length : body + size;
      const count = Math.floor((end - body) / 2);
      const samples = new Int16Array(count);
      for (let i = 0; i < count; i++) samples[i] = buf.readInt16LE(body + i * 2);
      return { sampleRate: format.sampleRate, channels: format.channels, samples };
    }
    offset = body + size + (size % 2);
  }
  throw new Error('WAV without a data chunk');
}
