//! The library `bpf2ptx trace` preloads into a CUDA application: it takes the
//! application's modules as the driver loads them, injects the verified probes into the
//! kernels they match, has the driver assemble the result, and launches it in place of
//! the original. Every other call reaches the driver untouched.
//!
//! ```text
//!  application ──▶ hooks (this library's cu* symbols, dlsym, cuGetProcAddress)   resolve.rs, hooks.rs
//!                    │ load / lookup / launch                 │ every call forwarded
//!                    ▼                                        ▼
//!                  registry: images, functions, swaps         libcuda (the driver)
//!                    │ first launch of a matched kernel        ▲
//!                    ▼                                        │ JIT of the instrumented PTX
//!                  image.rs (bytes) ─▶ fatbin PTX ─▶ bpf2ptx::inject ─┘
//! ```
//!
//! The session (what to inject, where to report) comes from the front end through the
//! environment ([`session`]); without it the library only forwards. A failure never
//! reaches the application: the module it concerns runs unmodified and one line on
//! stderr says why.
//!
//! Maps are one instance per process and device ([`bind`]): every instrumented module is
//! injected for rebinding and bound, before its first launch, to its device's map set, so
//! the modules of an application add to the same counters. Per-thread and per-warp
//! arrays there are sized from each launch, and grow.
//!
//! Map snapshots ([`snapshot`]: each map once per device) go to the session folder
//! periodically and at exit, into this process's own `proc-<pid>/` (children of the
//! traced command inherit the interposer, and each writes files of its own).
//!
//! JIT results are cached on disk by content ([`jit`]).
//!
//! Explicit graph kernel nodes get the instrumented function as launches do; kernels
//! captured from streams were launched (and swapped) during the capture.
//!
//! PTX handed to the driver's linker (`cuLinkAddData`, `cuLinkAddFile`: how JITs such as
//! Numba load kernels) is instrumented when it is added; the linked module is recognised
//! by its probe symbols.
//!
//! Host-side programs (`host/launch/KERNEL`, `uprobe` on the launch call) run on the
//! reference interpreter at each launch of a kernel they match, before the launch is
//! forwarded ([`hostprog`]); the maps they use live in pinned host memory, one instance
//! bound into every instrumented module. Host times are on the GPU's `%globaltimer`
//! timeline ([`clock`]).
//!
//! Triton's kernels, which Triton assembles itself, get the probes before that: `bpf2ptx
//! trace`'s Python start-up hook hands each kernel's PTX to [`python`].
//!
//! Not yet: per-unit arrays growing while a stream is captured; the printk ring and
//! loop-budget counters (one per module) in the snapshot.

pub mod bind;
pub mod clock;
pub mod driver;
pub mod hooks;
pub mod hostprog;
pub mod image;
pub mod jit;
pub mod python;
pub mod registry;
pub mod resolve;
pub mod session;
pub mod snapshot;
