//! Backends: code generation from a loaded and verified
//! [`bpf2ptx_compiler::program::Object`].

pub mod ptx;

// The verifier's plain-add facts (`bpf2ptx_verifier::Facts::plain_add`), imported here so
// that the backend's modules name them `crate::back::PlainAdd`.
use bpf2ptx_verifier::{Addend, PlainAdd};
