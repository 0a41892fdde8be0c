//! The map helpers on the device: PTX bodies of `map_lookup_elem`, `map_update_elem` and
//! `map_delete_elem`, and a CPU model of the hash map's storage.
//!
//! # Layouts
//!
//! The descriptor (eight 64-bit words) and the storage of every map kind are specified in
//! `specs/abi.md`, section "Maps (device runtime)"; this module implements that contract.
//! In short, the helpers read the descriptor as
//!
//! ```text
//! +0  u32 map type     +4  u32 map flags
//! +8  u32 key size     +12 u32 value size
//! +16 u32 max entries  +20 u32 value stride (value size rounded up to 8)
//! +24 u64 data         +32 u64 aux          +40 u64 aux2   +48 u64 drops   +56 reserved
//! ```
//!
//! and address the storage as
//!
//! - arrays (2, 1503): `data + index * stride`; sharded ones, and per-CPU arrays (6),
//!   which are per-SM on the GPU: `data + (smid & (aux - 1)) * aux2 + index * stride`;
//! - per-thread arrays (1502): `data + (index * aux + global_thread_id) * stride`;
//! - per-warp arrays (1600): `data + (index * aux + global_warp_id) * stride`, the global
//!   warp id being `linear_block * ceil(threads_per_block / 32) + linear_thread / 32`;
//! - hash maps (1, 1501, and LRU 9): `aux` slots of [`hash_slot_size`] bytes, each a u32
//!   state ([`SLOT_FREE`], [`SLOT_BUSY`], [`SLOT_FULL`], [`SLOT_HELD`]), a u32 meta word (the lock bit
//!   [`LOCK_BIT`] and an overflow count), the key (padded to 8) and the value; FNV-1a 64
//!   ([`fnv1a`]) of the key picks the home slot, `hash & (aux - 1)`; an LRU map has a u32
//!   stamp per slot after the slots. `aux2` points at the map's counts block
//!   ([`COUNTS_BYTES`]): the count of keys and, per SM shard, what went wrong.
//!
//! [`model::HashTable`] does the same on a byte vector, so a test can compare the
//! device's table, byte for byte, with the model's after the same sequence of operations.
//!
//! # Hash maps under concurrency
//!
//! The protocol is specified in `specs/abi.md`, "Hash maps"; in short:
//!
//! ```text
//!  lookup ── find: walk from home; full/held + key = hit; overflow count 0 = miss (no waits)
//!  update ── find ─ present ─ NOEXIST: -EEXIST │ else hold full->held, copy, publish
//!              └─ absent ── EXIST: -ENOENT │ count full and home lock free: -E2BIG
//!                   └─ home lock (held: sleep, start over) ─ find again ─ reserve count
//!                      (full: -E2BIG, LRU: evict) ─ claim free->busy from home,
//!                      overflow += 1 on every slot passed ─ write ─ publish ─ unlock
//!  delete ── find ─ hold full->held ─ busy ─ overflow -= 1 on the slots passed ─ free ─ count -= 1
//! ```
//!
//! *A key is live in one slot only*: only insertions of a new key write one, and all
//! insertions of key K hold the lock of K's home slot while they look for K and claim a
//! slot, so the second sees the first's slot (the lock's acquire orders it).
//!
//! *Deleted slots come back*: a lookup stops at the first slot whose overflow count is
//! 0, not at the first never-used slot, so a delete can free its slot outright; the counts
//! describe the live keys only, and a table after a million inserts and deletes walks as
//! far as a new one (about 1.5 slots for a hit and 2.5 for a miss at its largest load of
//! 1/2).
//!
//! *Nothing hangs*: every walk visits at most `aux` slots; a thread waits only for a home
//! lock or for a slot another thread claimed, both held for a few memory operations by a
//! thread that waits for nothing itself, so the wait ends under independent thread
//! scheduling (sm_70+); it is still bounded ([`WAIT_SPINS`] sleeps) and a wait that
//! times out returns -EBUSY and counts as `busy`.
//!
//! *What is not atomic*: values read through a lookup's pointer while another thread
//! updates them in place, and, as in Linux's preallocated hash maps, a pointer kept past
//! a delete of its key may point at a slot reused by another key.
//!
//! Publication uses `.gpu` scope in [`functions`]; a module with a map in host memory gets
//! [`functions_at`]`(Scope::Sys)`, whose release stores order a slot's key and value
//! before its state for a host reading the mapped memory while the kernel runs too.
//!
//! # Capacity and counts
//!
//! A hash map holds at most `max_entries` keys, decided from the count word without a
//! walk: the next insertion of a new key gets -E2BIG and counts as `full` (an LRU map
//! evicts the oldest of a sample of entries instead, and counts it as `evicted`). The
//! counters are warp-aggregated and sharded by SM ([`COUNT_SHARDS`] shards), so a probe
//! refusing a million inserts costs a few thousand atomics on different lines.

use crate::MapKind;

/// Map type id: hash map (Linux `BPF_MAP_TYPE_HASH`).
pub const MAP_HASH: u32 = MapKind::Hash.id();
/// Map type id: array (Linux `BPF_MAP_TYPE_ARRAY`).
pub const MAP_ARRAY: u32 = MapKind::Array.id();
/// Map type id: per-CPU array (Linux `BPF_MAP_TYPE_PERCPU_ARRAY`); per SM on the GPU: one
/// copy per SM (256 replicas, `smid & 255`), which the host reads replica by replica.
pub const MAP_PERCPU_ARRAY: u32 = MapKind::PercpuArray.id();
/// Map type id: LRU hash map (Linux `BPF_MAP_TYPE_LRU_HASH`): a hash map that evicts an
/// old entry instead of refusing an insertion when full.
pub const MAP_LRU_HASH: u32 = MapKind::LruHash.id();
/// Map type id: GPU hash map (bpftime).
pub const MAP_GPU_HASH: u32 = MapKind::GpuHash.id();
/// Map type id: per-thread array (bpftime): one copy of each element per thread.
pub const MAP_PER_THREAD_ARRAY: u32 = MapKind::PerThreadArray.id();
/// Lowest PTX ISA version of a module the map functions are pasted into: waits sleep with
/// `nanosleep` (6.3, sm_70).
pub const MIN_PTX: (u32, u32) = (6, 3);

/// Map type id: GPU array (bpftime).
pub const MAP_GPU_ARRAY: u32 = MapKind::GpuArray.id();
/// Map type id: per-warp array (bpf2ptx's own id): one copy of each element per warp of
/// the launch, sized by the host from the launch shape.
pub const MAP_PER_WARP_ARRAY: u32 = MapKind::PerWarpArray.id();

/// Whether `map_type` is one of the hash maps (1, 1501, 9): one storage layout, one
/// protocol, a counts block ([`MapKind::is_hash`]).
pub const fn is_hash(map_type: u32) -> bool {
    match MapKind::from_id(map_type) {
        Some(k) => k.is_hash(),
        None => false,
    }
}

/// `map_update_elem` flag: insert or replace.
pub const BPF_ANY: u64 = 0;
/// `map_update_elem` flag: insert only; -EEXIST if the key is present.
pub const BPF_NOEXIST: u64 = 1;
/// `map_update_elem` flag: replace only; -ENOENT if the key is absent.
pub const BPF_EXIST: u64 = 2;

/// `-ENOENT`: the key is not in the map.
pub const ENOENT: i64 = -2;
/// `-E2BIG`: the index is out of range, or the hash map holds `max_entries` keys.
pub const E2BIG: i64 = -7;
/// `-EBUSY`: a wait for a hash slot or lock timed out (counted as `busy`).
pub const EBUSY: i64 = -16;
/// `-EEXIST`: `BPF_NOEXIST` and the key is present (always, for arrays).
pub const EEXIST: i64 = -17;
/// `-EINVAL`: unbound map, bad flags, or an operation the map type does not have.
pub const EINVAL: i64 = -22;

