//! The `bpf2ptx` command-line tool as a library, for build scripts and tests: load an
//! input, dump it, and (in later stages) verify and compile it.
#![deny(missing_docs)]

pub mod dump;

pub use bpf2ptx_compiler::front::{load_bytes, load_path, LoadError};

/// Exit codes of the `bpf2ptx` binary (documented in README.md).
pub mod exit {
    /// Success.
    pub const OK: i32 = 0;
    /// The program was rejected by the verifier.
    pub const REJECTED: i32 = 1;
    /// Bad input: unreadable file, malformed object or text, bad command line.
    pub const BAD_INPUT: i32 = 2;
}
