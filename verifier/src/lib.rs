//! The bpf2ptx verifier: proves a program safe to run inside someone else's CUDA kernel
//! before the backend lowers it. Soundness first: it may reject a safe program (and says
//! why), it must never accept one that can fault, hang or write out of bounds.
//!
//! ```text
//!  Program (bpf2ptx-compiler)
//!    │ structure   jump targets, function boundaries, fall-through, r10, call targets,
//!    │             registers initialised on every path                [`structure`]
//!    │ analysis    abstract interpretation of every path: register types, scalar
//!    │             ranges and known bits, stack slots, memory bounds, helper
//!    │             prototypes, null checks, ringbuf references, loops   [`analysis`]
//!    ▼
//!  Facts for the backend (address space of each access, divisions that need a zero
//!  check, plain counter updates that may be one atomic add, the worst-case instruction
//!  count, the stack size)
//! ```
//!
//! [`verify`] returns one program's [`Facts`]; [`Verified::new`] verifies every program of
//! an object and is the only way to make the [`Verified`] the backend lowers, so a
//! program that did not pass cannot reach it.
//!
//! Every rule, by the name diagnostics print ([`Rule`]):
//! - structure: `jump-range`, `jump-into-ld-imm64`, `fall-through`, `call-target`,
//!   `r10-write`, `uninit-register`, `recursion` (see [`structure`]);
//! - `uninit-register` also along each path, and r0 at `exit`;
//! - `mem-scalar`: memory is accessed only through pointers;
//! - `null-deref`: a map lookup or ringbuf reserve result is compared with 0 before it is
//!   used (the check refines every copy of it);
//! - `mem-bounds`: every access, for every offset the pointer may have, lies inside its
//!   region: the stack (512 bytes below r10), a map value (`value_size`), the context of
//!   the attach point, the test input memory, a ringbuf record;
//! - `stack-uninit`: stack bytes are written before they are read (by the program or by a
//!   helper that reads them);
//! - `stack-pointer`: a pointer is spilled only by an aligned 8-byte store, never read
//!   back partially and never the target of an atomic (a partial overwrite leaves the rest
//!   of a spilled pointer unreadable);
//! - `rodata-write`: nothing writes read-only maps (`.rodata`): no store, atomic, helper
//!   output, `map_update_elem` or `map_delete_elem`;
//! - `ctx-access`: the context is read-only and accessed (or passed to a helper) only
//!   through a pointer moved by constants;
//! - `pointer-leak`: pointers are stored only on the stack and never returned by the
//!   program, a 32-bit move never truncates one, a function never returns a pointer into
//!   its own frame, and no pointer into a frame is stored in an older frame (it would
//!   dangle once the frame returns);
//! - `pointer-arith`: only 64-bit add/sub of a number to a pointer, or the difference of
//!   two pointers into one region; pointers are compared only with pointers or NULL;
//! - `atomic-region`: atomics only on the stack and map values;
//! - `helper-unknown` / `helper-arg`: calls only helpers of the runtime catalogue
//!   (`bpf2ptx-runtime`), with arguments of the prototype's types and sizes, maps of the
//!   types the helper takes, and direct value addresses only into global data and arrays;
//! - `bpf_snprintf`'s format is parsed at load time as Linux does, and each `%s` argument
//!   is a pointer the verifier bounds (`helper-arg`; [`SnprintfCall`]);
//! - `ringbuf-leak`: a reserved ringbuf record is submitted or discarded on every path;
//! - `call-depth`: at most 8 frames; `stack-size`: the combined stack of any call chain
//!   the exploration goes through is at most 512 bytes;
//! - `loop-bound` / `infinite-loop`: exploration ends, which proves every loop bounded (a
//!   loop whose state repeats exactly, or that needs more than 1,000,000 explored
//!   instructions, is rejected at the loop);
//!
//! Pruning: a path stops at a state subsumed by one whose every path was explored, where
//! registers whose value no later decision reads match any number
//! ([`state::State::subsumes_with`]). specs/verifier.md describes the whole algorithm,
//! the limits, the JSON output and the agreement with the Linux verifier.
//! - `unsupported`: instructions with no GPU meaning (legacy packet access, kfuncs the
//!   runtime does not have);
//! - `iterator`: numeric iterators made, moved and destroyed only by their kfuncs.
#![deny(missing_docs)]

