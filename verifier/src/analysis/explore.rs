//! The walk: the explorer's set-up, the depth-first exploration with its work list, the
//! remembered states at prune points (pruning by subsumption, a state that repeats
//! exactly), the exploration limit that bounds loops, the longest path to an exit (the
//! cost bound) and the combined stack of every call chain.

use super::relevance::relevance;
use super::{loops, Explorer, Pending, Step, Stored, MAX_STACK, STATES_PER_INSN, STATES_TOTAL};
use crate::plain_add;
use crate::scalar::Scalar;
use crate::state::{Frame, Reg, Region, State};
use crate::{Entry, Facts, Rule};
use bpf2ptx_compiler::cfg::Cfg;
use bpf2ptx_compiler::isa::table::Src;
use bpf2ptx_compiler::isa::{Flow, Kind};
use bpf2ptx_compiler::program::{Object, Program};

impl<'a> Explorer<'a> {
    pub(crate) fn new(obj: &'a Object, prog: &'a Program, entry: &'a Entry, limit: u64) -> Self {
        let cfg = Cfg::new(prog);
        let n = prog.insns.len();
        // Prune points: where paths join (jump targets, both ways of a branch) and
        // function starts.
        let mut prune_point = vec![false; n + 1];
        for (i, ins) in prog.insns.iter().enumerate() {
            if let Some(Ok(t)) = cfg.jump(&prog.insns, i) {
                prune_point[t] = true;
            }
            if matches!(ins.flow(), Flow::Branch(_)) {
                prune_point[i + 1] = true;
            }
        }
        for f in &prog.funcs {
            prune_point[f.start] = true;
        }
        let may_repeat = may_repeat(prog, &cfg);
        let relevant = relevance(prog, &cfg);
        let triples = plain_add::triples(prog, &cfg);
        let mut triple_of = vec![None; n];
        for (k, t) in triples.iter().enumerate() {
            triple_of[t.load] = Some(k);
            triple_of[t.store] = Some(k);
        }
        Explorer {
            obj,
            prog,
            entry,
            cfg,
            prune_point,
            may_repeat,
            relevant,
            store: (0..n).map(|_| Vec::new()).collect(),
            path: Vec::new(),
            history: Vec::new(),
            next_id: 1,
            processed: 0,
            jumps: 0,
            last_store: (0, 0),
            errors: Vec::new(),
            facts: Facts {
                map_only_adds: vec![true; obj.maps.len()],
                map_written: vec![false; obj.maps.len()],
                ..Facts::new(n)
            },
            depth: vec![0; prog.funcs.len().max(1)],
            visits: vec![0; n],
            limit,
            stored: 0,
            live: vec![super::FpCounts::default(); n],
            done_at: vec![0; n],
            evicted_at: vec![0; n],
            done_list: vec![Vec::new(); n],
            chains: std::collections::HashMap::new(),
            went: vec![(false, false); n],
            adding: false,
            seen: vec![false; n],
            seen_const: vec![false; n],
            seen_upper: vec![false; n],
            seen_jump_rhs: vec![false; n],
            triple_map: vec![(false, None); triples.len()],
            triples,
            triple_of,
            triple_maps: std::collections::BTreeSet::new(),
            loops: Vec::new(),
            loop_stack: Vec::new(),
            cycles: std::collections::HashMap::new(),
            budget_head: vec![false; n],
            loop_budget: 0,
            last_test: vec![None; n],
            load_map: vec![None; n],
        }
    }

    /// The innermost loop bounded by construction the current path is in, as (head, frames
    /// at the head): where the longest path below a state remembered now ends.
    pub(super) fn loop_key(&self) -> Option<(usize, usize)> {
        self.loop_stack
            .last()
            .map(|&(l, _)| (self.loops[l].head, self.loops[l].depth))
    }

    /// Puts a loop budget of `n` iterations per function invocation on the loops headed
    /// by `heads` (`--loop-budget`).
    pub(crate) fn set_budget(&mut self, heads: &[usize], n: u64) {
        for &h in heads {
            self.budget_head[h] = true;
        }
        self.loop_budget = n;
    }

