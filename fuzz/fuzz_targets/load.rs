//! Fuzz target for the loader: any bytes → `load_bytes`; on success the text and JSON
//! dumps too, so the disassembler and relocation naming run on every accepted input.
//! The only failure is a panic (or a sanitizer report).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(obj) = bpf2ptx_compiler::front::load_bytes("fuzz.o", data) {
        let d = bpf2ptx::dump::Dump::new(&obj);
        let _ = d.to_text();
        let _ = d.to_json();
    }
});