pub mod analysis;
pub mod message;
mod plain_add;
pub mod scalar;
pub mod state;
pub mod structure;
mod verified;

#[cfg(test)]
mod soundness_tests;

use bpf2ptx_compiler::program::{LineRef, Object};
use serde::Serialize;
use std::fmt;

pub use plain_add::{Addend, PlainAdd};
pub use structure::{check, StructError};
pub use verified::{Rejected, Verified};

/// A rule a program can break.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[allow(missing_docs)]
pub enum Rule {
    JumpRange,
    JumpIntoLdImm64,
    FallThrough,
    CallTarget,
    R10Write,
    UninitRegister,
    Recursion,
    MemScalar,
    NullDeref,
    MemBounds,
    StackUninit,
    StackPointer,
    RodataWrite,
    CtxAccess,
    PointerLeak,
    PointerArith,
    AtomicRegion,
    HelperUnknown,
    HelperArg,
    RingbufLeak,
    CallDepth,
    StackSize,
    LoopBound,
    TooComplex,
    InfiniteLoop,
    Unsupported,
    /// A numeric iterator used as Linux allows: `bpf_iter_num_new` on a free, aligned
    /// 8-byte stack slot, `next` and `destroy` on a live iterator, destroyed before its
    /// function returns, never touched by loads, stores or helpers.
    Iterator,
}

impl Rule {
    /// The name diagnostics print.
    pub fn name(self) -> &'static str {
        match self {
            Rule::JumpRange => "jump-range",
            Rule::JumpIntoLdImm64 => "jump-into-ld-imm64",
            Rule::FallThrough => "fall-through",
            Rule::CallTarget => "call-target",
            Rule::R10Write => "r10-write",
            Rule::UninitRegister => "uninit-register",
            Rule::Recursion => "recursion",
            Rule::MemScalar => "mem-scalar",
            Rule::NullDeref => "null-deref",
            Rule::MemBounds => "mem-bounds",
            Rule::StackUninit => "stack-uninit",
            Rule::StackPointer => "stack-pointer",
            Rule::RodataWrite => "rodata-write",
            Rule::CtxAccess => "ctx-access",
            Rule::PointerLeak => "pointer-leak",
            Rule::PointerArith => "pointer-arith",
            Rule::AtomicRegion => "atomic-region",
            Rule::HelperUnknown => "helper-unknown",
            Rule::HelperArg => "helper-arg",
            Rule::RingbufLeak => "ringbuf-leak",
            Rule::CallDepth => "call-depth",
            Rule::StackSize => "stack-size",
            Rule::LoopBound => "loop-bound",
            Rule::TooComplex => "too-complex",
            Rule::InfiniteLoop => "infinite-loop",
            Rule::Unsupported => "unsupported",
            Rule::Iterator => "iterator",
        }
    }
}

/// Why a program is rejected, at one instruction.
///
/// The text form (`Display`, [`message::Render`]) speaks to the probe author: the message
/// in the source's names and decimal ranges, the source line with a caret, notes, the
/// path with loops condensed, and a `help:` line where the fix is mechanical. The JSON
/// form (`Serialize`) has every field, the raw state included.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The rule broken.
    pub rule: Rule,
    /// Slot index of the instruction.
    pub pc: usize,
    /// The instruction, disassembled.
    pub insn: String,
    /// The function it is in.
    pub func: String,
    /// Its source line, where line information exists.
    pub line: Option<LineRef>,
    /// What is wrong, in the user's terms: maps and variables by their names, values as
    /// decimal ranges.
    pub message: String,
    /// The abstract state of the registers involved.
    pub regs: Vec<RegState>,
    /// The branch decisions on the path that leads here, oldest first (at most 12).
    pub path: Vec<Decision>,
    /// More about the error than the message says (the access, the loop's exit test).
    pub notes: Vec<String>,
    /// The whole path that leads here, a loop's iterations folded into one step
    /// ([`message::condense`]).
    pub trail: Vec<PathStep>,
    /// What to change, where the fix is mechanical (`<` for `<=`, a NULL check, ...).
    pub help: Option<String>,
}

