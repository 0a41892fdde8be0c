//! The structural pass: the rules listed in the crate documentation, over the object
//! model's control-flow graph ([`Cfg`]: jump and call targets, successors) and each
//! instruction's register effect ([`Insn::regs`](bpf2ptx_compiler::isa::Insn::regs)).

use bpf2ptx_compiler::cfg::{BadTarget, Cfg};
use bpf2ptx_compiler::isa::effect::{Regs, ARGS, R10};
use bpf2ptx_compiler::isa::table::{CallKind, Kind};
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

/// Checks the structural rules. `entry_regs` lists the registers the attach point
/// initialises at the entry function besides r10 (r1 for a context pointer; r1 and r2
/// for bpf_conformance's memory and length).
pub fn check(prog: &Program, entry_regs: &[u8]) -> Result<(), Vec<StructError>> {
    let insns = &prog.insns;
    let cfg = Cfg::new(prog);
    let pcs = cfg.pcs();
    let n = insns.len();
    let mut errors = Vec::new();
    let err = |errors: &mut Vec<StructError>, rule, i: usize, message: String| {
        errors.push(StructError {
            rule,
            pc: pcs[i],
            insn: insns[i].to_string(),
            message,
        });
    };
    let bounds = cfg.funcs();
    // (caller, callee, call instruction) of every bpf-to-bpf call.
    let mut calls: Vec<(usize, usize, usize)> = Vec::new();
    for f in bounds {
        for i in f.clone() {
            let ins = &insns[i];
            match cfg.jump(insns, i) {
                Some(Err(BadTarget::OutsideFunction { target, start, end })) => err(
                    &mut errors,
                    Rule::JumpRange,
                    i,
                    format!(
                        "jump target {target} is outside the function (insns {start}..{})",
                        end - 1
                    ),
                ),
                Some(Err(BadTarget::SecondSlot { target })) => err(
                    &mut errors,
                    Rule::JumpIntoLdImm64,
                    i,
                    format!("jump target {target} is the second slot of an ld_imm64"),
                ),
                Some(Ok(_)) | None => {}
            }
            match cfg.callee(insns, i) {
                // `ld_imm64 func` names a function without calling it: no call-graph edge.
                Some(Ok(callee)) if ins.kind() == Kind::Call(CallKind::Local) => {
                    calls.push((cfg.func_of(i).unwrap_or(0), callee, i));
                }
                Some(Ok(_)) => {}
                Some(Err(t)) => err(
                    &mut errors,
                    Rule::CallTarget,
                    i,
                    format!("target {t} is not the start of a function"),
                ),
                None => {}
            }
            if ins.regs().writes & R10 != 0 {
                err(
                    &mut errors,
                    Rule::R10Write,
                    i,
                    "r10 is the read-only frame pointer".into(),
                );
            }
        }
        let last = f.end - 1;
        if insns[last].flow().falls_through() {
            err(
                &mut errors,
                Rule::FallThrough,
                last,
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
    for (k, f) in bounds.iter().enumerate() {
        let (a, b) = (f.start, f.end);
        if a >= b {
            continue;
        }
        state[a] = Some(if k == 0 { entry_set } else { R10 | ARGS });
        let mut work = vec![a];
        while let Some(i) = work.pop() {
            let Some(s) = state[i] else { continue };
            let e = insns[i].regs();
            let out = (s | e.writes) & !e.clobbers;
            for t in cfg.successors(insns, i) {
                let new = state[t].map_or(out, |old| old & out);
                if state[t] != Some(new) {
                    state[t] = Some(new);
                    work.push(t);
                }
            }
        }
        for i in a..b {
            let Some(s) = state[i] else { continue };
            let mut uses = insns[i].regs().reads;
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
