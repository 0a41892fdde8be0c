//! Fusion of a probe body into the kernel it is inlined into (issue 19; the rules and why
//! they are exact: specs/verifier.md, "Register accumulation and forwarding"):
//!
//! - **Register accumulation.** Where every update a probe makes at a site is a 64-bit
//!   atomic add (or a plain counter update the verifier fused into one, `Facts::plain_add`)
//!   to a map word the site determines, the add goes into a per-thread register of the
//!   kernel, one per map word ([`AccSlot`]); the kernel adds the register to the word at
//!   the thread's exits and before anything that could end the thread or make output
//!   ([`flush_text`]). The maps are those only ever added to by every program of the
//!   module ([`Eligible`]); in each kernel the weaver keeps a map's adds atomic when none
//!   of its sites is in a loop (`inject/weave.rs`, `once_only_maps`): once per thread,
//!   the atomic costs no more than the flush.
//! - **Forwarding.** A value the one entry probe that writes a map stores to a slot that
//!   only its own thread writes ([`FwSlot`]: keyed by the thread, or per thread or per
//!   warp by the map's layout) is copied into a kernel register as it is stored; a later
//!   load of that slot in the same thread takes the register instead of memory. The store
//!   itself stays. A body whose forwarded load is all it looks the slot up for starts
//!   past the lookup's null test when the register holds the value ([`FwSkip`], in
//!   `fuse/skip.rs`).
//!
//! [`plan`] finds both in one site body: a forward data-flow pass over the program's entry
//! function with the facts the verifier proved for the site (constants, branches that
//! always go one way, unreachable code), on a small domain of values (constants, frame
//! pointers, map references, map value pointers with their key and offset, the thread's
//! global id). It gives up on a loop (a backward jump): fusion is an optimisation, and
//! a body it does not understand is lowered as before.
//!
//! This file is the plan; the PTX a plan is lowered with (the forwarding lines, the
//! kernel's registers, [`flush_text`]) is in `fuse/text.rs`.

use super::{Granularity, Options};
use crate::inject::attach::{Attach, Point};
use crate::isa::table::{AluOp, AtomicOp, CallKind, Kind, Pseudo, Size, Src, Width};
use crate::program::{MapOrigin, Object};
use bpf2ptx_compiler::interp;
use bpf2ptx_runtime::MapKind;
use bpf2ptx_verifier::{Facts, PlainAdd, Regions, Verified};
use std::collections::{BTreeMap, BTreeSet};

mod skip;
mod text;

pub(super) use text::{
    addend_operand, forwarded_load_head, forwarded_store, fw_skip_head, shape_test,
    shape_test_lines, ShapeTest, SHAPE_PRED,
};
pub use text::{flush_text, kernel_registers};

/// The most accumulators one kernel gets: each is a 64-bit register live from the
/// kernel's entry to its exits, so past this many the registers cost more occupancy than
/// the atomics they save, and the weaver keeps that kernel's bodies unfused.
pub const MAX_ACCUMULATORS: usize = 16;

/// An 8-byte word of a map's storage that probes add to: `offset` bytes into map `map`'s
/// values (key x stride + the value's offset for an array; the offset in the section for
/// global data), in the replica of the thread's SM for a sharded array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccSlot {
    /// Map index in the object.
    pub map: u32,
    /// Byte offset of the word (a multiple of 8).
    pub offset: u64,
}

impl AccSlot {
    /// The kernel register that accumulates the adds to this word.
    pub fn register(&self) -> String {
        format!("%bpf2ptx_acc_{}_{}", self.map, self.offset)
    }
}

/// How a forwarded slot's key depends on the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyForm {
    /// A constant key (forwardable only in a per-unit array, whose slot is the unit's own).
    Const(u32),
    /// The low 32 bits of the global thread id (`get_global_thread_id()`).
    Thread,
    /// The low 32 bits of the global thread id shifted right by 5 (`gtid >> 5`), which
    /// names one warp when blocks are whole warps.
    WarpOfThread,
}