impl Diagnostic {
    /// The diagnostic with a `help:` line.
    pub(crate) fn with_help(mut self: Box<Self>, help: impl Into<String>) -> Box<Self> {
        self.help = Some(help.into());
        self
    }

    /// The diagnostic with one more note.
    pub(crate) fn with_note(mut self: Box<Self>, note: impl Into<String>) -> Box<Self> {
        self.notes.push(note.into());
        self
    }
}

/// A register's abstract value in a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegState {
    /// Register number.
    pub reg: u8,
    /// Its value, as the verifier knows it (`scalar(umin=0,umax=255)`, `fp0-8`, ...),
    /// maps by their names.
    pub value: String,
    /// Its value in the user's terms (`a number, 0..255`, `a pointer to `counts` + 8`).
    pub shown: String,
}

/// A branch decision on the path to a diagnostic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// Slot index of the conditional jump.
    pub pc: usize,
    /// Whether the jump was taken.
    pub taken: bool,
}

/// One step of a diagnostic's condensed path ([`Diagnostic::trail`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PathStep {
    /// A branch decision.
    Branch {
        /// Slot index of the conditional jump.
        pc: usize,
        /// Whether the jump was taken.
        taken: bool,
        /// Its source line, where line information exists.
        line: Option<u32>,
    },
    /// The same decisions, iteration after iteration: around a loop `times` times.
    Loop {
        /// Slot index of the jump that names the loop (the one back to its head).
        pc: usize,
        /// Whether that jump was taken.
        taken: bool,
        /// Its source line, where line information exists.
        line: Option<u32>,
        /// Iterations.
        times: u64,
    },
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&message::Render::default().render(self))
    }
}

/// What a program's r1 points to at entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryArg {
    /// The attach point's context: `size` bytes, writable or not.
    Ctx {
        /// Bytes of context.
        size: u32,
        /// Whether the program may write it.
        writable: bool,
    },
    /// A bpf_conformance test's input memory of `size` bytes (read-write).
    Mem {
        /// Bytes.
        size: u32,
    },
}

/// The registers a program starts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// r1.
    pub r1: EntryArg,
    /// r2, when the attach point passes a number there (bpf_conformance: the memory length).
    pub r2: Option<u64>,
    /// Context bytes whose values are known (an attach site's constant fields): loads of
    /// them are constants, which [`Facts::const_value`] and `branch_always` then show.
    pub known: KnownBytes,
}

/// Up to [`KnownBytes::CAPACITY`] context bytes with known values: byte `k` is known when
/// bit `k` of `mask` is. (The largest context, a memory site's, is 80 bytes.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownBytes {
    /// The values.
    pub bytes: [u8; KnownBytes::CAPACITY],
    /// Which are known.
    pub mask: u128,
}

impl Default for KnownBytes {
    fn default() -> Self {
        KnownBytes {
            bytes: [0; KnownBytes::CAPACITY],
            mask: 0,
        }
    }
}

impl KnownBytes {
    /// Context bytes that can be known: one bit of `mask` each.
    pub const CAPACITY: usize = 128;

    /// The little-endian value of bytes `at..at + n` when all are known.
    pub fn value(&self, at: i64, n: u32) -> Option<u64> {
        let at = usize::try_from(at).ok()?;
        let mut v = 0u64;
        for k in (0..n as usize).rev() {
            let b = at + k;
            if b >= Self::CAPACITY || self.mask & (1 << b) == 0 {
                return None;
            }
            v = v << 8 | u64::from(self.bytes[b]);
        }
        Some(v)
    }
}

