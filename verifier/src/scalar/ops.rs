//! The ALU transfer functions: [`Scalar::alu`] and the unary operations (`neg`, `endian`,
//! `movsx`), with shifts joined over the possible counts and the unsigned and signed
//! division and modulo cases.

use bpf2ptx_compiler::isa::table::{AluOp, Order, Width};

use super::interval::{iv_mul, iv_op, smax_of, smin_of, sview, Iv};
use super::tnum::Tnum;
use super::Scalar;

/// The known bits of the ops whose low result bits depend only on the operands' low bits.
fn tnum_op(op: AluOp, a: Tnum, b: Tnum) -> Tnum {
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::And => a.and(b),
        AluOp::Or => a.or(b),
        _ => a.xor(b),
    }
}

impl Scalar {
    /// The low 32 bits, zero-extended (what every 32-bit ALU operation does to its result).
    fn zext32(&self) -> Scalar {
        let s = self.norm();
        let iv = s.iv32();
        let iv64 = Iv {
            umin: iv.umin,
            umax: iv.umax,
            smin: iv.umin as i64,
            smax: iv.umax as i64,
        };
        Scalar::from_parts(s.bits.trunc32(), iv64, iv).norm()
    }

    /// The low 32 bits, sign-extended: the operand of a 32-bit signed operation computed
    /// at 64 bits.
    fn sext32(&self) -> Scalar {
        let iv = self.iv32();
        let iv64 = Iv {
            umin: 0,
            umax: u64::MAX,
            smin: iv.smin,
            smax: iv.smax,
        };
        Scalar::from_parts(self.bits.sext(32), iv64, iv).norm()
    }

    /// `dst op src` at width `w` with the exact BPF semantics (RFC 9669): a 32-bit
    /// operation works on the low halves and zero-extends its result; shift counts are
    /// masked to the width; unsigned division by zero gives 0 and modulo by zero leaves the
    /// dividend, and likewise for the signed forms; `MIN s/ -1 == MIN`, `MIN s% -1 == 0`.
    pub fn alu(op: AluOp, w: Width, dst: &Scalar, src: &Scalar) -> Scalar {
        match (w, op) {
            (Width::W64, AluOp::Mov) => *src,
            (Width::W32, AluOp::Mov) => src.zext32(),
            (_, AluOp::Lsh | AluOp::Rsh | AluOp::Arsh) => shift(op, w, dst, src),
            (Width::W64, AluOp::Div) => udiv(dst, src),
            (Width::W64, AluOp::Mod) => umod(dst, src),
            (Width::W64, AluOp::SDiv) => sdiv(dst, src),
            (Width::W64, AluOp::SMod) => smod(dst, src),
            (Width::W32, AluOp::Div) => udiv(&dst.zext32(), &src.zext32()).zext32(),
            (Width::W32, AluOp::Mod) => umod(&dst.zext32(), &src.zext32()).zext32(),
            (Width::W32, AluOp::SDiv) => sdiv(&dst.sext32(), &src.sext32()).zext32(),
            (Width::W32, AluOp::SMod) => smod(&dst.sext32(), &src.sext32()).zext32(),
            (Width::W64, _) => {
                let t = tnum_op(op, dst.bits, src.bits);
                let iv64 = iv_op(op, dst.iv64(), src.iv64(), 64);
                // The low half of a 64-bit add/sub/mul/and/or/xor is the same operation on the
                // low halves.
                let iv32 = iv_op(op, dst.iv32(), src.iv32(), 32);
                Scalar::from_parts(t, iv64, iv32).norm()
            }
            (Width::W32, _) => {
                let t = tnum_op(op, dst.bits.trunc32(), src.bits.trunc32());
                zext_parts(t.trunc32(), iv_op(op, dst.iv32(), src.iv32(), 32))
            }
        }
    }

    /// `-x` at width `w` (wrapping: the negation of the minimum is itself).
    pub fn neg(&self, w: Width) -> Scalar {
        Scalar::alu(AluOp::Sub, w, &Scalar::constant(0), self)
    }

    /// A byte-order conversion of `bits` (16, 32 or 64) bits: `le` truncates (this is a
    /// little-endian target), `be` and `bswap` reverse the bytes of the truncated value.
    /// Byte reversal permutes known bits exactly; the ranges follow from the tnum.
    pub fn endian(&self, order: Order, bits: u8) -> Scalar {
        let t = self.bits;
        match (order, bits) {
            (Order::Le, 16) => Scalar::alu(AluOp::And, Width::W64, self, &Scalar::constant(0xffff)),
            (Order::Le, 32) => self.zext32(),
            (Order::Le, _) => *self,
            (_, 16) => Scalar::from_tnum(Tnum {
                value: (t.value as u16).swap_bytes().into(),
                mask: (t.mask as u16).swap_bytes().into(),
            }),
            (_, 32) => Scalar::from_tnum(Tnum {
                value: (t.value as u32).swap_bytes().into(),
                mask: (t.mask as u32).swap_bytes().into(),
            }),
            _ => Scalar::from_tnum(Tnum {
                value: t.value.swap_bytes(),
                mask: t.mask.swap_bytes(),
            }),
        }
    }