/// A map slot whose stored value is forwarded to later loads of the same thread: map
/// `map`, key `key`, the 8 bytes at `offset` in the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FwSlot {
    /// Map index in the object.
    pub map: u32,
    /// The key, as a function of the thread.
    pub key: KeyForm,
    /// Byte offset in the value (a multiple of 8).
    pub offset: u32,
}

impl FwSlot {
    fn tag(&self) -> String {
        let k = match self.key {
            KeyForm::Const(c) => format!("c{c}"),
            KeyForm::Thread => "t".into(),
            KeyForm::WarpOfThread => "w".into(),
        };
        format!("{}_{k}_{}", self.map, self.offset)
    }

    /// The kernel register holding the value this thread last stored to the slot.
    pub fn register(&self) -> String {
        format!("%bpf2ptx_fw_{}", self.tag())
    }

    /// The kernel register (`.b32`) that is 1 once this thread stored to the slot with
    /// nobody else able to store to it, 0 before.
    pub fn stored_register(&self) -> String {
        format!("%bpf2ptx_fws_{}", self.tag())
    }
}

/// What fusion changes in one site body. Empty: the body is lowered as without fusion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SitePlan {
    /// Atomic adds (and fused plain-update stores) that add to a register instead, by
    /// instruction index.
    pub accumulate: BTreeMap<usize, AccSlot>,
    /// Stores whose value is also copied into the slot's register, by instruction index.
    pub fw_store: BTreeMap<usize, FwSlot>,
    /// Loads that take the slot's register once this thread has stored to it.
    pub fw_load: BTreeMap<usize, FwSlot>,
    /// Where the body starts instead when a forwarded load's slot has been stored to: the
    /// key computation, lookup and null test that only serve the forwarded load skipped.
    pub fw_skip: Option<FwSkip>,
}

/// A jump over the start of a body that a forward makes moot (`fuse/skip.rs`):
/// when `slot`'s flag is set, the body starts at instruction `resume` (just past the null
/// test of the lookup whose value the forwarded load reads), else at its start as usual.
///
/// Why: at an exit probe that reads back what its entry probe stored (warp_time's start
/// time), the forwarded load needs only the register, yet the body still computed the key
/// (the global thread id, its shift, the frame store), looked it up and tested the result,
/// about 21 instructions a warp on vecadd's path (issue 19), more than the load saved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FwSkip {
    /// The forwarded slot whose flag decides.
    pub slot: FwSlot,
    /// The instruction the body resumes at (index in the program).
    pub resume: usize,
}

impl SitePlan {
    /// Whether fusion changes nothing in the body.
    pub fn is_empty(&self) -> bool {
        self.accumulate.is_empty()
            && self.fw_store.is_empty()
            && self.fw_load.is_empty()
            && self.fw_skip.is_none()
    }

    /// The accumulators the body adds to, sorted.
    pub fn accumulators(&self) -> Vec<AccSlot> {
        let set: BTreeSet<AccSlot> = self.accumulate.values().copied().collect();
        set.into_iter().collect()
    }

    /// The forwarded slots the body stores or loads, sorted.
    pub fn forwards(&self) -> Vec<FwSlot> {
        let set: BTreeSet<FwSlot> = self
            .fw_store
            .values()
            .chain(self.fw_load.values())
            .copied()
            .collect();
        set.into_iter().collect()
    }
}

/// Which maps of a module fusion may touch, decided once for the module from every
/// program's facts (module-level verification, which covers every site's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Eligible {
    /// Per map: adds to it may be accumulated. Every program only ever adds to the map
    /// (`Facts::map_only_adds`: 64-bit atomic adds without fetch, lookups, nothing else),
    /// so no probe can observe it mid-kernel; it is in device memory and not `live`
    /// (no host reads it while the kernel runs); an array that is not per SM (a per-CPU
    /// array's replicas are each observable, and a thread's SM may change) or global data.
    pub accumulate: Vec<bool>,
    /// Per map: the program (index) that is the only writer of the map and runs at kernel
    /// entry, when the map's slots may be forwarded: device memory, not `live`, an array
    /// (not per SM) or a per-thread or per-warp array.
    pub forward_writer: Vec<Option<usize>>,
}

