//! Fuzz target for probe injection: any text as an application's PTX → `weave` with the
//! probes of tests/inject/probes/counters.bpf.o (entry, exit and memory probes for every
//! kernel, thread/warp/block granularity), their bodies inlined: each site's body verified
//! again with the site's context, fused and lowered, as `bpf2ptx inject` does. Exercises
//! the PTX reader, the attach-site search, address operands, register declarations, the
//! flush sites and the edits. The only failure is a panic (or a sanitizer report).
#![no_main]

use bpf2ptx_backend::back::ptx::{self, Granularity};
use bpf2ptx_backend::inject::bodies::SiteBodies;
use bpf2ptx_backend::inject::weave::{self, Linkage, Probe};
use bpf2ptx_compiler::program::Object;
use bpf2ptx_verifier::Verified;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

struct Setup {
    probes: Vec<Probe>,
    module: String,
    verified: Verified<'static>,
    resolved: ptx::Options,
}

fn setup() -> &'static Setup {
    static OBJ: OnceLock<Object> = OnceLock::new();
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let obj = OBJ.get_or_init(|| {
            let bytes = include_bytes!("../../tests/inject/probes/counters.bpf.o");
            bpf2ptx_compiler::front::load_bytes("counters.bpf.o", bytes).expect("loads")
        });
        let probes = bpf2ptx::inject::probes(obj).expect("attach points");
        // Fused, as `bpf2ptx inject` lowers by default: the counters' adds go to kernel
        // accumulators, flushed at every exit, trap and call the input has.
        let opts = ptx::Options {
            target: "sm_90".into(),
            fuse: true,
            ..Default::default()
        };
        let (verified, resolved) = bpf2ptx::compile::resolve(obj, &opts).expect("verifies");
        let module = bpf2ptx::compile::lower(&verified, &resolved).expect("lowers");
        Setup {
            probes,
            module,
            verified,
            resolved,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let s = setup();
    let bodies = SiteBodies::new(&s.verified, &s.resolved);
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
