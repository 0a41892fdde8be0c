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
//! - hash maps (1, 1501): `aux` slots of [`hash_slot_size`] bytes, each a u32 state
//!   ([`SLOT_EMPTY`], [`SLOT_BUSY`], [`SLOT_FULL`], [`SLOT_DELETED`]), 4 bytes of padding,
//!   the key (padded to 8) and the value; FNV-1a 64 ([`fnv1a`]) of the key picks the home
//!   slot, `hash & (aux - 1)`, and probing is linear, at most `aux` slots.
//!
//! [`model::HashTable`] does the same on a byte vector, so a test can compare the
//! device's table, byte for byte, with the model's after the same sequence of operations.
//!
//! # Concurrency
//!
//! Many threads call the helpers at once, on the same map. Slot states only move forward:
//! empty → busy (claimed by `atom.cas`) → full (published by `st.release`) → deleted
//! (`atom.cas`); a slot never becomes empty again, so deleted slots are not reused.
//!
//! *A key is live in one slot only.* An insertion of key K claims the first empty slot on
//! K's probe path, after seeing every earlier slot of the path non-empty and not holding K
//! live. Take two threads inserting K at once: they walk the same path, and of the slots
//! they claim, take the first one, S, on the path. Since states never go back to empty,
//! the other thread, reaching S, either sees it non-empty or loses the `atom.cas` on it;
//! either way it waits for S to be published and finds K there (and updates in place, or
//! returns -EEXIST for `BPF_NOEXIST`), so it never claims a slot after S. The wait is
//! bounded (below); an update that still sees the slot busy after it returns -EBUSY
//! rather than walk past a slot that may be about to hold its key.
//!
//! *Nothing hangs.* Every loop is bounded: probing visits at most `aux` slots, copies and
//! key compares run over `key_size`/`value_size` bytes, and waiting for a busy slot (a
//! writer between its claim and its publication) re-reads the state at most
//! [`BUSY_SPINS`] times (PTX 6.0 has no `nanosleep`). A lookup or delete that still sees
//! the slot busy treats it as "not this key" and goes on: the key being written is not in
//! the map yet, so the lookup is ordered before that insertion.
//!
//! Every index is masked by `aux - 1` and every probe count is below `aux`, so even a
//! descriptor whose `aux` is not a power of two (a host bug) keeps the accesses inside
//! `aux` slots.
//!
//! *What is not atomic.* Values. An update of a key that is already present, and an update
//! of an array element, copy the new value in place with plain stores; a thread reading
//! the value at the same time (through a pointer from `map_lookup_elem`) may see part old,
//! part new bytes. (Linux replaces a hash element atomically via RCU; a preallocated array
//! is updated in place there too.) A lookup's pointer stays valid after a concurrent
//! delete, since slots are never reused. Publication uses `.gpu` scope in [`functions`];
//! a module with a map in host memory gets [`functions_at`]`(Scope::Sys)`, whose release
//! store orders a slot's key and value before its state for a host reading the mapped
//! memory while the kernel runs too.
//!
//! # Capacity
//!
//! A hash map refuses an insertion (-E2BIG, counted in the descriptor's `drops` word) when
//! no empty slot is left on the key's path within `aux` probes. The runtime keeps no count
//! of live keys (the descriptor has no word for it), so up to `aux` (about 2 × max_entries)
//! keys may be inserted; deleted slots stay used, so `aux` insertions of new keys in total
//! fill the table.

/// Map type id: hash map (Linux `BPF_MAP_TYPE_HASH`).
pub const MAP_HASH: u32 = 1;
/// Map type id: array (Linux `BPF_MAP_TYPE_ARRAY`).
pub const MAP_ARRAY: u32 = 2;
/// Map type id: per-CPU array (Linux `BPF_MAP_TYPE_PERCPU_ARRAY`); per SM on the GPU: one
/// copy per SM (256 replicas, `smid & 255`), which the host reads replica by replica.
pub const MAP_PERCPU_ARRAY: u32 = 6;
/// Map type id: GPU hash map (bpftime).
pub const MAP_GPU_HASH: u32 = 1501;
/// Map type id: per-thread array (bpftime): one copy of each element per thread.
pub const MAP_PER_THREAD_ARRAY: u32 = 1502;
/// Lowest PTX ISA version of a module the map functions are pasted into: the wait on a
/// busy hash slot sleeps with `nanosleep` (6.3, sm_70).
pub const MIN_PTX: (u32, u32) = (6, 3);

/// Map type id: GPU array (bpftime).
pub const MAP_GPU_ARRAY: u32 = 1503;
/// Map type id: per-warp array (bpf2ptx's own id): one copy of each element per warp of
/// the launch, sized by the host from the launch shape.
pub const MAP_PER_WARP_ARRAY: u32 = 1600;

/// `map_update_elem` flag: insert or replace.
pub const BPF_ANY: u64 = 0;
/// `map_update_elem` flag: insert only; -EEXIST if the key is present.
pub const BPF_NOEXIST: u64 = 1;
/// `map_update_elem` flag: replace only; -ENOENT if the key is absent.
pub const BPF_EXIST: u64 = 2;

/// `-ENOENT`: the key is not in the map.
pub const ENOENT: i64 = -2;
/// `-E2BIG`: the index is out of range, or the hash map is full.
pub const E2BIG: i64 = -7;
/// `-EBUSY`: a hash slot on the key's path stayed busy (being written) too long.
pub const EBUSY: i64 = -16;
/// `-EEXIST`: `BPF_NOEXIST` and the key is present (always, for arrays).
pub const EEXIST: i64 = -17;
/// `-EINVAL`: unbound map, bad flags, or an operation the map type does not have.
pub const EINVAL: i64 = -22;

