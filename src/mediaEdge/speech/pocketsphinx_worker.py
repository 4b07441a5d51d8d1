"""A warm pocketsphinx decoder for the media edge (pocketsphinxDecoders.ts): the decoder
pocketsphinx_continuous would build from the same arguments, built once and then used for
one utterance after another, so the general language model (about half a CPU-second to
load) is not loaded again for every answer.

It calls Debian's libpocketsphinx (the library pocketsphinx_continuous runs on) through
ctypes: the Python standard library only, no venv.

    python3 pocketsphinx_worker.py -hmm <dir> -lm <file> -dict <file> [decoder options]

Framing (the edge writes stdin, reads stdout):
- stdin: messages of one type byte, a 4-byte little-endian length, then that many bytes.
  `A`: audio, 16 kHz signed 16-bit little-endian mono, fed to the decoder as it comes (the
  utterance starts with its first audio). `P`: the text so far, the utterance going on (the
  caller has paused). `E`: the utterance has ended: decode what is left. `X`: the utterance
  is abandoned. `P`, `E` and `X` have an empty body.
- stdout: one line per event. `ready` once the decoder is built; for each `P`, `partial
  <words>`; for each `E`, `text <words>`
  (`text ` alone when nothing was recognised); for each `X`, `abandoned`; `error <message>`
  when the decoder fails an utterance (the process stays usable). A line for `E` or `X` means
  the decoder is free for the next utterance.
- stderr: what Python says when the worker fails (the decoder's own log goes to -logfn).
The worker exits when stdin closes.
"""

import ctypes
import struct
import sys


def load(name):
    try:
        return ctypes.CDLL(name)
    except OSError as err:
        sys.stderr.write(f"cannot load {name}: {err}\n")
        sys.exit(3)


sphinxbase = load("libsphinxbase.so.3")
pocketsphinx = load("libpocketsphinx.so.3")

pocketsphinx.ps_args.restype = ctypes.c_void_p
sphinxbase.cmd_ln_parse_r.restype = ctypes.c_void_p
sphinxbase.cmd_ln_parse_r.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
pocketsphinx.ps_init.restype = ctypes.c_void_p
pocketsphinx.ps_init.argtypes = [ctypes.c_void_p]
pocketsphinx.ps_start_utt.argtypes = [ctypes.c_void_p]
pocketsphinx.ps_end_utt.argtypes = [ctypes.c_void_p]
pocketsphinx.ps_process_raw.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]
pocketsphinx.ps_get_hyp.restype = ctypes.c_char_p
pocketsphinx.ps_get_hyp.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)]
pocketsphinx.ps_get_feat.restype = ctypes.c_void_p
pocketsphinx.ps_get_feat.argtypes = [ctypes.c_void_p]
sphinxbase.cmn_live_get.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]
sphinxbase.cmn_live_set.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float)]


class Feat(ctypes.Structure):
    """The head of sphinxbase's feat_t (feat.h), up to its CMN state."""

    _fields_ = [
        ("refcount", ctypes.c_int),
        ("name", ctypes.c_char_p),
        ("cepsize", ctypes.c_int32),
        ("n_stream", ctypes.c_int32),
        ("stream_len", ctypes.c_void_p),
        ("window_size", ctypes.c_int32),
        ("n_sv", ctypes.c_int32),
        ("sv_len", ctypes.c_void_p),
        ("subvecs", ctypes.c_void_p),
        ("sv_buf", ctypes.c_void_p),
        ("sv_dim", ctypes.c_int32),
        ("cmn", ctypes.c_int),
        ("varnorm", ctypes.c_int32),
        ("agc", ctypes.c_int),
        ("compute_feat", ctypes.c_void_p),
        ("cmn_struct", ctypes.c_void_p),
    ]


class Cmn(ctypes.Structure):
    """sphinxbase's cmn_t (cmn.h)."""

    _fields_ = [
        ("cmn_mean", ctypes.c_void_p),
        ("cmn_var", ctypes.c_void_p),
        ("sum", ctypes.c_void_p),
        ("nframe", ctypes.c_int32),
        ("veclen", ctypes.c_int32),
    ]


class FreshCepstralMean:
    """
    Live cepstral mean normalisation learns the line's mean as it decodes and carries it into
    the next utterance. A warm decoder serves one caller after another, so each utterance starts
    from the mean the model starts with, as a new pocketsphinx_continuous would: kept once,
    put back before every utterance.
    """

    def __init__(self, decoder):
        self.cmn = None
        feat = pocketsphinx.ps_get_feat(decoder)
        if not feat:
            return
        head = Feat.from_address(feat)
        if not head.cmn_struct:
            return
        cmn = Cmn.from_address(head.cmn_struct)
        if cmn.veclen != head.cepsize or not 0 < cmn.veclen <= 64:
            sys.stderr.write(f"pocketsphinx's CMN state does not look as expected (veclen {cmn.veclen}, cepsize {head.cepsize}): not reset between utterances\n")
            return
        self.cmn = head.cmn_struct
        self.initial = (ctypes.c_float * cmn.veclen)()
        sphinxbase.cmn_live_get(self.cmn, self.initial)

    def restore(self):
        if self.cmn:
            sphinxbase.cmn_live_set(self.cmn, self.initial)


def hypothesis(decoder):
    """The decoder's best words so far, on one line."""
    hyp = pocketsphinx.ps_get_hyp(decoder, None)
    return " ".join(hyp.decode("utf-8", "replace").split()) if hyp else ""


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def read_exactly(stream, n):
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def main():
    # argv[0] is skipped by the parser, as a program's own name is.
    args = [a.encode() for a in sys.argv]
    argv = (ctypes.c_char_p * len(args))(*args)
    config = sphinxbase.cmd_ln_parse_r(None, pocketsphinx.ps_args(), len(args), argv, 1)
    if not config:
        sys.stderr.write("pocketsphinx rejected the arguments (see its log)\n")
        sys.exit(2)
    decoder = pocketsphinx.ps_init(config)
    if not decoder:
        sys.stderr.write("pocketsphinx could not build the decoder (see its log)\n")
        sys.exit(2)
    cepstral_mean = FreshCepstralMean(decoder)
    say("ready")
    stdin = sys.stdin.buffer
    in_utterance = False
    failed = None
    while True:
        header = read_exactly(stdin, 5)
        if header is None:
            return
        kind, length = header[:1], struct.unpack("<I", header[1:])[0]
        body = read_exactly(stdin, length) if length else b""
        if body is None:
            return
        if kind == b"A":
            if failed:
                continue
            if not in_utterance:
                cepstral_mean.restore()
                if pocketsphinx.ps_start_utt(decoder) < 0:
                    failed = "ps_start_utt failed"
                    continue
                in_utterance = True
            if pocketsphinx.ps_process_raw(decoder, body, len(body) // 2, 0, 0) < 0:
                failed = "ps_process_raw failed"
        elif kind == b"P":
            # The text so far; the utterance goes on.
            say("partial " + (hypothesis(decoder) if in_utterance and not failed else ""))
        elif kind in (b"E", b"X"):
            text = ""
            if in_utterance:
                in_utterance = False
                if pocketsphinx.ps_end_utt(decoder) < 0 and not failed:
                    failed = "ps_end_utt failed"
                text = hypothesis(decoder)
            if kind == b"X":
                say("abandoned")
            elif failed:
                say("error " + failed)
            else:
                say("text " + text)
            failed = None


if __name__ == "__main__":
    main()
