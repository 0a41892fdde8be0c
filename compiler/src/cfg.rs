//! The control-flow graph of a program: its functions, the slot of each instruction and
//! back, every jump and call target resolved to an instruction, and each instruction's
//! successors within its function.
//!
//! Each instruction's own effect — fall through, jump, branch, call, exit — comes from
//! the opcode table through [`Insn::flow`](crate::isa::Insn::flow); this module adds what
//! only the whole program knows: where a pc-relative target lands and which function an
//! instruction belongs to. It is the one place that turns `pc + 1 + rel` into an
//! instruction, so the verifier's structural rules, its abstract interpretation (prune
//! points, relevance, liveness), the backend's frame analysis and labels and the
//! interpreter cannot disagree about where control goes.
//!
//! ```text
//!  Insn::flow (isa/effect.rs)          Program (insns, funcs)
//!           │                                 │
//!           └──────────────┬──────────────────┘
//!                          ▼
//!  Cfg::new   slots (pcs), slot → index, function ranges
//!     ├─ jump(i)        target of a jump or branch in i's function, or why not (BadTarget)
//!     ├─ callee(i)      function a local call or `ld_imm64 func` names
//!     ├─ target(i, rel) any instruction of the program (the interpreter's view)
//!     └─ successors(i)  where control may go next, within i's function
//! ```
//!
//! Invariants:
//!
//! - Indices are instruction indices into [`Program::insns`]; slots ("pc") count 8-byte
//!   slots, so an `ld_imm64` takes two and its second slot is no instruction.
//! - [`Cfg::successors`] never leaves the function: a call continues at the next
//!   instruction (the callee is another function's graph), `exit` has none, and a target
//!   outside the function or on a second slot is left out. The structural pass rejects
//!   such targets through [`Cfg::jump`], so for a verified program nothing is left out.
//! - Successors are listed target first, then the next instruction; a branch whose target
//!   is the next instruction lists it twice.

use crate::isa::effect::Flow;
use crate::isa::Insn;
use crate::program::Program;
use std::ops::Range;

/// Why a jump target is not an instruction of the jump's function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadTarget {
    /// The target slot lies outside the function's slots `start..end`.
    OutsideFunction {
        /// The target slot.
        target: i64,
        /// The function's first slot.
        start: usize,
        /// One past the function's last slot.
        end: usize,
    },
    /// The target slot is the second slot of an `ld_imm64`.
    SecondSlot {
        /// The target slot.
        target: usize,
    },
}

/// The successors of one instruction: at most two, target first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Succs {
    buf: [usize; 2],
    len: u8,
}

impl Succs {
    const NONE: Succs = Succs {
        buf: [0; 2],
        len: 0,
    };

    fn push(&mut self, i: usize) {
        self.buf[usize::from(self.len)] = i;
        self.len += 1;
    }
}

impl std::ops::Deref for Succs {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.buf[..usize::from(self.len)]
    }
}

impl IntoIterator for Succs {
    type Item = usize;
    type IntoIter = std::iter::Take<std::array::IntoIter<usize, 2>>;
    fn into_iter(self) -> Self::IntoIter {
        self.buf.into_iter().take(usize::from(self.len))
    }
}

/// The control-flow graph of one program (see the module documentation).
#[derive(Clone, Debug)]
pub struct Cfg {
    /// The slot of each instruction, plus one past the end.
    pcs: Vec<usize>,
    /// By slot: the instruction starting there (None for a second slot and the end).
    index: Vec<Option<usize>>,
    /// Each function's instructions, in code order (the whole program when it lists no
    /// functions).
    funcs: Vec<Range<usize>>,
    /// By instruction: its function, if it lies in one.
    func_of: Vec<Option<usize>>,
}

impl Cfg {
    /// The graph of a program.
    pub fn new(prog: &Program) -> Cfg {
        Cfg::from_parts(&prog.insns, prog.funcs.iter().map(|f| f.start))
    }

    /// The graph of instructions whose functions start at `starts` (instruction indices,
    /// in order; none: one function of all of them).
    pub fn from_parts(insns: &[Insn], starts: impl IntoIterator<Item = usize>) -> Cfg {
        let n = insns.len();
        let pcs = crate::isa::insn::pcs(insns);
        let mut index = vec![None; pcs[n] + 1];
        for (i, &pc) in pcs.iter().enumerate().take(n) {
            index[pc] = Some(i);
        }
        let starts: Vec<usize> = starts.into_iter().collect();
        let mut funcs: Vec<Range<usize>> = starts
            .iter()
            .enumerate()
            .map(|(k, &a)| a..starts.get(k + 1).copied().unwrap_or(n))
            .collect();
        if funcs.is_empty() {
            funcs.push(0..n);
        }
        let mut func_of = vec![None; n];
        for (k, f) in funcs.iter().enumerate() {
            for slot in func_of.get_mut(f.clone()).into_iter().flatten() {
                *slot = Some(k);
            }
        }
        Cfg {
            pcs,
            index,
            funcs,
            func_of,
        }
    }

    /// The number of instructions.
    pub fn len(&self) -> usize {
        self.func_of.len()
    }

    /// Whether the program has no instructions.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of each instruction, plus one past the end.
    pub fn pcs(&self) -> &[usize] {
        &self.pcs
    }

    /// The slot of instruction `i` (`i` may be one past the end).
    pub fn pc(&self, i: usize) -> usize {
        self.pcs[i]
    }

