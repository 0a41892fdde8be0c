//! The bpf2ptx backend: lowering verified BPF programs to PTX ([`back::ptx`]) and
//! injecting them into a CUDA kernel's PTX ([`inject`]: the lossless PTX model, attach
//! points, weaving, fatbin extraction).
//!
//! ```text
//!  bpf2ptx-runtime   ABI: helper catalogue, map layouts, runtime PTX
//!    ▼
//!  bpf2ptx-compiler  object model: isa, front, program, interp
//!    ▼
//!  bpf2ptx-verifier  the safety proof and its Facts (PlainAdd, ...)
//!    ▼
//!  bpf2ptx-backend   this crate
//!    ▼
//!  bpf2ptx-loader    CUDA driver, map binding, launches, ring draining
//!    ▼
//!  bpf2ptx           the command line
//! ```
//!
//! ```text
//!  Verified (bpf2ptx-verifier: the object, each program's Facts) + ptx::Options
//!    │ back::ptx   write_string: one .func per BPF function, .entry kernels;
//!    ▼             inline_body: one program's body for a site
//!  probe PTX ──────────────┐
//!  app PTX / fatbin        ▼
//!    │ inject      fatbin::extract_ptx, ptx::parse, weave: blocks inserted at the
//!    ▼             attach points (attach), each site's body verified again and
//!                  lowered (bodies::SiteBodies), the probe module merged
//!  instrumented PTX
//! ```
//!
//! It depends on the runtime, the object model and the verifier, and on the fatbin
//! decompressors (`lz4_flex`, `ruzstd`). It must not depend on the loader or the CLI, nor
//! on the CUDA driver (cudarc) or clap. Its lowering entry points take the verifier's
//! `Verified`, which only the verifier can make, and read its `Facts` as they are: a
//! program nobody verified cannot be lowered.
#![deny(missing_docs)]

pub mod back;
pub mod inject;

// The object model under the names the backend's modules use (`crate::isa::...`,
// `crate::program::...`, `crate::cfg::...`); not re-exported.
use bpf2ptx_compiler::{cfg, isa, program};