/// Hash slot state: holds no key (never used, or freed by a delete).
pub const SLOT_FREE: u32 = 0;
/// Hash slot state: claimed by one thread, no live key: being filled or deleted.
pub const SLOT_BUSY: u32 = 1;
/// Hash slot state: holds a live key and its value.
pub const SLOT_FULL: u32 = 2;
/// Hash slot state: holds a live key, and one thread (an update in place, or a delete
/// checking the key) is its only writer; live for lookups and insertions like
/// [`SLOT_FULL`].
pub const SLOT_HELD: u32 = 3;
/// Bit of a hash slot's meta word: the lock of the keys whose home is this slot (held by
/// an insertion of a new key); the bits below it are the slot's overflow count.
pub const LOCK_BIT: u32 = 1 << 31;

/// How many times a thread sleeps waiting for a hash lock or slot before giving up
/// (-EBUSY): with sleeps of at most 1 us, about 65 ms.
pub const WAIT_SPINS: u32 = 65536;
/// How many times an update or delete starts again after the slot it found was freed or
/// reused, or its key was inserted meanwhile, before giving up (-EBUSY).
pub const UPDATE_ROUNDS: u32 = 8;
/// LRU eviction: slots read per sample.
pub const LRU_SAMPLE: u32 = 16;
/// LRU eviction: samples tried before giving up (-EBUSY).
pub const LRU_TRIES: u32 = 8;

/// Shards of a hash map's counters (`%smid & (COUNT_SHARDS - 1)`), each on its own line.
pub const COUNT_SHARDS: u32 = 32;
/// Bytes of a hash map's counts block: the count's line, then one 128-byte line per shard.
pub const COUNTS_BYTES: u64 = 128 + 128 * COUNT_SHARDS as u64;

/// Why a map operation did not do what the program asked, or what it did instead: the
/// counters of a hash map's counts block, in shard order (u64 word `reason as usize` of
/// each shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Count {
    /// An insertion refused: the map held `max_entries` keys (-E2BIG).
    Full = 0,
    /// An operation that gave up waiting for a lock or slot (-EBUSY).
    Busy = 1,
    /// LRU: an entry evicted to make room for an insertion.
    Evicted = 2,
}

impl Count {
    /// Every counter, in word order.
    pub const ALL: [Count; 3] = [Count::Full, Count::Busy, Count::Evicted];

    /// The counter's name in the loader's JSON and the hosts' output.
    pub const fn name(self) -> &'static str {
        match self {
            Count::Full => "full",
            Count::Busy => "busy",
            Count::Evicted => "evicted",
        }
    }

    /// Byte offset of this counter in shard `shard` of a counts block.
    pub const fn offset(self, shard: u32) -> u64 {
        128 + 128 * shard as u64 + 8 * self as u64
    }
}

