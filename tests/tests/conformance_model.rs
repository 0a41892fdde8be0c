//! The bpf_conformance suite and the random programs through the PTX the backend writes,
//! executed on the CPU by the PTX model (tests/ptx_model.rs): each program the verifier
//! accepts is lowered as an `--entry` kernel, launched on its `-- mem` with one thread,
//! and must leave the r0 the reference interpreter returns. This is the GPU-free check of
//! lowerings that depend on the verifier's facts (`Facts::upper_zero`'s 32-bit compares,
//! shifts and divisions, `const_value`, `branch_always`): a fact that does not hold, or a
//! narrowed operation that computes something else, shows here as a wrong r0. Programs
//! whose PTX the model does not know (a helper it has no model of) are counted, not
//! failed; the test asserts that most run.

use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::interp;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_tests::ptx_model::Model;
use bpf2ptx_tests::{conformance_cases, random};

/// What running one program's PTX in the model gave.
enum Ran {
    /// The verifier rejected it (nothing to lower).
    Rejected,
    /// The model does not know something in the PTX.
    Unmodelled(String),
    /// r0 as the kernel stored it.
    R0(u64),
}

/// Verifies program 0 of `obj` with the conformance entry for `mem`, lowers it to an
/// entry kernel and runs it once in the model on a copy of `mem`.
fn run_in_model(obj: &Object, mem: &[u8]) -> Ran {
    let entry = bpf2ptx_verifier::Entry::conformance(mem.len());
    let Ok(verified) = bpf2ptx_verifier::Verified::new(obj, |_| entry) else {
        return Ran::Rejected;
    };
    let code = bpf2ptx_tests::entry_kernels_ptx(&verified);
    let mut m = match Model::new(&code) {
        Ok(m) => m,
        Err(e) => return Ran::Unmodelled(e),
    };
    let buf = m.alloc(mem.len().max(1) as u64);
    m.write(buf, mem);
    let result = m.alloc(8);
    let name = ptx::entry_symbol(&obj.programs[0]);
    if let Err(e) = m.launch(
        &name,
        [1, 1, 1],
        [1, 1, 1],
        &[buf, mem.len() as u64, result],
        10_000_000,
    ) {
        return Ran::Unmodelled(e);
    }
    let r = m.read(result, 8);
    Ran::R0(u64::from_le_bytes(r.try_into().expect("8 bytes")))
}

#[test]
fn conformance_suite_runs_in_the_ptx_model() {
    let (mut ran, mut unmodelled, mut wrong) = (0, Vec::new(), Vec::new());
    for (name, obj, test) in conformance_cases() {
        let Some(want) = test.result else { continue };
        match run_in_model(&obj, &test.mem) {
            Ran::Rejected => {}
            Ran::Unmodelled(e) => unmodelled.push(format!("{name}: {e}")),
            Ran::R0(r0) => {
                ran += 1;
                if r0 != want {
                    wrong.push(format!("{name}: r0 = {r0:#x}, expected {want:#x}"));
                }
            }
        }
    }
    eprintln!(
        "{ran} conformance programs ran in the PTX model, {} not modelled:\n{}",
        unmodelled.len(),
        unmodelled.join("\n")
    );
    assert!(wrong.is_empty(), "wrong r0:\n{}", wrong.join("\n"));
    assert!(ran >= 200, "only {ran} programs ran in the model");
}

/// Random programs run in the model (each a fraction of a millisecond).
const SEEDS: u64 = 256;

#[test]
fn random_programs_run_in_the_ptx_model() {
    let (mut ran, mut wrong) = (0, Vec::new());
    for seed in 0..SEEDS {
        let (text, mem) = random::program(seed, 40 + (seed as usize % 5) * 20);
        let obj = bpf2ptx::load_bytes("random.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        let mut m = mem.clone();
        let want = interp::run(&obj, 0, &mut m, &Default::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        match run_in_model(&obj, &mem) {
            Ran::Rejected => panic!("seed {seed}: rejected\n{text}"),
            Ran::Unmodelled(e) => panic!("seed {seed}: the model: {e}"),
            Ran::R0(r0) => {
                ran += 1;
                if r0 != want {
                    wrong.push(format!("seed {seed}: r0 = {r0:#x}, expected {want:#x}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "wrong r0:\n{}", wrong.join("\n"));
    assert_eq!(ran, SEEDS);
}

/// 64-bit unsigned compares against a constant register whose low half is all zeros
/// (`<`, `>=`) or all ones (`>`, `<=`) are lowered as compares of the high halves
/// (`Facts::jump_rhs_const`): the PTX says so, and the model gives the interpreter's
/// result for numbers on and around each bound.
#[test]
fn high_half_compares_agree_with_the_interpreter() {
    let text = "\
r2 = *(u64 *)(r1 + 0)
r0 = 0
r3 = 0x100000000 ll
if r2 < r3 goto +1
r0 |= 1
r3 = 0x1ffffffff ll
if r2 > r3 goto +1
r0 |= 2
r3 = 0x200000000 ll
if r2 >= r3 goto +1
r0 |= 4
r3 = 0xffffffff ll
if r2 <= r3 goto +1
r0 |= 8
exit
";
    let obj = bpf2ptx::load_bytes("high.s", text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let entry = bpf2ptx_verifier::Entry::conformance(8);
    let verified = bpf2ptx_verifier::Verified::new(&obj, |_| entry).expect("accepted");
    let code = bpf2ptx_tests::entry_kernels_ptx(&verified);
    for bound in [
        "setp.lt.u32 %p0, %w1, 1;",
        "setp.gt.u32 %p0, %w1, 1;",
        "setp.ge.u32 %p0, %w1, 2;",
        "setp.le.u32 %p0, %w1, 0;",
    ] {
        assert!(code.contains(bound), "no `{bound}` in\n{code}");
    }
    let edges = [
        0u64,
        1,
        0xffff_ffff,
        1 << 32,
        (1 << 32) + 1,
        0x1_ffff_ffff,
        2 << 32,
    ];
    for x in edges.iter().flat_map(|e| [e.wrapping_sub(1), *e, e + 1]) {
        let mem = x.to_le_bytes();
        let mut m = mem.to_vec();
        let want = interp::run(&obj, 0, &mut m, &Default::default()).unwrap();
        match run_in_model(&obj, &mem) {
            Ran::R0(r0) => assert_eq!(r0, want, "x = {x:#x}"),
            Ran::Rejected => panic!("rejected"),
            Ran::Unmodelled(e) => panic!("the model: {e}"),
        }
    }
}