/// The maps of `v`'s module fusion may touch under `opts` (nothing without
/// [`Options::fuse`]).
pub fn eligible(v: &Verified<'_>, opts: &Options) -> Eligible {
    let obj = v.object();
    let n = obj.maps.len();
    if !opts.fuse {
        return Eligible {
            accumulate: vec![false; n],
            forward_writer: vec![None; n],
        };
    }
    let flag = |xs: &Vec<bool>, k: usize| xs.get(k).copied().unwrap_or(false);
    let accumulate = (0..n)
        .map(|k| {
            let m = &obj.maps[k];
            let kind_ok = m.origin == MapOrigin::GlobalData
                || (m.is(MapKind::is_array_like)
                    && m.kind() != Some(MapKind::PercpuArray)
                    && m.key_size == 4);
            kind_ok
                && !flag(&opts.host, k)
                && !flag(&opts.live, k)
                && v.all_facts()
                    .all(|f| f.map_only_adds.get(k).copied().unwrap_or(false))
        })
        .collect();
    let forward_writer = (0..n)
        .map(|k| {
            let m = &obj.maps[k];
            let kind_ok = m.origin != MapOrigin::GlobalData
                && m.key_size == 4
                && matches!(
                    m.kind().map(MapKind::layout),
                    Some(
                        MapKind::Array
                            | MapKind::GpuArray
                            | MapKind::PerThreadArray
                            | MapKind::PerWarpArray
                    )
                );
            if !kind_ok || flag(&opts.host, k) || flag(&opts.live, k) {
                return None;
            }
            let writers: Vec<usize> = v
                .all_facts()
                .enumerate()
                .filter(|(_, f)| f.map_written.get(k).copied().unwrap_or(true))
                .map(|(p, _)| p)
                .collect();
            match writers[..] {
                [p] if point_of(obj, p) == Some(Point::Entry) => Some(p),
                _ => None,
            }
        })
        .collect();
    Eligible {
        accumulate,
        forward_writer,
    }
}

fn point_of(obj: &Object, p: usize) -> Option<Point> {
    Attach::from_section(&obj.programs.get(p)?.section).map(|a| a.point)
}

/// The thread's global id and values derived from it, tracked to recognise keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tid {
    /// `get_global_thread_id()`, 64 bits.
    Full,
    /// Its low 32 bits.
    Low32,
    /// `get_global_thread_id() >> 5`, 64 bits.
    Shr5,
    /// Its low 32 bits.
    Shr5Low32,
}

/// A map value pointer's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    /// A constant key (array lookups).
    Const(u32),
    /// A key derived from the thread's id.
    Tid(Tid),
    /// Global data, addressed directly (no key; the offset is from the section's start).
    Global,
}

/// What the pass knows about a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Val {
    Unknown,
    Const(u64),
    /// r10 + offset.
    Stack(i64),
    /// A map reference (`ld_imm64` of a map).
    Map(u32),
    /// A map value pointer (possibly NULL for a lookup whose result is not yet tested).
    Value {
        map: u32,
        key: Key,
        off: i64,
    },
    Tid(Tid),
}

impl Val {
    fn join(self, o: Val) -> Val {
        if self == o {
            self
        } else {
            Val::Unknown
        }
    }
}

/// The pass's state before one instruction: registers, and the frame's contents as whole
/// stores (offset from r10, size, value).
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    regs: [Val; 11],
    stack: Vec<(i64, u32, Val)>,
}

impl State {
    fn join(&self, o: &State) -> State {
        let regs = std::array::from_fn(|r| self.regs[r].join(o.regs[r]));
        let stack = self
            .stack
            .iter()
            .filter(|e| o.stack.contains(e))
            .copied()
            .collect();
        State { regs, stack }
    }

    /// Forgets what overlaps `[at, at + size)` and records the store.
    fn store(&mut self, at: i64, size: u32, v: Val) {
        self.forget(at, size);
        let v = match (v, size) {
            (Val::Const(c), s) if s < 8 => Val::Const(c & ((1u64 << (s * 8)) - 1)),
            (Val::Tid(Tid::Full | Tid::Low32), 4) => Val::Tid(Tid::Low32),
            (Val::Tid(Tid::Shr5 | Tid::Shr5Low32), 4) => Val::Tid(Tid::Shr5Low32),
            (v @ (Val::Const(_) | Val::Tid(_)), 8) => v,
            // Pointers spilled whole come back whole; anything narrower is not tracked.
            (v, 8) => v,
            _ => Val::Unknown,
        };
        if v != Val::Unknown {
            self.stack.push((at, size, v));
        }
    }