    /// The target of the backward jump at slot `pc` (the head of the loop a `loop-bound`
    /// diagnostic blames).
    pub(crate) fn backward_target(&self, pc: usize) -> Option<usize> {
        let i = self.cfg.at(pc as i64)?;
        self.cfg.jump(&self.prog.insns, i)?.ok()
    }

    fn initial_state(&self) -> State {
        let mut f = Frame::new(0, 0, 0);
        f.regs[1] = match self.entry.r1 {
            crate::EntryArg::Ctx { .. } => Reg::Ptr(Region::Ctx, Scalar::constant(0)),
            crate::EntryArg::Mem { .. } => Reg::Ptr(Region::Mem, Scalar::constant(0)),
        };
        if let Some(v) = self.entry.r2 {
            f.regs[2] = Reg::constant(v);
        }
        State {
            frames: vec![f],
            refs: Vec::new(),
        }
    }

    /// Explores every path. Errors end their path; exploration goes on with the others.
    pub(crate) fn run(&mut self) {
        let mut work = vec![Pending {
            state: self.initial_state(),
            at: 0,
            steps: 0,
            path_len: 0,
            history_len: 0,
            decision: None,
            loop_stack: Vec::new(),
            release: None,
        }];
        while let Some(p) = work.pop() {
            while self.path.len() > p.path_len {
                self.pop_path();
            }
            self.history.truncate(p.history_len);
            self.history.extend(p.decision);
            self.loop_stack.clone_from(&p.loop_stack);
            if let Some(l) = p.release {
                self.release(l, &p, &mut work);
                continue;
            }
            let (mut st, mut at, mut steps) = (p.state, p.at, p.steps);
            loop {
                // A path that leaves a loop waits until every iteration is explored.
                if let Some(&(l, _)) = self.loop_stack.last() {
                    if self.left_loop(l, &st, at) {
                        self.end_iteration(steps);
                        self.finish_path(steps);
                        self.loops[l].deferred.push(loops::Deferred::Resume(st, at));
                        break;
                    }
                }
                // A loop head bounded by construction: converge, widen, or open it.
                let head = self.head_form(at);
                if let Some(form) = head {
                    match self.head_visit(st, at, form, steps, &mut work) {
                        Ok(Some(s)) => st = s,
                        Ok(None) => {
                            self.finish_path(steps);
                            break;
                        }
                        Err(e) => {
                            self.report(e);
                            break;
                        }
                    }
                }
                if self.prune_point[at] {
                    // Registers that matter: in the current frame from here, in each
                    // caller from where it resumes.
                    let masks: Vec<u16> = (0..st.frames.len())
                        .map(|k| match st.frames.get(k + 1) {
                            Some(callee) => self.relevant[callee.ret_to],
                            None => self.relevant[at],
                        })
                        .collect();
                    let pruned = if self.done_list[at].is_empty() {
                        None
                    } else {
                        self.prune_against(at, &mut st, &masks)
                    };
                    if let Some(k) = pruned {
                        let total = steps + self.store[at][k].remaining;
                        self.end_iteration(total);
                        self.finish_path(total);
                        break;
                    }
                    let store = self.should_store(at, head.is_some());
                    let fp = (self.may_repeat[at] && (store || !self.live[at].is_empty()))
                        .then(|| st.fingerprint());
                    let repeat = match fp {
                        Some(fp) if self.live[at].contains_key(&fp) => self.store[at]
                            .iter()
                            .position(|s| !s.done && s.fp == Some(fp) && s.state == st),
                        _ => None,
                    };
                    if let Some(k) = repeat.filter(|&k| self.repeat_converges(at, k, &st, steps)) {
                        self.end_iteration(steps);
                        self.finish_path(steps);
                        let _ = k;
                        break;
                    }
                    if repeat.is_some() {
                        let e = self.diag(Rule::InfiniteLoop, at, &st, &[], "the state here repeats exactly on a path through it: the loop makes no progress the verifier can see".into());
                        self.report(e);
                        break;
                    }
                    if store {
                        self.stored += 1;
                        self.last_store = (self.jumps, self.processed);
                        if let Some(fp) = fp {
                            *self.live[at].entry(fp).or_insert(0) += 1;
                        }
                        let loop_key = self.loop_key();
                        self.store[at].push(Stored {
                            state: st.clone(),
                            fp,
                            remaining: 0,
                            done: false,
                            hits: 0,
                            misses: 0,
                            evicted: false,
                            loop_key,
                        });
                        self.path.push((at, self.store[at].len() - 1, steps, 0));
                    }
                }
                self.processed += 1;
                if !matches!(self.prog.insns[at].flow(), Flow::Next) {
                    self.jumps += 1;
                }
                self.visits[at] += 1;
                if self.processed > self.limit {
                    // Blame the loop: the most visited backward jump the walk took (its
                    // target is the head). Without one the program has no loop the walk
                    // went around: its paths did not merge, and saying "loop" would send
                    // the user looking for one.
                    let backward = |i: usize| self.prog.insns[i].jump_rel().is_some_and(|r| r < 0);
                    let hot_loop = (0..self.visits.len())
                        .filter(|&i| backward(i) && self.visits[i] > 0)
                        .max_by_key(|&i| self.visits[i]);
                    let e = match hot_loop {
                        Some(hot) => self.loop_bound(&st, hot),
                        None => {
                            let hot = (0..self.visits.len())
                                .max_by_key(|&i| self.visits[i])
                                .unwrap_or(at);
                            self.diag(
                                Rule::TooComplex,
                                hot,
                                &st,
                                &[],
                                format!("too many instructions explored: {} (the limit), without a loop; the program's paths do not merge (this instruction was reached {} times)", self.limit, self.visits[hot]),
                            )
                        }
                    };
                    self.report(e);
                    return;
                }
                steps += 1;
                if let Kind::Jmp(_, _, src) = self.prog.insns[at].kind() {
                    // What a loop's test compared on its latest trip: what a `loop-bound`
                    // diagnostic shows (`Explorer::loop_bound`).
                    if self.prog.insns[at].jump_rel().is_some_and(|r| r < 0) {
                        let ins = self.prog.insns[at];
                        let regs = &st.cur().regs;
                        self.last_test[at] = Some((
                            regs[ins.dst as usize].clone(),
                            (src == Src::X).then(|| regs[ins.src as usize].clone()),
                        ));
                    }
                }
                match self.step(st, at) {
                    Ok(Step::Next(s, n)) => {
                        st = s;
                        at = n;
                    }
                    Ok(Step::Branch((s1, n1), (s2, n2))) => {
                        let history_len = self.history.len();
                        let pc = self.cfg.pc(at);
                        work.push(Pending {
                            state: s2,
                            at: n2,
                            steps,
                            path_len: self.path.len(),
                            history_len,
                            decision: Some((pc, n2 != at + 1)),
                            loop_stack: self.loop_stack.clone(),
                            release: None,
                        });
                        self.history.push((pc, n1 != at + 1));
                        st = s1;
                        at = n1;
                    }
                    Ok(Step::Loop {
                        body: (s1, n1),
                        exit: (s2, n2),
                    }) => {
                        // The head just opened or widened its instance (top of the stack),
                        // unless it heads no loop (then it is a plain branch).
                        let inst = self.loop_stack.last().map(|&(l, _)| l).filter(|&l| {
                            self.loops[l].head == at && self.loops[l].depth == s2.frames.len()
                        });
                        match inst {
                            Some(l) => {
                                self.loops[l].deferred.push(loops::Deferred::Resume(s2, n2));
                            }
                            None => work.push(Pending {
                                state: s2,
                                at: n2,
                                steps,
                                path_len: self.path.len(),
                                history_len: self.history.len(),
                                decision: None,
                                loop_stack: self.loop_stack.clone(),
                                release: None,
                            }),
                        }
                        st = s1;
                        at = n1;
                    }
                    Ok(Step::End) => {
                        self.end_iteration(steps);
                        self.finish_path(steps);
                        break;
                    }
                    Err(e) => {
                        self.report(e);
                        break;
                    }
                }
            }
        }
        while !self.path.is_empty() {
            self.pop_path();
        }
        self.check_stack_chains();
        for (k, &(taken, fell)) in self.went.iter().enumerate() {
            self.facts.branch_always[k] = match (taken, fell) {
                (true, false) => Some(true),
                (false, true) => Some(false),
                _ => None,
            };
        }
        self.facts.unreachable = (0..self.prog.insns.len())
            .filter(|&i| self.visits[i] == 0)
            .map(|i| self.cfg.pc(i))
            .collect();
        self.facts.reached = self.visits.iter().map(|&v| v > 0).collect();
        self.finish_plain_adds();
    }

