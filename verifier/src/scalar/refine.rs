//! Branch refinement: [`Scalar::refine`] narrows both operands of a conditional jump to
//! the values that can take the edge, one width at a time (the relation per edge, then
//! `narrow` on the ranges and known bits of each operand).

use bpf2ptx_compiler::isa::table::{Cond, Width};

use super::interval::{sview, Iv};
use super::tnum::{low_bits, Tnum};
use super::Scalar;

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
}
