# SPDX-License-Identifier: MIT OR Apache-2.0
"""bpf2ptx trace's Python start-up hook (specs/trace.md, "Triton").

`bpf2ptx trace` writes this file as `sitecustomize.py` into a folder of its session and
puts that folder first on PYTHONPATH, so every Python process of the traced command runs
it at start-up. It does three things and nothing else:

1. When Triton's NVIDIA backend (`triton.backends.nvidia.compiler`) is imported, it wraps
   `CUDABackend.add_stages` so that the `ptx` stage of every kernel Triton compiles hands
   its PTX to the interposer (`bpf2ptx_trace_instrument_ptx`, exported by the preloaded
   libbpf2ptx_interposer.so) and returns the instrumented text when a probe matches the
   kernel. Triton then assembles that with its own ptxas; the interposer recognises the
   cubin at its load and binds it to the process's maps.
2. When `triton` is imported and is older than 3.0 (no `CUDABackend`), it says once that
   its kernels run unmodified.
3. It runs the `sitecustomize` this one hides, if there is one further along sys.path.

It never breaks the application: any failure says one line on stderr and leaves the
kernel as Triton made it.
"""

import importlib.machinery
import importlib.util
import os
import sys

_NAME = "bpf2ptx trace"
_said = set()


def _say(message):
    if message not in _said:
        _said.add(message)
        sys.stderr.write(f"{_NAME}: {message}\n")


def _version(module):
    return str(getattr(module, "__version__", "unknown"))


_entry = None


def _interposer():
    """The interposer's two functions, found in the process (it is preloaded)."""
    global _entry
    if _entry is None:
        import ctypes

        lib = ctypes.CDLL(None)
        instrument = lib.bpf2ptx_trace_instrument_ptx
        instrument.restype = ctypes.c_void_p
        instrument.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        free = lib.bpf2ptx_trace_free
        free.restype = None
        free.argtypes = [ctypes.c_void_p]
        _entry = (instrument, free, ctypes.string_at)
    return _entry


def _instrument(ptx, name):
    """The text Triton is to assemble for kernel `name`: `ptx` with the probes, or `ptx`."""
    try:
        instrument, free, string_at = _interposer()
        p = instrument(ptx.encode(), name.encode())
        if not p:
            return ptx
        try:
            return string_at(p).decode()
        finally:
            free(p)
    except Exception as e:  # the kernel runs as Triton made it
        _say(f"triton kernel {name}: {type(e).__name__}: {e}; it runs unmodified")
        return ptx


def _patch_backend(module):
    backend = getattr(module, "CUDABackend", None)
    add_stages = getattr(backend, "add_stages", None)
    if add_stages is None:
        _say("this Triton's NVIDIA backend has no CUDABackend.add_stages; "
             "its kernels run unmodified (Triton 3.0 or newer is needed)")
        return

    def wrapped(self, stages, *args, **kwargs):
        add_stages(self, stages, *args, **kwargs)
        make_ptx = stages.get("ptx")
        if make_ptx is None:
            _say("this Triton compiles without a `ptx` stage; its kernels run unmodified")
            return

        def ptx_stage(src, metadata):
            ptx = make_ptx(src, metadata)
            name = metadata.get("name") if isinstance(metadata, dict) else None
            return _instrument(ptx, name or "unnamed")

        stages["ptx"] = ptx_stage

    wrapped.__wrapped__ = add_stages
    backend.add_stages = wrapped


def _check_triton(module):
    try:
        major = int(_version(module).split(".")[0])
    except ValueError:
        return
    if major < 3:
        _say(f"Triton {_version(module)}: its kernels run unmodified "
             "(bpf2ptx trace probes Triton 3.0 or newer)")


_WATCH = {
    "triton": _check_triton,
    "triton.backends.nvidia.compiler": _patch_backend,
}


class _Finder:
    """A meta path finder that only watches: it finds the watched modules through the
    other finders and runs the patch once a module's own code has run."""

    def find_spec(self, name, path=None, target=None):
        after = _WATCH.get(name)
        if after is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        def run(module):
            exec_module(module)
            try:
                after(module)
            except Exception as e:
                _say(f"{name}: {type(e).__name__}: {e}; Triton's kernels run unmodified")

        try:
            loader.exec_module = run
        except AttributeError:
            pass
        return spec


def _run_hidden_sitecustomize():
    """The `sitecustomize` further along sys.path, which this file hides."""
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    mine = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        # As site.py does for its own sitecustomize: said, and start-up goes on.
        import traceback

        sys.stderr.write(f"Error in sitecustomize ({spec.origin}):\n")
        traceback.print_exc()
        if mine is not None:
            sys.modules["sitecustomize"] = mine


if not any(isinstance(f, _Finder) for f in sys.meta_path):
    sys.meta_path.insert(0, _Finder())
    for _name, _after in _WATCH.items():
        if _name in sys.modules:  # imported before this ran (an embedded interpreter)
            _after(sys.modules[_name])
    _run_hidden_sitecustomize()
