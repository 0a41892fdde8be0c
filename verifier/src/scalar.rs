//! Scalars: the abstract values the verifier tracks for registers that hold numbers (and
//! for the offsets of pointers).
//!
//! A [`Scalar`] stands for a set of 64-bit values. It is the intersection of nine views,
//! each of which alone is a sound description of the set:
//!
//! ```text
//!  bits (tnum)     known bits: value; unknown bits: mask      x & !mask == value
//!  umin..=umax     64-bit unsigned range                     umin <= x <= umax
//!  smin..=smax     64-bit signed range                       smin <= x as i64 <= smax
//!  u32min..=u32max low half, unsigned                        u32min <= x as u32 <= u32max
//!  s32min..=s32max low half, signed                          s32min <= x as i32 <= s32max
//! ```
//!
//! The set is exactly the values that satisfy all nine ([`Scalar::contains`]). The views
//! are redundant on purpose: a transfer function computes whichever views it can compute
//! precisely, leaves the others unknown, and [`Scalar::normalize`] then propagates
//! information between the views until they agree (tnum ↔ ranges, unsigned ↔ signed, 64 ↔
//! 32 bits), which also detects an empty set (an impossible branch).
//!
//! Contract: every operation is sound: the result contains every value the concrete BPF
//! operation (RFC 9669 semantics) can produce from members of the operands. Precision is
//! best effort; where a precise answer is hard the result widens, up to
//! [`Scalar::unknown`]. The test module checks soundness by evaluating every operation on
//! random concrete members of random abstract values.

use bpf2ptx_compiler::isa::table::{AluOp, Cond, Order, Width};
use std::fmt;

const SIGN: u64 = 1 << 63;
const LO32: u64 = 0xffff_ffff;
const SIGN32: u64 = 1 << 31;
const TWO32: i128 = 1 << 32;
const HALF32: i128 = 1 << 31;

/// A tristate number: each bit is known 0, known 1, or unknown.
///
/// It captures alignment and masking (`x & 0xff`, `x << 3`), which ranges cannot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tnum {
    /// The known bits' values (0 where unknown).
    pub value: u64,
    /// The unknown bits. Invariant: `value & mask == 0`.
    pub mask: u64,
}

impl Tnum {
    /// Every bit unknown.
    pub const UNKNOWN: Tnum = Tnum {
        value: 0,
        mask: u64::MAX,
    };

    /// Every bit known.
    pub const fn constant(v: u64) -> Tnum {
        Tnum { value: v, mask: 0 }
    }

    /// The smallest tnum containing `lo..=hi`: their common high bits are known.
    pub fn range(lo: u64, hi: u64) -> Tnum {
        let chi = lo ^ hi;
        let mask = if chi == 0 {
            0
        } else {
            u64::MAX >> chi.leading_zeros()
        };
        Tnum {
            value: lo & !mask,
            mask,
        }
    }

    /// Whether `v` matches the known bits.
    pub fn contains(self, v: u64) -> bool {
        v & !self.mask == self.value
    }

    /// Whether every member of `self` is a member of `other`.
    pub fn is_subset_of(self, other: Tnum) -> bool {
        self.mask & !other.mask == 0 && self.value & !other.mask == other.value
    }

    /// The values in both, or `None` when a bit is known differently in each.
    pub fn intersect(self, other: Tnum) -> Option<Tnum> {
        if (self.value ^ other.value) & !self.mask & !other.mask != 0 {
            return None;
        }
        let mask = self.mask & other.mask;
        Some(Tnum {
            value: (self.value | other.value) & !mask,
            mask,
        })
    }

    /// The smallest tnum containing both: a bit stays known only if both know it alike.
    pub fn union(self, other: Tnum) -> Tnum {
        let mask = self.mask | other.mask | (self.value ^ other.value);
        Tnum {
            value: self.value & !mask,
            mask,
        }
    }

    /// Wrapping addition. The sum of the minimal members and the sum of the maximal
    /// members differ exactly in the bits a carry may reach; those become unknown.
    pub fn wrapping_add(self, o: Tnum) -> Tnum {
        let lo = self.value.wrapping_add(o.value);
        let hi = lo.wrapping_add(self.mask).wrapping_add(o.mask);
        let mask = (lo ^ hi) | self.mask | o.mask;
        Tnum {
            value: lo & !mask,
            mask,
        }
    }

    /// Wrapping subtraction, the mirror image of [`Tnum::wrapping_add`] (borrows instead of carries).
    pub fn wrapping_sub(self, o: Tnum) -> Tnum {
        let d = self.value.wrapping_sub(o.value);
        let hi = d.wrapping_add(self.mask);
        let lo = d.wrapping_sub(o.mask);
        let mask = (lo ^ hi) | self.mask | o.mask;
        Tnum {
            value: d & !mask,
            mask,
        }
    }

    /// Wrapping multiplication as a sum of shifted partial products: a known 1 bit of
    /// `self` adds `o` shifted; an unknown bit adds either 0 or `o` shifted, both of which
    /// lie in "any subset of `o`'s possible bits".
    pub fn wrapping_mul(self, o: Tnum) -> Tnum {
        let (mut a, mut b) = (self, o);
        let mut acc = Tnum::constant(0);
        while a.value | a.mask != 0 {
            if a.value & 1 != 0 {
                acc = acc.wrapping_add(b);
            } else if a.mask & 1 != 0 {
                acc = acc.wrapping_add(Tnum {
                    value: 0,
                    mask: b.value | b.mask,
                });
            }
            a = a.rsh(1);
            b = b.lsh(1);
        }
        acc
    }

    /// Bitwise and.
    pub fn and(self, o: Tnum) -> Tnum {
        let value = self.value & o.value;
        let mask = (self.value | self.mask) & (o.value | o.mask) & !value;
        Tnum { value, mask }
    }

    /// Bitwise or.
    pub fn or(self, o: Tnum) -> Tnum {
        let value = self.value | o.value;
        Tnum {
            value,
            mask: (self.mask | o.mask) & !value,
        }
    }

    /// Bitwise xor.
    pub fn xor(self, o: Tnum) -> Tnum {
        let mask = self.mask | o.mask;
        Tnum {
            value: (self.value ^ o.value) & !mask,
            mask,
        }
    }

    /// Left shift by `k < 64`.
    pub fn lsh(self, k: u32) -> Tnum {
        Tnum {
            value: self.value << k,
            mask: self.mask << k,
        }
    }

    /// Logical right shift by `k < 64`.
    pub fn rsh(self, k: u32) -> Tnum {
        Tnum {
            value: self.value >> k,
            mask: self.mask >> k,
        }
    }

    /// Arithmetic right shift by `k < 64`: an unknown sign bit spreads as unknown bits.
    pub fn arsh(self, k: u32) -> Tnum {
        Tnum {
            value: ((self.value as i64) >> k) as u64,
            mask: ((self.mask as i64) >> k) as u64,
        }
    }

    /// The low 32 bits, zero-extended.
    fn trunc32(self) -> Tnum {
        Tnum {
            value: self.value & LO32,
            mask: self.mask & LO32,
        }
    }

    /// The low `bits` bits (1..=64), sign-extended.
    fn sext(self, bits: u32) -> Tnum {
        self.lsh(64 - bits).arsh(64 - bits)
    }

    /// The same tnum with the bits of `m` inverted (known bits flip, unknown stay unknown):
    /// maps the signed order onto the unsigned one when `m` is the sign bit.
    fn flip(self, m: u64) -> Tnum {
        Tnum {
            value: self.value ^ (m & !self.mask),
            mask: self.mask,
        }
    }

    /// The smallest member `>= x`, if any.
    fn min_ge(self, x: u64) -> Option<u64> {
        let diff = (x ^ self.value) & !self.mask;
        if diff == 0 {
            return Some(x);
        }
        // The highest bit where `x` disagrees with a known bit decides.
        let p = 63 - diff.leading_zeros();
        let above = if p == 63 { 0 } else { u64::MAX << (p + 1) };
        if self.value >> p & 1 != 0 {
            // The tnum has 1 where x has 0: keep x's higher bits, then the least member.
            return Some((x & above) | (1 << p) | (self.value & ((1 << p) - 1)));
        }
        // The tnum has 0 where x has 1: some higher unknown bit where x has 0 must become 1;
        // the lowest one gives the least member.
        let free = self.mask & !x & above;
        if free == 0 {
            return None;
        }
        let q = free.trailing_zeros();
        let above_q = if q == 63 { 0 } else { u64::MAX << (q + 1) };
        Some((x & above_q) | (1 << q) | (self.value & ((1 << q) - 1)))
    }

