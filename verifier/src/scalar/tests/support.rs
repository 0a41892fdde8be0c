//! Test support for the scalar unit tests: the concrete BPF semantics (RFC 9669), written
//! independently of the domain, and random abstract values with known members.

use super::*;

pub(super) const OPS: [AluOp; 14] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Div,
    AluOp::SDiv,
    AluOp::Or,
    AluOp::And,
    AluOp::Lsh,
    AluOp::Rsh,
    AluOp::Mod,
    AluOp::SMod,
    AluOp::Xor,
    AluOp::Mov,
    AluOp::Arsh,
];
pub(super) const CONDS: [Cond; 11] = [
    Cond::Eq,
    Cond::Ne,
    Cond::Gt,
    Cond::Ge,
    Cond::Lt,
    Cond::Le,
    Cond::Sgt,
    Cond::Sge,
    Cond::Slt,
    Cond::Sle,
    Cond::Set,
];
pub(super) const WIDTHS: [Width; 2] = [Width::W64, Width::W32];

// ---- the concrete semantics (RFC 9669), written independently of the domain ----

fn c_alu64(op: AluOp, a: u64, b: u64) -> u64 {
    let (sa, sb) = (a as i64, b as i64);
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Div => a.checked_div(b).unwrap_or(0),
        AluOp::Mod => a.checked_rem(b).unwrap_or(a),
        AluOp::SDiv if sb == 0 => 0,
        AluOp::SDiv => sa.wrapping_div(sb) as u64,
        AluOp::SMod if sb == 0 => a,
        AluOp::SMod => sa.wrapping_rem(sb) as u64,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Xor => a ^ b,
        AluOp::Lsh => a << (b & 63),
        AluOp::Rsh => a >> (b & 63),
        AluOp::Arsh => (sa >> (b & 63)) as u64,
        AluOp::Mov => b,
    }
}

fn c_alu32(op: AluOp, a: u32, b: u32) -> u32 {
    let (sa, sb) = (a as i32, b as i32);
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Div => a.checked_div(b).unwrap_or(0),
        AluOp::Mod => a.checked_rem(b).unwrap_or(a),
        AluOp::SDiv if sb == 0 => 0,
        AluOp::SDiv => sa.wrapping_div(sb) as u32,
        AluOp::SMod if sb == 0 => a,
        AluOp::SMod => sa.wrapping_rem(sb) as u32,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Xor => a ^ b,
        AluOp::Lsh => a << (b & 31),
        AluOp::Rsh => a >> (b & 31),
        AluOp::Arsh => (sa >> (b & 31)) as u32,
        AluOp::Mov => b,
    }
}

pub(super) fn c_alu(op: AluOp, w: Width, a: u64, b: u64) -> u64 {
    match w {
        Width::W64 => c_alu64(op, a, b),
        Width::W32 => c_alu32(op, a as u32, b as u32).into(),
    }
}

pub(super) fn c_cond(c: Cond, w: Width, a: u64, b: u64) -> bool {
    let (a, b, sa, sb) = match w {
        Width::W64 => (a, b, a as i64, b as i64),
        Width::W32 => (
            (a as u32).into(),
            (b as u32).into(),
            (a as i32).into(),
            (b as i32).into(),
        ),
    };
    match c {
        Cond::Eq => a == b,
        Cond::Ne => a != b,
        Cond::Gt => a > b,
        Cond::Ge => a >= b,
        Cond::Lt => a < b,
        Cond::Le => a <= b,
        Cond::Sgt => sa > sb,
        Cond::Sge => sa >= sb,
        Cond::Slt => sa < sb,
        Cond::Sle => sa <= sb,
        Cond::Set => a & b != 0,
    }
}

pub(super) fn c_endian(o: Order, bits: u8, v: u64) -> u64 {
    match (o, bits) {
        (Order::Le, 16) => v & 0xffff,
        (Order::Le, 32) => v & 0xffff_ffff,
        (Order::Le, _) => v,
        (_, 16) => (v as u16).swap_bytes().into(),
        (_, 32) => (v as u32).swap_bytes().into(),
        _ => v.swap_bytes(),
    }
}

pub(super) fn c_movsx(w: Width, bits: u8, v: u64) -> u64 {
    let x = match bits {
        8 => v as i8 as i64 as u64,
        16 => v as i16 as i64 as u64,
        _ => v as i32 as i64 as u64,
    };
    match w {
        Width::W64 => x,
        Width::W32 => x & 0xffff_ffff,
    }
}

