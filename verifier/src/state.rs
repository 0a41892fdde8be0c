//! The abstract state the verifier tracks along a path: registers, stack slots, call
//! frames and the ringbuf records a path holds.

use crate::scalar::Scalar;
use std::collections::HashMap;
use std::fmt;

/// What a pointer points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Region {
    /// The program's context (r1 at entry), `size` bytes.
    Ctx,
    /// The stack of call frame `frame` (0 = the entry function); offsets are relative to
    /// that frame's r10, so valid bytes are at -512..0.
    Stack {
        /// Frame index.
        frame: u8,
    },
    /// A value of map `map`.
    MapValue {
        /// Map index.
        map: u32,
    },
    /// The input memory of a bpf_conformance test (r1), read-write.
    Mem,
    /// A reserved ringbuf record of `size` bytes.
    Record {
        /// Record size.
        size: u32,
        /// Reference id (released by submit/discard).
        id: u32,
    },
    /// The current value of a numeric iterator (`bpf_iter_num_next`'s result): 4
    /// read-only bytes holding an `int` in `lo..=hi`. Read-only so that the program cannot
    /// move its own iterator, which is what bounds the loop.
    IterValue {
        /// Smallest value the iterator yields.
        lo: i32,
        /// Largest value the iterator yields.
        hi: i32,
    },
}

/// A register's abstract value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reg {
    /// Never written on this path: reading it is an error.
    Uninit,
    /// A number.
    Scalar(Scalar),
    /// A pointer: region plus byte offset (a scalar, so it may vary).
    Ptr(Region, Scalar),
    /// A map value pointer that may be NULL until checked; `id` ties together copies of
    /// the same lookup result so one check refines them all.
    MapValueOrNull {
        /// Map index.
        map: u32,
        /// Lookup id.
        id: u32,
    },
    /// A ringbuf record that may be NULL until checked.
    RecordOrNull {
        /// Record size.
        size: u32,
        /// Reference id.
        id: u32,
    },
    /// A map itself (only helpers take it).
    Map(u32),
    /// The address of function `k` of the program (`ld_imm64` with `src` 4): only
    /// `bpf_loop` takes it, as its callback.
    Func(usize),
}

impl Reg {
    /// A known constant.
    pub fn constant(v: u64) -> Reg {
        Reg::Scalar(Scalar::constant(v))
    }

    /// Whether this is a pointer of any kind.
    pub fn is_pointer(&self) -> bool {
        !matches!(self, Reg::Uninit | Reg::Scalar(_))
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reg::Uninit => f.write_str("uninit"),
            Reg::Scalar(s) => write!(f, "{s}"),
            Reg::Ptr(r, off) => {
                let name = match r {
                    Region::Ctx => "ctx".to_string(),
                    Region::Stack { frame } => format!("fp{frame}"),
                    Region::MapValue { map } => format!("map_value(map#{map})"),
                    Region::Mem => "mem".to_string(),
                    Region::Record { size, .. } => format!("ringbuf_record({size})"),
                    Region::IterValue { lo, hi } => format!("iter_value({lo}..={hi})"),
                };
                match off.as_const() {
                    Some(0) => f.write_str(&name),
                    Some(c) => write!(f, "{name}{:+}", c as i64),
                    None => write!(f, "{name}+{off}"),
                }
            }
            Reg::MapValueOrNull { map, .. } => write!(f, "map_value_or_null(map#{map})"),
            Reg::RecordOrNull { size, .. } => write!(f, "ringbuf_record_or_null({size})"),
            Reg::Map(m) => write!(f, "map_ptr(map#{m})"),
            Reg::Func(k) => write!(f, "func#{k}"),
        }
    }
}