    /// The instruction starting at `slot`: none for a slot outside the program or the
    /// second slot of an `ld_imm64`.
    pub fn at(&self, slot: i64) -> Option<usize> {
        usize::try_from(slot)
            .ok()
            .and_then(|s| self.index.get(s).copied().flatten())
    }

    /// The slot `rel` slots after the one following instruction `i`, where a pc-relative
    /// jump or call of `i` lands.
    pub fn slot_after(&self, i: usize, rel: i64) -> i64 {
        (self.pcs[i] as i64).saturating_add(1).saturating_add(rel)
    }

    /// Each function's instructions, in code order.
    pub fn funcs(&self) -> &[Range<usize>] {
        &self.funcs
    }

    /// The function instruction `i` lies in.
    pub fn func_of(&self, i: usize) -> Option<usize> {
        self.func_of.get(i).copied().flatten()
    }

    /// The function that starts at `slot`.
    pub fn func_at(&self, slot: i64) -> Option<usize> {
        self.funcs
            .iter()
            .position(|f| self.pcs[f.start] as i64 == slot)
    }

    /// The instruction `rel` slots after the one following `i`, anywhere in the program,
    /// or the slot it names when no instruction starts there.
    pub fn target(&self, i: usize, rel: i64) -> Result<usize, i64> {
        let slot = self.slot_after(i, rel);
        self.at(slot).ok_or(slot)
    }

    /// The instruction a jump or branch `i` goes to, within its function; `None` when
    /// `insns[i]` does not jump.
    pub fn jump(&self, insns: &[Insn], i: usize) -> Option<Result<usize, BadTarget>> {
        let rel = insns[i].jump_rel()?;
        let target = self.slot_after(i, rel);
        let f = self
            .func_of(i)
            .map_or(0..self.len(), |k| self.funcs[k].clone());
        let (start, end) = (self.pcs[f.start], self.pcs[f.end]);
        if target < start as i64 || target >= end as i64 {
            return Some(Err(BadTarget::OutsideFunction { target, start, end }));
        }
        Some(self.at(target).ok_or(BadTarget::SecondSlot {
            target: target as usize,
        }))
    }

    /// The function a local call or an `ld_imm64 func` names: its index, or the slot it
    /// names when no function starts there; `None` when `insns[i]` names none.
    pub fn callee(&self, insns: &[Insn], i: usize) -> Option<Result<usize, i64>> {
        let slot = self.slot_after(i, insns[i].func_rel()?);
        Some(self.func_at(slot).ok_or(slot))
    }

    /// Where control may go right after instruction `i`, within its function: the
    /// jump target (when it is one of the function's instructions) and the next
    /// instruction (when control may fall through and the function has one).
    pub fn successors(&self, insns: &[Insn], i: usize) -> Succs {
        let flow = insns[i].flow();
        let mut out = Succs::NONE;
        if let Some(Ok(t)) = self.jump(insns, i) {
            out.push(t);
        }
        let end = self.func_of(i).map_or(self.len(), |k| self.funcs[k].end);
        let next = match flow {
            Flow::Next | Flow::Branch(_) | Flow::Call(_) | Flow::Callx => true,
            Flow::Jump(_) | Flow::Exit => false,
        };
        if next && i + 1 < end {
            out.push(i + 1);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::asm::assemble;

    fn insns(text: &str) -> Vec<Insn> {
        assemble(text).expect("assembles").insns
    }

    #[test]
    fn successors_follow_the_flow() {
        let code = insns(
            "mov %r0, 0\n\
             jeq %r1, 0, +2\n\
             lddw %r2, 0x100000000\n\
             ja +1\n\
             call 5\n\
             exit\n",
        );
        let cfg = Cfg::from_parts(&code, []);
        assert_eq!(cfg.pcs(), &[0, 1, 2, 4, 5, 6, 7]);
        let succ = |i| cfg.successors(&code, i).to_vec();
        assert_eq!(succ(0), vec![1]);
        // jeq +2 from slot 1 lands on slot 4 (the lddw takes 2 and 3): the `ja`, instruction 3.
        assert_eq!(succ(1), vec![3, 2]);
        assert_eq!(succ(2), vec![3]);
        assert_eq!(succ(3), vec![5]);
        assert_eq!(succ(4), vec![5]);
        assert!(succ(5).is_empty());
    }

    #[test]
    fn bad_targets_are_named() {
        let code = insns("lddw %r0, 1\nja -4\nja -3\nexit\n");
        let cfg = Cfg::from_parts(&code, []);
        assert_eq!(
            cfg.jump(&code, 1),
            Some(Err(BadTarget::OutsideFunction {
                target: -1,
                start: 0,
                end: 5
            }))
        );
        assert_eq!(
            cfg.jump(&code, 2),
            Some(Err(BadTarget::SecondSlot { target: 1 }))
        );
        assert!(cfg.successors(&code, 1).is_empty());
        assert_eq!(cfg.jump(&code, 3), None);
        assert_eq!(cfg.target(1, -4), Err(-1));
    }

    #[test]
    fn functions_bound_successors_and_name_callees() {
        // Two functions: 0..3 and 3..5; the call enters the second.
        let code = insns("call local f\nmov %r0, 0\nexit\nf:\nmov %r0, 1\nexit\n");
        let cfg = Cfg::from_parts(&code, [0, 3]);
        assert_eq!(cfg.funcs(), &[0..3, 3..5]);
        assert_eq!(cfg.callee(&code, 0), Some(Ok(1)));
        assert_eq!(cfg.successors(&code, 0).to_vec(), vec![1]);
        assert_eq!(cfg.func_of(4), Some(1));
        assert!(cfg.successors(&code, 2).is_empty());
    }
}