/// Hash slot state: never used.
pub const SLOT_EMPTY: u32 = 0;
/// Hash slot state: claimed, key and value being written.
pub const SLOT_BUSY: u32 = 1;
/// Hash slot state: holds a live key and its value.
pub const SLOT_FULL: u32 = 2;
/// Hash slot state: held a key that was deleted; never reused.
pub const SLOT_DELETED: u32 = 3;

/// How many times a helper re-reads a busy hash slot before giving up on it.
pub const BUSY_SPINS: u32 = 1000;

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
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Number of slots of a hash map (descriptor word 4): the next power of two ≥ 2 ×
/// `max_entries` (at least 1).
pub fn hash_slots(max_entries: u32) -> u64 {
    (2 * u64::from(max_entries)).max(1).next_power_of_two()
}

/// Bytes of one hash slot: state and padding (8), key rounded up to 8, value stride.
pub fn hash_slot_size(key_size: u32, value_size: u32) -> u64 {
    8 + round8(u64::from(key_size)) + round8(u64::from(value_size))
}

/// Bytes of a hash map's storage.
pub fn hash_storage_size(key_size: u32, value_size: u32, max_entries: u32) -> u64 {
    hash_slots(max_entries) * hash_slot_size(key_size, value_size)
}

/// PTX prototypes of the three map helpers, for a module to declare before its functions.
pub const MAP_DECLARATIONS: &str = "\
.func (.param .b64 ret) bpf2ptx_map_lookup_elem(.param .b64 desc, .param .b64 key);
.func (.param .b64 ret) bpf2ptx_map_update_elem(.param .b64 desc, .param .b64 key, \
.param .b64 value, .param .b64 flags);
.func (.param .b64 ret) bpf2ptx_map_delete_elem(.param .b64 desc, .param .b64 key);
";

/// PTX prototypes of the three map helpers (see [`MAP_DECLARATIONS`]).
pub fn declarations() -> &'static str {
    MAP_DECLARATIONS
}

/// PTX definitions of the map helpers and their private helpers (see [`MAP_FUNCTIONS`]).
pub fn functions() -> &'static str {
    MAP_FUNCTIONS
}

/// [`functions`] with the atomics and orderings at `scope` (`.sys` for a module with a map
/// in host-pinned memory that the host reads while the kernel runs).
pub fn functions_at(scope: crate::Scope) -> std::borrow::Cow<'static, str> {
    scope.apply(MAP_FUNCTIONS)
}

/// PTX definitions of `bpf2ptx_map_lookup_elem`, `bpf2ptx_map_update_elem`,
/// `bpf2ptx_map_delete_elem` and the private `.func`s they call (all named `bpf2ptx_map_*`),
/// except `bpf2ptx_copy`, which [`crate::COPY_FUNCTION`] defines.
///
/// No `.version`/`.target` header: the text goes into a module that has one (PTX ISA
/// [`MIN_PTX`] or later, sm_70 or later, 64-bit addresses). Every pointer argument is a
/// generic address; the functions are module-local (`.func`, not `.visible`).
pub const MAP_FUNCTIONS: &str = r#"
// ---- bpf2ptx map helpers (specs/abi.md, "Maps (device runtime)") ----

// FNV-1a 64 over the `len` bytes at `key`, read byte by byte: the key may sit at any
// alignment.
.func (.param .b64 ret) bpf2ptx_map_fnv1a(.param .b64 key, .param .b64 len)
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	.reg .b64 %rd<6>;
	ld.param.b64 %rd1, [key];
	ld.param.b64 %rd2, [len];
	mov.b64 %rd3, 0xcbf29ce484222325;
$Lfnv_loop:
	setp.eq.u64 %p1, %rd2, 0;
	@%p1 bra $Lfnv_done;
	ld.u8 %r1, [%rd1];
	cvt.u64.u32 %rd4, %r1;
	xor.b64 %rd3, %rd3, %rd4;
	mul.lo.u64 %rd3, %rd3, 0x100000001b3;
	add.s64 %rd1, %rd1, 1;
	add.s64 %rd2, %rd2, -1;
	bra $Lfnv_loop;
$Lfnv_done:
	st.param.b64 [ret], %rd3;
	ret;
}