/// One 8-byte stack slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A whole register spilled by an aligned 8-byte store: filled back exactly.
    Spill(Reg),
    /// Raw bytes; bit i set = byte i is initialised (its value unknown).
    Bytes(u8),
    /// Raw bytes as in [`Slot::Bytes`], where the `size` bytes from byte `at` (counted
    /// from the slot's lowest address) hold the low bytes of the number `value`: a
    /// narrow spill (`*(u32 *)(r10 - 4) = w1`), filled back by a load of the same size
    /// at the same place with its bounds.
    Narrow {
        /// Initialised bytes, as in [`Slot::Bytes`].
        mask: u8,
        /// Offset of the spilled bytes from the slot's lowest address.
        at: u8,
        /// Bytes spilled (1, 2 or 4).
        size: u8,
        /// The register spilled (its low `size` bytes are in the slot).
        value: Scalar,
    },
    /// A numeric iterator (`struct bpf_iter_num`, made by `bpf_iter_num_new`): opaque to
    /// the program (no load, store or helper may touch it) until `bpf_iter_num_destroy`.
    Iter {
        /// Identity: the same iterator on every copy of the state, a new one per `new`.
        id: u32,
        /// Smallest value it yields.
        lo: i32,
        /// Largest value it yields.
        hi: i32,
        /// The most values it yields (at most [`bpf2ptx_runtime::BPF_MAX_LOOPS`]).
        trips: u64,
        /// Slot index of the `new` call that made it, for diagnostics.
        at: usize,
    },
}

impl Slot {
    /// The initialised-byte mask of a slot of raw bytes, or of a spilled number (all
    /// bytes); `None` for a spilled pointer.
    pub fn init_mask(&self) -> Option<u8> {
        match self {
            Slot::Spill(Reg::Scalar(_)) => Some(0xff),
            Slot::Spill(_) | Slot::Iter { .. } => None,
            Slot::Bytes(m) | Slot::Narrow { mask: m, .. } => Some(*m),
        }
    }
}

/// Slots per frame (512 bytes).
pub const SLOTS: usize = 64;

/// One call frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// r0-r10.
    pub regs: [Reg; 11],
    /// Numbers known to differ by a constant: registers with the same nonzero id `k` in
    /// `links[r] = (k, delta)` hold `base + delta` (wrapping) for one unknown `base`, so a
    /// branch that narrows one narrows the others (`r2 = r1; r2 += 4; if r2 > n` bounds
    /// r1 too). Kept canonical by [`Frame::normalize_links`], so equal states compare equal.
    pub links: [(u32, u64); 11],
    /// The stack, slot 0 = bytes -8..-1 below r10, slot 63 = -512..-505; only as long as
    /// the deepest slot touched so far (the rest is uninitialised), which keeps the states
    /// the verifier copies and compares small.
    pub stack: Vec<Slot>,
    /// Index of the function (in the program's function list).
    pub func: usize,
    /// Instruction index to return to in the caller (unused for frame 0); for a
    /// `bpf_loop` callback's frame, the `bpf_loop` call itself (the loop's head).
    pub ret_to: usize,
    /// The frame is a `bpf_loop` callback's: its `exit` returns to the head of the loop
    /// without touching the caller's registers, and its r0 must be 0 or 1.
    pub callback: bool,
}

impl Frame {
    /// A fresh frame with uninitialised registers except r10.
    pub fn new(depth: u8, func: usize, ret_to: usize) -> Frame {
        let mut regs: [Reg; 11] = std::array::from_fn(|_| Reg::Uninit);
        regs[10] = Reg::Ptr(Region::Stack { frame: depth }, Scalar::constant(0));
        Frame {
            regs,
            links: [(0, 0); 11],
            stack: Vec::new(),
            func,
            ret_to,
            callback: false,
        }
    }

    /// `d = s` for a number: `d` joins `s`'s group of linked registers.
    pub fn link_copy(&mut self, d: u8, s: u8) {
        if d == s {
            return;
        }
        if self.links[s as usize].0 == 0 {
            let id = self.links.iter().map(|l| l.0).max().unwrap_or(0) + 1;
            self.links[s as usize] = (id, 0);
        }
        self.links[d as usize] = self.links[s as usize];
        self.normalize_links();
    }

    /// `d += k` keeps `d` in its group, `k` further from the others.
    pub fn link_add(&mut self, d: u8, k: u64) {
        let l = &mut self.links[d as usize];
        if l.0 != 0 {
            l.1 = l.1.wrapping_add(k);
            self.normalize_links();
        }
    }

    /// `d` got a value unrelated to the others.
    pub fn unlink(&mut self, d: u8) {
        if self.links[d as usize].0 != 0 {
            self.links[d as usize] = (0, 0);
            self.normalize_links();
        }
    }