    fn forget(&mut self, at: i64, size: u32) {
        self.stack
            .retain(|&(a, s, _)| a + i64::from(s) <= at || at + i64::from(size) <= a);
    }

    /// The value of a load of `size` bytes at `at`: a whole store of that size there, or
    /// the bytes of a constant store that covers it.
    fn load(&self, at: i64, size: u32) -> Val {
        for &(a, s, v) in self.stack.iter().rev() {
            if a == at && s == size {
                return v;
            }
            if a <= at && at + i64::from(size) <= a + i64::from(s) {
                if let Val::Const(c) = v {
                    let shift = (at - a) * 8;
                    let bits = size * 8;
                    let mask = if bits == 64 {
                        u64::MAX
                    } else {
                        (1 << bits) - 1
                    };
                    return Val::Const((c >> shift) & mask);
                }
                return Val::Unknown;
            }
        }
        Val::Unknown
    }
}

/// What the pass found in one body, before the module's rules pick the plan.
#[derive(Default)]
struct Found {
    /// Adds to identified map words, by instruction.
    adds: BTreeMap<usize, (u32, Key, i64)>,
    /// Stores to identified map slots, by instruction: map, key, offset, whether 8 bytes.
    stores: BTreeMap<usize, (u32, Key, i64, bool)>,
    /// 8-byte loads from identified map slots, by instruction.
    loads: BTreeMap<usize, (u32, Key, i64)>,
    /// Something other than an identified add may update memory or make output: a store
    /// or atomic elsewhere than the frame, a helper or call with effects.
    other_effects: bool,
    /// Some map value may be written where the pass cannot say which.
    unknown_map_write: bool,
    /// The state before each instruction of the body (`None`: no path reaches it).
    states: Vec<Option<State>>,
    /// The entry function's instructions.
    body: std::ops::Range<usize>,
}

/// Helpers that only read the thread's state or their register arguments and return in
/// r0 (no memory, no output): the timers, SM, lane, warp and thread ids, the active mask,
/// log2.
const PURE_HELPERS: &[&str] = &[
    "ktime_get_ns",
    "get_smp_processor_id",
    "get_current_pid_tgid",
    "get_globaltimer",
    "get_sm_id",
    "get_warp_id",
    "get_lane_id",
    "get_active_mask",
    "clock64",
    "log2",
];
/// Helpers that store the x, y, z of a launch dimension through r1, r2, r3.
const XYZ_HELPERS: &[&str] = &[
    "get_block_idx",
    "get_block_dim",
    "get_thread_idx",
    "get_grid_dim",
];

