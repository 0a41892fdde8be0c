//! The build script of a crate that ships a CUDA kernel instrumented with a probe: the
//! probe's C source (examples/probes/launch_count.bpf.c) is compiled with clang, verified
//! and lowered to PTX, and injected into the kernel's PTX (examples/apps/vecadd.ptx), all
//! through `bpf2ptx::build::Probe`; `src/main.rs` embeds both results with `include_str!`.
//!
//! clang is found as `bpf2ptx build` finds it ($BPF2PTX_CLANG, else PATH). Without one,
//! the build fails with how to install it, unless BPF2PTX_SKIP_CLANG=1: then the same
//! calls take the committed object (launch_count.bpf.o), so a checkout without clang still
//! builds (the tests' convention, tests/run.sh).

use std::path::{Path, PathBuf};

fn main() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let probes = here.join("../probes");
    let app = here.join("../apps/vecadd.ptx");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-env-changed=BPF2PTX_SKIP_CLANG");
    println!("cargo:rerun-if-changed={}", app.display());
    let skip = std::env::var_os("BPF2PTX_SKIP_CLANG").is_some_and(|v| v == "1");
    let source = if skip {
        println!("cargo:warning=BPF2PTX_SKIP_CLANG=1: using the committed launch_count.bpf.o");
        probes.join("launch_count.bpf.o")
    } else {
        probes.join("launch_count.bpf.c")
    };
    let mut probe = bpf2ptx::build::Probe::new(&source);
    probe.target("sm_90").cargo_metadata(true);
    if let Err(e) = probe.compile_ptx(&out.join("launch_count.ptx")) {
        panic!("{e}");
    }
    if let Err(e) = probe.inject(&app, &out.join("vecadd.launch_count.ptx")) {
        panic!("{e}");
    }
}
