//! The bpf2ptx compiler: the BPF ISA model, the object frontend and (later) the PTX backend.
//!
//! ```text
//!  prog.bpf.o / test.data / prog.s
//!    │ front      ELF (goblin), BTF + BTF.ext, DWARF lines (gimli), bpf_conformance files,
//!    ▼            text assembly
//!  Object         programs (linked with their subprograms), maps, global data, line info
//!    │ verifier   (bpf2ptx-verifier crate)
//!    ▼
//!  PTX
//! ```
#![deny(missing_docs)]

pub mod back;
pub mod front;
pub mod inject;
pub mod interp;
pub mod isa;
pub mod program;