    /// Canonical form: groups numbered 1, 2, ... in the order of their lowest register,
    /// that register's delta 0, and no group of one.
    pub fn normalize_links(&mut self) {
        let old = self.links;
        let mut map: Vec<(u32, u32, u64)> = Vec::new();
        for r in 0..11 {
            let (id, delta) = old[r];
            if id == 0 {
                continue;
            }
            let members = old.iter().filter(|l| l.0 == id).count();
            if members < 2 {
                self.links[r] = (0, 0);
                continue;
            }
            let (new, base) = match map.iter().find(|m| m.0 == id) {
                Some(m) => (m.1, m.2),
                None => {
                    map.push((id, map.len() as u32 + 1, delta));
                    (map.len() as u32, delta)
                }
            };
            self.links[r] = (new, delta.wrapping_sub(base));
        }
    }

    /// Stack slot `i` (uninitialised bytes beyond what was touched).
    pub fn slot(&self, i: usize) -> &Slot {
        const EMPTY: Slot = Slot::Bytes(0);
        self.stack.get(i).unwrap_or(&EMPTY)
    }

    /// Stack slot `i`, mutably (the stack grows to include it).
    pub fn slot_mut(&mut self, i: usize) -> &mut Slot {
        debug_assert!(i < SLOTS, "slot {i} beyond the 512-byte stack");
        if self.stack.len() <= i {
            self.stack.resize(i + 1, Slot::Bytes(0));
        }
        &mut self.stack[i]
    }
}

/// The state of one path at one instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct State {
    /// Call frames, the current one last.
    pub frames: Vec<Frame>,
    /// Ringbuf records reserved and not yet released: (id, slot index of the reserve).
    pub refs: Vec<(u32, usize)>,
}

impl State {
    /// The current frame.
    pub fn cur(&self) -> &Frame {
        self.frames.last().expect("a state always has a frame")
    }

    /// The current frame, mutably.
    pub fn cur_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a state always has a frame")
    }

    /// Whether register value `a` alone subsumes `b` (ids matched afresh).
    pub fn reg_subsumes_alone(a: &Reg, b: &Reg) -> bool {
        reg_subsumes(a, b, &mut Cmp::new(false))
    }

    /// Whether slot `a` alone subsumes `b` (ids matched afresh).
    pub fn slot_subsumes_alone(a: &Slot, b: &Slot) -> bool {
        slot_subsumes(a, b, &mut Cmp::new(false))
    }

    /// Brings every number the state holds (registers, pointer offsets, spilled values)
    /// into normal form ([`Scalar::normalize`]), which leaves the set of values each
    /// stands for unchanged. `false` when one of them turns out empty: the state stands for
    /// no execution, and it is left with that number as it was.
    pub fn normalize_numbers(&mut self) -> bool {
        fn reg(r: &mut Reg) -> bool {
            match r {
                Reg::Scalar(x) | Reg::Ptr(_, x) => normal(x),
                _ => true,
            }
        }
        fn normal(x: &mut Scalar) -> bool {
            let mut y = *x;
            y.normalize() && {
                *x = y;
                true
            }
        }
        self.frames.iter_mut().all(|f| {
            f.regs.iter_mut().all(reg)
                && f.stack.iter_mut().all(|slot| match slot {
                    Slot::Spill(r) => reg(r),
                    Slot::Narrow { value, .. } => normal(value),
                    Slot::Bytes(_) | Slot::Iter { .. } => true,
                })
        })
    }

    /// Whether every concrete state `other` stands for is also one `self` stands for, as far
    /// as the rest of the program can tell. Used only against states whose every path was
    /// already explored and accepted: a register or slot `self` has as uninitialised was
    /// then never read before being written, so any content in `other` is fine there.
    /// (Also used against a loop head's state whose exploration is under way:
    /// specs/verifier.md, "Loops".)
    pub fn subsumes(&self, other: &State) -> bool {
        self.subsumes_with(other, &[])
    }

    /// [`State::subsumes`] where only some registers' numeric values matter: `relevant[k]`
    /// is a bit set of the registers of frame `k` whose value can still influence a
    /// safety decision (a branch, an address, a checked helper argument, a divisor, a
    /// stack slot); a register outside it holding a number in both states matches whatever
    /// number it holds. A frame without an entry in `relevant` compares every register.
    pub fn subsumes_with(&self, other: &State, relevant: &[u16]) -> bool {
        self.subsumes_in(other, relevant, Cmp::new(false))
    }

    /// [`State::subsumes_with`] for an `other` whose numbers are normalized
    /// ([`State::normalize_numbers`]): its numbers are compared view by view
    /// ([`Scalar::subsumes_view_by_view`]), not normalized again for each comparison.
    pub fn subsumes_normalized(&self, other: &State, relevant: &[u16]) -> bool {
        self.subsumes_in(other, relevant, Cmp::new(true))
    }

    fn subsumes_in(&self, other: &State, relevant: &[u16], mut ids: Cmp) -> bool {
        if self.frames.len() != other.frames.len() || self.refs.len() != other.refs.len() {
            return false;
        }
        for (a, b) in self.refs.iter().zip(&other.refs) {
            if !ids.same(a.0, b.0) {
                return false;
            }
        }
        self.frames
            .iter()
            .zip(&other.frames)
            .enumerate()
            .all(|(k, (f, g))| {
                let mask = relevant.get(k).copied().unwrap_or(u16::MAX);
                f.func == g.func
                    && f.ret_to == g.ret_to
                    && f.callback == g.callback
                    && f.regs.iter().zip(&g.regs).enumerate().all(|(r, (a, b))| {
                        (mask & (1 << r) == 0 && matches!((a, b), (Reg::Scalar(_), Reg::Scalar(_))))
                            || reg_subsumes(a, b, &mut ids)
                    })
                    && links_implied(f, g, mask)
                    && (0..f.stack.len().max(g.stack.len()))
                        .all(|k| slot_subsumes(f.slot(k), g.slot(k), &mut ids))
            })
    }
}

