//! The bpf2ptx verifier: proves a program safe to run inside someone else's CUDA kernel
//! before the backend lowers it.
//!
//! ```text
//!  Program (bpf2ptx-compiler)
//!    │ structure    jump targets, function boundaries, fall-through, r10, register
//!    │              initialisation                         (this stage: [`structure`])
//!    │ abstract interpretation: types, ranges, memory bounds, termination  (to come)
//!    ▼
//!  facts for the backend
//! ```
//!
//! Rules checked by [`structure::check`] (each a [`Rule`]):
//! - `jump-range`: every jump lands inside the function it belongs to;
//! - `jump-into-ld-imm64`: no jump lands on the second slot of an `ld_imm64`;
//! - `fall-through`: a function's last instruction is `exit` or an unconditional jump, so
//!   control never runs off its end;
//! - `call-target`: a local call or function address names the first instruction of a
//!   function;
//! - `r10-write`: the frame pointer r10 is never written;
//! - `uninit-register`: no instruction reads a register that is not written on every path
//!   to it (the entry function starts with r1, r10 and whatever the attach point passes;
//!   a subprogram starts with r1-r5 and r10; a call clobbers r1-r5 and defines r0).
//!
//! All violations are reported, each once, in instruction order.
#![deny(missing_docs)]

pub mod scalar;
pub mod structure;

pub use structure::{check, Rule, StructError};
