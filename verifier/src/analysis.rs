//! Abstract interpretation of a program: every path is explored, with states at jump
//! targets remembered so that a path reaching a state an explored one subsumes stops there.
//!
//! The exploration is a depth-first walk with an explicit work list (no recursion, so a
//! deep program cannot overflow the stack). A loop is accepted when exploring it ends:
//! each iteration changes the state (a counter moves towards its bound) until the exit edge
//! is the only feasible one; a loop whose bound is unknown keeps producing new states and
//! hits the exploration limit, and a loop whose state repeats exactly is reported at once.
//!
//! The worst-case instruction count falls out of the same walk: every remembered state
//! keeps the longest path from it to an exit, and a path pruned at a subsumed state
//! continues with that length (the subsumed state's paths are a subset of the explored
//! ones). The longest path of the whole walk is the cost bound.

use crate::plain_add::{self, Triple};
use crate::scalar::Scalar;
use crate::state::{Frame, Reg, Region, Slot, State};
use crate::{Diagnostic, Entry, Facts, PlainAdd, Rule};
use bpf2ptx_compiler::isa::table::{
    AluOp, AtomicOp, CallKind, Cond, Kind, Pseudo, Size, Src, Width,
};
use bpf2ptx_compiler::isa::Insn;
use bpf2ptx_compiler::program::{MapOrigin, Object, Program};
use bpf2ptx_runtime::MapKind;
use bpf2ptx_runtime::{Access, Arg, Ret};

/// Instructions the exploration may process before it gives up on a program.
pub const COMPLEXITY_LIMIT: u64 = 1_000_000;
/// States remembered per instruction. A loop with a branch in its body needs one per
/// iteration at its head (the path that explores the rest of the loop first holds them all
/// while the other branches wait to be pruned against them); each visit compares against
/// the states remembered there, most failing at the first register that differs.
pub const STATES_PER_INSN: usize = 1024;
/// States remembered in all (a bound on memory: a state is a few kilobytes at most).
pub const STATES_TOTAL: usize = 16_384;
/// Maximum call depth (frames), as in Linux.
pub const MAX_CALL_DEPTH: usize = 8;
/// Maximum combined stack of a call chain, as in Linux.
pub const MAX_STACK: i64 = 512;
/// `BPF_F_RDONLY_PROG`.
const RDONLY_PROG: u32 = 0x80;
/// The bit of `Facts::regions` for map values.
const REGION_MAP_VALUE: u8 = 8;

/// A remembered state at a prune point.
struct Stored {
    state: State,
    /// [`State::fingerprint`] of `state`.
    fp: u64,
    /// Longest path (in instructions) from here to an exit found so far.
    remaining: u64,
    /// Every path from here has been explored.
    done: bool,
}

/// A branch left for later.
struct Pending {
    state: State,
    at: usize,
    steps: u64,
    path_len: usize,
    history_len: usize,
    /// The branch decision that leads here: (slot of the branch, taken).
    decision: Option<(usize, bool)>,
}

/// What executing one instruction did.
enum Step {
    /// Continue at the next instruction (or a jump target) with this state.
    Next(State, usize),
    /// Two feasible successors: continue with the first, explore the second later.
    Branch((State, usize), (State, usize)),
    /// The path ended (program exit or a non-returning helper).
    End,
}

/// The explorer of one program.
pub(crate) struct Explorer<'a> {
    obj: &'a Object,
    prog: &'a Program,
    entry: &'a Entry,
    pcs: Vec<usize>,
    idx_of_pc: Vec<Option<usize>>,
    prune_point: Vec<bool>,
    /// Per instruction: the registers whose value matters from there ([`relevance`]).
    relevant: Vec<u16>,
    store: Vec<Vec<Stored>>,
    /// The remembered states on the current path, oldest first: (instruction, index in
    /// its store, steps when reached, longest path length ending below it so far).
    path: Vec<(usize, usize, u64, u64)>,
    history: Vec<(usize, bool)>,
    next_id: u32,
    processed: u64,
    pub(crate) errors: Vec<Diagnostic>,
    pub(crate) facts: Facts,
    /// Deepest stack byte used per function (positive number of bytes below r10).
    depth: Vec<i64>,
    visits: Vec<u64>,
    limit: u64,
    /// States remembered so far (all instructions).
    stored: usize,
    /// Per instruction: fingerprints of its remembered states still being explored.
    live: Vec<std::collections::HashMap<u64, u32>>,
    /// Per instruction: how many of its remembered states are fully explored.
    done_at: Vec<usize>,
    /// Every call chain (the functions of the frames, entry first) a path went through,
    /// with the instruction of the call that first built it.
    chains: std::collections::HashMap<Vec<usize>, usize>,
    /// Per conditional jump: whether some path took it, and whether some path fell through.
    went: Vec<(bool, bool)>,
    /// The access being checked is a 64-bit atomic add without fetch (see
    /// `Facts::map_only_adds`).
    adding: bool,
    /// Per instruction: whether a path reached it and set its `Facts::atomic_add_const`
    /// or `Facts::call_map` (a later path with another value clears the fact).
    seen: Vec<bool>,
    /// Per instruction: whether a path reached it and set its `Facts::const_value`.
    seen_const: Vec<bool>,
    /// Loads, adds and stores with the shape of a plain counter update (`*v += x`), found
    /// in the code; the paths decide which become `Facts::plain_add`.
    triples: Vec<Triple>,
    /// Per instruction: the triple whose load or store it is.
    triple_of: Vec<Option<usize>>,
    /// Per triple: whether a path reached its load, and the map it loads from when the
    /// same on every path.
    triple_map: Vec<(bool, Option<u32>)>,
    /// (triple, map) for every map a triple's load or store touched on some path: those
    /// maps stay shardable only if the triple becomes a 64-bit atomic add.
    triple_maps: std::collections::BTreeSet<(usize, u32)>,
}

/// Keeps a per-instruction fact that must hold on every path: the first visit sets it,
/// a visit with a different value clears it.
fn same_on_every_path<T: PartialEq>(seen: &mut bool, fact: &mut Option<T>, v: Option<T>) {
    if !*seen {
        *seen = true;
        *fact = v;
    } else if *fact != v {
        *fact = None;
    }
}

type R<T> = Result<T, Box<Diagnostic>>;

/// The map kinds helper `id` takes as its map argument, as a [`MapKind`] predicate (None:
/// no constraint): maps with keys and values for lookup, update and delete
/// ([`MapKind::is_key_value`]), rings for the ring helpers.
fn map_kinds(id: i64) -> Option<fn(MapKind) -> bool> {
    match id {
        1..=3 => Some(MapKind::is_key_value),
        25 => Some(MapKind::takes_perf_event_output),
        130 | 131 | 134 => Some(MapKind::takes_ringbuf_helpers),
        _ => None,
    }
}

/// The number a load of `n` bytes (sign-extending when `signed`) gets back from a narrow
/// spill of `v`: its low `n` bytes.
fn narrow_fill(v: &Scalar, n: u8, signed: bool) -> Scalar {
    if signed {
        return v.movsx(Width::W64, n * 8);
    }
    match n {
        4 => Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), v),
        _ => Scalar::alu(
            AluOp::And,
            Width::W64,
            v,
            &Scalar::constant((1u64 << (8 * u32::from(n))) - 1),
        ),
    }
}

/// The initialised-byte mask a slot keeps when part of it is overwritten: a spilled
/// number's bytes stay initialised; a spilled pointer's bytes become uninitialised, so
/// that no part of the pointer can be read back as a number.
fn spill_bytes(s: &Slot) -> u8 {
    s.init_mask().unwrap_or(0)
}

/// After a branch narrowed register `r` to `v`: every register linked to `r` (holding
/// `r + c` for a constant `c`) is narrowed to its old value intersected with `v + c`.
fn narrow_linked(f: &mut crate::state::Frame, r: u8, v: &Scalar) {
    let (id, delta) = f.links[r as usize];
    if id == 0 {
        return;
    }
    for o in 0..11 {
        let (oid, odelta) = f.links[o];
        if o == r as usize || oid != id {
            continue;
        }
        let Reg::Scalar(old) = f.regs[o] else {
            continue;
        };
        let c = Scalar::constant(odelta.wrapping_sub(delta));
        let shifted = Scalar::alu(AluOp::Add, Width::W64, v, &c);
        if let Some((met, _)) = Scalar::refine(Cond::Eq, Width::W64, &old, &shifted, true) {
            f.regs[o] = Reg::Scalar(met);
        }
    }
}

fn is_zero(r: &Reg) -> bool {
    matches!(r, Reg::Scalar(k) if k.as_const() == Some(0))
}