    /// The largest member `<= x`, if any (`min_ge` on the complements).
    fn max_le(self, x: u64) -> Option<u64> {
        let not = Tnum {
            value: !self.value & !self.mask,
            mask: self.mask,
        };
        not.min_ge(!x).map(|v| !v)
    }
}

/// A set of 64-bit values: the intersection of a tnum and four ranges (see the module
/// documentation). Fields may be read directly; build values with the constructors and
/// operations, which keep the views in agreement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Scalar {
    /// Known bits.
    pub bits: Tnum,
    /// Unsigned 64-bit minimum.
    pub umin: u64,
    /// Unsigned 64-bit maximum.
    pub umax: u64,
    /// Signed 64-bit minimum.
    pub smin: i64,
    /// Signed 64-bit maximum.
    pub smax: i64,
    /// Unsigned minimum of the low 32 bits.
    pub u32min: u32,
    /// Unsigned maximum of the low 32 bits.
    pub u32max: u32,
    /// Signed minimum of the low 32 bits.
    pub s32min: i32,
    /// Signed maximum of the low 32 bits.
    pub s32max: i32,
}

/// The unsigned and signed range of one width (64 or 32 bits; 32-bit bounds are stored
/// widened). Transfer functions for arithmetic are written once over this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Iv {
    umin: u64,
    umax: u64,
    smin: i64,
    smax: i64,
}