// 1 if the `len` bytes at `a` and `b` are equal, else 0: by 8-byte words while both are
// 8-aligned (a slot's key is 8-aligned, and so is a u64 key on the caller's stack: one
// load per key in host memory, where each load is a PCIe round trip), then by 4-byte
// words while both are 4-aligned, then by bytes.
.func (.param .b32 ret) bpf2ptx_map_key_eq(.param .b64 a, .param .b64 b, .param .b64 len)
{
	.reg .pred %p<4>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<8>;
	ld.param.b64 %rd1, [a];
	ld.param.b64 %rd2, [b];
	ld.param.b64 %rd3, [len];
	or.b64 %rd4, %rd1, %rd2;
	and.b64 %rd5, %rd4, 7;
	setp.ne.u64 %p1, %rd5, 0;
	@%p1 bra $Leq_words4;
$Leq_words8:
	setp.lt.u64 %p1, %rd3, 8;
	@%p1 bra $Leq_words4;
	ld.b64 %rd6, [%rd1];
	ld.b64 %rd7, [%rd2];
	setp.ne.u64 %p2, %rd6, %rd7;
	@%p2 bra $Leq_differ;
	add.s64 %rd1, %rd1, 8;
	add.s64 %rd2, %rd2, 8;
	add.s64 %rd3, %rd3, -8;
	bra $Leq_words8;
$Leq_words4:
	and.b64 %rd4, %rd4, 3;
	setp.ne.u64 %p1, %rd4, 0;
	@%p1 bra $Leq_bytes;
$Leq_words:
	setp.lt.u64 %p1, %rd3, 4;
	@%p1 bra $Leq_bytes;
	ld.b32 %r1, [%rd1];
	ld.b32 %r2, [%rd2];
	setp.ne.u32 %p2, %r1, %r2;
	@%p2 bra $Leq_differ;
	add.s64 %rd1, %rd1, 4;
	add.s64 %rd2, %rd2, 4;
	add.s64 %rd3, %rd3, -4;
	bra $Leq_words;
$Leq_bytes:
	setp.eq.u64 %p3, %rd3, 0;
	@%p3 bra $Leq_same;
	ld.u8 %r1, [%rd1];
	ld.u8 %r2, [%rd2];
	setp.ne.u32 %p2, %r1, %r2;
	@%p2 bra $Leq_differ;
	add.s64 %rd1, %rd1, 1;
	add.s64 %rd2, %rd2, 1;
	add.s64 %rd3, %rd3, -1;
	bra $Leq_bytes;
$Leq_same:
	mov.u32 %r3, 1;
	st.param.b32 [ret], %r3;
	ret;
$Leq_differ:
	mov.u32 %r3, 0;
	st.param.b32 [ret], %r3;
	ret;
}

// The state of the hash slot at `slot`, read with acquire semantics (so the key and value
// a publisher wrote before its release are visible after it). While the state is 1 (busy:
// a writer between its claim and its publication) re-read it, at most 1000 times, so a
// stalled or dead writer never hangs the caller; the caller may then still see 1. Between
// reads the thread sleeps, 32 ns doubling up to 1 us (at most about 1 ms in all): the
// writer is often a lane of another warp that is itself waiting on a path of its own,
// or a lane of this warp on another path, and a sleeping path lets the scheduler run the
// others (without the sleep, 11 of 1,048,576 lookups after an insert gave up on an H200).
.func (.param .b32 ret) bpf2ptx_map_hash_state(.param .b64 slot)
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<2>;
	ld.param.b64 %rd1, [slot];
	mov.u32 %r2, 0;
	mov.u32 %r3, 32;
$Lstate_read:
	ld.acquire.gpu.b32 %r1, [%rd1];
	setp.ne.u32 %p1, %r1, 1;
	setp.ge.u32 %p2, %r2, 1000;
	or.pred %p1, %p1, %p2;
	@%p1 bra $Lstate_done;
	add.u32 %r2, %r2, 1;
	nanosleep.u32 %r3;
	shl.b32 %r3, %r3, 1;
	min.u32 %r3, %r3, 1024;
	bra $Lstate_read;
$Lstate_done:
	st.param.b32 [ret], %r1;
	ret;
}

// The address of the slot holding `key` live (state 2), or 0. Linear probing from the
// key's home slot; an empty slot ends the key's path (an insertion takes the first empty
// slot of the path, and slots never become empty again); busy slots are waited for
// (bounded) and then skipped; deleted ones are skipped. At most `aux` probes.
.func (.param .b64 ret) bpf2ptx_map_hash_find(.param .b64 desc, .param .b64 key)
{
	.reg .pred %p<5>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<16>;
	ld.param.b64 %rd1, [desc];
	ld.param.b64 %rd2, [key];
	// Geometry: key size, slot size = 8 + round8(key size) + stride, data, aux.
	ld.u32 %r1, [%rd1+8];
	cvt.u64.u32 %rd3, %r1;
	ld.u32 %r2, [%rd1+20];
	cvt.u64.u32 %rd4, %r2;
	add.s64 %rd5, %rd3, 15;
	and.b64 %rd5, %rd5, -8;
	add.s64 %rd5, %rd5, %rd4;
	ld.b64 %rd6, [%rd1+24];
	ld.b64 %rd7, [%rd1+32];
	// Home slot: FNV-1a of the key, masked by aux - 1.
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd2;
	st.param.b64 [a1], %rd3;
	call (r), bpf2ptx_map_fnv1a, (a0, a1);
	ld.param.b64 %rd8, [r];
	}
	add.s64 %rd9, %rd7, -1;
	and.b64 %rd10, %rd8, %rd9;
	mov.u64 %rd11, 0;
$Lfind_probe:
	// Slot %rd10, probe number %rd11 (< aux).
	setp.ge.u64 %p1, %rd11, %rd7;
	@%p1 bra $Lfind_miss;
	mad.lo.u64 %rd12, %rd10, %rd5, %rd6;
	{
	.param .b64 a0;
	.param .b32 r;
	st.param.b64 [a0], %rd12;
	call (r), bpf2ptx_map_hash_state, (a0);
	ld.param.b32 %r3, [r];
	}
	// Empty: the key is not in the map. Full: compare keys. Busy (after the wait),
	// deleted, or anything else: not this key, go on.
	setp.eq.u32 %p2, %r3, 0;
	@%p2 bra $Lfind_miss;
	setp.ne.u32 %p3, %r3, 2;
	@%p3 bra $Lfind_next;
	add.s64 %rd13, %rd12, 8;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b32 r;
	st.param.b64 [a0], %rd13;
	st.param.b64 [a1], %rd2;
	st.param.b64 [a2], %rd3;
	call (r), bpf2ptx_map_key_eq, (a0, a1, a2);
	ld.param.b32 %r3, [r];
	}
	setp.ne.u32 %p4, %r3, 0;
	@%p4 bra $Lfind_hit;