/// The forward pass over program `pi`'s entry function under `facts`; `None` when the
/// body has a backward jump (a loop) or does something the pass does not model.
fn analyse(obj: &Object, pi: usize, facts: &Facts) -> Option<Found> {
    let prog = obj.programs.get(pi)?;
    let cfg = crate::cfg::Cfg::new(prog);
    let body = cfg.funcs().first()?.clone();
    let insns = &prog.insns;
    let mut before: Vec<Option<State>> = vec![None; insns.len()];
    let mut entry = State {
        regs: [Val::Unknown; 11],
        stack: Vec::new(),
    };
    entry.regs[10] = Val::Stack(0);
    before[body.start] = Some(entry);
    let mut found = Found::default();
    // Loads of a plain counter update read nothing fusion cares about; its add is
    // dropped by the lowering.
    let plain = |i: usize| facts.plain_add.get(i).copied().flatten();
    for i in body.clone() {
        // Cloned, not taken: the states stay for `skip::fw_skip`, which reads the frame
        // and the value pointers after the forwarded lookup's null test.
        let Some(st) = before[i].clone() else {
            continue;
        };
        if !facts.reached.get(i).copied().unwrap_or(false) {
            continue;
        }
        let ins = insns[i];
        let mut out = st.clone();
        let (d, s) = (ins.dst as usize, ins.src as usize);
        let constant = facts.const_value.get(i).copied().flatten();
        let mut succ: Vec<usize> = Vec::new();
        let next = i + 1;
        let mut falls = true;
        match ins.kind() {
            Kind::Alu(..) | Kind::Ldx(..)
                if matches!(plain(i), Some(PlainAdd::Load | PlainAdd::Add)) =>
            {
                out.regs[d] = Val::Unknown;
            }
            Kind::Alu(..) | Kind::Neg(_) | Kind::Endian(..) | Kind::Movsx(..) | Kind::Ldx(..)
                if constant.is_some() =>
            {
                out.regs[d] = Val::Const(constant.expect("guarded"));
            }
            Kind::Alu(op, w, src) => {
                let b = match src {
                    Src::X => st.regs[s],
                    Src::K => Val::Const(ins.imm as u64),
                };
                out.regs[d] = alu(op, w, st.regs[d], b);
            }
            Kind::Neg(w) => {
                out.regs[d] = match st.regs[d] {
                    Val::Const(c) => Val::Const(match w {
                        Width::W64 => c.wrapping_neg(),
                        Width::W32 => u64::from((c as u32).wrapping_neg()),
                    }),
                    _ => Val::Unknown,
                }
            }
            Kind::Endian(order, bits) => {
                out.regs[d] = match st.regs[d] {
                    Val::Const(c) => Val::Const(interp::endian(order, bits, c)),
                    _ => Val::Unknown,
                }
            }
            Kind::Movsx(w, bits) => {
                out.regs[d] = match st.regs[s] {
                    Val::Const(c) => {
                        let v = interp::sign_extend(c, bits);
                        Val::Const(match w {
                            Width::W64 => v,
                            Width::W32 => u64::from(v as u32),
                        })
                    }
                    _ => Val::Unknown,
                }
            }
            Kind::Ldx(size, signed) => {
                let n = size.bytes();
                out.regs[d] = match st.regs[s] {
                    Val::Stack(k) => match st.load(k + i64::from(ins.off), n) {
                        Val::Const(c) if signed => {
                            Val::Const(interp::sign_extend(c, (n * 8) as u8))
                        }
                        v => v,
                    },
                    Val::Value { map, key, off } if size == Size::DW && !signed => {
                        found.loads.insert(i, (map, key, off + i64::from(ins.off)));
                        Val::Unknown
                    }
                    _ => Val::Unknown,
                };
            }
            Kind::St(size) | Kind::Stx(size) => {
                let v = if matches!(ins.kind(), Kind::St(_)) {
                    Val::Const(ins.imm as u64)
                } else {
                    st.regs[s]
                };
                let base = st.regs[d];
                let at = i64::from(ins.off);
                match (base, plain(i)) {
                    (Val::Stack(k), _) => out.store(k + at, size.bytes(), v),
                    (Val::Value { map, key, off }, Some(PlainAdd::Store { .. })) => {
                        found.adds.insert(i, (map, key, off + at));
                    }
                    (Val::Value { map, key, off }, None) => {
                        found.other_effects = true;
                        found
                            .stores
                            .insert(i, (map, key, off + at, size == Size::DW));
                    }
                    _ => {
                        let regions = facts.regions.get(i).copied().unwrap_or(Regions::NONE);
                        if regions != Regions::STACK {
                            found.other_effects = true;
                            found.unknown_map_write |= regions.touches(Regions::MAP_VALUE);
                        }
                        // A store through a frame pointer at an unknown offset.
                        out.stack.clear();
                    }
                }
            }
            Kind::Atomic(size, op, fetch) => {
                let base = st.regs[d];
                let at = i64::from(ins.off);
                match base {
                    Val::Stack(k) => {
                        out.forget(k + at, size.bytes());
                    }
                    Val::Value { map, key, off }
                        if op == AtomicOp::Add && !fetch && size == Size::DW =>
                    {
                        found.adds.insert(i, (map, key, off + at));
                    }
                    _ => {
                        let regions = facts.regions.get(i).copied().unwrap_or(Regions::NONE);
                        if regions != Regions::STACK {
                            found.other_effects = true;
                            found.unknown_map_write |= regions.touches(Regions::MAP_VALUE);
                        }
                        out.stack.clear();
                    }
                }
                if fetch {
                    let r = if op == AtomicOp::Cmpxchg { 0 } else { s };
                    out.regs[r] = Val::Unknown;
                }
            }
            Kind::LdImm64(p) => {
                out.regs[d] = match p {
                    Pseudo::Imm64 => Val::Const(ins.imm as u64),
                    Pseudo::MapIdx => Val::Map(ins.imm as u32),
                    Pseudo::MapIdxValue => {
                        let map = ins.imm as u32;
                        match obj.maps.get(map as usize) {
                            Some(m) if m.origin == MapOrigin::GlobalData => Val::Value {
                                map,
                                key: Key::Global,
                                off: i64::from((ins.imm as u64 >> 32) as u32),
                            },
                            _ => Val::Unknown,
                        }
                    }
                    _ => Val::Unknown,
                };
            }
            Kind::Call(CallKind::Helper) => {
                let name = bpf2ptx_runtime::helper(ins.imm).map_or("", |h| h.name);
                let r0 = match name {
                    "map_lookup_elem" => lookup(obj, &st),
                    "get_global_thread_id" => Val::Tid(Tid::Full),
                    // A site's constant (mem_hist's access size) keeps its bucket known.
                    "log2" => match st.regs[1] {
                        Val::Const(c) => Val::Const(bpf2ptx_runtime::log2(c)),
                        _ => Val::Unknown,
                    },
                    n if PURE_HELPERS.contains(&n) => Val::Unknown,
                    n if XYZ_HELPERS.contains(&n) => {
                        for r in 1..=3 {
                            match st.regs[r] {
                                Val::Stack(k) => out.forget(k, 8),
                                _ => {
                                    found.other_effects = true;
                                    found.unknown_map_write = true;
                                }
                            }
                        }
                        Val::Unknown
                    }
                    _ => {
                        found.other_effects = true;
                        found.unknown_map_write = true;
                        out.stack.clear();
                        Val::Unknown
                    }
                };
                out.regs[0] = r0;
                for r in 1..=5 {
                    out.regs[r] = Val::Unknown;
                }
            }
            // A subprogram, a kfunc, or a helper chosen at run time: anything may happen.
            Kind::Call(_) | Kind::Callx => {
                found.other_effects = true;
                found.unknown_map_write = true;
                out.stack.clear();
                for r in out.regs.iter_mut().take(6) {
                    *r = Val::Unknown;
                }
            }
            Kind::Jmp(cond, w, src) => {
                let target = cfg.jump(insns, i)?.ok()?;
                if target <= i {
                    return None;
                }
                let taken = facts.branch_always.get(i).copied().flatten().or_else(|| {
                    let b = match src {
                        Src::X => st.regs[s],
                        Src::K => Val::Const(ins.imm as u64),
                    };
                    match (st.regs[d], b) {
                        (Val::Const(x), Val::Const(y)) => Some(interp::compare(cond, w, x, y)),
                        _ => None,
                    }
                });
                match taken {
                    Some(true) => {
                        succ.push(target);
                        falls = false;
                    }
                    Some(false) => {}
                    None => succ.push(target),
                }
            }
            Kind::Ja | Kind::Gotol => {
                let target = cfg.jump(insns, i)?.ok()?;
                if target <= i {
                    return None;
                }
                succ.push(target);
                falls = false;
            }
            Kind::Exit => falls = false,
            // A loop construct, legacy packet loads: not modelled.
            Kind::MayGoto | Kind::LdAbs(_) | Kind::LdInd(_) => return None,
        }
        if falls && next < body.end {
            succ.push(next);
        }
        for t in succ {
            before[t] = Some(match before[t].take() {
                None => out.clone(),
                Some(old) => old.join(&out),
            });
        }
    }
    found.states = before;
    found.body = body;
    Some(found)
}