fn umax_of(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

fn smin_of(bits: u32) -> i64 {
    i64::MIN >> (64 - bits)
}

fn smax_of(bits: u32) -> i64 {
    i64::MAX >> (64 - bits)
}

/// The low `bits` bits of `v` read as a signed number.
fn sview(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

impl Iv {
    fn full(bits: u32) -> Iv {
        Iv {
            umin: 0,
            umax: umax_of(bits),
            smin: smin_of(bits),
            smax: smax_of(bits),
        }
    }

    fn constant(v: u64, bits: u32) -> Iv {
        let u = v & umax_of(bits);
        let s = sview(v, bits);
        Iv {
            umin: u,
            umax: u,
            smin: s,
            smax: s,
        }
    }

    /// Both constraints at once (may describe the empty set; `sync` detects that).
    fn meet(self, o: Iv) -> Iv {
        Iv {
            umin: self.umin.max(o.umin),
            umax: self.umax.min(o.umax),
            smin: self.smin.max(o.smin),
            smax: self.smax.min(o.smax),
        }
    }

    fn is_empty(self) -> bool {
        self.umin > self.umax || self.smin > self.smax
    }

    /// The constant this range pins down, if any.
    fn as_const(self) -> Option<u64> {
        (self.umin == self.umax).then_some(self.umin)
    }
}

/// The `bits`-bit ranges of `{x mod 2^bits : lo <= x <= hi}` for the exact (unwrapped)
/// interval `lo..=hi`: a view stays precise when the interval does not cross one of its
/// wrap points, and is full otherwise.
fn wrap(lo: i128, hi: i128, bits: u32) -> Iv {
    let n: i128 = 1 << bits;
    let half = n >> 1;
    let mut r = Iv::full(bits);
    // Callers pass sums and products of 64-bit values; beyond 2^126 (only unsigned
    // products get there) the view is full anyway, and the arithmetic below stays in range.
    let limit = 1i128 << 126;
    if -limit <= lo && hi <= limit && hi - lo < n {
        let (ql, qh) = (lo.div_euclid(n), hi.div_euclid(n));
        if ql == qh {
            r.umin = (lo - ql * n) as u64;
            r.umax = (hi - ql * n) as u64;
        }
        let (ql, qh) = ((lo + half).div_euclid(n), (hi + half).div_euclid(n));
        if ql == qh {
            r.smin = (lo - ql * n) as i64;
            r.smax = (hi - ql * n) as i64;
        }
    }
    r
}

/// `a + b` in `bits` bits: the sum of the unsigned ranges and the sum of the signed ranges
/// are both exact intervals before wrapping; each bounds both views of the result.
fn iv_add(a: Iv, b: Iv, bits: u32) -> Iv {
    let u = (
        a.umin as i128 + b.umin as i128,
        a.umax as i128 + b.umax as i128,
    );
    let s = (
        a.smin as i128 + b.smin as i128,
        a.smax as i128 + b.smax as i128,
    );
    wrap(u.0, u.1, bits).meet(wrap(s.0, s.1, bits))
}

fn iv_sub(a: Iv, b: Iv, bits: u32) -> Iv {
    let u = (
        a.umin as i128 - b.umax as i128,
        a.umax as i128 - b.umin as i128,
    );
    let s = (
        a.smin as i128 - b.smax as i128,
        a.smax as i128 - b.smin as i128,
    );
    wrap(u.0, u.1, bits).meet(wrap(s.0, s.1, bits))
}

fn iv_mul(a: Iv, b: Iv, bits: u32) -> Iv {
    let (lo, hi) = (
        a.umin as u128 * b.umin as u128,
        a.umax as u128 * b.umax as u128,
    );
    let u = if lo.max(hi) <= 1 << 126 {
        wrap(lo as i128, hi as i128, bits)
    } else {
        Iv::full(bits)
    };
    let c = [
        a.smin as i128 * b.smin as i128,
        a.smin as i128 * b.smax as i128,
        a.smax as i128 * b.smin as i128,
        a.smax as i128 * b.smax as i128,
    ];
    let (lo, hi) = (c.iter().min().copied(), c.iter().max().copied());
    u.meet(wrap(lo.unwrap_or(0), hi.unwrap_or(0), bits))
}

/// `a & b` is at most either operand (unsigned), non-negative if either is, and for two
/// negative operands negative and at most either.
fn iv_and(a: Iv, b: Iv, bits: u32) -> Iv {
    let mut r = Iv::full(bits);
    r.umax = a.umax.min(b.umax);
    if a.smin >= 0 || b.smin >= 0 {
        r.smin = 0;
        if a.smin >= 0 {
            r.smax = r.smax.min(a.smax);
        }
        if b.smin >= 0 {
            r.smax = r.smax.min(b.smax);
        }
    } else if a.smax < 0 && b.smax < 0 {
        r.smax = a.smax.min(b.smax);
    }
    r
}

/// `a | b` is at least either operand (unsigned); negative if either is (and then at least
/// that operand); non-negative and at least both if both are.
fn iv_or(a: Iv, b: Iv, bits: u32) -> Iv {
    let mut r = Iv::full(bits);
    r.umin = a.umin.max(b.umin);
    if a.smax < 0 || b.smax < 0 {
        r.smax = -1;
        if a.smax < 0 {
            r.smin = r.smin.max(a.smin);
        }
        if b.smax < 0 {
            r.smin = r.smin.max(b.smin);
        }
    } else if a.smin >= 0 && b.smin >= 0 {
        r.smin = a.smin.max(b.smin);
    }
    r
}

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

/// The ranges of the same ops at width `bits` (xor: none; the tnum covers it).
fn iv_op(op: AluOp, a: Iv, b: Iv, bits: u32) -> Iv {
    match op {
        AluOp::Add => iv_add(a, b, bits),
        AluOp::Sub => iv_sub(a, b, bits),
        AluOp::Mul => iv_mul(a, b, bits),
        AluOp::And => iv_and(a, b, bits),
        AluOp::Or => iv_or(a, b, bits),
        _ => Iv::full(bits),
    }
}

/// The exact intersection of an unsigned and a signed range of one width, as both ranges.
fn meet_us(iv: Iv, bits: u32) -> Option<Iv> {
    let n = 1i128 << bits;
    let half = n >> 1;
    let (umin, umax, smin, smax) = (
        iv.umin as i128,
        iv.umax as i128,
        iv.smin as i128,
        iv.smax as i128,
    );
    // Non-negative piece: [0, half) in both orders.
    let pos = (smax >= 0)
        .then(|| (umin.max(smin.max(0)), umax.min(smax).min(half - 1)))
        .filter(|p| p.0 <= p.1);
    // Negative piece, in unsigned terms: [half, n).
    let neg = (smin < 0)
        .then(|| (umin.max(half).max(smin + n), umax.min(smax.min(-1) + n)))
        .filter(|p| p.0 <= p.1);
    let (ulo, uhi) = match (pos, neg) {
        (Some(p), Some(q)) => (p.0, q.1),
        (Some(p), None) => p,
        (None, Some(q)) => q,
        (None, None) => return None,
    };
    let (slo, shi) = match (pos, neg) {
        (Some(p), Some(q)) => (q.0 - n, p.1),
        (Some(p), None) => p,
        (_, Some(q)) => (q.0 - n, q.1 - n),
        (None, None) => return None,
    };
    Some(Iv {
        umin: ulo as u64,
        umax: uhi as u64,
        smin: slo as i64,
        smax: shi as i64,
    })
}

/// For `x` in `lo..=hi`: if every `x + off` lies in one aligned 2^32 block, the range of
/// `(x + off) mod 2^32 - off` (the low-half view: `off` 0 unsigned, 2^31 signed).
fn project(lo: i128, hi: i128, off: i128) -> Option<(i128, i128)> {
    let (a, b) = (lo + off, hi + off);
    (a.div_euclid(TWO32) == b.div_euclid(TWO32))
        .then(|| (a.rem_euclid(TWO32) - off, b.rem_euclid(TWO32) - off))
}

/// Shrinks `lo..=hi` to the least and greatest `x` whose `(x + off) mod 2^32` lies in
/// `l..=h` (`0 <= l <= h < 2^32`); `None` if there is none.
fn tighten(lo: i128, hi: i128, off: i128, l: i128, h: i128) -> Option<(i128, i128)> {
    let (a, b) = (lo + off, hi + off);
    let (ba, ra) = (a.div_euclid(TWO32), a.rem_euclid(TWO32));
    let a = if ra < l {
        ba * TWO32 + l
    } else if ra > h {
        (ba + 1) * TWO32 + l
    } else {
        a
    };
    let (bb, rb) = (b.div_euclid(TWO32), b.rem_euclid(TWO32));
    let b = if rb > h {
        bb * TWO32 + h
    } else if rb < l {
        (bb - 1) * TWO32 + h
    } else {
        b
    };
    (a <= b).then(|| (a - off, b - off))
}

fn to_order32(s: i32) -> u64 {
    u64::from(s as u32) ^ SIGN32
}

fn from_order32(v: u64) -> i32 {
    (v ^ SIGN32) as u32 as i32
}

/// Upper 32 bits unknown, lower 32 bits from `t`.
fn low_bits(t: Tnum) -> Tnum {
    Tnum {
        value: t.value & LO32,
        mask: t.mask | !LO32,
    }
}

/// The condition that holds on one edge of a branch (the negation on the fall-through).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rel {
    Eq,
    Ne,
    Lt,
    Le,
    Slt,
    Sle,
    Set,
    NotSet,
}

/// One operand of a comparison at one width: its range views and known bits there.
#[derive(Clone, Copy, Debug)]
struct Part {
    iv: Iv,
    t: Tnum,
}

impl Part {
    fn as_const(&self) -> Option<u64> {
        if self.t.mask == 0 {
            Some(self.t.value)
        } else {
            self.iv.as_const()
        }
    }

    /// Removes `c` from the range ends (the only exclusion a range can express).
    fn exclude(&mut self, c: u64, bits: u32) -> Option<()> {
        let (lo, hi) = (self.iv.umin, self.iv.umax);
        if lo == c {
            self.iv.umin = c.checked_add(1)?;
        }
        if hi == c {
            self.iv.umax = c.checked_sub(1)?;
        }
        let s = sview(c, bits);
        let (lo, hi) = (self.iv.smin, self.iv.smax);
        if lo == s {
            self.iv.smin = s.checked_add(1)?;
        }
        if hi == s {
            self.iv.smax = s.checked_sub(1)?;
        }
        (!self.iv.is_empty()).then_some(())
    }
}

/// Narrows `a` and `b` to the pairs for which `rel(a, b)` can hold; `None` if none can.
fn narrow(rel: Rel, a: &mut Part, b: &mut Part, bits: u32) -> Option<()> {
    match rel {
        Rel::Eq => {
            let iv = a.iv.meet(b.iv);
            let t = a.t.intersect(b.t)?;
            if iv.is_empty() {
                return None;
            }
            *a = Part { iv, t };
            *b = *a;
        }
        Rel::Ne => {
            if let Some(c) = b.as_const() {
                a.exclude(c, bits)?;
            }
            if let Some(c) = a.as_const() {
                b.exclude(c, bits)?;
            }
        }
        Rel::Lt => {
            a.iv.umax = a.iv.umax.min(b.iv.umax.checked_sub(1)?);
            b.iv.umin = b.iv.umin.max(a.iv.umin.checked_add(1)?);
        }
        Rel::Le => {
            a.iv.umax = a.iv.umax.min(b.iv.umax);
            b.iv.umin = b.iv.umin.max(a.iv.umin);
        }
        Rel::Slt => {
            a.iv.smax = a.iv.smax.min(b.iv.smax.checked_sub(1)?);
            b.iv.smin = b.iv.smin.max(a.iv.smin.checked_add(1)?);
        }
        Rel::Sle => {
            a.iv.smax = a.iv.smax.min(b.iv.smax);
            b.iv.smin = b.iv.smin.max(a.iv.smin);
        }
        Rel::Set => {
            // Some bit must be possibly 1 in both.
            let (pa, pb) = (a.t.value | a.t.mask, b.t.value | b.t.mask);
            if pa & pb == 0 {
                return None;
            }
            // Against a constant, when exactly one bit can still meet it, it is 1.
            let (ca, cb) = (b.as_const(), a.as_const());
            for (x, c) in [(&mut *a, ca), (&mut *b, cb)] {
                if let Some(c) = c {
                    let cand = c & (x.t.value | x.t.mask);
                    if x.t.value & c == 0 && cand.is_power_of_two() {
                        x.t = x.t.intersect(Tnum {
                            value: cand,
                            mask: !cand,
                        })?;
                    }
                }
            }
        }
        Rel::NotSet => {
            // A bit known 1 on one side is 0 on the other.
            let (ka, kb) = (a.t.value, b.t.value);
            a.t = a.t.intersect(Tnum {
                value: 0,
                mask: !kb,
            })?;
            b.t = b.t.intersect(Tnum {
                value: 0,
                mask: !ka,
            })?;
        }
    }
    (!a.iv.is_empty() && !b.iv.is_empty()).then_some(())
}

impl Scalar {
    /// Any value.
    pub const fn unknown() -> Scalar {
        Scalar {
            bits: Tnum::UNKNOWN,
            umin: 0,
            umax: u64::MAX,
            smin: i64::MIN,
            smax: i64::MAX,
            u32min: 0,
            u32max: u32::MAX,
            s32min: i32::MIN,
            s32max: i32::MAX,
        }
    }

    /// Exactly `v`.
    pub const fn constant(v: u64) -> Scalar {
        Scalar {
            bits: Tnum::constant(v),
            umin: v,
            umax: v,
            smin: v as i64,
            smax: v as i64,
            u32min: v as u32,
            u32max: v as u32,
            s32min: v as i32,
            s32max: v as i32,
        }
    }

    /// The unsigned range `lo..=hi` (the two bounds in either order).
    pub fn range_u64(lo: u64, hi: u64) -> Scalar {
        Scalar {
            umin: lo.min(hi),
            umax: lo.max(hi),
            ..Scalar::unknown()
        }
        .norm()
    }

    /// The signed range `lo..=hi` (the two bounds in either order).
    fn range_i64(lo: i64, hi: i64) -> Scalar {
        Scalar {
            smin: lo.min(hi),
            smax: lo.max(hi),
            ..Scalar::unknown()
        }
        .norm()
    }

    /// The values a load of `size_bytes` (1, 2, 4 or 8) can produce: zero-extended, or
    /// sign-extended for the cpu v4 sign-extending loads.
    pub fn loaded(size_bytes: u32, signed: bool) -> Scalar {
        let bits = match size_bytes {
            1 | 2 | 4 => size_bytes * 8,
            _ => return Scalar::unknown(),
        };
        if signed {
            Scalar::range_i64(smin_of(bits), smax_of(bits))
        } else {
            Scalar::range_u64(0, umax_of(bits))
        }
    }

    /// The value, when there is exactly one.
    pub fn as_const(&self) -> Option<u64> {
        if self.bits.mask == 0 {
            Some(self.bits.value)
        } else if self.umin == self.umax {
            Some(self.umin)
        } else {
            (self.smin == self.smax).then_some(self.smin as u64)
        }
    }

    /// Whether `v` is in the set (all nine views admit it).
    pub fn contains(&self, v: u64) -> bool {
        self.bits.contains(v)
            && (self.umin..=self.umax).contains(&v)
            && (self.smin..=self.smax).contains(&(v as i64))
            && (self.u32min..=self.u32max).contains(&(v as u32))
            && (self.s32min..=self.s32max).contains(&(v as i32))
    }

    /// Whether 0 is in the set (a divisor that may be zero, a pointer that may be NULL).
    pub fn may_be_zero(&self) -> bool {
        self.contains(0)
    }

    /// Propagates information between the views until they agree, so that each view is as
    /// tight as the others allow. Returns `false` when the views admit no value at all (an
    /// impossible path); the fields are then meaningless.
    #[must_use]
    pub fn normalize(&mut self) -> bool {
        // Every step only shrinks a view, so this terminates; the bound keeps pathological
        // ping-pong between views cheap, and stopping early is sound.
        for _ in 0..16 {
            let before = *self;
            if self.sync().is_none() {
                return false;
            }
            if *self == before {
                break;
            }
        }
        true
    }

    /// The normalized value; an empty set (which callers never build from non-empty
    /// inputs) becomes `unknown`, which is sound for any set.
    fn norm(mut self) -> Scalar {
        if self.normalize() {
            self
        } else {
            Scalar::unknown()
        }
    }

    fn iv64(&self) -> Iv {
        Iv {
            umin: self.umin,
            umax: self.umax,
            smin: self.smin,
            smax: self.smax,
        }
    }

    fn iv32(&self) -> Iv {
        Iv {
            umin: self.u32min.into(),
            umax: self.u32max.into(),
            smin: self.s32min.into(),
            smax: self.s32max.into(),
        }
    }

    fn from_parts(bits: Tnum, iv64: Iv, iv32: Iv) -> Scalar {
        Scalar {
            bits,
            umin: iv64.umin,
            umax: iv64.umax,
            smin: iv64.smin,
            smax: iv64.smax,
            u32min: iv32.umin as u32,
            u32max: iv32.umax as u32,
            s32min: iv32.smin as i32,
            s32max: iv32.smax as i32,
        }
    }

    fn check(&self) -> Option<()> {
        (self.umin <= self.umax
            && self.smin <= self.smax
            && self.u32min <= self.u32max
            && self.s32min <= self.s32max)
            .then_some(())
    }

    /// One round of propagation; `None` when the set is found empty.
    fn sync(&mut self) -> Option<()> {
        // A value bit under the mask would make the set empty; reading it as unknown is sound.
        self.bits.value &= !self.bits.mask;
        // The tnum bounds each range view by its least and greatest member in that order
        // (the signed orders are the unsigned ones with the sign bit flipped).
        let t = self.bits;
        self.umin = t.min_ge(self.umin)?;
        self.umax = t.max_le(self.umax)?;
        let ts = t.flip(SIGN);
        self.smin = (ts.min_ge(self.smin as u64 ^ SIGN)? ^ SIGN) as i64;
        self.smax = (ts.max_le(self.smax as u64 ^ SIGN)? ^ SIGN) as i64;
        let t32 = t.trunc32();
        self.u32min = t32.min_ge(self.u32min.into())? as u32;
        self.u32max = t32.max_le(self.u32max.into())? as u32;
        let t32s = t32.flip(SIGN32);
        self.s32min = from_order32(t32s.min_ge(to_order32(self.s32min))?);
        self.s32max = from_order32(t32s.max_le(to_order32(self.s32max))?);
        self.check()?;

        // Unsigned and signed range of each width bound each other.
        let iv64 = meet_us(self.iv64(), 64)?;
        let iv32 = meet_us(self.iv32(), 32)?;
        *self = Scalar::from_parts(self.bits, iv64, iv32);

        // A 64-bit range inside one 2^32 block fixes the low half's range.
        for (lo, hi) in [
            (self.umin as i128, self.umax as i128),
            (self.smin as i128, self.smax as i128),
        ] {
            if let Some((l, h)) = project(lo, hi, 0) {
                self.u32min = self.u32min.max(l as u32);
                self.u32max = self.u32max.min(h as u32);
            }
            if let Some((l, h)) = project(lo, hi, HALF32) {
                self.s32min = self.s32min.max(l as i32);
                self.s32max = self.s32max.min(h as i32);
            }
        }
        self.check()?;

        // The low half's ranges move the 64-bit ends to the nearest values that fit them.
        let (ul, uh) = (self.u32min as i128, self.u32max as i128);
        let (sl, sh) = (self.s32min as i128 + HALF32, self.s32max as i128 + HALF32);
        let (lo, hi) = tighten(self.umin as i128, self.umax as i128, 0, ul, uh)?;
        let (lo, hi) = tighten(lo, hi, HALF32, sl, sh)?;
        (self.umin, self.umax) = (lo as u64, hi as u64);
        let (lo, hi) = tighten(self.smin as i128, self.smax as i128, 0, ul, uh)?;
        let (lo, hi) = tighten(lo, hi, HALF32, sl, sh)?;
        (self.smin, self.smax) = (lo as i64, hi as i64);

        // The ranges fix the bits their ends share.
        let t = self
            .bits
            .intersect(Tnum::range(self.umin, self.umax))?
            .intersect(Tnum::range(self.smin as u64 ^ SIGN, self.smax as u64 ^ SIGN).flip(SIGN))?
            .intersect(low_bits(Tnum::range(
                self.u32min.into(),
                self.u32max.into(),
            )))?
            .intersect(low_bits(
                Tnum::range(to_order32(self.s32min), to_order32(self.s32max)).flip(SIGN32),
            ))?;
        self.bits = t;
        self.check()
    }

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

    fn from_tnum(bits: Tnum) -> Scalar {
        Scalar {
            bits,
            ..Scalar::unknown()
        }
        .norm()
    }

    /// The states of the operands `a`, `b` of `if a cond b` on the taken (`taken`) or the
    /// fall-through edge; `None` when that edge cannot be reached. A 32-bit comparison
    /// narrows the low-half views; normalization carries that into the 64-bit views where
    /// the high half allows it.
    pub fn refine(
        cond: Cond,
        w: Width,
        a: &Scalar,
        b: &Scalar,
        taken: bool,
    ) -> Option<(Scalar, Scalar)> {
        let (rel, swap) = match cond {
            Cond::Eq => (Rel::Eq, false),
            Cond::Ne => (Rel::Ne, false),
            Cond::Lt => (Rel::Lt, false),
            Cond::Le => (Rel::Le, false),
            Cond::Gt => (Rel::Lt, true),
            Cond::Ge => (Rel::Le, true),
            Cond::Slt => (Rel::Slt, false),
            Cond::Sle => (Rel::Sle, false),
            Cond::Sgt => (Rel::Slt, true),
            Cond::Sge => (Rel::Sle, true),
            Cond::Set => (Rel::Set, false),
        };
        // The fall-through edge: `!(a < b)` is `b <= a`, and so on.
        let (rel, swap) = match (taken, rel) {
            (true, r) => (r, swap),
            (false, Rel::Eq) => (Rel::Ne, swap),
            (false, Rel::Ne) => (Rel::Eq, swap),
            (false, Rel::Lt) => (Rel::Le, !swap),
            (false, Rel::Le) => (Rel::Lt, !swap),
            (false, Rel::Slt) => (Rel::Sle, !swap),
            (false, Rel::Sle) => (Rel::Slt, !swap),
            (false, Rel::Set) => (Rel::NotSet, swap),
            (false, Rel::NotSet) => (Rel::Set, swap),
        };
        let (mut a, mut b) = (*a, *b);
        if !a.normalize() || !b.normalize() {
            return None;
        }
        let (x, y) = if swap {
            (&mut b, &mut a)
        } else {
            (&mut a, &mut b)
        };
        match w {
            Width::W64 => {
                let mut px = Part {
                    iv: x.iv64(),
                    t: x.bits,
                };
                let mut py = Part {
                    iv: y.iv64(),
                    t: y.bits,
                };
                narrow(rel, &mut px, &mut py, 64)?;
                // Equal values have equal low halves.
                let (ix, iy) = if rel == Rel::Eq {
                    let m = x.iv32().meet(y.iv32());
                    (m, m)
                } else {
                    (x.iv32(), y.iv32())
                };
                *x = Scalar::from_parts(px.t, px.iv, ix);
                *y = Scalar::from_parts(py.t, py.iv, iy);
            }
            Width::W32 => {
                let mut px = Part {
                    iv: x.iv32(),
                    t: x.bits.trunc32(),
                };
                let mut py = Part {
                    iv: y.iv32(),
                    t: y.bits.trunc32(),
                };
                narrow(rel, &mut px, &mut py, 32)?;
                *x = Scalar::from_parts(x.bits.intersect(low_bits(px.t))?, x.iv64(), px.iv);
                *y = Scalar::from_parts(y.bits.intersect(low_bits(py.t))?, y.iv64(), py.iv);
            }
        }
        (a.normalize() && b.normalize()).then_some((a, b))
    }

    /// The smallest value of the domain containing both sets: the hull of each view, then
    /// normalized.
    pub fn join(&self, other: &Scalar) -> Scalar {
        self.hull(other).norm()
    }

    /// The view-by-view hull, not normalized.
    fn hull(&self, other: &Scalar) -> Scalar {
        Scalar {
            bits: self.bits.union(other.bits),
            umin: self.umin.min(other.umin),
            umax: self.umax.max(other.umax),
            smin: self.smin.min(other.smin),
            smax: self.smax.max(other.smax),
            u32min: self.u32min.min(other.u32min),
            u32max: self.u32max.max(other.u32max),
            s32min: self.s32min.min(other.s32min),
            s32max: self.s32max.max(other.s32max),
        }
    }

    /// Whether every value of `other` is in `self` (state pruning). Exact or conservative:
    /// it compares view by view, so it may answer `false` for a subset, never `true` for
    /// a set that is not one.
    pub fn subsumes(&self, other: &Scalar) -> bool {
        let mut o = *other;
        if !o.normalize() {
            return true;
        }
        o.bits.is_subset_of(self.bits)
            && self.umin <= o.umin
            && o.umax <= self.umax
            && self.smin <= o.smin
            && o.smax <= self.smax
            && self.u32min <= o.u32min
            && o.u32max <= self.u32max
            && self.s32min <= o.s32min
            && o.s32max <= self.s32max
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

fn fmt_u(v: u64) -> String {
    if v < 0x10000 {
        v.to_string()
    } else {
        format!("{v:#x}")
    }
}

fn fmt_s(v: i64) -> String {
    if v < 0 {
        if v > -0x10000 {
            v.to_string()
        } else {
            format!("-{:#x}", v.unsigned_abs())
        }
    } else {
        fmt_u(v as u64)
    }
}

/// Kernel-like: a constant as a number, otherwise `scalar(...)` with only the views that
/// add information: the unsigned range and the known bits when not trivial, a signed
/// range only when the bits and the unsigned range do not imply it, a 32-bit range only
/// when the 64-bit views do not.
impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.as_const() {
            let s = c as i64;
            return f.write_str(&if (-0xffff..0).contains(&s) {
                s.to_string()
            } else {
                fmt_u(c)
            });
        }
        let mut out = Vec::new();
        if self.umin != 0 || self.umax != u64::MAX {
            out.push(format!(
                "umin={},umax={}",
                fmt_u(self.umin),
                fmt_u(self.umax)
            ));
        }
        // What the known bits and the unsigned range imply on their own; a view that adds
        // nothing to that is left out.
        let base = Scalar {
            bits: self.bits,
            umin: self.umin,
            umax: self.umax,
            ..Scalar::unknown()
        }
        .norm();
        if (self.smin, self.smax) != (base.smin, base.smax) {
            out.push(format!(
                "smin={},smax={}",
                fmt_s(self.smin),
                fmt_s(self.smax)
            ));
        }
        let base = Scalar {
            u32min: 0,
            u32max: u32::MAX,
            s32min: i32::MIN,
            s32max: i32::MAX,
            ..*self
        }
        .norm();
        if (self.u32min, self.u32max) != (base.u32min, base.u32max) {
            out.push(format!(
                "u32min={},u32max={}",
                fmt_u(self.u32min.into()),
                fmt_u(self.u32max.into())
            ));
        }
        if (self.s32min, self.s32max) != (base.s32min, base.s32max) {
            out.push(format!(
                "s32min={},s32max={}",
                fmt_s(self.s32min.into()),
                fmt_s(self.s32max.into())
            ));
        }
        if self.bits.mask != u64::MAX {
            out.push(format!(
                "var=({:#x}; {:#x})",
                self.bits.value, self.bits.mask
            ));
        }
        write!(f, "scalar({})", out.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPS: [AluOp; 14] = [
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
    const CONDS: [Cond; 11] = [
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
    const WIDTHS: [Width; 2] = [Width::W64, Width::W32];

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

    fn c_alu(op: AluOp, w: Width, a: u64, b: u64) -> u64 {
        match w {
            Width::W64 => c_alu64(op, a, b),
            Width::W32 => c_alu32(op, a as u32, b as u32).into(),
        }
    }

    fn c_cond(c: Cond, w: Width, a: u64, b: u64) -> bool {
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

    fn c_endian(o: Order, bits: u8, v: u64) -> u64 {
        match (o, bits) {
            (Order::Le, 16) => v & 0xffff,
            (Order::Le, 32) => v & 0xffff_ffff,
            (Order::Le, _) => v,
            (_, 16) => (v as u16).swap_bytes().into(),
            (_, 32) => (v as u32).swap_bytes().into(),
            _ => v.swap_bytes(),
        }
    }

    fn c_movsx(w: Width, bits: u8, v: u64) -> u64 {
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

    fn c_neg(w: Width, v: u64) -> u64 {
        match w {
            Width::W64 => v.wrapping_neg(),
            Width::W32 => (v as u32).wrapping_neg().into(),
        }
    }

    // ---- random abstract values with known members ----

    struct Rng(u64);

    impl Rng {
        /// `BPF2PTX_SCALAR_SEED` varies every test's stream (the default is fixed, so a
        /// failure reproduces).
        fn new(seed: u64) -> Rng {
            let extra = std::env::var("BPF2PTX_SCALAR_SEED")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            Rng((seed ^ extra.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1)
        }

        fn next(&mut self) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn coin(&mut self) -> bool {
            self.next() & 1 != 0
        }

        /// Values near the places where domains go wrong: 0, the signed and unsigned
        /// limits of both widths, small negatives, powers of two.
        fn value(&mut self) -> u64 {
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

        fn mask(&mut self) -> u64 {
            match self.below(6) {
                0 => 0,
                1 => (1u64 << self.below(64)).wrapping_sub(1),
                2 => self.next() & self.next() & self.next(),
                3 => self.next(),
                4 => !((1u64 << self.below(64)).wrapping_sub(1)),
                _ => u64::MAX,
            }
        }

        fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
            xs[self.below(xs.len() as u64) as usize]
        }
    }

    /// `BPF2PTX_SCALAR_ITERS=k` runs k times as many random cases.
    fn iters(base: usize) -> usize {
        let k = std::env::var("BPF2PTX_SCALAR_ITERS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        base * k
    }

    /// A random abstract value and one value known to be in it.
    fn gen(r: &mut Rng, depth: u32) -> (Scalar, u64) {
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
    fn raw_around(r: &mut Rng, v: u64, wild: bool) -> Scalar {
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
    fn members(r: &mut Rng, s: &Scalar, witness: u64, n: usize) -> Vec<u64> {
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

    // ---- soundness ----

    #[test]
    fn tnum_ops_are_sound() {
        let mut r = Rng::new(0x1234_5678_9abc_def1);
        for _ in 0..iters(3000) {
            let (va, ma, vb, mb) = (r.value(), r.mask(), r.value(), r.mask());
            let (a, b) = (
                Tnum {
                    value: va & !ma,
                    mask: ma,
                },
                Tnum {
                    value: vb & !mb,
                    mask: mb,
                },
            );
            for _ in 0..4 {
                let x = a.value | (r.next() & a.mask);
                let y = b.value | (r.next() & b.mask);
                let k = (r.next() % 64) as u32;
                let checks = [
                    ("add", a.wrapping_add(b), x.wrapping_add(y)),
                    ("sub", a.wrapping_sub(b), x.wrapping_sub(y)),
                    ("mul", a.wrapping_mul(b), x.wrapping_mul(y)),
                    ("and", a.and(b), x & y),
                    ("or", a.or(b), x | y),
                    ("xor", a.xor(b), x ^ y),
                    ("lsh", a.lsh(k), x << k),
                    ("rsh", a.rsh(k), x >> k),
                    ("arsh", a.arsh(k), ((x as i64) >> k) as u64),
                    ("union", a.union(b), x),
                    ("union", a.union(b), y),
                ];
                for (name, t, v) in checks {
                    assert!(
                        t.contains(v),
                        "{name}: {a:?} {b:?} ({x:#x}, {y:#x}) -> {t:?} lacks {v:#x}"
                    );
                    assert_eq!(t.value & t.mask, 0, "{name}: {t:?}");
                }
                if let Some(i) = a.intersect(Tnum::constant(y)) {
                    assert!(a.contains(y) && i.contains(y));
                } else {
                    assert!(!a.contains(y));
                }
            }
        }
    }

    #[test]
    fn tnum_min_ge_max_le_are_exact() {
        // Every tnum over 6 bits (high bits known zero), every bound, against brute force.
        let mut tnums = vec![Tnum::constant(0)];
        for bit in 0..6 {
            let mut next = Vec::new();
            for t in tnums {
                next.push(t);
                next.push(Tnum {
                    value: t.value | 1 << bit,
                    mask: t.mask,
                });
                next.push(Tnum {
                    value: t.value,
                    mask: t.mask | 1 << bit,
                });
            }
            tnums = next;
        }
        for t in tnums {
            let members: Vec<u64> = (0..64).filter(|&v| t.contains(v)).collect();
            for x in 0..70 {
                assert_eq!(
                    t.min_ge(x),
                    members.iter().copied().find(|&v| v >= x),
                    "{t:?} min_ge {x}"
                );
                assert_eq!(
                    t.max_le(x),
                    members.iter().copied().rev().find(|&v| v <= x),
                    "{t:?} max_le {x}"
                );
            }
        }
        // Wide tnums: the answer is a member on the right side of x, and no random member
        // beats it.
        let mut r = Rng::new(77);
        for _ in 0..iters(2000) {
            let m = r.mask();
            let t = Tnum {
                value: r.value() & !m,
                mask: m,
            };
            let x = r.value();
            let lo = t.min_ge(x);
            let hi = t.max_le(x);
            for _ in 0..8 {
                let y = t.value | (r.next() & t.mask);
                if y >= x {
                    assert!(
                        lo.is_some_and(|l| l <= y && t.contains(l) && l >= x),
                        "{t:?} min_ge {x:#x}: {lo:?} vs {y:#x}"
                    );
                }
                if y <= x {
                    assert!(
                        hi.is_some_and(|h| h >= y && t.contains(h) && h <= x),
                        "{t:?} max_le {x:#x}: {hi:?} vs {y:#x}"
                    );
                }
            }
        }
    }

    #[test]
    fn normalize_keeps_exactly_the_members() {
        let mut r = Rng::new(0xfeed_beef);
        let mut kept = 0;
        for _ in 0..iters(3000) {
            let v = r.value();
            let raw = raw_around(&mut r, v, true);
            let mut n = raw;
            let ok = n.normalize();
            let mut probes = vec![v, raw.umin, raw.umax, raw.smin as u64, raw.smax as u64];
            probes.extend((0..6).map(|_| raw.bits.value | (r.next() & raw.bits.mask)));
            probes.extend((0..6).map(|_| v ^ (r.next() & r.mask())));
            for u in probes {
                if ok {
                    assert_eq!(n.contains(u), raw.contains(u), "{raw:?} -> {n:?} at {u:#x}");
                } else {
                    assert!(!raw.contains(u), "{raw:?} called empty but holds {u:#x}");
                }
            }
            if ok {
                kept += 1;
                // A fixpoint: normalizing again changes nothing.
                let mut again = n;
                assert!(again.normalize());
                assert_eq!(again, n, "from {raw:?}");
            }
        }
        assert!(
            kept > iters(3000) / 2,
            "too few non-empty raw values: {kept}"
        );
    }

    #[test]
    fn alu_is_sound() {
        let mut r = Rng::new(0x0bad_cafe_f00d_0001);
        for _ in 0..iters(400) {
            let (a, x) = gen(&mut r, 2);
            let (b, y) = if r.below(3) == 0 {
                let v = r.value();
                (Scalar::constant(v), v)
            } else if r.below(3) == 0 {
                let v = r.below(70);
                (Scalar::range_u64(v, v + r.below(8)), v)
            } else {
                gen(&mut r, 2)
            };
            let xs = members(&mut r, &a, x, 5);
            let ys = members(&mut r, &b, y, 5);
            for op in OPS {
                for w in WIDTHS {
                    let s = Scalar::alu(op, w, &a, &b);
                    for &x in &xs {
                        for &y in &ys {
                            let v = c_alu(op, w, x, y);
                            assert!(s.contains(v), "{op:?} {w:?}: {a:?} ({x:#x}), {b:?} ({y:#x})\n -> {s:?} lacks {v:#x}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn unary_ops_are_sound() {
        let mut r = Rng::new(0x5eed);
        for _ in 0..iters(800) {
            let (a, x) = gen(&mut r, 2);
            let xs = members(&mut r, &a, x, 8);
            for w in WIDTHS {
                let n = a.neg(w);
                for bits in [8u8, 16, 32] {
                    let m = a.movsx(w, bits);
                    for &x in &xs {
                        assert!(
                            m.contains(c_movsx(w, bits, x)),
                            "movsx {w:?} {bits}: {a:?} ({x:#x}) -> {m:?}"
                        );
                    }
                }
                for &x in &xs {
                    assert!(
                        n.contains(c_neg(w, x)),
                        "neg {w:?}: {a:?} ({x:#x}) -> {n:?}"
                    );
                }
            }
            for o in [Order::Le, Order::Be, Order::Swap] {
                for bits in [16u8, 32, 64] {
                    let e = a.endian(o, bits);
                    for &x in &xs {
                        assert!(
                            e.contains(c_endian(o, bits, x)),
                            "{o:?}{bits}: {a:?} ({x:#x}) -> {e:?}"
                        );
                    }
                }
            }
        }
        for size in [1u32, 2, 4, 8] {
            for signed in [false, true] {
                let s = Scalar::loaded(size, signed);
                for _ in 0..200 {
                    let raw = r.value();
                    let v = match (size, signed) {
                        (8, _) => raw,
                        (n, false) => raw & umax_of(n * 8),
                        (n, true) => sview(raw, n * 8) as u64,
                    };
                    assert!(s.contains(v), "loaded({size}, {signed}) = {s} lacks {v:#x}");
                }
            }
        }
    }

    #[test]
    fn refine_is_sound() {
        let mut r = Rng::new(0xabcd_0123);
        let (mut taken, mut fell) = (0, 0);
        for _ in 0..iters(500) {
            let (a, x) = gen(&mut r, 2);
            // Compare with nearby values often, so equalities and bounds are hit.
            let (b, y) = match r.below(4) {
                0 => {
                    let v = members(&mut r, &a, x, 4)[r.below(1) as usize]
                        .wrapping_add(r.below(3))
                        .wrapping_sub(1);
                    (Scalar::constant(v), v)
                }
                1 => {
                    let v = r.value();
                    (Scalar::constant(v), v)
                }
                _ => gen(&mut r, 2),
            };
            let xs = members(&mut r, &a, x, 4);
            let ys = members(&mut r, &b, y, 4);
            for c in CONDS {
                for w in WIDTHS {
                    let t = Scalar::refine(c, w, &a, &b, true);
                    let f = Scalar::refine(c, w, &a, &b, false);
                    for &x in &xs {
                        for &y in &ys {
                            let holds = c_cond(c, w, x, y);
                            let edge = if holds { &t } else { &f };
                            let ok = edge.is_some_and(|(a2, b2)| a2.contains(x) && b2.contains(y));
                            assert!(
                                ok,
                                "{c:?} {w:?} {holds}: {a:?} ({x:#x}), {b:?} ({y:#x})\n -> {edge:?}"
                            );
                            if holds {
                                taken += 1;
                            } else {
                                fell += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(taken > 1000 && fell > 1000, "{taken} {fell}");
    }

    #[test]
    fn join_and_subsumes_are_sound() {
        let mut r = Rng::new(0x7777_1111);
        for _ in 0..iters(1500) {
            let (a, x) = gen(&mut r, 2);
            let (b, y) = gen(&mut r, 2);
            let j = a.join(&b);
            let xs = members(&mut r, &a, x, 6);
            let ys = members(&mut r, &b, y, 6);
            for &v in xs.iter().chain(&ys) {
                assert!(j.contains(v), "join {a:?} {b:?} -> {j:?} lacks {v:#x}");
            }
            // Precision: the join covers both operands, a value covers itself.
            assert!(j.subsumes(&a) && j.subsumes(&b), "{a:?} {b:?} -> {j:?}");
            assert!(a.subsumes(&a), "{a:?}");
            // Soundness: whenever subsumes says yes, every sampled member agrees.
            let c = Scalar::refine(r.pick(&CONDS), r.pick(&WIDTHS), &a, &b, r.coin()).map(|p| p.0);
            let pairs = [
                (a, b, &ys),
                (b, a, &xs),
                (Scalar::unknown(), a, &xs),
                (j, a, &xs),
            ];
            for (big, small, ms) in pairs {
                if big.subsumes(&small) {
                    for &v in ms {
                        assert!(
                            big.contains(v),
                            "{big:?} subsumes {small:?} but lacks {v:#x}"
                        );
                    }
                }
            }
            if let Some(c) = c {
                let cs = members(&mut r, &c, c.umin, 6);
                if a.subsumes(&c) {
                    assert!(cs.iter().all(|&v| a.contains(v)), "{a:?} subsumes {c:?}");
                }
            }
            // Against a constant, subsumes is exactly contains.
            for v in [
                a.umin.wrapping_sub(1),
                a.umax.wrapping_add(1),
                (a.smin as u64).wrapping_sub(1),
                x,
                x ^ 1,
                x ^ (1 << 40),
            ] {
                assert_eq!(
                    a.subsumes(&Scalar::constant(v)),
                    a.contains(v),
                    "{a:?} vs {v:#x}"
                );
            }
        }
    }

    #[test]
    fn arbitrary_inputs_never_panic() {
        // Fields as a caller might fill them, inconsistent or empty ones included.
        let mut r = Rng::new(0xdead_0001);
        let raw = |r: &mut Rng| {
            let v = r.value();
            let mut s = raw_around(r, v, true);
            s.bits.value = r.value();
            if r.coin() {
                (s.umin, s.umax) = (r.value(), r.value());
            }
            if r.coin() {
                (s.s32min, s.s32max) = (r.value() as i32, r.value() as i32);
            }
            s
        };
        for _ in 0..iters(300) {
            let (a, b) = (raw(&mut r), raw(&mut r));
            for w in WIDTHS {
                for op in OPS {
                    let _ = Scalar::alu(op, w, &a, &b);
                }
                for c in CONDS {
                    let _ = Scalar::refine(c, w, &a, &b, r.coin());
                }
                let _ = (a.neg(w), a.movsx(w, r.pick(&[8, 16, 32])));
            }
            let _ = (
                a.endian(Order::Be, r.pick(&[16, 32, 64])),
                a.join(&b),
                a.subsumes(&b),
                a.to_string(),
            );
            let mut n = a;
            let _ = n.normalize();
        }
    }

    // ---- precision: what real programs need ----

    fn alu(op: AluOp, a: &Scalar, b: u64) -> Scalar {
        Scalar::alu(op, Width::W64, a, &Scalar::constant(b))
    }

    #[test]
    fn masks_shifts_and_adds_stay_precise() {
        let x = Scalar::unknown();
        let m = alu(AluOp::And, &x, 0xff);
        assert_eq!((m.umin, m.umax, m.smin, m.smax), (0, 255, 0, 255));
        assert_eq!(
            m.bits,
            Tnum {
                value: 0,
                mask: 0xff
            }
        );
        let s = alu(AluOp::Lsh, &alu(AluOp::And, &x, 7), 3);
        assert_eq!(
            s.bits,
            Tnum {
                value: 0,
                mask: 0x38
            }
        );
        assert_eq!((s.umin, s.umax), (0, 56));
        let h = alu(AluOp::Rsh, &x, 60);
        assert_eq!((h.umin, h.umax), (0, 15));
        let a = Scalar::alu(
            AluOp::Add,
            Width::W64,
            &Scalar::range_u64(10, 20),
            &Scalar::range_u64(100, 200),
        );
        assert_eq!((a.umin, a.umax, a.smin, a.smax), (110, 220, 110, 220));
        let d = Scalar::alu(
            AluOp::Sub,
            Width::W64,
            &Scalar::range_u64(10, 20),
            &Scalar::range_u64(0, 5),
        );
        assert_eq!((d.umin, d.umax), (5, 20));
        let p = Scalar::alu(
            AluOp::Mul,
            Width::W64,
            &Scalar::range_u64(0, 10),
            &Scalar::constant(12),
        );
        assert_eq!((p.umin, p.umax), (0, 120));
        assert_eq!(p.bits.value & 3, 0, "a multiple of 4");
        let o = alu(AluOp::Or, &alu(AluOp::And, &x, 0xf0), 1);
        assert_eq!((o.umin, o.umax), (1, 0xf1));
        let ar = alu(AluOp::Arsh, &Scalar::range_i64(-1000, 1000), 3);
        assert_eq!((ar.smin, ar.smax), (-125, 125));
        // A variable shift by a small count.
        let v = Scalar::alu(
            AluOp::Lsh,
            Width::W64,
            &Scalar::constant(1),
            &alu(AluOp::And, &x, 3),
        );
        assert_eq!((v.umin, v.umax), (1, 8));
        // The sign-extension idiom `r <<= 32; r s>>= 32`.
        let w = Scalar::alu(
            AluOp::Add,
            Width::W32,
            &Scalar::range_i64(-6, 4),
            &Scalar::constant(1),
        );
        let e = alu(AluOp::Arsh, &alu(AluOp::Lsh, &w, 32), 32);
        assert_eq!((e.smin, e.smax), (-5, 5));
        // Signed ranges survive 32-bit arithmetic.
        let w = Scalar::alu(
            AluOp::Add,
            Width::W32,
            &Scalar::range_i64(-5, 5),
            &Scalar::constant(1),
        );
        assert_eq!((w.s32min, w.s32max), (-4, 6));
    }

    #[test]
    fn thirty_two_bit_results_are_zero_extended() {
        let x = Scalar::unknown();
        for op in OPS {
            let r = Scalar::alu(op, Width::W32, &x, &x);
            assert!(r.umax <= 0xffff_ffff && r.smin >= 0, "{op:?}: {r}");
        }
        let r = Scalar::alu(AluOp::Mov, Width::W32, &x, &Scalar::constant(u64::MAX));
        assert_eq!(r.as_const(), Some(0xffff_ffff));
        let r = Scalar::alu(
            AluOp::Add,
            Width::W32,
            &Scalar::constant(0xffff_ffff),
            &Scalar::constant(1),
        );
        assert_eq!(r.as_const(), Some(0));
        let r = Scalar::alu(AluOp::And, Width::W32, &x, &Scalar::constant(0xff));
        assert_eq!((r.umin, r.umax), (0, 255));
        let r = Scalar::alu(
            AluOp::Lsh,
            Width::W32,
            &Scalar::constant(1),
            &Scalar::constant(35),
        );
        assert_eq!(r.as_const(), Some(8), "count masked with 31");
    }

    #[test]
    fn division_and_modulo() {
        let x = Scalar::unknown();
        let m = alu(AluOp::Mod, &x, 16);
        assert_eq!((m.umin, m.umax), (0, 15));
        let m = alu(AluOp::Mod, &x, 10);
        assert_eq!((m.umin, m.umax), (0, 9));
        let d = alu(AluOp::Div, &x, 16);
        assert_eq!(d.umax, u64::MAX >> 4);
        let d = alu(AluOp::Div, &Scalar::range_u64(100, 200), 10);
        assert_eq!((d.umin, d.umax), (10, 20));
        assert_eq!(alu(AluOp::Div, &x, 0).as_const(), Some(0));
        assert_eq!(
            alu(AluOp::Mod, &Scalar::range_u64(3, 9), 0),
            Scalar::range_u64(3, 9)
        );
        let m32 = Scalar::alu(
            AluOp::Mod,
            Width::W32,
            &Scalar::constant(0x1_0000_0007),
            &Scalar::constant(0),
        );
        assert_eq!(
            m32.as_const(),
            Some(7),
            "32-bit mod by zero keeps the low half"
        );
        let min = Scalar::constant(i64::MIN as u64);
        assert_eq!(
            alu(AluOp::SDiv, &min, u64::MAX).as_const(),
            Some(i64::MIN as u64)
        );
        assert_eq!(alu(AluOp::SMod, &min, u64::MAX).as_const(), Some(0));
        let min32 = Scalar::constant(0x8000_0000);
        let r = Scalar::alu(AluOp::SDiv, Width::W32, &min32, &Scalar::constant(u64::MAX));
        assert_eq!(r.as_const(), Some(0x8000_0000));
        let sm = alu(AluOp::SMod, &x, 16);
        assert_eq!((sm.smin, sm.smax), (-15, 15));
        let sm = alu(AluOp::SMod, &Scalar::range_i64(-100, -1), 7);
        assert_eq!((sm.smin, sm.smax), (-6, 0));
        let sd = alu(AluOp::SDiv, &Scalar::range_i64(-100, 50), (-4i64) as u64);
        assert_eq!((sd.smin, sd.smax), (-12, 25));
    }

    #[test]
    fn loads_endian_movsx() {
        assert_eq!(Scalar::loaded(1, false), Scalar::range_u64(0, 255));
        let s = Scalar::loaded(2, true);
        assert_eq!((s.smin, s.smax), (-32768, 32767));
        let x = Scalar::unknown();
        let b = x.endian(Order::Be, 16);
        assert_eq!((b.umin, b.umax), (0, 0xffff));
        let b = Scalar::constant(0x1234).endian(Order::Swap, 16);
        assert_eq!(b.as_const(), Some(0x3412));
        let l = x.endian(Order::Le, 32);
        assert_eq!(l.umax, 0xffff_ffff);
        let m = Scalar::range_u64(0, 100).movsx(Width::W64, 8);
        assert_eq!((m.smin, m.smax), (0, 100));
        let m = x.movsx(Width::W64, 8);
        assert_eq!((m.smin, m.smax), (-128, 127));
        let m = Scalar::constant(0xff).movsx(Width::W32, 8);
        assert_eq!(m.as_const(), Some(0xffff_ffff));
    }

    #[test]
    fn branches_narrow_and_detect_impossible_edges() {
        let x = Scalar::unknown();
        let ten = Scalar::constant(10);
        let (t, _) = Scalar::refine(Cond::Gt, Width::W64, &x, &ten, true).unwrap();
        assert_eq!(t.umin, 11);
        let (f, _) = Scalar::refine(Cond::Gt, Width::W64, &x, &ten, false).unwrap();
        assert_eq!((f.umin, f.umax), (0, 10));
        let (s, _) = Scalar::refine(Cond::Sge, Width::W64, &x, &Scalar::constant(0), true).unwrap();
        assert_eq!((s.smin, s.umax), (0, i64::MAX as u64));
        let (e, _) = Scalar::refine(Cond::Eq, Width::W64, &x, &ten, true).unwrap();
        assert_eq!(e.as_const(), Some(10));
        let (n, _) =
            Scalar::refine(Cond::Ne, Width::W64, &Scalar::range_u64(10, 20), &ten, true).unwrap();
        assert_eq!(n.umin, 11);
        // Impossible edges.
        assert!(Scalar::refine(
            Cond::Eq,
            Width::W64,
            &Scalar::constant(5),
            &Scalar::constant(6),
            true
        )
        .is_none());
        assert!(Scalar::refine(
            Cond::Gt,
            Width::W64,
            &Scalar::range_u64(0, 10),
            &Scalar::constant(20),
            true
        )
        .is_none());
        assert!(Scalar::refine(Cond::Lt, Width::W64, &x, &Scalar::constant(0), true).is_none());
        let even = alu(AluOp::Lsh, &x, 1);
        assert!(Scalar::refine(Cond::Eq, Width::W64, &even, &Scalar::constant(7), true).is_none());
        assert!(Scalar::refine(Cond::Set, Width::W64, &even, &Scalar::constant(1), true).is_none());
        // jset: not taken clears the bits; taken on one bit sets it.
        let (c, _) =
            Scalar::refine(Cond::Set, Width::W64, &x, &Scalar::constant(0xf0), false).unwrap();
        assert_eq!(c.bits.mask & 0xf0, 0);
        assert_eq!(c.bits.value & 0xf0, 0);
        let (c, _) = Scalar::refine(Cond::Set, Width::W64, &x, &Scalar::constant(4), true).unwrap();
        assert!(c.bits.value & 4 != 0 && c.umin == 4);
        // A 32-bit compare narrows the 64-bit range when the high half is known zero.
        let z = Scalar::alu(AluOp::Mov, Width::W32, &x, &x);
        let (c, _) =
            Scalar::refine(Cond::Lt, Width::W32, &z, &Scalar::constant(100), true).unwrap();
        assert_eq!((c.umin, c.umax), (0, 99));
        // ... and only the low half when it is not.
        let (c, _) =
            Scalar::refine(Cond::Lt, Width::W32, &x, &Scalar::constant(100), true).unwrap();
        assert_eq!(
            (c.u32min, c.u32max, c.umax),
            (0, 99, u64::MAX - (0xffff_ffff - 99))
        );
        // The mask-then-bound idiom.
        let m = alu(AluOp::And, &x, 0xff);
        let (c, _) = Scalar::refine(Cond::Lt, Width::W64, &m, &Scalar::constant(16), true).unwrap();
        assert_eq!((c.umin, c.umax), (0, 15));
        // Both operands narrow: a < b with b <= 10 puts a below 10.
        let (a2, b2) =
            Scalar::refine(Cond::Lt, Width::W64, &x, &Scalar::range_u64(3, 10), true).unwrap();
        assert_eq!((a2.umax, b2.umin), (9, 3));
    }

    #[test]
    fn join_subsumes_display() {
        let j = Scalar::constant(1).join(&Scalar::constant(3));
        assert_eq!((j.umin, j.umax, j.bits), (1, 3, Tnum { value: 1, mask: 2 }));
        assert!(Scalar::range_u64(0, 10).subsumes(&Scalar::range_u64(2, 5)));
        assert!(!Scalar::range_u64(2, 5).subsumes(&Scalar::range_u64(0, 10)));
        assert!(Scalar::unknown().subsumes(&Scalar::range_u64(2, 5)));
        assert_eq!(Scalar::constant(7).to_string(), "7");
        assert_eq!(Scalar::constant(u64::MAX).to_string(), "-1");
        assert_eq!(Scalar::constant(0xdead_beef).to_string(), "0xdeadbeef");
        assert_eq!(Scalar::unknown().to_string(), "scalar()");
        let m = alu(AluOp::And, &Scalar::unknown(), 0xff);
        assert_eq!(m.to_string(), "scalar(umin=0,umax=255,var=(0x0; 0xff))");
        assert_eq!(
            Scalar::loaded(1, true).to_string(),
            "scalar(smin=-128,smax=127)"
        );
    }
}