    /// Whether a visit to prune point `at` that was neither pruned nor an exact repeat
    /// remembers its state, as Linux's `is_state_visited` decides: only after 2 jumps
    /// and 8 instructions since the last state remembered (anywhere), and, where a state
    /// remembered at `at` is still being explored (the walk is going around a loop through
    /// `at`), only after 20 jumps or 100 instructions; always at the head of a loop
    /// bounded by construction (`forced`, as Linux forces a checkpoint at `may_goto`, an
    /// iterator's `next` and a callback call); never beyond [`STATES_PER_INSN`] at `at` or
    /// [`STATES_TOTAL`] in all.
    ///
    /// Most visits then store nothing, which saves the copy, and the states a later visit
    /// is compared with are fewer: where a program's paths do not merge, nearly every
    /// stored state is one that nothing will match. Storing fewer states is sound: it only
    /// removes chances to prune. An exact repeat is still found: a loop whose state repeats
    /// comes back with the same state to where one of its iterations stored it.
    fn should_store(&self, at: usize, forced: bool) -> bool {
        if self.store[at].len() - self.evicted_at[at] >= STATES_PER_INSN
            || self.stored >= STATES_TOTAL
        {
            return false;
        }
        if forced {
            return true;
        }
        let jumps = self.jumps - self.last_store.0;
        let insns = self.processed - self.last_store.1;
        let in_loop = self.store[at].len() > self.done_at[at];
        jumps >= 2 && insns >= 8 && (!in_loop || jumps >= 20 || insns >= 100)
    }