/// Every relation between relevant registers that `f` knows (and an exploration from it
/// may have used to narrow one by a branch on the other) holds in `g` too.
fn links_implied(f: &Frame, g: &Frame, mask: u16) -> bool {
    for a in 0..11 {
        let (ia, da) = f.links[a];
        if ia == 0 || mask & (1 << a) == 0 {
            continue;
        }
        for b in a + 1..11 {
            let (ib, db) = f.links[b];
            if ib != ia || mask & (1 << b) == 0 {
                continue;
            }
            let ((ga, gda), (gb, gdb)) = (g.links[a], g.links[b]);
            if ga == 0 || ga != gb || gdb.wrapping_sub(gda) != db.wrapping_sub(da) {
                return false;
            }
        }
    }
    true
}

impl State {
    /// A hash of the state: equal states have equal fingerprints (the explorer looks for
    /// an exactly repeating state only among those with its own).
    /// foldhash with a fixed seed: fast, and the same on every run, so an exploration
    /// does not depend on a random seed. It hashes a part of what `==` compares, enough to
    /// tell apart the states a loop produces (a number's known bits and unsigned range,
    /// which nearly always change with its other views; not the links, which follow from
    /// the registers' history): the explorer computes it at every visit to a prune point
    /// inside a loop, and a collision only costs one full comparison.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        fn scalar(h: &mut impl Hasher, x: &Scalar) {
            (x.bits.value, x.bits.mask, x.umin, x.umax).hash(h);
        }
        fn reg(h: &mut impl Hasher, r: &Reg) {
            std::mem::discriminant(r).hash(h);
            match r {
                Reg::Uninit => {}
                Reg::Scalar(x) => scalar(h, x),
                Reg::Ptr(region, off) => {
                    region.hash(h);
                    scalar(h, off);
                }
                Reg::MapValueOrNull { map, id } => (map, id).hash(h),
                Reg::RecordOrNull { size, id } => (size, id).hash(h),
                Reg::Map(m) => m.hash(h),
                Reg::Func(k) => k.hash(h),
            }
        }
        let mut h = foldhash::fast::FixedState::with_seed(0).build_hasher();
        self.refs.hash(&mut h);
        for f in &self.frames {
            (f.func, f.ret_to, f.callback, f.stack.len()).hash(&mut h);
            f.regs.iter().for_each(|r| reg(&mut h, r));
            for slot in &f.stack {
                std::mem::discriminant(slot).hash(&mut h);
                match slot {
                    Slot::Spill(r) => reg(&mut h, r),
                    Slot::Bytes(m) => m.hash(&mut h),
                    Slot::Narrow {
                        mask,
                        at,
                        size,
                        value,
                    } => {
                        (mask, at, size).hash(&mut h);
                        scalar(&mut h, value);
                    }
                    Slot::Iter {
                        id,
                        lo,
                        hi,
                        trips,
                        at,
                    } => (id, lo, hi, trips, at).hash(&mut h),
                }
            }
        }
        h.finish()
    }
}

