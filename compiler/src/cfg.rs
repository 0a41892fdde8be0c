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
//!  Cfg::new   slots (pcs), slot → index, function ranges, each instruction's function
//!            and the instruction its jump lands on (resolved once, here)
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
//! - The `insns` a query takes are the instructions the graph was built from: the graph
//!   holds what it resolved for them, the instructions their own effects.

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

    #[inline]
    fn push(&mut self, i: usize) {
        self.buf[usize::from(self.len)] = i;
        self.len += 1;
    }
}

impl std::ops::Deref for Succs {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        &self.buf[..usize::from(self.len)]
    }
}

impl IntoIterator for Succs {
    type Item = usize;
    type IntoIter = std::iter::Take<std::array::IntoIter<usize, 2>>;
    #[inline]
    fn into_iter(self) -> Self::IntoIter {
        self.buf.into_iter().take(usize::from(self.len))
    }
}

/// The control-flow graph of one program (see the module documentation).
///
/// What the queries need is resolved once, when the graph is built: each instruction's
/// function and the instruction its jump lands on. The backend's frame analysis asks for
/// an instruction's successors at every visit of its work list and the verifier at every
/// step; resolving `pc + 1 + rel` and the function's slot bounds anew at each query, out
/// of line, was about 3% of the instructions of lowering a 16-instruction program
/// (`lower/conformance/prime`, `benches/results/refactor-criterion.md`).
#[derive(Clone, Debug)]
pub struct Cfg {
    /// The slot of each instruction, plus one past the end.
    pcs: Vec<usize>,
    /// By slot: the instruction starting there (None for a second slot and the end).
    index: Vec<Option<usize>>,
    /// Each function's instructions, in code order (the whole program when it lists no
    /// functions).
    funcs: Vec<Range<usize>>,
    /// By instruction: what the graph resolved for it.
    nodes: Vec<Node>,
}

