//! bpf2ptx compiler.
