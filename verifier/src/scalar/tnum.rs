//! The tristate-number domain: [`Tnum`], the known bits of a scalar, with its wrapping
//! arithmetic, bitwise operations and shifts, and the order queries (`min_ge`, `max_le`)
//! that let the known bits bound the ranges.

use super::LO32;

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
    pub(super) fn trunc32(self) -> Tnum {
        Tnum {
            value: self.value & LO32,
            mask: self.mask & LO32,
        }
    }

    /// The low `bits` bits (1..=64), sign-extended.
    pub(super) fn sext(self, bits: u32) -> Tnum {
        self.lsh(64 - bits).arsh(64 - bits)
    }

    /// The same tnum with the bits of `m` inverted (known bits flip, unknown stay unknown):
    /// maps the signed order onto the unsigned one when `m` is the sign bit.
    pub(super) fn flip(self, m: u64) -> Tnum {
        Tnum {
            value: self.value ^ (m & !self.mask),
            mask: self.mask,
        }
    }

    /// The smallest member `>= x`, if any.
    pub(super) fn min_ge(self, x: u64) -> Option<u64> {
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
    pub(super) fn max_le(self, x: u64) -> Option<u64> {
        let not = Tnum {
            value: !self.value & !self.mask,
            mask: self.mask,
        };
        not.min_ge(!x).map(|v| !v)
    }
}

/// Upper 32 bits unknown, lower 32 bits from `t`.
pub(super) fn low_bits(t: Tnum) -> Tnum {
    Tnum {
        value: t.value & LO32,
        mask: t.mask | !LO32,
    }
}
