//! The reduced product: [`Scalar::normalize`] propagates information between the views
//! (tnum <-> ranges, unsigned <-> signed, 64 <-> 32 bits) until they agree, and detects an
//! empty set.

use super::interval::Iv;
use super::tnum::{low_bits, Tnum};
use super::{Scalar, HALF32, SIGN, SIGN32, TWO32};

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

/// `x.div_euclid(2^32)` and `x.rem_euclid(2^32)` by a shift and a mask (the arithmetic
/// shift rounds towards minus infinity), without a 128-bit division.
fn block(x: i128) -> (i128, i128) {
    (x >> 32, x & (TWO32 - 1))
}

/// For `x` in `lo..=hi`: if every `x + off` lies in one aligned 2^32 block, the range of
/// `(x + off) mod 2^32 - off` (the low-half view: `off` 0 unsigned, 2^31 signed).
fn project(lo: i128, hi: i128, off: i128) -> Option<(i128, i128)> {
    let ((ba, ra), (bb, rb)) = (block(lo + off), block(hi + off));
    (ba == bb).then(|| (ra - off, rb - off))
}

/// Shrinks `lo..=hi` to the least and greatest `x` whose `(x + off) mod 2^32` lies in
/// `l..=h` (`0 <= l <= h < 2^32`); `None` if there is none.
fn tighten(lo: i128, hi: i128, off: i128, l: i128, h: i128) -> Option<(i128, i128)> {
    let (a, b) = (lo + off, hi + off);
    let (ba, ra) = block(a);
    let a = if ra < l {
        ba * TWO32 + l
    } else if ra > h {
        (ba + 1) * TWO32 + l
    } else {
        a
    };
    let (bb, rb) = block(b);
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

impl Scalar {
    /// Propagates information between the views until they agree, so that each view is as
    /// tight as the others allow. Returns `false` when the views admit no value at all (an
    /// impossible path); the fields are then meaningless.
    #[must_use]
    pub fn normalize(&mut self) -> bool {
        // A known constant (the commonest value) is the one value every view must admit:
        // no propagation needed.
        if self.bits.mask == 0 {
            let v = self.bits.value;
            let admitted = (self.umin..=self.umax).contains(&v)
                && (self.smin..=self.smax).contains(&(v as i64))
                && (self.u32min..=self.u32max).contains(&(v as u32))
                && (self.s32min..=self.s32max).contains(&(v as i32));
            *self = Scalar::constant(v);
            return admitted;
        }
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
    pub(super) fn norm(mut self) -> Scalar {
        if self.normalize() {
            self
        } else {
            Scalar::unknown()
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
}