pub(super) fn c_neg(w: Width, v: u64) -> u64 {
    match w {
        Width::W64 => v.wrapping_neg(),
        Width::W32 => (v as u32).wrapping_neg().into(),
    }
}

// ---- random abstract values with known members ----

pub(super) struct Rng(u64);

impl Rng {
    /// `BPF2PTX_SCALAR_SEED` varies every test's stream (the default is fixed, so a
    /// failure reproduces).
    pub(super) fn new(seed: u64) -> Rng {
        let extra = std::env::var("BPF2PTX_SCALAR_SEED")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
        Rng((seed ^ extra.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    pub(super) fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub(super) fn coin(&mut self) -> bool {
        self.next() & 1 != 0
    }

    /// Values near the places where domains go wrong: 0, the signed and unsigned
    /// limits of both widths, small negatives, powers of two.
    pub(super) fn value(&mut self) -> u64 {
        let near = |r: &mut Rng, base: u64| base.wrapping_add(r.below(9)).wrapping_sub(4);
        match self.below(9) {
            0 => self.below(20),
            1 => near(self, 0),
            2 => {
                let bases = [
                    1 << 7,
                    1 << 8,
                    1 << 15,
                    1 << 16,
                    1 << 31,
                    1 << 32,
                    1 << 63,
                    0,
                ];
                let b = bases[self.below(bases.len() as u64) as usize];
                near(self, b)
            }
            3 => self.next(),
            4 => self.next() >> self.below(64),
            5 => (self.next() >> self.below(64)).wrapping_neg(),
            6 => self.next() & 0xffff_ffff,
            7 => self.next() as i32 as i64 as u64,
            _ => 1 << self.below(64),
        }
    }

    fn slack(&mut self) -> u64 {
        match self.below(4) {
            0 => 0,
            1 => self.below(16),
            2 => self.below(1 << 16),
            _ => self.next() >> self.below(64),
        }
    }

    pub(super) fn mask(&mut self) -> u64 {
        match self.below(6) {
            0 => 0,
            1 => (1u64 << self.below(64)).wrapping_sub(1),
            2 => self.next() & self.next() & self.next(),
            3 => self.next(),
            4 => !((1u64 << self.below(64)).wrapping_sub(1)),
            _ => u64::MAX,
        }
    }

    pub(super) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// `BPF2PTX_SCALAR_ITERS=k` runs k times as many random cases.
pub(super) fn iters(base: usize) -> usize {
    let k = std::env::var("BPF2PTX_SCALAR_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    base * k
}

/// A random abstract value and one value known to be in it.
pub(super) fn gen(r: &mut Rng, depth: u32) -> (Scalar, u64) {
    let kinds = if depth == 0 { 6 } else { 10 };
    match r.below(kinds) {
        0 => {
            let v = r.value();
            (Scalar::constant(v), v)
        }
        1 => {
            let v = r.value();
            let (lo, hi) = (v.saturating_sub(r.slack()), v.saturating_add(r.slack()));
            (Scalar::range_u64(lo, hi), v)
        }
        2 => {
            let v = r.value();
            let (lo, hi) = (
                (v as i64).saturating_sub(r.slack() as i64),
                (v as i64).saturating_add(r.slack() as i64),
            );
            (Scalar::range_i64(lo.min(v as i64), hi.max(v as i64)), v)
        }
        3 => {
            let v = r.value();
            let m = r.mask();
            (
                Scalar::from_tnum(Tnum {
                    value: v & !m,
                    mask: m,
                }),
                v,
            )
        }
        4 => {
            let v = r.value();
            let mut s = raw_around(r, v, false);
            assert!(s.normalize(), "normalize lost {v:#x}");
            assert!(s.contains(v), "normalize lost {v:#x}: {s:?}");
            (s, v)
        }
        5 => {
            let size = r.pick(&[1u32, 2, 4, 8]);
            let signed = r.coin();
            let raw = r.value();
            let v = match (size, signed) {
                (8, _) => raw,
                (n, false) => raw & umax_of(n * 8),
                (n, true) => sview(raw, n * 8) as u64,
            };
            let s = Scalar::loaded(size, signed);
            assert!(s.contains(v), "loaded({size}, {signed}) = {s} lacks {v:#x}");
            (s, v)
        }
        6 => {
            let ((a, x), (b, y)) = (gen(r, depth - 1), gen(r, depth - 1));
            let (op, w) = (r.pick(&OPS), r.pick(&WIDTHS));
            let s = Scalar::alu(op, w, &a, &b);
            let v = c_alu(op, w, x, y);
            assert!(
                s.contains(v),
                "{op:?} {w:?}: {a} ({x:#x}), {b} ({y:#x}) -> {s} lacks {v:#x}"
            );
            (s, v)
        }
        7 => {
            let ((a, x), (b, y)) = (gen(r, depth - 1), gen(r, depth - 1));
            (a.join(&b), if r.coin() { x } else { y })
        }
        8 => {
            let ((a, x), (b, y)) = (gen(r, depth - 1), gen(r, depth - 1));
            let (c, w) = (r.pick(&CONDS), r.pick(&WIDTHS));
            let taken = c_cond(c, w, x, y);
            let (a2, b2) = Scalar::refine(c, w, &a, &b, taken).unwrap_or_else(|| {
                panic!("{c:?} {w:?} {taken}: {a} ({x:#x}), {b} ({y:#x}) infeasible")
            });
            if r.coin() {
                (a2, x)
            } else {
                (b2, y)
            }
        }
        _ => {
            let (a, x) = gen(r, depth - 1);
            let w = r.pick(&WIDTHS);
            match r.below(3) {
                0 => (a.neg(w), c_neg(w, x)),
                1 => {
                    let (o, bits) = (
                        r.pick(&[Order::Le, Order::Be, Order::Swap]),
                        r.pick(&[16u8, 32, 64]),
                    );
                    (a.endian(o, bits), c_endian(o, bits, x))
                }
                _ => {
                    let bits = r.pick(&[8u8, 16, 32]);
                    (a.movsx(w, bits), c_movsx(w, bits, x))
                }
            }
        }
    }
}

/// Nine views, each either unconstrained, around `v`, or between random values (which
/// may miss `v` only when `wild`; the tnum always holds `v`).
pub(super) fn raw_around(r: &mut Rng, v: u64, wild: bool) -> Scalar {
    let mut s = Scalar::unknown();
    let pick = |r: &mut Rng, center: i128, lo: i128, hi: i128| -> (i128, i128) {
        match r.below(4) {
            0 => (lo, hi),
            1 => {
                let a = (r.value() as i128).clamp(lo, hi);
                let b = (r.value() as i128).clamp(lo, hi);
                if wild {
                    (a.min(b), a.max(b))
                } else {
                    (a.min(b).min(center), a.max(b).max(center))
                }
            }
            _ => (
                (center - r.slack() as i128).max(lo),
                (center + r.slack() as i128).min(hi),
            ),
        }
    };
    let (a, b) = pick(r, v as i128, 0, u64::MAX as i128);
    (s.umin, s.umax) = (a as u64, b as u64);
    let (a, b) = pick(r, v as i64 as i128, i64::MIN as i128, i64::MAX as i128);
    (s.smin, s.smax) = (a as i64, b as i64);
    let (a, b) = pick(r, v as u32 as i128, 0, u32::MAX as i128);
    (s.u32min, s.u32max) = (a as u32, b as u32);
    let (a, b) = pick(r, v as i32 as i128, i32::MIN as i128, i32::MAX as i128);
    (s.s32min, s.s32max) = (a as i32, b as i32);
    let m = r.mask();
    s.bits = Tnum {
        value: v & !m,
        mask: m,
    };
    s
}

/// Up to `n` members of `s`: the witness, the ends of each view that are members, and
/// random tnum members and range members that pass `contains`.
pub(super) fn members(r: &mut Rng, s: &Scalar, witness: u64, n: usize) -> Vec<u64> {
    let mut out = vec![witness];
    let hi = witness & !LO32;
    let ends = [
        s.umin,
        s.umax,
        s.smin as u64,
        s.smax as u64,
        s.bits.value,
        s.bits.value | s.bits.mask,
        hi | u64::from(s.u32min),
        hi | u64::from(s.u32max),
        hi | u64::from(s.s32min as u32),
        hi | u64::from(s.s32max as u32),
    ];
    for c in ends {
        if out.len() < n && s.contains(c) && !out.contains(&c) {
            out.push(c);
        }
    }
    for _ in 0..40 {
        if out.len() >= n {
            break;
        }
        let c = match r.below(4) {
            0 => s.bits.value | (r.next() & s.bits.mask),
            1 => s
                .umin
                .wrapping_add(r.next() % (s.umax - s.umin).saturating_add(1).max(1)),
            2 => (s.smin as u64).wrapping_add(
                r.next()
                    % (s.smax.wrapping_sub(s.smin) as u64)
                        .saturating_add(1)
                        .max(1),
            ),
            _ => witness ^ (r.next() & r.mask()),
        };
        if s.contains(c) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}
