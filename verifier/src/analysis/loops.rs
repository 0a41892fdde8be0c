//! Loops whose trip count the exploration does not follow iteration by iteration: the
//! callback of `bpf_loop` (helper 181), open-coded numeric iterators
//! (`bpf_iter_num_new` / `_next` / `_destroy`), `may_goto`, and the loops
//! `--loop-budget` puts a budget on. Each is bounded by construction (a count the program
//! cannot change), so the verifier only has to prove one iteration safe from every state
//! the loop's head can be in, for any number of iterations.
//!
//! # The head, widening and convergence
//!
//! Every such loop has a *head*: the `bpf_loop` call, the `bpf_iter_num_next` call, the
//! `may_goto`, or the budgeted jump target. The first time a path reaches a head it opens
//! a *loop instance* ([`LoopInst`]) with the state there as the head state `H`, and takes
//! the head's two successors: the *body* (one more iteration: the callback's entry with an
//! index in `[0, nr_loops)`, the iterator's next value, `may_goto`'s fall-through) and the
//! *exit* (after the loop, the iterator drained, `may_goto`'s target; for a budgeted loop,
//! the program ending with the budget spent). The exit is set aside ([`Deferred`]). A path
//! of the body that comes back to the head with state `S`:
//!
//! - *converges* when `H` subsumes `S`: the path stops. Every concrete state `S` stands
//!   for is one `H` stands for, and `H`'s successors are (or are being) explored.
//! - otherwise *widens*: `W = H ∇ S` keeps each register and stack slot the two agree on
//!   (or where `H`'s subsumes `S`'s) and forgets the rest (a number becomes unknown, a
//!   pointer's offset unknown, anything else uninitialised, a slot's bytes initialised
//!   only where both had them), so `W` subsumes both. `W` becomes the head state and the
//!   body is explored again from it.
//!
//! Each widening forgets at least one register, link or slot for good, so a loop widens
//! at most (registers + slots) × frames times before it converges; this is the
//! finite-height widening of PREVAIL's intervals, applied at Linux's loop-entry checkpoint
//! (where Linux compares with `states_equal(RANGE_WITHIN)` against the unfinished state
//! of the iterator's, callback's or `may_goto`'s previous visit).
//!
//! *Why it is sound.* Pruning against a head state whose exploration has not finished is
//! an inductive argument, not the usual "everything below was already explored" one: the
//! head states form an invariant (the initial state is in it, and one iteration from any
//! state in it ends in a state in it, or leaves the loop on an explored path), so every
//! iteration of every concrete run is covered. What the argument cannot give is
//! termination, which is why only these heads converge: their iterations are counted by
//! something the program cannot touch (`bpf_loop`'s counter, the iterator's stack slot,
//! which no load, store or helper may reach, `may_goto`'s and the loop budget's
//! per-invocation counters), so every concrete run leaves the loop. Every other loop is
//! still explored iteration by iteration.
//!
//! # Cost
//!
//! A loop instance records its trip bound (`trips`: `nr_loops`, at most
//! [`BPF_MAX_LOOPS`]; the iterator's count; `BPF_MAX_LOOPS` for `may_goto`; `N` for a
//! budget) and its longest iteration (`body`: the most instructions from the head to the
//! head again, or to where a path leaves the loop). Paths that leave the loop (the exit,
//! and every path that breaks out of the body) are set aside and explored only when every
//! iteration has been ([`Pending::release`] sits below them in the work list), continuing
//! from `steps at the first head visit + trips × body + 1` (the head runs once more, to
//! leave). So the cost bound counts `trips × body + 1` for each loop instance on a path,
//! whatever the iteration a path leaves in (a break in iteration k costs at most k bodies
//! plus a partial one).

use super::{Explorer, Pending, Step, MAX_CALL_DEPTH, R};
use crate::scalar::Scalar;
use crate::state::{Frame, Reg, Region, Slot, State, SLOTS};
use crate::{LoopCost, LoopForm, Rule};
use bpf2ptx_compiler::isa::table::{CallKind, Kind};
use bpf2ptx_runtime::{Kfunc, BPF_MAX_LOOPS};

