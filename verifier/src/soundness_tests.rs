//! Randomized soundness check of the whole verifier against the reference interpreter:
//! random programs over the conformance entry (64 bytes of memory in r1, its length in
//! r2), with loops, data-dependent branches, bounds checks (right and off by one),
//! masks, linked copies, spills and pointer arithmetic. Every program the verifier accepts
//! runs in the interpreter (which checks every access against its region and counts the
//! instructions) on many inputs: no access may leave its region and no run may execute
//! more instructions than the proven cost bound.

use crate::{verify_with, Entry, Options as VerifyOptions};
use bpf2ptx_compiler::interp::{self, InterpError, Options};
use bpf2ptx_compiler::isa::table::{CallKind, Kind, Size, Src};
use std::fmt::Write as _;

const MEM: usize = 64;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

/// Scalar registers the generator computes with (r6 holds the memory pointer, r7 the
/// loop counter of the current loop).
const SCALARS: &[u8] = &[0, 2, 3, 4, 5, 8, 9];

fn size_name(n: u64) -> &'static str {
    match n {
        1 => "u8",
        2 => "u16",
        4 => "u32",
        _ => "u64",
    }
}

/// One random program in the kernel syntax.
fn program(rng: &mut Rng) -> String {
    let mut s = String::new();
    let mut label = 0;
    let mut fresh = |s: &mut String| {
        label += 1;
        let _ = s;
        format!("l{label}")
    };
    s.push_str("r6 = r1\n");
    for &r in SCALARS {
        if r != 2 {
            writeln!(s, "r{r} = {}", rng.below(8)).unwrap();
        }
    }
    s.push_str("r7 = 0\nr1 = 0\n*(u64 *)(r10 - 8) = r1\n*(u64 *)(r10 - 16) = r1\n");
    let mut uses_sub = false;
    let in_loop = rng.below(2) == 0;
    let loop_label = fresh(&mut s);
    let iters = 1 + rng.below(6);
    if in_loop {
        writeln!(s, "{loop_label}:").unwrap();
    }
    for _ in 0..(4 + rng.below(10)) {
        let a = *rng.pick(SCALARS);
        let b = *rng.pick(SCALARS);
        match rng.below(16) {
            // A load from memory at a constant offset (sometimes out of bounds).
            0 => {
                let n = 1 << rng.below(4);
                let off = rng.below(MEM as u64 + 8) as i64 - 4;
                writeln!(s, "r{a} = *({} *)(r6 {off:+})", size_name(n)).unwrap();
            }
            // Arithmetic.
            1 => {
                let op = rng.pick(&["+=", "-=", "*=", "&=", "|=", "^=", "<<=", ">>=", "s>>="]);
                let k = rng.below(9) as i64 - 2;
                if rng.below(2) == 0 {
                    writeln!(
                        s,
                        "r{a} {op} {}",
                        if op.contains('<') || op.contains('>') {
                            k.rem_euclid(64)
                        } else {
                            k
                        }
                    )
                    .unwrap();
                } else {
                    writeln!(s, "r{a} {op} r{b}").unwrap();
                }
            }
            // 32-bit arithmetic.
            2 => {
                let op = rng.pick(&["+=", "-=", "&=", "|="]);
                writeln!(s, "w{a} {op} w{b}").unwrap();
            }
            // A mask.
            3 => {
                let m = rng.pick(&[7u64, 15, 31, 56, 63, 0xff, 0x3c]);
                writeln!(s, "r{a} &= {m}").unwrap();
            }
            // A bounds check that skips the next access when it fails.
            4 | 5 => {
                let l = fresh(&mut s);
                let n = 1 << rng.below(4);
                let limit = MEM as i64 - n as i64 + rng.below(3) as i64 - 1;
                let cond = rng.pick(&[">", ">=", "s>", "s>="]);
                let signed = cond.starts_with('s');
                writeln!(s, "if r{a} {cond} {limit} goto {l}").unwrap();
                if signed || rng.below(4) == 0 {
                    writeln!(s, "if r{a} s< {} goto {l}", rng.below(2) as i64 - 1).unwrap();
                }
                writeln!(s, "r1 = r6\nr1 += r{a}").unwrap();
                if rng.below(2) == 0 {
                    writeln!(s, "r{b} = *({} *)(r1 + 0)", size_name(n)).unwrap();
                } else {
                    writeln!(s, "*({} *)(r1 + 0) = r{b}", size_name(n)).unwrap();
                }
                writeln!(s, "{l}:").unwrap();
            }
            // A linked copy checked, the original used.
            6 => {
                let l = fresh(&mut s);
                let c = rng.below(10) as i64 - 2;
                let limit = MEM as i64 - 8 + c + rng.below(3) as i64 - 1;
                writeln!(s, "r1 = r{a}\nr1 += {c}\nif r1 > {limit} goto {l}").unwrap();
                writeln!(s, "r1 = r6\nr1 += r{a}\nr{b} = *(u64 *)(r1 + 0)\n{l}:").unwrap();
            }
            // A spill and a fill (aligned or not, any size).
            7 => {
                let n = 1 << rng.below(4);
                let off = -(1 + rng.below(16) as i64);
                writeln!(s, "*({} *)(r10 {off}) = r{a}", size_name(n)).unwrap();
                let n = 1 << rng.below(4);
                let off = -(1 + rng.below(16) as i64);
                writeln!(s, "r{b} = *({} *)(r10 {off})", size_name(n)).unwrap();
            }
            // A data-dependent branch over an accumulation.
            8 => {
                let l = fresh(&mut s);
                writeln!(s, "if r{a} > {} goto {l}\nr{b} += 1\n{l}:", rng.below(64)).unwrap();
            }
            // A variable-offset stack access.
            9 => {
                writeln!(s, "r1 = r10\nr{a} &= 8\nr1 += r{a}").unwrap();
                writeln!(s, "r{b} = *(u64 *)(r1 - 16)").unwrap();
            }
            // A register compared with another.
            10 => {
                let l = fresh(&mut s);
                writeln!(s, "if r{a} >= r{b} goto {l}").unwrap();
                writeln!(s, "r1 = r6\nr1 += r{a}\nr{b} = *(u8 *)(r1 + 0)\n{l}:").unwrap();
            }
            // The length in r2 as a bound.
            11 => {
                let l = fresh(&mut s);
                writeln!(s, "r1 = r{a}\nr1 += 4\nif r1 > r2 goto {l}").unwrap();
                writeln!(s, "r1 = r6\nr1 += r{a}\nr{b} = *(u32 *)(r1 + 0)\n{l}:").unwrap();
            }
            // A narrow spill and fill of the same size and place, then an index; sometimes
            // a byte of it overwritten in between, sometimes filled sign-extended.
            13 => {
                let n = 1u64 << rng.below(3);
                let off = -(n as i64) * (1 + rng.below(16 / n) as i64);
                let l = fresh(&mut s);
                writeln!(s, "if r{a} > {} goto {l}", MEM as u64 - 8 + rng.below(3)).unwrap();
                writeln!(s, "*({} *)(r10 {off}) = r{a}", size_name(n)).unwrap();
                if rng.below(4) == 0 {
                    writeln!(s, "*(u8 *)(r10 {}) = r{b}", off + rng.below(n) as i64).unwrap();
                }
                let ty = if rng.below(4) == 0 {
                    format!("s{}", 8 * n)
                } else {
                    size_name(n).to_string()
                };
                writeln!(s, "r1 = *({ty} *)(r10 {off})").unwrap();
                writeln!(s, "r1 += r6\nr{b} = *(u64 *)(r1 + 0)\n{l}:").unwrap();
            }
            // A call of the subprogram with an index (and the memory pointer).
            14 => {
                writeln!(s, "r1 = r{a}\nr2 = r6\ncall sub\nr{b} = r0").unwrap();
                uses_sub = true;
            }
            // A signed load used as an index.
            _ => {
                let l = fresh(&mut s);
                writeln!(s, "r{a} = *(s8 *)(r6 + {})", rng.below(MEM as u64)).unwrap();
                writeln!(s, "if r{a} s> {} goto {l}", rng.below(60)).unwrap();
                writeln!(s, "r1 = r6\nr1 += r{a}\nr{b} = *(u8 *)(r1 + 0)\n{l}:").unwrap();
            }
        }
    }
    if in_loop {
        writeln!(s, "r7 += 1\nif r7 < {iters} goto {loop_label}").unwrap();
    }
    s.push_str("exit\n");
    if uses_sub {
        // Checks its index (sometimes off by one), reads, and returns the byte or a number.
        let limit = MEM as u64 - 8 + rng.below(3);
        let n = 1 << rng.below(4);
        writeln!(
            s,
            "sub:\nr0 = 0\nif r1 > {limit} goto sub_out\nr2 += r1\nr0 = *({} *)(r2 + 0)\nsub_out:\nexit",
            size_name(n)
        )
        .unwrap();
    }
    s
}