    /// The first fully explored state remembered at `at` that subsumes `st`, counting a
    /// hit for it and a miss for each one tested before it; a state that misses too often
    /// is evicted ([`Stored::should_evict`]), so that a prune point whose states keep
    /// missing (a loop whose states never repeat) stops costing a scan of all of them at
    /// every visit.
    ///
    /// `st`'s numbers are normalized first (the same sets of values), once, so that the
    /// comparisons need not normalize them again each.
    fn prune_against(&mut self, at: usize, st: &mut State, masks: &[u16]) -> Option<usize> {
        let key = self.loop_key();
        let normalized = st.normalize_numbers();
        let mut j = 0;
        while let Some(&k) = self.done_list[at].get(j) {
            let s = &mut self.store[at][k];
            // Lengths below a state count to the end of an iteration of the loop it was
            // stored in (or to the program's end outside loops): only a path in the same
            // place may take them as its own.
            if s.loop_key != key {
                j += 1;
                continue;
            }
            let subsumed = if normalized {
                s.state.subsumes_normalized(st, masks)
            } else {
                s.state.subsumes_with(st, masks)
            };
            if subsumed {
                s.hits += 1;
                return Some(k);
            }
            s.misses += 1;
            if s.should_evict() {
                s.evicted = true;
                s.state = State {
                    frames: Vec::new(),
                    refs: Vec::new(),
                };
                self.evicted_at[at] += 1;
                self.stored -= 1;
                self.done_list[at].remove(j);
            } else {
                j += 1;
            }
        }
        None
    }

    /// Remembered state `k` of instruction `i` has had every path explored.
    fn mark_done(&mut self, i: usize, k: usize) {
        let s = &mut self.store[i][k];
        s.done = true;
        if let Some(fp) = s.fp {
            if let Some(c) = self.live[i].get_mut(&fp) {
                *c -= 1;
                if *c == 0 {
                    self.live[i].remove(&fp);
                }
            }
        }
        self.done_at[i] += 1;
        let list = &mut self.done_list[i];
        let at = list.partition_point(|&j| j < k);
        list.insert(at, k);
    }