/// A path set aside until its loop's every iteration is explored.
pub(super) enum Deferred {
    /// Resume at an instruction with this state.
    Resume(State, usize),
    /// The path ended there (a budgeted loop's budget ran out): only its cost counts.
    End,
}

/// One loop instance: a head first reached on some path, with what its iterations found.
pub(super) struct LoopInst {
    /// The head's instruction.
    pub(super) head: usize,
    /// Frames at the head.
    pub(super) depth: usize,
    /// Which loop form.
    pub(super) form: LoopForm,
    /// Instructions executed on the path when the head was first reached.
    pub(super) first_steps: u64,
    /// The most iterations.
    pub(super) trips: u64,
    /// The longest iteration found so far.
    pub(super) body: u64,
    /// The head state: the first, widened by every path that came back unsubsumed.
    pub(super) state: State,
    /// Paths that left the loop, explored once every iteration is.
    pub(super) deferred: Vec<Deferred>,
    /// Repeats that converged (`repeat_converges`): the remembered state's instruction
    /// and store index, and how far into its iteration the path that repeated it was.
    pub(super) repeats: Vec<(usize, usize, u64)>,
}

impl Explorer<'_> {
    /// The loop form whose head instruction `i` is, if any. A `may_goto` or iterator
    /// `next` on no cycle (clang peels the first `next` of a `bpf_for` out of the loop)
    /// heads nothing: its two successors are explored as a branch.
    pub(super) fn head_form(&mut self, i: usize) -> Option<LoopForm> {
        let ins = self.prog.insns[i];
        let form = match ins.kind() {
            Kind::MayGoto => LoopForm::MayGoto,
            Kind::Call(CallKind::Helper) if bpf2ptx_runtime::is_helper(ins.imm, "loop") => {
                return Some(LoopForm::BpfLoop)
            }
            Kind::Call(CallKind::Kfunc) if self.prog.kfunc(i) == Some(Kfunc::IterNumNext) => {
                LoopForm::Iterator
            }
            _ if self.budget_head[i] => return Some(LoopForm::Budget),
            _ => return None,
        };
        let on_cycle = self.in_loop(i).iter().filter(|&&x| x).count() > 1
            || self.cfg.successors(&self.prog.insns, i).contains(&i);
        on_cycle.then_some(form)
    }

    /// Registers a call head overwrites before anything reads them (r0, and the argument
    /// registers the call does not take) hold nothing the loop carries: forgetting them
    /// keeps iterations that differ only there from widening.
    pub(super) fn forget_clobbered(&self, st: &mut State, form: LoopForm) {
        let keep: &[usize] = match form {
            LoopForm::BpfLoop => &[1, 2, 3, 4],
            LoopForm::Iterator => &[1],
            LoopForm::MayGoto | LoopForm::Budget => return,
        };
        let cur = st.cur_mut();
        for r in 0..=5 {
            if !keep.contains(&r) {
                cur.regs[r] = Reg::Uninit;
                cur.unlink(r as u8);
            }
        }
    }

    /// Whether the path in state `st` at `at` has left loop `l`: it is back in a frame
    /// below the head's, or in the head's frame at an instruction on no cycle through the
    /// head. A `bpf_loop` body is its callback's frame, left only through the head.
    pub(super) fn left_loop(&mut self, l: usize, st: &State, at: usize) -> bool {
        let (head, depth) = (self.loops[l].head, self.loops[l].depth);
        let frames = st.frames.len();
        if frames != depth {
            return frames < depth;
        }
        if self.loops[l].form == LoopForm::BpfLoop {
            return at != head;
        }
        !self.in_loop(head).get(at).copied().unwrap_or(false)
    }

    /// The instructions on a cycle through `head` within its function (reachable from the
    /// head and reaching it), computed once per head.
    fn in_loop(&mut self, head: usize) -> &[bool] {
        if !self.cycles.contains_key(&head) {
            let n = self.prog.insns.len();
            let (a, b) = self
                .cfg
                .funcs()
                .iter()
                .find(|f| f.contains(&head))
                .map_or((0, n), |f| (f.start, f.end));
            let succ: Vec<Vec<usize>> = (0..n)
                .map(|i| {
                    if i < a || i >= b {
                        Vec::new()
                    } else {
                        self.cfg.successors(&self.prog.insns, i).to_vec()
                    }
                })
                .collect();
            let mut fwd = vec![false; n];
            let mut work = vec![head];
            while let Some(i) = work.pop() {
                for &t in &succ[i] {
                    if !fwd[t] {
                        fwd[t] = true;
                        work.push(t);
                    }
                }
            }
            let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
            for (i, s) in succ.iter().enumerate() {
                for &t in s {
                    pred[t].push(i);
                }
            }
            let mut back = vec![false; n];
            back[head] = true;
            let mut work = vec![head];
            while let Some(i) = work.pop() {
                for &p in &pred[i] {
                    if !back[p] {
                        back[p] = true;
                        work.push(p);
                    }
                }
            }
            let cyc: Vec<bool> = (0..n).map(|i| i == head || (fwd[i] && back[i])).collect();
            self.cycles.insert(head, cyc);
        }
        &self.cycles[&head]
    }

    /// A state equal to one remembered at `at` (store index `k`) on this path repeats:
    /// when the path went through the head of the innermost loop it is in, bounded by
    /// construction, since that state was remembered (in an earlier iteration of the
    /// same instance), the repeat is convergence like the head's, not an infinite loop;
    /// the remembered state's longest remaining path (known when the loop is released)
    /// then counts towards the loop's longest iteration.
    pub(super) fn repeat_converges(&mut self, at: usize, k: usize, st: &State, steps: u64) -> bool {
        let Some(&(l, head_steps)) = self.loop_stack.last() else {
            return false;
        };
        let Some(&(_, _, stored_steps, _)) = self.path.iter().find(|p| p.0 == at && p.1 == k)
        else {
            return false;
        };
        let inst = &self.loops[l];
        if st.frames.len() < inst.depth
            || stored_steps < inst.first_steps
            || stored_steps >= head_steps
        {
            return false;
        }
        let extra = steps.saturating_sub(head_steps);
        self.loops[l].repeats.push((at, k, extra));
        true
    }

    /// An iteration ended (a path came back to a head, left a loop, or ended) after
    /// `total` instructions: every loop the path is in has an iteration at least that long.
    pub(super) fn end_iteration(&mut self, total: u64) {
        for &(l, from) in &self.loop_stack {
            let inst = &mut self.loops[l];
            inst.body = inst.body.max(total.saturating_sub(from));
        }
    }

    /// A path reached head `at` (form `form`) with state `st` after `steps` instructions.
    /// `Ok(None)`: it converged (the path stops); `Ok(Some(s))`: continue from `s` (the
    /// state itself on a first visit, the widened head state otherwise).
    pub(super) fn head_visit(
        &mut self,
        st: State,
        at: usize,
        form: LoopForm,
        steps: u64,
        work: &mut Vec<Pending>,
    ) -> R<Option<State>> {
        let mut st = st;
        self.forget_clobbered(&mut st, form);
        let depth = st.frames.len();
        let open = self
            .loop_stack
            .iter()
            .rposition(|&(l, _)| self.loops[l].head == at && self.loops[l].depth == depth);
        let trips = self.trips(&st, at, form);
        let Some(k) = open else {
            // First visit: open an instance; what leaves it waits below the release mark.
            let l = self.loops.len();
            work.push(Pending {
                state: State {
                    frames: Vec::new(),
                    refs: Vec::new(),
                },
                at,
                steps,
                path_len: self.path.len(),
                history_len: self.history.len(),
                decision: None,
                loop_stack: self.loop_stack.clone(),
                release: Some(l),
            });
            self.loops.push(LoopInst {
                head: at,
                depth,
                form,
                first_steps: steps,
                trips,
                body: 0,
                state: st.clone(),
                deferred: Vec::new(),
                repeats: Vec::new(),
            });
            self.loop_stack.push((l, steps));
            self.budget_exit(&st, at, form)?;
            return Ok(Some(st));
        };
        // Inner loops the path is still in end here (it came back to an outer head).
        self.loop_stack.truncate(k + 1);
        let l = self.loop_stack[k].0;
        self.end_iteration(steps);
        let masks: Vec<u16> = (0..st.frames.len())
            .map(|j| match st.frames.get(j + 1) {
                Some(callee) => self.relevant[callee.ret_to],
                None => self.relevant[at],
            })
            .collect();
        if self.loops[l].state.subsumes_with(&st, &masks)
            && same_iterators(&self.loops[l].state, &st)
        {
            return Ok(None);
        }
        let w =
            widen(&self.loops[l].state, &st).filter(|w| w.subsumes(&st) && same_iterators(w, &st));
        let Some(w) = w else {
            return Err(self.diag(
                Rule::LoopBound,
                at,
                &st,
                &[],
                format!("the {} loop's state at its head cannot be widened: its frames or held references differ between iterations", form.name()),
            ));
        };
        let inst = &mut self.loops[l];
        inst.trips = inst.trips.max(trips);
        inst.state = w.clone();
        self.loop_stack[k].1 = steps;
        self.budget_exit(&w, at, form)?;
        Ok(Some(w))
    }

    /// A budgeted loop may run out of budget at its head: the program ends there, which
    /// (like `gpu_exit`) needs every ringbuf record released; the end is counted once
    /// the loop's iterations are.
    fn budget_exit(&mut self, st: &State, at: usize, form: LoopForm) -> R<()> {
        if form != LoopForm::Budget {
            return Ok(());
        }
        if let Some(&(_, r)) = st.refs.first() {
            return Err(self.record_leak(
                st,
                at,
                r,
                "this loop's budget may run out and end the program",
            ));
        }
        let l = self.loop_stack.last().expect("a head was just visited").0;
        self.loops[l].deferred.push(Deferred::End);
        Ok(())
    }

    /// The most iterations of the loop at head `at` from state `st`.
    fn trips(&self, st: &State, at: usize, form: LoopForm) -> u64 {
        match form {
            LoopForm::BpfLoop => match &st.cur().regs[1] {
                Reg::Scalar(x) => u64::from(x.u32max).min(BPF_MAX_LOOPS),
                _ => BPF_MAX_LOOPS,
            },
            LoopForm::Iterator => {
                self.iter_slot(st, 1)
                    .map_or(BPF_MAX_LOOPS, |(_, _, slot)| match slot {
                        Slot::Iter { trips, .. } => trips,
                        _ => BPF_MAX_LOOPS,
                    })
            }
            LoopForm::MayGoto => BPF_MAX_LOOPS,
            LoopForm::Budget => {
                let _ = at;
                self.loop_budget
            }
        }
    }

    /// Every iteration of loop `l` is explored: its longest iteration is final, so the
    /// paths that left it continue, `trips × body + 1` instructions after its first head
    /// visit (the `+ 1`: the head runs once more than the body, to leave: the `may_goto`
    /// that jumps, the `next` that returns NULL).
    pub(super) fn release(&mut self, l: usize, p: &Pending, work: &mut Vec<Pending>) {
        // Every state remembered in the loop is done now: a repeat's iteration went on as
        // long as the remembered state's longest path.
        for (at, k, extra) in std::mem::take(&mut self.loops[l].repeats) {
            let rest = self.store[at][k].remaining;
            let inst = &mut self.loops[l];
            inst.body = inst.body.max(extra.saturating_add(rest));
        }
        let inst = &mut self.loops[l];
        let steps = inst
            .first_steps
            .saturating_add(inst.trips.saturating_mul(inst.body))
            .saturating_add(1);
        self.facts.loops.push(LoopCost {
            pc: self.cfg.pc(inst.head),
            form: inst.form,
            trips: inst.trips,
            body: inst.body,
        });
        for d in std::mem::take(&mut inst.deferred).into_iter().rev() {
            match d {
                Deferred::Resume(state, at) => work.push(Pending {
                    state,
                    at,
                    steps,
                    path_len: p.path_len,
                    history_len: p.history_len,
                    decision: None,
                    loop_stack: p.loop_stack.clone(),
                    release: None,
                }),
                Deferred::End => {
                    self.facts.cost_bound = self.facts.cost_bound.max(steps);
                }
            }
        }
    }

    /// The frame, slot index and slot of the iterator register `reg` points at (an
    /// aligned 8-byte stack slot at a constant offset), whatever the slot holds.
    fn iter_slot(&self, st: &State, reg: u8) -> Option<(usize, usize, Slot)> {
        let Reg::Ptr(Region::Stack { frame }, off) = &st.cur().regs[reg as usize] else {
            return None;
        };
        let off = off.as_const()? as i64;
        if off % 8 != 0 || !(-(SLOTS as i64) * 8..0).contains(&off) {
            return None;
        }
        let slot = (-off / 8 - 1) as usize;
        let f = *frame as usize;
        Some((f, slot, st.frames.get(f)?.slot(slot).clone()))
    }

    /// `bpf_loop(nr_loops, callback, ctx, flags)`: its head. The body is the callback's
    /// frame, entered with r1 = an index below `nr_loops` and r2 = ctx, returning to this
    /// call; the exit continues after it with r0 = the number of calls (or an error).
    pub(super) fn bpf_loop(&mut self, st: State, i: usize) -> R<Step> {
        for r in 1..=4 {
            self.read(&st, i, r)?;
        }
        let bad = |me: &Self, r: u8, what: &str| {
            me.diag(
                Rule::HelperArg,
                i,
                &st,
                &[r],
                format!(
                    "loop: argument {r} (r{r}) must be {what}, is {}",
                    me.speaker().value(&st.cur().regs[r as usize])
                ),
            )
        };
        if !matches!(&st.cur().regs[4], Reg::Scalar(x) if x.as_const() == Some(0)) {
            return Err(bad(self, 4, "the constant 0 (flags)"));
        }
        let k = match st.cur().regs[2] {
            Reg::Func(k) if k > 0 => k,
            _ => {
                return Err(bad(
                    self,
                    2,
                    "a subprogram's address (ld_imm64 func) as the callback",
                ))
            }
        };
        match self.facts.loop_callback[i] {
            Some(c) if c != k => {
                return Err(bad(
                    self,
                    2,
                    &format!("the same callback on every path (another path passes func#{c})"),
                ))
            }
            _ => self.facts.loop_callback[i] = Some(k),
        }
        if !matches!(st.cur().regs[1], Reg::Scalar(_)) {
            return Err(bad(self, 1, "a number (nr_loops)"));
        }
        if matches!(st.cur().regs[3], Reg::Map(_) | Reg::Func(_)) {
            return Err(bad(self, 3, "a pointer or a number (ctx)"));
        }
        if st.frames.len() >= MAX_CALL_DEPTH {
            return Err(self.diag(
                Rule::CallDepth,
                i,
                &st,
                &[],
                format!("call depth exceeds {MAX_CALL_DEPTH} frames"),
            ));
        }
        let trips = self.trips(&st, i, LoopForm::BpfLoop);
        let mut exit = st.clone();
        let cur = exit.cur_mut();
        cur.regs[0] = Reg::Scalar(Scalar::unknown());
        for r in 1..=5 {
            cur.regs[r] = Reg::Uninit;
        }
        (0..=5).for_each(|r| cur.unlink(r));
        let mut body = st;
        let mut f = Frame::new(body.frames.len() as u8, k, i);
        f.callback = true;
        f.regs[1] = Reg::Scalar(Scalar::range_u64(0, trips.max(1) - 1));
        f.regs[2] = body.cur().regs[3].clone();
        body.frames.push(f);
        let chain: Vec<usize> = body.frames.iter().map(|f| f.func).collect();
        self.chains.entry(chain).or_insert(i);
        let start = self.prog.funcs[k].start;
        Ok(Step::Loop {
            body: (body, start),
            exit: (exit, i + 1),
        })
    }

    /// A `bpf_loop` callback returns (`exit` in its frame): r0 must be 0 (continue) or 1
    /// (stop), and control goes back to the head with the caller's registers as they were.
    pub(super) fn callback_exit(&mut self, mut st: State, i: usize) -> R<Step> {
        let r0 = self.read(&st, i, 0)?;
        if !matches!(&r0, Reg::Scalar(x) if x.umax <= 1) {
            return Err(self.diag(
                Rule::HelperArg,
                i,
                &st,
                &[0],
                format!(
                    "a bpf_loop callback must return 0 (continue) or 1 (stop), not {}",
                    self.speaker().value(&r0)
                ),
            ));
        }
        self.frame_end_checks(&st, i)?;
        let callee = st.frames.pop().expect("a callback frame");
        Ok(Step::Next(st, callee.ret_to))
    }

    /// A function's frame ends at `exit` (or the program does): no iterator may be left
    /// in it undestroyed.
    pub(super) fn frame_end_checks(&self, st: &State, i: usize) -> R<()> {
        if let Some(Slot::Iter { at, .. }) = st
            .cur()
            .stack
            .iter()
            .find(|s| matches!(s, Slot::Iter { .. }))
        {
            return Err(self.diag(
                Rule::Iterator,
                i,
                st,
                &[],
                format!("the iterator made at insn {at} is not destroyed (bpf_iter_num_destroy) before the function returns"),
            ));
        }
        Ok(())
    }

    /// The numeric iterator kfuncs; `next` is a loop head (its body: r0 points at the next
    /// value; its exit: r0 = NULL, the iterator drained).
    pub(super) fn kfunc(&mut self, mut st: State, i: usize) -> R<Step> {
        let Some(k) = self.prog.kfunc(i) else {
            return Err(self.diag(
                Rule::Unsupported,
                i,
                &st,
                &[],
                "this kernel function (kfunc) does not exist on the GPU: the runtime has bpf_iter_num_new, bpf_iter_num_next and bpf_iter_num_destroy".into(),
            ));
        };
        self.read(&st, i, 1)?;
        let Some((f, slot, cur)) = self.iter_slot(&st, 1) else {
            return Err(self.diag(
                Rule::Iterator,
                i,
                &st,
                &[1],
                format!("{}: r1 must point at an 8-byte aligned stack slot (struct bpf_iter_num) at a constant offset", k.name()),
            ));
        };
        let func = st.frames[f].func;
        self.depth[func] = self.depth[func].max(8 * (slot as i64 + 1));
        let live = matches!(cur, Slot::Iter { .. });
        if live && k != Kfunc::IterNumNew {
            // The iterator moves (or ends): a value pointer from an earlier next would
            // read the new value, or zeroes, not one in the range it was given.
            forget_values(&mut st);
        }
        let clear = |st: &mut State| {
            let c = st.cur_mut();
            for r in 1..=5 {
                c.regs[r] = Reg::Uninit;
            }
            (0..=5).for_each(|r| c.unlink(r));
        };
        match k {
            Kfunc::IterNumNew => {
                if live {
                    return Err(self.diag(
                        Rule::Iterator,
                        i,
                        &st,
                        &[1],
                        "bpf_iter_num_new: the slot already holds a live iterator (destroy it first)".into(),
                    ));
                }
                let num = |me: &Self, st: &State, r: u8| -> R<Scalar> {
                    match me.read(st, i, r)? {
                        Reg::Scalar(x) => Ok(x),
                        v => Err(me.diag(
                            Rule::HelperArg,
                            i,
                            st,
                            &[r],
                            format!(
                                "bpf_iter_num_new: r{r} must be a number, is {}",
                                me.speaker().value(&v)
                            ),
                        )),
                    }
                };
                let (start, end) = (num(self, &st, 2)?, num(self, &st, 3)?);
                let (lo, hi) = (start.s32min, end.s32max.saturating_sub(1));
                let trips = (i64::from(end.s32max) - i64::from(start.s32min))
                    .clamp(0, BPF_MAX_LOOPS as i64) as u64;
                let id = self.fresh_id();
                *st.frames[f].slot_mut(slot) = Slot::Iter {
                    id,
                    lo,
                    hi: hi.max(lo),
                    trips,
                    at: self.cfg.pc(i),
                };
                clear(&mut st);
                st.cur_mut().regs[0] = Reg::Scalar(Scalar::unknown());
                Ok(Step::Next(st, i + 1))
            }
            Kfunc::IterNumNext | Kfunc::IterNumDestroy if !live => Err(self.diag(
                Rule::Iterator,
                i,
                &st,
                &[1],
                format!(
                    "{}: r1 does not point at a live iterator (made by bpf_iter_num_new)",
                    k.name()
                ),
            )),
            Kfunc::IterNumNext => {
                let Slot::Iter { lo, hi, .. } = cur else {
                    unreachable!("live")
                };
                clear(&mut st);
                let mut exit = st.clone();
                exit.cur_mut().regs[0] = Reg::constant(0);
                st.cur_mut().regs[0] = Reg::Ptr(Region::IterValue { lo, hi }, Scalar::constant(0));
                Ok(Step::Loop {
                    body: (st, i + 1),
                    exit: (exit, i + 1),
                })
            }
            Kfunc::IterNumDestroy => {
                *st.frames[f].slot_mut(slot) = Slot::Bytes(0);
                clear(&mut st);
                Ok(Step::Next(st, i + 1))
            }
        }
    }

    /// `may_goto`: its head. The body falls through (one unit of the budget spent); the
    /// exit jumps (the budget is spent).
    pub(super) fn may_goto(&mut self, st: State, i: usize) -> R<Step> {
        let t = self.target(i);
        Ok(Step::Loop {
            body: (st.clone(), i + 1),
            exit: (st, t),
        })
    }
}

