//! The hash map's slot protocol (specs/abi.md, "Hash maps"), checked over every
//! interleaving of a few threads on a sequentially consistent model of a tiny table.
//!
//! # What is modelled
//!
//! A table of `aux` slots (2 or 4, so that keys collide and overflow counts matter), each
//! a `state` (free, busy, full), a `meta` word (the home lock and the overflow count), a
//! key and a value, plus the `count` word of the counts block. Keys are small numbers
//! whose home slot the scenario gives (the hash is abstracted away: what matters is which
//! keys share a home and whose paths cross). Each thread runs a short program of
//! lookups, updates (`BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`) and deletes; every access
//! of the spec to shared memory is one atomic step:
//!
//! - find: the 8-byte header load of a slot (state and meta at once), then, for a full
//!   slot, the read of its key (a separate load: the slot may change in between);
//! - update in place: `atom.cas` full -> busy (with the key check that follows it, which
//!   reads a slot nobody else may write any more), then the copy with the `st.release`
//!   of full (the value is nobody's business but the final table's);
//! - insertion: the relaxed load of `count`, the `atom.add` that reserves, the give-back,
//!   the lock's `atom.or`, the find under the lock, per slot of the claim an `atom.cas`
//!   free -> busy and, for a slot passed, the `atom.add` of its overflow count, the key
//!   and value stores, the `st.release` of full, the unlock;
//! - delete and LRU eviction: the claim, one `atom.add` per overflow count given back,
//!   the `st.release` of free, the `count` decrement; an eviction's sample is one header
//!   load per slot, and the victim is any full slot the sample saw (the stamps are a
//!   heuristic written with plain stores, so every choice is explored).
//!
//! The memory model is sequential consistency: the model checks the protocol's logic,
//! not the acquire/release placement of the PTX (a weaker model only removes
//! behaviours... no: it adds them; what SC finds here is a floor, not a ceiling).
//!
//! Waits (a home lock, a slot claimed by another update or delete) are blocking: a
//! re-read that sees the same value changes nothing, so a waiting thread simply has no
//! step until the value changes. A state where threads are left but none can step is a
//! deadlock; a state from which no end state can be reached is a livelock; both fail.
//! The spec's give-up after `WAIT_SPINS` reads is not modelled (it is an escape hatch,
//! not part of the protocol's correctness).
//!
//! # What is checked
//!
//! The exploration is breadth-first with every state memoised, so a failure comes with a
//! shortest trace. At every state:
//!
//! - a key is in the map (in a full slot, or claimed for an update in place) in at most
//!   one slot;
//! - the spec's promise to find: a full key at slot `p` with home `h` keeps the overflow
//!   counts of `h .. p-1` at 1 or more; and exactly: every overflow count equals the
//!   counts that live keys hold on their paths plus those that inserters (passed it, not
//!   yet published) and deleters (not yet given back) hold in hand (ghost bookkeeping);
//! - `count` equals the keys in the map plus the reservations in hand plus the failed
//!   reservations not yet given back; so `count >= full slots`, and `count` minus those
//!   failed reservations is at most `max_entries`, as is the number of keys in the map
//!   (`count` itself may pass `max_entries` by the reservations that will be given back);
//! - a home lock is held by exactly one thread that is inside an insertion, and a thread
//!   between operations holds no lock, no count, no reservation.
//!
//! At every end state: no slot busy, `count` = full slots, each overflow count = the
//! keys passing over it, and the results and the final table are **linearizable**: some
//! order of all operations, consistent with each thread's program order and with real
//! time (an operation that returned before another was called comes first), run on a
//! sequential map of `max_entries` keys (LRU: evicting any key when full) gives the same
//! result for every operation and the same final keys and values. This covers the
//! per-operation promises: a lookup of a key inserted before it (same thread, or any
//! thread that returned before the lookup was called) and not deleted finds it; two
//! inserts of one key with `BPF_NOEXIST` give one 0 and one -EEXIST; -E2BIG only when some
//! order had `max_entries` keys at that point. -EBUSY (a claim scan that found no free
//! slot, an eviction that found no victim in its tries) is an operation that did
//! nothing; the tests say where it is reachable.
//!
//! # What it found (details at each test)
//!
//! 1. An update in place hides its key (busy reads as "not in the map yet"): a
//!    concurrent insertion of the same key, under its home lock, does not see it and
//!    inserts it into a second slot ([`spec_update_in_place_keeps_a_key_in_one_slot`]);
//!    a concurrent lookup misses a key that is in the map all along. Fix modelled: a
//!    fourth state, *held* (claimed, key live), which find treats as full.
//! 2. The reservation is taken before the home lock: a same-key insertion racing another
//!    gets -E2BIG when the map is one short of full, where it should get -EEXIST or
//!    update; in an LRU map both evict. Fix modelled: check and reserve `count` under the
//!    home lock, after the second find.
//! 3. find reads the header, then the key: a slot deleted and claimed again in between
//!    reads as a hit on a key that is not published yet. Fix modelled: a generation in the
//!    state word, and a re-check of the state after the key compare.
//! 4. Not fixed, stated: -E2BIG during a concurrent delete (a delete takes its key out of
//!    the map at its claim but gives its count back at the end), as in Linux; and a claim
//!    scan can be outrun by deletes and insertions (-EBUSY with `count <= max_entries`).

use bpf2ptx_runtime::maps::{BPF_ANY, BPF_EXIST, BPF_NOEXIST, E2BIG, EBUSY, EEXIST, ENOENT};
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::time::Instant;

/// LRU eviction: samples at most this many slots (spec: "read up to 16 slots").
const SAMPLE: u8 = 16;
/// LRU eviction: samples this many times before -EBUSY (spec: "8 tries").
const EVICT_TRIES: u8 = 8;

const OK: i8 = 0;
const HIT: i8 = 1;
const MISS: i8 = 0;
const PENDING: i8 = i8::MIN;