$Lfind_next:
	add.s64 %rd10, %rd10, 1;
	and.b64 %rd10, %rd10, %rd9;
	add.s64 %rd11, %rd11, 1;
	bra $Lfind_probe;
$Lfind_hit:
	st.param.b64 [ret], %rd12;
	ret;
$Lfind_miss:
	mov.u64 %rd14, 0;
	st.param.b64 [ret], %rd14;
	ret;
}

// Hash map update (flags already checked to be 0, 1 or 2). One probe pass from the home
// slot: a live slot with the key is the key's only slot (update in place, or -EEXIST for
// BPF_NOEXIST); the first empty slot ends the key's path, so the key is absent (-ENOENT
// for BPF_EXIST, else claim the slot with atom.cas 0 -> 1, write key and value, publish
// with a release store of 2). A lost claim re-reads the slot: the winner may be inserting
// the same key. A slot still busy after the bounded wait gives -EBUSY: walking past it
// could put the key in a second slot. No empty slot within aux probes: -E2BIG, counted in
// the descriptor's drops word.
.func (.param .b64 ret) bpf2ptx_map_hash_update(.param .b64 desc, .param .b64 key, .param .b64 value, .param .b64 flags)
{
	.reg .pred %p<8>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<22>;
	ld.param.b64 %rd1, [desc];
	ld.param.b64 %rd2, [key];
	ld.param.b64 %rd3, [value];
	ld.param.b64 %rd4, [flags];
	// Geometry: key size, value size, value offset in a slot (8 + round8(key size)),
	// slot size (value offset + stride), data, aux.
	ld.u32 %r1, [%rd1+8];
	cvt.u64.u32 %rd5, %r1;
	ld.u32 %r2, [%rd1+12];
	cvt.u64.u32 %rd6, %r2;
	ld.u32 %r3, [%rd1+20];
	cvt.u64.u32 %rd7, %r3;
	add.s64 %rd8, %rd5, 15;
	and.b64 %rd8, %rd8, -8;
	add.s64 %rd9, %rd8, %rd7;
	ld.b64 %rd10, [%rd1+24];
	ld.b64 %rd11, [%rd1+32];
	// Home slot: FNV-1a of the key, masked by aux - 1.
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd2;
	st.param.b64 [a1], %rd5;
	call (r), bpf2ptx_map_fnv1a, (a0, a1);
	ld.param.b64 %rd12, [r];
	}
	add.s64 %rd13, %rd11, -1;
	and.b64 %rd14, %rd12, %rd13;
	mov.u64 %rd15, 0;
$Lhupd_probe:
	// Slot %rd14, probe number %rd15 (< aux).
	setp.ge.u64 %p1, %rd15, %rd11;
	@%p1 bra $Lhupd_full;
	mad.lo.u64 %rd16, %rd14, %rd9, %rd10;
	{
	.param .b64 a0;
	.param .b32 r;
	st.param.b64 [a0], %rd16;
	call (r), bpf2ptx_map_hash_state, (a0);
	ld.param.b32 %r4, [r];
	}
	setp.ne.u32 %p2, %r4, 0;
	@%p2 bra $Lhupd_taken;
	// Empty: the key is absent. BPF_EXIST fails; otherwise claim the slot.
	setp.eq.u64 %p3, %rd4, 2;
	@%p3 bra $Lhupd_noent;
	atom.relaxed.gpu.cas.b32 %r4, [%rd16], 0, 1;
	setp.ne.u32 %p2, %r4, 0;
	@%p2 bra $Lhupd_lost;
	// Claimed: write the key and the value, then publish (the release orders them first).
	add.s64 %rd17, %rd16, 8;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	st.param.b64 [a0], %rd17;
	st.param.b64 [a1], %rd2;
	st.param.b64 [a2], %rd5;
	call bpf2ptx_copy, (a0, a1, a2);
	}
	add.s64 %rd18, %rd16, %rd8;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	st.param.b64 [a0], %rd18;
	st.param.b64 [a1], %rd3;
	st.param.b64 [a2], %rd6;
	call bpf2ptx_copy, (a0, a1, a2);
	}
	mov.u32 %r5, 2;
	st.release.gpu.b32 [%rd16], %r5;
	bra $Lhupd_ok;
$Lhupd_lost:
	// Another thread claimed the slot first: re-read it (acquire, waiting while busy).
	{
	.param .b64 a0;
	.param .b32 r;
	st.param.b64 [a0], %rd16;
	call (r), bpf2ptx_map_hash_state, (a0);
	ld.param.b32 %r4, [r];
	}
$Lhupd_taken:
	// Busy after the wait: give up (-EBUSY). Full with the key: found. Else go on.
	setp.eq.u32 %p4, %r4, 1;
	@%p4 bra $Lhupd_busy;
	setp.ne.u32 %p5, %r4, 2;
	@%p5 bra $Lhupd_next;
	add.s64 %rd17, %rd16, 8;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b32 r;
	st.param.b64 [a0], %rd17;
	st.param.b64 [a1], %rd2;
	st.param.b64 [a2], %rd5;
	call (r), bpf2ptx_map_key_eq, (a0, a1, a2);
	ld.param.b32 %r6, [r];
	}
	setp.eq.u32 %p6, %r6, 0;
	@%p6 bra $Lhupd_next;
	// Found: BPF_NOEXIST fails; otherwise write the value in place (not atomic: a
	// concurrent reader may see a torn value; Linux would swap in a new element by RCU).
	setp.eq.u64 %p7, %rd4, 1;
	@%p7 bra $Lhupd_exists;
	add.s64 %rd18, %rd16, %rd8;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	st.param.b64 [a0], %rd18;
	st.param.b64 [a1], %rd3;
	st.param.b64 [a2], %rd6;
	call bpf2ptx_copy, (a0, a1, a2);
	}
	bra $Lhupd_ok;
