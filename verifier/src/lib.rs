//! bpf2ptx verifier.
