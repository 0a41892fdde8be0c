//! The longer commands of the `bpf2ptx` binary, one file each, so that main.rs stays the
//! command line (its clap definitions) and the dispatch from it.
//!
//! These are modules of the binary, not of the library (`lib.rs`): what they add to the
//! library's calls is the terminal side of a command, its printing (through main.rs's
//! `outln!`, which tracks standard output's errors) and its exit codes, which the build
//! scripts and tests that use the library do not want.

pub(crate) mod run;
pub(crate) mod verify;
