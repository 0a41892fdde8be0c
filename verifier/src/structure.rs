//! The structural pass: the rules listed in the crate documentation.

use bpf2ptx_compiler::isa::table::{AluOp, AtomicOp, CallKind, Kind, Pseudo, Src};
use bpf2ptx_compiler::isa::Insn;
use bpf2ptx_compiler::program::Program;
use serde::Serialize;
use std::fmt;

/// A structural rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// A jump leaves its function or the program.
    JumpRange,
    /// A jump lands on the second slot of an `ld_imm64`.
    JumpIntoLdImm64,
    /// Control can run past a function's last instruction.
    FallThrough,
    /// A call or function address does not name a function start.
    CallTarget,
    /// r10 is written.
    R10Write,
    /// A register is read before it is written on some path.
    UninitRegister,
    /// A function calls itself, directly or through others.
    Recursion,
}

impl Rule {
    /// The rule's name as diagnostics print it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::JumpRange => "jump-range",
            Rule::JumpIntoLdImm64 => "jump-into-ld-imm64",
            Rule::FallThrough => "fall-through",
            Rule::CallTarget => "call-target",
            Rule::R10Write => "r10-write",
            Rule::UninitRegister => "uninit-register",
            Rule::Recursion => "recursion",
        }
    }
}

/// One violation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StructError {
    /// The rule.
    pub rule: Rule,
    /// Slot index of the instruction.
    pub pc: usize,
    /// The instruction, disassembled.
    pub insn: String,
    /// What exactly is wrong.
    pub message: String,
}

impl fmt::Display for StructError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "insn {}: `{}`: {} [{}]",
            self.pc,
            self.insn,
            self.message,
            self.rule.name()
        )
    }
}

/// Registers as a bit set (bit n = rN).
pub(crate) type Regs = u16;
const R10: Regs = 1 << 10;
/// r1-r5: the arguments of a call, which it leaves undefined.
pub(crate) const ARGS: Regs = 0b11_1110;

/// The registers an instruction reads, writes, and leaves undefined (a call's clobbers).
pub(crate) fn uses_defs(i: &Insn) -> (Regs, Regs, Regs) {
    let d = 1u16 << i.dst;
    let s = 1u16 << i.src;
    match i.kind() {
        Kind::Alu(AluOp::Mov, _, Src::K) => (0, d, 0),
        Kind::Alu(AluOp::Mov, _, Src::X) => (s, d, 0),
        Kind::Alu(_, _, Src::K) | Kind::Neg(_) | Kind::Endian(..) => (d, d, 0),
        Kind::Alu(_, _, Src::X) => (d | s, d, 0),
        Kind::Movsx(..) => (s, d, 0),
        Kind::Jmp(_, _, Src::K) => (d, 0, 0),
        Kind::Jmp(_, _, Src::X) => (d | s, 0, 0),
        Kind::Ja | Kind::Gotol | Kind::MayGoto => (0, 0, 0),
        // A call reads its arguments lazily: which of r1-r5 a helper takes is the helper
        // prototype's business (checked by the type pass), so only the clobbers count here.
        Kind::Call(_) => (0, 1, ARGS),
        Kind::Callx => (d, 1, ARGS),
        Kind::Exit => (1, 0, 0),
        Kind::LdImm64(_) => (0, d, 0),
        // Legacy packet loads read the context in r6 and clobber r1-r5 like a call.
        Kind::LdAbs(_) => (1 << 6, 1, ARGS),
        Kind::LdInd(_) => ((1 << 6) | s, 1, ARGS),
        Kind::Ldx(..) => (s, d, 0),
        Kind::St(_) => (d, 0, 0),
        Kind::Stx(_) => (d | s, 0, 0),
        Kind::Atomic(_, op, fetch) => {
            let cmpxchg = op == AtomicOp::Cmpxchg;
            let uses = d | s | if cmpxchg { 1 } else { 0 };
            let defs = if cmpxchg {
                1
            } else if fetch {
                s
            } else {
                0
            };
            (uses, defs, 0)
        }
    }
}

/// The pc-relative target of a jump, in slots, if the instruction jumps.
fn jump_offset(i: &Insn) -> Option<i64> {
    match i.kind() {
        // loops15: may_goto (0xe5) jumps by `off` or falls through, like a conditional jump.
        Kind::Ja | Kind::Jmp(..) | Kind::MayGoto => Some(i64::from(i.off)),
        Kind::Gotol => Some(i.imm),
        _ => None,
    }
}