/// Turns every pointer to an iterator's value (`next`'s result), in registers and spilled,
/// in every frame, into an unusable one.
fn forget_values(st: &mut State) {
    let is_value = |r: &Reg| matches!(r, Reg::Ptr(Region::IterValue { .. }, _));
    for f in &mut st.frames {
        for r in f.regs.iter_mut() {
            if is_value(r) {
                *r = Reg::Uninit;
            }
        }
        for s in f.stack.iter_mut() {
            if matches!(s, Slot::Spill(r) if is_value(r)) {
                *s = Slot::Bytes(0);
            }
        }
    }
}

/// Whether every iterator slot of `h` holds the very same iterator (id) in `s`. Subsumption
/// matches ids as a bijection, which would let an iteration that destroys its iterator and
/// makes a new one (resetting the count) converge: a loop that never ends.
fn same_iterators(h: &State, s: &State) -> bool {
    h.frames.iter().zip(&s.frames).all(|(f, g)| {
        f.stack
            .iter()
            .enumerate()
            .all(|(k, a)| match (a, g.slot(k)) {
                (Slot::Iter { id: x, .. }, Slot::Iter { id: y, .. }) => x == y,
                _ => true,
            })
    })
}

/// `h ∇ s`: a state that subsumes both, keeping what `h` already subsumes of `s` and
/// forgetting the rest (see the module's documentation). `None` when the two have
/// different frames or held references, which no widening can join.
pub(super) fn widen(h: &State, s: &State) -> Option<State> {
    if h.frames.len() != s.frames.len() || h.refs != s.refs {
        return None;
    }
    let mut w = h.clone();
    for (fw, fs) in w.frames.iter_mut().zip(&s.frames) {
        if fw.func != fs.func || fw.ret_to != fs.ret_to || fw.callback != fs.callback {
            return None;
        }
        let mut changed = false;
        for r in 0..11 {
            let (a, b) = (&fw.regs[r], &fs.regs[r]);
            let keep = State::reg_subsumes_alone(a, b);
            if keep {
                continue;
            }
            changed = true;
            fw.regs[r] = match (a, b) {
                (Reg::Scalar(_), Reg::Scalar(_)) => Reg::Scalar(Scalar::unknown()),
                (Reg::Ptr(ra, _), Reg::Ptr(rb, _)) if ra == rb => Reg::Ptr(*ra, Scalar::unknown()),
                _ => Reg::Uninit,
            };
        }
        if changed || fw.links != fs.links {
            fw.links = [(0, 0); 11];
        }
        let n = fw.stack.len().max(fs.stack.len());
        for k in 0..n {
            let (a, b) = (fw.slot(k).clone(), fs.slot(k).clone());
            let same_iter =
                !matches!((&a, &b), (Slot::Iter { id: x, .. }, Slot::Iter { id: y, .. }) if x != y);
            if same_iter && State::slot_subsumes_alone(&a, &b) {
                continue;
            }
            let ma = a.init_mask().unwrap_or(0);
            let mb = b.init_mask().unwrap_or(0);
            *fw.slot_mut(k) = match (&a, &b) {
                (Slot::Spill(Reg::Scalar(_)), Slot::Spill(Reg::Scalar(_))) => {
                    Slot::Spill(Reg::Scalar(Scalar::unknown()))
                }
                _ => Slot::Bytes(ma & mb),
            };
        }
    }
    Some(w)
}
