//! Arithmetic: the 64- and 32-bit ALU operations, with BPF's masking of shift counts and
//! its answers for division and modulo by zero and by -1, where PTX has none.

use super::func::FuncWriter;
use crate::isa::table::{AluOp, Src};

/// An immediate divisor as the unsigned value an unsigned division uses: the
/// sign-extended 64-bit value, or its low 32 bits for a 32-bit operation.
fn unsigned_divisor(k: i64, bits: &str) -> u64 {
    if bits == "32" {
        u64::from(k as u32)
    } else {
        k as u64
    }
}

impl FuncWriter<'_> {
    pub(super) fn alu64(&mut self, op: AluOp, d: u8, rhs: &str, src: Src, imm: i64) {
        let r = format!("%r{d}");
        let simple = |o: &str| format!("{o} {r}, {r}, {rhs};");
        match op {
            AluOp::Add => self.l(simple("add.u64")),
            AluOp::Sub => self.l(simple("sub.u64")),
            AluOp::Mul => self.l(simple("mul.lo.u64")),
            AluOp::Or => self.l(simple("or.b64")),
            AluOp::And => self.l(simple("and.b64")),
            AluOp::Xor => self.l(simple("xor.b64")),
            AluOp::Mov => self.l(format!("mov.u64 {r}, {rhs};")),
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
                let o = match op {
                    AluOp::Lsh => "shl.b64",
                    AluOp::Rsh => "shr.u64",
                    _ => "shr.s64",
                };
                if src == Src::K {
                    self.l(format!("{o} {r}, {r}, {};", imm & 63));
                } else {
                    self.l(format!("cvt.u32.u64 %w2, {rhs};"));
                    self.l("and.b32 %w2, %w2, 63;");
                    self.l(format!("{o} {r}, {r}, %w2;"));
                }
            }
            AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod => {
                self.divide(op, &r, rhs, src, imm, "64", "%t0")
            }
        }
    }

    pub(super) fn alu32(&mut self, op: AluOp, rhs: &str, src: Src, imm: i32) {
        let simple = |o: &str| format!("{o} %w0, %w0, {rhs};");
        match op {
            AluOp::Add => self.l(simple("add.u32")),
            AluOp::Sub => self.l(simple("sub.u32")),
            AluOp::Mul => self.l(simple("mul.lo.u32")),
            AluOp::Or => self.l(simple("or.b32")),
            AluOp::And => self.l(simple("and.b32")),
            AluOp::Xor => self.l(simple("xor.b32")),
            AluOp::Mov => self.l(format!("mov.u32 %w0, {rhs};")),
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
                let o = match op {
                    AluOp::Lsh => "shl.b32",
                    AluOp::Rsh => "shr.u32",
                    _ => "shr.s32",
                };
                if src == Src::K {
                    self.l(format!("{o} %w0, %w0, {};", imm & 31));
                } else {
                    self.l("and.b32 %w2, %w1, 31;");
                    self.l(format!("{o} %w0, %w0, %w2;"));
                }
            }
            AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod => {
                self.divide(op, "%w0", rhs, src, i64::from(imm), "32", "%w3")
            }
        }
    }

    /// Division and modulo with BPF's answers where PTX has none: x / 0 = 0, x % 0 = x,
    /// x s/ -1 = -x, x s% -1 = 0.
    #[allow(clippy::too_many_arguments)]
    fn divide(
        &mut self,
        op: AluOp,
        dst: &str,
        rhs: &str,
        src: Src,
        imm: i64,
        bits: &str,
        _tmp: &str,
    ) {
        let signed = matches!(op, AluOp::SDiv | AluOp::SMod);
        let is_div = matches!(op, AluOp::Div | AluOp::SDiv);
        let (u, s) = (format!("u{bits}"), format!("s{bits}"));
        let instr = if is_div { "div" } else { "rem" };
        let t = if signed { &s } else { &u };
        if src == Src::K {
            let k = if bits == "32" {
                i64::from(imm as i32)
            } else {
                imm
            };
            if k == 0 {
                if is_div {
                    self.l(format!("mov.{u} {dst}, 0;"));
                }
            } else if signed && k == -1 {
                if is_div {
                    self.l(format!("neg.{s} {dst}, {dst};"));
                } else {
                    self.l(format!("mov.{u} {dst}, 0;"));
                }
            } else if !signed && unsigned_divisor(k, bits).is_power_of_two() {
                // ptxas turns every 64-bit div/rem into a subroutine call; by a power of
                // two they are a shift and a mask.
                let d = unsigned_divisor(k, bits);
                if is_div {
                    self.l(format!("shr.b{bits} {dst}, {dst}, {};", d.trailing_zeros()));
                } else {
                    self.l(format!("and.b{bits} {dst}, {dst}, {};", d - 1));
                }
            } else {
                self.l(format!("{instr}.{t} {dst}, {dst}, {rhs};"));
            }
            return;
        }
        // Without a proof that the divisor is non-zero, test it: PTX leaves x / 0 undefined.
        let may_be_zero = (self.facts.divisor_may_be_zero.get(self.cur).copied()).unwrap_or(true);
        if !may_be_zero && !signed {
            self.l(format!("{instr}.{t} {dst}, {dst}, {rhs};"));
            return;
        }
        if may_be_zero {
            self.l(format!("setp.eq.{u} %p1, {rhs}, 0;"));
        } else {
            self.l("setp.ne.u32 %p1, 0, 0;");
        }
        if signed {
            self.l(format!("setp.eq.{s} %p2, {rhs}, -1;"));
            self.l("or.pred %p3, %p1, %p2;");
            if is_div {
                self.l(format!("@%p2 neg.{s} {dst}, {dst};"));
            } else {
                self.l(format!("@%p2 mov.{u} {dst}, 0;"));
            }
        } else {
            self.l("mov.pred %p3, %p1;");
        }
        if is_div {
            self.l(format!("@%p1 mov.{u} {dst}, 0;"));
        }
        self.l(format!("@!%p3 {instr}.{t} {dst}, {dst}, {rhs};"));
    }
}
