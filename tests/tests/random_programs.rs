//! Random programs (tests/random.rs) on the CPU tier: each passes the verifier,
//! runs in the reference interpreter, and lowers to PTX that ptxas accepts. The GPU tier
//! runs the same programs on the device and compares r0 with the interpreter
//! (`cargo run -p bpf2ptx-tests --example gen_random`, then `bpf2ptx run DIR`; results in
//! benches/results/conformance.md).

use bpf2ptx_tests::{random, require_ptxas};
use std::process::Command;

#[test]
fn random_programs_verify_run_and_assemble() {
    let tmp = tempfile::tempdir().unwrap();
    // Without ptxas the assembly part fails (how to get one is in the message), unless
    // BPF2PTX_SKIP_PTXAS=1 skips it on purpose, which require_ptxas prints.
    let ptxas = require_ptxas();
    for seed in 0..64u64 {
        let (text, mem) = random::program(seed, 40 + (seed as usize % 5) * 20);
        let obj = bpf2ptx::load_bytes("random.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let entry = bpf2ptx_verifier::Entry::conformance(random::MEM);
        let verified = bpf2ptx_verifier::Verified::new(&obj, |_| entry)
            .unwrap_or_else(|r| panic!("seed {seed}: {}\n{text}", r.diagnostics[0]));
        let mut m = mem.clone();
        bpf2ptx_compiler::interp::run(&obj, 0, &mut m, &Default::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let code = bpf2ptx_tests::entry_kernels_ptx(&verified);
        // Every 8th program through ptxas keeps the test fast; the GPU run takes them all.
        if let (Some(p), 0) = (&ptxas, seed % 8) {
            let f = tmp.path().join(format!("r{seed}.ptx"));
            std::fs::write(&f, &code).unwrap();
            let out = Command::new(p)
                .args(["-arch=sm_80", "-o"])
                .arg(tmp.path().join("r.cubin"))
                .arg(&f)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "seed {seed}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