/// Sums the shards of a counts block (the [`COUNTS_BYTES`] bytes read back from the
/// device): `(count, [full, busy, evicted])`.
pub fn read_counts(block: &[u8]) -> (u64, [u64; 3]) {
    let word = |at: u64| {
        let at = at as usize;
        block
            .get(at..at + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let mut sums = [0u64; 3];
    for (i, c) in Count::ALL.into_iter().enumerate() {
        sums[i] = (0..COUNT_SHARDS).map(|s| word(c.offset(s))).sum();
    }
    (word(0), sums)
}

/// Bytes of one replica of a sharded array: its values rounded up to whole 128-byte
/// lines, so SMs adding to their own replicas never contend for one line (descriptor
/// word 5 carries it).
pub const fn replica_bytes(max_entries: u32, value_size: u32) -> u64 {
    (max_entries as u64 * round8(value_size as u64)).div_ceil(128) * 128
}

/// `n` rounded up to a multiple of 8.
pub const fn round8(n: u64) -> u64 {
    (n + 7) & !7
}

/// FNV-1a 64 of `bytes`: the hash maps' hash function.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_BASIS, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// FNV-1a 64's offset basis.
pub const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64's prime.
pub const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Number of slots of a hash map (descriptor word 4): the next power of two ≥ 2 ×
/// `max_entries` (at least 1), so the load never exceeds 1/2.
pub fn hash_slots(max_entries: u32) -> u64 {
    (2 * u64::from(max_entries)).max(1).next_power_of_two()
}

/// Bytes of one hash slot: state and meta (8), key rounded up to 8, value stride.
pub fn hash_slot_size(key_size: u32, value_size: u32) -> u64 {
    8 + round8(u64::from(key_size)) + round8(u64::from(value_size))
}

/// Bytes of a hash map's storage: the slots, and for an LRU map (9) a u32 stamp per slot
/// after them (rounded up to 8 bytes).
pub fn hash_storage_size(map_type: u32, key_size: u32, value_size: u32, max_entries: u32) -> u64 {
    let slots = hash_slots(max_entries);
    let stamps = if map_type == MAP_LRU_HASH {
        round8(4 * slots)
    } else {
        0
    };
    slots * hash_slot_size(key_size, value_size) + stamps
}

/// PTX prototypes of the three map helpers and of the hash maps' own three (which a call
/// pinned to a hash map calls directly, [`HASH_HELPERS`]), for a module to declare before
/// its functions.
pub const MAP_DECLARATIONS: &str = "\
.func (.param .b64 ret) bpf2ptx_map_lookup_elem(.param .b64 desc, .param .b64 key);
.func (.param .b64 ret) bpf2ptx_map_update_elem(.param .b64 desc, .param .b64 key, \
.param .b64 value, .param .b64 flags);
.func (.param .b64 ret) bpf2ptx_map_delete_elem(.param .b64 desc, .param .b64 key);
.func (.param .b64 ret) bpf2ptx_map_hash_lookup(.param .b64 desc, .param .b64 key);
.func (.param .b64 ret) bpf2ptx_map_hash_update(.param .b64 desc, .param .b64 key, \
.param .b64 value, .param .b64 flags);
.func (.param .b64 ret) bpf2ptx_map_hash_delete(.param .b64 desc, .param .b64 key);
.func bpf2ptx_map_hash_note(.param .b64 desc, .param .b64 reason);
.func bpf2ptx_map_hash_stamp(.param .b64 desc, .param .b64 index);
";

/// Helper id (1 lookup, 2 update, 3 delete) to the hash maps' function with the generic
/// helper's arguments and results, including its checks (unbound map, bad flags): what
/// a call the verifier pinned to a hash map calls, skipping the type dispatch.
pub const HASH_HELPERS: [(u32, &str); 3] = [
    (1, "bpf2ptx_map_hash_lookup"),
    (2, "bpf2ptx_map_hash_update"),
    (3, "bpf2ptx_map_hash_delete"),
];

/// Registers of a probe function's *miss memo*: an [`inline_hash_lookup`] that missed in
/// a map that was full with the key's home lock free (both read before the walk, in
/// update's order) leaves its map (the descriptor's address, `%hm_d`), key word (`%hm_w`)
/// and counts block (a global address, `%hm_c`) here, valid while `%hm_v`. An
/// [`inline_hash_update`] of the same map and key word right after it (no call in
/// between: every other call clears the memo) knows the key was absent from a full map
/// and refuses at once, without a second walk or a load: the cost of the published
/// insert-or-increment probe's refusal.
pub const MEMO_REGS: &str =
    ".reg .b64 %hm_d;\n.reg .b64 %hm_w;\n.reg .b64 %hm_c;\n.reg .pred %hm_v;\n";
/// Invalidates the miss memo ([`MEMO_REGS`]).
pub const MEMO_CLEAR: &str = "setp.ne.u32 %hm_v, 0, 0;\n";

/// Whether a hash map's lookups and updates can be inlined ([`inline_hash_lookup`]):
/// keys of 1, 2, 4 or 8 bytes, which the fast path compares as one word, in a table of at
/// most 2^32 slots, whose slot indices the fast path keeps in 32 bits.
pub fn inlinable(key_size: u32, max_entries: u32) -> bool {
    matches!(key_size, 1 | 2 | 4 | 8) && hash_slots(max_entries) <= 1 << 32
}

/// The low 32 bits of FNV-1a ([`fnv1a`]) of the `key_size` low bytes of `word` (a
/// `.b64`) into `h` (a `.b32`), unrolled; `lo`, `hi` and `t` are scratch `.b32`s. Why 32
/// bits: the home slot is the hash modulo `aux`, a power of two of at most 2^32
/// ([`inlinable`]), and the low 32 bits of a product modulo 2^64 are the product of the
/// low 32 bits, so FNV-64's low half is FNV-1a with the basis and prime cut to 32 bits:
/// the same home, in a quarter of the multiplies.
fn fnv_word32(key_size: u32, word: &str, h: &str, lo: &str, hi: &str, t: &str) -> String {
    let basis = FNV_BASIS as u32;
    let prime = FNV_PRIME as u32;
    let mut s = format!("mov.b64 {{{lo}, {hi}}}, {word};\nmov.b32 {h}, {basis:#x};\n");
    for b in 0..key_size {
        let src = if b < 4 { lo } else { hi };
        let shift = 8 * (b % 4);
        s.push_str(&format!(
            "bfe.u32 {t}, {src}, {shift}, 8;\nxor.b32 {h}, {h}, {t};\nmul.lo.u32 {h}, {h}, {prime:#x};\n"
        ));
    }
    s
}

/// Where an inlined hash lookup ([`inline_hash_lookup`]) finds the map's storage and
/// counts block (descriptor words 3 and 5).
#[derive(Debug, Clone, Copy)]
pub enum HashAddrs<'a> {
    /// Loaded from the descriptor (a map in host memory, which the loader binds; 0 there
    /// means unbound: the lookup returns NULL).
    Descriptor,
    /// The module's own storage and counts block, their symbols as constant addresses:
    /// a map in device memory that no host rebinds.
    Symbols {
        /// The storage's symbol.
        data: &'a str,
        /// The counts block's symbol.
        counts: &'a str,
    },
    /// The map's address words (a `.const .u64[2]`: the storage, the counts block, as
    /// generic addresses), which a host that rebinds the map writes beside the
    /// descriptor: read from the constant bank.
    Words(&'a str),
}

/// PTX of `bpf_map_lookup_elem` on a hash map (1, 1501, 9) inlined at its call: the same
/// find as `bpf2ptx_map_hash_find`'s fast path (weak filter loads; a candidate decided by
/// the three ordered loads), with the map's key and value sizes as constants and the
/// key as a word already in a register. `desc` holds the descriptor's address (the
/// call's r1), `word` the key zero-extended, `out` gets the value's address or 0; `tag`
/// makes the labels unique in the function. A miss fills the miss memo ([`MEMO_REGS`])
/// when, read before the walk in update's order, the count was at `max_entries` and the
/// key's home lock was free: then no insertion of the key was in flight (one holds the
/// home lock from its place in the count until its key is published), so the walk's miss
/// stands for update's find. A hit, any other miss or an unbound map clears it (a memo
/// kept for every miss in a full map refused 12 of 1,048,576 increments of keys being
/// inserted meanwhile, on an H200: matrix rt_maps). LRU (9) stamps the hit slot through the runtime and keeps no memo (its
/// updates are not inlined).
#[allow(clippy::too_many_arguments)]
pub fn inline_hash_lookup(
    desc: &str,
    addrs: HashAddrs<'_>,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    lru: bool,
    word: &str,
    out: &str,
    tag: &str,
    scope: crate::Scope,
) -> String {
    let slot = hash_slot_size(key_size, value_size);
    let value_at = 8 + round8(u64::from(key_size));
    // Slot indices in 32 bits ([`inlinable`]): `%hh0` the slot, `%hh1` the slots probed
    // before it; the table's `aux` is the constant [`hash_slots`] (specs/abi.md).
    let mask = hash_slots(max_entries) - 1;
    let mut s = String::from(
        "{\n.reg .b64 %hk<9>;\n.reg .b32 %hw<4>;\n.reg .b32 %hh<5>;\n.reg .pred %hq<3>;\n",
    );
    s.push_str(&fnv_word32(key_size, word, "%hh0", "%hh2", "%hh3", "%hh4"));
    // The storage into %hk2 and the counts block into %hk1 (global addresses).
    let (storage, counts) = match addrs {
        HashAddrs::Descriptor => (
            format!(
                "cvta.to.global.u64 %hk8, {desc};\nld.global.b64 %hk2, [%hk8+{data}];\n\
                 setp.eq.u64 %hq0, %hk2, 0;\n@%hq0 bra {tag}done;\ncvta.to.global.u64 %hk2, %hk2;\n",
                data = crate::desc::DATA,
            ),
            format!(
                "ld.global.b64 %hk1, [%hk8+{aux2}];\nsetp.eq.u64 %hq1, %hk1, 0;\n@%hq1 bra {tag}probe;\n\
                 cvta.to.global.u64 %hk1, %hk1;\n",
                aux2 = crate::desc::AUX2,
            ),
        ),
        HashAddrs::Symbols { data, counts } => (
            format!("mov.u64 %hk2, {data};\n"),
            format!("mov.u64 %hk1, {counts};\n"),
        ),
        HashAddrs::Words(words) => (
            format!("ld.const.u64 %hk2, [{words}];\ncvta.to.global.u64 %hk2, %hk2;\n"),
            format!("ld.const.u64 %hk1, [{words}+8];\ncvta.to.global.u64 %hk1, %hk1;\n"),
        ),
    };
    s.push_str(&format!(
        "mov.u64 {out}, 0;\nsetp.ne.u32 %hm_v, 0, 0;\n{storage}\
         and.b32 %hh0, %hh0, {mask};\nmov.u32 %hh1, 0;\n\
         setp.ne.u32 %hq2, 0, 0;\n",
    ));
    // The memo's condition, read before the walk as update reads it before its find:
    // the count at max_entries, then the home lock free (an insertion holds its key's
    // home lock from its place in the count until its key is published).
    if !lru {
        s.push_str(&format!(
            "{counts}mov.u64 %hm_c, %hk1;\nld.global.u64 %hk1, [%hk1];\nsetp.ge.u64 %hq2, %hk1, {max_entries};\n\
             mad.wide.u32 %hk7, %hh0, {slot}, %hk2;\n\
             ld.global.v2.b32 {{%hw0, %hw1}}, [%hk7];\nld.global.b64 %hk8, [%hk7+8];\n\
             and.b32 %hw3, %hw1, 0x80000000;\nsetp.eq.and.u32 %hq2, %hw3, 0, %hq2;\n",
        ));
    } else {
        s.push_str(&format!(
            "mad.wide.u32 %hk7, %hh0, {slot}, %hk2;\n\
             ld.global.v2.b32 {{%hw0, %hw1}}, [%hk7];\nld.global.b64 %hk8, [%hk7+8];\n"
        ));
    }
    // The check of a slot whose key word matched, with acquire: the state, the key, the
    // state again (a writer may have been between), on to `found` (what follows, or a
    // jump there), else to `next`.
    let check = |at: &str, next: &str, then: &str| {
        format!(
            "{at}:\n\
             ld.acquire.gpu.global.b32 %hw2, [%hk7];\nld.acquire.gpu.global.b64 %hk8, [%hk7+8];\n\
             ld.relaxed.gpu.global.b32 %hw3, [%hk7];\nand.b32 %hw2, %hw2, %hw3;\nand.b32 %hw2, %hw2, 2;\n\
             setp.ne.u32 %hq1, %hw2, 0;\nsetp.eq.and.u64 %hq1, %hk8, {word}, %hq1;\n\
             @!%hq1 bra {next};\n{then}"
        )
    };
    // The home slot, decided before the walk, its check included: its key (a hit) or its
    // empty overflow count (a miss) settles most lookups, which then never enter the
    // walk's loop. Why peel it: ptxas gives a loop a `YIELD`, and a thread that yields at
    // a block's entry while the application's other warps compute waits for them
    // (measured: ~50 us at every block entry of latency_app on an H100,
    // benches/results/gpu-2026-12-07.md, session 17).
    s.push_str(&format!(
        "and.b32 %hw2, %hw0, 2;\nsetp.ne.u32 %hq1, %hw2, 0;\n\
         setp.eq.and.u64 %hq1, %hk8, {word}, %hq1;\n@%hq1 bra {tag}hcheck;\n\
         {tag}hnext:\n\
         and.b32 %hw1, %hw1, 0x7fffffff;\nsetp.eq.u32 %hq1, %hw1, 0;\n@%hq1 bra {tag}miss;\n\
         bra.uni {tag}advance;\n{hcheck}",
        hcheck = check(
            &format!("{tag}hcheck"),
            &format!("{tag}hnext"),
            &format!("bra.uni {tag}found;\n")
        ),
    ));
    // The walk: the later slots, each decided the same way, at most the whole table.
    s.push_str(&format!(
        "{tag}probe:\n\
         mad.wide.u32 %hk7, %hh0, {slot}, %hk2;\n\
         ld.global.v2.b32 {{%hw0, %hw1}}, [%hk7];\nld.global.b64 %hk8, [%hk7+8];\n\
         and.b32 %hw2, %hw0, 2;\nsetp.ne.u32 %hq1, %hw2, 0;\n\
         setp.eq.and.u64 %hq1, %hk8, {word}, %hq1;\n@%hq1 bra {tag}check;\n\
         {tag}next:\n\
         and.b32 %hw1, %hw1, 0x7fffffff;\nsetp.eq.u32 %hq1, %hw1, 0;\n@%hq1 bra {tag}miss;\n\
         {tag}advance:\n\
         setp.eq.u32 %hq1, %hh1, {mask};\n@%hq1 bra {tag}miss;\nadd.u32 %hh1, %hh1, 1;\n\
         add.u32 %hh0, %hh0, 1;\nand.b32 %hh0, %hh0, {mask};\nbra.uni {tag}probe;\n\
         {check}{tag}found:\ncvta.global.u64 {out}, %hk7;\nadd.u64 {out}, {out}, {value_at};\n",
        check = check(&format!("{tag}check"), &format!("{tag}next"), ""),
    ));
    if lru {
        s.push_str(&format!(
            "{{\n.param .b64 a0;\n.param .b64 a1;\nst.param.b64 [a0], {desc};\n\
             cvt.u64.u32 %hk5, %hh0;\nst.param.b64 [a1], %hk5;\ncall bpf2ptx_map_hash_stamp, (a0, a1);\n}}\n"
        ));
    }
    s.push_str(&format!(
        "bra.uni {tag}done;\n{tag}miss:\nmov.pred %hm_v, %hq2;\nmov.u64 %hm_d, {desc};\n\
         mov.u64 %hm_w, {word};\n{tag}done:\n}}\n"
    ));
    scope.apply(&s).into_owned()
}

/// PTX of the fast refusal of `bpf_map_update_elem` on a plain hash map (1, 1501) inlined
/// at its call, as the text before and the text after the runtime's update (the caller's
/// call, which goes between them and runs when the refusal does not apply; the text after
/// clears the memo): when the miss memo ([`MEMO_REGS`]) holds this map and key word,
/// `BPF_ANY` or `BPF_NOEXIST` (`flags`, a `.b64`) refuses at once: -E2BIG into `out`,
/// counted `full` in the calling SM's shard by one `red` per converged group (the site's
/// map: every lane of the group adds to the same word); `BPF_EXIST` gives -ENOENT.
/// Anything else runs the runtime's update. The refusal is what update's own refusal
/// decides from the same loads in the same order (count, home lock, find), made by the
/// lookup (specs/abi.md "What is not linearizable": an insertion of the key racing the
/// pair may be missed).
#[allow(clippy::too_many_arguments)]
pub fn inline_hash_update(
    desc: &str,
    word: &str,
    flags: &str,
    out: &str,
    tag: &str,
    scope: crate::Scope,
) -> (String, String) {
    let head = format!(
        "{{\n.reg .b64 %hf<3>;\n.reg .b32 %hg<3>;\n.reg .pred %hr<2>;\n\
         @!%hm_v bra {tag}slow;\nsetp.ne.u64 %hr0, {word}, %hm_w;\n\
         setp.ne.or.u64 %hr0, {desc}, %hm_d, %hr0;\nsetp.gt.or.u64 %hr0, {flags}, 2, %hr0;\n\
         @%hr0 bra {tag}slow;\n\
         mov.u64 {out}, -2;\nsetp.eq.u64 %hr1, {flags}, 2;\n@%hr1 bra {tag}done;\n\
         mov.u32 %hg0, %smid;\nand.b32 %hg0, %hg0, {shard_mask};\n\
         mad.wide.u32 %hf2, %hg0, 128, %hm_c;\nactivemask.b32 %hg0;\npopc.b32 %hg1, %hg0;\n\
         mov.u32 %hg2, %lanemask_lt;\nand.b32 %hg2, %hg2, %hg0;\nsetp.eq.u32 %hr0, %hg2, 0;\n\
         cvt.u64.u32 %hf1, %hg1;\n@%hr0 red.relaxed.gpu.global.add.u64 [%hf2+{full}], %hf1;\n\
         mov.u64 {out}, -7;\nbra.uni {tag}done;\n{tag}slow:\n",
        shard_mask = COUNT_SHARDS - 1,
        full = Count::Full.offset(0),
    );
    let tail = format!("{MEMO_CLEAR}{tag}done:\n}}\n");
    (scope.apply(&head).into_owned(), tail)
}

/// PTX prototypes of the three map helpers (see [`MAP_DECLARATIONS`]).
pub fn declarations() -> &'static str {
    MAP_DECLARATIONS
}

/// PTX definitions of the map helpers and their private helpers, at `.gpu` scope (see
/// [`MAP_FUNCTIONS`]).
pub fn functions() -> String {
    functions_at(crate::Scope::Gpu)
}

/// [`functions`] with the atomics and orderings at `scope` (`.sys` for a module with a map
/// in host-pinned memory that the host reads while the kernel runs). The three
/// `fence.acq_rel.gpu` stay at `.gpu`: they order GPU threads' accesses among
/// themselves (a reservation after a lock, a key check before a state re-read), and what
/// the host reads is published by release stores, which do move to `.sys`.
pub fn functions_at(scope: crate::Scope) -> String {
    // The text depends on the scope alone; filling and flattening it is most of what
    // lowering a module with a hash map costs, and every specialised function starts from
    // it, so each scope's text is built once per process.
    static TEXT: [std::sync::OnceLock<String>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    let i = match scope {
        crate::Scope::Gpu => 0,
        crate::Scope::Sys => 1,
    };
    TEXT[i].get_or_init(|| build_functions(scope)).clone()
}

/// [`functions_at`], built: the template filled, flattened, at `scope`.
fn build_functions(scope: crate::Scope) -> String {
    let text = [
        ("@WAIT@", WAIT_SPINS),
        ("@UPDATE_ROUNDS@", UPDATE_ROUNDS),
        ("@LRU_SAMPLE@", LRU_SAMPLE),
        ("@LRU_TRIES@", LRU_TRIES),
        ("@SHARD_MASK@", COUNT_SHARDS - 1),
        ("@FULL@", Count::Full as u32),
        ("@BUSY@", Count::Busy as u32),
        ("@EVICTED@", Count::Evicted as u32),
    ]
    .iter()
    .fold(crate::fill_abi(MAP_FUNCTIONS), |t, (field, value)| {
        t.replace(field, &value.to_string())
    });
    let text = crate::flatten::flatten(&text, crate::COPY_FUNCTION, &FLATTENED);
    scope.apply(&text).into_owned()
}

/// Prefix of the runtime's map functions in a module's second copy of them at `.gpu`
/// scope ([`gpu_copy`]), which replaces `bpf2ptx_map_` in each name.
pub const GPU_COPY_PREFIX: &str = "bpf2ptx_mapgpu_";

/// Every function [`MAP_DECLARATIONS`] and [`MAP_FUNCTIONS`] declare or define (all named
/// `bpf2ptx_map_*`; `bpf2ptx_copy` is [`crate::COPY_FUNCTION`]'s, which has no atomics).
fn map_function_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<String> = MAP_DECLARATIONS
            .lines()
            .chain(MAP_FUNCTIONS.lines())
            .filter_map(|l| l.strip_prefix(".func "))
            .filter_map(|l| l.split('(').find_map(|p| p.split_whitespace().last()))
            .filter(|n| n.starts_with("bpf2ptx_map_"))
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        names
    })
}

