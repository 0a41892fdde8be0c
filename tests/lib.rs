//! Shared helpers of the bpf2ptx test suites.
