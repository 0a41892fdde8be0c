//! What an instruction does besides computing a value: where control goes next
//! ([`Flow`]), which registers it reads and writes ([`RegEffect`]) and which memory it
//! accesses ([`Access`]).
//!
//! These are derived from the opcode table's [`Kind`] column, once, by exhaustive matches
//! (no `_` arm): a new row whose kind is not covered here does not compile, instead of
//! silently falling through somewhere. Every pass that needs an instruction's control
//! flow or register traffic reads it from here, not from its own match on [`Kind`]:
//!
//! ```text
//!  table.rs  Kind ──▶ effect.rs  Flow, RegEffect, Access   (one instruction)
//!                        │
//!                        ▼
//!  cfg.rs    Cfg: functions, slot ↔ index, resolved targets, successors (one program)
//!                        │
//!     ┌──────────────────┼─────────────────────┬──────────────────────┐
//!     ▼                  ▼                     ▼                      ▼
//!  verifier         verifier analysis     backend frame.rs       interpreter
//!  structure.rs     (explore, relevance,  and the labels of      (jump and call
//!  (rules)          plain_add liveness)   func.rs                targets)
//! ```
//!
//! Why the effect is not a hand-written column of each row: [`Kind`] already names the
//! meaning of every row, and a second column would have to agree with it row by row. A
//! `const fn` over [`Kind`] cannot disagree, and the compiler checks it is complete.
//!
//! The effects are the ISA's, not any one pass's: a call here reads its arguments
//! ([`RegEffect::args`], all of r1-r5; which of them a helper really takes is its
//! prototype's business), defines r0 and leaves r1-r5 undefined. A pass that knows
//! more (the verifier's helper prototypes) narrows these sets itself.
//!
//! The accessors are `#[inline]`: the verifier and the backend are other crates and ask
//! for effects in their inner loops (every step, every instruction of a frame analysis),
//! where a call per query would also keep the caller from dropping the parts it ignores
//! (the backend's frame bound reads only a call's [`RegEffect::args`]).

use super::insn::Insn;
use super::table::{AluOp, AtomicOp, CallKind, Kind, Pseudo, Size, Src};

/// Where a pc-relative target is held: `off` (16 bits) or `imm` (32 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// The 16-bit `off` field (`ja`, conditional jumps).
    Off,
    /// The 32-bit `imm` field (`gotol`).
    Imm,
}

impl Field {
    /// The field's value in an instruction.
    #[inline]
    pub fn read(self, insn: &Insn) -> i64 {
        match self {
            Field::Off => i64::from(insn.off),
            Field::Imm => insn.imm,
        }
    }
}

/// Where control goes after an instruction.
///
/// Targets are pc-relative in slots, counted from the slot after the instruction
/// (`pc + 1 + rel`); [`crate::cfg::Cfg`] resolves them to instruction indices. An
/// `ld_imm64` is [`Flow::Next`]: it occupies two slots ([`Insn::slots`]), control
/// continues after both, and its second slot is never a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flow {
    /// Continues at the next instruction.
    Next,
    /// Always continues at the target held in the field (`ja`, `gotol`).
    Jump(Field),
    /// Continues at the target held in the field or at the next instruction (a
    /// conditional jump; a `may_goto` would be one too, with both successors).
    Branch(Field),
    /// A call by immediate: it returns to the next instruction. A local call enters the
    /// function at `imm` first ([`Insn::func_rel`]).
    Call(CallKind),
    /// An indirect call through `dst`; it returns to the next instruction.
    Callx,
    /// Leaves the function (returns r0 to the caller, or ends the program).
    Exit,
}

impl Flow {
    /// Whether control may continue at the next instruction.
    #[inline]
    pub const fn falls_through(self) -> bool {
        match self {
            Flow::Next | Flow::Branch(_) | Flow::Call(_) | Flow::Callx => true,
            Flow::Jump(_) | Flow::Exit => false,
        }
    }

    /// The field holding the jump target, for a jump or branch.
    #[inline]
    pub const fn jump_field(self) -> Option<Field> {
        match self {
            Flow::Jump(f) | Flow::Branch(f) => Some(f),
            Flow::Next | Flow::Call(_) | Flow::Callx | Flow::Exit => None,
        }
    }
}

