//! PTX injection: reading a CUDA kernel's PTX and merging calls to verified probes into
//! it at their attach points ([`attach`]: entry, exit, memory accesses, instructions;
//! [`weave`]), or their bodies, verified again and lowered for each site ([`bodies`]).
//! Which instructions move data and what their sites tell a probe: [`opcodes`] (the one
//! table of PTX opcodes) and [`access`].
//!
//! ```text
//!  app.ptx (nvcc / clang output)
//!    │ ptx::parse   lossless model: every token keeps its text and the whitespace and
//!    ▼              comments before it, so writing an unedited module gives back the input
//!  ptx::Module      functions, statements (instructions with guard, opcode, operands),
//!    │              labels, declarations, directives
//!    │ Function::insert_before / insert_after   text edits at statement boundaries
//!    ▼
//!  instrumented PTX (byte-identical except for what was inserted)
//! ```
//!
//! Rewriting PTX with regular expressions breaks on the first comment, line break or
//! brace block the pattern did not foresee; the model here is why the injector never has
//! to guess what a line means.

pub mod access;
pub mod attach;
pub mod bodies;
pub mod fatbin;
pub mod opcodes;
pub mod ptx;
pub mod weave;
