//! The `bpf2ptx` command-line tool as a library, for build scripts and tests: load an
//! input, dump it, and (in later stages) verify and compile it.
#![deny(missing_docs)]

pub mod compile;
pub mod dump;
pub mod gpu;
pub mod inject;
pub mod loader;
pub mod run;

pub use bpf2ptx_compiler::front::{load_bytes, load_path, LoadError};

/// Exit codes of the `bpf2ptx` binary (documented in README.md).
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// The verifier rejected a program, or `run` got a result other than the expected
    /// one (a program the backend cannot lower, e.g. an unknown helper, is bad input: 2).
    pub const REJECTED: i32 = 1;
    /// Bad input: unreadable file, malformed object or text, bad command line.
    pub const BAD_INPUT: i32 = 2;
    /// `run` found no usable GPU (no driver, no device).
    pub const NO_GPU: i32 = 3;
}