$Lhupd_next:
	add.s64 %rd14, %rd14, 1;
	and.b64 %rd14, %rd14, %rd13;
	add.s64 %rd15, %rd15, 1;
	bra $Lhupd_probe;
$Lhupd_full:
	// No empty slot on the whole path and the key not found.
	setp.eq.u64 %p3, %rd4, 2;
	@%p3 bra $Lhupd_noent;
	red.relaxed.gpu.add.u64 [%rd1+48], 1;
	mov.u64 %rd19, -7;
	bra $Lhupd_ret;
$Lhupd_ok:
	mov.u64 %rd19, 0;
	bra $Lhupd_ret;
$Lhupd_noent:
	mov.u64 %rd19, -2;
	bra $Lhupd_ret;
$Lhupd_exists:
	mov.u64 %rd19, -17;
	bra $Lhupd_ret;
$Lhupd_busy:
	mov.u64 %rd19, -16;
$Lhupd_ret:
	st.param.b64 [ret], %rd19;
	ret;
}

// The address of an array map's element for the u32 key at `key`, or 0 when the index is
// out of range: index >= max_entries, or, for a per-thread array (1502) or a per-warp
// array (1600), a thread whose global linear id, or warp whose global id, is >= aux (the
// threads or warps the storage was sized for). The caller has checked data != 0.
.func (.param .b64 ret) bpf2ptx_map_array_slot(.param .b64 desc, .param .b64 key)
{
	.reg .pred %p<4>;
	.reg .b32 %r<16>;
	.reg .b64 %rd<14>;
	ld.param.b64 %rd1, [desc];
	ld.param.b64 %rd2, [key];
	// The index: a little-endian u32, one load when 4-aligned, else four byte loads.
	and.b64 %rd3, %rd2, 3;
	setp.ne.u64 %p1, %rd3, 0;
	@%p1 bra $Larr_key_bytes;
	ld.u32 %r1, [%rd2];
	bra $Larr_key_done;
$Larr_key_bytes:
	ld.u8 %r1, [%rd2];
	ld.u8 %r2, [%rd2+1];
	ld.u8 %r3, [%rd2+2];
	ld.u8 %r4, [%rd2+3];
	shl.b32 %r2, %r2, 8;
	shl.b32 %r3, %r3, 16;
	shl.b32 %r4, %r4, 24;
	or.b32 %r1, %r1, %r2;
	or.b32 %r1, %r1, %r3;
	or.b32 %r1, %r1, %r4;
$Larr_key_done:
	// Index against max_entries; row = index for one-copy arrays.
	ld.u32 %r5, [%rd1+16];
	setp.ge.u32 %p2, %r1, %r5;
	@%p2 bra $Larr_none;
	cvt.u64.u32 %rd4, %r1;
	mov.u64 %rd13, 0;
	ld.u32 %r6, [%rd1];
	setp.ne.u32 %p3, %r6, 1502;
	setp.ne.u32 %p1, %r6, 1600;
	and.pred %p3, %p3, %p1;
	@%p3 bra $Larr_shard;
	// Per-thread array: global linear thread id = linear block index * threads per block
	// + linear thread index in the block; per-warp array: global warp id = linear block
	// index * warps per block (threads rounded up to 32) + linear thread index / 32;
	// row = index * aux + id, when id < aux.
	mov.u32 %r7, %ctaid.x;
	mov.u32 %r8, %ctaid.y;
	mov.u32 %r9, %ctaid.z;
	mov.u32 %r10, %nctaid.x;
	mov.u32 %r11, %nctaid.y;
	cvt.u64.u32 %rd5, %r9;
	cvt.u64.u32 %rd6, %r11;
	cvt.u64.u32 %rd7, %r8;
	mad.lo.u64 %rd5, %rd5, %rd6, %rd7;
	cvt.u64.u32 %rd6, %r10;
	cvt.u64.u32 %rd7, %r7;
	mad.lo.u64 %rd5, %rd5, %rd6, %rd7;
	mov.u32 %r7, %tid.x;
	mov.u32 %r8, %tid.y;
	mov.u32 %r9, %tid.z;
	mov.u32 %r10, %ntid.x;
	mov.u32 %r11, %ntid.y;
	mov.u32 %r12, %ntid.z;
	mad.lo.u32 %r13, %r9, %r11, %r8;
	mad.lo.u32 %r13, %r13, %r10, %r7;
	mul.lo.u32 %r14, %r10, %r11;
	mul.lo.u32 %r14, %r14, %r12;
	setp.eq.u32 %p1, %r6, 1600;
	@%p1 add.u32 %r14, %r14, 31;
	@%p1 shr.u32 %r14, %r14, 5;
	@%p1 shr.u32 %r13, %r13, 5;
	cvt.u64.u32 %rd6, %r14;
	cvt.u64.u32 %rd7, %r13;
	mad.lo.u64 %rd8, %rd5, %rd6, %rd7;
	ld.b64 %rd9, [%rd1+32];
	setp.ge.u64 %p3, %rd8, %rd9;
	@%p3 bra $Larr_none;
	mad.lo.u64 %rd4, %rd4, %rd9, %rd8;
	bra $Larr_address;
$Larr_shard:
	// A sharded array (aux = replicas, a power of two; 0 when unsharded): the calling
	// SM's replica (smid & (aux - 1)), each replica aux2 bytes (a multiple of 128, so no
	// two SMs share a cache line). Only adds reach a sharded array (the verifier proved
	// it), and the host sums the replicas.
	ld.b64 %rd9, [%rd1+32];
	setp.eq.u64 %p3, %rd9, 0;
	@%p3 bra $Larr_address;
	mov.u32 %r7, %smid;
	cvt.u32.u64 %r8, %rd9;
	sub.u32 %r8, %r8, 1;
	and.b32 %r7, %r7, %r8;
	ld.b64 %rd5, [%rd1+40];
	cvt.u64.u32 %rd6, %r7;
	mul.lo.u64 %rd13, %rd6, %rd5;
$Larr_address:
	// data + replica offset + row * stride.
	ld.b64 %rd10, [%rd1+24];
	add.u64 %rd10, %rd10, %rd13;
	ld.u32 %r15, [%rd1+20];
	cvt.u64.u32 %rd11, %r15;
	mad.lo.u64 %rd12, %rd4, %rd11, %rd10;
	st.param.b64 [ret], %rd12;
	ret;
$Larr_none:
	mov.u64 %rd12, 0;
	st.param.b64 [ret], %rd12;
	ret;
}