/// Checks the structural rules. `entry_regs` lists the registers the attach point
/// initialises at the entry function besides r10 (r1 for a context pointer; r1 and r2
/// for bpf_conformance's memory and length).
pub fn check(prog: &Program, entry_regs: &[u8]) -> Result<(), Vec<StructError>> {
    let insns = &prog.insns;
    let pcs = prog.pcs();
    let n = insns.len();
    let end_pc = pcs[n];
    // Slot → instruction index (None for the second slot of ld_imm64).
    let mut idx_of_pc = vec![None; end_pc + 1];
    for (i, &pc) in pcs.iter().enumerate() {
        idx_of_pc[pc] = Some(i);
    }
    let mut errors = Vec::new();
    let err = |errors: &mut Vec<StructError>, rule, i: usize, message: String| {
        errors.push(StructError {
            rule,
            pc: pcs[i],
            insn: insns[i].to_string(),
            message,
        });
    };
    // Function ranges by instruction index.
    let mut bounds: Vec<(usize, usize)> = Vec::new();
    for (k, f) in prog.funcs.iter().enumerate() {
        let end = prog.funcs.get(k + 1).map_or(n, |g| g.start);
        bounds.push((f.start, end));
    }
    if bounds.is_empty() {
        bounds.push((0, n));
    }
    let func_starts: Vec<usize> = bounds.iter().map(|b| pcs[b.0]).collect();
    // (caller, callee, call instruction) of every bpf-to-bpf call.
    let mut calls: Vec<(usize, usize, usize)> = Vec::new();
    // Successors per instruction (within its function); None marks an error already reported.
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in &bounds {
        for i in a..b {
            let ins = &insns[i];
            let next = i + 1;
            if let Some(rel) = jump_offset(ins) {
                let t = pcs[i] as i64 + 1 + rel;
                let (lo, hi) = (pcs[a] as i64, pcs[b] as i64);
                if t < lo || t >= hi {
                    err(
                        &mut errors,
                        Rule::JumpRange,
                        i,
                        format!(
                            "jump target {t} is outside the function (insns {lo}..{})",
                            hi - 1
                        ),
                    );
                } else {
                    match idx_of_pc[t as usize] {
                        Some(ti) => succs[i].push(ti),
                        None => err(
                            &mut errors,
                            Rule::JumpIntoLdImm64,
                            i,
                            format!("jump target {t} is the second slot of an ld_imm64"),
                        ),
                    }
                }
                if !matches!(ins.kind(), Kind::Ja | Kind::Gotol) && next < b {
                    succs[i].push(next);
                }
            } else if !matches!(ins.kind(), Kind::Exit) && next < b {
                succs[i].push(next);
            }
            let local = match ins.kind() {
                Kind::Call(CallKind::Local) => Some(ins.imm),
                Kind::LdImm64(Pseudo::Func) => Some(i64::from(ins.imm as i32)),
                _ => None,
            };
            if let Some(rel) = local {
                let t = pcs[i] as i64 + 1 + rel;
                if let (Some(callee), Kind::Call(_)) =
                    (func_starts.iter().position(|&s| s as i64 == t), ins.kind())
                {
                    calls.push((
                        bounds
                            .iter()
                            .position(|&(x, y)| (x..y).contains(&i))
                            .unwrap_or(0),
                        callee,
                        i,
                    ));
                }
                if !func_starts.iter().any(|&s| s as i64 == t) {
                    err(
                        &mut errors,
                        Rule::CallTarget,
                        i,
                        format!("target {t} is not the start of a function"),
                    );
                }
            }
            let (_, defs, _) = uses_defs(ins);
            if defs & R10 != 0 {
                err(
                    &mut errors,
                    Rule::R10Write,
                    i,
                    "r10 is the read-only frame pointer".into(),
                );
            }
        }
        let last = &insns[b - 1];
        if !matches!(last.kind(), Kind::Exit | Kind::Ja | Kind::Gotol) {
            err(
                &mut errors,
                Rule::FallThrough,
                b - 1,
                "the function's last instruction can fall through past its end".into(),
            );
        }
    }
    // The call graph must be acyclic: a depth-first walk from every function reports each
    // call that closes a cycle (once per call instruction).
    {
        let n = bounds.len();
        let mut state = vec![0u8; n]; // 0 new, 1 on the walk's path, 2 done
        for root in 0..n {
            if state[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            while let Some(&mut (f, ref mut k)) = stack.last_mut() {
                let out: Vec<&(usize, usize, usize)> = calls.iter().filter(|c| c.0 == f).collect();
                if let Some(&&(_, callee, at)) = out.get(*k) {
                    *k += 1;
                    match state[callee] {
                        0 => {
                            state[callee] = 1;
                            stack.push((callee, 0));
                        }
                        1 => err(
                            &mut errors,
                            Rule::Recursion,
                            at,
                            "this call closes a cycle of calls: recursion is not allowed (a GPU thread's stack cannot grow)".into(),
                        ),
                        _ => {}
                    }
                } else {
                    state[f] = 2;
                    stack.pop();
                }
            }
        }
    }
    // Must-initialised registers: forward dataflow to a fixed point per function.
    let mut entry_set: Regs = R10;
    for &r in entry_regs {
        entry_set |= 1 << r;
    }
    let mut state: Vec<Option<Regs>> = vec![None; n];
    for (k, &(a, b)) in bounds.iter().enumerate() {
        if a >= b {
            continue;
        }
        state[a] = Some(if k == 0 { entry_set } else { R10 | ARGS });
        let mut work = vec![a];
        while let Some(i) = work.pop() {
            let Some(s) = state[i] else { continue };
            let (_, defs, kills) = uses_defs(&insns[i]);
            let out = (s | defs) & !kills;
            for &t in &succs[i] {
                let new = state[t].map_or(out, |old| old & out);
                if state[t] != Some(new) {
                    state[t] = Some(new);
                    work.push(t);
                }
            }
        }
        for i in a..b {
            let Some(s) = state[i] else { continue };
            let mut uses = uses_defs(&insns[i]).0;
            if k != 0 && insns[i].kind() == Kind::Exit {
                // A subprogram may leave r0 unset (clang does when the result is unused):
                // the caller's r0 is then uninitialised, and reading it is the error.
                uses &= !1;
            }
            let missing = uses & !s;
            if missing != 0 {
                let regs: Vec<String> = (0..11)
                    .filter(|r| missing & (1 << r) != 0)
                    .map(|r| format!("r{r}"))
                    .collect();
                err(
                    &mut errors,
                    Rule::UninitRegister,
                    i,
                    format!(
                        "reads {} before it is written on every path",
                        regs.join(", ")
                    ),
                );
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        errors.sort_by_key(|e| e.pc);
        Err(errors)
    }
}