impl Kind {
    /// Where control goes after an instruction of this kind.
    #[inline]
    pub const fn flow(self) -> Flow {
        match self {
            Kind::Alu(..)
            | Kind::Neg(_)
            | Kind::Movsx(..)
            | Kind::Endian(..)
            | Kind::LdImm64(_)
            | Kind::LdAbs(_)
            | Kind::LdInd(_)
            | Kind::Ldx(..)
            | Kind::St(_)
            | Kind::Stx(_)
            | Kind::Atomic(..) => Flow::Next,
            // may_goto (0xe5) jumps by `off` once the budget is spent, else falls through.
            Kind::Jmp(..) | Kind::MayGoto => Flow::Branch(Field::Off),
            Kind::Ja => Flow::Jump(Field::Off),
            Kind::Gotol => Flow::Jump(Field::Imm),
            Kind::Call(k) => Flow::Call(k),
            Kind::Callx => Flow::Callx,
            Kind::Exit => Flow::Exit,
        }
    }
}

/// Registers as a bit set: bit `n` is `rN`.
pub type Regs = u16;

/// r0: a call's result, what `exit` returns.
pub const R0: Regs = 1;
/// r1-r5: a call's arguments, which it leaves undefined.
pub const ARGS: Regs = 0b11_1110;
/// r6: the context register the legacy packet loads read.
pub const R6: Regs = 1 << 6;
/// r10: the read-only frame pointer.
pub const R10: Regs = 1 << 10;

/// The registers an instruction reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RegEffect {
    /// Registers whose value it reads (a call's arguments are in [`RegEffect::args`]).
    pub reads: Regs,
    /// The argument registers a call passes (r1-r5; which of them the callee reads is the
    /// callee's business).
    pub args: Regs,
    /// Registers it defines.
    pub writes: Regs,
    /// Registers it leaves undefined (a call's r1-r5).
    pub clobbers: Regs,
}

/// A memory access of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// Load, store or atomic read-modify-write.
    pub op: AccessOp,
    /// The register holding the base address.
    pub base: u8,
    /// The offset from the base.
    pub off: i16,
    /// The access size.
    pub size: Size,
}

/// What a memory access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessOp {
    /// Reads memory (`ldx`).
    Load,
    /// Writes memory (`st`, `stx`).
    Store,
    /// Reads and writes memory at once (an atomic operation).
    Atomic,
}

impl Insn {
    /// Where control goes after the instruction.
    #[inline]
    pub fn flow(&self) -> Flow {
        self.kind().flow()
    }

    /// The pc-relative target (in slots, from the next slot) of a jump or branch.
    #[inline]
    pub fn jump_rel(&self) -> Option<i64> {
        self.flow().jump_field().map(|f| f.read(self))
    }

    /// The pc-relative start of the function a local call enters or an `ld_imm64 func`
    /// takes the address of.
    #[inline]
    pub fn func_rel(&self) -> Option<i64> {
        match self.kind() {
            Kind::Call(CallKind::Local) => Some(self.imm),
            // The 64-bit immediate holds the offset in its low word.
            Kind::LdImm64(Pseudo::Func) => Some(i64::from(self.imm as i32)),
            Kind::Call(CallKind::Helper | CallKind::Kfunc)
            | Kind::LdImm64(
                Pseudo::Imm64
                | Pseudo::MapFd
                | Pseudo::MapValue
                | Pseudo::BtfId
                | Pseudo::MapIdx
                | Pseudo::MapIdxValue,
            )
            | Kind::Alu(..)
            | Kind::Neg(_)
            | Kind::Movsx(..)
            | Kind::Endian(..)
            | Kind::Jmp(..)
            | Kind::Ja
            | Kind::Gotol
            | Kind::MayGoto
            | Kind::Callx
            | Kind::Exit
            | Kind::LdAbs(_)
            | Kind::LdInd(_)
            | Kind::Ldx(..)
            | Kind::St(_)
            | Kind::Stx(_)
            | Kind::Atomic(..) => None,
        }
    }