    /// A path ended after `total` instructions: the longest path below every remembered
    /// state on it is at least that long (recorded at the top, handed down as states pop).
    fn finish_path(&mut self, total: u64) {
        if let Some(top) = self.path.last_mut() {
            top.3 = top.3.max(total);
        }
        self.facts.cost_bound = self.facts.cost_bound.max(total);
    }

    /// The newest remembered state on the path has had every path explored: its longest
    /// remaining path is final, and its callers' paths include it.
    fn pop_path(&mut self) {
        let (i, k, at, longest) = self.path.pop().expect("nonempty");
        if longest >= at {
            let s = &mut self.store[i][k];
            s.remaining = s.remaining.max(longest - at);
        }
        if let Some(parent) = self.path.last_mut() {
            parent.3 = parent.3.max(longest);
        }
        self.mark_done(i, k);
    }

    /// The combined stack of every call chain fits in 512 bytes. The chains are the ones
    /// the exploration went through (a path pruned at a function start has the same chain
    /// as the state that pruned it), so recursion counts as deep as it can really go.
    fn check_stack_chains(&mut self) {
        let own: Vec<i64> = self.depth.iter().map(|d| (d + 7) / 8 * 8).collect();
        let (mut total, mut worst) = (own[0], vec![0]);
        for c in self.chains.keys() {
            let t: i64 = c.iter().map(|&f| own[f]).sum();
            if t > total || (t == total && c < &worst) {
                (total, worst) = (t, c.clone());
            }
        }
        self.facts.stack_bytes = total as u32;
        if total > MAX_STACK {
            // Blame the call that first takes the chain past the limit.
            let mut sum = 0;
            let mut at = 0;
            for j in 0..worst.len() {
                sum += own[worst[j]];
                if sum > MAX_STACK {
                    at = self.chains.get(&worst[..=j]).copied().unwrap_or(0);
                    break;
                }
            }
            let st = self.initial_state();
            let names: Vec<String> = worst
                .iter()
                .map(|&f| {
                    let name = self
                        .prog
                        .funcs
                        .get(f)
                        .map_or_else(|| self.prog.name.clone(), |x| x.name.clone());
                    format!("{name} ({} bytes)", own[f])
                })
                .collect();
            let e = self.diag(
                Rule::StackSize,
                at,
                &st,
                &[],
                format!(
                    "the call chain {} uses {total} bytes of stack, more than {MAX_STACK}",
                    names.join(" -> ")
                ),
            );
            self.errors.push(*e);
        }
    }
}

/// Per instruction: whether a path can reach it twice with the same frames, so that a
/// state there can repeat exactly on its own path (the `infinite-loop` check, which needs
/// the state's [`State::fingerprint`]). In the entry function that takes a cycle through
/// the instruction, and a cycle through `i` crosses `i` by a backward jump from `j >= i`
/// to `t <= i` (the walk must get from above `i` back to below it): `i` is in the span of
/// a backward jump. Another function may run again from a caller's loop or as a
/// `bpf_loop` callback, and a call or `may_goto` may head a loop bounded by construction
/// (`loops.rs`): those count as possible repeats too. Elsewhere (all of a loop-free
/// program) the check could never succeed, and its hash is not computed.
fn may_repeat(prog: &Program, cfg: &Cfg) -> Vec<bool> {
    let n = prog.insns.len();
    // +1 where a backward jump's span starts, -1 after it ends: the running sum is the
    // number of spans an instruction is in.
    let mut spans = vec![0i64; n + 1];
    for i in 0..n {
        if let Some(Ok(t)) = cfg.jump(&prog.insns, i) {
            if t <= i {
                spans[t] += 1;
                spans[i + 1] -= 1;
            }
        }
    }
    let mut inside = 0;
    (0..n)
        .map(|i| {
            inside += spans[i];
            inside > 0
                || cfg.func_of(i) != Some(0)
                || matches!(prog.insns[i].kind(), Kind::Call(_) | Kind::MayGoto)
        })
        .collect()
}
