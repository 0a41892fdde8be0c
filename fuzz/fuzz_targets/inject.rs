//! Fuzz target for probe injection: any text as an application's PTX → `weave` with the
//! probes of tests/inject/probes/counters.bpf.o (entry, exit and memory probes for every
//! kernel, thread/warp/block granularity), their bodies inlined. Exercises the PTX reader,
//! the attach-site search, address operands, register declarations and the edits. The
//! only failure is a panic (or a sanitizer report).
#![no_main]

use bpf2ptx_backend::back::ptx::{Granularity, InlineBody};
use bpf2ptx_backend::inject::weave::{self, Linkage, Probe};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

struct Setup {
    probes: Vec<Probe>,
    module: String,
    bodies: Vec<InlineBody>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let bytes = include_bytes!("../../tests/inject/probes/counters.bpf.o");
        let obj = bpf2ptx_compiler::front::load_bytes("counters.bpf.o", bytes).expect("loads");
        let probes = bpf2ptx::inject::probes(&obj).expect("attach points");
        let opts = bpf2ptx_backend::back::ptx::Options {
            target: "sm_90".into(),
            ..Default::default()
        };
        let resolved = bpf2ptx::compile::resolve(&obj, &opts).expect("verifies");
        let module = bpf2ptx::compile::lower(&obj, &resolved).expect("lowers");
        let bodies = (0..obj.programs.len())
            .map(|k| bpf2ptx_backend::back::ptx::inline_body(&obj, &resolved, k).expect("body"))
            .collect();
        Setup {
            probes,
            module,
            bodies,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s = setup();
    let bodies = |k: usize, _: &weave::SiteContext| Ok(s.bodies[k].clone());
    let _ = weave::weave(
        text,
        &s.probes,
        Linkage::Merge {
            module: &s.module,
            bodies: Some(&bodies),
        },
        Granularity::Warp,
    );
    let _ = weave::weave(text, &s.probes, Linkage::Extern, Granularity::Thread);
});