impl Entry {
    /// Bytes r1 points to.
    pub fn ctx_size(&self) -> u32 {
        match self.r1 {
            EntryArg::Ctx { size, .. } | EntryArg::Mem { size } => size,
        }
    }

    /// Whether r1's memory is writable.
    pub fn ctx_writable(&self) -> bool {
        match self.r1 {
            EntryArg::Ctx { writable, .. } => writable,
            EntryArg::Mem { .. } => true,
        }
    }

    /// The entry of a bpf_conformance test with `len` bytes of memory.
    pub fn conformance(len: usize) -> Entry {
        Entry {
            r1: EntryArg::Mem { size: len as u32 },
            r2: Some(len as u64),
            known: KnownBytes::default(),
        }
    }

    /// The entry of a GPU probe whose attach point is not known (e.g. a text input): an
    /// empty, read-only context, so a probe that reads it is rejected rather than trusted.
    pub fn probe() -> Entry {
        Entry::probe_ctx(0)
    }

    /// The entry of a GPU probe with a read-only context of `size` bytes (the attach
    /// point's: `bpf2ptx_backend::inject::attach::Point::ctx_size`).
    pub fn probe_ctx(size: u32) -> Entry {
        Entry {
            r1: EntryArg::Ctx {
                size,
                writable: false,
            },
            r2: None,
            known: KnownBytes::default(),
        }
    }
}

/// The regions one memory access may touch, as a set: [`Facts::regions`]. The backend
/// asks it questions ([`Regions::is_global`], [`Regions::touches`]) instead of decoding
/// bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Regions(u8);

impl Regions {
    /// No region: the instruction is not a memory access (or no path reaches it).
    pub const NONE: Regions = Regions(0);
    /// The BPF stack (a `.local` frame on the GPU).
    pub const STACK: Regions = Regions(1);
    /// The attach point's context (a `.local` struct at an attach site).
    pub const CTX: Regions = Regions(2);
    /// A bpf_conformance test's input memory.
    pub const MEM: Regions = Regions(4);
    /// Map values.
    pub const MAP_VALUE: Regions = Regions(8);
    /// Ringbuf records.
    pub const RECORD: Regions = Regions(16);

    /// Adds the regions of `r`.
    pub(crate) fn insert(&mut self, r: Regions) {
        self.0 |= r.0;
    }

