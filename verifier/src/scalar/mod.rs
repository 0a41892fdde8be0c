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

mod display;
mod interval;
mod normalize;
mod ops;
mod refine;
#[cfg(test)]
mod tests;
mod tnum;

use interval::{smax_of, smin_of, umax_of, Iv};
pub use tnum::Tnum;

const SIGN: u64 = 1 << 63;
const LO32: u64 = 0xffff_ffff;
const SIGN32: u64 = 1 << 31;
const TWO32: i128 = 1 << 32;
const HALF32: i128 = 1 << 31;

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
        self.subsumes_view_by_view(&o)
    }

    /// [`Scalar::subsumes`] without normalizing `other` first: every view of `other`
    /// inside the same view of `self`. Sound for any `other` (a value that satisfies all of
    /// `other`'s views then satisfies all of `self`'s), and as precise as `subsumes` when
    /// `other` is normalized, which saves the normalization when one value is compared with
    /// many (the explorer normalizes a state once and tests it against every stored one).
    pub fn subsumes_view_by_view(&self, o: &Scalar) -> bool {
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