    /// The registers the instruction reads and writes.
    #[inline]
    pub fn regs(&self) -> RegEffect {
        let d: Regs = 1 << self.dst;
        let s: Regs = 1 << self.src;
        let (reads, writes) = match self.kind() {
            Kind::Alu(AluOp::Mov, _, Src::K) => (0, d),
            Kind::Alu(AluOp::Mov, _, Src::X) => (s, d),
            Kind::Alu(_, _, Src::K) | Kind::Neg(_) | Kind::Endian(..) => (d, d),
            Kind::Alu(_, _, Src::X) => (d | s, d),
            Kind::Movsx(..) => (s, d),
            Kind::Jmp(_, _, Src::K) => (d, 0),
            Kind::Jmp(_, _, Src::X) => (d | s, 0),
            Kind::Ja | Kind::Gotol | Kind::MayGoto => (0, 0),
            Kind::Call(_) => {
                return RegEffect {
                    reads: 0,
                    args: ARGS,
                    writes: R0,
                    clobbers: ARGS,
                }
            }
            Kind::Callx => {
                return RegEffect {
                    reads: d,
                    args: ARGS,
                    writes: R0,
                    clobbers: ARGS,
                }
            }
            Kind::Exit => (R0, 0),
            Kind::LdImm64(_) => (0, d),
            // Legacy packet loads read the context in r6 and clobber r1-r5 like a call.
            Kind::LdAbs(_) | Kind::LdInd(_) => {
                let index = if matches!(self.kind(), Kind::LdInd(_)) {
                    s
                } else {
                    0
                };
                return RegEffect {
                    reads: R6 | index,
                    args: 0,
                    writes: R0,
                    clobbers: ARGS,
                };
            }
            Kind::Ldx(..) => (s, d),
            Kind::St(_) => (d, 0),
            Kind::Stx(_) => (d | s, 0),
            Kind::Atomic(_, op, fetch) => {
                let cmpxchg = op == AtomicOp::Cmpxchg;
                let reads = d | s | if cmpxchg { R0 } else { 0 };
                let writes = if cmpxchg {
                    R0
                } else if fetch {
                    s
                } else {
                    0
                };
                (reads, writes)
            }
        };
        RegEffect {
            reads,
            args: 0,
            writes,
            clobbers: 0,
        }
    }

    /// The memory the instruction accesses through a register, if any. The legacy packet
    /// loads read the socket buffer, not an address in a register, and calls access
    /// memory only as their callee does: neither has one.
    #[inline]
    pub fn access(&self) -> Option<Access> {
        let (op, base, size) = match self.kind() {
            Kind::Ldx(size, _) => (AccessOp::Load, self.src, size),
            Kind::St(size) | Kind::Stx(size) => (AccessOp::Store, self.dst, size),
            Kind::Atomic(size, ..) => (AccessOp::Atomic, self.dst, size),
            Kind::Alu(..)
            | Kind::Neg(_)
            | Kind::Movsx(..)
            | Kind::Endian(..)
            | Kind::Jmp(..)
            | Kind::Ja
            | Kind::Gotol
            | Kind::MayGoto
            | Kind::Call(_)
            | Kind::Callx
            | Kind::Exit
            | Kind::LdImm64(_)
            | Kind::LdAbs(_)
            | Kind::LdInd(_) => return None,
        };
        Some(Access {
            op,
            base,
            off: self.off,
            size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::table::OPCODES;

    #[test]
    fn jump_targets_are_operands() {
        // A target field must be an operand of its row, or decoding would zero it.
        for r in OPCODES.iter() {
            match r.kind.flow().jump_field() {
                Some(Field::Off) => assert!(r.form.off, "{r:?}"),
                Some(Field::Imm) => assert!(r.form.imm, "{r:?}"),
                None => {}
            }
            if matches!(r.kind, Kind::Call(CallKind::Local)) {
                assert!(r.form.imm, "{r:?}");
            }
        }
    }

    #[test]
    fn register_operands_are_operands() {
        // An effect names `dst` or `src` only for rows where the field is an operand.
        for (op, r) in OPCODES.iter().enumerate() {
            let probe = |dst, src| Insn {
                op: op as u16,
                dst,
                src,
                off: 0,
                imm: 0,
            };
            // With dst = r7 and src = r8, neither is a fixed register of any effect.
            let e = probe(7, 8).regs();
            let all = e.reads | e.writes | e.clobbers | e.args;
            assert!(r.form.dst || all & (1 << 7) == 0, "{r:?}");
            assert!(r.form.src || all & (1 << 8) == 0, "{r:?}");
        }
    }

    #[test]
    fn only_calls_and_packet_loads_clobber() {
        for (op, r) in OPCODES.iter().enumerate() {
            let e = Insn {
                op: op as u16,
                dst: 1,
                src: 2,
                off: 0,
                imm: 0,
            }
            .regs();
            let calls = matches!(
                r.kind,
                Kind::Call(_) | Kind::Callx | Kind::LdAbs(_) | Kind::LdInd(_)
            );
            assert_eq!(e.clobbers != 0, calls, "{r:?}");
        }
    }
}
