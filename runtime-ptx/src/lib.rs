//! bpf2ptx device runtime.
