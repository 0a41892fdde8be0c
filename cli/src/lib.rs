//! bpf2ptx library facade.