    /// Whether the access may touch one of the regions of `r`.
    pub fn touches(self, r: Regions) -> bool {
        self.0 & r.0 != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every region the access may touch lives in global memory (map values, the
    /// test memory, ringbuf records): a memory access that touches neither the stack nor
    /// the context, which are thread-local.
    pub fn is_global(self) -> bool {
        !self.is_empty() && !self.touches(Regions(Regions::STACK.0 | Regions::CTX.0))
    }
}

/// What the verifier proved about an accepted program, for the backend and the user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// The longest path through the program, in executed instructions.
    pub cost_bound: u64,
    /// Bytes of stack the deepest call chain uses.
    pub stack_bytes: u32,
    /// Per instruction: the regions its memory access may touch (empty: not a memory
    /// access). A helper call has [`Regions::CTX`] when it reads the context's bytes
    /// through a pointer argument (a map key or value pointing into the context).
    pub regions: Vec<Regions>,
    /// Per instruction: a division or modulo by a register that may be zero.
    pub divisor_may_be_zero: Vec<bool>,
    /// Per instruction: a memory access whose address is a multiple of its size on every
    /// path (every region starts 8-byte aligned), so the GPU can access it directly.
    pub aligned: Vec<bool>,
    /// Per instruction: an atomic without fetch (the device only adds, never reads back).
    pub atomic_no_fetch: Vec<bool>,
    /// Per instruction: a conditional jump that always goes one way.
    pub branch_always: Vec<Option<bool>>,
    /// Per instruction: an atomic add without fetch whose operand is the same constant on
    /// every path (`__sync_fetch_and_add(v, 1)` as a statement): the backend lets one lane
    /// of each group of lanes with the same address add the group's total.
    pub atomic_add_const: Vec<Option<u64>>,
    /// Per instruction: a helper call whose map argument (r1) is the same map on every
    /// path, so the backend can specialise the call for that map's type and layout.
    pub call_map: Vec<Option<u32>>,
    /// Per instruction: a load from the context at this constant byte offset on every
    /// path, so an inlined probe can take the field from the site's registers.
    pub ctx_offset: Vec<Option<i64>>,
    /// Per instruction: an atomic (any operation) on the values of this map on every
    /// path.
    pub atomic_map: Vec<Option<u32>>,
    /// Per instruction (ALU, load): the value it leaves in its destination when that is
    /// the same constant on every path and matters later (relevant registers only, so
    /// pruning never merged paths that disagree on it).
    pub const_value: Vec<Option<u64>>,
    /// Per instruction: a mask of registers (bit `r` for `r`) that hold, on entry to it
    /// on every path, a number whose upper 32 bits are zero (unsigned maximum below
    /// 2^32). Only registers relevant there (pruning compares those, so no path pruned
    /// before the instruction can disagree), which every operand of a conditional jump
    /// is. The backend computes 64-bit operations on such values in 32 bits where the
    /// result is the same (specs/verifier.md, "Facts for the backend"): a 64-bit compare
    /// or shift is two or more GPU instructions, a 32-bit one is one.
    pub upper_zero: Vec<u16>,
    /// Per conditional jump on two registers (`if rD op rS goto`): the value of rS on
    /// entry when it is the same constant on every path (rS is relevant there, as every
    /// jump operand is, so pruning never merged paths that disagree). clang loads a 64-bit
    /// bound into a register (`r1 = 0x100000000 ll; if r0 < r1`); the backend compares a
    /// number against such a bound whose low half is all zeros (`<`, `>=`) or all ones
    /// (`>`, `<=`) by the number's high half alone (specs/verifier.md, "Facts for the
    /// backend").
    pub jump_rhs_const: Vec<Option<u64>>,
    /// Per map: the program only ever adds to the map's values with 64-bit atomic adds
    /// that do not fetch, or 64-bit plain counter updates that become such adds
    /// (`plain_add`), and makes no other load, store, helper access or update of the map,
    /// so the values may be sharded into per-SM replicas that the host sums.
    pub map_only_adds: Vec<bool>,
    /// Per map: some instruction may write the map's values: a store, an atomic, a
    /// helper that writes through a pointer into a value, or a helper other than a lookup
    /// that takes the map (an update or delete changes values whole). `false` proves the
    /// program never changes the map, which the injector needs before it keeps a value a
    /// probe stored in a register for a later load of the same slot (specs/verifier.md,
    /// "Register accumulation and forwarding").
    pub map_written: Vec<bool>,
    /// Per instruction: its part in a counter update written as plain code (`*v += 1`,
    /// `*v = *v + x`) that may run as one atomic add without fetch: a load and a store of
    /// the same 4 or 8 bytes of a map value threads share (aligned, on every path; not a
    /// per-thread array's) through one register, an add of a constant or of a register
    /// the loaded value does not feed, and in between only arithmetic on other registers;
    /// neither the loaded value nor the sum is read anywhere else. Sound because every
    /// result of the atomic add is one the racy load-add-store can give (specs/verifier.md,
    /// "Plain counter updates"); without it threads sharing the value lose almost every
    /// update. A 64-bit one counts as an atomic add for `map_only_adds`.
    pub plain_add: Vec<Option<PlainAdd>>,
    /// Slots of instructions no path reaches.
    pub unreachable: Vec<usize>,
    /// Per instruction: some path reaches it (the backend emits nothing for the others).
    pub reached: Vec<bool>,
    /// Per instruction: a `map_lookup_elem` on an array whose key is below `max_entries`
    /// on every path (`Some(true)`): it returns a value unless the map is unbound.
    pub lookup_in_range: Vec<Option<bool>>,
    /// Per instruction: a helper call whose memory argument's size (e.g. r3 of
    /// `ringbuf_output`) is this constant on every path, so the backend can copy the
    /// bytes with straight-line code (the size register is relevant to pruning, as every
    /// checked helper argument is, so no merged path disagrees with it).
    pub call_size: Vec<Option<u64>>,
    /// Per instruction: the function (index in the program's function list) a `bpf_loop`
    /// call there calls back, the same on every path (the verifier rejects a call whose
    /// callback differs between paths).
    pub loop_callback: Vec<Option<usize>>,
    /// Per instruction: a `bpf_snprintf` call, with its format and how far each `%s`
    /// argument may be read (the format is the same on every path; the verifier rejects a
    /// call whose paths disagree).
    pub snprintf: Vec<Option<SnprintfCall>>,
    /// Every loop instance the exploration bounded by construction (`bpf_loop`, numeric
    /// iterators, `may_goto`, `--loop-budget`), with its trip bound and longest iteration:
    /// the cost bound counts `trips × body` for each.
    pub loops: Vec<LoopCost>,
    /// Instructions (indices) that head a loop `--loop-budget` bounds: the backend
    /// spends one unit of the function invocation's budget there and ends the program,
    /// counted, when none is left. Sorted.
    pub budget_heads: Vec<usize>,
    /// The budget of `--loop-budget` (units per function invocation) when `budget_heads`
    /// is not empty.
    pub loop_budget: Option<u64>,
}

/// A `bpf_snprintf` call as the verifier proved it (`Facts::snprintf`): where its format
/// is, so the backend parses the same bytes ([`bpf2ptx_runtime::snprintf::parse`]), and
/// for each `%s` the most bytes its string may be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SnprintfCall {
    /// The read-only global-data map holding the format.
    pub fmt_map: u32,
    /// The format's byte offset in the map's value.
    pub fmt_offset: u32,
    /// `(argument index, bytes)` per `%s` conversion: the least, over every path, of the
    /// bytes readable from the pointer in that word of the data array.
    pub str_max: Vec<(usize, u32)>,
}