/// The result of an inlined `map_lookup_elem` in state `st` (r1 the map, r2 the key's
/// frame slot), as far as the pass can say: a value pointer with its key for an array
/// lookup with a known key (NULL for a constant key out of range of a module-storage
/// array, as the lowering computes it), else unknown.
fn lookup(obj: &Object, st: &State) -> Val {
    let (Val::Map(map), Val::Stack(k)) = (st.regs[1], st.regs[2]) else {
        return Val::Unknown;
    };
    let Some(m) = obj.maps.get(map as usize) else {
        return Val::Unknown;
    };
    if !m.is(MapKind::is_array) || m.key_size != 4 {
        return Val::Unknown;
    }
    match st.load(k, 4) {
        Val::Const(c) if m.is(MapKind::is_array_like) && c >= u64::from(m.max_entries) => {
            Val::Const(0)
        }
        Val::Const(c) => Val::Value {
            map,
            key: Key::Const(c as u32),
            off: 0,
        },
        Val::Tid(t @ (Tid::Low32 | Tid::Shr5Low32)) => Val::Value {
            map,
            key: Key::Tid(t),
            off: 0,
        },
        _ => Val::Unknown,
    }
}

/// `a op b` at width `w` on what the pass knows.
fn alu(op: AluOp, w: Width, a: Val, b: Val) -> Val {
    match (op, w, a, b) {
        (AluOp::Mov, Width::W64, _, b) => b,
        (AluOp::Mov, Width::W32, _, Val::Const(c)) => Val::Const(u64::from(c as u32)),
        (AluOp::Mov, Width::W32, _, Val::Tid(Tid::Full | Tid::Low32)) => Val::Tid(Tid::Low32),
        (AluOp::Mov, Width::W32, _, Val::Tid(Tid::Shr5 | Tid::Shr5Low32)) => {
            Val::Tid(Tid::Shr5Low32)
        }
        (_, Width::W64, Val::Const(x), Val::Const(y)) => Val::Const(interp::alu64(op, x, y)),
        (_, Width::W32, Val::Const(x), Val::Const(y)) => {
            Val::Const(u64::from(interp::alu32(op, x as u32, y as u32)))
        }
        (AluOp::Add, Width::W64, Val::Stack(k), Val::Const(c)) => {
            Val::Stack(k.wrapping_add(c as i64))
        }
        (AluOp::Sub, Width::W64, Val::Stack(k), Val::Const(c)) => {
            Val::Stack(k.wrapping_sub(c as i64))
        }
        (AluOp::Add, Width::W64, Val::Value { map, key, off }, Val::Const(c)) => Val::Value {
            map,
            key,
            off: off.wrapping_add(c as i64),
        },
        (AluOp::Sub, Width::W64, Val::Value { map, key, off }, Val::Const(c)) => Val::Value {
            map,
            key,
            off: off.wrapping_sub(c as i64),
        },
        (AluOp::Rsh, Width::W64, Val::Tid(Tid::Full), Val::Const(5)) => Val::Tid(Tid::Shr5),
        _ => Val::Unknown,
    }
}

