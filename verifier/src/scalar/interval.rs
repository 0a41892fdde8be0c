//! The interval domain: [`Iv`], the unsigned and signed range of one width (64 or 32
//! bits), and its transfer functions for add, sub, mul, and, or (exact unwrapped
//! intervals, then wrapped back into each view).

use bpf2ptx_compiler::isa::table::AluOp;

/// The unsigned and signed range of one width (64 or 32 bits; 32-bit bounds are stored
/// widened). Transfer functions for arithmetic are written once over this.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Iv {
    pub(super) umin: u64,
    pub(super) umax: u64,
    pub(super) smin: i64,
    pub(super) smax: i64,
}

pub(super) fn umax_of(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

pub(super) fn smin_of(bits: u32) -> i64 {
    i64::MIN >> (64 - bits)
}

pub(super) fn smax_of(bits: u32) -> i64 {
    i64::MAX >> (64 - bits)
}

/// The low `bits` bits of `v` read as a signed number.
pub(super) fn sview(v: u64, bits: u32) -> i64 {
    ((v << (64 - bits)) as i64) >> (64 - bits)
}

impl Iv {
    pub(super) fn full(bits: u32) -> Iv {
        Iv {
            umin: 0,
            umax: umax_of(bits),
            smin: smin_of(bits),
            smax: smax_of(bits),
        }
    }

    pub(super) fn constant(v: u64, bits: u32) -> Iv {
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
    pub(super) fn meet(self, o: Iv) -> Iv {
        Iv {
            umin: self.umin.max(o.umin),
            umax: self.umax.min(o.umax),
            smin: self.smin.max(o.smin),
            smax: self.smax.min(o.smax),
        }
    }

    pub(super) fn is_empty(self) -> bool {
        self.umin > self.umax || self.smin > self.smax
    }

    /// The constant this range pins down, if any.
    pub(super) fn as_const(self) -> Option<u64> {
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
        // `x >> bits` is `x.div_euclid(n)` for n = 2^bits (an arithmetic shift rounds
        // towards minus infinity), without a 128-bit division.
        let (ql, qh) = (lo >> bits, hi >> bits);
        if ql == qh {
            r.umin = (lo - ql * n) as u64;
            r.umax = (hi - ql * n) as u64;
        }
        let (ql, qh) = ((lo + half) >> bits, (hi + half) >> bits);
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

pub(super) fn iv_mul(a: Iv, b: Iv, bits: u32) -> Iv {
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

/// The ranges of the same ops at width `bits` (xor: none; the tnum covers it).
pub(super) fn iv_op(op: AluOp, a: Iv, b: Iv, bits: u32) -> Iv {
    match op {
        AluOp::Add => iv_add(a, b, bits),
        AluOp::Sub => iv_sub(a, b, bits),
        AluOp::Mul => iv_mul(a, b, bits),
        AluOp::And => iv_and(a, b, bits),
        AluOp::Or => iv_or(a, b, bits),
        _ => Iv::full(bits),
    }
}