    /// `(sN) x` for `bits` = 8, 16 or 32 (cpu v4 `movsx`), zero-extended from 32 bits when
    /// `w` is 32-bit.
    pub fn movsx(&self, w: Width, bits: u8) -> Scalar {
        let r = self.sext_low(u32::from(bits));
        match w {
            Width::W64 => r,
            Width::W32 => r.zext32(),
        }
    }

    /// The low `bits` bits sign-extended to 64.
    fn sext_low(&self, bits: u32) -> Scalar {
        if !(1..32).contains(&bits) {
            return if bits == 32 { self.sext32() } else { *self };
        }
        let (lo_b, hi_b) = (smin_of(bits), smax_of(bits));
        let (mut lo, mut hi) = (lo_b, hi_b);
        if i64::from(self.s32min) >= lo_b && i64::from(self.s32max) <= hi_b {
            // The low 32 bits already are a sign-extended `bits`-bit number.
            (lo, hi) = (self.s32min.into(), self.s32max.into());
        } else if self.u32min >> bits == self.u32max >> bits {
            // One 2^bits block: the low bits range is monotone; keep it if it is on one side
            // of the sign.
            let (l, h) = (
                sview(self.u32min.into(), bits),
                sview(self.u32max.into(), bits),
            );
            if l <= h {
                (lo, hi) = (l, h);
            }
        }
        Scalar {
            bits: self.bits.sext(bits),
            smin: lo,
            smax: hi,
            ..Scalar::unknown()
        }
        .norm()
    }

    pub(super) fn from_tnum(bits: Tnum) -> Scalar {
        Scalar {
            bits,
            ..Scalar::unknown()
        }
        .norm()
    }
}

/// The zero-extension of a 32-bit result given by its tnum (high half zero) and ranges.
fn zext_parts(t: Tnum, iv: Iv) -> Scalar {
    let iv64 = Iv {
        umin: iv.umin,
        umax: iv.umax,
        smin: iv.umin as i64,
        smax: iv.umax as i64,
    };
    Scalar::from_parts(t, iv64, iv).norm()
}

/// The counts a shift by `b` may use at width `bits` (bit k set: count k possible).
fn shift_counts(b: &Scalar, bits: u32) -> u64 {
    let m = u64::from(bits - 1);
    let mut set = 0;
    for k in 0..=m {
        let ok = (k ^ b.bits.value) & !b.bits.mask & m == 0
            && (b.umax > m || b.contains(k))
            && (u64::from(b.u32max) > m || (b.u32min..=b.u32max).contains(&(k as u32)));
        if ok {
            set |= 1 << k;
        }
    }
    set
}

/// A shift by a register: the join of the shifts by each possible count.
fn shift(op: AluOp, w: Width, a: &Scalar, b: &Scalar) -> Scalar {
    let bits = match w {
        Width::W64 => 64,
        Width::W32 => 32,
    };
    let counts = shift_counts(b, bits);
    if counts == 0 {
        return Scalar::unknown();
    }
    let (sa, za) = match (w, op) {
        (Width::W32, AluOp::Arsh) => (a.sext32(), *a),
        (Width::W32, AluOp::Rsh) => (a.zext32(), *a),
        _ => (*a, *a),
    };
    let mut acc: Option<Scalar> = None;
    for k in (0..bits).filter(|k| counts >> k & 1 != 0) {
        let r = match (w, op) {
            (Width::W64, AluOp::Lsh) => lsh64(a, k),
            (Width::W32, AluOp::Lsh) => {
                let t = za.bits.trunc32().lsh(k).trunc32();
                zext_parts(t, iv_mul(za.iv32(), Iv::constant(1 << k, 32), 32))
            }
            (Width::W64, AluOp::Rsh) => rsh64(a, k),
            (Width::W32, AluOp::Rsh) => rsh64(&sa, k).zext32(),
            (Width::W64, _) => arsh64(a, k),
            (Width::W32, _) => arsh64(&sa, k).zext32(),
        };
        acc = Some(acc.map_or(r, |x| x.hull(&r)));
    }
    acc.map_or_else(Scalar::unknown, Scalar::norm)
}