/// The form of a loop the verifier bounds by construction (specs/verifier.md, "Loops").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopForm {
    /// `bpf_loop` (helper 181) and its callback.
    BpfLoop,
    /// An open-coded numeric iterator (`bpf_iter_num_next` is the head).
    Iterator,
    /// `may_goto` (0xe5).
    MayGoto,
    /// A loop `--loop-budget` bounds.
    Budget,
}

impl LoopForm {
    /// The form's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            LoopForm::BpfLoop => "bpf_loop",
            LoopForm::Iterator => "iterator",
            LoopForm::MayGoto => "may_goto",
            LoopForm::Budget => "loop-budget",
        }
    }
}

/// One loop instance's share of the cost bound: at most `trips` iterations of at most
/// `body` instructions each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct LoopCost {
    /// Slot index of the loop's head.
    pub pc: usize,
    /// The loop's form.
    pub form: LoopForm,
    /// The most iterations.
    pub trips: u64,
    /// The most instructions one iteration executes.
    pub body: u64,
}

impl Facts {
    fn new(n: usize) -> Facts {
        Facts {
            regions: vec![Regions::NONE; n],
            divisor_may_be_zero: vec![false; n],
            aligned: vec![true; n],
            atomic_no_fetch: vec![false; n],
            branch_always: vec![None; n],
            atomic_add_const: vec![None; n],
            call_map: vec![None; n],
            ctx_offset: vec![None; n],
            atomic_map: vec![None; n],
            const_value: vec![None; n],
            upper_zero: vec![0; n],
            jump_rhs_const: vec![None; n],
            lookup_in_range: vec![None; n],
            call_size: vec![None; n],
            plain_add: vec![None; n],
            loop_callback: vec![None; n],
            snprintf: vec![None; n],
            ..Facts::default()
        }
    }
}