/// `text` with every call of (and declaration, definition or reference to) a runtime map
/// function redirected to its `.gpu` copy ([`GPU_COPY_PREFIX`]). Whole identifiers only:
/// a specialised function (`bpf2ptx_map_hash_update__bpf2ptx_map_spans`) keeps its name.
pub fn to_gpu_copy(text: &str) -> String {
    let names = map_function_names();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut out = String::with_capacity(text.len() + 256);
    let mut rest = text;
    while let Some(at) = rest.find("bpf2ptx_map_") {
        let starts_word = !rest[..at].chars().next_back().is_some_and(ident);
        let len = rest[at..]
            .find(|c: char| !ident(c))
            .unwrap_or(rest.len() - at);
        let word = &rest[at..at + len];
        out.push_str(&rest[..at]);
        if starts_word && names.binary_search_by(|n| n.as_str().cmp(word)).is_ok() {
            out.push_str(GPU_COPY_PREFIX);
            out.push_str(&word["bpf2ptx_map_".len()..]);
        } else {
            out.push_str(word);
        }
        rest = &rest[at + len..];
    }
    out.push_str(rest);
    out
}

/// The runtime's map functions at `.gpu` scope under the names [`to_gpu_copy`] gives
/// them, as (declarations, definitions), for a module whose own map functions are at
/// `.sys` (it has a host-placed map) and whose calls pinned to a map in device memory
/// need no more than `.gpu`: no host reads that map while the kernel runs, and `.sys`
/// orderings cost far more (each `ld.acquire.sys` waits for the system; under `bpf2ptx
/// trace` a host program's shared map made every probe's hash lookup pay it).
pub fn gpu_copy() -> (String, String) {
    static TEXT: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        (
            to_gpu_copy(MAP_DECLARATIONS),
            to_gpu_copy(&functions_at(crate::Scope::Gpu)),
        )
    })
    .clone()
}