/// `x << k` is `x * 2^k` modulo the width, for both range views and both halves.
fn lsh64(a: &Scalar, k: u32) -> Scalar {
    let mut iv64 = iv_mul(a.iv64(), Iv::constant(1 << k, 64), 64);
    if k >= 32 {
        // Only the low half survives, so its ranges (a congruent representative) bound the
        // result too: `x << 32` is exactly `(s32)x * 2^32` (the `<<32 s>>32` sign-extension
        // idiom relies on this).
        let lo = Iv {
            umin: a.u32min.into(),
            umax: a.u32max.into(),
            smin: a.s32min.into(),
            smax: a.s32max.into(),
        };
        iv64 = iv64.meet(iv_mul(lo, Iv::constant(1 << k, 64), 64));
    }
    let iv32 = iv_mul(
        a.iv32(),
        Iv::constant(if k < 32 { 1 << k } else { 0 }, 32),
        32,
    );
    Scalar::from_parts(a.bits.lsh(k), iv64, iv32).norm()
}

fn rsh64(a: &Scalar, k: u32) -> Scalar {
    let mut iv = Iv::full(64);
    (iv.umin, iv.umax) = (a.umin >> k, a.umax >> k);
    if k == 0 || a.smin >= 0 {
        (iv.smin, iv.smax) = (a.smin >> k, a.smax >> k);
    }
    Scalar::from_parts(a.bits.rsh(k), iv, Iv::full(32)).norm()
}

fn arsh64(a: &Scalar, k: u32) -> Scalar {
    let mut iv = Iv::full(64);
    (iv.smin, iv.smax) = (a.smin >> k, a.smax >> k);
    Scalar::from_parts(a.bits.arsh(k), iv, Iv::full(32)).norm()
}

fn udiv(a: &Scalar, b: &Scalar) -> Scalar {
    if let Some(c) = b.as_const() {
        if c == 0 {
            return Scalar::constant(0);
        }
        if c.is_power_of_two() {
            return rsh64(a, c.trailing_zeros());
        }
    }
    if b.umax == 0 {
        return Scalar::constant(0);
    }
    // b == 0 gives 0; otherwise the quotient is monotone in both operands.
    let lo = if b.umin == 0 { 0 } else { a.umin / b.umax };
    Scalar::range_u64(lo, a.umax / b.umin.max(1))
}

fn umod(a: &Scalar, b: &Scalar) -> Scalar {
    if let Some(c) = b.as_const() {
        if c == 0 {
            return *a;
        }
        if c.is_power_of_two() {
            return Scalar::alu(AluOp::And, Width::W64, a, &Scalar::constant(c - 1));
        }
    }
    if b.umax == 0 || a.umax < b.umin {
        return *a;
    }
    let r = Scalar::range_u64(0, a.umax.min(b.umax - 1));
    if b.umin == 0 {
        r.join(a)
    } else {
        r
    }
}

/// Joins the results of the divisor's cases: 0, -1, and the negative and positive
/// divisors, over which the truncated quotient takes its extremes at the corners.
fn sdiv(a: &Scalar, b: &Scalar) -> Scalar {
    if a.smin >= 0 && b.smin >= 1 {
        return udiv(a, b);
    }
    let mut acc: Option<Scalar> = None;
    let mut add = |s: Scalar| acc = Some(acc.map_or(s, |x| x.join(&s)));
    if b.contains(0) {
        add(Scalar::constant(0));
    }
    if b.contains(u64::MAX) {
        add(a.neg(Width::W64));
    }
    let corners = |d1: i64, d2: i64| {
        let q = [(a.smin, d1), (a.smin, d2), (a.smax, d1), (a.smax, d2)]
            .map(|(x, d)| x as i128 / d as i128);
        let (lo, hi) = (
            q.iter().min().copied().unwrap_or(0),
            q.iter().max().copied().unwrap_or(0),
        );
        Scalar::range_i64(lo as i64, hi as i64)
    };
    if b.smax >= 1 {
        add(corners(b.smin.max(1), b.smax));
    }
    if b.smin <= -2 {
        add(corners(b.smin, b.smax.min(-2)));
    }
    acc.unwrap_or_else(Scalar::unknown)
}

/// The remainder has the dividend's sign and is smaller in magnitude than both the
/// dividend (or equal) and the divisor.
fn smod(a: &Scalar, b: &Scalar) -> Scalar {
    if a.smin >= 0 && b.smin >= 1 {
        return umod(a, b);
    }
    let mut acc: Option<Scalar> = None;
    let mut add = |s: Scalar| acc = Some(acc.map_or(s, |x| x.join(&s)));
    if b.contains(0) {
        add(*a);
    }
    if b.contains(u64::MAX) {
        add(Scalar::constant(0));
    }
    if b.smin < -1 || b.smax > 0 {
        let m = (b.smin as i128).abs().max((b.smax as i128).abs()) - 1;
        let lo = if a.smin >= 0 {
            0
        } else {
            (a.smin as i128).max(-m)
        };
        let hi = if a.smax <= 0 {
            0
        } else {
            (a.smax as i128).min(m)
        };
        add(Scalar::range_i64(lo as i64, hi as i64));
    }
    acc.unwrap_or_else(Scalar::unknown)
}