fn width_of(s: Size) -> Width {
    if s == Size::DW {
        Width::W64
    } else {
        Width::W32
    }
}

impl<'a> Explorer<'a> {
    pub(crate) fn new(obj: &'a Object, prog: &'a Program, entry: &'a Entry, limit: u64) -> Self {
        let pcs = prog.pcs();
        let n = prog.insns.len();
        let mut idx_of_pc = vec![None; pcs[n] + 1];
        for (i, &pc) in pcs.iter().enumerate().take(n) {
            idx_of_pc[pc] = Some(i);
        }
        let mut prune_point = vec![false; n + 1];
        for (i, ins) in prog.insns.iter().enumerate() {
            let rel = match ins.kind() {
                Kind::Ja | Kind::Jmp(..) => i64::from(ins.off),
                Kind::Gotol => ins.imm,
                _ => continue,
            };
            if let Some(t) = usize::try_from(pcs[i] as i64 + 1 + rel)
                .ok()
                .and_then(|pc| idx_of_pc.get(pc).copied().flatten())
            {
                prune_point[t] = true;
            }
            if matches!(ins.kind(), Kind::Jmp(..)) {
                prune_point[i + 1] = true;
            }
        }
        for f in &prog.funcs {
            prune_point[f.start] = true;
        }
        let relevant = relevance(prog, &pcs, &idx_of_pc);
        let triples = plain_add::triples(prog, &pcs, &idx_of_pc);
        let mut triple_of = vec![None; n];
        for (k, t) in triples.iter().enumerate() {
            triple_of[t.load] = Some(k);
            triple_of[t.store] = Some(k);
        }
        Explorer {
            obj,
            prog,
            entry,
            pcs,
            idx_of_pc,
            prune_point,
            relevant,
            store: (0..n).map(|_| Vec::new()).collect(),
            path: Vec::new(),
            history: Vec::new(),
            next_id: 1,
            processed: 0,
            errors: Vec::new(),
            facts: Facts {
                map_only_adds: vec![true; obj.maps.len()],
                ..Facts::new(n)
            },
            depth: vec![0; prog.funcs.len().max(1)],
            visits: vec![0; n],
            limit,
            stored: 0,
            live: vec![std::collections::HashMap::new(); n],
            done_at: vec![0; n],
            chains: std::collections::HashMap::new(),
            went: vec![(false, false); n],
            adding: false,
            seen: vec![false; n],
            seen_const: vec![false; n],
            triple_map: vec![(false, None); triples.len()],
            triples,
            triple_of,
            triple_maps: std::collections::BTreeSet::new(),
        }
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

    fn func_of(&self, i: usize) -> usize {
        self.prog
            .funcs
            .iter()
            .rposition(|f| f.start <= i)
            .unwrap_or(0)
    }

    /// Builds a diagnostic at instruction `i` naming the registers involved.
    fn diag(
        &self,
        rule: Rule,
        i: usize,
        st: &State,
        regs: &[u8],
        message: String,
    ) -> Box<Diagnostic> {
        let ins = self.prog.insns[i];
        let line = self
            .prog
            .lines
            .iter()
            .rev()
            .find(|(j, _)| *j <= i && self.func_of(*j) == self.func_of(i))
            .map(|(_, l)| l.clone());
        let mut seen = Vec::new();
        let regs = regs
            .iter()
            .filter(|r| {
                let fresh = !seen.contains(*r);
                seen.push(**r);
                fresh
            })
            .map(|&r| {
                let mut value = st.cur().regs[r as usize].to_string();
                // Name maps: `map#3)` reads better as the map's own name.
                for (k, m) in self.obj.maps.iter().enumerate().rev() {
                    value = value.replace(&format!("map#{k})"), &format!("{})", m.name));
                }
                crate::RegState { reg: r, value }
            })
            .collect();
        let path = self
            .history
            .iter()
            .rev()
            .take(12)
            .rev()
            .map(|&(pc, taken)| crate::Decision { pc, taken })
            .collect();
        Box::new(Diagnostic {
            rule,
            pc: self.pcs[i],
            insn: ins.to_string(),
            func: self
                .prog
                .funcs
                .get(self.func_of(i))
                .map_or_else(|| self.prog.name.clone(), |f| f.name.clone()),
            line,
            message,
            regs,
            path,
        })
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
        }];
        while let Some(p) = work.pop() {
            while self.path.len() > p.path_len {
                self.pop_path();
            }
            self.history.truncate(p.history_len);
            self.history.extend(p.decision);
            let (mut st, mut at, mut steps) = (p.state, p.at, p.steps);
            loop {
                if self.prune_point[at] {
                    // Registers that matter: in the current frame from here, in each
                    // caller from where it resumes.
                    let masks: Vec<u16> = (0..st.frames.len())
                        .map(|k| match st.frames.get(k + 1) {
                            Some(callee) => self.relevant[callee.ret_to],
                            None => self.relevant[at],
                        })
                        .collect();
                    let pruned = if self.done_at[at] == 0 {
                        None
                    } else {
                        self.store[at]
                            .iter()
                            .position(|s| s.done && s.state.subsumes_with(&st, &masks))
                    };
                    if let Some(k) = pruned {
                        let total = steps + self.store[at][k].remaining;
                        self.finish_path(total);
                        break;
                    }
                    let fp = st.fingerprint();
                    if self.live[at].contains_key(&fp)
                        && self.store[at]
                            .iter()
                            .any(|s| !s.done && s.fp == fp && s.state == st)
                    {
                        let e = self.diag(Rule::InfiniteLoop, at, &st, &[], "the state here repeats exactly on a path through it: the loop makes no progress the verifier can see".into());
                        self.report(e);
                        break;
                    }
                    if self.store[at].len() < STATES_PER_INSN && self.stored < STATES_TOTAL {
                        self.stored += 1;
                        *self.live[at].entry(fp).or_insert(0) += 1;
                        self.store[at].push(Stored {
                            state: st.clone(),
                            fp,
                            remaining: 0,
                            done: false,
                        });
                        self.path.push((at, self.store[at].len() - 1, steps, 0));
                    }
                }
                self.processed += 1;
                self.visits[at] += 1;
                if self.processed > self.limit {
                    // Blame the loop: the most visited backward jump (its target is the head).
                    let backward = |i: usize| match self.prog.insns[i].kind() {
                        Kind::Ja | Kind::Jmp(..) => self.prog.insns[i].off < 0,
                        Kind::Gotol => self.prog.insns[i].imm < 0,
                        _ => false,
                    };
                    let hot = (0..self.visits.len())
                        .filter(|&i| backward(i))
                        .max_by_key(|&i| self.visits[i])
                        .or_else(|| (0..self.visits.len()).max_by_key(|&i| self.visits[i]))
                        .unwrap_or(at);
                    let e = self.diag(
                        Rule::LoopBound,
                        hot,
                        &st,
                        &[],
                        format!("no bound proven for this loop: exploration went around it {} times and stopped after {} instructions", self.visits[hot], self.limit),
                    );
                    self.errors.push(*e);
                    return;
                }
                steps += 1;
                match self.step(st, at) {
                    Ok(Step::Next(s, n)) => {
                        st = s;
                        at = n;
                    }
                    Ok(Step::Branch((s1, n1), (s2, n2))) => {
                        let history_len = self.history.len();
                        let pc = self.pcs[at];
                        work.push(Pending {
                            state: s2,
                            at: n2,
                            steps,
                            path_len: self.path.len(),
                            history_len,
                            decision: Some((pc, n2 != at + 1)),
                        });
                        self.history.push((pc, n1 != at + 1));
                        st = s1;
                        at = n1;
                    }
                    Ok(Step::End) => {
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
            .map(|i| self.pcs[i])
            .collect();
        self.facts.reached = self.visits.iter().map(|&v| v > 0).collect();
        self.finish_plain_adds();
    }

    /// Every path explored: a triple becomes `Facts::plain_add` where on every path its
    /// load and store touch only map values, aligned, and none of a per-thread array (a
    /// thread's own slots, like its stack: nothing races there and an atomic only costs).
    /// Pruned paths agree: a pruned state's pointers have the regions of the state that
    /// pruned it and offsets within its offsets, so they touch nothing else and stay
    /// aligned. The maps a triple touched stay shardable only if it became a 64-bit
    /// atomic add.
    fn finish_plain_adds(&mut self) {
        let f = &mut self.facts;
        let mut fused = vec![false; self.triples.len()];
        for (k, t) in self.triples.iter().enumerate() {
            let map_value = |i: usize| f.regions[i] == REGION_MAP_VALUE && f.aligned[i];
            let private = self
                .triple_maps
                .range((k, 0)..=(k, u32::MAX))
                .any(|&(_, m)| self.obj.maps[m as usize].kind() == Some(MapKind::PerThreadArray));
            if !(f.reached[t.load] && map_value(t.load) && map_value(t.store)) || private {
                continue;
            }
            fused[k] = true;
            f.plain_add[t.load] = Some(PlainAdd::Load);
            f.plain_add[t.add] = Some(PlainAdd::Add);
            f.plain_add[t.store] = Some(PlainAdd::Store {
                addend: t.addend,
                map: self.triple_map[k].1,
            });
        }
        for &(k, map) in &self.triple_maps {
            if !(fused[k] && self.triples[k].size == Size::DW) {
                f.map_only_adds[map as usize] = false;
            }
        }
    }

    /// Remembered state `k` of instruction `i` has had every path explored.
    fn mark_done(&mut self, i: usize, k: usize) {
        let s = &mut self.store[i][k];
        s.done = true;
        let fp = s.fp;
        if let Some(c) = self.live[i].get_mut(&fp) {
            *c -= 1;
            if *c == 0 {
                self.live[i].remove(&fp);
            }
        }
        self.done_at[i] += 1;
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

    // Diagnostics travel boxed through `R<T>` (they are large); unboxing here would copy.
    #[allow(clippy::boxed_local)]
    fn report(&mut self, e: Box<Diagnostic>) {
        // One report per instruction and rule: another path reaching the same error adds
        // nothing the user can act on.
        if !self.errors.iter().any(|x| x.pc == e.pc && x.rule == e.rule) {
            self.errors.push(*e);
        }
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

    fn target(&self, i: usize, rel: i64) -> usize {
        let pc = self.pcs[i] as i64 + 1 + rel;
        usize::try_from(pc)
            .ok()
            .and_then(|p| self.idx_of_pc.get(p).copied().flatten())
            .expect("the structural pass checked every jump target")
    }

    fn fresh_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    fn read(&self, st: &State, i: usize, r: u8) -> R<Reg> {
        let v = st.cur().regs[r as usize].clone();
        if v == Reg::Uninit {
            return Err(self.diag(
                Rule::UninitRegister,
                i,
                st,
                &[r],
                format!("r{r} is read before it is written on this path"),
            ));
        }
        Ok(v)
    }

    fn scalar(&self, st: &State, i: usize, r: u8, what: &str) -> R<Scalar> {
        match self.read(st, i, r)? {
            Reg::Scalar(s) => Ok(s),
            other => Err(self.diag(
                Rule::PointerArith,
                i,
                st,
                &[r],
                format!("r{r} is a pointer ({other}); {what} needs a number"),
            )),
        }
    }

    /// Executes instruction `i` on `st`: the successor states, or why it is unsafe.
    fn step(&mut self, st: State, i: usize) -> R<Step> {
        let step = self.step_inner(st, i)?;
        let ins = self.prog.insns[i];
        if let (
            Kind::Alu(..) | Kind::Neg(_) | Kind::Endian(..) | Kind::Movsx(..) | Kind::Ldx(..),
            Step::Next(s, n),
        ) = (ins.kind(), &step)
        {
            let d = ins.dst;
            let c = match s.cur().regs[d as usize] {
                Reg::Scalar(ref x) => x.as_const(),
                _ => None,
            };
            // Only a register that is relevant afterwards: pruning compares those, so
            // no merged path can disagree with the value.
            let relevant = self.relevant.get(*n).is_some_and(|r| r & (1 << d) != 0);
            same_on_every_path(
                &mut self.seen_const[i],
                &mut self.facts.const_value[i],
                c.filter(|_| relevant),
            );
        }
        let fix = |st: &mut State| {
            let f = st.cur_mut();
            let (d, s) = (ins.dst, ins.src);
            match ins.kind() {
                Kind::Alu(AluOp::Mov, Width::W64, Src::X)
                    if matches!(f.regs[d as usize], Reg::Scalar(_)) =>
                {
                    f.link_copy(d, s)
                }
                Kind::Alu(op @ (AluOp::Add | AluOp::Sub), Width::W64, Src::K)
                    if matches!(f.regs[d as usize], Reg::Scalar(_)) =>
                {
                    let k = ins.imm as u64;
                    f.link_add(
                        d,
                        if op == AluOp::Add {
                            k
                        } else {
                            k.wrapping_neg()
                        },
                    )
                }
                Kind::Alu(..)
                | Kind::Neg(_)
                | Kind::Endian(..)
                | Kind::Movsx(..)
                | Kind::LdImm64(_)
                | Kind::Ldx(..) => f.unlink(d),
                Kind::Atomic(_, op, true) => f.unlink(if op == AtomicOp::Cmpxchg { 0 } else { s }),
                Kind::Call(CallKind::Helper) | Kind::Callx | Kind::LdAbs(_) | Kind::LdInd(_) => {
                    (0..=5).for_each(|r| f.unlink(r))
                }
                // A return defines the caller's r0-r5 (done in `exit`); a call starts a
                // frame without links; jumps refine (done in `branch`).
                _ => {}
            }
        };
        Ok(match step {
            Step::Next(mut s, n) => {
                fix(&mut s);
                Step::Next(s, n)
            }
            Step::Branch((mut a, na), (mut b, nb)) => {
                fix(&mut a);
                fix(&mut b);
                Step::Branch((a, na), (b, nb))
            }
            Step::End => Step::End,
        })
    }

    fn step_inner(&mut self, mut st: State, i: usize) -> R<Step> {
        let ins: Insn = self.prog.insns[i];
        let (d, s) = (ins.dst, ins.src);
        let next = i + 1;
        match ins.kind() {
            Kind::Alu(op, w, src) => {
                let rhs = match src {
                    Src::K => Reg::Scalar(Scalar::constant(match w {
                        Width::W64 => ins.imm as u64,
                        Width::W32 => ins.imm as u32 as u64,
                    })),
                    Src::X => self.read(&st, i, s)?,
                };
                let v = if op == AluOp::Mov {
                    match (w, rhs) {
                        (Width::W64, r) => r,
                        (Width::W32, Reg::Scalar(x)) => {
                            Reg::Scalar(Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), &x))
                        }
                        (Width::W32, _) => {
                            return Err(self.diag(
                                Rule::PointerLeak,
                                i,
                                &st,
                                &[s],
                                "a 32-bit move of a pointer truncates it".into(),
                            ))
                        }
                    }
                } else {
                    let lhs = self.read(&st, i, d)?;
                    self.alu(&st, i, op, w, lhs, rhs)?
                };
                if let (AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod, Src::X) = (op, src) {
                    let may_zero = match &st.cur().regs[s as usize] {
                        Reg::Scalar(x) => match w {
                            Width::W64 => x.contains(0),
                            Width::W32 => x.u32min == 0,
                        },
                        _ => true,
                    };
                    self.facts.divisor_may_be_zero[i] |= may_zero;
                }
                st.cur_mut().regs[d as usize] = v;
                Ok(Step::Next(st, next))
            }
            Kind::Neg(w) => {
                let x = self.scalar(&st, i, d, "neg")?;
                st.cur_mut().regs[d as usize] = Reg::Scalar(x.neg(w));
                Ok(Step::Next(st, next))
            }
            Kind::Endian(o, bits) => {
                let x = self.scalar(&st, i, d, "a byte swap")?;
                st.cur_mut().regs[d as usize] = Reg::Scalar(x.endian(o, bits));
                Ok(Step::Next(st, next))
            }
            Kind::Movsx(w, bits) => {
                let x = self.scalar(&st, i, s, "a sign-extending move")?;
                st.cur_mut().regs[d as usize] = Reg::Scalar(x.movsx(w, bits));
                Ok(Step::Next(st, next))
            }
            Kind::LdImm64(p) => {
                let v = match p {
                    Pseudo::Imm64 => Reg::constant(ins.imm as u64),
                    Pseudo::MapIdx | Pseudo::MapIdxValue => {
                        let map = ins.imm as u32;
                        if (map as usize) >= self.obj.maps.len() {
                            return Err(self.diag(
                                Rule::HelperArg,
                                i,
                                &st,
                                &[],
                                format!("map index {map} does not exist"),
                            ));
                        }
                        let m = &self.obj.maps[map as usize];
                        if p == Pseudo::MapIdx {
                            Reg::Map(map)
                        } else if m.origin != MapOrigin::GlobalData
                            && !m.is(MapKind::has_direct_value)
                        {
                            return Err(self.diag(
                                Rule::HelperArg,
                                i,
                                &st,
                                &[],
                                format!(
                                    "map {} has no single value to point at: a value address (map_idx_value) needs global data or an array",
                                    m.name
                                ),
                            ));
                        } else {
                            Reg::Ptr(
                                Region::MapValue { map },
                                Scalar::constant(u64::from((ins.imm as u64 >> 32) as u32)),
                            )
                        }
                    }
                    _ => return Err(self.diag(
                        Rule::Unsupported,
                        i,
                        &st,
                        &[],
                        "this ld_imm64 form (map fd, BTF id or function address) is not supported"
                            .into(),
                    )),
                };
                st.cur_mut().regs[d as usize] = v;
                Ok(Step::Next(st, next))
            }
            Kind::Ja => Ok(Step::Next(st, self.target(i, ins.off.into()))),
            Kind::Gotol => Ok(Step::Next(st, self.target(i, ins.imm))),
            Kind::Jmp(c, w, src) => self.branch(st, i, c, w, src),
            Kind::Exit => self.exit(st, i),
            Kind::Call(CallKind::Helper) => self.helper(st, i, ins.imm),
            Kind::Callx => {
                // bpf_conformance's callx calls the helper whose id is in the register; only
                // a register with a known constant can be checked.
                match self.read(&st, i, d)? {
                    Reg::Scalar(x) if x.as_const().is_some() => {
                        let id = x.as_const().expect("checked") as i64;
                        self.helper(st, i, id)
                    }
                    _ => Err(self.diag(
                        Rule::HelperArg,
                        i,
                        &st,
                        &[d],
                        "callx needs a register holding a known helper id".into(),
                    )),
                }
            }
            Kind::Call(CallKind::Local) => {
                if st.frames.len() >= MAX_CALL_DEPTH {
                    return Err(self.diag(
                        Rule::CallDepth,
                        i,
                        &st,
                        &[],
                        format!("call depth exceeds {MAX_CALL_DEPTH} frames"),
                    ));
                }
                let t = self.target(i, ins.imm);
                let func = self
                    .prog
                    .funcs
                    .iter()
                    .position(|f| f.start == t)
                    .expect("structural pass checked call targets");
                let mut f = Frame::new(st.frames.len() as u8, func, next);
                for r in 1..=5 {
                    f.regs[r] = st.cur().regs[r].clone();
                }
                st.frames.push(f);
                let chain: Vec<usize> = st.frames.iter().map(|f| f.func).collect();
                self.chains.entry(chain).or_insert(i);
                Ok(Step::Next(st, t))
            }
            Kind::Call(CallKind::Kfunc) => Err(self.diag(
                Rule::Unsupported,
                i,
                &st,
                &[],
                "kernel functions (kfuncs) do not exist on the GPU".into(),
            )),
            Kind::LdAbs(_) | Kind::LdInd(_) => Err(self.diag(
                Rule::Unsupported,
                i,
                &st,
                &[],
                "legacy packet access (ld_abs/ld_ind) has no GPU meaning".into(),
            )),
            Kind::Ldx(size, signed) => {
                let v = self.load(&mut st, i, s, ins.off, size, signed)?;
                st.cur_mut().regs[d as usize] = v;
                Ok(Step::Next(st, next))
            }
            Kind::St(size) => {
                let v = Reg::constant(ins.imm as u64);
                self.store(&mut st, i, d, ins.off, size, v, None)?;
                Ok(Step::Next(st, next))
            }
            Kind::Stx(size) => {
                let v = self.read(&st, i, s)?;
                self.store(&mut st, i, d, ins.off, size, v, Some(s))?;
                Ok(Step::Next(st, next))
            }
            Kind::Atomic(size, op, fetch) => {
                let base = self.read(&st, i, d)?;
                if !matches!(
                    base,
                    Reg::Ptr(
                        Region::Stack { .. } | Region::MapValue { .. } | Region::Mem,
                        _
                    )
                ) {
                    return Err(self.diag(
                        Rule::AtomicRegion,
                        i,
                        &st,
                        &[d],
                        "atomics are allowed only on the stack and map values".into(),
                    ));
                }
                self.scalar(&st, i, s, "an atomic operand")?;
                if op == AtomicOp::Cmpxchg {
                    self.scalar(&st, i, 0, "cmpxchg's comparand (r0)")?;
                }
                if let Reg::Ptr(Region::MapValue { map }, _) = base {
                    if self.obj.maps[map as usize].flags & RDONLY_PROG != 0 {
                        return Err(self.diag(
                            Rule::RodataWrite,
                            i,
                            &st,
                            &[d],
                            format!(
                                "atomic on read-only map {}",
                                self.obj.maps[map as usize].name
                            ),
                        ));
                    }
                }
                if op == AtomicOp::Add && !fetch {
                    let c = match st.cur().regs[s as usize] {
                        Reg::Scalar(x) => x.as_const(),
                        _ => None,
                    };
                    let map = match base {
                        Reg::Ptr(Region::MapValue { map }, _) => Some(map),
                        _ => None,
                    };
                    // Both facts of this instruction hold on every path or not at all.
                    let mut seen = self.seen[i];
                    same_on_every_path(&mut seen, &mut self.facts.atomic_add_const[i], c);
                    same_on_every_path(&mut self.seen[i], &mut self.facts.atomic_map[i], map);
                }
                // Read then write: both must be in bounds and (stack) initialised. A 64-bit
                // add that does not fetch keeps a map shardable.
                self.adding = op == AtomicOp::Add && !fetch && size == Size::DW;
                let old = self.load(&mut st, i, d, ins.off, size, false);
                let old = match old {
                    Ok(v) => v,
                    Err(e) => {
                        self.adding = false;
                        return Err(e);
                    }
                };
                if old.is_pointer() {
                    return Err(self.diag(
                        Rule::StackPointer,
                        i,
                        &st,
                        &[d],
                        format!(
                            "an atomic on a spilled pointer ({old}) would turn it into a number"
                        ),
                    ));
                }
                let stored = self.store(
                    &mut st,
                    i,
                    d,
                    ins.off,
                    size,
                    Reg::Scalar(Scalar::unknown()),
                    None,
                );
                self.adding = false;
                stored?;
                if fetch {
                    let reg = if op == AtomicOp::Cmpxchg { 0 } else { s };
                    let v = match (old, width_of(size)) {
                        (Reg::Scalar(x), Width::W32) => {
                            Reg::Scalar(Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), &x))
                        }
                        (Reg::Scalar(x), _) => Reg::Scalar(x),
                        _ => Reg::Scalar(Scalar::unknown()),
                    };
                    st.cur_mut().regs[reg as usize] = v;
                } else {
                    self.facts.atomic_no_fetch[i] = true;
                }
                Ok(Step::Next(st, next))
            }
        }
    }

    /// ALU operations involving pointers follow the rules for pointer arithmetic; plain
    /// numbers use the scalar domain.
    fn alu(&self, st: &State, i: usize, op: AluOp, w: Width, lhs: Reg, rhs: Reg) -> R<Reg> {
        let d = self.prog.insns[i].dst;
        let s = self.prog.insns[i].src;
        match (lhs, rhs) {
            (Reg::Scalar(a), Reg::Scalar(b)) => Ok(Reg::Scalar(Scalar::alu(op, w, &a, &b))),
            (Reg::Ptr(r, off), Reg::Scalar(b))
                if w == Width::W64 && matches!(op, AluOp::Add | AluOp::Sub) =>
            {
                self.ptr_arith(st, i, r, Scalar::alu(op, Width::W64, &off, &b))
            }
            (Reg::Scalar(a), Reg::Ptr(r, off)) if w == Width::W64 && op == AluOp::Add => {
                self.ptr_arith(st, i, r, Scalar::alu(op, Width::W64, &off, &a))
            }
            (Reg::Ptr(r1, _), Reg::Ptr(r2, _))
                if w == Width::W64 && op == AluOp::Sub && r1 == r2 =>
            {
                Ok(Reg::Scalar(Scalar::unknown()))
            }
            (l @ (Reg::MapValueOrNull { .. } | Reg::RecordOrNull { .. }), _) => Err(self.diag(
                Rule::NullDeref,
                i,
                st,
                &[d],
                format!("arithmetic on {l}: check it against NULL first"),
            )),
            (l, r) => {
                let which = if l.is_pointer() { d } else { s };
                let p = if l.is_pointer() { l } else { r };
                let _ = which;
                Err(self.diag(Rule::PointerArith, i, st, &[d, s], format!("{op:?} ({w:?}) on a pointer ({p}) is not allowed: only 64-bit add/sub of a number")))
            }
        }
    }

    fn ptr_arith(&self, _st: &State, _i: usize, r: Region, off: Scalar) -> R<Reg> {
        // A context pointer moved by a variable amount is rejected where it is used (an
        // access or a helper argument), so that the check reads only relevant values.
        Ok(Reg::Ptr(r, off))
    }

    /// The size of a region, and whether its offsets count down from 0 (the stack).
    fn region_bounds(&self, r: Region) -> (i64, i64) {
        match r {
            Region::Stack { .. } => (-MAX_STACK, 0),
            Region::Ctx => (0, i64::from(self.entry.ctx_size())),
            Region::Mem => (0, i64::from(self.entry.ctx_size())),
            Region::MapValue { map } => (0, i64::from(self.obj.maps[map as usize].value_size)),
            Region::Record { size, .. } => (0, i64::from(size)),
        }
    }

    /// Checks that `[off + extra, off + extra + size)` lies in the region; returns the
    /// access's lowest and highest start offsets.
    #[allow(clippy::too_many_arguments)]
    fn bounds(
        &self,
        st: &State,
        i: usize,
        reg: u8,
        r: Region,
        off: &Scalar,
        extra: i64,
        size: i64,
    ) -> R<(i64, i64)> {
        if r == Region::Ctx && off.as_const().is_none() {
            return Err(self.diag(
                Rule::CtxAccess,
                i,
                st,
                &[reg],
                "the context pointer may only move by constants: this one moved by a variable amount".into(),
            ));
        }
        let (lo, hi) = self.region_bounds(r);
        let (smin, smax) = (off.smin, off.smax);
        let first = smin.checked_add(extra);
        let last = smax.checked_add(extra).and_then(|x| x.checked_add(size));
        match (first, last) {
            (Some(f), Some(l)) if f >= lo && l <= hi => Ok((f, l - size)),
            _ => {
                let what = match r {
                    Region::Stack { .. } => "the stack (r10-512..r10)".to_string(),
                    Region::MapValue { map } => format!(
                        "the value of map {} ({} bytes)",
                        self.obj.maps[map as usize].name, hi
                    ),
                    Region::Ctx => format!("the context ({hi} bytes)"),
                    Region::Mem => format!("the input memory ({hi} bytes)"),
                    Region::Record { size, .. } => format!("the ringbuf record ({size} bytes)"),
                };
                let range = if smin == smax {
                    format!("offset {}", smin.saturating_add(extra))
                } else {
                    format!(
                        "offsets {}..{}",
                        smin.saturating_add(extra),
                        smax.saturating_add(extra)
                    )
                };
                Err(self.diag(
                    Rule::MemBounds,
                    i,
                    st,
                    &[reg],
                    format!("access of {size} bytes at {range} is outside {what}"),
                ))
            }
        }
    }

    fn pointer_of(&self, st: &State, i: usize, reg: u8) -> R<(Region, Scalar)> {
        match self.read(st, i, reg)? {
            Reg::Ptr(r, off) => Ok((r, off)),
            v @ (Reg::MapValueOrNull { .. } | Reg::RecordOrNull { .. }) => Err(self.diag(
                Rule::NullDeref,
                i,
                st,
                &[reg],
                format!("r{reg} ({v}) may be NULL: compare it with 0 first"),
            )),
            v => Err(self.diag(
                Rule::MemScalar,
                i,
                st,
                &[reg],
                format!("r{reg} is not a pointer ({v})"),
            )),
        }
    }

    /// Records whether this visit's access at `off + extra` is naturally aligned: the
    /// pointer's offset must be known to be a multiple of the size in its low bits.
    fn note_alignment(&mut self, i: usize, off: &Scalar, extra: i64, size: u32) {
        let m = u64::from(size) - 1;
        let ok = off.bits.mask & m == 0 && (off.bits.value.wrapping_add(extra as u64)) & m == 0;
        self.facts.aligned[i] &= ok;
    }

    fn note_region(&mut self, i: usize, r: Region) {
        let map = match r {
            Region::MapValue { map } => Some(map),
            _ => None,
        };
        match (map, self.triple_of[i]) {
            // Decided once every path is explored (`finish_plain_adds`).
            (Some(m), Some(k)) => {
                self.triple_maps.insert((k, m));
            }
            (Some(m), None) if !self.adding => self.facts.map_only_adds[m as usize] = false,
            _ => {}
        }
        if let Some(k) = self.triple_of[i].filter(|&k| self.triples[k].load == i) {
            let (seen, fact) = &mut self.triple_map[k];
            same_on_every_path(seen, fact, map);
        }
        let bit = match r {
            Region::Stack { .. } => 1,
            Region::Ctx => 2,
            Region::Mem => 4,
            Region::MapValue { .. } => REGION_MAP_VALUE,
            Region::Record { .. } => 16,
        };
        self.facts.regions[i] |= bit;
    }

    /// The u32 that register `reg` points to on the stack, when it is a 4-byte spill
    /// (how clang passes an array key).
    fn stack_u32(&self, st: &State, reg: u8) -> Option<Scalar> {
        let Reg::Ptr(r @ Region::Stack { .. }, ref o) = st.cur().regs[reg as usize] else {
            return None;
        };
        let first = o.as_const()? as i64;
        if first >= 0 {
            return None;
        }
        let slot = usize::try_from(-(first + 1) / 8).ok()?;
        let at = first + 8 * (slot as i64 + 1);
        match st.frames[self.stack_frame(st, r)].slot(slot) {
            Slot::Narrow {
                at: a,
                size: 4,
                value,
                ..
            } if i64::from(*a) == at => Some(narrow_fill(value, 4, false)),
            Slot::Spill(Reg::Scalar(x)) if at == 0 => {
                Some(Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), x))
            }
            _ => None,
        }
    }

    fn stack_frame(&self, st: &State, r: Region) -> usize {
        match r {
            Region::Stack { frame } => frame as usize,
            _ => st.frames.len() - 1,
        }
    }

    fn load(
        &mut self,
        st: &mut State,
        i: usize,
        base: u8,
        off: i16,
        size: Size,
        signed: bool,
    ) -> R<Reg> {
        let (r, o) = self.pointer_of(st, i, base)?;
        let n = i64::from(size.bytes());
        let (first, last) = self.bounds(st, i, base, r, &o, off.into(), n)?;
        self.note_region(i, r);
        self.note_alignment(i, &o, off.into(), size.bytes());
        let at = (r == Region::Ctx && first == last).then_some(first);
        same_on_every_path(&mut self.seen[i], &mut self.facts.ctx_offset[i], at);
        match r {
            Region::Stack { .. } => {
                let f = self.stack_frame(st, r);
                let func = st.frames[f].func;
                self.depth[func] = self.depth[func].max(-first);
                // Every byte that may be read must be initialised; a whole aligned spill
                // comes back exactly.
                if first == last && first % 8 == 0 && n == 8 {
                    let slot = (-first / 8 - 1) as usize;
                    match st.frames[f].slot(slot) {
                        Slot::Spill(v) => return Ok(v.clone()),
                        Slot::Bytes(0xff) | Slot::Narrow { mask: 0xff, .. } => {
                            return Ok(Reg::Scalar(Scalar::loaded(8, false)))
                        }
                        _ => {}
                    }
                }
                // A narrow spill filled back by a load of its size at its place.
                if first == last && n < 8 {
                    let slot = (-(first + 1) / 8) as usize;
                    let at = (first + 8 * (slot as i64 + 1)) as u8;
                    if let Slot::Narrow {
                        at: a,
                        size: sz,
                        value,
                        ..
                    } = st.frames[f].slot(slot)
                    {
                        if *a == at && i64::from(*sz) == n {
                            return Ok(Reg::Scalar(narrow_fill(value, n as u8, signed)));
                        }
                    }
                }
                for b in first..last + n {
                    let slot = (-(b + 1) / 8) as usize;
                    let byte = (-(b + 1) % 8) as u8;
                    let ok = match st.frames[f].slot(slot).init_mask() {
                        None => {
                            return Err(self.diag(
                                Rule::StackPointer,
                                i,
                                st,
                                &[base],
                                format!("partial read of a spilled pointer at fp{b}"),
                            ));
                        }
                        Some(m) => m & (1 << (7 - byte)) != 0,
                    };
                    if !ok {
                        return Err(self.diag(
                            Rule::StackUninit,
                            i,
                            st,
                            &[base],
                            format!("reads uninitialised stack at fp{b}"),
                        ));
                    }
                }
                Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed)))
            }
            Region::Ctx if first == last => match self.entry.known.value(first, size.bytes()) {
                Some(v) => {
                    let bits = 8 * size.bytes();
                    let v = if signed && bits < 64 {
                        ((v << (64 - bits)) as i64 >> (64 - bits)) as u64
                    } else {
                        v
                    };
                    Ok(Reg::Scalar(Scalar::constant(v)))
                }
                None => Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed))),
            },
            Region::Ctx | Region::Mem | Region::MapValue { .. } | Region::Record { .. } => {
                Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed)))
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn store(
        &mut self,
        st: &mut State,
        i: usize,
        base: u8,
        off: i16,
        size: Size,
        v: Reg,
        src: Option<u8>,
    ) -> R<()> {
        let (r, o) = self.pointer_of(st, i, base)?;
        let n = i64::from(size.bytes());
        let (first, last) = self.bounds(st, i, base, r, &o, off.into(), n)?;
        self.note_region(i, r);
        self.note_alignment(i, &o, off.into(), size.bytes());
        if v.is_pointer() && !matches!(r, Region::Stack { .. }) {
            return Err(self.diag(
                Rule::PointerLeak,
                i,
                st,
                &[base, src.unwrap_or(base)],
                "storing a pointer outside the stack would leak it".into(),
            ));
        }
        match r {
            Region::Ctx if !self.entry.ctx_writable() => Err(self.diag(
                Rule::CtxAccess,
                i,
                st,
                &[base],
                "the context is read-only".into(),
            )),
            Region::MapValue { map } if self.obj.maps[map as usize].flags & RDONLY_PROG != 0 => {
                Err(self.diag(
                    Rule::RodataWrite,
                    i,
                    st,
                    &[base],
                    format!(
                        "write into read-only map {}",
                        self.obj.maps[map as usize].name
                    ),
                ))
            }
            Region::Stack { .. } => {
                let f = self.stack_frame(st, r);
                if let Reg::Ptr(Region::Stack { frame }, _) = v {
                    if (frame as usize) > f {
                        return Err(self.diag(
                            Rule::PointerLeak,
                            i,
                            st,
                            &[base, src.unwrap_or(base)],
                            format!("storing a pointer into frame {frame}'s stack in the stack of frame {f}, a caller, would outlive the callee's frame"),
                        ));
                    }
                }
                let func = st.frames[f].func;
                self.depth[func] = self.depth[func].max(-first);
                if first == last && first % 8 == 0 && n == 8 {
                    let slot = (-first / 8 - 1) as usize;
                    *st.frames[f].slot_mut(slot) = Slot::Spill(v);
                    return Ok(());
                }
                if v.is_pointer() {
                    return Err(self.diag(
                        Rule::StackPointer,
                        i,
                        st,
                        &[base],
                        "a pointer may only be spilled by an aligned 8-byte store".into(),
                    ));
                }
                // A constant-offset store initialises its bytes; a variable one only the
                // bytes every possible offset covers ([last, first + n)). Spilled values
                // it may touch become plain initialised bytes.
                for b in first..last + n {
                    let slot = (-(b + 1) / 8) as usize;
                    let bit = 1u8 << (7 - (-(b + 1) % 8) as u8);
                    let cur = st.frames[f].slot_mut(slot);
                    let mask = spill_bytes(cur);
                    let certain = b >= last && b < first + n;
                    *cur = Slot::Bytes(if certain { mask | bit } else { mask });
                }
                // A number stored narrowly at a constant, naturally aligned offset is kept
                // (with its bounds) for a fill of the same size.
                if let (true, Reg::Scalar(value)) = (first == last && first % n == 0, &v) {
                    let slot = (-(first + 1) / 8) as usize;
                    let at = (first + 8 * (slot as i64 + 1)) as u8;
                    let cur = st.frames[f].slot_mut(slot);
                    *cur = Slot::Narrow {
                        mask: spill_bytes(cur),
                        at,
                        size: n as u8,
                        value: *value,
                    };
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A conditional jump: the successors it may have, each with the state refined by the
    /// condition; records which ways it went for [`Facts::branch_always`].
    fn branch(&mut self, st: State, i: usize, c: Cond, w: Width, src: Src) -> R<Step> {
        let step = self.branch_succs(st, i, c, w, src)?;
        let went = &mut self.went[i];
        match &step {
            Step::Branch(..) => *went = (true, true),
            Step::Next(_, n) if *n == i + 1 => went.1 = true,
            Step::Next(..) => went.0 = true,
            Step::End => {}
        }
        Ok(step)
    }

    fn branch_succs(&mut self, st: State, i: usize, c: Cond, w: Width, src: Src) -> R<Step> {
        let ins = self.prog.insns[i];
        let (d, s) = (ins.dst, ins.src);
        let t = self.target(i, ins.off.into());
        let a = self.read(&st, i, d)?;
        let b = match src {
            Src::K => Reg::constant(match w {
                Width::W64 => ins.imm as u64,
                Width::W32 => ins.imm as u32 as u64,
            }),
            Src::X => self.read(&st, i, s)?,
        };
        // A nullable pointer compared with 0 is the null check.
        let null_check = |x: &Reg, y: &Reg| {
            matches!(x, Reg::MapValueOrNull { .. } | Reg::RecordOrNull { .. })
                && matches!(y, Reg::Scalar(k) if k.as_const() == Some(0))
        };
        if w == Width::W64 && matches!(c, Cond::Eq | Cond::Ne) && null_check(&a, &b) {
            let (null, nonnull) = (
                self.with_null(&st, &a, true),
                self.with_null(&st, &a, false),
            );
            let (on_taken, on_fall) = if c == Cond::Eq {
                (null, nonnull)
            } else {
                (nonnull, null)
            };
            return Ok(Step::Branch((on_fall, i + 1), (on_taken, t)));
        }
        match (&a, &b) {
            (Reg::Scalar(x), Reg::Scalar(y)) => {
                let taken = Scalar::refine(c, w, x, y, true);
                let fall = Scalar::refine(c, w, x, y, false);
                let apply = |mut st: State, (x2, y2): (Scalar, Scalar)| {
                    st.cur_mut().regs[d as usize] = Reg::Scalar(x2);
                    narrow_linked(st.cur_mut(), d, &x2);
                    if src == Src::X {
                        st.cur_mut().regs[s as usize] = Reg::Scalar(y2);
                        narrow_linked(st.cur_mut(), s, &y2);
                    }
                    st
                };
                match (taken, fall) {
                    (Some(tk), Some(fl)) => Ok(Step::Branch(
                        (apply(st.clone(), fl), i + 1),
                        (apply(st, tk), t),
                    )),
                    (Some(tk), None) => Ok(Step::Next(apply(st, tk), t)),
                    (None, Some(fl)) => Ok(Step::Next(apply(st, fl), i + 1)),
                    (None, None) => Ok(Step::End),
                }
            }
            // Pointers compare with pointers, and with NULL (a pointer already known valid
            // too: both ways are explored, neither refined).
            _ if a.is_pointer() && b.is_pointer()
                || null_check(&b, &a)
                || (w == Width::W64
                    && matches!(c, Cond::Eq | Cond::Ne)
                    && (is_zero(&a) || is_zero(&b))) =>
            {
                Ok(Step::Branch((st.clone(), i + 1), (st, t)))
            }
            _ => Err(self.diag(
                Rule::PointerArith,
                i,
                &st,
                &[d, s],
                "comparing a pointer with a number leaks the pointer's value".into(),
            )),
        }
    }

    /// The state after a null check of `v` decided it: every copy of the same lookup
    /// (registers and spills, in all frames) becomes NULL or a valid pointer.
    fn with_null(&self, st: &State, v: &Reg, is_null: bool) -> State {
        let (id, valid) = match *v {
            Reg::MapValueOrNull { map, id } => {
                (id, Reg::Ptr(Region::MapValue { map }, Scalar::constant(0)))
            }
            Reg::RecordOrNull { size, id } => (
                id,
                Reg::Ptr(Region::Record { size, id }, Scalar::constant(0)),
            ),
            _ => unreachable!("only nullable pointers"),
        };
        let mut st = st.clone();
        let fix = |r: &mut Reg| {
            let same = matches!(r, Reg::MapValueOrNull { id: x, .. } | Reg::RecordOrNull { id: x, .. } if *x == id);
            if same {
                *r = if is_null {
                    Reg::constant(0)
                } else {
                    valid.clone()
                };
            }
        };
        for f in &mut st.frames {
            f.regs.iter_mut().for_each(fix);
            for slot in &mut f.stack {
                if let Slot::Spill(r) = slot {
                    fix(r);
                }
            }
        }
        if is_null {
            // A failed reserve holds nothing to release.
            st.refs.retain(|(x, _)| *x != id);
        }
        st
    }

    fn exit(&mut self, mut st: State, i: usize) -> R<Step> {
        // A subprogram may return with r0 unset (clang leaves it so when the result is
        // unused); the caller's r0 is then uninitialised. The program's own exit needs r0.
        let r0 = if st.frames.len() == 1 {
            self.read(&st, i, 0)?
        } else {
            st.cur().regs[0].clone()
        };
        if st.frames.len() == 1 {
            if r0.is_pointer() {
                return Err(self.diag(
                    Rule::PointerLeak,
                    i,
                    &st,
                    &[0],
                    "the program returns a pointer".into(),
                ));
            }
            if let Some(&(_, at)) = st.refs.first() {
                return Err(self.diag(Rule::RingbufLeak, i, &st, &[], format!("the ringbuf record reserved at insn {at} is neither submitted nor discarded on this path")));
            }
            return Ok(Step::End);
        }
        if matches!(r0, Reg::Ptr(Region::Stack { frame }, _) if frame as usize == st.frames.len() - 1)
        {
            return Err(self.diag(
                Rule::PointerLeak,
                i,
                &st,
                &[0],
                "a function returns a pointer into its own stack".into(),
            ));
        }
        let callee = st.frames.pop().expect("more than one frame");
        // Nothing the callers keep may point into the frame that ends here (stores of such
        // pointers are rejected where they happen; this keeps the invariant explicit).
        let k = st.frames.len();
        let dangling =
            |r: &Reg| matches!(r, Reg::Ptr(Region::Stack { frame }, _) if *frame as usize >= k);
        if st.frames.iter().any(|f| {
            f.regs.iter().any(dangling)
                || f.stack
                    .iter()
                    .any(|s| matches!(s, Slot::Spill(r) if dangling(r)))
        }) {
            st.frames.push(callee);
            return Err(self.diag(
                Rule::PointerLeak,
                i,
                &st,
                &[],
                "a caller keeps a pointer into the stack of the function that returns here".into(),
            ));
        }
        let cur = st.cur_mut();
        cur.regs[0] = r0;
        for r in 1..=5 {
            cur.regs[r] = Reg::Uninit;
        }
        (0..=5).for_each(|r| cur.unlink(r));
        Ok(Step::Next(st, callee.ret_to))
    }

    fn helper(&mut self, mut st: State, i: usize, id: i64) -> R<Step> {
        let Some(h) = bpf2ptx_runtime::helper(id) else {
            return Err(self.diag(
                Rule::HelperUnknown,
                i,
                &st,
                &[],
                format!("helper {id} is not in the device runtime"),
            ));
        };
        let mut map_arg: Option<u32> = None;
        let mut record: Option<(u32, u32)> = None;
        for (k, arg) in h.args.iter().enumerate() {
            let r = (k + 1) as u8;
            // An argument the helper may not use can be unset (clang's `bpf_printk` passes
            // only as many as its format names).
            if *arg == Arg::Optional {
                continue;
            }
            let v = self.read(&st, i, r)?;
            let bad = |me: &Self, what: &str| {
                me.diag(
                    Rule::HelperArg,
                    i,
                    &st,
                    &[r],
                    format!(
                        "{}: argument {} (r{r}) must be {what}, is {v}",
                        h.name,
                        k + 1
                    ),
                )
            };
            match *arg {
                Arg::Optional => {}
                Arg::Anything => {}
                Arg::Map => match v {
                    Reg::Map(m) => {
                        same_on_every_path(&mut self.seen[i], &mut self.facts.call_map[i], Some(m));
                        // Anything but a lookup reads or changes values whole.
                        if id != 1 {
                            self.facts.map_only_adds[m as usize] = false;
                        }
                        let map = &self.obj.maps[m as usize];
                        if let Some(want) = map_kinds(id) {
                            if !map.is(want) {
                                let name = bpf2ptx_compiler::program::map_type_name(map.map_type)
                                    .unwrap_or("unknown");
                                return Err(bad(
                                    self,
                                    &format!(
                                        "a map of a type this helper takes (not {name}({}))",
                                        map.map_type
                                    ),
                                ));
                            }
                        }
                        if matches!(id, 2 | 3) && map.flags & RDONLY_PROG != 0 {
                            return Err(self.diag(
                                Rule::RodataWrite,
                                i,
                                &st,
                                &[r],
                                format!("{} would change read-only map {}", h.name, map.name),
                            ));
                        }
                        map_arg = Some(m)
                    }
                    _ => return Err(bad(self, "a map")),
                },
                Arg::MapKey | Arg::MapValue => {
                    let m = map_arg.ok_or_else(|| bad(self, "preceded by a map"))?;
                    let map = &self.obj.maps[m as usize];
                    if *arg == Arg::MapKey && id == 1 {
                        // An array index below max_entries on every path: the lookup
                        // cannot miss (`Facts::lookup_in_range`).
                        let hit = map.is(MapKind::is_array_like)
                            && self
                                .stack_u32(&st, r)
                                .is_some_and(|k| k.umax < u64::from(map.max_entries));
                        same_on_every_path(
                            &mut self.seen_const[i],
                            &mut self.facts.lookup_in_range[i],
                            Some(hit),
                        );
                    }
                    let map = &self.obj.maps[m as usize];
                    let n = if *arg == Arg::MapKey {
                        map.key_size
                    } else {
                        map.value_size
                    };
                    self.helper_mem(&mut st, i, r, n.into(), n.into(), Access::Read, h.name)?;
                }
                Arg::Mem { size_arg, access } => {
                    let sr = size_arg + 1;
                    let size = match self.read(&st, i, sr)? {
                        Reg::Scalar(x) => x,
                        _ => {
                            return Err(self.diag(
                                Rule::HelperArg,
                                i,
                                &st,
                                &[sr],
                                format!("{}: the size (r{sr}) must be a number", h.name),
                            ))
                        }
                    };
                    same_on_every_path(
                        &mut self.seen_const[i],
                        &mut self.facts.call_size[i],
                        (size.umin == size.umax).then_some(size.umin),
                    );
                    if size.umax > MAX_STACK as u64 * 128 {
                        return Err(self.diag(
                            Rule::HelperArg,
                            i,
                            &st,
                            &[sr],
                            format!("{}: the size (r{sr}) has no upper bound", h.name),
                        ));
                    }
                    self.helper_mem(
                        &mut st,
                        i,
                        r,
                        size.umin as i64,
                        size.umax as i64,
                        access,
                        h.name,
                    )?;
                }
                Arg::Size { zero_ok } => {
                    if let Reg::Scalar(x) = &v {
                        if !zero_ok && x.umin == 0 {
                            return Err(bad(self, "a size that cannot be 0"));
                        }
                    } else {
                        return Err(bad(self, "a size"));
                    }
                }
                Arg::FixedMem { size, access } => {
                    self.helper_mem(&mut st, i, r, size.into(), size.into(), access, h.name)?
                }
                Arg::Ctx => {
                    if !matches!(v, Reg::Ptr(Region::Ctx, ref o) if o.as_const() == Some(0)) {
                        return Err(bad(self, "the context pointer"));
                    }
                }
                Arg::RingbufRecord => match v {
                    Reg::Ptr(Region::Record { id, .. }, ref o) if o.as_const() == Some(0) => {
                        record = Some((id, 0))
                    }
                    _ => {
                        return Err(bad(
                            self,
                            "a reserved ringbuf record (checked against NULL)",
                        ))
                    }
                },
                Arg::ConstStr => self.const_str(&st, i, r, &v, h.name)?,
            }
        }
        if let Some((id, _)) = record {
            // Releasing the record invalidates every copy of the pointer.
            st.refs.retain(|(x, _)| *x != id);
            let released =
                |r: &Reg| matches!(r, Reg::Ptr(Region::Record { id: x, .. }, _) if *x == id);
            for f in &mut st.frames {
                for reg in f.regs.iter_mut() {
                    if released(reg) {
                        *reg = Reg::Uninit;
                    }
                }
                // Spilled copies too: a fill after the release would otherwise bring
                // back a pointer into a record the host may already be reading.
                for slot in f.stack.iter_mut() {
                    if matches!(slot, Slot::Spill(r) if released(r)) {
                        *slot = Slot::Bytes(0);
                    }
                }
            }
        }
        let r0 = match h.ret {
            Ret::Integer => Reg::Scalar(Scalar::unknown()),
            Ret::Void => Reg::Uninit,
            Ret::MapValueOrNull => Reg::MapValueOrNull {
                map: map_arg.expect("lookup takes a map"),
                id: self.fresh_id(),
            },
            Ret::RingbufRecordOrNull => {
                let size = match &st.cur().regs[2] {
                    Reg::Scalar(x) if x.as_const().is_some_and(|c| c <= u64::from(u32::MAX)) => {
                        x.as_const().expect("const") as u32
                    }
                    _ => {
                        return Err(self.diag(
                            Rule::HelperArg,
                            i,
                            &st,
                            &[2],
                            format!("{}: the size must be a known constant below 2^32", h.name),
                        ))
                    }
                };
                let id = self.fresh_id();
                st.refs.push((id, self.pcs[i]));
                Reg::RecordOrNull { size, id }
            }
            Ret::NoReturn => {
                if let Some(&(_, at)) = st.refs.first() {
                    return Err(self.diag(Rule::RingbufLeak, i, &st, &[], format!("the ringbuf record reserved at insn {at} is neither submitted nor discarded on this path")));
                }
                return Ok(Step::End);
            }
        };
        let cur = st.cur_mut();
        cur.regs[0] = r0;
        for r in 1..=5 {
            cur.regs[r] = Reg::Uninit;
        }
        Ok(Step::Next(st, i + 1))
    }

    /// A helper's access to between `n_min` and `n` bytes at the pointer in `reg`: every
    /// byte it may touch must be in bounds (and, read, initialised); written, only the
    /// bytes it writes for every offset and size become initialised.
    #[allow(clippy::too_many_arguments)]
    fn helper_mem(
        &mut self,
        st: &mut State,
        i: usize,
        reg: u8,
        n_min: i64,
        n: i64,
        access: Access,
        name: &str,
    ) -> R<()> {
        let (r, o) = self.pointer_of(st, i, reg)?;
        if let Region::MapValue { map } = r {
            // A helper reads or writes the value as bytes: no sharding.
            self.facts.map_only_adds[map as usize] = false;
        }
        if n == 0 {
            return Ok(());
        }
        let (first, last) = self.bounds(st, i, reg, r, &o, 0, n)?;
        match r {
            Region::Stack { .. } => {
                let f = self.stack_frame(st, r);
                let func = st.frames[f].func;
                self.depth[func] = self.depth[func].max(-first);
                for b in first..last + n {
                    let slot = (-(b + 1) / 8) as usize;
                    let bit = 1u8 << (7 - (-(b + 1) % 8) as u8);
                    let cur = st.frames[f].slot_mut(slot);
                    match access {
                        Access::Read => {
                            let ok = cur.init_mask().is_some_and(|m| m & bit != 0);
                            if !ok {
                                return Err(self.diag(
                                    Rule::StackUninit,
                                    i,
                                    st,
                                    &[reg],
                                    format!(
                                        "{name} reads uninitialised (or pointer) stack at fp{b}"
                                    ),
                                ));
                            }
                        }
                        Access::Write => {
                            let m = spill_bytes(cur);
                            let certain = b >= last && b < first + n_min;
                            *cur = Slot::Bytes(if certain { m | bit } else { m });
                        }
                    }
                }
                Ok(())
            }
            Region::MapValue { map }
                if access == Access::Write
                    && self.obj.maps[map as usize].flags & RDONLY_PROG != 0 =>
            {
                Err(self.diag(
                    Rule::RodataWrite,
                    i,
                    st,
                    &[reg],
                    format!(
                        "{name} would write into read-only map {}",
                        self.obj.maps[map as usize].name
                    ),
                ))
            }
            Region::Ctx if access == Access::Write && !self.entry.ctx_writable() => Err(self.diag(
                Rule::CtxAccess,
                i,
                st,
                &[reg],
                "the context is read-only".into(),
            )),
            _ => Ok(()),
        }
    }

    fn const_str(&self, st: &State, i: usize, reg: u8, v: &Reg, name: &str) -> R<()> {
        let bad = |why: &str| {
            self.diag(
                Rule::HelperArg,
                i,
                st,
                &[reg],
                format!(
                    "{name}: r{reg} must point to a NUL-terminated string in read-only data: {why}"
                ),
            )
        };
        let Reg::Ptr(Region::MapValue { map }, off) = v else {
            return Err(bad("not a map value"));
        };
        let m = &self.obj.maps[*map as usize];
        if m.origin != MapOrigin::GlobalData || m.flags & RDONLY_PROG == 0 {
            return Err(bad("the map is not read-only global data"));
        }
        let Some(off) = off.as_const() else {
            return Err(bad("the offset is not constant"));
        };
        let data = m.init.as_deref().unwrap_or(&[]);
        match data.get(off as usize..) {
            Some(rest) if rest.contains(&0) => Ok(()),
            _ => Err(bad("no NUL before the end of the data")),
        }
    }
}

/// r0-r5: what a call defines or clobbers.
const R0_5: u16 = 0b11_1111;
/// r1-r5: a call's arguments.
const R1_5: u16 = 0b11_1110;

/// Each function's instructions, `[start, end)` by index (the whole program when it
/// lists no functions).
pub(crate) fn func_bounds(prog: &Program) -> Vec<(usize, usize)> {
    let n = prog.insns.len();
    let mut bounds: Vec<(usize, usize)> = prog
        .funcs
        .iter()
        .enumerate()
        .map(|(k, f)| (f.start, prog.funcs.get(k + 1).map_or(n, |g| g.start)))
        .collect();
    if bounds.is_empty() {
        bounds.push((0, n));
    }
    bounds
}

/// The instructions control may reach right after instruction `i` of the function `[a, b)`:
/// jump targets and the next instruction (a call returns there). A target outside the
/// function is left out (the structural pass rejects it).
pub(crate) fn successors(
    prog: &Program,
    pcs: &[usize],
    idx_of_pc: &[Option<usize>],
    i: usize,
    (a, b): (usize, usize),
) -> Vec<usize> {
    let ins = &prog.insns[i];
    let rel = match ins.kind() {
        Kind::Exit => return Vec::new(),
        Kind::Ja | Kind::Jmp(..) => Some(i64::from(ins.off)),
        Kind::Gotol => Some(ins.imm),
        _ => None,
    };
    let mut out = Vec::new();
    if let Some(rel) = rel {
        let t = usize::try_from(pcs[i] as i64 + 1 + rel)
            .ok()
            .and_then(|pc| idx_of_pc.get(pc).copied().flatten());
        if let Some(t) = t.filter(|&t| t >= a && t < b) {
            out.push(t);
        }
        if matches!(ins.kind(), Kind::Ja | Kind::Gotol) {
            return out;
        }
    }
    if i + 1 < b {
        out.push(i + 1);
    }
    out
}

/// Per instruction: the registers whose numeric value, on entry to it, can still
/// influence a safety decision on some path from it: a branch condition, a memory
/// address, a helper argument the prototype checks, a divisor (a fact for the backend), a
/// value stored where it may be read back (the stack) or a subprogram's argument or result.
/// Every other register holding a number may hold any number without changing what the
/// rest of the path does, so pruning ignores its value ([`State::subsumes_with`]). A
/// backward may-analysis over each function's control flow; stores and loads through
/// pointers that may point to the stack count as relevant (a forward may-analysis says
/// which registers may).
fn relevance(prog: &Program, pcs: &[usize], idx_of_pc: &[Option<usize>]) -> Vec<u16> {
    let n = prog.insns.len();
    let bit = |r: u8| 1u16 << r;
    let bounds = func_bounds(prog);
    // Whether anything calls the entry function (then its exits return r0 to a caller).
    let entry_called = prog.insns.iter().enumerate().any(|(i, ins)| {
        ins.kind() == Kind::Call(CallKind::Local) && pcs[i] as i64 + 1 + ins.imm == 0
    });
    let succs = |i: usize, f: (usize, usize)| successors(prog, pcs, idx_of_pc, i, f);
    let mut relevant = vec![0u16; n];
    for (k, &(a, b)) in bounds.iter().enumerate() {
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
                _ => ms,
            };
            for t in succs(i, (a, b)) {
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
            for t in succs(i, (a, b)) {
                preds[t].push(i);
            }
        }
        let mut work: Vec<usize> = (a..b).collect();
        let mut queued = vec![true; n];
        while let Some(i) = work.pop() {
            queued[i] = false;
            let ins = &prog.insns[i];
            let out = succs(i, (a, b))
                .iter()
                .fold(0u16, |acc, &t| acc | relevant[t]);
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
                Kind::Ja | Kind::Gotol => out,
                Kind::Call(CallKind::Helper) => {
                    let args = match bpf2ptx_runtime::helper(ins.imm) {
                        Some(h) => h
                            .args
                            .iter()
                            .enumerate()
                            .filter(|(_, a)| **a != Arg::Anything)
                            .fold(0, |acc, (k, _)| acc | bit(k as u8 + 1)),
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