#[test]
fn accepted_programs_stay_in_bounds_and_within_their_cost() {
    // BPF2PTX_SOUNDNESS=N[:SEED] explores more (the default keeps `cargo test` quick).
    let (count, seed) = match std::env::var("BPF2PTX_SOUNDNESS") {
        Ok(v) => {
            let (n, s) = v.split_once(':').unwrap_or((&v, "1"));
            (n.parse().expect("count"), s.parse().expect("seed"))
        }
        Err(_) => (500u64, 1u64),
    };
    let mut rng = Rng(0x005e_ed0f_b0b5 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let (mut accepted, mut runs) = (0, 0);
    for n in 0..count {
        let text = program(&mut rng);
        let obj = bpf2ptx_compiler::front::load_bytes("random.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("program {n} does not assemble: {e}\n{text}"));
        // A lower exploration limit keeps the debug build quick (a program whose
        // exploration explodes is rejected either way).
        let limits = VerifyOptions {
            complexity_limit: 20_000,
            ..VerifyOptions::default()
        };
        let Ok(facts) = verify_with(&obj, 0, &Entry::conformance(MEM), &limits) else {
            continue;
        };
        accepted += 1;
        for k in 0..16 {
            let mut mem: Vec<u8> = (0..MEM)
                .map(|_| match k % 4 {
                    0 => rng.next() as u8,
                    1 => (rng.below(80)) as u8,
                    2 => 0xff - rng.below(4) as u8,
                    _ => 0,
                })
                .collect();
            let opts = Options {
                budget: facts.cost_bound,
                ..Options::default()
            };
            runs += 1;
            // The facts the backend trusts, checked against every step of the real run.
            let mut wrong: Vec<String> = Vec::new();
            let prog = &obj.programs[0];
            let result =
                interp::Interp::new(&obj, opts).run_observed(0, &mut mem, &mut |i, regs, next| {
                    let ins = prog.insns[i];
                    if facts.reached.get(i) == Some(&false) {
                        wrong.push(format!("insn {i} ran but is marked unreached"));
                    }
                    if let Some(v) = facts.const_value[i] {
                        if regs[ins.dst as usize] != v {
                            wrong.push(format!(
                                "insn {i}: const_value {v:#x}, ran with {:#x}",
                                regs[ins.dst as usize]
                            ));
                        }
                    }
                    // `upper_zero` speaks of the registers on entry to the next one.
                    let uz = facts.upper_zero.get(next).copied().unwrap_or(0);
                    for r in (0..11).filter(|r| uz & (1 << r) != 0) {
                        if regs[r] >> 32 != 0 {
                            wrong.push(format!(
                                "insn {next}: upper_zero r{r}, ran with {:#x}",
                                regs[r]
                            ));
                        }
                    }
                    // A jump changes no register: after it, rS still holds its entry value.
                    if let (Some(k), Kind::Jmp(_, _, Src::X)) =
                        (facts.jump_rhs_const[i], ins.kind())
                    {
                        if regs[ins.src as usize] != k {
                            wrong.push(format!(
                                "insn {i}: jump_rhs_const {k:#x}, ran with {:#x}",
                                regs[ins.src as usize]
                            ));
                        }
                    }
                    if let (Some(t), Kind::Jmp(..)) = (facts.branch_always[i], ins.kind()) {
                        if ins.off != 0 && (next != i + 1) != t {
                            wrong.push(format!("insn {i}: branch_always {t}, went the other way"));
                        }
                    }
                    if let Some(c) = facts.call_size[i] {
                        let size_reg = bpf2ptx_runtime::helper(ins.imm).and_then(|h| {
                            h.args.iter().find_map(|a| match a {
                                bpf2ptx_runtime::Arg::Mem { size_arg, .. } => Some(size_arg + 1),
                                _ => None,
                            })
                        });
                        match size_reg {
                            Some(r) if regs[r as usize] == c => {}
                            _ => wrong.push(format!("insn {i}: call_size {c} does not hold")),
                        }
                    }
                    if let Some(c) = facts.atomic_add_const[i] {
                        if regs[ins.src as usize] != c {
                            wrong.push(format!(
                                "insn {i}: atomic_add_const {c:#x}, added {:#x}",
                                regs[ins.src as usize]
                            ));
                        }
                    }
                });
            if let Some(w) = wrong.first() {
                panic!("program {n}: a fact does not hold: {w}\nmemory: {mem:02x?}\n{text}");
            }
            match result {
                Ok(_) => {}
                Err(e @ (InterpError::OutOfBounds { .. } | InterpError::Budget { .. })) => {
                    panic!(
                        "program {n} was accepted (cost bound {}) but {e}\nmemory: {mem:02x?}\n{text}",
                        facts.cost_bound
                    )
                }
                Err(e) => panic!("program {n}: interpreter: {e}\n{text}"),
            }
        }
    }
    eprintln!("{accepted} of {count} random programs accepted, {runs} runs in bounds");
    assert!(
        accepted * 20 > count,
        "only {accepted} programs accepted: the generator needs tuning"
    );
}

/// Random instruction soup (wild jumps and calls, any register as a base, helpers with
/// random arguments, maps, atomics, r10 writes): the verifier must answer, never panic.
#[test]
fn random_instruction_soup_never_panics() {
    let count: u64 = std::env::var("BPF2PTX_SOUP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(0x0bad_c0de_f00d);
    let mut verified = 0;
    for _ in 0..count {
        let mut s = String::from(".map a array 4 16 4\n.map r ringbuf 0 0 4096\n.map .rodata array 4 8 1 0x80 init=6869000000000000\n");
        let n = 2 + rng.below(24);
        for _ in 0..n {
            let (a, b) = (rng.below(11), rng.below(11));
            let off = rng.below(40) as i64 - 20;
            let line = match rng.below(16) {
                0 => format!("r{a} = {}", rng.below(100) as i64 - 10),
                1 => format!("r{a} += r{b}"),
                2 => format!("r{a} = r{b}"),
                3 => format!(
                    "if r{a} > {} goto {:+}",
                    rng.below(64),
                    rng.below(9) as i64 - 4
                ),
                4 => format!("goto {:+}", rng.below(9) as i64 - 4),
                5 => format!(
                    "call {}",
                    rng.pick(&[1, 2, 3, 5, 6, 8, 25, 130, 131, 132, 133, 134, 501, 503, 507, 999])
                ),
                6 => format!("r{a} = map_idx({}) ll", rng.below(3)),
                7 => format!(
                    "r{a} = map_idx_value({}, {}) ll",
                    rng.below(3),
                    rng.below(12)
                ),
                8 => format!("r{a} = *(u{} *)(r{b} {off:+})", 8 << rng.below(4)),
                9 => format!("*(u{} *)(r{a} {off:+}) = r{b}", 8 << rng.below(4)),
                10 => format!("lock *(u64 *)(r{a} {off:+}) += r{b}"),
                11 => format!("call pc{:+}", rng.below(9) as i64 - 4),
                12 => format!("w{a} = w{b}"),
                13 => format!("r{a} &= {}", rng.below(64)),
                14 => "exit".to_string(),
                _ => format!("if r{a} == r{b} goto {:+}", rng.below(9) as i64 - 4),
            };
            s.push_str(&line);
            s.push('\n');
        }
        s.push_str("exit\n");
        let Ok(obj) = bpf2ptx_compiler::front::load_bytes("soup.s", s.as_bytes()) else {
            continue;
        };
        let limits = VerifyOptions {
            complexity_limit: 5_000,
            ..VerifyOptions::default()
        };
        for entry in [Entry::probe(), Entry::conformance(16)] {
            let _ = verify_with(&obj, 0, &entry, &limits);
        }
        verified += 1;
    }
    assert!(verified * 6 > count, "only {verified} soups assembled");
}

/// `Facts::atomic_add_const` holds only when every path adds the same number: paths that
/// differ only in the operand must not be pruned into one (the operand is relevant).
#[test]
fn atomic_add_const_needs_the_same_constant_on_every_path() {
    let cases = [
        // r2 is 0 or 1 depending on memory: no constant.
        (
            "r3 = *(u8 *)(r1 + 8)\nr2 = 0\nif r3 == 0 goto +1\nr2 = 1\nlock *(u64 *)(r1 + 0) += r2\nr0 = 0\nexit\n",
            None,
        ),
        // Both paths add 1.
        (
            "r3 = *(u8 *)(r1 + 8)\nr2 = 1\nif r3 == 0 goto +1\nr2 = 1\nlock *(u64 *)(r1 + 0) += r2\nr0 = 0\nexit\n",
            Some(1),
        ),
    ];
    for (text, want) in cases {
        let obj = bpf2ptx_compiler::front::load_bytes("c.s", text.as_bytes()).unwrap();
        let facts = crate::verify(&obj, 0, &Entry::conformance(16)).unwrap();
        let atomic = obj.programs[0]
            .insns
            .iter()
            .position(|i| matches!(i.kind(), bpf2ptx_compiler::isa::table::Kind::Atomic(..)))
            .unwrap();
        assert_eq!(facts.atomic_add_const[atomic], want, "{text}");
    }
}

/// The index of the instruction at label `at:` of an assembled program (instructions, not
/// slots: an `ld_imm64` is one).
fn at_label(text: &str) -> usize {
    let mut n = 0;
    for line in text.lines() {
        let line = line.trim();
        if line == "at:" {
            return n;
        }
        if line.is_empty() || line.ends_with(':') {
            continue;
        }
        n += 1;
    }
    panic!("no `at:` label in\n{text}")
}

/// `Facts::upper_zero` holds only when every path reaching the instruction has the upper
/// 32 bits of the register zero: one path with a wide value clears it, a path whose value
/// a branch proved narrow keeps it, a loop's counter keeps it only while the loop's bound
/// keeps it narrow, and a register pruning did not compare (irrelevant: its value only
/// reaches a store to memory) never gets it, since a pruned path may disagree.
#[test]
fn upper_zero_holds_on_every_path_only() {
    // r3 is 5 or 2^32 (or, on the narrow branch, below 2^32); r4 a pointer.
    let cases: [(&str, u8, bool); 9] = [
        // Both paths narrow: r3 is compared at `at`, so relevant there.
        ("r3 = 5\nif r6 == 0 goto +1\nr3 = 7\nat:\nif r3 > 6 goto +0\n", 3, true),
        // One path wide.
        (
            "r3 = 5\nif r6 == 0 goto +2\nr3 = 0x100000000 ll\nat:\nif r3 > 6 goto +0\n",
            3,
            false,
        ),
        // An unknown 64-bit value; narrowed by a branch on one path only; narrowed on
        // the only path that reaches `at` (the wide one jumps past it).
        ("r3 = *(u64 *)(r1 + 0)\nat:\nif r3 > 6 goto +0\n", 3, false),
        (
            "r3 = *(u64 *)(r1 + 0)\nr5 = 0x100000000 ll\nif r3 < r5 goto +1\nr6 += 1\nat:\nif r3 > 6 goto +0\n",
            3,
            false,
        ),
        (
            "r3 = *(u64 *)(r1 + 0)\nr5 = 0x100000000 ll\nif r3 >= r5 goto +1\nat:\nr3 >>= 1\nif r3 > 6 goto +0\n",
            3,
            true,
        ),
        // A 32-bit load and a 32-bit ALU result are narrow; a shift right by 32 too.
        ("r3 = *(u32 *)(r1 + 0)\nw3 += 7\nat:\nif r3 > 6 goto +0\n", 3, true),
        ("r3 = *(u64 *)(r1 + 0)\nr3 >>= 32\nat:\nif r3 > 6 goto +0\n", 3, true),
        // A pointer is not a number.
        ("r3 = r10\nat:\nif r3 == 0 goto +0\n", 3, false),
        // Narrow on both paths, but only returned afterwards: not relevant, so pruning at
        // the join may have merged the paths without comparing it; no fact.
        ("r3 = 5\nif r6 == 0 goto +1\nr3 = 7\nat:\nr3 >>= 1\nr0 = r3\nexit\n", 3, false),
    ];
    for (body, r, want) in cases {
        let text = format!("r6 = *(u8 *)(r1 + 8)\n{body}r0 = 0\nexit\n");
        let obj = bpf2ptx_compiler::front::load_bytes("c.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let facts = crate::verify(&obj, 0, &Entry::conformance(16))
            .unwrap_or_else(|e| panic!("{e:?}\n{text}"));
        let at = at_label(&text);
        assert_eq!(
            facts.upper_zero[at] & (1 << r) != 0,
            want,
            "insn {at}\n{text}"
        );
    }
}

/// A pruned path with a wide value in a register pruning ignored leaves no
/// `upper_zero` fact: when the narrow path (r3 = 5) is explored first and remembered at the
/// join, the wide one (r3 = 2^32) is pruned there, because r3 is irrelevant (it only
/// reaches r0 of the entry function, which no safety decision reads), so it never reaches
/// the shift; without the relevance filter the shift would
/// claim r3 narrow. When r3 is compared after the join it is relevant: the wide path is
/// not pruned and clears the fact itself. Either way no fact.
#[test]
fn upper_zero_is_not_claimed_for_a_register_pruning_ignored() {
    for use_ in ["r0 = r3\nexit\n", "if r3 > 9 goto +0\n"] {
        for cond in ["!=", "=="] {
            let text = format!(
                "r6 = *(u8 *)(r1 + 8)\nr3 = 5\nif r6 {cond} 0 goto +2\nr3 = 0x100000000 ll\n\
                 r2 = 0\nat:\nr3 >>= 1\n{use_}r0 = 0\nexit\n"
            );
            let obj = bpf2ptx_compiler::front::load_bytes("c.s", text.as_bytes()).unwrap();
            let facts = crate::verify(&obj, 0, &Entry::conformance(16)).unwrap();
            let at = at_label(&text);
            assert!(facts.reached[at]);
            assert_eq!(facts.upper_zero[at] & (1 << 3), 0, "{text}");
        }
    }
}

/// A loop counter: narrow at the loop's test only when it stays below 2^32 on every
/// iteration (steps of 2^30 up to a bound of 3 * 2^30, or of 2^33).
#[test]
fn upper_zero_holds_around_loops() {
    for (bound, want) in [("0xc0000000", true), ("0x200000000", false)] {
        let text = format!(
            "r6 = *(u8 *)(r1 + 8)\nr7 = 0\nr5 = {bound} ll\nhead:\nr6 += 1\nr7 += 0x40000000\n\
             at:\nif r7 < r5 goto head\nr0 = 0\nexit\n"
        );
        let obj = bpf2ptx_compiler::front::load_bytes("c.s", text.as_bytes()).unwrap();
        let facts =
            crate::verify(&obj, 0, &Entry::conformance(16)).unwrap_or_else(|e| panic!("{e:?}"));
        let at = at_label(&text);
        assert_eq!(facts.upper_zero[at] & (1 << 7) != 0, want, "{text}");
        // The bound itself: narrow exactly when the counter stays narrow here.
        assert_eq!(facts.upper_zero[at] & (1 << 5) != 0, want, "{text}");
    }
}

/// `Facts::call_size` holds only when every path passes the same size: a ring output
/// whose size depends on memory gets no constant, one with the same size on both paths
/// does.
#[test]
fn call_size_needs_the_same_size_on_every_path() {
    let cases = [
        ("r3 = 8\nif r6 == 0 goto +1\nr3 = 16\n", None),
        ("r3 = 16\nif r6 == 0 goto +1\nr3 = 16\n", Some(16)),
    ];
    for (sizes, want) in cases {
        let text = format!(
            ".map r ringbuf 0 0 4096\nr6 = *(u8 *)(r1 + 8)\nr1 = 0\n*(u64 *)(r10 - 8) = r1\n\
             *(u64 *)(r10 - 16) = r1\n{sizes}r1 = map_idx(0) ll\nr2 = r10\nr2 += -16\nr4 = 0\n\
             call 130\nr0 = 0\nexit\n"
        );
        let obj = bpf2ptx_compiler::front::load_bytes("c.s", text.as_bytes()).unwrap();
        let facts = crate::verify(&obj, 0, &Entry::conformance(16)).unwrap();
        let call = obj.programs[0]
            .insns
            .iter()
            .position(|i| i.imm == 130 && i.kind() == Kind::Call(CallKind::Helper))
            .unwrap();
        assert_eq!(facts.call_size[call], want, "{text}");
    }
}

/// The registers the plain-counter programs compute with (r4 holds a pointer that is the
/// map value on some paths and the stack on others; r6 the map value, r7 the stack, r8
/// the memory; r9 is the rewrite's own).
const COUNTER_SCALARS: &[u8] = &[0, 1, 2, 3, 5];

/// One random program around plain counter updates: load-add-store triples on the map
/// value, the stack, the memory or the mixed pointer, of 2, 4 or 8 bytes, at aligned and
/// unaligned offsets, with constant and register addends in every form clang emits and in
/// forms that are not counters (sub, mul, or of a register, another offset or value),
/// unrelated arithmetic in between, branches in between and into the middle, and later
/// uses of the registers. Returns the instruction lines (labels on their own lines).
fn counter_program(rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let mut label = 0;
    let scalar = |rng: &mut Rng| *rng.pick(COUNTER_SCALARS);
    v.push("r8 = r1".into());
    v.push("r6 = map_idx_value(0, 0) ll".into());
    v.push("r1 = 0".into());
    for k in 1..=4 {
        v.push(format!("*(u64 *)(r10 - {}) = r1", 8 * k));
    }
    v.push("r7 = r10".into());
    v.push("r7 += -32".into());
    for &r in COUNTER_SCALARS {
        if rng.below(2) == 0 {
            v.push(format!("r{r} = {}", rng.below(9) as i64 - 2));
        } else {
            v.push(format!("r{r} = *(u8 *)(r8 + {})", rng.below(MEM as u64)));
        }
    }
    label += 1;
    v.push(format!(
        "r4 = r6\nr1 = *(u8 *)(r8 + 0)\nif r1 > 127 goto m{label}\nr4 = r7\nm{label}:"
    ));
    let alu = |rng: &mut Rng| -> String {
        let (a, b) = (scalar(rng), scalar(rng));
        match rng.below(4) {
            0 => format!("r{a} += {}", rng.below(5) as i64 - 2),
            1 => format!("r{a} ^= r{b}"),
            2 => format!("w{a} = w{b}"),
            _ => format!("r{a} = {}", rng.below(5)),
        }
    };
    for _ in 0..(2 + rng.below(6)) {
        match rng.below(8) {
            0..=4 => {
                let base = *rng.pick(&[6, 6, 6, 6, 4, 7, 8]);
                let n = *rng.pick(&[8u64, 8, 4, 4, 2]);
                let off = *rng.pick(&[0i64, 8, 16, 24, 4, 2]);
                let ty = size_name(n);
                let (x, z) = (scalar(rng), scalar(rng));
                let c = rng.below(7) as i64 - 3;
                let (add, sum) = match rng.below(12) {
                    0 | 1 => (format!("r{x} += {c}"), x),
                    2 => (format!("w{x} += {c}"), x),
                    3 => (format!("r{x} -= {c}"), x),
                    4 => (format!("w{x} -= {c}"), x),
                    5 | 6 => (format!("r{x} += r{z}"), x),
                    7 => (format!("w{x} += w{z}"), x),
                    8 => (format!("r{z} += r{x}"), z),
                    9 => (format!("r{x} -= r{z}"), x),
                    10 => (format!("r{x} *= {c}"), x),
                    _ => (format!("r{x} |= r{z}"), x),
                };
                // Sometimes a branch that skips the load, or the add, enters the triple.
                let skip = rng.below(12);
                if skip == 0 {
                    label += 1;
                    v.push(format!("if r{} > 3 goto j{label}", scalar(rng)));
                }
                v.push(format!("r{x} = *({ty} *)(r{base} {off:+})"));
                if rng.below(4) == 0 {
                    v.push(alu(rng));
                }
                if skip == 0 {
                    v.push(format!("j{label}:"));
                }
                if skip == 1 {
                    label += 1;
                    v.push(format!("if r{} > 3 goto j{label}", scalar(rng)));
                    v.push(add);
                    v.push(format!("j{label}:"));
                } else {
                    v.push(add);
                }
                if rng.below(4) == 0 {
                    v.push(alu(rng));
                }
                let (store_off, value) = match rng.below(10) {
                    0 => (off + 8, sum),
                    1 => (off, scalar(rng)),
                    _ => (off, sum),
                };
                v.push(format!("*({ty} *)(r{base} {store_off:+}) = r{value}"));
                match rng.below(6) {
                    0 => v.push(format!("r0 += r{}", scalar(rng))),
                    1 | 2 => v.push(format!("r{x} = {c}")),
                    _ => {}
                }
            }
            5 => v.push(alu(rng)),
            6 => v.push(format!(
                "r{} = *(u64 *)(r6 {:+})",
                scalar(rng),
                8 * rng.below(8) as i64
            )),
            _ => {
                label += 1;
                v.push(format!("if r{} > 2 goto s{label}", scalar(rng)));
                v.push(alu(rng));
                v.push(format!("s{label}:"));
            }
        }
    }
    if rng.below(2) == 0 {
        v.push("r0 = 0".into());
    }
    v.push("exit".into());
    v.join("\n").lines().map(str::to_string).collect()
}

/// `Facts::plain_add` preserves what a single thread computes: each random program runs
/// in the interpreter as written and as the backend lowers it (the load and the add
/// become no-ops, the store an atomic add of the addend: a constant put in r9, which the
/// program never uses, or the addend's register as the store finds it), from the same
/// memory and map contents; r0, the memory and the map value must come out the same. With
/// one thread an atomic add is the load-add-store; with many, the atomic result is the
/// one where the threads' updates do not overlap (specs/verifier.md). Programs the
/// verifier accepts both fuse and refuse to fuse triples, so the generator reaches both.
#[test]
fn plain_adds_compute_what_the_program_computes() {
    use crate::{Addend, PlainAdd};
    let count: u64 = std::env::var("BPF2PTX_PLAIN_ADD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500);
    let mut rng = Rng(0x91a1_7ad0_c0de);
    let (mut accepted, mut plain) = (0u64, 0u64);
    // Fused triples: 4-byte and 8-byte ones, with a constant and with a register addend.
    let mut fused = [[0u64; 2]; 2];
    for n in 0..count {
        let lines = counter_program(&mut rng);
        let text = |lines: &[String]| format!(".map .data array 4 64 1\n{}\n", lines.join("\n"));
        let original = text(&lines);
        let mut obj = bpf2ptx_compiler::front::load_bytes("counter.s", original.as_bytes())
            .unwrap_or_else(|e| panic!("program {n} does not assemble: {e}\n{original}"));
        let Ok(facts) = crate::verify(&obj, 0, &Entry::conformance(MEM)) else {
            continue;
        };
        accepted += 1;
        let insn_lines: Vec<usize> = (0..lines.len())
            .filter(|&k| !lines[k].ends_with(':'))
            .collect();
        assert_eq!(insn_lines.len(), obj.programs[0].insns.len(), "{original}");
        let mut rewritten = lines.clone();
        for (i, fact) in facts.plain_add.iter().enumerate() {
            let ins = obj.programs[0].insns[i];
            let line = &mut rewritten[insn_lines[i]];
            match fact {
                None => continue,
                Some(PlainAdd::Load) => *line = "r9 = r9".into(),
                Some(PlainAdd::Add) => *line = "r9 = r9".into(),
                Some(PlainAdd::Store { addend, .. }) => {
                    let Kind::Stx(size) = ins.kind() else {
                        panic!("program {n}: plain_add store at insn {i} is {ins}")
                    };
                    let ty = size_name(u64::from(size.bytes()));
                    fused[usize::from(size == Size::DW)]
                        [usize::from(matches!(addend, Addend::Reg(_)))] += 1;
                    let reg = match addend {
                        Addend::Const(c) => {
                            // The add before this store is a no-op now: r9 gets c there.
                            let add = facts.plain_add[..i]
                                .iter()
                                .rposition(|f| *f == Some(PlainAdd::Add))
                                .expect("an add before the store");
                            rewritten[insn_lines[add]] = format!("r9 = {c:#x} ll");
                            9
                        }
                        Addend::Reg(r) => *r,
                    };
                    let line = &mut rewritten[insn_lines[i]];
                    *line = format!("lock *({ty} *)(r{} {:+}) += r{reg}", ins.dst, ins.off);
                }
            }
        }
        let stores = lines.iter().filter(|l| l.starts_with("*(")).count() - 4;
        let fused_here = facts
            .plain_add
            .iter()
            .filter(|f| matches!(f, Some(PlainAdd::Store { .. })))
            .count();
        plain += (stores - fused_here) as u64;
        let fused_text = text(&rewritten);
        let mut fused_obj = bpf2ptx_compiler::front::load_bytes("fused.s", fused_text.as_bytes())
            .unwrap_or_else(|e| {
                panic!("program {n}: the rewrite does not assemble: {e}\n{fused_text}")
            });
        for k in 0..8 {
            let data: Vec<u8> = (0..64).map(|_| rng.next() as u8).collect();
            let mem: Vec<u8> = (0..MEM)
                .map(|_| {
                    if k % 2 == 0 {
                        rng.next() as u8
                    } else {
                        rng.below(4) as u8
                    }
                })
                .collect();
            let run = |obj: &mut bpf2ptx_compiler::program::Object| {
                obj.maps[0].init = Some(data.clone());
                let mut it = interp::Interp::new(obj, Options::default());
                let mut m = mem.clone();
                let r0 = it.run(0, &mut m);
                (r0, m, it.global_data(0).map(<[u8]>::to_vec))
            };
            let (want, got) = (run(&mut obj), run(&mut fused_obj));
            assert!(want.0.is_ok(), "program {n}: {:?}\n{original}", want.0);
            assert_eq!(
                want, got,
                "program {n}: the fused program computes something else\n{original}\nfused:\n{fused_text}"
            );
        }
    }
    let total: u64 = fused.iter().flatten().sum();
    eprintln!(
        "{accepted} of {count} programs accepted: {total} triples fused \
         ([u32, u64] x [constant, register]: {fused:?}), {plain} stores left plain"
    );
    assert!(
        accepted * 2 > count && total * 5 > accepted && plain > total,
        "the generator needs tuning: {accepted} accepted, {fused:?} fused, {plain} plain"
    );
    assert!(
        fused.iter().flatten().all(|&k| k * 50 > total),
        "every form of fused triple needs runs: {fused:?}"
    );
}

/// Loops bounded by construction: for counts from memory (none, small, past the forms'
/// limits), every accepted program runs in the interpreter, as Linux defines the forms,
/// within its cost bound, with every access in bounds.
#[test]
fn loops_bounded_by_construction_run_within_their_cost() {
    let programs = [
        // bpf_loop: the callback writes byte (index & 7) of the caller's buffer.
        "r1 = *(u32 *)(r1 + 0)\nr2 = func(cb) ll\nr3 = r10\nr3 += -8\nr4 = 0\n\
         *(u64 *)(r10 - 8) = r4\ncall 181\nr0 = *(u64 *)(r10 - 8)\nexit\n\
         cb:\nr1 &= 7\nr2 += r1\nr3 = 1\n*(u8 *)(r2 + 0) = r3\nr0 = 0\nexit",
        // bpf_for(i, 0, n) summing i, with a break when the sum passes 1000.
        "r6 = *(u32 *)(r1 + 0)\nr1 = r10\nr1 += -8\nr2 = 0\nr3 = r6\n\
         call kfunc(bpf_iter_num_new)\nr7 = 0\nloop:\nr1 = r10\nr1 += -8\n\
         call kfunc(bpf_iter_num_next)\nif r0 == 0 goto out\nr2 = *(u32 *)(r0 + 0)\n\
         r7 += r2\nif r7 > 1000 goto out\ngoto loop\nout:\nr1 = r10\nr1 += -8\n\
         call kfunc(bpf_iter_num_destroy)\nr0 = r7\nexit",
        // may_goto: a loop to n, and one with no bound but the budget.
        "r6 = *(u32 *)(r1 + 0)\nr7 = 0\nloop:\nmay_goto out\nif r7 >= r6 goto out\n\
         r7 += 1\ngoto loop\nout:\nr0 = r7\nexit",
        "r7 = 0\nloop:\nmay_goto out\nr7 += 3\ngoto loop\nout:\nr0 = r7\nexit",
        // Nested: bpf_for inside a may_goto loop.
        "r6 = *(u32 *)(r1 + 0)\nr6 &= 15\nr8 = 0\nouter:\nmay_goto done\n\
         if r8 >= r6 goto done\nr1 = r10\nr1 += -8\nr2 = 0\nr3 = r8\n\
         call kfunc(bpf_iter_num_new)\ninner:\nr1 = r10\nr1 += -8\n\
         call kfunc(bpf_iter_num_next)\nif r0 == 0 goto next\ngoto inner\n\
         next:\nr1 = r10\nr1 += -8\ncall kfunc(bpf_iter_num_destroy)\nr8 += 1\n\
         goto outer\ndone:\nr0 = r8\nexit",
    ];
    for text in programs {
        let obj = bpf2ptx_compiler::front::load_bytes("t.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let facts = verify_with(&obj, 0, &Entry::conformance(8), &VerifyOptions::default())
            .unwrap_or_else(|e| panic!("{text}\n{}", e[0]));
        for n in [0u32, 1, 5, 100, 20_000, u32::MAX] {
            let mut mem = n.to_le_bytes().to_vec();
            mem.resize(8, 0);
            let opts = Options {
                budget: facts.cost_bound,
                ..Options::default()
            };
            if let Err(e) = interp::run(&obj, 0, &mut mem, &opts) {
                panic!("{text}\nn = {n}: {e} (cost bound {})", facts.cost_bound);
            }
        }
    }
}