/// The fusion plan of program `pi`'s body at one site: `v` is the site's verification
/// (the module's with program `pi` verified again under the site's known context bytes),
/// `eligible` the module's [`eligible`] maps.
pub fn plan(v: &Verified<'_>, opts: &Options, pi: usize, eligible: &Eligible) -> SitePlan {
    let obj = v.object();
    let facts = v.facts(pi);
    if !opts.fuse || !facts.budget_heads.is_empty() {
        return SitePlan::default();
    }
    let Some(found) = analyse(obj, pi, facts) else {
        return SitePlan::default();
    };
    let mut plan = SitePlan::default();
    // Accumulation: every update of the body is an add to an eligible map's word.
    let slots: Option<BTreeMap<usize, AccSlot>> = found
        .adds
        .iter()
        .map(|(&i, &(map, key, off))| Some((i, acc_slot(obj, eligible, map, key, off)?)))
        .collect();
    if let Some(slots) = slots.filter(|_| !found.other_effects) {
        plan.accumulate = slots;
    }
    // Forwarding, stores: the map's one writer, at kernel entry, storing to one slot only
    // its own thread (or warp leader) writes.
    let prog = &obj.programs[pi];
    let gran = super::entry::entry_granularity(prog, opts);
    let mut written: BTreeMap<u32, BTreeSet<Option<FwSlot>>> = BTreeMap::new();
    for (&i, &(map, key, off, wide)) in &found.stores {
        let slot = (wide && eligible.forward_writer.get(map as usize) == Some(&Some(pi)))
            .then(|| fw_slot(obj, map, key, off, Some(gran)))
            .flatten();
        written.entry(map).or_default().insert(slot);
        if let Some(slot) = slot {
            plan.fw_store.insert(i, slot);
        }
    }
    // Every write of a forwarded map in the writer must be a store to the one slot; an add
    // to it, or a write the pass could not place, and nothing is forwarded.
    let single_function = prog.funcs.len() <= 1;
    plan.fw_store.retain(|_, s| {
        single_function
            && !found.unknown_map_write
            && !found.adds.values().any(|a| a.0 == s.map)
            && written.get(&s.map).is_some_and(|set| set.len() == 1)
    });
    // Forwarding, loads: of a slot whose writer is another program (or this one, earlier).
    for (&i, &(map, key, off)) in &found.loads {
        if eligible
            .forward_writer
            .get(map as usize)
            .copied()
            .flatten()
            .is_some()
        {
            if let Some(slot) = fw_slot(obj, map, key, off, None) {
                plan.fw_load.insert(i, slot);
            }
        }
    }
    plan.fw_skip = skip::fw_skip(obj, pi, facts, &found, &plan.fw_load);
    plan
}

