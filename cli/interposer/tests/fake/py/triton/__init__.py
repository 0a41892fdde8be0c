# A stand-in for Triton 3.x's package, as far as bpf2ptx trace's Python hook sees it
# (cli/interposer/tests/trace_triton.rs).
__version__ = "3.4.0"
