//! The loops the verifier bounds by construction (specs/verifier.md, "Loops"):
//! `bpf_loop` as a PTX loop in the calling function that calls the callback's `.func`,
//! the numeric iterator kfuncs as inline code on their 8-byte stack slot (`{ s32 cur;
//! s32 end; }`, Linux's `struct bpf_iter_num_kern`), `may_goto` as a decrement of the
//! function invocation's budget register `%mg` and a branch, and the heads of loops
//! `--loop-budget` bounds as the same on `%lb`, ending the program (counted in the
//! program's loop-budget counter, specs/abi.md) when the budget is spent.

use super::func::FuncWriter;
use super::symbols::loop_budget_symbol;
use super::INLINE_END;
use bpf2ptx_runtime::{Kfunc, BPF_MAX_LOOPS, E2BIG, EINVAL};

/// The registers a function with these loops declares, and their start values.
pub(super) struct LoopRegs {
    /// The function has a `may_goto`: `%mg`, [`BPF_MAX_LOOPS`] at entry.
    pub(super) may_goto: bool,
    /// The function has a `--loop-budget` head: `%lb`, the budget at entry.
    pub(super) budget: Option<u64>,
    /// The function calls `bpf_loop`: `%lp0` index, `%lp1` count, `%lp2` ctx.
    pub(super) bpf_loop: bool,
}

