//! Fuzz target for compile-if-verified: any bytes → `load_bytes`; on success every
//! program is verified and, when the verifier accepts them all, lowered to PTX (entry
//! kernels, sm_90, the default placements: rings in host memory), so the verifier's
//! facts drive the backend's folding, inlined lookups and inlined ring outputs on
//! arbitrary accepted programs. The only failure is a panic (or a sanitizer report): the
//! verifier promises that what it accepts never makes the backend panic.
#![no_main]

use bpf2ptx_backend::back::ptx;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(obj) = bpf2ptx_compiler::front::load_bytes("fuzz.o", data) else {
        return;
    };
    let Ok((maps, _)) = bpf2ptx::compile::map_options(&obj, &[]) else {
        return;
    };
    let opts = ptx::Options {
        target: "sm_90".into(),
        entry: true,
        host: maps.host,
        ..Default::default()
    };
    if let Err(e) = bpf2ptx::compile::compile(&obj, &opts) {
        // The message is built too: Display impls must not panic either.
        let _ = e.to_string();
    }
});
