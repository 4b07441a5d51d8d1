# SPDX-License-Identifier: GPL-3.0-or-later
"""Bench only: the edge's Piper worker (src/mediaEdge/speech/piper_worker.py) speaking at
the length scale in BENCH_PIPER_LENGTH_SCALE (below 1 is faster), so bench/speechAccuracy.ts
can have Piper say its set at a second speed. Same arguments and framing as the worker; it
imports piper-tts (GPL-3.0), so it runs only as its own process, as the worker does.
"""

import os
import runpy

import piper.config

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "mediaEdge", "speech", "piper_worker.py")
SCALE = float(os.environ.get("BENCH_PIPER_LENGTH_SCALE", "1"))
_synthesis_config = piper.config.SynthesisConfig


def _at_scale(*args, **kwargs):
    kwargs.setdefault("length_scale", SCALE)
    return _synthesis_config(*args, **kwargs)


piper.config.SynthesisConfig = _at_scale
runpy.run_path(WORKER, run_name="__main__")