/// Tunables of a verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Instructions the exploration may process before it rejects the program (a loop
    /// without a provable bound ends there).
    pub complexity_limit: u64,
    /// `--loop-budget N`: a loop the verifier cannot bound otherwise (one it would reject
    /// with `loop-bound`) gets a `may_goto`-style budget of `N` iterations per function
    /// invocation; when it runs out, the program ends and the runtime counts the event
    /// (specs/abi.md, "Counts block").
    pub loop_budget: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            complexity_limit: analysis::COMPLEXITY_LIMIT,
            loop_budget: None,
        }
    }
}

/// The most loops `--loop-budget` puts a budget on in one program (each needs one more
/// exploration to find).
pub const MAX_BUDGET_LOOPS: usize = 16;

/// Verifies program `prog` of `obj` with the given entry registers: the structural rules,
/// then every path. Returns the facts, or every independent violation found.
pub fn verify(obj: &Object, prog: usize, entry: &Entry) -> Result<Facts, Vec<Diagnostic>> {
    verify_with(obj, prog, entry, &Options::default())
}

/// [`verify`] with explicit [`Options`].
pub fn verify_with(
    obj: &Object,
    prog: usize,
    entry: &Entry,
    opts: &Options,
) -> Result<Facts, Vec<Diagnostic>> {
    let p = &obj.programs[prog];
    let mut entry_regs = vec![1u8];
    if entry.r2.is_some() {
        entry_regs.push(2);
    }
    if let Err(errs) = structure::check(p, &entry_regs) {
        let pcs = p.pcs();
        let line_of = |pc: usize| {
            let i = pcs.iter().position(|&x| x == pc)?;
            p.lines
                .iter()
                .rev()
                .find(|(j, _)| *j <= i)
                .map(|(_, l)| l.clone())
        };
        return Err(errs
            .into_iter()
            .map(|e| Diagnostic {
                line: line_of(e.pc),
                rule: match e.rule {
                    structure::Rule::JumpRange => Rule::JumpRange,
                    structure::Rule::JumpIntoLdImm64 => Rule::JumpIntoLdImm64,
                    structure::Rule::FallThrough => Rule::FallThrough,
                    structure::Rule::CallTarget => Rule::CallTarget,
                    structure::Rule::R10Write => Rule::R10Write,
                    structure::Rule::UninitRegister => Rule::UninitRegister,
                    structure::Rule::Recursion => Rule::Recursion,
                },
                pc: e.pc,
                insn: e.insn,
                func: p
                    .funcs
                    .iter()
                    .rev()
                    .find(|f| p.pcs()[f.start] <= e.pc)
                    .map_or_else(|| p.name.clone(), |f| f.name.clone()),
                message: e.message,
                regs: Vec::new(),
                path: Vec::new(),
                notes: Vec::new(),
                trail: Vec::new(),
                help: None,
            })
            .collect());
    }
    // With a loop budget, each loop the exploration blames (`loop-bound`, at its most
    // visited backward jump) gets the budget at its head (the jump's target), and the
    // program is explored again, up to MAX_BUDGET_LOOPS loops.
    let mut heads: Vec<usize> = Vec::new();
    loop {
        let mut x = analysis::Explorer::new(obj, p, entry, opts.complexity_limit);
        if let Some(n) = opts.loop_budget {
            x.set_budget(&heads, n);
        }
        x.run();
        if x.errors.is_empty() {
            let mut facts = x.facts;
            if !heads.is_empty() {
                heads.sort_unstable();
                facts.budget_heads = heads;
                facts.loop_budget = opts.loop_budget;
            }
            return Ok(facts);
        }
        let mut errs = std::mem::take(&mut x.errors);
        errs.sort_by_key(|e| e.pc);
        let blamed = match (opts.loop_budget, errs.as_slice()) {
            (Some(_), [e]) if e.rule == Rule::LoopBound && heads.len() < MAX_BUDGET_LOOPS => {
                x.backward_target(e.pc)
            }
            _ => None,
        };
        match blamed {
            // Only in the entry function: running out ends the program, which a
            // subprogram cannot do by itself.
            Some(h) if !heads.contains(&h) && p.funcs.get(1).is_none_or(|f| h < f.start) => {
                heads.push(h)
            }
            _ => return Err(errs),
        }
    }
}
