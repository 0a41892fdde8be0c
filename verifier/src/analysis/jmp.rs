//! Conditional jumps: the feasible successors with the state refined by the condition,
//! null checks of map lookups and ringbuf reserves, and the registers linked to a refined
//! one.

use super::{Explorer, Step, R};
use crate::scalar::Scalar;
use crate::state::{Reg, Region, Slot, State};
use crate::Rule;
use bpf2ptx_compiler::isa::table::{AluOp, Cond, Src, Width};

/// After a branch narrowed register `r` to `v`: every register linked to `r` (holding
/// `r + c` for a constant `c`) is narrowed to its old value intersected with `v + c`.
fn narrow_linked(f: &mut crate::state::Frame, r: u8, v: &Scalar) {
    let (id, delta) = f.links[r as usize];
    if id == 0 {
        return;
    }
    for o in 0..11 {
        let (oid, odelta) = f.links[o];
        if o == r as usize || oid != id {
            continue;
        }
        let Reg::Scalar(old) = f.regs[o] else {
            continue;
        };
        // A copy (same delta) that admits all of `v`: the intersection is `v` itself, with
        // no addition and no refinement to compute (the common case: `r6 = r0`, then
        // branches on r6).
        if odelta == delta && old.subsumes_view_by_view(v) {
            f.regs[o] = Reg::Scalar(*v);
            continue;
        }
        let c = Scalar::constant(odelta.wrapping_sub(delta));
        let shifted = Scalar::alu(AluOp::Add, Width::W64, v, &c);
        if let Some((met, _)) = Scalar::refine(Cond::Eq, Width::W64, &old, &shifted, true) {
            f.regs[o] = Reg::Scalar(met);
        }
    }
}

fn is_zero(r: &Reg) -> bool {
    matches!(r, Reg::Scalar(k) if k.as_const() == Some(0))
}

impl<'a> Explorer<'a> {
    /// A conditional jump: the successors it may have, each with the state refined by the
    /// condition; records which ways it went for [`Facts::branch_always`].
    ///
    /// [`Facts::branch_always`]: crate::Facts::branch_always
    pub(super) fn branch(&mut self, st: State, i: usize, c: Cond, w: Width, src: Src) -> R<Step> {
        let step = self.branch_succs(st, i, c, w, src)?;
        let went = &mut self.went[i];
        match &step {
            Step::Branch(..) => *went = (true, true),
            Step::Next(_, n) if *n == i + 1 => went.1 = true,
            Step::Next(..) => went.0 = true,
            Step::End | Step::Loop { .. } => {}
        }
        Ok(step)
    }

    fn branch_succs(&mut self, st: State, i: usize, c: Cond, w: Width, src: Src) -> R<Step> {
        let ins = self.prog.insns[i];
        let (d, s) = (ins.dst, ins.src);
        let t = self.target(i);
        let a = self.read(&st, i, d)?;
        let b = match src {
            Src::K => Reg::constant(match w {
                Width::W64 => ins.imm as u64,
                Width::W32 => ins.imm as u32 as u64,
            }),
            Src::X => self.read(&st, i, s)?,
        };
        // A nullable pointer compared with 0 is the null check.
        let null_check = |x: &Reg, y: &Reg| {
            matches!(x, Reg::MapValueOrNull { .. } | Reg::RecordOrNull { .. })
                && matches!(y, Reg::Scalar(k) if k.as_const() == Some(0))
        };
        if w == Width::W64 && matches!(c, Cond::Eq | Cond::Ne) && null_check(&a, &b) {
            let (null, nonnull) = (
                self.with_null(&st, &a, true),
                self.with_null(&st, &a, false),
            );
            let (on_taken, on_fall) = if c == Cond::Eq {
                (null, nonnull)
            } else {
                (nonnull, null)
            };
            return Ok(Step::Branch((on_fall, i + 1), (on_taken, t)));
        }
        match (&a, &b) {
            (Reg::Scalar(x), Reg::Scalar(y)) => {
                let taken = Scalar::refine(c, w, x, y, true);
                let fall = Scalar::refine(c, w, x, y, false);
                let apply = |mut st: State, (x2, y2): (Scalar, Scalar)| {
                    st.cur_mut().regs[d as usize] = Reg::Scalar(x2);
                    narrow_linked(st.cur_mut(), d, &x2);
                    if src == Src::X {
                        st.cur_mut().regs[s as usize] = Reg::Scalar(y2);
                        narrow_linked(st.cur_mut(), s, &y2);
                    }
                    st
                };
                match (taken, fall) {
                    (Some(tk), Some(fl)) => Ok(Step::Branch(
                        (apply(st.clone(), fl), i + 1),
                        (apply(st, tk), t),
                    )),
                    (Some(tk), None) => Ok(Step::Next(apply(st, tk), t)),
                    (None, Some(fl)) => Ok(Step::Next(apply(st, fl), i + 1)),
                    (None, None) => Ok(Step::End),
                }
            }
            // Pointers compare with pointers, and with NULL (a pointer already known valid
            // too: both ways are explored, neither refined).
            _ if a.is_pointer() && b.is_pointer()
                || null_check(&b, &a)
                || (w == Width::W64
                    && matches!(c, Cond::Eq | Cond::Ne)
                    && (is_zero(&a) || is_zero(&b))) =>
            {
                Ok(Step::Branch((st.clone(), i + 1), (st, t)))
            }
            _ => Err(self.diag(
                Rule::PointerArith,
                i,
                &st,
                &[d, s],
                "comparing a pointer with a number leaks the pointer's value".into(),
            )),
        }
    }

    /// The state after a null check of `v` decided it: every copy of the same lookup
    /// (registers and spills, in all frames) becomes NULL or a valid pointer.
    fn with_null(&self, st: &State, v: &Reg, is_null: bool) -> State {
        let (id, valid) = match *v {
            Reg::MapValueOrNull { map, id } => {
                (id, Reg::Ptr(Region::MapValue { map }, Scalar::constant(0)))
            }
            Reg::RecordOrNull { size, id } => (
                id,
                Reg::Ptr(Region::Record { size, id }, Scalar::constant(0)),
            ),
            _ => unreachable!("only nullable pointers"),
        };
        let mut st = st.clone();
        let fix = |r: &mut Reg| {
            let same = matches!(r, Reg::MapValueOrNull { id: x, .. } | Reg::RecordOrNull { id: x, .. } if *x == id);
            if same {
                *r = if is_null {
                    Reg::constant(0)
                } else {
                    valid.clone()
                };
            }
        };
        for f in &mut st.frames {
            f.regs.iter_mut().for_each(fix);
            for slot in &mut f.stack {
                if let Slot::Spill(r) = slot {
                    fix(r);
                }
            }
        }
        if is_null {
            // A failed reserve holds nothing to release.
            st.refs.retain(|(x, _)| *x != id);
        }
        st
    }
}