/// A map's geometry as its object fixes it: descriptor words 0-2 (type and flags, key and
/// value size, max entries and value stride), which the backend writes into the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The map type id.
    pub map_type: u32,
    /// The map flags (descriptor word 0, high half).
    pub flags: u32,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes.
    pub value_size: u32,
    /// `max_entries`.
    pub max_entries: u32,
}

/// The name of hash function `base` ([`HASH_HELPERS`]) specialised for the map whose
/// descriptor is `desc_symbol` ([`specialized_function`]).
pub fn specialized_name(base: &str, desc_symbol: &str) -> String {
    format!("{base}__{desc_symbol}")
}

/// PTX definition of hash function `base` ([`HASH_HELPERS`]) for one map, named `name`:
/// the flattened function ([`functions_at`]) with every load of descriptor words 0-2 (the
/// type, flags, sizes, max entries, stride) and of `aux` (word 4, which the ABI fixes as
/// [`hash_slots`]) replaced by the map's constant. The other storage words (data, counts)
/// are still read, so a host that rebinds the storage is honoured. Why: with the sizes and type constant, ptxas drops the paths of other key
/// sizes and map types and folds the slot arithmetic, so the function needs fewer
/// registers (every kernel that may call it gets its count) and instructions. Should the
/// descriptor's register be written after it is set, the definition is returned renamed
/// but not specialised. `None` when `base` is not a hash function of the runtime.
pub fn specialized_function(
    base: &str,
    name: &str,
    g: Geometry,
    scope: crate::Scope,
) -> Option<String> {
    HASH_HELPERS.iter().find(|(_, n)| *n == base)?;
    let text = functions_at(scope);
    let head = format!("\n.func (.param .b64 ret) {base}(");
    let start = text.find(&head)? + 1;
    let end = start + text[start..].find("\n}\n")? + 3;
    let def = text[start..end].replacen(&format!(" {base}("), &format!(" {name}("), 1);
    let stride = u64::from(g.value_size).div_ceil(8) * 8;
    let word = |off: u64| -> Option<u64> {
        Some(match off {
            o if o == crate::desc::MAP_TYPE => u64::from(g.map_type),
            o if o == crate::desc::MAP_FLAGS => u64::from(g.flags),
            o if o == crate::desc::KEY_SIZE => u64::from(g.key_size),
            o if o == crate::desc::VALUE_SIZE => u64::from(g.value_size),
            o if o == crate::desc::MAX_ENTRIES => u64::from(g.max_entries),
            o if o == crate::desc::VALUE_STRIDE => stride,
            _ => return None,
        })
    };
    let mut aliases: Vec<String> = Vec::new();
    let mut out = String::with_capacity(def.len());
    let plain = def.clone();
    for line in def.lines() {
        let t = line.trim();
        if t.starts_with("//") {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let (op, rest) = t.split_once(' ').unwrap_or((t, ""));
        let dst = rest
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .trim_end_matches(';');
        let src = rest
            .split_once(',')
            .map(|(_, s)| s.trim().trim_end_matches(';'));
        let sets_alias = (op == "ld.param.b64" && src == Some("[desc]"))
            || (op == "mov.b64" && src.is_some_and(|s| aliases.iter().any(|a| a == s)));
        if sets_alias {
            aliases.push(dst.to_string());
        } else if op == "ld.u32" || op == "ld.b64" {
            // `ld.u32 %r, [DESC+OFF];` of a geometry word, or `ld.b64` of `aux`: the
            // constant.
            let addr = src
                .unwrap_or("")
                .trim_start_matches('[')
                .trim_end_matches(']');
            let (base_reg, off) = match addr.split_once('+') {
                Some((b, o)) => (b, o.parse::<u64>().ok()),
                None => (addr, Some(0)),
            };
            let v = match off {
                Some(o) if op == "ld.b64" && o == crate::desc::AUX => {
                    Some(hash_slots(g.max_entries))
                }
                Some(o) if op == "ld.u32" => word(o),
                _ => None,
            };
            if let (true, Some(v)) = (aliases.iter().any(|a| a == base_reg), v) {
                let ty = if op == "ld.b64" { "u64" } else { "u32" };
                out.push_str(&format!("\tmov.{ty} {dst}, {v};\n"));
                continue;
            }
        } else if aliases.iter().any(|a| a == dst)
            && !op.starts_with("st")
            && !op.starts_with("red")
        {
            return Some(plain); // the descriptor register is overwritten: not a plain alias
        }
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

/// The map functions a probe calls that are emitted with their own calls inlined
/// ([`crate::flatten`]): each then needs the registers of its own live values only.
const FLATTENED: [&str; 3] = [
    "bpf2ptx_map_hash_lookup",
    "bpf2ptx_map_hash_update",
    "bpf2ptx_map_hash_delete",
];

/// PTX definitions of `bpf2ptx_map_lookup_elem`, `bpf2ptx_map_update_elem`,
/// `bpf2ptx_map_delete_elem` and the private `.func`s they call (all named `bpf2ptx_map_*`),
/// except `bpf2ptx_copy`, which [`crate::COPY_FUNCTION`] defines: a template whose
/// `@NAME@` fields [`functions_at`] fills with this module's constants.
///
/// No `.version`/`.target` header: the text goes into a module that has one (PTX ISA
/// [`MIN_PTX`] or later, sm_70 or later, 64-bit addresses). Every pointer argument is a
/// generic address; the functions are module-local (`.func`, not `.visible`).
pub const MAP_FUNCTIONS: &str = include_str!("ptx/maps.ptx");

/// A CPU model of the device's hash map storage, for tests.
pub mod model {
    use super::*;

    /// A hash map's storage, laid out byte for byte as on the device (`aux` slots of
    /// [`hash_slot_size`] bytes, then an LRU map's stamps), with its count and counters,
    /// and the device's operations (specs/abi.md, "Hash maps") run one at a time.
    ///
    /// After the same sequence of single-threaded operations, the slots part of
    /// [`HashTable::bytes`] equals the device's storage, [`HashTable::count`] its count
    /// word and [`HashTable::counts`] the sums of its counters. An LRU map's stamps come
    /// from [`HashTable::now`], which the test sets, where the device reads its clock.
    /// With concurrent operations only the set of live entries is comparable
    /// ([`HashTable::entries`]).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct HashTable {
        map_type: u32,
        key_size: usize,
        value_size: usize,
        max_entries: u64,
        slots: usize,
        /// The storage (what the descriptor's `data` points at).
        pub bytes: Vec<u8>,
        /// The counts block's count word: keys held.
        pub count: u64,
        /// The counters, `[full, busy, evicted]` ([`Count`] order).
        pub counts: [u64; 3],
        /// The clock an LRU map stamps slots with (`%globaltimer >> 10` on the device).
        pub now: u32,
    }

    impl HashTable {
        /// An empty hash map (type 1) sized for `max_entries` as the compiler sizes it.
        pub fn new(key_size: u32, value_size: u32, max_entries: u32) -> Self {
            Self::of_type(MAP_HASH, key_size, value_size, max_entries)
        }

        /// An empty map of hash type `map_type` (1, 1501 or 9).
        ///
        /// # Panics
        ///
        /// If `map_type` is not a hash map type.
        pub fn of_type(map_type: u32, key_size: u32, value_size: u32, max_entries: u32) -> Self {
            assert!(is_hash(map_type), "map type {map_type} is not a hash map");
            let bytes = hash_storage_size(map_type, key_size, value_size, max_entries);
            Self {
                map_type,
                key_size: key_size as usize,
                value_size: value_size as usize,
                max_entries: u64::from(max_entries),
                slots: hash_slots(max_entries) as usize,
                bytes: vec![0; bytes as usize],
                count: 0,
                counts: [0; 3],
                now: 0,
            }
        }

        /// Number of slots.
        pub fn slots(&self) -> usize {
            self.slots
        }

        /// Bytes of one slot.
        pub fn slot_size(&self) -> usize {
            8 + round8(self.key_size as u64) as usize + round8(self.value_size as u64) as usize
        }

        /// Offset of the value within a slot.
        pub fn value_offset(&self) -> usize {
            8 + round8(self.key_size as u64) as usize
        }

        fn word(&self, at: usize) -> u32 {
            u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap())
        }

        fn set_word(&mut self, at: usize, v: u32) {
            self.bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }

        /// The state word of slot `i`.
        pub fn state(&self, i: usize) -> u32 {
            self.word(i * self.slot_size())
        }

        /// The overflow count of slot `i` (its meta word without the lock bit).
        pub fn overflow(&self, i: usize) -> u32 {
            self.word(i * self.slot_size() + 4) & !LOCK_BIT
        }

        fn add_overflow(&mut self, i: usize, d: i32) {
            let at = i * self.slot_size() + 4;
            let v = self.word(at).wrapping_add_signed(d);
            self.set_word(at, v);
        }

        /// The key bytes of slot `i`.
        pub fn key(&self, i: usize) -> &[u8] {
            let at = i * self.slot_size() + 8;
            &self.bytes[at..at + self.key_size]
        }

        /// The value bytes of slot `i`.
        pub fn value(&self, i: usize) -> &[u8] {
            let at = i * self.slot_size() + self.value_offset();
            &self.bytes[at..at + self.value_size]
        }

        fn value_mut(&mut self, i: usize) -> &mut [u8] {
            let at = i * self.slot_size() + self.value_offset();
            &mut self.bytes[at..at + self.value_size]
        }

        /// The stamp of slot `i` (LRU maps).
        pub fn stamp(&self, i: usize) -> u32 {
            self.word(self.slots * self.slot_size() + 4 * i)
        }

        fn touch(&mut self, i: usize) {
            if self.map_type == MAP_LRU_HASH {
                let at = self.slots * self.slot_size() + 4 * i;
                self.set_word(at, self.now);
            }
        }

        fn mask(&self) -> usize {
            self.slots - 1
        }

        fn home(&self, key: &[u8]) -> usize {
            fnv1a(key) as usize & self.mask()
        }

        /// The slot holding `key` live, as the device's find walks to it: from the home
        /// slot, a full slot with the key is a hit, a slot with overflow count 0 a miss.
        pub fn find(&self, key: &[u8]) -> Option<usize> {
            assert_eq!(key.len(), self.key_size, "key size");
            let home = self.home(key);
            for n in 0..self.slots {
                let i = (home + n) & self.mask();
                if self.state(i) == SLOT_FULL && self.key(i) == key {
                    return Some(i);
                }
                if self.overflow(i) == 0 {
                    return None;
                }
            }
            None
        }

        /// `map_lookup_elem`: the byte offset of the key's value in the storage (the
        /// device returns `data` + this offset), or `None` (NULL). LRU: stamps the slot.
        pub fn lookup(&mut self, key: &[u8]) -> Option<usize> {
            let i = self.find(key)?;
            self.touch(i);
            Some(i * self.slot_size() + self.value_offset())
        }

        /// `map_update_elem`: 0 or a negative errno, as the device returns it.
        pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64) -> i64 {
            assert_eq!(value.len(), self.value_size, "value size");
            if flags > BPF_EXIST {
                return EINVAL;
            }
            if let Some(i) = self.find(key) {
                if flags == BPF_NOEXIST {
                    return EEXIST;
                }
                self.value_mut(i).copy_from_slice(value);
                self.touch(i);
                return 0;
            }
            if flags == BPF_EXIST {
                return ENOENT;
            }
            if self.count >= self.max_entries {
                if self.map_type != MAP_LRU_HASH {
                    self.counts[Count::Full as usize] += 1;
                    return E2BIG;
                }
                if !self.evict(fnv1a(key)) {
                    self.counts[Count::Busy as usize] += 1;
                    return EBUSY;
                }
            } else {
                self.count += 1;
            }
            let home = self.home(key);
            let Some(n) =
                (0..self.slots).find(|n| self.state((home + n) & self.mask()) == SLOT_FREE)
            else {
                unreachable!("count <= max_entries < slots leaves a free slot");
            };
            for d in 0..n {
                self.add_overflow((home + d) & self.mask(), 1);
            }
            let i = (home + n) & self.mask();
            let at = i * self.slot_size() + 8;
            self.bytes[at..at + self.key_size].copy_from_slice(key);
            self.value_mut(i).copy_from_slice(value);
            self.set_word(i * self.slot_size(), SLOT_FULL);
            self.touch(i);
            0
        }

        /// Frees slot `i`, whose key's home is `home`: the overflow counts of the slots
        /// between go down by one.
        fn unlink(&mut self, home: usize, i: usize) {
            let dist = i.wrapping_sub(home) & self.mask();
            for d in 0..dist {
                self.add_overflow((home + d) & self.mask(), -1);
            }
            self.set_word(i * self.slot_size(), SLOT_FREE);
        }

        /// LRU eviction as the device samples: windows of [`LRU_SAMPLE`] slots from
        /// `hash >> 32`, the full slot with the oldest stamp (age `now - stamp` as a
        /// signed number; the later slot on a tie), then any full slot.
        fn evict(&mut self, hash: u64) -> bool {
            let mut start = (hash >> 32) as usize;
            for _ in 0..LRU_TRIES {
                let mut best: Option<(usize, i32)> = None;
                for j in 0..LRU_SAMPLE as usize {
                    let i = (start + j) & self.mask();
                    if self.state(i) != SLOT_FULL {
                        continue;
                    }
                    let age = self.now.wrapping_sub(self.stamp(i)) as i32;
                    if best.is_none_or(|(_, a)| age >= a) {
                        best = Some((i, age));
                    }
                }
                start += LRU_SAMPLE as usize;
                if let Some((i, _)) = best {
                    self.evict_slot(i);
                    return true;
                }
            }
            // The device's last resort: the first full slot from where the samples ended.
            let found = (0..self.slots)
                .map(|j| (start + j) & self.mask())
                .find(|&i| self.state(i) == SLOT_FULL);
            found.inspect(|&i| self.evict_slot(i)).is_some()
        }

        fn evict_slot(&mut self, i: usize) {
            let home = self.home(self.key(i));
            self.unlink(home, i);
            self.counts[Count::Evicted as usize] += 1;
        }

        /// `map_delete_elem`: 0 or -ENOENT.
        pub fn delete(&mut self, key: &[u8]) -> i64 {
            match self.find(key) {
                Some(i) => {
                    self.unlink(self.home(key), i);
                    self.count -= 1;
                    0
                }
                None => ENOENT,
            }
        }

        /// The live entries, (key, value) in slot order.
        pub fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
            (0..self.slots)
                .filter(|&i| self.state(i) == SLOT_FULL)
                .map(|i| (self.key(i).to_vec(), self.value(i).to_vec()))
                .collect()
        }

        /// Whether every slot's overflow count equals the number of live keys stored
        /// beyond it whose path passed it, and no lock is held: the invariant the
        /// device's lookups rely on.
        pub fn overflow_counts_hold(&self) -> bool {
            let mut want = vec![0u32; self.slots];
            for i in (0..self.slots).filter(|&i| self.state(i) == SLOT_FULL) {
                let home = self.home(self.key(i));
                let dist = i.wrapping_sub(home) & self.mask();
                for d in 0..dist {
                    want[(home + d) & self.mask()] += 1;
                }
            }
            (0..self.slots).all(|i| self.word(i * self.slot_size() + 4) == want[i])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::model::HashTable;
    use super::*;

    #[test]
    fn fnv1a_matches_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// Runs the PTX of [`fnv_word32`] (its five instruction forms) on `word`.
    fn run_fnv_word32(key_size: u32, word: u64) -> u32 {
        let text = fnv_word32(key_size, "%w", "%h", "%lo", "%hi", "%t");
        let mut r: std::collections::HashMap<String, u32> = Default::default();
        let val = |r: &std::collections::HashMap<String, u32>, x: &str| -> u32 {
            if let Some(h) = x.strip_prefix("0x") {
                u32::from_str_radix(h, 16).unwrap()
            } else if x.starts_with('%') {
                r[x]
            } else {
                x.parse().unwrap()
            }
        };
        for line in text.lines() {
            let (op, rest) = line.trim_end_matches(';').split_once(' ').unwrap();
            let a: Vec<&str> = rest.split(", ").collect();
            let v = match op {
                "mov.b64" => {
                    assert_eq!((a[0], a[1]), ("{%lo", "%hi}"), "{line}");
                    r.insert("%lo".into(), word as u32);
                    r.insert("%hi".into(), (word >> 32) as u32);
                    continue;
                }
                "mov.b32" => val(&r, a[1]),
                "bfe.u32" => (val(&r, a[1]) >> val(&r, a[2])) & ((1 << val(&r, a[3])) - 1),
                "xor.b32" => val(&r, a[1]) ^ val(&r, a[2]),
                "mul.lo.u32" => val(&r, a[1]).wrapping_mul(val(&r, a[2])),
                _ => panic!("fnv_word32 emitted an instruction this test does not model: {line}"),
            };
            r.insert(a[0].to_string(), v);
        }
        r["%h"]
    }

    #[test]
    fn inline_hash_is_the_low_half_of_fnv1a() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for ks in [1u32, 2, 4, 8] {
                let word = if ks == 8 {
                    x
                } else {
                    x & ((1u64 << (8 * ks)) - 1)
                };
                let bytes = &word.to_le_bytes()[..ks as usize];
                assert_eq!(
                    run_fnv_word32(ks, word),
                    fnv1a(bytes) as u32,
                    "key size {ks}, word {word:#x}"
                );
            }
        }
    }

    #[test]
    fn geometry() {
        assert_eq!(hash_slots(0), 1);
        assert_eq!(hash_slots(1), 2);
        assert_eq!(hash_slots(3), 8);
        assert_eq!(hash_slots(4), 8);
        assert_eq!(hash_slot_size(4, 8), 24);
        assert_eq!(hash_slot_size(5, 1), 24);
        assert_eq!(hash_slot_size(9, 12), 40);
        assert_eq!(hash_storage_size(MAP_HASH, 4, 8, 4), 8 * 24);
        assert_eq!(hash_storage_size(MAP_LRU_HASH, 4, 8, 1), 2 * 24 + 8);
        assert_eq!(COUNTS_BYTES, 4224);
        assert_eq!(Count::Evicted.offset(31), 128 + 31 * 128 + 16);
    }

    #[test]
    fn insert_lookup_delete_reuses_the_slot() {
        let mut t = HashTable::new(4, 8, 4);
        let k = 7u32.to_le_bytes();
        assert_eq!(t.lookup(&k), None);
        assert_eq!(t.update(&k, &1u64.to_le_bytes(), BPF_EXIST), ENOENT);
        assert_eq!(t.update(&k, &1u64.to_le_bytes(), BPF_NOEXIST), 0);
        assert_eq!(t.update(&k, &2u64.to_le_bytes(), BPF_NOEXIST), EEXIST);
        assert_eq!(t.update(&k, &3u64.to_le_bytes(), BPF_EXIST), 0);
        assert_eq!(t.update(&k, &4u64.to_le_bytes(), 3), EINVAL);
        let off = t.lookup(&k).unwrap();
        assert_eq!(t.bytes[off..off + 8], 3u64.to_le_bytes());
        // The slot is where the hash says, with the layout of specs/abi.md.
        let home = (fnv1a(&k) & 7) as usize;
        assert_eq!(off, home * 24 + 16);
        assert_eq!(t.bytes[home * 24..home * 24 + 4], SLOT_FULL.to_le_bytes());
        assert_eq!(t.bytes[home * 24 + 8..home * 24 + 12], k);
        assert_eq!(t.count, 1);
        assert_eq!(t.delete(&k), 0);
        assert_eq!(t.delete(&k), ENOENT);
        assert_eq!(t.lookup(&k), None);
        assert_eq!(t.state(home), SLOT_FREE);
        assert_eq!(t.count, 0);
        // Re-inserting takes the same slot: a delete frees it.
        assert_eq!(t.update(&k, &5u64.to_le_bytes(), BPF_ANY), 0);
        assert_eq!(t.find(&k), Some(home));
        assert_eq!(t.entries(), vec![(k.to_vec(), 5u64.to_le_bytes().to_vec())]);
    }

    /// Keys whose home is slot `home` of a table of `slots` slots, for collisions.
    fn keys_at_home(home: u64, slots: u64, n: usize) -> Vec<[u8; 4]> {
        (0u32..)
            .map(u32::to_le_bytes)
            .filter(|k| fnv1a(k) & (slots - 1) == home)
            .take(n)
            .collect()
    }

    #[test]
    fn collisions_walk_past_full_slots_and_count_overflow() {
        // Three keys with one home in an 8-slot table (max_entries 4): they take the
        // home and the two slots after it, which count the keys that passed them.
        let mut t = HashTable::new(4, 8, 4);
        let keys = keys_at_home(3, 8, 3);
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(t.update(k, &(n as u64).to_le_bytes(), BPF_ANY), 0);
            assert_eq!(t.find(k), Some(3 + n));
        }
        assert_eq!((t.overflow(3), t.overflow(4), t.overflow(5)), (2, 1, 0));
        assert!(t.overflow_counts_hold());
        // Deleting the middle key frees its slot; the last key is still found past it,
        // since the home slot's count says one key went past.
        assert_eq!(t.delete(&keys[1]), 0);
        assert_eq!((t.overflow(3), t.overflow(4)), (1, 1));
        assert_eq!(t.find(&keys[2]), Some(5));
        assert!(t.overflow_counts_hold());
        // A new key of that home takes the freed slot.
        let more = keys_at_home(3, 8, 4)[3];
        assert_eq!(t.update(&more, &9u64.to_le_bytes(), BPF_ANY), 0);
        assert_eq!(t.find(&more), Some(4));
        assert!(t.overflow_counts_hold());
    }

    #[test]
    fn at_most_max_entries_keys_and_every_refusal_counted() {
        let mut t = HashTable::new(4, 8, 4);
        for k in 0u32..4 {
            assert_eq!(t.update(&k.to_le_bytes(), &[1; 8], BPF_ANY), 0);
        }
        // Full at max_entries (the table has 8 slots): new keys refused and counted,
        // present keys still updated, BPF_EXIST of an absent key -ENOENT, not counted.
        assert_eq!(t.update(&9u32.to_le_bytes(), &[0; 8], BPF_ANY), E2BIG);
        assert_eq!(t.update(&9u32.to_le_bytes(), &[0; 8], BPF_NOEXIST), E2BIG);
        assert_eq!(t.update(&9u32.to_le_bytes(), &[0; 8], BPF_EXIST), ENOENT);
        assert_eq!(t.update(&3u32.to_le_bytes(), &[7; 8], BPF_ANY), 0);
        assert_eq!(t.update(&3u32.to_le_bytes(), &[7; 8], BPF_NOEXIST), EEXIST);
        assert_eq!(t.counts, [2, 0, 0]);
        assert_eq!((t.count, t.entries().len()), (4, 4));
        // A delete makes room for one.
        assert_eq!(t.delete(&0u32.to_le_bytes()), 0);
        assert_eq!(t.update(&9u32.to_le_bytes(), &[0; 8], BPF_ANY), 0);
        assert_eq!(t.update(&10u32.to_le_bytes(), &[0; 8], BPF_ANY), E2BIG);
        assert_eq!(t.counts, [3, 0, 0]);
    }

    #[test]
    fn insert_delete_churn_leaves_the_table_as_new() {
        // A million inserts and deletes of ever new keys in a 1024-entry map, 1024 live
        // at a time: every insert succeeds, and once they are all deleted the storage is
        // as new: every slot free with overflow count 0 (no tombstones; the freed slots
        // keep their old key and value bytes, which nothing reads).
        let mut t = HashTable::new(8, 8, 1024);
        for round in 0u64..1000 {
            for k in 0..1024u64 {
                let key = (round * 1024 + k).to_le_bytes();
                assert_eq!(t.update(&key, &key, BPF_NOEXIST), 0, "round {round}");
            }
            if round % 97 == 0 {
                assert!(t.overflow_counts_hold());
            }
            for k in 0..1024u64 {
                assert_eq!(t.delete(&(round * 1024 + k).to_le_bytes()), 0);
            }
        }
        assert_eq!(t.count, 0);
        let new = HashTable::new(8, 8, 1024);
        let headers = |t: &HashTable| -> Vec<u64> {
            t.bytes
                .chunks(t.slot_size())
                .map(|s| u64::from_le_bytes(s[..8].try_into().unwrap()))
                .collect()
        };
        assert_eq!(headers(&t), headers(&new));
        assert_eq!(t.counts, [0, 0, 0]);
    }

    #[test]
    fn every_key_has_one_live_slot() {
        // A pseudo-random sequence of operations on a small table: every live key is in
        // exactly one slot, the count is the number of keys, the overflow counts are
        // exact, and the model agrees with a map of the live entries.
        let mut t = HashTable::new(8, 4, 32);
        let mut live = std::collections::BTreeMap::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x % 60).to_le_bytes();
            let value = ((x >> 32) as u32).to_le_bytes();
            match (x >> 8) % 4 {
                0 => {
                    let r = t.delete(&key);
                    assert_eq!(r == 0, live.remove(&key).is_some());
                }
                1 => assert_eq!(t.lookup(&key).is_some(), live.contains_key(&key)),
                _ => {
                    let flags = (x >> 16) % 3;
                    let r = t.update(&key, &value, flags);
                    let present = live.contains_key(&key);
                    match r {
                        0 => {
                            assert!(flags != BPF_NOEXIST || !present);
                            assert!(flags != BPF_EXIST || present);
                            live.insert(key, value);
                        }
                        ENOENT => assert!(flags == BPF_EXIST && !present),
                        EEXIST => assert!(flags == BPF_NOEXIST && present),
                        E2BIG => assert!(!present && live.len() == 32),
                        _ => panic!("unexpected {r}"),
                    }
                }
            }
            let mut entries = t.entries();
            entries.sort();
            let expect: Vec<_> = live.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            assert_eq!(entries, expect);
            assert_eq!(t.count, live.len() as u64);
            assert!(t.overflow_counts_hold());
        }
    }

    #[test]
    fn counts_are_summed_over_the_shards() {
        let mut block = vec![0u8; COUNTS_BYTES as usize];
        let put = |b: &mut Vec<u8>, at: u64, v: u64| {
            b[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes())
        };
        put(&mut block, 0, 4096);
        for s in 0..COUNT_SHARDS {
            put(&mut block, Count::Full.offset(s), u64::from(s));
            put(&mut block, Count::Evicted.offset(s), 2);
        }
        put(&mut block, Count::Busy.offset(31), 7);
        let full: u64 = (0..u64::from(COUNT_SHARDS)).sum();
        assert_eq!(
            read_counts(&block),
            (4096, [full, 7, 2 * u64::from(COUNT_SHARDS)])
        );
        // A short read (a host that read less) counts what is there, never panics.
        assert_eq!(read_counts(&block[..200]).0, 4096);
    }

    #[test]
    fn lru_evicts_the_oldest_of_its_sample_instead_of_refusing() {
        let mut t = HashTable::of_type(MAP_LRU_HASH, 4, 8, 64);
        assert_eq!(
            hash_storage_size(MAP_LRU_HASH, 4, 8, 64),
            128 * 24 + 128 * 4
        );
        for k in 0u32..10_000 {
            t.now = k;
            assert_eq!(t.update(&k.to_le_bytes(), &[1; 8], BPF_ANY), 0, "key {k}");
            assert!(t.count <= 64);
            // A recently used key survives: key 0 is looked up at every step.
            if k > 0 {
                assert!(
                    t.lookup(&0u32.to_le_bytes()).is_some(),
                    "key 0 evicted at {k}"
                );
            }
        }
        assert_eq!((t.count, t.entries().len()), (64, 64));
        assert_eq!(t.counts, [0, 0, 10_000 - 64]);
        assert!(t.overflow_counts_hold());
    }

    #[test]
    fn ptx_text_defines_every_function_it_calls_but_the_copy() {
        let text = functions();
        let unfilled = text
            .match_indices('@')
            .any(|(i, _)| text[i + 1..].starts_with(|c: char| c.is_ascii_uppercase()));
        assert!(!unfilled, "an unfilled template field");
        let text = text.as_str();
        assert!(!text.contains(".version") && !text.contains(".target"));
        for name in [
            "bpf2ptx_map_lookup_elem",
            "bpf2ptx_map_update_elem",
            "bpf2ptx_map_delete_elem",
        ] {
            assert!(declarations().contains(name));
            assert_eq!(text.matches(&format!(") {name}(")).count(), 1, "{name}");
        }
        crate::tests::assert_calls_resolve(text);
        // Every function defined here is ours.
        for line in text.lines().filter(|l| l.starts_with(".func")) {
            let name = line
                .split(|c: char| c == '(' || c == ')' || c.is_whitespace())
                .find(|w| w.starts_with("bpf2ptx_"));
            assert!(name.is_some(), "{line}");
        }
        // The generic three, the hash maps' three, and what inlined hash code calls.
        assert_eq!(declarations().lines().count(), 3 + HASH_HELPERS.len() + 2);
        for (_, name) in HASH_HELPERS {
            assert!(declarations().contains(name), "{name}");
            assert_eq!(text.matches(&format!(") {name}(")).count(), 1, "{name}");
        }
    }
}
