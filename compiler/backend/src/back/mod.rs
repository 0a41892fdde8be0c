//! Backends: code generation from a loaded and verified
//! [`bpf2ptx_compiler::program::Object`].

pub mod ptx;

// The verifier's plain-add facts, which the backend's hints ([`ptx::Hints::plain_add`])
// carry; imported here so that the backend's modules name them `crate::back::PlainAdd`.
use bpf2ptx_verifier::{Addend, PlainAdd};