impl FuncWriter<'_> {
    /// Declares and starts the loop registers `regs` asks for.
    pub(super) fn loop_regs(&mut self, regs: &LoopRegs) {
        if regs.may_goto {
            self.l(".reg .b64 %mg;");
            self.l(format!("mov.u64 %mg, {BPF_MAX_LOOPS};"));
        }
        if let Some(n) = regs.budget {
            self.l(".reg .b64 %lb;");
            self.l(format!("mov.u64 %lb, {n};"));
        }
        if regs.bpf_loop {
            self.l(".reg .b64 %lp<3>;");
        }
    }

    /// `may_goto`: to `target` once the budget is spent, else spend one unit.
    pub(super) fn may_goto(&mut self, target: &str) {
        self.l("setp.eq.u64 %p3, %mg, 0;");
        self.l(format!("@%p3 bra {target};"));
        self.l("sub.u64 %mg, %mg, 1;");
    }

    /// The head of a loop `--loop-budget` bounds (in the program's entry function): spend
    /// one unit, or, when none is left, count the event and end the program with r0 = 0.
    pub(super) fn budget_head(&mut self, pc: usize) {
        let ok = format!("$Llb{pc}");
        self.l("setp.ne.u64 %p3, %lb, 0;");
        self.l(format!("@%p3 bra {ok};"));
        self.l(format!("mov.u64 %t0, {};", loop_budget_symbol(self.prog)));
        self.l("red.global.add.u64 [%t0], 1;");
        self.l("mov.u64 %r0, 0;");
        if self.inline {
            self.l("mov.u64 %bpf2ptx_ret, %r0;");
            self.l(format!("bra {INLINE_END};"));
        } else {
            self.l("st.param.b64 [bpf_ret], %r0;");
            self.l("ret;");
        }
        self.raw_label(&ok);
        self.l("sub.u64 %lb, %lb, 1;");
    }

    /// `bpf_loop(nr_loops, callback, ctx, 0)` at slot `pc` calling function `k`: Linux's
    /// loop (`kernel/bpf/bpf_iter.c`, `bpf_loop`): -E2BIG past [`BPF_MAX_LOOPS`], else
    /// the callback for index 0, 1, ... until it returns nonzero or the count is reached;
    /// r0 = the number of calls.
    pub(super) fn bpf_loop(&mut self, pc: usize, k: usize) {
        let (top, done, big, end) = (
            format!("$Lbl{pc}_top"),
            format!("$Lbl{pc}_done"),
            format!("$Lbl{pc}_big"),
            format!("$Lbl{pc}_end"),
        );
        self.l("and.b64 %lp1, %r1, 4294967295;");
        self.l("mov.u64 %lp2, %r3;");
        self.l("mov.u64 %lp0, 0;");
        self.l(format!("setp.gt.u64 %p3, %lp1, {BPF_MAX_LOOPS};"));
        self.l(format!("@%p3 bra {big};"));
        self.raw_label(&top);
        self.l("setp.ge.u64 %p3, %lp0, %lp1;");
        self.l(format!("@%p3 bra {done};"));
        self.l("mov.u64 %r1, %lp0;");
        self.l("mov.u64 %r2, %lp2;");
        self.call_local(k);
        self.l("add.u64 %lp0, %lp0, 1;");
        self.l("setp.eq.u64 %p3, %r0, 0;");
        self.l(format!("@%p3 bra {top};"));
        self.raw_label(&done);
        self.l("mov.u64 %r0, %lp0;");
        self.l(format!("bra {end};"));
        self.raw_label(&big);
        self.l(format!("mov.u64 %r0, {E2BIG};"));
        self.raw_label(&end);
    }

    /// A numeric iterator kfunc at slot `pc` on the slot r1 points at, as Linux's
    /// `bpf_iter_num_new` / `_next` / `_destroy`.
    pub(super) fn iter_kfunc(&mut self, pc: usize, k: Kfunc) {
        let end = format!("$Lit{pc}_end");
        match k {
            Kfunc::IterNumNew => {
                let (inval, big, zero) = (
                    format!("$Lit{pc}_inval"),
                    format!("$Lit{pc}_big"),
                    format!("$Lit{pc}_zero"),
                );
                self.l("cvt.u32.u64 %w0, %r2;");
                self.l("cvt.u32.u64 %w1, %r3;");
                self.l("setp.gt.s32 %p3, %w0, %w1;");
                self.l(format!("@%p3 bra {inval};"));
                self.l("cvt.s64.s32 %t2, %w0;");
                self.l("cvt.s64.s32 %t3, %w1;");
                self.l("sub.s64 %t3, %t3, %t2;");
                self.l(format!("setp.gt.s64 %p3, %t3, {BPF_MAX_LOOPS};"));
                self.l(format!("@%p3 bra {big};"));
                self.l("sub.s32 %w0, %w0, 1;");
                self.l("st.u32 [%r1], %w0;");
                self.l("st.u32 [%r1+4], %w1;");
                self.l("mov.u64 %r0, 0;");
                self.l(format!("bra {end};"));
                self.raw_label(&inval);
                self.l(format!("mov.u64 %r0, {EINVAL};"));
                self.l(format!("bra {zero};"));
                self.raw_label(&big);
                self.l(format!("mov.u64 %r0, {E2BIG};"));
                self.raw_label(&zero);
                self.l("mov.u64 %t3, 0;");
                self.l("st.u64 [%r1], %t3;");
            }
            Kfunc::IterNumNext => {
                let drained = format!("$Lit{pc}_drained");
                self.l("ld.s32 %w0, [%r1];");
                self.l("ld.s32 %w1, [%r1+4];");
                self.l("cvt.s64.s32 %t2, %w0;");
                self.l("add.s64 %t2, %t2, 1;");
                self.l("cvt.s64.s32 %t3, %w1;");
                self.l("setp.ge.s64 %p3, %t2, %t3;");
                self.l(format!("@%p3 bra {drained};"));
                self.l("cvt.u32.u64 %w0, %t2;");
                self.l("st.u32 [%r1], %w0;");
                self.l("mov.u64 %r0, %r1;");
                self.l(format!("bra {end};"));
                self.raw_label(&drained);
                self.l("mov.u64 %t3, 0;");
                self.l("st.u64 [%r1], %t3;");
                self.l("mov.u64 %r0, 0;");
            }
            Kfunc::IterNumDestroy => {
                self.l("mov.u64 %t3, 0;");
                self.l("st.u64 [%r1], %t3;");
            }
        }
        self.raw_label(&end);
    }
}
