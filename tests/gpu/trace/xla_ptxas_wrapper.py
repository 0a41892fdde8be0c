#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""A `ptxas` in front of the real one, for the XLA part of tests/gpu/corpus.py: it records
the PTX that XLA assembles, whatever XLA's dump holds, and can make XLA assemble other PTX
(the instrumented modules) in its place.

tests/gpu/corpus.py installs it as ROOT/bin/ptxas in a CUDA-like folder whose other
entries are links to the real CUDA root, and runs JAX with `--xla_gpu_cuda_data_dir=ROOT`
(and CUDA_ROOT=ROOT, from which JAX sets that option itself) and ROOT/bin first in PATH,
so that XLA's search for ptxas finds this one.

    ptxas [OPTIONS] INPUT.ptx -o OUT ...

The input is the argument ending in `.ptx`, else the last argument that is not an option
nor an option's value (XLA's input is a temporary file without an extension); `--version`
and other calls without an input are passed on as they are. Environment:

  BPF2PTX_REAL_PTXAS   the real ptxas (without it: the first `ptxas` on PATH that is not
                       this script)
  BPF2PTX_XLA_CAPTURE  a folder: a copy of each input, as SHA256.ptx (SHA256: of its bytes),
                       and the log `calls.jsonl` (one JSON line per call: pid, argv, the
                       input, its sha256, the file that replaced it or null)
  BPF2PTX_XLA_REPLAY   a folder: where it holds SHA256.ptx for the input's sha256, ptxas
                       assembles that file instead of the input
  BPF2PTX_XLA_LOG      the log, where not CAPTURE/calls.jsonl

Then it execs the real ptxas with the arguments (the input replaced, where it is), so
ptxas's output and exit status are XLA's. Its own bookkeeping never fails a compile: an
error there goes into the call's log line (or, where the log cannot be written, to
stderr), and ptxas runs as asked.
"""
import hashlib
import json
import os
import sys

# ptxas options whose value may be the next argument (`ptxas --help`, CUDA 13.0): the
# value is then not the input.
VALUED = {
    "-o", "--output-file", "-arch", "--gpu-name", "-m", "--machine", "-O", "--opt-level",
    "-e", "--entry", "-optf", "--options-file", "-ias", "--input-as-string",
    "-maxrregcount", "--maxrregcount", "-func-maxrregcount", "--device-function-maxrregcount",
    "-maxntid", "--maxntid", "-minnctapersm", "--minnctapersm", "-regUsageLevel",
    "--register-usage-level", "-Ofc", "--Ofast-compile", "-fmad", "--fmad", "-pic",
    "--position-independent-code", "-allow-expensive-optimizations",
    "--allow-expensive-optimizations", "-device-stack-protector",
    "--device-stack-protector", "-sanitize", "--sanitize", "-split-compile",
    "--split-compile",
}


def input_index(args):
    """The index in `args` (argv without argv[0]) of the input PTX file, or None."""
    plain, skip = [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a.startswith("-") and a != "-":
            skip = a in VALUED
            continue
        plain.append(i)
    ptx = [i for i in plain if args[i].endswith(".ptx")]
    if ptx:
        return ptx[-1]
    files = [i for i in plain if os.path.isfile(args[i])]
    return files[-1] if files else None


def real_ptxas():
    real = os.environ.get("BPF2PTX_REAL_PTXAS")
    if real:
        return real
    me = os.path.realpath(sys.argv[0])
    for d in os.environ.get("PATH", "").split(os.pathsep):
        c = os.path.join(d or ".", "ptxas")
        if (os.path.isfile(c) and os.access(c, os.X_OK)
                and os.path.realpath(c) != me and not is_wrapper(c)):
            return c
    return None


def is_wrapper(path):
    """Whether `path` is a launcher of this script (corpus.py writes ROOT/bin/ptxas as a
    small shell script that execs it)."""
    try:
        with open(path, "rb") as f:
            return b"xla_ptxas_wrapper" in f.read(4096)
    except OSError:
        return False


def note(what):
    try:
        sys.stderr.write(f"xla_ptxas_wrapper: {what}\n")
    except OSError:
        pass


def bookkeeping(args):
    """Records the input and swaps in its replacement; the (possibly changed) args."""
    capture = os.environ.get("BPF2PTX_XLA_CAPTURE")
    replay = os.environ.get("BPF2PTX_XLA_REPLAY")
    log = os.environ.get("BPF2PTX_XLA_LOG") or (capture and os.path.join(capture, "calls.jsonl"))
    if not (capture or replay or log):
        return args
    i = input_index(args)
    entry = {"pid": os.getpid(), "argv": args, "input": None, "sha256": None,
             "replayed": None}
    try:
        if i is not None:
            entry["input"] = args[i]
            with open(args[i], "rb") as f:
                data = f.read()
            sha = hashlib.sha256(data).hexdigest()
            entry["sha256"] = sha
            if capture:
                os.makedirs(capture, exist_ok=True)
                dest = os.path.join(capture, f"{sha}.ptx")
                if not os.path.exists(dest):
                    tmp = f"{dest}.{os.getpid()}.tmp"
                    with open(tmp, "wb") as f:
                        f.write(data)
                    os.replace(tmp, dest)
            if replay:
                alt = os.path.join(replay, f"{sha}.ptx")
                if os.path.isfile(alt):
                    args = args[:i] + [alt] + args[i + 1:]
                    entry["replayed"] = alt
    except Exception as e:  # noqa: BLE001  never the compile's failure
        entry["error"] = f"{type(e).__name__}: {e}"
    try:
        if log:
            os.makedirs(os.path.dirname(os.path.abspath(log)), exist_ok=True)
            with open(log, "a") as f:
                f.write(json.dumps(entry) + "\n")
    except Exception as e:  # noqa: BLE001
        note(f"could not write the log {log}: {e}")
    return args


def main():
    args = sys.argv[1:]
    try:
        args = bookkeeping(args)
    except Exception as e:  # noqa: BLE001
        note(f"bookkeeping failed ({type(e).__name__}: {e}); ptxas runs as asked")
        args = sys.argv[1:]
    real = real_ptxas()
    if not real:
        note("no real ptxas: set BPF2PTX_REAL_PTXAS")
        return 127
    try:
        os.execv(real, [real] + args)
    except OSError as e:
        note(f"cannot run {real}: {e}")
        return 127


if __name__ == "__main__":
    sys.exit(main())
