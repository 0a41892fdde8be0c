//! The bpf2ptx host loader: the CUDA driver wrapper ([`gpu`]), the loader that binds a
//! module's maps in their placement, launches kernels, drains rings while they run and
//! reads the maps back ([`loader`]), and the decoding of a map's raw bytes into its
//! contents ([`image`], no GPU needed: `bpf2ptx trace` decodes the bytes its interposer
//! copied out of an application with it).
//!
//! ```text
//!  bpf2ptx-runtime   ABI: helper catalogue, map layouts, runtime PTX
//!    ▼
//!  bpf2ptx-compiler  object model: isa, front, program, interp
//!    ▼
//!  bpf2ptx-verifier  the safety proof and its Facts
//!    ▼
//!  bpf2ptx-backend   PTX lowering and injection
//!    ▼
//!  bpf2ptx-loader    this crate
//!    ▼
//!  bpf2ptx           the command line
//! ```
//!
//! It depends on the runtime (descriptor layout, ring records), the object model (the
//! probe's maps), the backend (its symbol names) and cudarc, loaded at run time. It must
//! not depend on the CLI (clap); anything that runs PTX on a GPU (the CLI, tests,
//! benches) uses it directly.
#![deny(missing_docs)]

pub mod gpu;
pub mod image;
pub mod loader;