/// What the graph resolves for one instruction when it is built.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    /// The function the instruction lies in, if any.
    func: Option<usize>,
    /// For a jump or branch, the instruction its target names when that is one of its
    /// function's instructions (the whole program's, outside any function); `None` for
    /// a bad target, which [`Cfg::jump`] explains on demand, and for an instruction that
    /// does not jump.
    jump: Option<usize>,
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
        // Each function ends where the next one starts.
        let mut starts = starts.into_iter().peekable();
        let mut funcs: Vec<Range<usize>> = Vec::new();
        while let Some(a) = starts.next() {
            funcs.push(a..starts.peek().copied().unwrap_or(n));
        }
        if funcs.is_empty() {
            funcs.push(0..n);
        }
        let mut cfg = Cfg {
            pcs,
            index,
            funcs,
            nodes: vec![Node::default(); n],
        };
        // Each instruction's function (a later range wins where starts out of order make
        // two overlap), and its jump resolved within that function's slots.
        for k in 0..cfg.funcs.len() {
            let f = cfg.funcs[k].clone();
            let Some(bounds) = cfg.slots_of(&f) else {
                continue;
            };
            for i in f {
                let jump = insns[i]
                    .jump_rel()
                    .and_then(|rel| cfg.land(i, rel, bounds).ok());
                cfg.nodes[i] = Node {
                    func: Some(k),
                    jump,
                };
            }
        }
        // Instructions before the first function's start jump within the whole program.
        let whole = cfg.slots_of(&(0..n)).expect("the whole program");
        for (i, insn) in insns.iter().enumerate() {
            if cfg.nodes[i].func.is_none() {
                cfg.nodes[i].jump = insn.jump_rel().and_then(|rel| cfg.land(i, rel, whole).ok());
            }
        }
        cfg
    }

    /// The slots `start..end` of instructions `f`; `None` when `f` is not a range of them.
    fn slots_of(&self, f: &Range<usize>) -> Option<(usize, usize)> {
        (f.start <= f.end && f.end <= self.len()).then(|| (self.pcs[f.start], self.pcs[f.end]))
    }

    /// The instruction a jump `i` by `rel` slots lands on among the slots `start..end`,
    /// or why there is none.
    fn land(&self, i: usize, rel: i64, (start, end): (usize, usize)) -> Result<usize, BadTarget> {
        let target = self.slot_after(i, rel);
        if target < start as i64 || target >= end as i64 {
            return Err(BadTarget::OutsideFunction { target, start, end });
        }
        self.at(target).ok_or(BadTarget::SecondSlot {
            target: target as usize,
        })
    }

    /// The number of instructions.
    #[inline]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the program has no instructions.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of each instruction, plus one past the end.
    #[inline]
    pub fn pcs(&self) -> &[usize] {
        &self.pcs
    }

    /// The slot of instruction `i` (`i` may be one past the end).
    #[inline]
    pub fn pc(&self, i: usize) -> usize {
        self.pcs[i]
    }

    /// The instruction starting at `slot`: none for a slot outside the program or the
    /// second slot of an `ld_imm64`.
    #[inline]
    pub fn at(&self, slot: i64) -> Option<usize> {
        usize::try_from(slot)
            .ok()
            .and_then(|s| self.index.get(s).copied().flatten())
    }

    /// The slot `rel` slots after the one following instruction `i`, where a pc-relative
    /// jump or call of `i` lands.
    #[inline]
    pub fn slot_after(&self, i: usize, rel: i64) -> i64 {
        (self.pcs[i] as i64).saturating_add(1).saturating_add(rel)
    }

    /// Each function's instructions, in code order.
    #[inline]
    pub fn funcs(&self) -> &[Range<usize>] {
        &self.funcs
    }

    /// The function instruction `i` lies in.
    #[inline]
    pub fn func_of(&self, i: usize) -> Option<usize> {
        self.nodes.get(i).and_then(|n| n.func)
    }

    /// The function that starts at `slot`.
    pub fn func_at(&self, slot: i64) -> Option<usize> {
        self.funcs
            .iter()
            .position(|f| self.pcs[f.start] as i64 == slot)
    }

    /// The instruction `rel` slots after the one following `i`, anywhere in the program,
    /// or the slot it names when no instruction starts there.
    #[inline]
    pub fn target(&self, i: usize, rel: i64) -> Result<usize, i64> {
        let slot = self.slot_after(i, rel);
        self.at(slot).ok_or(slot)
    }

    /// The instruction a jump or branch `i` goes to, within its function; `None` when
    /// `insns[i]` does not jump.
    #[inline]
    pub fn jump(&self, insns: &[Insn], i: usize) -> Option<Result<usize, BadTarget>> {
        let rel = insns[i].jump_rel()?;
        Some(match self.nodes[i].jump {
            Some(t) => Ok(t),
            // Only a program the structural pass refuses gets here: say why again.
            None => {
                let f = self
                    .func_of(i)
                    .map_or(0..self.len(), |k| self.funcs[k].clone());
                let bounds = self.slots_of(&f).expect("a function's instructions");
                self.land(i, rel, bounds)
            }
        })
    }

    /// The function a local call or an `ld_imm64 func` names: its index, or the slot it
    /// names when no function starts there; `None` when `insns[i]` names none.
    #[inline]
    pub fn callee(&self, insns: &[Insn], i: usize) -> Option<Result<usize, i64>> {
        let slot = self.slot_after(i, insns[i].func_rel()?);
        Some(self.func_at(slot).ok_or(slot))
    }

    /// Where control may go right after instruction `i`, within its function: the
    /// jump target (when it is one of the function's instructions) and the next
    /// instruction (when control may fall through and the function has one).
    #[inline]
    pub fn successors(&self, insns: &[Insn], i: usize) -> Succs {
        let node = self.nodes[i];
        let mut out = Succs::NONE;
        if let Some(t) = node.jump {
            out.push(t);
        }
        let end = node.func.map_or(self.len(), |k| self.funcs[k].end);
        if insns[i].flow().falls_through() && i + 1 < end {
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

    #[test]
    fn instructions_before_the_first_function_jump_in_the_whole_program() {
        // One function starting at 2: instructions 0 and 1 lie in none, and the `ja` among
        // them may land inside it; the function's own jump may not leave it.
        let code = insns(
            "ja +1
exit
mov %r0, 0
ja -4
exit
",
        );
        let cfg = Cfg::from_parts(&code, [2]);
        assert_eq!(cfg.func_of(0), None);
        assert_eq!(cfg.jump(&code, 0), Some(Ok(2)));
        assert_eq!(cfg.successors(&code, 0).to_vec(), vec![2]);
        assert_eq!(
            cfg.jump(&code, 3),
            Some(Err(BadTarget::OutsideFunction {
                target: 0,
                start: 2,
                end: 5
            }))
        );
        assert_eq!(cfg.successors(&code, 3).to_vec(), Vec::<usize>::new());
    }
}