// bpf_map_lookup_elem: the address of the key's value, or 0 (NULL) when the map is
// unbound (data == 0), the index is out of range, the key is absent, or the map type has
// no lookup here.
.func (.param .b64 ret) bpf2ptx_map_lookup_elem(.param .b64 desc, .param .b64 key)
{
	.reg .pred %p<8>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<8>;
	ld.param.b64 %rd1, [desc];
	ld.param.b64 %rd2, [key];
	mov.u64 %rd3, 0;
	ld.b64 %rd4, [%rd1+24];
	setp.eq.u64 %p1, %rd4, 0;
	@%p1 bra $Llookup_done;
	// Dispatch on the map type: arrays (2, 1503, 6, 1502, 1600), hash maps (1, 1501).
	ld.u32 %r1, [%rd1];
	setp.eq.u32 %p2, %r1, 2;
	setp.eq.u32 %p3, %r1, 1503;
	or.pred %p2, %p2, %p3;
	setp.eq.u32 %p3, %r1, 6;
	or.pred %p2, %p2, %p3;
	setp.eq.u32 %p3, %r1, 1502;
	or.pred %p2, %p2, %p3;
	setp.eq.u32 %p3, %r1, 1600;
	or.pred %p2, %p2, %p3;
	@%p2 bra $Llookup_array;
	setp.eq.u32 %p4, %r1, 1;
	setp.eq.u32 %p5, %r1, 1501;
	or.pred %p4, %p4, %p5;
	@%p4 bra $Llookup_hash;
	bra $Llookup_done;
$Llookup_array:
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	call (r), bpf2ptx_map_array_slot, (a0, a1);
	ld.param.b64 %rd3, [r];
	}
	bra $Llookup_done;
$Llookup_hash:
	// The slot holding the key live, then its value at 8 + round8(key size).
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	call (r), bpf2ptx_map_hash_find, (a0, a1);
	ld.param.b64 %rd5, [r];
	}
	setp.eq.u64 %p6, %rd5, 0;
	@%p6 bra $Llookup_done;
	ld.u32 %r2, [%rd1+8];
	cvt.u64.u32 %rd6, %r2;
	add.s64 %rd6, %rd6, 15;
	and.b64 %rd6, %rd6, -8;
	add.s64 %rd3, %rd5, %rd6;
$Llookup_done:
	st.param.b64 [ret], %rd3;
	ret;
}

// bpf_map_update_elem: 0 or a negative errno. Unbound map, flags > BPF_EXIST, or a map
// type without update here: -EINVAL. Arrays, as Linux: index out of range -E2BIG, then
// BPF_NOEXIST -EEXIST (every element exists), else copy the value in place. Hash maps:
// bpf2ptx_map_hash_update.
.func (.param .b64 ret) bpf2ptx_map_update_elem(.param .b64 desc, .param .b64 key, .param .b64 value, .param .b64 flags)
{
	.reg .pred %p<8>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<10>;
	ld.param.b64 %rd1, [desc];
	ld.param.b64 %rd2, [key];
	ld.param.b64 %rd3, [value];
	ld.param.b64 %rd4, [flags];
	mov.u64 %rd5, -22;
	ld.b64 %rd6, [%rd1+24];
	setp.eq.u64 %p1, %rd6, 0;
	@%p1 bra $Lupdate_done;
	setp.gt.u64 %p1, %rd4, 2;
	@%p1 bra $Lupdate_done;
	// Dispatch on the map type: arrays (2, 1503, 6, 1502, 1600), hash maps (1, 1501).
	ld.u32 %r1, [%rd1];
	setp.eq.u32 %p2, %r1, 2;
	setp.eq.u32 %p3, %r1, 1503;
	or.pred %p2, %p2, %p3;
	setp.eq.u32 %p3, %r1, 6;
	or.pred %p2, %p2, %p3;
	setp.eq.u32 %p3, %r1, 1502;
	or.pred %p2, %p2, %p3;
	setp.eq.u32 %p3, %r1, 1600;
	or.pred %p2, %p2, %p3;
	@%p2 bra $Lupdate_array;
	setp.eq.u32 %p4, %r1, 1;
	setp.eq.u32 %p5, %r1, 1501;
	or.pred %p4, %p4, %p5;
	@%p4 bra $Lupdate_hash;
	bra $Lupdate_done;
$Lupdate_array:
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	call (r), bpf2ptx_map_array_slot, (a0, a1);
	ld.param.b64 %rd7, [r];
	}
	mov.u64 %rd5, -7;
	setp.eq.u64 %p6, %rd7, 0;
	@%p6 bra $Lupdate_done;
	mov.u64 %rd5, -17;
	setp.eq.u64 %p7, %rd4, 1;
	@%p7 bra $Lupdate_done;
	ld.u32 %r2, [%rd1+12];
	cvt.u64.u32 %rd8, %r2;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	st.param.b64 [a0], %rd7;
	st.param.b64 [a1], %rd3;
	st.param.b64 [a2], %rd8;
	call bpf2ptx_copy, (a0, a1, a2);
	}
	mov.u64 %rd5, 0;
	bra $Lupdate_done;