/// The accumulator of an add to map `map`, key `key`, value offset `off`: an eligible
/// map's aligned, in-range 8-byte word.
fn acc_slot(obj: &Object, eligible: &Eligible, map: u32, key: Key, off: i64) -> Option<AccSlot> {
    if !eligible
        .accumulate
        .get(map as usize)
        .copied()
        .unwrap_or(false)
    {
        return None;
    }
    let m = obj.maps.get(map as usize)?;
    let value = u64::from(m.value_size);
    let off = u64::try_from(off).ok()?;
    if off % 8 != 0 || off + 8 > value {
        return None;
    }
    let offset = match key {
        Key::Global if m.origin == MapOrigin::GlobalData => off,
        Key::Const(k) if m.origin != MapOrigin::GlobalData && k < m.max_entries => {
            u64::from(k) * bpf2ptx_runtime::maps::round8(value) + off
        }
        _ => return None,
    };
    Some(AccSlot { map, offset })
}

/// The forwarded slot of a store (`writer`: the storing program's granularity) or a load
/// (`None`) of map `map`, key `key`, value offset `off`: where only the storing thread can
/// write the slot while its register is used. Plain arrays: keyed by the global thread id
/// (any granularity: one writer per thread) or by it shifted by 5 (per-warp or per-block
/// writers at kernel entry: one writer per warp when blocks are whole warps, which the
/// store checks at run time); per-thread arrays: any key (the slot is the thread's);
/// per-warp arrays: per-warp or per-block writers.
fn fw_slot(
    obj: &Object,
    map: u32,
    key: Key,
    off: i64,
    writer: Option<Granularity>,
) -> Option<FwSlot> {
    let m = obj.maps.get(map as usize)?;
    let off = u32::try_from(off).ok()?;
    if off % 8 != 0 || off + 8 > m.value_size {
        return None;
    }
    let key = match key {
        Key::Const(c) => KeyForm::Const(c),
        Key::Tid(Tid::Low32) => KeyForm::Thread,
        Key::Tid(Tid::Shr5Low32) => KeyForm::WarpOfThread,
        _ => return None,
    };
    let layout = m.kind().map(MapKind::layout)?;
    let per_warp_writer = matches!(writer, Some(Granularity::Warp | Granularity::Block));
    let ok = match (layout, key) {
        (MapKind::PerThreadArray, _) => true,
        (MapKind::PerWarpArray, _) => writer.is_none() || per_warp_writer,
        (MapKind::Array | MapKind::GpuArray, KeyForm::Thread) => true,
        (MapKind::Array | MapKind::GpuArray, KeyForm::WarpOfThread) => {
            writer.is_none() || per_warp_writer
        }
        _ => false,
    };
    ok.then_some(FwSlot {
        map,
        key,
        offset: off,
    })
}
