//! The registers whose value matters from each instruction ([`relevance`]), which
//! pruning uses to ignore the others. Control flow (functions, successors) is the one
//! CFG of the object model ([`Cfg`]).

use bpf2ptx_compiler::cfg::Cfg;
use bpf2ptx_compiler::isa::effect::{ARGS, R0};
use bpf2ptx_compiler::isa::table::{AluOp, AtomicOp, CallKind, Kind, Src};
use bpf2ptx_compiler::program::Program;
use bpf2ptx_runtime::{Arg, Ret};

/// r0-r5: what a call defines or clobbers.
const R0_5: u16 = R0 | ARGS;
/// r1-r5: a call's arguments.
const R1_5: u16 = ARGS;

/// Per instruction: the registers whose numeric value, on entry to it, can still
/// influence a safety decision on some path from it: a branch condition, a memory
/// address, a helper argument the prototype checks, a divisor (a fact for the backend), a
/// value stored where it may be read back (the stack) or a subprogram's argument or result.
/// Every other register holding a number may hold any number without changing what the
/// rest of the path does, so pruning ignores its value ([`State::subsumes_with`]). A
/// backward may-analysis over each function's control flow; stores and loads through
/// pointers that may point to the stack count as relevant (a forward may-analysis says
/// which registers may).
///
/// [`State::subsumes_with`]: crate::state::State::subsumes_with
pub(super) fn relevance(prog: &Program, cfg: &Cfg) -> Vec<u16> {
    let n = prog.insns.len();
    let bit = |r: u8| 1u16 << r;
    // Whether anything calls the entry function (then its exits return r0 to a caller).
    let entry_called = prog.insns.iter().enumerate().any(|(i, ins)| {
        ins.kind() == Kind::Call(CallKind::Local) && cfg.slot_after(i, ins.imm) == 0
    });
    let succs = |i: usize| cfg.successors(&prog.insns, i);
    let mut relevant = vec![0u16; n];
    for (k, f) in cfg.funcs().iter().enumerate() {
        let (a, b) = (f.start, f.end);
        if a >= b {
            continue;
        }
        // Forward: registers that may hold a stack pointer.
        let mut stackish: Vec<Option<u16>> = vec![None; n];
        stackish[a] = Some(bit(10) | R1_5);
        let mut work = vec![a];
        while let Some(i) = work.pop() {
            let Some(ms) = stackish[i] else { continue };
            let ins = &prog.insns[i];
            let (d, s) = (bit(ins.dst), bit(ins.src));
            let from_s = if ms & s != 0 { d } else { 0 };
            let out = match ins.kind() {
                Kind::Alu(AluOp::Mov, _, Src::K) | Kind::LdImm64(_) => ms & !d,
                Kind::Alu(AluOp::Mov, _, Src::X) | Kind::Movsx(..) => (ms & !d) | from_s,
                Kind::Alu(_, _, Src::X) => ms | from_s,
                Kind::Ldx(..) => (ms & !d) | from_s,
                Kind::Call(CallKind::Helper) => ms & !R0_5,
                Kind::Call(_) | Kind::Callx => (ms & !R0_5) | bit(0),
                Kind::LdAbs(_) | Kind::LdInd(_) => ms & !R0_5,
                Kind::Atomic(_, op, true) => {
                    ms & !(if op == AtomicOp::Cmpxchg { bit(0) } else { s })
                }
                Kind::Alu(_, _, Src::K)
                | Kind::Neg(_)
                | Kind::Endian(..)
                | Kind::Jmp(..)
                | Kind::Ja
                | Kind::Gotol
                | Kind::MayGoto
                | Kind::Exit
                | Kind::St(_)
                | Kind::Stx(_)
                | Kind::Atomic(_, _, false) => ms,
            };
            for t in succs(i) {
                let new = stackish[t].map_or(out, |old| old | out);
                if stackish[t] != Some(new) {
                    stackish[t] = Some(new);
                    work.push(t);
                }
            }
        }
        // Backward: relevant registers, to a fixed point.
        let exit_uses = if k == 0 && !entry_called { 0 } else { bit(0) };
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        for i in a..b {
            for t in succs(i) {
                preds[t].push(i);
            }
        }
        let mut work: Vec<usize> = (a..b).collect();
        let mut queued = vec![true; n];
        while let Some(i) = work.pop() {
            queued[i] = false;
            let ins = &prog.insns[i];
            let out = succs(i).iter().fold(0u16, |acc, &t| acc | relevant[t]);
            let (d, s) = (bit(ins.dst), bit(ins.src));
            let flows = out & d != 0;
            let inn = match ins.kind() {
                Kind::Alu(AluOp::Mov, _, Src::K) | Kind::LdImm64(_) => out & !d,
                Kind::Alu(AluOp::Mov, _, Src::X) | Kind::Movsx(..) => {
                    (out & !d) | if flows { s } else { 0 }
                }
                Kind::Alu(AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod, _, Src::X) => {
                    out | s
                }
                Kind::Alu(_, _, Src::X) => out | if flows { s } else { 0 },
                Kind::Alu(_, _, Src::K) | Kind::Neg(_) | Kind::Endian(..) => out,
                Kind::Jmp(_, _, Src::K) => out | d,
                Kind::Jmp(_, _, Src::X) => out | d | s,
                Kind::Ja | Kind::Gotol | Kind::MayGoto => out,
                Kind::Call(CallKind::Helper) => {
                    let args = match bpf2ptx_runtime::helper(ins.imm) {
                        Some(h) => {
                            // A result computed from r1 (log2) carries r0's relevance.
                            let from_r1 = h.ret == Ret::Log2 && out & R0 != 0;
                            h.args
                                .iter()
                                .enumerate()
                                .filter(|(_, a)| **a != Arg::Anything)
                                .fold(0, |acc, (k, _)| acc | bit(k as u8 + 1))
                                | if from_r1 { bit(1) } else { 0 }
                        }
                        None => R1_5,
                    };
                    (out & !R0_5) | args
                }
                Kind::Call(_) => (out & !R0_5) | R1_5,
                Kind::Callx => (out & !R0_5) | R1_5 | d,
                Kind::Exit => exit_uses,
                Kind::LdAbs(_) | Kind::LdInd(_) => 0x7ff,
                Kind::Ldx(..) => (out & !d) | s,
                Kind::St(_) => out | d,
                Kind::Stx(_) => {
                    let to_stack = stackish[i].is_none_or(|ms| ms & d != 0);
                    out | d | if to_stack { s } else { 0 }
                }
                Kind::Atomic(_, op, fetch) => {
                    let def = match (fetch, op) {
                        (false, _) => 0,
                        (true, AtomicOp::Cmpxchg) => bit(0),
                        (true, _) => s,
                    };
                    // The operand of an add without fetch feeds `Facts::atomic_add_const`:
                    // pruning must not merge paths that add different numbers.
                    let operand = if op == AtomicOp::Add && !fetch { s } else { 0 };
                    (out & !def) | d | operand
                }
            };
            if inn != relevant[i] {
                relevant[i] = inn;
                for &p in &preds[i] {
                    if !queued[p] {
                        queued[p] = true;
                        work.push(p);
                    }
                }
            }
        }
    }
    relevant
}