$Lupdate_hash:
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b64 a3;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	st.param.b64 [a2], %rd3;
	st.param.b64 [a3], %rd4;
	call (r), bpf2ptx_map_hash_update, (a0, a1, a2, a3);
	ld.param.b64 %rd5, [r];
	}
$Lupdate_done:
	st.param.b64 [ret], %rd5;
	ret;
}

// bpf_map_delete_elem: 0 or a negative errno. Unbound map, or a map type without delete
// (arrays, as Linux): -EINVAL. Hash maps: find the key's live slot and mark it deleted
// with atom.cas 2 -> 3; key absent, or a concurrent delete won the cas: -ENOENT.
.func (.param .b64 ret) bpf2ptx_map_delete_elem(.param .b64 desc, .param .b64 key)
{
	.reg .pred %p<6>;
	.reg .b32 %r<3>;
	.reg .b64 %rd<8>;
	ld.param.b64 %rd1, [desc];
	ld.param.b64 %rd2, [key];
	mov.u64 %rd3, -22;
	ld.b64 %rd4, [%rd1+24];
	setp.eq.u64 %p1, %rd4, 0;
	@%p1 bra $Ldelete_done;
	ld.u32 %r1, [%rd1];
	setp.eq.u32 %p2, %r1, 1;
	setp.eq.u32 %p3, %r1, 1501;
	or.pred %p2, %p2, %p3;
	@!%p2 bra $Ldelete_done;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	call (r), bpf2ptx_map_hash_find, (a0, a1);
	ld.param.b64 %rd5, [r];
	}
	mov.u64 %rd3, -2;
	setp.eq.u64 %p4, %rd5, 0;
	@%p4 bra $Ldelete_done;
	atom.relaxed.gpu.cas.b32 %r2, [%rd5], 2, 3;
	setp.ne.u32 %p5, %r2, 2;
	@%p5 bra $Ldelete_done;
	mov.u64 %rd3, 0;
$Ldelete_done:
	st.param.b64 [ret], %rd3;
	ret;
}
"#;

/// A CPU model of the device's hash map storage, for tests.
pub mod model {
    use super::*;

