//! Arithmetic: the 64- and 32-bit ALU operations, with BPF's masking of shift counts and
//! its answers for division and modulo by zero and by -1, where PTX has none.
//! 64-bit operations on numbers the verifier proved below 2^32 (`Facts::upper_zero`) are
//! computed in 32 bits where the result is the same (`alu64_narrow`).

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
    /// Whether register `r` holds a number below 2^32 on entry to the current instruction
    /// on every path (`Facts::upper_zero`).
    pub(super) fn upper_zero(&self, r: u8) -> bool {
        (self.facts.upper_zero.get(self.cur)).is_some_and(|m| m & (1 << r) != 0)
    }

    /// Whether the second operand of a 64-bit operation is below 2^32: an immediate is
    /// sign-extended, so a non-negative one is; a register by `Facts::upper_zero`.
    pub(super) fn rhs_upper_zero(&self, src: Src, s: u8, imm: i64) -> bool {
        match src {
            Src::K => imm >= 0,
            Src::X => self.upper_zero(s),
        }
    }

    /// A 64-bit ALU operation on `%r{d}` computed in 32 bits, when `Facts::upper_zero`
    /// proves the 64-bit result is the 32-bit one zero-extended; false (nothing written)
    /// otherwise. A 64-bit shift or compare is two or more GPU instructions (a pair of
    /// 32-bit halves), a 32-bit one is one, and a 64-bit division is a subroutine call;
    /// ptxas cannot narrow them itself because it does not know that a value branched on
    /// earlier (`if (v >> 32)` in a log2) is below 2^32. The zero-extension keeps `%r{d}`
    /// right for every later use. With `x` and `y` below 2^32: `x & y`, `x | y`,
    /// `x ^ y`, `x / y`, `x % y` (the signed forms too: both are non-negative) and `x >> k`
    /// (`s>>` too: the sign bit is clear) are below 2^32 and equal to their 32-bit forms on
    /// the low halves; `x & y` needs only one of them narrow. A shift by 32 to 63 gives 0:
    /// a constant one is written as 0, a register one by `shr.u32`, which clamps counts
    /// above 32 to 32.
    pub(super) fn alu64_narrow(&mut self, op: AluOp, d: u8, s: u8, src: Src, imm: i64) -> bool {
        let (dn, rn) = (self.upper_zero(d), self.rhs_upper_zero(src, s, imm));
        let applies = match op {
            AluOp::And => dn || (src == Src::X && rn),
            AluOp::Or | AluOp::Xor => dn && rn,
            AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod => dn && rn,
            AluOp::Rsh | AluOp::Arsh => dn,
            AluOp::Add | AluOp::Sub | AluOp::Mul | AluOp::Mov | AluOp::Lsh => false,
        };
        if !applies {
            return false;
        }
        let r = format!("%r{d}");
        if matches!(op, AluOp::Rsh | AluOp::Arsh) && src == Src::K && imm & 63 >= 32 {
            self.l(format!("mov.u64 {r}, 0;"));
            return true;
        }
        let rhs = match src {
            Src::K => format!("{}", imm as i32),
            Src::X => {
                self.l(format!("cvt.u32.u64 %w1, %r{s};"));
                "%w1".to_string()
            }
        };
        self.l(format!("cvt.u32.u64 %w0, {r};"));
        match op {
            AluOp::Rsh | AluOp::Arsh if src == Src::K => {
                self.l(format!("shr.u32 %w0, %w0, {};", imm & 63))
            }
            AluOp::Rsh | AluOp::Arsh => {
                self.l("and.b32 %w2, %w1, 63;");
                self.l("shr.u32 %w0, %w0, %w2;");
            }
            AluOp::Div | AluOp::SDiv => self.alu32(AluOp::Div, &rhs, src, imm as i32),
            AluOp::Mod | AluOp::SMod => self.alu32(AluOp::Mod, &rhs, src, imm as i32),
            _ => self.alu32(op, &rhs, src, imm as i32),
        }
        self.l(format!("cvt.u64.u32 {r}, %w0;"));
        true
    }

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
