//! The interpreter's unit tests: instruction semantics, calls and frames, helpers,
//! global data and the errors a run can end in.

use super::*;
use crate::program::Map;

fn load(text: &str) -> Object {
    crate::front::load_bytes("t.s", text.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

fn run_asm(text: &str, mem: &mut [u8], budget: u64) -> Result<u64, InterpError> {
    run(
        &load(text),
        0,
        mem,
        &Options {
            budget,
            ..Options::default()
        },
    )
}

/// Programs and the r0 they must return (no input memory).
const RESULTS: &[(&str, &str, u64)] = &[
    // Division and modulo by zero, both widths, register and immediate.
    ("div64 by reg 0", "mov %r0, 7\nmov %r1, 0\ndiv %r0, %r1\nexit", 0),
    ("div32 by imm 0", "mov %r0, 7\ndiv32 %r0, 0\nexit", 0),
    ("mod64 by 0 keeps dst", "lddw %r0, 0x100000007\nmod %r0, %r1\nexit", 0x1_0000_0007),
    ("mod32 by 0 keeps low half", "lddw %r0, 0x100000007\nmod32 %r0, 0\nexit", 7),
    ("sdiv64 by 0", "mov %r0, -7\nsdiv %r0, %r1\nexit", 0),
    ("sdiv32 by 0", "mov %r0, -7\nsdiv32 %r0, 0\nexit", 0),
    ("smod64 by 0 keeps dst", "mov %r0, -7\nsmod %r0, 0\nexit", -7i64 as u64),
    ("smod32 by 0 keeps low half", "mov %r0, -7\nsmod32 %r0, %r1\nexit", 0xffff_fff9),
    // bpf2ptx_log2 (603): floor(log2), 0 for 0, as the GPU's bfind + max.
    ("log2 of 0", "mov %r1, 0\ncall 603\nexit", 0),
    ("log2 of 1", "mov %r1, 1\ncall 603\nexit", 0),
    ("log2 of 4096", "mov %r1, 4096\ncall 603\nexit", 12),
    ("log2 of 2^64 - 1", "mov %r1, -1\ncall 603\nexit", 63),
    // INT_MIN / -1 and INT_MIN % -1.
    ("sdiv64 min/-1", "lddw %r0, 0x8000000000000000\nsdiv %r0, -1\nexit", 1 << 63),
    ("smod64 min%-1", "lddw %r0, 0x8000000000000000\nsmod %r0, -1\nexit", 0),
    ("sdiv32 min/-1", "mov32 %r0, 0x80000000\nmov %r1, -1\nsdiv32 %r0, %r1\nexit", 0x8000_0000),
    ("smod32 min%-1", "mov32 %r0, 0x80000000\nsmod32 %r0, -1\nexit", 0),
    // A signed remainder has the sign of the dividend.
    ("smod64 -7%2", "mov %r0, -7\nsmod %r0, 2\nexit", -1i64 as u64),
    ("smod64 7%-2", "mov %r0, 7\nsmod %r0, -2\nexit", 1),
    ("smod32 -7%2", "mov %r0, -7\nsmod32 %r0, 2\nexit", 0xffff_ffff),
    ("sdiv64 -7/2", "mov %r0, -7\nsdiv %r0, 2\nexit", -3i64 as u64),
    // Shift amounts are masked, for immediates and registers.
    ("lsh64 imm 65", "mov %r0, 1\nlsh %r0, 65\nexit", 2),
    ("lsh64 reg 65", "mov %r0, 1\nmov %r1, 65\nlsh %r0, %r1\nexit", 2),
    ("lsh32 imm 33", "mov %r0, 1\nlsh32 %r0, 33\nexit", 2),
    ("lsh32 drops high half", "lddw %r0, 0x180000000\nlsh32 %r0, 1\nexit", 0),
    ("rsh32 reg 33", "mov32 %r0, 0x80000000\nmov %r1, 33\nrsh32 %r0, %r1\nexit", 0x4000_0000),
    ("arsh32 imm 33", "mov32 %r0, 0x80000000\narsh32 %r0, 33\nexit", 0xc000_0000),
    ("arsh64 reg 68", "lddw %r0, 0x8000000000000000\nmov %r1, 68\narsh %r0, %r1\nexit", 0xf800_0000_0000_0000),
    // Immediates are sign-extended; 32-bit results zero-extended.
    ("add64 imm -1", "mov %r0, 0\nadd %r0, -1\nexit", u64::MAX),
    ("add32 imm -1", "mov %r0, 0\nadd32 %r0, -1\nexit", 0xffff_ffff),
    ("neg32", "mov %r0, 1\nneg32 %r0\nexit", 0xffff_ffff),
    ("neg64", "mov %r0, 1\nneg %r0\nexit", u64::MAX),
    // Sign-extending moves.
    ("movsx864", "mov %r1, 0x180\nmovsx864 %r0, %r1\nexit", 0xffff_ffff_ffff_ff80),
    ("movsx832", "mov %r1, 0x180\nmovsx832 %r0, %r1\nexit", 0xffff_ff80),
    ("movsx1632", "mov %r1, 0x8000\nmovsx1632 %r0, %r1\nexit", 0xffff_8000),
    ("movsx3264", "mov32 %r1, 0x80000000\nmovsx3264 %r0, %r1\nexit", 0xffff_ffff_8000_0000),
    // Byte order.
    ("le16", "lddw %r0, 0x1122334455667788\nle16 %r0\nexit", 0x7788),
    ("le32", "lddw %r0, 0x1122334455667788\nle32 %r0\nexit", 0x5566_7788),
    ("le64", "lddw %r0, 0x1122334455667788\nle64 %r0\nexit", 0x1122_3344_5566_7788),
    ("be16", "lddw %r0, 0x1122334455667788\nbe16 %r0\nexit", 0x8877),
    ("be32", "lddw %r0, 0x1122334455667788\nbe32 %r0\nexit", 0x8877_6655),
    ("bswap64", "lddw %r0, 0x1122334455667788\nbswap64 %r0\nexit", 0x8877_6655_4433_2211),
    // Jumps: JMP32 compares low halves, signed as i32; JSET is a & b != 0.
    ("jslt32", "lddw %r1, 0x1ffffffff\nmov %r0, 0\njslt32 %r1, 0, +1\nexit\nmov %r0, 1\nexit", 1),
    ("jslt64", "lddw %r1, 0x1ffffffff\nmov %r0, 0\njslt %r1, 0, +1\nexit\nmov %r0, 1\nexit", 0),
    ("jset", "mov %r1, 6\nmov %r0, 0\njset %r1, 4, +1\nexit\nmov %r0, 1\nexit", 1),
    ("jset32 high bits", "lddw %r1, 0x100000000\nmov %r0, 0\njset32 %r1, %r1, +1\nexit\nmov %r0, 1\nexit", 0),
    // Memory: stores, zero- and sign-extending loads, unaligned accesses.
    ("ldxsb", "stb [%r10-1], 0x80\nldxsb %r0, [%r10-1]\nexit", 0xffff_ffff_ffff_ff80),
    ("ldxb", "stb [%r10-1], 0x80\nldxb %r0, [%r10-1]\nexit", 0x80),
    ("ldxsw", "stw [%r10-4], -2\nldxsw %r0, [%r10-4]\nexit", -2i64 as u64),
    ("unaligned", "stdw [%r10-16], -1\nstw [%r10-11], 0\nldxdw %r0, [%r10-16]\nexit", 0xff_ffff_ffff),
    // Atomics.
    (
        "cmpxchg32 equal",
        "stdw [%r10-8], 5\nlddw %r0, 0xffffffff00000005\nmov %r1, 9\n\
         lock cmpxchg32 [%r10-8], %r1\nldxdw %r2, [%r10-8]\nlsh %r2, 32\nor %r0, %r2\nexit",
        0x9_0000_0005,
    ),
    (
        "cmpxchg32 different",
        "stdw [%r10-8], 5\nmov %r0, 6\nmov %r1, 9\n\
         lock cmpxchg32 [%r10-8], %r1\nldxdw %r2, [%r10-8]\nlsh %r2, 32\nor %r0, %r2\nexit",
        0x5_0000_0005,
    ),
    (
        "cmpxchg64 compares all bits",
        "stdw [%r10-8], 5\nlddw %r0, 0x100000005\nmov %r1, 9\n\
         lock cmpxchg [%r10-8], %r1\nldxdw %r2, [%r10-8]\nexit",
        5,
    ),
    (
        "fetch add32 zero-extends the old value",
        "stw [%r10-4], -1\nlddw %r1, 0x100000001\nlock fetch add32 [%r10-4], %r1\n\
         ldxw %r0, [%r10-4]\nlsh %r0, 32\nor %r0, %r1\nexit",
        0xffff_ffff,
    ),
    (
        "xchg",
        "stdw [%r10-8], 3\nmov %r1, 4\nlock xchg [%r10-8], %r1\nldxdw %r0, [%r10-8]\n\
         lsh %r0, 8\nor %r0, %r1\nexit",
        0x403,
    ),
    // Local calls: callee-saved r6-r10, a fresh stack per frame.
    (
        "callee saved",
        "mov %r6, 6\nstdw [%r10-8], 11\ncall local f\nldxdw %r1, [%r10-8]\nadd %r0, %r1\n\
         add %r0, %r6\nexit\nf:\nldxdw %r0, [%r10-8]\nstdw [%r10-8], 99\nmov %r6, 0\nadd %r0, 100\nexit",
        117,
    ),
    // Seven nested calls make eight frames: allowed.
    (
        "eight frames",
        "mov %r1, 6\ncall local f\nexit\n\
         f:\njeq %r1, 0, leaf\nsub %r1, 1\ncall local f\nadd %r0, 1\nexit\nleaf:\nmov %r0, 0\nexit",
        6,
    ),
    // Helper 5 (ktime_get_ns) counts executed instructions; callx takes a helper id.
    ("ktime", "mov %r0, 0\nmov %r0, 0\ncall 5\nexit", 3),
    ("callx", "mov %r2, 5\ncall %r2\nexit", 2),
    ("mem len and pointer", "mov %r0, %r1\nexit", MEM_BASE),
];

#[test]
fn results() {
    let mut bad = Vec::new();
    for (name, text, want) in RESULTS {
        match run_asm(text, &mut [], DEFAULT_BUDGET) {
            Ok(r0) if r0 == *want => {}
            got => bad.push(format!("{name}: got {got:x?}, expected {want:#x}")),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Programs that must fail, with the error they fail with.
#[test]
fn errors() {
    let stack_end = frame_pointer(0);
    let cases: &[(&str, &str, usize, InterpError)] = &[
        (
            "store at r10",
            "stw [%r10], 1\nexit",
            0,
            InterpError::OutOfBounds {
                pc: 0,
                access: Access::Store,
                addr: stack_end,
                size: 4,
            },
        ),
        (
            "store below the stack",
            "mov %r0, 0\nstdw [%r10-513], 1\nexit",
            0,
            InterpError::OutOfBounds {
                pc: 1,
                access: Access::Store,
                addr: stack_end - 513,
                size: 8,
            },
        ),
        (
            "load straddling the end of mem",
            "ldxw %r0, [%r1+2]\nexit",
            4,
            InterpError::OutOfBounds {
                pc: 0,
                access: Access::Load,
                addr: MEM_BASE + 2,
                size: 4,
            },
        ),
        (
            "null",
            "mov %r1, 0\nldxb %r0, [%r1]\nexit",
            4,
            InterpError::OutOfBounds {
                pc: 1,
                access: Access::Load,
                addr: 0,
                size: 1,
            },
        ),
        (
            "atomic on mem of length 0",
            "lock add [%r1], %r2\nexit",
            0,
            InterpError::OutOfBounds {
                pc: 0,
                access: Access::Atomic,
                addr: MEM_BASE,
                size: 8,
            },
        ),
        (
            "dangling stack pointer",
            "call local f\nldxdw %r0, [%r0]\nexit\nf:\nmov %r0, %r10\nsub %r0, 8\nexit",
            0,
            InterpError::OutOfBounds {
                pc: 1,
                access: Access::Load,
                addr: frame_pointer(1) - 8,
                size: 8,
            },
        ),
        (
            "call depth",
            "mov %r1, 7\ncall local f\nexit\n\
             f:\njeq %r1, 0, leaf\nsub %r1, 1\ncall local f\nexit\nleaf:\nmov %r0, 0\nexit",
            0,
            InterpError::CallDepth {
                pc: 5,
                frames: 9,
                limit: MAX_FRAMES,
            },
        ),
        (
            "budget",
            "mov %r0, 0\nloop:\nadd %r0, 1\nja loop",
            0,
            InterpError::Budget {
                pc: 2,
                budget: 1000,
            },
        ),
        (
            "unknown helper",
            "call 1\nexit",
            0,
            InterpError::UnknownHelper { pc: 0, helper: 1 },
        ),
        (
            "callx unknown",
            "mov %r2, 6\ncall %r2\nexit",
            0,
            InterpError::UnknownHelper { pc: 1, helper: 6 },
        ),
        ("fall off", "mov %r0, 0", 0, InterpError::FellOff { pc: 0 }),
        (
            "no such map",
            "r1 = map_idx_value(3, 0) ll\nexit",
            0,
            InterpError::NoSuchMap {
                pc: 0,
                map: 3,
                count: 0,
            },
        ),
    ];
    let mut bad = Vec::new();
    for (name, text, len, want) in cases {
        let mut mem = vec![0u8; *len];
        let got = run_asm(text, &mut mem, 1000);
        if got.as_ref() != Err(want) {
            bad.push(format!("{name}: got {got:x?}, expected {want:x?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn unsupported_instructions_say_why() {
    for (text, needle) in [
        ("ldabsw 4\nexit", "legacy packet load"),
        ("call kfunc(42)\nexit", "kernel function"),
        ("r1 = map_idx(0) ll\nexit", "map handle"),
        ("r1 = map_fd(3) ll\nexit", "file descriptor"),
    ] {
        let e = run_asm(text, &mut [], 1000).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, InterpError::Unsupported { pc: 0, .. }), "{msg}");
        assert!(
            msg.starts_with("insn 0: `") && msg.contains(needle),
            "{msg}"
        );
    }
}

#[test]
fn messages() {
    let e = run_asm("ldxw %r0, [%r1+2]\nexit", &mut [0; 4], 10).unwrap_err();
    assert_eq!(
        e.to_string(),
        "insn 0: load of 4 bytes at 0x100000000002 is outside every memory region"
    );
    assert_eq!(e.pc(), Some(0));
    let e = run(&load("exit"), 1, &mut [], &Options::default()).unwrap_err();
    assert_eq!(e.to_string(), "program 1 does not exist (the object has 1)");
    assert_eq!(e.pc(), None);
}

#[test]
fn input_memory_is_written_back() {
    let mut mem = [1u8, 2, 3, 4];
    let r0 = run_asm("ldxh %r0, [%r1+1]\nsth [%r1+2], 0x7766\nexit", &mut mem, 10).unwrap();
    assert_eq!(r0, 0x0302);
    assert_eq!(mem, [1, 2, 0x66, 0x77]);
}

#[test]
fn global_data_is_addressable_and_persists() {
    let mut obj = load(
        "r1 = map_idx_value(0, 4) ll\nr0 = *(u32 *)(r1 + 0)\nr2 = 1\n\
         lock *(u32 *)(r1 + 0) += r2\nexit",
    );
    obj.maps.push(Map {
        name: ".data".into(),
        origin: MapOrigin::GlobalData,
        section: ".data".into(),
        map_type: 2,
        key_size: 4,
        value_size: 8,
        max_entries: 1,
        flags: 0,
        btf_key_type: None,
        btf_value_type: None,
        init: Some(vec![0, 0, 0, 0, 41, 0, 0, 0]),
        iproute2: None,
        inner: None,
        slots: vec![],
        fields: vec![],
    });
    let mut it = Interp::new(&obj, Options::default());
    assert_eq!(it.run(0, &mut []), Ok(41));
    assert_eq!(it.run(0, &mut []), Ok(42));
    assert_eq!(it.global_data(0), Some(&[0, 0, 0, 0, 43, 0, 0, 0][..]));
    // Offset 8 is one past the 8-byte value.
    let mut obj = obj.clone();
    obj.programs = load("r1 = map_idx_value(0, 8) ll\nr0 = *(u8 *)(r1 + 0)\nexit").programs;
    let e = Interp::new(&obj, Options::default())
        .run(0, &mut [])
        .unwrap_err();
    assert_eq!(
        e,
        InterpError::OutOfBounds {
            pc: 2,
            access: Access::Load,
            addr: (MAP_REGION << REGION_SHIFT) + 8,
            size: 1
        }
    );
}

#[test]
fn hand_built_programs_do_not_panic() {
    let mut obj = load("exit");
    obj.programs[0].insns[0].dst = 11;
    assert!(matches!(
        run(&obj, 0, &mut [], &Options::default()),
        Err(InterpError::Malformed { pc: 0, .. })
    ));
    obj.programs[0].insns[0].op = u16::MAX;
    assert!(matches!(
        run(&obj, 0, &mut [], &Options::default()),
        Err(InterpError::Malformed { pc: 0, .. })
    ));
    obj.programs[0].insns.clear();
    assert!(matches!(
        run(&obj, 0, &mut [], &Options::default()),
        Err(InterpError::FellOff { pc: 0 })
    ));
}

/// The loops Linux bounds by construction (specs/verifier.md, "Loops"), as Linux runs
/// them: `bpf_loop` (181), the numeric iterator kfuncs, `may_goto`, and `--loop-budget`.
mod loops {
    use super::*;

    /// `bpf_loop(r1, cb, fp-8, r4)` whose callback adds its index to the u64 at ctx and
    /// stops (returns 1) at index `stop`; r0 = bpf_loop's result, r6 = the sum.
    fn bpf_loop(count: i64, flags: i64, stop: i64) -> String {
        format!(
            "r1 = {count} ll\nr2 = func(cb) ll\nr3 = r10\nr3 += -8\nr4 = {flags}\nr5 = 0\n\
             *(u64 *)(r10 - 8) = r5\ncall 181\nr6 = *(u64 *)(r10 - 8)\nr6 <<= 32\n\
             r0 &= 0xffffffff\nr0 |= r6\nexit\n\
             cb:\nr3 = *(u64 *)(r2 + 0)\nr3 += r1\n*(u64 *)(r2 + 0) = r3\nr0 = 0\n\
             if r1 != {stop} goto +1\nr0 = 1\nexit"
        )
    }

    fn go(text: &str) -> u64 {
        run_asm(text, &mut [], 1 << 27).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn bpf_loop_calls_the_callback_with_each_index() {
        // 10 calls, indices 0..9: sum 45, result 10.
        assert_eq!(go(&bpf_loop(10, 0, -1)), (45 << 32) | 10);
    }

    #[test]
    fn bpf_loop_stops_when_the_callback_returns_1() {
        // Indices 0..3, the call at index 3 returns 1: 4 calls, sum 6.
        assert_eq!(go(&bpf_loop(10, 0, 3)), (6 << 32) | 4);
    }

    #[test]
    fn bpf_loop_errors_as_linux() {
        // No calls: flags other than 0 is -EINVAL, more than 2^23 loops -E2BIG, 0 loops 0;
        // nr_loops is a u32 (the high half of r1 does not count). (`&= 0xffffffff` is a
        // sign-extended -1: a negative r0 stays whole.)
        assert_eq!(go(&bpf_loop(10, 1, -1)), -22i64 as u64);
        assert_eq!(go(&bpf_loop((1 << 23) + 1, 0, -1)), -7i64 as u64);
        assert_eq!(go(&bpf_loop(0, 0, -1)), 0);
        assert_eq!(go(&bpf_loop(1 << 32 | 3, 0, -1)), (3 << 32) | 3);
    }

    #[test]
    fn bpf_loop_needs_a_function_address() {
        let text = "r1 = 2\nr2 = 7\nr3 = 0\nr4 = 0\ncall 181\nexit";
        assert!(matches!(
            run_asm(text, &mut [], 100),
            Err(InterpError::BadCallback { value: 7, .. })
        ));
    }

    /// bpf_for(i, start, end) summing i; r0 = new's result << 32 | the sum.
    fn iter_sum(start: i32, end: i32) -> String {
        format!(
            "r1 = r10\nr1 += -8\nr2 = {start}\nr3 = {end}\ncall kfunc(bpf_iter_num_new)\n\
             r8 = r0\nr7 = 0\n\
             loop:\nr1 = r10\nr1 += -8\ncall kfunc(bpf_iter_num_next)\nif r0 == 0 goto out\n\
             r2 = *(s32 *)(r0 + 0)\nr7 += r2\ngoto loop\n\
             out:\nr1 = r10\nr1 += -8\ncall kfunc(bpf_iter_num_destroy)\n\
             r8 <<= 32\nr7 &= 0xffffffff\nr7 |= r8\nr0 = r7\nexit"
        )
    }

    #[test]
    fn numeric_iterator_yields_start_to_end() {
        assert_eq!(go(&iter_sum(0, 10)), 45);
        assert_eq!(go(&iter_sum(-3, 2)), -5i64 as u64);
        assert_eq!(go(&iter_sum(5, 5)), 0);
    }

    #[test]
    fn numeric_iterator_errors_as_linux() {
        // start > end: -EINVAL and an empty iterator; more than 2^23: -E2BIG.
        assert_eq!(go(&iter_sum(3, 1)), (-22i64 as u64) << 32);
        assert_eq!(go(&iter_sum(0, (1 << 23) + 1)), (-7i64 as u64) << 32);
    }

    #[test]
    fn may_goto_falls_through_until_the_budget_is_spent() {
        // Counts fall-throughs: exactly BPF_MAX_LOOPS of them, then the jump.
        let text = "r0 = 0\nloop:\nmay_goto out\nr0 += 1\ngoto loop\nout:\nexit";
        assert_eq!(go(text), BPF_MAX_LOOPS);
    }

    #[test]
    fn may_goto_budget_is_per_function_invocation() {
        // The callee spends its own budget and leaves the caller's: the caller's loop
        // still gets 3 fall-throughs after the callee spent all of its own.
        let text = "call f\nr6 = r0\nr0 = 0\nloop:\nif r0 == 3 goto out\nmay_goto out\n\
                    r0 += 1\ngoto loop\nout:\nr0 += r6\nexit\n\
                    f:\nr0 = 0\nfl:\nmay_goto fo\nr0 += 1\ngoto fl\nfo:\nexit";
        assert_eq!(go(text), BPF_MAX_LOOPS + 3);
    }

    #[test]
    fn loop_budget_ends_the_run_and_counts_it() {
        // A loop to 1000 with a budget of 100 at its head (index 2): the run ends with
        // r0 = 0 and is counted; with a budget of 2000 it runs to the end.
        let text = "r6 = 1000\nr7 = 0\nloop:\nif r7 >= r6 goto out\nr7 += 1\ngoto loop\n\
                    out:\nr0 = r7\nexit";
        let obj = load(text);
        for (n, r0, exhausted) in [(100, 0, 1), (2000, 1000, 0)] {
            let opts = Options {
                loop_budget: Some(LoopBudget { n, heads: vec![2] }),
                ..Options::default()
            };
            let mut interp = Interp::new(&obj, opts);
            assert_eq!(interp.run(0, &mut []).expect("runs"), r0);
            assert_eq!(interp.budget_exhausted(), exhausted);
        }
    }
}

/// An environment lending map 0 (an array of 3 u64 values) and a fixed clock.
struct Lender {
    storage: Vec<u8>,
    bound: bool,
}

impl Env for Lender {
    fn maps(&self) -> bool {
        true
    }
    fn map_storage(&mut self, map: usize) -> Option<&mut [u8]> {
        (map == 0 && self.bound).then_some(self.storage.as_mut_slice())
    }
    fn ktime_ns(&mut self, _: u64) -> u64 {
        1_000_000
    }
    fn pid_tgid(&mut self) -> Option<u64> {
        Some(7 << 32 | 8)
    }
}

fn array_map(value_size: u32) -> Map {
    Map {
        name: "a".into(),
        origin: MapOrigin::Btf,
        section: ".maps".into(),
        map_type: 2,
        key_size: 4,
        value_size,
        max_entries: 3,
        flags: 0,
        btf_key_type: None,
        btf_value_type: None,
        init: None,
        iproute2: None,
        inner: None,
        slots: vec![],
        fields: vec![],
    }
}

/// `map_update_elem(a, &key, &value, flags)` with key and value on the stack; r0 out.
fn update(key: i64, value: i64, flags: i64) -> String {
    format!(
        "*(u32 *)(r10 - 4) = {key}\n*(u64 *)(r10 - 16) = {value}\n\
         r1 = map_idx(0) ll\nr2 = r10\nr2 += -4\nr3 = r10\nr3 += -16\nr4 = {flags}\n\
         call 2\nexit"
    )
}

#[test]
fn host_maps_work_on_lent_array_storage() {
    let mut obj = load(&update(1, 0x1122, 0));
    obj.maps.push(array_map(4));
    // Stride 8 (value size 4 rounded up): key 1's value at byte 8, 4 bytes written.
    let mut env = Lender {
        storage: vec![0xee; 24],
        bound: true,
    };
    let mut it = Interp::new(&obj, Options::default());
    assert_eq!(it.run_with(0, &mut [], &mut env), Ok(0));
    assert_eq!(
        env.storage[8..16],
        [0x22, 0x11, 0, 0, 0xee, 0xee, 0xee, 0xee]
    );
    let err = |e: i64| e as u64;
    for (key, flags, want) in [
        (3, 0, err(bpf2ptx_runtime::maps::E2BIG)),
        (0, 1, err(bpf2ptx_runtime::maps::EEXIST)),
        (0, 4, err(bpf2ptx_runtime::maps::EINVAL)),
        (2, 2, 0),
    ] {
        let mut obj = load(&update(key, 5, flags));
        obj.maps.push(array_map(4));
        let got = Interp::new(&obj, Options::default()).run_with(0, &mut [], &mut env);
        assert_eq!(got, Ok(want), "key {key} flags {flags}");
    }
    // Unbound storage: the update refuses, a lookup is NULL.
    env.bound = false;
    assert_eq!(
        it.run_with(0, &mut [], &mut env),
        Ok(err(bpf2ptx_runtime::maps::EINVAL))
    );
    env.bound = true;

    // A lookup, an atomic add through the value pointer, the clock and the ids.
    let mut obj = load(
        "*(u32 *)(r10 - 4) = 2\nr1 = map_idx(0) ll\nr2 = r10\nr2 += -4\ncall 1\n\
         if r0 == 0 goto +7\nr1 = 40\nlock *(u64 *)(r0 + 0) += r1\ncall 5\nr6 = r0\n\
         call 14\nr0 += r6\nexit\nr0 = 99\nexit",
    );
    obj.maps.push(array_map(8));
    env.storage = vec![0; 24];
    env.storage[16] = 2;
    let mut it = Interp::new(&obj, Options::default());
    assert_eq!(
        it.run_with(0, &mut [], &mut env),
        Ok((7 << 32 | 8) + 1_000_000)
    );
    assert_eq!(env.storage[16], 42);
    env.bound = false;
    assert_eq!(
        it.run_with(0, &mut [], &mut env),
        Ok(99),
        "NULL when unbound"
    );

    // The reference environment keeps refusing map handles.
    let e = Interp::new(&obj, Options::default())
        .run(0, &mut [])
        .unwrap_err();
    assert!(e.to_string().contains("map handle"), "{e}");
}

#[test]
fn map_helpers_refuse_a_hash_map_in_a_host_run() {
    let mut obj = load(&update(0, 1, 0));
    let mut hash = array_map(8);
    hash.map_type = 1;
    obj.maps.push(hash);
    let mut env = Lender {
        storage: vec![0; 24],
        bound: true,
    };
    let e = Interp::new(&obj, Options::default())
        .run_with(0, &mut [], &mut env)
        .unwrap_err();
    assert!(e.to_string().contains("run on arrays"), "{e}");
}

#[test]
fn atomics_on_aligned_bytes_match_plain_semantics() {
    for op in [
        AtomicOp::Add,
        AtomicOp::Or,
        AtomicOp::And,
        AtomicOp::Xor,
        AtomicOp::Xchg,
        AtomicOp::Cmpxchg,
    ] {
        for (aligned, old) in [(0usize, 6u64), (1, 6), (0, 5)] {
            let mut buf = [0u8; 17];
            buf[aligned..aligned + 8].copy_from_slice(&old.to_le_bytes());
            let got = atomic_rmw(&mut buf[aligned..aligned + 8], op, 3, 6);
            assert_eq!(got, old, "{op:?}");
            let new = u64::from_le_bytes(buf[aligned..aligned + 8].try_into().unwrap());
            let want = match op {
                AtomicOp::Add => old + 3,
                AtomicOp::Or => old | 3,
                AtomicOp::And => old & 3,
                AtomicOp::Xor => old ^ 3,
                AtomicOp::Xchg => 3,
                AtomicOp::Cmpxchg if old == 6 => 3,
                AtomicOp::Cmpxchg => old,
            };
            assert_eq!(new, want, "{op:?} at +{aligned} from {old}");
        }
    }
}
