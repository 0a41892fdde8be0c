//! The bpf2ptx object model: the BPF ISA, the object frontend, the program model, its
//! control-flow graph and the reference interpreter. Everything after loading (verifying, lowering, injecting,
//! running) reads the input program only through the [`program::Object`] built here.
//!
//! ```text
//!  bpf2ptx-runtime   ABI: helper catalogue, map layouts, runtime PTX
//!    ▼
//!  bpf2ptx-compiler  this crate: isa, front, program, cfg, interp
//!    ▼
//!  bpf2ptx-verifier  the safety proof and its Facts
//!    ▼
//!  bpf2ptx-backend   PTX lowering (back) and injection into CUDA PTX (inject)
//!    ▼
//!  bpf2ptx-loader    CUDA driver, map binding, launches, ring draining
//!    ▼
//!  bpf2ptx           the command line
//! ```
//!
//! ```text
//!  prog.bpf.o / test.data / prog.s
//!    │ front      ELF (goblin), BTF + BTF.ext, DWARF lines (gimli), bpf_conformance files,
//!    ▼            text assembly
//!  Object         programs (linked with their subprograms), maps, global data, line info
//!    │ cfg        functions, resolved jump and call targets, successors (from the opcode
//!    ▼            table's per-instruction effects, isa/effect.rs)
//!  Cfg            what the verifier, the backend and the interpreter walk
//! ```
//!
//! This crate depends on the runtime only. It must not depend on the verifier, the
//! backend, the loader or the CLI, nor on what only they need (fatbin decompressors, the
//! CUDA driver, clap).
#![deny(missing_docs)]

pub mod cfg;
pub mod front;
pub mod interp;
pub mod isa;
pub mod program;
