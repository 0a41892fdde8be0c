//! ALU instructions on registers holding pointers: the pointer-arithmetic rules (plain
//! numbers go to the scalar domain).

use super::diag::CHECK_NULL;
use super::{Explorer, R};
use crate::scalar::Scalar;
use crate::state::{Reg, Region, State};
use crate::Rule;
use bpf2ptx_compiler::isa::table::{AluOp, Width};

impl<'a> Explorer<'a> {
    /// ALU operations involving pointers follow the rules for pointer arithmetic; plain
    /// numbers use the scalar domain.
    pub(super) fn alu(
        &self,
        st: &State,
        i: usize,
        op: AluOp,
        w: Width,
        lhs: Reg,
        rhs: Reg,
    ) -> R<Reg> {
        let d = self.prog.insns[i].dst;
        let s = self.prog.insns[i].src;
        match (lhs, rhs) {
            (Reg::Scalar(a), Reg::Scalar(b)) => Ok(Reg::Scalar(Scalar::alu(op, w, &a, &b))),
            (Reg::Ptr(r, off), Reg::Scalar(b))
                if w == Width::W64 && matches!(op, AluOp::Add | AluOp::Sub) =>
            {
                self.ptr_arith(st, i, r, Scalar::alu(op, Width::W64, &off, &b))
            }
            (Reg::Scalar(a), Reg::Ptr(r, off)) if w == Width::W64 && op == AluOp::Add => {
                self.ptr_arith(st, i, r, Scalar::alu(op, Width::W64, &off, &a))
            }
            (Reg::Ptr(r1, _), Reg::Ptr(r2, _))
                if w == Width::W64 && op == AluOp::Sub && r1 == r2 =>
            {
                Ok(Reg::Scalar(Scalar::unknown()))
            }
            (l @ (Reg::MapValueOrNull { .. } | Reg::RecordOrNull { .. }), _) => Err(self
                .diag(
                    Rule::NullDeref,
                    i,
                    st,
                    &[d],
                    format!(
                        "arithmetic on r{d} before it is checked against NULL: it is {}",
                        self.speaker().value(&l)
                    ),
                )
                .with_help(CHECK_NULL)),
            (l, r) => {
                let which = if l.is_pointer() { d } else { s };
                let p = if l.is_pointer() { l } else { r };
                let _ = which;
                Err(self.diag(Rule::PointerArith, i, st, &[d, s], format!("{op:?} ({w:?}) on a pointer ({}) is not allowed: only 64-bit add/sub of a number", self.speaker().value(&p))))
            }
        }
    }

    fn ptr_arith(&self, _st: &State, _i: usize, r: Region, off: Scalar) -> R<Reg> {
        // A context pointer moved by a variable amount is rejected where it is used (an
        // access or a helper argument), so that the check reads only relevant values.
        Ok(Reg::Ptr(r, off))
    }
}
