//! criterion benchmarks of bpf2ptx live in `benches/`; this library is empty.
