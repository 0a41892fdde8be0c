//! The `bpf2ptx` command-line tool as a library, for build scripts and tests: load an
//! input, dump it, verify and compile it, inject it into a CUDA kernel's PTX, run it.
//!
//! [`build`] turns a probe's C source into a BPF object with clang, for `bpf2ptx build`,
//! for a `.c` file given to any command, and for Cargo build scripts ([`build::Probe`]).
//!
//! The top of the pipeline: it glues the verifier's facts to the backend's options
//! ([`compile`]) and the backend's injector to the verifier's per-site checks
//! ([`inject`]), and runs programs through the host loader (bpf2ptx-loader). Nothing
//! below it depends on it.
//!
//! ```text
//!  bpf2ptx-runtime → bpf2ptx-compiler → bpf2ptx-verifier → bpf2ptx-backend
//!    → bpf2ptx-loader → bpf2ptx (this crate)
//! ```
#![deny(missing_docs)]

pub mod build;
pub mod compile;
pub mod dump;
pub mod host;
pub mod inject;
pub mod run;
pub mod trace;
pub mod triton;

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