    /// A hash map's storage, laid out byte for byte as on the device (`aux` slots of
    /// [`hash_slot_size`] bytes), with the device's operations run one at a time.
    ///
    /// After the same sequence of single-threaded operations, [`HashTable::bytes`] equals
    /// the device's storage and `drops` its descriptor word 6. With concurrent operations
    /// only the set of live entries is comparable ([`HashTable::entries`]).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct HashTable {
        key_size: usize,
        value_size: usize,
        slots: usize,
        /// The storage (what the descriptor's `data` points at).
        pub bytes: Vec<u8>,
        /// Insertions refused because the table was full (descriptor word 6).
        pub drops: u64,
    }

    impl HashTable {
        /// An empty table sized for `max_entries` as the compiler sizes it
        /// ([`hash_slots`]).
        pub fn new(key_size: u32, value_size: u32, max_entries: u32) -> Self {
            Self::with_slots(key_size, value_size, hash_slots(max_entries))
        }

        /// An empty table of `slots` slots (descriptor word 4; a power of two).
        pub fn with_slots(key_size: u32, value_size: u32, slots: u64) -> Self {
            let bytes = vec![0; (slots * hash_slot_size(key_size, value_size)) as usize];
            Self::from_bytes(key_size, value_size, slots, bytes)
        }

        /// A table over existing storage, e.g. bytes read back from the device.
        ///
        /// # Panics
        ///
        /// If `slots` is not a power of two or `bytes` is not `slots` slots long.
        pub fn from_bytes(key_size: u32, value_size: u32, slots: u64, bytes: Vec<u8>) -> Self {
            assert!(slots.is_power_of_two(), "slots must be a power of two");
            assert_eq!(
                bytes.len() as u64,
                slots * hash_slot_size(key_size, value_size),
                "storage size"
            );
            Self {
                key_size: key_size as usize,
                value_size: value_size as usize,
                slots: slots as usize,
                bytes,
                drops: 0,
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

        /// The state word of slot `i`.
        pub fn state(&self, i: usize) -> u32 {
            let at = i * self.slot_size();
            u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap())
        }

        fn set_state(&mut self, i: usize, state: u32) {
            let at = i * self.slot_size();
            self.bytes[at..at + 4].copy_from_slice(&state.to_le_bytes());
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

        /// The probe path of `key`: slot indices from its home slot, `slots` of them.
        fn path(&self, key: &[u8]) -> impl Iterator<Item = usize> {
            let mask = self.slots - 1;
            let home = fnv1a(key) as usize & mask;
            (0..self.slots).map(move |n| (home + n) & mask)
        }

        /// The slot holding `key` live, as the device's lookup finds it.
        pub fn find(&self, key: &[u8]) -> Option<usize> {
            assert_eq!(key.len(), self.key_size, "key size");
            for i in self.path(key) {
                match self.state(i) {
                    SLOT_EMPTY => return None,
                    SLOT_FULL if self.key(i) == key => return Some(i),
                    _ => {}
                }
            }
            None
        }

        /// `map_lookup_elem`: the byte offset of the key's value in the storage (the
        /// device returns `data` + this offset), or `None` (NULL).
        pub fn lookup(&self, key: &[u8]) -> Option<usize> {
            self.find(key)
                .map(|i| i * self.slot_size() + self.value_offset())
        }

        /// `map_update_elem`: 0 or a negative errno, as the device returns it.
        pub fn update(&mut self, key: &[u8], value: &[u8], flags: u64) -> i64 {
            assert_eq!(key.len(), self.key_size, "key size");
            assert_eq!(value.len(), self.value_size, "value size");
            if flags > BPF_EXIST {
                return EINVAL;
            }
            let path: Vec<usize> = self.path(key).collect();
            for i in path {
                match self.state(i) {
                    SLOT_EMPTY => {
                        if flags == BPF_EXIST {
                            return ENOENT;
                        }
                        let at = i * self.slot_size() + 8;
                        self.bytes[at..at + self.key_size].copy_from_slice(key);
                        self.value_mut(i).copy_from_slice(value);
                        self.set_state(i, SLOT_FULL);
                        return 0;
                    }
                    SLOT_BUSY => return EBUSY,
                    SLOT_FULL if self.key(i) == key => {
                        if flags == BPF_NOEXIST {
                            return EEXIST;
                        }
                        self.value_mut(i).copy_from_slice(value);
                        return 0;
                    }
                    _ => {}
                }
            }
            if flags == BPF_EXIST {
                return ENOENT;
            }
            self.drops += 1;
            E2BIG
        }

        /// `map_delete_elem`: 0 or -ENOENT.
        pub fn delete(&mut self, key: &[u8]) -> i64 {
            match self.find(key) {
                Some(i) => {
                    self.set_state(i, SLOT_DELETED);
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

    #[test]
    fn geometry() {
        assert_eq!(hash_slots(0), 1);
        assert_eq!(hash_slots(1), 2);
        assert_eq!(hash_slots(3), 8);
        assert_eq!(hash_slots(4), 8);
        assert_eq!(hash_slot_size(4, 8), 24);
        assert_eq!(hash_slot_size(5, 1), 24);
        assert_eq!(hash_slot_size(9, 12), 40);
        assert_eq!(hash_storage_size(4, 8, 4), 8 * 24);
    }

    #[test]
    fn insert_lookup_delete() {
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
        assert_eq!(t.bytes[home * 24..home * 24 + 4], 2u32.to_le_bytes());
        assert_eq!(t.bytes[home * 24 + 8..home * 24 + 12], k);
        assert_eq!(t.delete(&k), 0);
        assert_eq!(t.delete(&k), ENOENT);
        assert_eq!(t.lookup(&k), None);
        assert_eq!(t.state(home), SLOT_DELETED);
        // Re-inserting takes a new slot; the deleted one is not reused.
        assert_eq!(t.update(&k, &5u64.to_le_bytes(), BPF_ANY), 0);
        assert_eq!(t.find(&k), Some((home + 1) & 7));
        assert_eq!(t.entries(), vec![(k.to_vec(), 5u64.to_le_bytes().to_vec())]);
    }

    #[test]
    fn collisions_probe_linearly_and_fill_the_table() {
        // Keys of 3 bytes (padded to 8) and values of 5 (stride 8): slot size 24.
        let mut t = HashTable::with_slots(3, 5, 4);
        let keys: Vec<[u8; 3]> = (0u8..4).map(|i| [i, 1, 2]).collect();
        for (n, k) in keys.iter().enumerate() {
            assert_eq!(t.update(k, &[n as u8; 5], BPF_ANY), 0);
        }
        for (n, k) in keys.iter().enumerate() {
            let off = t.lookup(k).unwrap();
            assert_eq!(t.bytes[off..off + 5], [n as u8; 5]);
        }
        // Full: a new key is refused and counted; an existing one still updates.
        assert_eq!(t.update(&[9, 9, 9], &[0; 5], BPF_ANY), E2BIG);
        assert_eq!(t.update(&[9, 9, 9], &[0; 5], BPF_EXIST), ENOENT);
        assert_eq!(t.drops, 1);
        assert_eq!(t.update(&keys[3], &[7; 5], BPF_ANY), 0);
        // Deleting frees no slot (deleted slots are not reused), but lookups of the other
        // keys still walk past it.
        assert_eq!(t.delete(&keys[0]), 0);
        assert_eq!(t.update(&[9, 9, 9], &[0; 5], BPF_ANY), E2BIG);
        assert_eq!(t.drops, 2);
        for k in &keys[1..] {
            assert!(t.lookup(k).is_some());
        }
        assert_eq!(t.entries().len(), 3);
    }

    #[test]
    fn every_key_has_one_live_slot() {
        // A pseudo-random sequence of operations on a small table: every live key is in
        // exactly one slot, and the model agrees with a map of the live entries.
        let mut t = HashTable::new(8, 4, 32);
        let mut live = std::collections::BTreeMap::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let key = (x % 40).to_le_bytes();
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
                        E2BIG => assert!(!present),
                        _ => panic!("unexpected {r}"),
                    }
                }
            }
            let mut entries = t.entries();
            entries.sort();
            let expect: Vec<_> = live.iter().map(|(k, v)| (k.to_vec(), v.to_vec())).collect();
            assert_eq!(entries, expect);
        }
    }

    #[test]
    fn ptx_text_defines_every_function_it_calls_but_the_copy() {
        let text = functions();
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
        assert_eq!(declarations().lines().count(), 3);
    }
}
