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
//!
//! ```text
//!  Explorer::new   prune points (jump targets, function starts), the registers that
//!    │             matter from each instruction, plain counter updates
//!    │             (over the object model's Cfg)                      [relevance, facts]
//!    │ run         a work list of paths; at a prune point a state is pruned (subsumed
//!    │             by an explored one), rejected (repeats exactly) or remembered; the
//!    │             exploration limit bounds loops                              [explore]
//!    │   step      one instruction by class: ALU and pointer arithmetic, loads, stores
//!    │             and atomics, conditional jumps, helper calls, BPF-to-BPF calls and
//!    │             returns                            [step, alu, mem, jmp, call]
//!    │ finish      branch directions, unreachable code, plain adds, the stack of every
//!    │             call chain                                          [explore, facts]
//!    ▼
//!  Facts for the backend, and diagnostics (one per instruction and rule)      [diag]
//! ```

mod alu;
mod call;
mod diag;
mod explore;
mod facts;
mod jmp;
mod loops;
mod mem;
mod relevance;
mod snprintf;
mod step;

use crate::plain_add::Triple;
use crate::state::{Reg, State};
use crate::{Diagnostic, Entry, Facts};
use bpf2ptx_compiler::cfg::Cfg;
use bpf2ptx_compiler::program::{Object, Program};

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

/// A remembered state at a prune point.
struct Stored {
    state: State,
    /// [`State::fingerprint`] of `state`, where a state can repeat on its own path
    /// (`Explorer::may_repeat`).
    fp: Option<u64>,
    /// Longest path (in instructions) from here to an exit found so far.
    remaining: u64,
    /// Every path from here has been explored.
    done: bool,
    /// Visits this state pruned, and visits it was tested against and did not
    /// ([`evicted`](Stored::evicted)).
    hits: u32,
    /// See `hits`.
    misses: u32,
    /// Dropped: a fully explored state that missed more than [`EVICT_MISSES`] allows.
    /// Its slot stays (the path refers to stored states by index), its state is freed.
    evicted: bool,
    /// The innermost loop bounded by construction the path was in when the state was
    /// stored ([`Explorer::loop_key`]): `remaining` counts to the end of its iteration.
    /// Only paths in the same loop are pruned against it.
    loop_key: Option<(usize, usize)>,
}

impl Stored {
    /// Whether a fully explored state has missed often enough to be dropped: more than
    /// 3 x hits + 3 times, as Linux's `is_state_visited` evicts. Dropping a state only
    /// removes chances to prune, so exploration covers at least what it did (sound), and
    /// the cost bound is unchanged (a pruned path takes its pruning state's `remaining`).
    fn should_evict(&self) -> bool {
        self.done && self.misses > EVICT_MISSES * self.hits + EVICT_MISSES
    }
}

/// The factor and the constant of the eviction rule ([`Stored::should_evict`]).
const EVICT_MISSES: u32 = 3;

/// How many remembered states still being explored have each fingerprint. The keys are
/// hashes already, hashed again by foldhash (fast; a fixed seed keeps runs identical).
type FpCounts = std::collections::HashMap<u64, u32, foldhash::fast::FixedState>;

/// A branch left for later.
struct Pending {
    state: State,
    at: usize,
    steps: u64,
    path_len: usize,
    history_len: usize,
    /// The branch decision that leads here: (slot of the branch, taken).
    decision: Option<(usize, bool)>,
    /// The loops the path is in ([`Explorer::loop_stack`] as it was when the path was
    /// set aside: each entry's head time is the path's own).
    loop_stack: Vec<(usize, u64)>,
    /// A release mark instead of a path: every iteration of loop instance `l` has been
    /// explored, so the paths that left it may go on ([`Explorer::release`]).
    release: Option<usize>,
}

/// What executing one instruction did.
enum Step {
    /// Continue at the next instruction (or a jump target) with this state.
    Next(State, usize),
    /// Two feasible successors: continue with the first, explore the second later.
    Branch((State, usize), (State, usize)),
    /// The path ended (program exit or a non-returning helper).
    End,
    /// A loop head's two successors: one more iteration, and the way out (explored once
    /// every iteration is: `loops`).
    Loop {
        /// One more iteration.
        body: (State, usize),
        /// After the loop.
        exit: (State, usize),
    },
}

/// The explorer of one program.
pub(crate) struct Explorer<'a> {
    obj: &'a Object,
    prog: &'a Program,
    entry: &'a Entry,
    /// Slots, functions and jump targets.
    cfg: Cfg,
    prune_point: Vec<bool>,
    /// Per instruction: a path may come back to it with the same frames, so the state
    /// there is checked for an exact repeat (`explore::may_repeat`).
    may_repeat: Vec<bool>,
    /// Per instruction: the registers whose value matters from there ([`relevance`]).
    ///
    /// [`relevance`]: relevance::relevance
    relevant: Vec<u16>,
    store: Vec<Vec<Stored>>,
    /// The remembered states on the current path, oldest first: (instruction, index in
    /// its store, steps when reached, longest path length ending below it so far).
    path: Vec<(usize, usize, u64, u64)>,
    history: Vec<(usize, bool)>,
    next_id: u32,
    processed: u64,
    /// Jumps, branches, calls and exits processed (of `processed`).
    jumps: u64,
    /// `jumps` and `processed` when a state was last remembered (`Explorer::should_store`).
    last_store: (u64, u64),
    pub(crate) errors: Vec<Diagnostic>,
    pub(crate) facts: Facts,
    /// Deepest stack byte used per function (positive number of bytes below r10).
    depth: Vec<i64>,
    visits: Vec<u64>,
    limit: u64,
    /// States remembered so far (all instructions).
    stored: usize,
    /// Per instruction: fingerprints of its remembered states still being explored.
    live: Vec<FpCounts>,
    /// Per instruction: how many of its remembered states are fully explored.
    done_at: Vec<usize>,
    /// Per instruction: how many of its stored states were evicted.
    evicted_at: Vec<usize>,
    /// Per instruction: the indices of its fully explored, not evicted stored states, in
    /// the order they were stored (the states a visit may be pruned against).
    done_list: Vec<Vec<usize>>,
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
    /// Per instruction: whether a path reached it and set its `Facts::upper_zero`.
    seen_upper: Vec<bool>,
    /// Per instruction: whether a path reached it and set its `Facts::jump_rhs_const`.
    seen_jump_rhs: Vec<bool>,
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
    /// Loop instances opened so far (`loops`).
    loops: Vec<loops::LoopInst>,
    /// The loops the current path is in, outermost first: (instance, instructions
    /// executed when the path last passed its head).
    loop_stack: Vec<(usize, u64)>,
    /// Per loop head: the instructions on a cycle through it.
    cycles: std::collections::HashMap<usize, Vec<bool>>,
    /// Per instruction: it heads a loop `--loop-budget` bounds.
    budget_head: Vec<bool>,
    /// The budget of those loops.
    loop_budget: u64,
    /// Per backward conditional jump: its operands (dst, and src for a register test)
    /// on the latest visit, for the `loop-bound` message.
    last_test: Vec<Option<(Reg, Option<Reg>)>>,
    /// Per load: `Some(Some(m))` when every path so far loaded from a value of map `m`,
    /// `Some(None)` when some did not; for messages that say where a value came from.
    load_map: Vec<Option<Option<u32>>>,
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