fn errno(e: i64) -> i8 {
    e as i8
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum St {
    Free,
    /// Claimed: being filled, deleted, or (as the spec has it) updated in place.
    Busy,
    Full,
    /// Fix 1 only: claimed by an update in place or a delete that has not yet checked
    /// the key; the key is still in the map, so find treats it as full.
    Held,
}

impl St {
    /// What find takes as holding a key.
    fn live(self) -> bool {
        matches!(self, St::Full | St::Held)
    }
    /// What a claim (`atom.cas` full -> ...) cannot take, and an update or delete waits for.
    fn claimed(self) -> bool {
        matches!(self, St::Busy | St::Held)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Slot {
    st: St,
    /// Fix 3 only (stays 0 otherwise): bumped by every claim free -> busy.
    gen: u8,
    lock: bool,
    /// The overflow count.
    ovf: u8,
    /// 0: never written (key numbers start at 1). Not cleared by a delete, as on the GPU.
    key: u8,
    val: u8,
    /// Ghost: the slots whose overflow counts this slot's key holds (bit per slot).
    path: u8,
    /// Ghost: the key here is in the map and holds one unit of `count`.
    unit: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Lookup(u8),
    Update(u8, u64),
    Delete(u8),
}

impl Op {
    fn key(self) -> u8 {
        match self {
            Op::Lookup(k) | Op::Update(k, _) | Op::Delete(k) => k,
        }
    }
}

fn look(k: u8) -> Op {
    Op::Lookup(k)
}
fn any(k: u8) -> Op {
    Op::Update(k, BPF_ANY)
}
fn noexist(k: u8) -> Op {
    Op::Update(k, BPF_NOEXIST)
}
fn exist(k: u8) -> Op {
    Op::Update(k, BPF_EXIST)
}
fn del(k: u8) -> Op {
    Op::Delete(k)
}

/// Which find is running, so its hit or miss knows where to go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Why {
    Lookup,
    /// Update, step 1.
    Update,
    /// Update, step 3: under the home lock.
    Locked,
    Delete,
}

/// What an unlock is followed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum After {
    /// The find under the lock found the key: -EEXIST or update in place.
    Found,
    /// Return this error.
    Refuse(i8),
    /// The key is published: return 0.
    Inserted,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    FindLoad(Why),
    FindKey(Why),
    /// Fix 3: re-load the state word after the key compare.
    FindRecheck(Why),
    /// Update in place: `atom.cas` full -> busy (held), and the key check.
    Claim,
    /// Update or delete: the slot it found is claimed by another; re-read until it is not.
    WaitSlot,
    /// A claim on a slot that held another key: give it back (`st.release` full).
    Restore,
    /// Copy the value, `st.release` full.
    InPlace,
    CountLoad,
    Reserve,
    /// A failed reservation given back.
    Refund,
    /// A found key's reservation given back (spec's step 3).
    GiveBack,
    Lock,
    Unlock(After),
    ScanCas,
    ScanPass,
    /// No free slot in `aux` probes: give the overflow counts back, one by one.
    ScanUndo,
    ScanRefund,
    Write,
    Publish,
    /// Negative control: the overflow counts taken after the publish.
    PostCount,
    Sample,
    Victim,
    DClaim,
    /// Fix 1: held -> busy once the key is known to be the one to delete.
    DLeave,
    Dec,
    Free,
    DCount,
    Done,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Th {
    /// Index of the current operation in the thread's program.
    op: u8,
    pc: Pc,
    started: bool,
    /// Probes of a find or claim scan, or slots sampled.
    n: u8,
    /// The last header load: overflow count and generation.
    ovf: u8,
    gen: u8,
    /// The slot found, claimed or chosen as victim.
    slot: u8,
    tries: u8,
    /// Full slots seen by this eviction sample.
    seen: u8,
    /// Negative control: slots passed, counted after the publish.
    passed: u8,
    /// Overflow counts held in hand (bit per slot); a claim scan's, or those a delete or
    /// eviction has yet to give back.
    held: u8,
    /// Units of `count` held in hand (a reservation, an evicted entry's, a deleted one's).
    units: u8,
    /// A failed reservation not yet given back.
    refund: bool,
    locked: bool,
}

impl Th {
    fn new(pc: Pc) -> Th {
        Th {
            op: 0,
            pc,
            started: false,
            n: 0,
            ovf: 0,
            gen: 0,
            slot: 0,
            tries: 0,
            seen: 0,
            passed: 0,
            held: 0,
            units: 0,
            refund: false,
            locked: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    slots: Vec<Slot>,
    count: u8,
    th: Vec<Th>,
    /// Per operation (global numbering): its result, or [`PENDING`].
    results: Vec<i8>,
    /// Per operation: the operations that had returned when it started (real time).
    before: Vec<u32>,
    /// Ghost, sticky: an insertion refused with -E2BIG while no other operation was in
    /// flight and the map held fewer than `max_entries` keys.
    bad_e2big: bool,
}

/// How the threads do it: the spec as written, its fixes, and negative controls.
#[derive(Clone, Copy, Debug)]
struct Protocol {
    name: &'static str,
    /// Insertions of a new key take the home lock (negative control: no lock).
    home_lock: bool,
    /// find stops at an overflow count of 0 (negative control: at the first free slot).
    overflow_stop: bool,
    /// Overflow counts taken while the claim scan passes (negative control: after the
    /// publish).
    count_before_publish: bool,
    /// Delete and eviction free the slot before giving the overflow counts back (the
    /// spec gives them back first).
    free_before_dec: bool,
    /// Fix 1: update in place and delete claim full -> held, not full -> busy.
    held_claim: bool,
    /// Fix 2: the count check and reservation after the find under the home lock.
    reserve_under_lock: bool,
    /// Fix 3: generation in the state word; find re-checks it after the key compare.
    recheck: bool,
}

/// specs/abi.md as written.
const SPEC: Protocol = Protocol {
    name: "spec",
    home_lock: true,
    overflow_stop: true,
    count_before_publish: true,
    free_before_dec: false,
    held_claim: false,
    reserve_under_lock: false,
    recheck: false,
};

/// The spec with the three fixes proposed here.
const FIXED: Protocol = Protocol {
    name: "fixed",
    held_claim: true,
    reserve_under_lock: true,
    recheck: true,
    ..SPEC
};

struct Scenario {
    name: &'static str,
    aux: u8,
    max: u8,
    lru: bool,
    /// Home slot of key `k` at index `k` (index 0 unused).
    homes: &'static [u8],
    /// Run to completion by one thread before the others start.
    setup: Vec<Op>,
    threads: Vec<Vec<Op>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A key in the map in two slots.
    Duplicate,
    /// A full key's path has an overflow count of 0, or its counts are not its path.
    Path,
    /// More than `max_entries` keys, or reservations.
    Capacity,
    /// A lock held by no one or by a thread outside an insertion; something kept by a
    /// thread between operations.
    Lock,
    /// The results and final table are no sequential run's.
    NotLinearizable,
    /// -E2BIG with no other operation in flight and room in the map.
    E2big,
    /// An end state with a busy slot, or counts that do not describe the table.
    Residue,
    Deadlock,
    Livelock,
    /// The ghost bookkeeping disagrees with the shared words: a bug of this model.
    Model,
}

#[derive(Debug)]
struct Failure {
    kind: Kind,
    what: String,
    trace: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{:?}: {}\n{}", self.kind, self.what, self.trace)
    }
}

#[derive(Debug, Default)]
struct Stats {
    states: usize,
    edges: usize,
    ends: usize,
    /// Distinct result vectors of the end states.
    outcomes: HashSet<Vec<i8>>,
    ebusy: bool,
    e2big: bool,
}

type Log = Option<Vec<String>>;

fn say(log: &mut Log, f: impl FnOnce() -> String) {
    if let Some(l) = log {
        l.push(f());
    }
}

fn bit(i: u8) -> u8 {
    1 << i
}

fn lowest(mask: u8) -> u8 {
    mask.trailing_zeros() as u8
}

struct Run<'a> {
    sc: &'a Scenario,
    p: Protocol,
    /// Per thread: (operation, global id).
    prog: Vec<Vec<(Op, usize)>>,
    /// Value written by operation `id`.
    vals: Vec<u8>,
}

impl<'a> Run<'a> {
    fn new(sc: &'a Scenario, p: Protocol, threads: &[Vec<Op>], val_base: u8) -> Run<'a> {
        let mut prog = vec![];
        let mut id = 0;
        for ops in threads {
            prog.push(
                ops.iter()
                    .map(|&o| {
                        id += 1;
                        (o, id - 1)
                    })
                    .collect(),
            );
        }
        let vals = (0..id).map(|i| val_base + i as u8).collect();
        Run { sc, p, prog, vals }
    }

    fn ops(&self) -> usize {
        self.vals.len()
    }

    fn home(&self, key: u8) -> u8 {
        self.sc.homes[key as usize]
    }

    /// `h .. p-1` modulo `aux`, as a bit mask.
    fn range(&self, h: u8, p: u8) -> u8 {
        let mut m = 0;
        let mut i = h;
        while i != p {
            m |= bit(i);
            i = (i + 1) % self.sc.aux;
        }
        m
    }

    fn start_pc(op: Op) -> Pc {
        Pc::FindLoad(match op {
            Op::Lookup(_) => Why::Lookup,
            Op::Update(..) => Why::Update,
            Op::Delete(_) => Why::Delete,
        })
    }

    fn start(&self, slots: Vec<Slot>, count: u8) -> State {
        State {
            slots,
            count,
            th: self
                .prog
                .iter()
                .map(|ops| Th::new(ops.first().map_or(Pc::Done, |&(o, _)| Self::start_pc(o))))
                .collect(),
            results: vec![PENDING; self.ops()],
            before: vec![0; self.ops()],
            bad_e2big: false,
        }
    }

    fn empty(&self) -> Vec<Slot> {
        let s = Slot {
            st: St::Free,
            gen: 0,
            lock: false,
            ovf: 0,
            key: 0,
            val: 0,
            path: 0,
            unit: false,
        };
        vec![s; self.sc.aux as usize]
    }

    /// Thread `t`'s next step: no state if it is done or waiting, several if it chooses.
    fn step(&self, s: &State, t: usize, log: &mut Log) -> Vec<State> {
        let me = &s.th[t];
        if me.pc == Pc::Done {
            return vec![];
        }
        let (op, id) = self.prog[t][me.op as usize];
        let key = op.key();
        let h = self.home(key);
        // A waiter's re-read that sees what it saw last time changes nothing: no step.
        match me.pc {
            Pc::Lock if s.slots[h as usize].lock => return vec![],
            Pc::WaitSlot if s.slots[me.slot as usize].st.claimed() => return vec![],
            _ => {}
        }
        // For the -E2BIG check: anybody else inside an operation, keys in the map.
        let others_busy = (0..s.th.len()).any(|u| u != t && s.th[u].started);
        let in_map = s.slots.iter().filter(|x| x.unit).count() as u8;
        let mut n = s.clone();
        if !n.th[t].started {
            n.th[t].started = true;
            let done = (0..self.ops())
                .filter(|&i| s.results[i] != PENDING)
                .fold(0, |m, i| m | 1 << i);
            n.before[id] = done;
            say(log, || format!("T{t} calls op {id}: {op:?}"));
        }
        let aux = self.sc.aux;
        let max = self.sc.max;
        let p = self.p;
        let v = self.vals[id];
        let lru = self.sc.lru;
        let nops = self.prog[t].len() as u8;
        let State {
            slots,
            count,
            th,
            results,
            bad_e2big,
            ..
        } = &mut n;
        let me = &mut th[t];
        let mut fanout = 0u8;
        let mut finish = |me: &mut Th, r: i8, log: &mut Log| {
            results[id] = r;
            say(log, || format!("T{t} op {id} returns {r}"));
            let next = me.op + 1;
            *me = Th::new(if next < nops {
                Self::start_pc(self.prog[t][next as usize].0)
            } else {
                Pc::Done
            });
            me.op = next;
        };
        // Continuations shared by several steps.
        let goto_lock = |me: &mut Th| {
            me.n = 0;
            me.pc = if p.home_lock {
                Pc::Lock
            } else {
                Pc::FindLoad(Why::Locked)
            };
        };
        // Where an insertion that holds a unit of count goes to claim a slot.
        let goto_claim = |me: &mut Th| {
            if p.reserve_under_lock {
                me.n = 0;
                me.pc = Pc::ScanCas;
            } else {
                goto_lock(me);
            }
        };
        let restart = |me: &mut Th, w: Why| {
            me.n = 0;
            me.pc = Pc::FindLoad(w);
        };
        // The stage after a delete's or eviction's claim (`held` = counts to give back).
        let after_claim = |me: &mut Th| {
            me.pc = if p.free_before_dec || me.held == 0 {
                Pc::Free
            } else {
                Pc::Dec
            };
        };
        let after_free = |me: &mut Th| {
            if p.free_before_dec && me.held != 0 {
                me.pc = Pc::Dec;
            } else if matches!(op, Op::Delete(_)) {
                me.pc = Pc::DCount;
            } else {
                goto_claim(me);
            }
        };
        let after_dec = |me: &mut Th| {
            if p.free_before_dec {
                if matches!(op, Op::Delete(_)) {
                    me.pc = Pc::DCount;
                } else {
                    goto_claim(me);
                }
            } else {
                me.pc = Pc::Free;
            }
        };
        match me.pc {
            Pc::FindLoad(w) => {
                let i = (h + me.n) % aux;
                let sl = &slots[i as usize];
                me.slot = i;
                me.ovf = sl.ovf;
                me.gen = sl.gen;
                say(log, || {
                    format!(
                        "T{t} find({key}) header of slot {i}: {:?}, overflow {}",
                        sl.st, sl.ovf
                    )
                });
                let stop = if p.overflow_stop {
                    sl.ovf == 0
                } else {
                    sl.st == St::Free
                };
                if sl.st.live() {
                    me.pc = Pc::FindKey(w);
                } else if stop || me.n + 1 == aux {
                    self.miss(me, w, op, &mut finish, &goto_lock, log);
                } else {
                    me.n += 1;
                }
            }
            Pc::FindKey(w) => {
                let i = me.slot;
                let k = slots[i as usize].key;
                say(log, || format!("T{t} find({key}) key of slot {i}: {k}"));
                if k == key {
                    if p.recheck {
                        me.pc = Pc::FindRecheck(w);
                    } else {
                        self.hit(me, w, op, &mut finish, log);
                    }
                } else if (p.overflow_stop && me.ovf == 0) || me.n + 1 == aux {
                    self.miss(me, w, op, &mut finish, &goto_lock, log);
                } else {
                    me.n += 1;
                    me.pc = Pc::FindLoad(w);
                }
            }
            Pc::FindRecheck(w) => {
                let sl = &slots[me.slot as usize];
                let same = sl.st.live() && sl.gen == me.gen;
                say(log, || {
                    format!(
                        "T{t} find({key}) re-reads slot {}: {:?} gen {}",
                        me.slot, sl.st, sl.gen
                    )
                });
                if same {
                    self.hit(me, w, op, &mut finish, log);
                } else {
                    restart(me, w);
                }
            }
            Pc::Claim | Pc::DClaim => {
                let i = me.slot as usize;
                let sl = &mut slots[i];
                let st = sl.st;
                let w = if me.pc == Pc::Claim {
                    Why::Update
                } else {
                    Why::Delete
                };
                if st == St::Full {
                    sl.st = if p.held_claim { St::Held } else { St::Busy };
                    let mine = sl.key == key;
                    say(log, || {
                        format!(
                            "T{t} cas slot {i} full -> {:?}: won, key {} ({})",
                            sl.st,
                            sl.key,
                            if mine { "mine" } else { "another's" }
                        )
                    });
                    if !mine {
                        me.pc = Pc::Restore;
                    } else if me.pc == Pc::Claim {
                        me.pc = Pc::InPlace;
                    } else if p.held_claim {
                        me.pc = Pc::DLeave;
                    } else {
                        me.held = sl.path;
                        me.units = 1;
                        sl.path = 0;
                        sl.unit = false;
                        after_claim(me);
                    }
                } else {
                    say(log, || {
                        format!("T{t} cas slot {i} full -> busy: lost ({st:?})")
                    });
                    if st.claimed() {
                        me.pc = Pc::WaitSlot;
                    } else {
                        restart(me, w);
                    }
                }
            }
            Pc::WaitSlot => {
                say(log, || {
                    format!("T{t} re-reads slot {}: no longer claimed", me.slot)
                });
                let w = if matches!(op, Op::Delete(_)) {
                    Why::Delete
                } else {
                    Why::Update
                };
                restart(me, w);
            }
            Pc::Restore => {
                slots[me.slot as usize].st = St::Full;
                say(log, || format!("T{t} gives slot {} back: full", me.slot));
                let w = if matches!(op, Op::Delete(_)) {
                    Why::Delete
                } else {
                    Why::Update
                };
                restart(me, w);
            }
            Pc::InPlace => {
                let sl = &mut slots[me.slot as usize];
                sl.val = v;
                sl.st = St::Full;
                say(log, || {
                    format!("T{t} writes value {v} into slot {}, full", me.slot)
                });
                finish(me, OK, log);
            }
            Pc::CountLoad => {
                let c = *count;
                say(log, || format!("T{t} loads count: {c}"));
                if c >= max {
                    self.refuse(me, &mut finish, log);
                } else {
                    me.pc = Pc::Reserve;
                }
            }
            Pc::Reserve => {
                let old = *count;
                *count += 1;
                say(log, || format!("T{t} atom.add count: {old} -> {}", old + 1));
                if old >= max {
                    me.refund = true;
                    me.pc = Pc::Refund;
                } else {
                    me.units = 1;
                    goto_claim(me);
                }
            }
            Pc::Refund => {
                *count -= 1;
                me.refund = false;
                say(log, || {
                    format!("T{t} gives the failed reservation back: count {}", *count)
                });
                self.refuse(me, &mut finish, log);
            }
            Pc::GiveBack => {
                *count -= 1;
                me.units = 0;
                say(log, || {
                    format!("T{t} gives its reservation back: count {}", *count)
                });
                self.goto_unlock(me, After::Found, op, &mut finish, log);
            }
            Pc::Lock => {
                slots[h as usize].lock = true;
                me.locked = true;
                say(log, || format!("T{t} takes the lock of slot {h}"));
                restart(me, Why::Locked);
            }
            Pc::Unlock(after) => {
                slots[h as usize].lock = false;
                me.locked = false;
                say(log, || format!("T{t} releases the lock of slot {h}"));
                self.after_unlock(me, after, op, &mut finish, log);
            }
            Pc::ScanCas => {
                let i = (h + me.n) % aux;
                let sl = &mut slots[i as usize];
                if sl.st == St::Free {
                    sl.st = St::Busy;
                    if p.recheck {
                        sl.gen += 1;
                    }
                    me.slot = i;
                    me.pc = Pc::Write;
                    say(log, || format!("T{t} cas slot {i} free -> busy: won"));
                } else {
                    say(log, || {
                        format!("T{t} cas slot {i} free -> busy: lost ({:?})", sl.st)
                    });
                    if p.count_before_publish {
                        me.pc = Pc::ScanPass;
                    } else {
                        me.passed |= bit(i);
                        self.scan_next(me);
                    }
                }
            }
            Pc::ScanPass => {
                let i = (h + me.n) % aux;
                slots[i as usize].ovf += 1;
                me.held |= bit(i);
                say(log, || {
                    format!("T{t} overflow of slot {i} += 1: {}", slots[i as usize].ovf)
                });
                self.scan_next(me);
            }
            Pc::ScanUndo => {
                let i = lowest(me.held);
                slots[i as usize].ovf -= 1;
                me.held &= !bit(i);
                say(log, || {
                    format!("T{t} overflow of slot {i} -= 1 (no slot found)")
                });
                if me.held == 0 {
                    me.pc = Pc::ScanRefund;
                }
            }
            Pc::ScanRefund => {
                *count -= 1;
                me.units = 0;
                say(log, || {
                    format!("T{t} no free slot: gives its reservation back")
                });
                if p.home_lock {
                    me.pc = Pc::Unlock(After::Refuse(errno(EBUSY)));
                } else {
                    finish(me, errno(EBUSY), log);
                }
            }
            Pc::Write => {
                let sl = &mut slots[me.slot as usize];
                sl.key = key;
                sl.val = v;
                say(log, || {
                    format!("T{t} writes key {key}, value {v} into slot {}", me.slot)
                });
                me.pc = Pc::Publish;
            }
            Pc::Publish => {
                let sl = &mut slots[me.slot as usize];
                sl.st = St::Full;
                sl.path = me.held;
                sl.unit = true;
                me.held = 0;
                me.units = 0;
                say(log, || format!("T{t} st.release slot {} full", me.slot));
                if me.passed != 0 {
                    me.pc = Pc::PostCount;
                } else {
                    self.goto_unlock(me, After::Inserted, op, &mut finish, log);
                }
            }
            Pc::PostCount => {
                let i = lowest(me.passed);
                slots[i as usize].ovf += 1;
                slots[me.slot as usize].path |= bit(i);
                me.passed &= !bit(i);
                say(log, || {
                    format!("T{t} overflow of slot {i} += 1 (after the publish)")
                });
                if me.passed == 0 {
                    self.goto_unlock(me, After::Inserted, op, &mut finish, log);
                }
            }
            Pc::Sample => {
                let i = (h + me.n) % aux;
                let st = slots[i as usize].st;
                if st == St::Full {
                    me.seen |= bit(i);
                }
                say(log, || format!("T{t} samples slot {i}: {st:?}"));
                me.n += 1;
                if me.n == SAMPLE.min(aux) {
                    if me.seen == 0 {
                        self.sample_again(me, &mut finish, log);
                    } else {
                        // The oldest stamp of those seen: any of them (below).
                        fanout = me.seen;
                        me.pc = Pc::Victim;
                    }
                }
            }
            Pc::Victim => {
                let q = me.slot;
                let sl = &mut slots[q as usize];
                if sl.st == St::Full {
                    sl.st = St::Busy;
                    me.held = sl.path;
                    me.units += 1;
                    sl.path = 0;
                    sl.unit = false;
                    say(log, || {
                        format!(
                            "T{t} evicts: cas slot {q} full -> busy: won, key {}",
                            sl.key
                        )
                    });
                    after_claim(me);
                } else {
                    say(log, || {
                        format!("T{t} evicts: cas slot {q} full -> busy: lost")
                    });
                    self.sample_again(me, &mut finish, log);
                }
            }
            Pc::DLeave => {
                let sl = &mut slots[me.slot as usize];
                sl.st = St::Busy;
                me.held = sl.path;
                me.units = 1;
                sl.path = 0;
                sl.unit = false;
                say(log, || {
                    format!("T{t} slot {} held -> busy (deleting)", me.slot)
                });
                after_claim(me);
            }
            Pc::Dec => {
                let i = lowest(me.held);
                slots[i as usize].ovf -= 1;
                me.held &= !bit(i);
                say(log, || {
                    format!("T{t} overflow of slot {i} -= 1: {}", slots[i as usize].ovf)
                });
                if me.held == 0 {
                    after_dec(me);
                }
            }
            Pc::Free => {
                slots[me.slot as usize].st = St::Free;
                say(log, || format!("T{t} st.release slot {} free", me.slot));
                after_free(me);
            }
            Pc::DCount => {
                *count -= 1;
                me.units = 0;
                say(log, || format!("T{t} count -= 1: {}", *count));
                finish(me, OK, log);
            }
            Pc::Done => unreachable!(),
        }
        if fanout == 0 {
            return vec![n];
        }
        (0..aux)
            .filter(|&q| fanout & bit(q) != 0)
            .map(|q| {
                let mut c = n.clone();
                c.th[t].slot = q;
                c
            })
            .collect()
    }

    fn hit(
        &self,
        me: &mut Th,
        w: Why,
        op: Op,
        finish: &mut impl FnMut(&mut Th, i8, &mut Log),
        log: &mut Log,
    ) {
        say(log, || format!("  -> hit at slot {}", me.slot));
        match w {
            Why::Lookup => finish(me, HIT, log),
            Why::Update => {
                if op == noexist(op.key()) {
                    finish(me, errno(EEXIST), log);
                } else {
                    me.pc = Pc::Claim;
                }
            }
            Why::Locked if self.p.reserve_under_lock => {
                self.goto_unlock(me, After::Found, op, finish, log)
            }
            Why::Locked => me.pc = Pc::GiveBack,
            Why::Delete => me.pc = Pc::DClaim,
        }
    }

    fn miss(
        &self,
        me: &mut Th,
        w: Why,
        op: Op,
        finish: &mut impl FnMut(&mut Th, i8, &mut Log),
        goto_lock: &impl Fn(&mut Th),
        log: &mut Log,
    ) {
        say(log, || "  -> miss".to_string());
        match w {
            Why::Lookup => finish(me, MISS, log),
            Why::Delete => finish(me, errno(ENOENT), log),
            Why::Update => {
                if op == exist(op.key()) {
                    finish(me, errno(ENOENT), log);
                } else if self.p.reserve_under_lock {
                    goto_lock(me);
                } else {
                    me.pc = Pc::CountLoad;
                }
            }
            Why::Locked => {
                me.n = 0;
                me.pc = if self.p.reserve_under_lock {
                    Pc::CountLoad
                } else {
                    Pc::ScanCas
                };
            }
        }
    }

    fn scan_next(&self, me: &mut Th) {
        me.n += 1;
        if me.n == self.sc.aux {
            me.pc = if me.held != 0 {
                Pc::ScanUndo
            } else {
                Pc::ScanRefund
            };
        } else {
            me.pc = Pc::ScanCas;
        }
    }

    /// The map is full: -E2BIG, or (LRU) evict.
    fn refuse(&self, me: &mut Th, finish: &mut impl FnMut(&mut Th, i8, &mut Log), log: &mut Log) {
        if self.sc.lru {
            me.n = 0;
            me.tries = 0;
            me.seen = 0;
            me.pc = Pc::Sample;
        } else if me.locked {
            me.pc = Pc::Unlock(After::Refuse(errno(E2BIG)));
        } else {
            if !others_busy && in_map < self.sc.max {
                *bad = true;
            }
            finish(me, errno(E2BIG), log);
        }
    }

    fn sample_again(
        &self,
        me: &mut Th,
        finish: &mut impl FnMut(&mut Th, i8, &mut Log),
        log: &mut Log,
    ) {
        me.tries += 1;
        me.n = 0;
        me.seen = 0;
        if me.tries < EVICT_TRIES {
            me.pc = Pc::Sample;
        } else if me.locked {
            me.pc = Pc::Unlock(After::Refuse(errno(EBUSY)));
        } else {
            let _ = (others_busy, in_map, bad);
            finish(me, errno(EBUSY), log);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn goto_unlock(
        &self,
        me: &mut Th,
        after: After,
        op: Op,
        finish: &mut impl FnMut(&mut Th, i8, &mut Log),
        log: &mut Log,
    ) {
        if self.p.home_lock {
            me.pc = Pc::Unlock(after);
        } else {
            self.after_unlock(me, after, op, finish, log);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn after_unlock(
        &self,
        me: &mut Th,
        after: After,
        op: Op,
        finish: &mut impl FnMut(&mut Th, i8, &mut Log),
        log: &mut Log,
    ) {
        match after {
            After::Found => {
                if op == noexist(op.key()) {
                    finish(me, errno(EEXIST), log);
                } else {
                    me.pc = Pc::Claim;
                }
            }
            After::Refuse(r) => {
                if r == errno(E2BIG) && !others_busy && in_map < self.sc.max {
                    *bad = true;
                }
                finish(me, r, log);
            }
            After::Inserted => finish(me, OK, log),
        }
    }

    /// The invariants of every state.
    fn check(&self, s: &State) -> Result<(), (Kind, String)> {
        let aux = self.sc.aux;
        let mut keys = HashSet::new();
        for (i, sl) in s.slots.iter().enumerate() {
            if sl.unit && !keys.insert(sl.key) {
                return Err((
                    Kind::Duplicate,
                    format!("key {} in two slots (one is {i})", sl.key),
                ));
            }
            if sl.st.live() && !sl.unit {
                return Err((Kind::Model, format!("slot {i} live without its unit")));
            }
        }
        for (p, sl) in s.slots.iter().enumerate() {
            if !sl.st.live() {
                continue;
            }
            let h = self.home(sl.key);
            let want = self.range(h, p as u8);
            for i in 0..aux {
                if want & bit(i) != 0 && s.slots[i as usize].ovf == 0 {
                    return Err((
                        Kind::Path,
                        format!(
                            "key {} at slot {p} (home {h}): slot {i} has overflow count 0",
                            sl.key
                        ),
                    ));
                }
            }
            if sl.path != want {
                return Err((
                    Kind::Path,
                    format!(
                        "key {} at slot {p} holds the counts of {:#b}, its path is {want:#b}",
                        sl.key, sl.path
                    ),
                ));
            }
        }
        for i in 0..aux {
            let held = s.slots.iter().filter(|x| x.path & bit(i) != 0).count()
                + s.th.iter().filter(|x| x.held & bit(i) != 0).count();
            if s.slots[i as usize].ovf as usize != held {
                return Err((
                    Kind::Model,
                    format!(
                        "overflow of slot {i} is {}, holders {held}",
                        s.slots[i as usize].ovf
                    ),
                ));
            }
        }
        let in_map = s.slots.iter().filter(|x| x.unit).count() as u8;
        let units: u8 = s.th.iter().map(|x| x.units).sum();
        let refunds = s.th.iter().filter(|x| x.refund).count() as u8;
        if s.count != in_map + units + refunds {
            return Err((
                Kind::Model,
                format!(
                    "count {} but {in_map} keys, {units} in hand, {refunds} to give back",
                    s.count
                ),
            ));
        }
        let full = s.slots.iter().filter(|x| x.st == St::Full).count() as u8;
        if in_map > self.sc.max || s.count - refunds > self.sc.max || s.count < full {
            return Err((
                Kind::Capacity,
                format!(
                    "{in_map} keys, count {} ({refunds} to give back), max {}",
                    s.count, self.sc.max
                ),
            ));
        }
        for i in 0..aux {
            let holders = (0..s.th.len())
                .filter(|&t| {
                    s.th[t].locked && self.home(self.prog[t][s.th[t].op as usize].0.key()) == i
                })
                .count();
            if s.slots[i as usize].lock != (holders == 1) || holders > 1 {
                return Err((Kind::Lock, format!("lock of slot {i}: {holders} holders")));
            }
        }
        for (t, x) in s.th.iter().enumerate() {
            if !x.started && (x.locked || x.held != 0 || x.units != 0 || x.refund) {
                return Err((
                    Kind::Lock,
                    format!("T{t} keeps something between operations"),
                ));
            }
        }
        if s.bad_e2big {
            return Err((Kind::E2big, "-E2BIG with room and nothing in flight".into()));
        }
        Ok(())
    }

    fn table(&self, slots: &[Slot]) -> Vec<(u8, u8)> {
        let mut m: Vec<(u8, u8)> = slots
            .iter()
            .filter(|x| x.unit)
            .map(|x| (x.key, x.val))
            .collect();
        m.sort();
        m
    }

    /// The end state's checks.
    fn check_end(&self, init: &[(u8, u8)], s: &State) -> Result<(), (Kind, String)> {
        if s.slots.iter().any(|x| x.st.claimed()) {
            return Err((Kind::Residue, "a slot still claimed".into()));
        }
        let full = s.slots.iter().filter(|x| x.st == St::Full).count() as u8;
        if s.count != full {
            return Err((Kind::Residue, format!("count {} with {full} keys", s.count)));
        }
        let fin = self.table(&s.slots);
        if !self.linearizable(init, &s.results, &s.before, &fin) {
            return Err((
                Kind::NotLinearizable,
                format!(
                    "results {:?} (ops {:?}), final table {fin:?} (key, value)",
                    s.results, self.prog
                ),
            ));
        }
        Ok(())
    }

    /// The sequential map: every outcome of `op` on `map`.
    fn seq(&self, map: &[(u8, u8)], op: Op, val: u8) -> Vec<(i8, Vec<(u8, u8)>)> {
        let k = op.key();
        let at = map.iter().position(|&(x, _)| x == k);
        let mut m = map.to_vec();
        match op {
            Op::Lookup(_) => vec![(if at.is_some() { HIT } else { MISS }, m)],
            Op::Delete(_) => match at {
                Some(i) => {
                    m.remove(i);
                    vec![(OK, m)]
                }
                None => vec![(errno(ENOENT), m)],
            },
            Op::Update(_, flags) => match at {
                Some(_) if flags == BPF_NOEXIST => vec![(errno(EEXIST), m)],
                Some(i) => {
                    m[i].1 = val;
                    vec![(OK, m)]
                }
                None if flags == BPF_EXIST => vec![(errno(ENOENT), m)],
                None if (m.len() as u8) < self.sc.max => {
                    m.push((k, val));
                    m.sort();
                    vec![(OK, m)]
                }
                None if !self.sc.lru => vec![(errno(E2BIG), m)],
                None => (0..m.len())
                    .map(|victim| {
                        let mut e = m.clone();
                        e.remove(victim);
                        e.push((k, val));
                        e.sort();
                        (OK, e)
                    })
                    .collect(),
            },
        }
    }

    /// Some order of the operations (program order, real time) run on the sequential map
    /// gives `results` and `fin`. An -EBUSY did nothing and may sit anywhere.
    fn linearizable(
        &self,
        init: &[(u8, u8)],
        results: &[i8],
        before: &[u32],
        fin: &[(u8, u8)],
    ) -> bool {
        let ops: Vec<(Op, u8, Option<usize>)> = self
            .prog
            .iter()
            .flat_map(|p| {
                p.iter()
                    .enumerate()
                    .map(|(j, &(o, id))| {
                        (
                            o,
                            self.vals[id],
                            if j > 0 { Some(p[j - 1].1) } else { None },
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        let all = (1u32 << ops.len()) - 1;
        let mut dead = HashSet::new();
        let mut stack = vec![(0u32, init.to_vec())];
        while let Some((done, map)) = stack.pop() {
            if done == all {
                if map == fin {
                    return true;
                }
                continue;
            }
            if !dead.insert((done, map.clone())) {
                continue;
            }
            for (id, &(o, val, prev)) in ops.iter().enumerate() {
                if done & 1 << id != 0
                    || prev.is_some_and(|q| done & 1 << q == 0)
                    || before[id] & !done != 0
                {
                    continue;
                }
                if results[id] == errno(EBUSY) {
                    stack.push((done | 1 << id, map.clone()));
                    continue;
                }
                for (r, m) in self.seq(&map, o, val) {
                    if r == results[id] {
                        stack.push((done | 1 << id, m));
                    }
                }
            }
        }
        false
    }

    fn succ(&self, s: &State, log: &mut Log) -> Vec<(u16, State)> {
        let mut out = vec![];
        for t in 0..s.th.len() {
            for (a, x) in self.step(s, t, log).into_iter().enumerate() {
                out.push(((t * 16 + a) as u16, x));
            }
        }
        out
    }

    /// The trace from `init` along `choices`, one line per step, and the state it ends in.
    fn replay(&self, init: &State, choices: &[u16]) -> String {
        let mut s = init.clone();
        let mut lines = vec![format!("start: {}", self.show(&s))];
        for &c in choices {
            let (t, a) = (c as usize / 16, c as usize % 16);
            let mut log = Some(vec![]);
            let next = self.step(&s, t, &mut log);
            lines.extend(log.unwrap().into_iter().map(|l| format!("  {l}")));
            s = next[a].clone();
        }
        lines.push(format!("end: {}", self.show(&s)));
        lines.join("\n")
    }

    fn show(&self, s: &State) -> String {
        let slots: Vec<String> = s
            .slots
            .iter()
            .enumerate()
            .map(|(i, x)| {
                format!(
                    "[{i}: {:?}{} ovf {}{}]",
                    x.st,
                    if x.st == St::Free {
                        String::new()
                    } else {
                        format!(" key {} val {}", x.key, x.val)
                    },
                    x.ovf,
                    if x.lock { " locked" } else { "" }
                )
            })
            .collect();
        format!("{} count {}", slots.join(" "), s.count)
    }

    /// Every interleaving from `start`: the stats, or the first broken promise with a
    /// shortest trace to it.
    fn explore(&self, start: State) -> Result<Stats, Failure> {
        let init = self.table(&start.slots);
        let mut index: HashMap<State, u32> = HashMap::new();
        let mut parent: Vec<(u32, u16)> = vec![];
        let mut edges: Vec<(u32, u32)> = vec![];
        let mut ends: Vec<u32> = vec![];
        let mut queue = VecDeque::new();
        let mut stats = Stats::default();
        index.insert(start.clone(), 0);
        parent.push((u32::MAX, 0));
        queue.push_back((0u32, start.clone()));
        let trace = |parent: &Vec<(u32, u16)>, mut j: u32| {
            let mut choices = vec![];
            while parent[j as usize].0 != u32::MAX {
                choices.push(parent[j as usize].1);
                j = parent[j as usize].0;
            }
            choices.reverse();
            self.replay(&start, &choices)
        };
        while let Some((j, s)) = queue.pop_front() {
            let bad = self.check(&s).and_then(|_| {
                if s.th.iter().all(|x| x.pc == Pc::Done) {
                    self.check_end(&init, &s)
                } else {
                    Ok(())
                }
            });
            if let Err((kind, what)) = bad {
                return Err(Failure {
                    kind,
                    what,
                    trace: trace(&parent, j),
                });
            }
            let next = self.succ(&s, &mut None);
            if next.is_empty() {
                if s.th.iter().any(|x| x.pc != Pc::Done) {
                    return Err(Failure {
                        kind: Kind::Deadlock,
                        what: "threads left, none can step".into(),
                        trace: trace(&parent, j),
                    });
                }
                ends.push(j);
                stats.outcomes.insert(s.results.clone());
                stats.ebusy |= s.results.contains(&errno(EBUSY));
                stats.e2big |= s.results.contains(&errno(E2BIG));
            }
            for (c, x) in next {
                let k = match index.get(&x) {
                    Some(&k) => k,
                    None => {
                        let k = parent.len() as u32;
                        index.insert(x.clone(), k);
                        parent.push((j, c));
                        queue.push_back((k, x));
                        k
                    }
                };
                edges.push((j, k));
            }
        }
        // Livelock: a state from which no end state is reachable.
        let n = parent.len();
        let mut rev: Vec<Vec<u32>> = vec![vec![]; n];
        for &(a, b) in &edges {
            rev[b as usize].push(a);
        }
        let mut live = vec![false; n];
        let mut todo = ends.clone();
        for &e in &ends {
            live[e as usize] = true;
        }
        while let Some(b) = todo.pop() {
            for &a in &rev[b as usize] {
                if !live[a as usize] {
                    live[a as usize] = true;
                    todo.push(a);
                }
            }
        }
        if let Some(j) = live.iter().position(|&l| !l) {
            return Err(Failure {
                kind: Kind::Livelock,
                what: "no end state reachable from here".into(),
                trace: trace(&parent, j as u32),
            });
        }
        stats.states = n;
        stats.edges = edges.len();
        stats.ends = ends.len();
        Ok(stats)
    }
}

impl Scenario {
    /// The table after `setup`, run alone on the protocol.
    fn table_after_setup(&self, p: Protocol) -> (Vec<Slot>, u8) {
        let run = Run::new(self, p, &[self.setup.clone()], 100);
        let mut s = run.start(run.empty(), 0);
        while s.th[0].pc != Pc::Done {
            s = run.step(&s, 0, &mut None).swap_remove(0);
        }
        assert!(
            s.results.iter().all(|&r| r == OK),
            "{}: setup failed: {:?}",
            self.name,
            s.results
        );
        (s.slots, s.count)
    }

    fn explore(&self, p: Protocol) -> Result<Stats, Failure> {
        let (slots, count) = self.table_after_setup(p);
        let run = Run::new(self, p, &self.threads, 10);
        let t0 = Instant::now();
        let out = run.explore(run.start(slots, count));
        let ms = t0.elapsed().as_millis();
        match &out {
            Ok(st) => println!(
                "{} [{}]: {} states, {} transitions, {} end states, {} outcomes, {ms} ms",
                self.name,
                p.name,
                st.states,
                st.edges,
                st.ends,
                st.outcomes.len()
            ),
            Err(f) => println!("{} [{}]: {:?} after {ms} ms", self.name, p.name, f.kind),
        }
        out
    }

    fn holds(&self, p: Protocol) -> Stats {
        match self.explore(p) {
            Ok(s) => s,
            Err(f) => panic!("{}: {f}", self.name),
        }
    }

    fn fails(&self, p: Protocol, kind: Kind) -> Failure {
        match self.explore(p) {
            Ok(_) => panic!(
                "{}: expected {kind:?}, every interleaving passed",
                self.name
            ),
            Err(f) => {
                println!("{}: {f}", self.name);
                assert_eq!(f.kind, kind, "{}: {f}", self.name);
                f
            }
        }
    }
}
