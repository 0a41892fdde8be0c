//! Random BPF programs for differential testing of the PTX backend against the reference
//! interpreter: straight-line code with forward branches over every ALU, byte-order,
//! memory, atomic and jump form, on registers, the stack (aligned and not, every size) and
//! the input memory. Every program is valid by construction (initialised registers,
//! in-bounds accesses, no loops) and ends by folding all registers and the memory into r0,
//! so any wrong bit anywhere shows up in the result.

use std::fmt::Write as _;

/// Size of the `-- mem` buffer the programs read and write through r1.
pub const MEM: usize = 64;

/// A small deterministic generator (xorshift64*), so a seed names a program.
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.bits() % n
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }

    /// An immediate biased towards the values that break code generators.
    fn imm(&mut self) -> i64 {
        match self.below(6) {
            0 => *self.pick(&[
                0,
                1,
                -1,
                2,
                31,
                32,
                63,
                64,
                i32::MIN as i64,
                i32::MAX as i64,
            ]),
            1 => self.below(16) as i64 - 8,
            _ => self.bits() as i32 as i64,
        }
    }
}

/// A random program in the kernel syntax, and its memory; `len` is roughly the number of
/// instructions before the final fold.
pub fn program(seed: u64, len: usize) -> (String, Vec<u8>) {
    let mut r = Rng::new(seed);
    let mut s = String::new();
    let mem: Vec<u8> = (0..MEM).map(|_| r.bits() as u8).collect();
    // r1 is the memory; keep it. r0, r2-r9 get random values.
    let _ = writeln!(s, "r6 = r1");
    for reg in [0, 2, 3, 4, 5, 7, 8, 9] {
        let _ = writeln!(s, "r{reg} = 0x{:x} ll", r.bits());
    }
    // The 64 stack bytes the program uses start defined (BPF forbids reading them otherwise).
    for k in 0..8 {
        let _ = writeln!(
            s,
            "*(u64 *)(r10 - {}) = r{}",
            (k + 1) * 8,
            [0, 2, 3, 4, 5, 7, 8, 9][k]
        );
    }
    let regs = [0u8, 2, 3, 4, 5, 7, 8, 9];
    let mut label = 0;
    let mut pending: Vec<(usize, String)> = Vec::new();
    for i in 0..len {
        // Close forward branches that end here.
        pending.retain(|(at, l)| {
            if *at == i {
                let _ = writeln!(s, "{l}:");
                false
            } else {
                true
            }
        });
        let d = *r.pick(&regs);
        let x = *r.pick(&regs);
        let w = if r.below(2) == 0 { "r" } else { "w" };
        let imm = r.imm();
        match r.below(13) {
            0..=3 => {
                let op = *r.pick(&[
                    "+=", "-=", "*=", "/=", "%=", "s/=", "s%=", "|=", "&=", "^=", "<<=", ">>=",
                    "s>>=", "=",
                ]);
                if r.below(2) == 0 {
                    let _ = writeln!(s, "{w}{d} {op} {w}{x}");
                } else {
                    let _ = writeln!(s, "{w}{d} {op} {imm}");
                }
            }
            4 => {
                let _ = match r.below(4) {
                    0 => writeln!(s, "{w}{d} = -{w}{d}"),
                    1 => writeln!(
                        s,
                        "r{d} = {}{} r{d}",
                        r.pick(&["le", "be", "bswap"]),
                        r.pick(&[16, 32, 64])
                    ),
                    2 if w == "w" => writeln!(s, "w{d} = (s{})w{x}", r.pick(&[8, 16])),
                    _ => writeln!(s, "r{d} = (s{})r{x}", r.pick(&[8, 16, 32])),
                };
            }
            5 | 6 => {
                // The stack: 64 bytes below r10, any size, aligned or not.
                let (size, ty) = *r.pick(&[(1, "u8"), (2, "u16"), (4, "u32"), (8, "u64")]);
                let off = -(r.below(64 - size + 1) as i64) - size as i64;
                let off = if r.below(3) == 0 {
                    off
                } else {
                    off & !(size as i64 - 1)
                };
                let _ = match r.below(4) {
                    0 => writeln!(s, "*({ty} *)(r10 {off:+}) = r{x}"),
                    1 => writeln!(s, "*({ty} *)(r10 {off:+}) = {imm}"),
                    2 if size < 8 => writeln!(s, "r{d} = *(s{} *)(r10 {off:+})", size * 8),
                    _ => writeln!(s, "r{d} = *({ty} *)(r10 {off:+})"),
                };
            }
            7 | 8 => {
                // The input memory through r6, any size, aligned or not.
                let (size, ty) = *r.pick(&[(1, "u8"), (2, "u16"), (4, "u32"), (8, "u64")]);
                let off = r.below((MEM - size + 1) as u64) as i64;
                let off = if r.below(3) == 0 {
                    off
                } else {
                    off & !(size as i64 - 1)
                };
                let _ = match r.below(4) {
                    0 => writeln!(s, "*({ty} *)(r6 {off:+}) = r{x}"),
                    1 => writeln!(s, "*({ty} *)(r6 {off:+}) = {imm}"),
                    2 if size < 8 => writeln!(s, "r{d} = *(s{} *)(r6 {off:+})", size * 8),
                    _ => writeln!(s, "r{d} = *({ty} *)(r6 {off:+})"),
                };
            }
            9 => {
                // Atomics, naturally aligned, on the stack or the memory.
                let wide = r.below(2) == 0;
                let (size, ty, reg) = if wide {
                    (8, "u64", "r")
                } else {
                    (4, "u32", "w")
                };
                let (base, off) = if r.below(2) == 0 {
                    (
                        "r10",
                        -((r.below(8) as i64 + 1) * 8)
                            + if wide { 0 } else { 4 * r.below(2) as i64 },
                    )
                } else {
                    ("r6", (r.below((MEM / size) as u64) * size as u64) as i64)
                };
                let _ = match r.below(7) {
                    0 => writeln!(
                        s,
                        "lock *({ty} *)({base} {off:+}) {} {reg}{x}",
                        r.pick(&["+=", "|=", "&=", "^="])
                    ),
                    1..=3 => writeln!(
                        s,
                        "{reg}{x} = atomic_fetch_{}(({ty} *)({base} {off:+}), {reg}{x})",
                        r.pick(&["add", "or", "and", "xor"])
                    ),
                    4 => writeln!(
                        s,
                        "{reg}{x} = {}({base} {off:+}, {reg}{x})",
                        if wide { "xchg_64" } else { "xchg32_32" }
                    ),
                    _ => writeln!(
                        s,
                        "{reg}0 = {}({base} {off:+}, {reg}0, {reg}{x})",
                        if wide { "cmpxchg_64" } else { "cmpxchg32_32" }
                    ),
                };
            }
            _ => {
                // A forward branch over the next few instructions.
                let cond = *r.pick(&[
                    "==", "!=", ">", ">=", "<", "<=", "s>", "s>=", "s<", "s<=", "&",
                ]);
                let l = format!("L{label}");
                label += 1;
                let rhs = if r.below(2) == 0 {
                    format!("{w}{x}")
                } else {
                    imm.to_string()
                };
                let _ = writeln!(s, "if {w}{d} {cond} {rhs} goto {l}");
                pending.push(((i + 1 + r.below(6) as usize).min(len), l));
            }
        }
    }
    for (_, l) in pending {
        let _ = writeln!(s, "{l}:");
    }
    // Fold every register, the memory and the stack into r0 (FNV-style, so order counts).
    let _ = writeln!(s, "r1 = 0x100000001b3 ll");
    for reg in [2, 3, 4, 5, 7, 8, 9] {
        let _ = writeln!(s, "r0 *= r1\nr0 ^= r{reg}");
    }
    for k in 0..MEM / 8 {
        let _ = writeln!(s, "r2 = *(u64 *)(r6 + {})\nr0 *= r1\nr0 ^= r2", k * 8);
    }
    for k in 0..8 {
        let _ = writeln!(
            s,
            "r2 = *(u64 *)(r10 - {})\nr0 *= r1\nr0 ^= r2",
            (k + 1) * 8
        );
    }
    let _ = writeln!(s, "exit");
    (s, mem)
}