/// One comparison of two states: the bijection between their ids, and how numbers compare.
struct Cmp {
    ids: HashMap<u32, u32>,
    back: HashMap<u32, u32>,
    /// The second state's numbers are normalized ([`State::normalize_numbers`]).
    normalized: bool,
}

impl Cmp {
    fn new(normalized: bool) -> Cmp {
        Cmp {
            ids: HashMap::new(),
            back: HashMap::new(),
            normalized,
        }
    }

    /// Whether id `a` of the first state and `b` of the second correspond (the first time
    /// either is seen, they are paired).
    fn same(&mut self, a: u32, b: u32) -> bool {
        match (self.ids.get(&a), self.back.get(&b)) {
            (None, None) => {
                self.ids.insert(a, b);
                self.back.insert(b, a);
                true
            }
            (Some(&x), Some(&y)) => x == b && y == a,
            _ => false,
        }
    }

    /// Whether number `a` of the first state subsumes `b` of the second.
    fn number(&self, a: &Scalar, b: &Scalar) -> bool {
        if self.normalized {
            a.subsumes_view_by_view(b)
        } else {
            a.subsumes(b)
        }
    }
}

fn reg_subsumes(a: &Reg, b: &Reg, ids: &mut Cmp) -> bool {
    match (a, b) {
        (Reg::Uninit, _) => true,
        (Reg::Scalar(x), Reg::Scalar(y)) => ids.number(x, y),
        (Reg::Ptr(ra, oa), Reg::Ptr(rb, ob)) => {
            let same_region = match (ra, rb) {
                (Region::Record { size: s1, id: i1 }, Region::Record { size: s2, id: i2 }) => {
                    s1 == s2 && ids.same(*i1, *i2)
                }
                _ => ra == rb,
            };
            same_region && ids.number(oa, ob)
        }
        (Reg::MapValueOrNull { map: m1, id: i1 }, Reg::MapValueOrNull { map: m2, id: i2 }) => {
            m1 == m2 && ids.same(*i1, *i2)
        }
        (Reg::RecordOrNull { size: s1, id: i1 }, Reg::RecordOrNull { size: s2, id: i2 }) => {
            s1 == s2 && ids.same(*i1, *i2)
        }
        (Reg::Map(x), Reg::Map(y)) => x == y,
        (Reg::Func(x), Reg::Func(y)) => x == y,
        _ => false,
    }
}

fn slot_subsumes(a: &Slot, b: &Slot, ids: &mut Cmp) -> bool {
    match (a, b) {
        // Bytes `a` marks initialised must be initialised in `b` too, and `b` must not
        // hide a pointer where `a` has plain bytes.
        (Slot::Bytes(ma), Slot::Bytes(mb) | Slot::Narrow { mask: mb, .. }) => ma & !mb == 0,
        (Slot::Bytes(ma), Slot::Spill(r)) => *ma == 0 || matches!(r, Reg::Scalar(_)),
        // An uninitialised slot matches anything: its paths never read it (and an
        // iterator there is not one they may use).
        (Slot::Bytes(0), Slot::Iter { .. }) => true,
        // The same iterator (ids in bijection), yielding no value outside `a`'s and no
        // more of them.
        (
            Slot::Iter {
                id: ia,
                lo: la,
                hi: ha,
                trips: ta,
                ..
            },
            Slot::Iter {
                id: ib,
                lo: lb,
                hi: hb,
                trips: tb,
                ..
            },
        ) => ids.same(*ia, *ib) && la <= lb && hb <= ha && tb <= ta,
        (Slot::Iter { .. }, _)
        | (Slot::Bytes(_) | Slot::Narrow { .. } | Slot::Spill(_), Slot::Iter { .. }) => false,
        (Slot::Spill(ra), Slot::Spill(rb)) => reg_subsumes(ra, rb, ids),
        (Slot::Spill(Reg::Uninit), _) => true,
        (
            Slot::Narrow {
                mask: ma,
                at: aa,
                size: sa,
                value: va,
            },
            Slot::Narrow {
                mask: mb,
                at: ab,
                size: sb,
                value: vb,
            },
        ) => aa == ab && sa == sb && ma & !mb == 0 && ids.number(va, vb),
        (Slot::Spill(_), Slot::Bytes(_) | Slot::Narrow { .. })
        | (Slot::Narrow { .. }, Slot::Bytes(_) | Slot::Spill(_)) => false,
    }
}
