// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The hash-map protocol of specs/abi.md ("### Hash maps"), hand-written in CUDA C++ for
// the benchmark's twins (twin.cu), for maps of u32 keys and u64 values: the same slot
// layout, hash, counts block, operations and memory orders as bpf2ptx's device runtime
// (runtime-ptx/src/maps.rs), so that a twin is the floor an injected probe is measured
// against.
//
// As specs/abi.md stands at commit ca7df46 ("held state (3) ... fast path for keys of 8
// bytes or fewer ... warp-aggregated count reservation and release") with the changes of
// runtime-ptx/src/maps.rs at 26f3c89 that the text does not have yet: reservation, count
// check and LRU eviction under the home lock (a full map refused without the lock only
// when the home lock word read free after the count), a hit decided by three ordered
// loads, the key word stored with release, group_add acq_rel after bar.warp.sync.
//
// Storage: aux slots of 24 bytes (u32 state: 0 free, 1 busy, 2 full, 3 held; u32 meta =
// lock bit 31 | overflow count; the key word: the u32 key zero-extended to 8 bytes; the
// u64 value); an LRU map has one u32 stamp per slot after the slots. Counts block
// (HMap::cnt): u64 count at byte 0; 32 shards of 128 bytes at 128 + 128 * (smid & 31):
// u64 full, busy, evicted.
//
// The same source compiles for the host (no __CUDACC__), with GCC atomics and one lane
// per "warp", for the CPU stress test (cpu_test.cc): the protocol is checked there with
// real threads before it runs on a GPU.
#ifndef GPU_HASH_PROTO_CUH
#define GPU_HASH_PROTO_CUH

#ifndef __CUDACC__
#include <chrono>
#include <thread>
#endif

typedef unsigned long long u64;
typedef unsigned int u32;

// cpu_test.cc widens the window in which an update in place holds its slot.
#ifndef HP_IN_PLACE_HOOK
#define HP_IN_PLACE_HOOK() \
	do {               \
	} while (0)
#endif

namespace hp {

enum : u32 { FREE = 0, BUSY = 1, FULL = 2, HELD = 3, HELD_OR_FULL = 2 /* the bit */ };
enum : u32 { LOCK = 0x80000000u, OVF = 0x7fffffffu };
enum { ANY = 0, NOEXIST = 1, EXIST = 2 };
enum { E_NOENT = 2, E_2BIG = 7, E_BUSY = 16, E_EXIST = 17 };
enum { C_FULL = 0, C_BUSY = 1, C_EVICTED = 2 };
// maps::WAIT_SPINS, UPDATE_ROUNDS, LRU_SAMPLE, LRU_TRIES
enum : u32 { WAIT_SPINS = 65536, UPDATE_ROUNDS = 8, LRU_SAMPLE = 16, LRU_TRIES = 8 };
enum : u64 { SLOT = 24, KEY_OFF = 8, VAL_OFF = 16 };
enum : u32 { SHARDS = 32 };

// ---------------------------------------------------------------------------------------
// Primitives: PTX on the device, GCC atomics on the host.
#ifdef __CUDACC__
#define HD __device__ __forceinline__

HD u64 ld_relaxed_u64(const void *p)
{
	u64 v;
	asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
HD u32 ld_relaxed_u32(const void *p)
{
	u32 v;
	asm volatile("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
HD u32 ld_acquire_u32(const void *p)
{
	u32 v;
	asm volatile("ld.acquire.gpu.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
// Weak loads (plain ld: the SM's L1 may serve them), as the runtime's filters and hints.
HD u64 ld_weak_u64(const void *p)
{
	u64 v;
	asm volatile("ld.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
HD u32 ld_weak_u32(const void *p)
{
	u32 v;
	asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}
HD void st_relaxed_u32(void *p, u32 v)
{
	asm volatile("st.relaxed.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
HD void st_release_u32(void *p, u32 v)
{
	asm volatile("st.release.gpu.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
HD u32 cas_relaxed(void *p, u32 cmp, u32 val)
{
	u32 old;
	asm volatile("atom.relaxed.gpu.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(p), "r"(cmp), "r"(val) : "memory");
	return old;
}
HD u32 cas_acquire(void *p, u32 cmp, u32 val)
{
	u32 old;
	asm volatile("atom.acquire.gpu.cas.b32 %0, [%1], %2, %3;" : "=r"(old) : "l"(p), "r"(cmp), "r"(val) : "memory");
	return old;
}
HD u32 or_acquire(void *p, u32 v)
{
	u32 old;
	asm volatile("atom.acquire.gpu.or.b32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
	return old;
}
HD void and_release(void *p, u32 v)
{
	asm volatile("red.release.gpu.and.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
HD void red_add_u32(void *p, u32 v)
{
	asm volatile("red.relaxed.gpu.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
HD u64 atom_add_u64(void *p, u64 v)
{
	u64 old;
	asm volatile("atom.relaxed.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
	return old;
}
HD u64 atom_add_acq_rel_u64(void *p, u64 v)
{
	u64 old;
	asm volatile("atom.acq_rel.gpu.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
	return old;
}
HD u64 ld_acquire_u64(const void *p)
{
	u64 v;
	asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
HD void st_release_u64(void *p, u64 v)
{
	asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
HD void warp_sync(u32 mask) { __syncwarp(mask); }
HD void red_add_u64(void *p, u64 v)
{
	asm volatile("red.relaxed.gpu.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
HD void sleep_ns(u32 ns) { __nanosleep(ns); }
HD u32 smid()
{
	u32 s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}
HD u32 laneid()
{
	u32 l;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
	return l;
}
HD u64 globaltimer()
{
	u64 t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}
HD u32 activemask() { return __activemask(); }
HD u32 popc(u32 m) { return __popc(m); }
HD u32 lowest_lane(u32 m) { return __ffs(m) - 1; }
HD u64 shfl_u64(u32 mask, u64 v, u32 lane) { return __shfl_sync(mask, v, lane); }
HD u32 lanemask_lt()
{
	u32 m;
	asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
	return m;
}
#else
#define HD static inline

HD u64 ld_relaxed_u64(const void *p) { return __atomic_load_n((const u64 *)p, __ATOMIC_RELAXED); }
HD u32 ld_relaxed_u32(const void *p) { return __atomic_load_n((const u32 *)p, __ATOMIC_RELAXED); }
HD u32 ld_acquire_u32(const void *p) { return __atomic_load_n((const u32 *)p, __ATOMIC_ACQUIRE); }
// The host has no weak load that may race: relaxed atomics stand for them.
HD u64 ld_weak_u64(const void *p) { return __atomic_load_n((const u64 *)p, __ATOMIC_RELAXED); }
HD u32 ld_weak_u32(const void *p) { return __atomic_load_n((const u32 *)p, __ATOMIC_RELAXED); }
HD void st_relaxed_u32(void *p, u32 v) { __atomic_store_n((u32 *)p, v, __ATOMIC_RELAXED); }
HD void st_release_u32(void *p, u32 v) { __atomic_store_n((u32 *)p, v, __ATOMIC_RELEASE); }
HD u32 cas_relaxed(void *p, u32 cmp, u32 val)
{
	__atomic_compare_exchange_n((u32 *)p, &cmp, val, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return cmp;
}
HD u32 cas_acquire(void *p, u32 cmp, u32 val)
{
	__atomic_compare_exchange_n((u32 *)p, &cmp, val, false, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE);
	return cmp;
}
HD u32 or_acquire(void *p, u32 v) { return __atomic_fetch_or((u32 *)p, v, __ATOMIC_ACQUIRE); }
HD void and_release(void *p, u32 v) { __atomic_fetch_and((u32 *)p, v, __ATOMIC_RELEASE); }
HD void red_add_u32(void *p, u32 v) { __atomic_fetch_add((u32 *)p, v, __ATOMIC_RELAXED); }
HD u64 atom_add_u64(void *p, u64 v) { return __atomic_fetch_add((u64 *)p, v, __ATOMIC_RELAXED); }
HD u64 atom_add_acq_rel_u64(void *p, u64 v) { return __atomic_fetch_add((u64 *)p, v, __ATOMIC_ACQ_REL); }
HD u64 ld_acquire_u64(const void *p) { return __atomic_load_n((const u64 *)p, __ATOMIC_ACQUIRE); }
HD void st_release_u64(void *p, u64 v) { __atomic_store_n((u64 *)p, v, __ATOMIC_RELEASE); }
HD void warp_sync(u32) {}
HD void red_add_u64(void *p, u64 v) { __atomic_fetch_add((u64 *)p, v, __ATOMIC_RELAXED); }
HD void sleep_ns(u32 ns)
{
	if (ns >= 512)
		std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
	else
		std::this_thread::yield();
}
HD u32 smid() { return 0; }
HD u32 laneid() { return 0; }
HD u64 globaltimer()
{
	return (u64)std::chrono::duration_cast<std::chrono::nanoseconds>(
		       std::chrono::steady_clock::now().time_since_epoch())
		.count();
}
HD u32 activemask() { return 1; }
HD u32 popc(u32 m) { return (u32)__builtin_popcount(m); }
HD u32 lowest_lane(u32 m) { return (u32)__builtin_ctz(m); }
HD u64 shfl_u64(u32, u64 v, u32) { return v; }
HD u32 lanemask_lt() { return 0; }
#endif

// ---------------------------------------------------------------------------------------
// The map: what the descriptor says (data, aux, counts block, max_entries, type).
struct HMap {
	char *data;   // word 3
	u64 *cnt;     // word 5: the counts block
	u64 aux;      // word 4: slots, a power of two >= 2 * max_entries
	u32 max;      // word 2 low
	bool lru;     // type 9
};

HD char *slot(const HMap &m, u64 i) { return m.data + i * SLOT; }
HD u32 *statep(const HMap &m, u64 i) { return (u32 *)slot(m, i); }
HD u32 *metap(const HMap &m, u64 i) { return (u32 *)slot(m, i) + 1; }
HD u64 *keyp(const HMap &m, u64 i) { return (u64 *)(slot(m, i) + KEY_OFF); } // the key word
HD u64 *valp(const HMap &m, u64 i) { return (u64 *)(slot(m, i) + VAL_OFF); }
HD u32 *stampp(const HMap &m, u64 i) { return (u32 *)(m.data + m.aux * SLOT) + i; }

// FNV-1a 64 over the 4 little-endian bytes of the key.
HD u64 fnv1a(u32 key)
{
	u64 h = 0xcbf29ce484222325ull;
	for (int b = 0; b < 4; b++) {
		h ^= (key >> (8 * b)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

// LRU stamps: %globaltimer >> 10 (about microseconds), plain stores.
HD void stamp(const HMap &m, u64 i)
{
	if (m.lru)
		*(volatile u32 *)stampp(m, i) = (u32)(globaltimer() >> 10);
}

// maps.rs group_add: `delta` added for every converged lane calling with the same word
// (at one call site of the twins that is every lane there: one map, one SM), one
// atom.add of the group's sum by its lowest lane, acq_rel after a bar.warp.sync of the
// group (every member's earlier accesses, a lock it took, are ordered before the
// leader's release); each lane gets the old value plus the deltas of the group's lanes
// below it.
HD u64 group_add(u64 *word, u64 delta)
{
	u32 g = activemask();
	u32 lead = lowest_lane(g);
	u64 old = 0;
	warp_sync(g);
	if (laneid() == lead)
		old = atom_add_acq_rel_u64(word, delta * popc(g));
	old = shfl_u64(g, old, lead);
	return old + delta * popc(g & lanemask_lt());
}

// Counter `which` of the SM's shard, aggregated over the converged lanes.
HD void note(const HMap &m, int which)
{
	group_add(&m.cnt[16 + 16 * (smid() & (SHARDS - 1)) + which], 1);
}

// Wait (32 ns doubling to 1 us, WAIT_SPINS sleeps at most) while the lock bit at p is
// set (relaxed re-reads). false: timed out.
HD bool wait_clear_lock(u32 *p)
{
	u32 ns = 32;
	for (u32 s = 0; s < WAIT_SPINS; s++) {
		sleep_ns(ns);
		ns = ns * 2 < 1024 ? ns * 2 : 1024;
		if (!(ld_relaxed_u32(p) & LOCK))
			return true;
	}
	return false;
}

// find(K): distance from home of the slot holding K live (full or held), or -1. The fast
// path of keys of 8 bytes or fewer: per slot one weak load of the header (state, meta)
// and one of the key word, both in flight, as a filter (maps.rs at 1b8a677; WEAK = false:
// relaxed loads, the protocol before it); a slot that passes is decided by three ordered
// loads: the state (acquire), the key word (acquire), the state again (relaxed).
// Overflow count 0 = miss; a busy slot is not waited for.
template <bool WEAK = true> HD long long find(const HMap &m, u32 key, u64 home)
{
	u64 mask = m.aux - 1;
	u64 kw = key; // zero-extended, as insertions store it
	for (u64 d = 0; d < m.aux; d++) {
		u64 i = (home + d) & mask;
		u64 h = WEAK ? ld_weak_u64(slot(m, i)) : ld_relaxed_u64(slot(m, i));
		u64 k = WEAK ? ld_weak_u64(keyp(m, i)) : ld_relaxed_u64(keyp(m, i));
		if ((h & HELD_OR_FULL) && k == kw) {
			u32 s1 = ld_acquire_u32(statep(m, i));
			u64 k2 = ld_acquire_u64(keyp(m, i));
			u32 s3 = ld_relaxed_u32(statep(m, i));
			if ((s1 & s3 & HELD_OR_FULL) && k2 == kw)
				return (long long)d;
		}
		if (((u32)(h >> 32) & OVF) == 0)
			return -1;
	}
	return -1;
}

// Hold a full slot (atom.cas full -> held, acquire: its key and value are visible; the
// key stays live): 1 held; 0 not live (busy or free: find again); 2 still held by
// another thread after WAIT_SPINS sleeps.
HD int hold(u32 *st)
{
	u32 ns = 32;
	for (u32 s = 0;; s++) {
		u32 old = cas_acquire(st, FULL, HELD);
		if (old == FULL)
			return 1;
		if (old != HELD)
			return 0;
		if (s >= WAIT_SPINS)
			return 2;
		sleep_ns(ns);
		ns = ns * 2 < 1024 ? ns * 2 : 1024;
	}
}

// Unlink the busy slot at distance d from home: overflow counts of the d slots passed
// -1, then free it (release).
HD void unlink(const HMap &m, u64 home, u64 d)
{
	u64 mask = m.aux - 1;
	for (u64 j = 0; j < d; j++)
		red_add_u32(metap(m, (home + j) & mask), (u32)-1);
	st_release_u32(statep(m, (home + d) & mask), FREE);
}

// Reserve a place in the count (under the home lock): with AGG (the spec) one atom.add
// per converged group (group_add), each lane taking the place after the lanes below it
// and the lanes past max_entries giving theirs back (one atomic per group again);
// without AGG (before ca7df46, a data point), one atom.add per lane. true: reserved.
template <bool AGG> HD bool reserve(const HMap &m)
{
	if (AGG) {
		if (group_add(m.cnt, 1) < m.max)
			return true;
		group_add(m.cnt, (u64)-1);
		return false;
	}
	if (atom_add_u64(m.cnt, 1) < m.max)
		return true;
	red_add_u64(m.cnt, (u64)-1);
	return false;
}

// LRU eviction (sampled), as maps.rs: from slot hash >> 32 (the hash's upper half),
// read LRU_SAMPLE slot states (relaxed), take the full one (not held) with the largest
// age now - stamp (u32, unsigned: a stamp written after `now` looks oldest; ties to the
// later slot), claim it full -> busy without waiting, unlink it; its place in the count
// passes to the caller. LRU_TRIES samples, each from the next slots. true: evicted.
HD bool evict(const HMap &m, u64 hash)
{
	u64 mask = m.aux - 1;
	u32 now = (u32)(globaltimer() >> 10);
	u64 at = hash >> 32;
	for (u32 t = 0; t < LRU_TRIES; t++, at += LRU_SAMPLE) {
		long long best = -1;
		u32 age = 0;
		for (u32 j = 0; j < LRU_SAMPLE; j++) {
			u64 i = (at + j) & mask;
			if (ld_relaxed_u32(statep(m, i)) != FULL)
				continue;
			u32 a = now - *(volatile u32 *)stampp(m, i);
			if (best < 0 || a >= age) {
				best = (long long)i;
				age = a;
			}
		}
		if (best < 0)
			continue;
		u64 v = (u64)best;
		if (cas_acquire(statep(m, v), FULL, BUSY) != FULL)
			continue;
		u64 vh = fnv1a((u32)*keyp(m, v)) & mask;
		unlink(m, vh, (v - vh) & mask);
		note(m, C_EVICTED);
		return true;
	}
	return false;
}

// bpf_map_lookup_elem: the value's address or NULL; LRU: stamps the slot.
HD u64 *lookup(const HMap &m, u32 key)
{
	u64 home = fnv1a(key) & (m.aux - 1);
	long long d = find(m, key, home);
	if (d < 0)
		return nullptr;
	u64 i = (home + (u64)d) & (m.aux - 1);
	stamp(m, i);
	return valp(m, i);
}

// Update in place at slot i (found live): hold it (full -> held; the key stays live),
// check the key, copy the value, publish (held -> full). 0 done; 1 find again (the slot
// is not live any more, or holds another key); -E_BUSY still held by another.
HD int in_place(const HMap &m, u64 i, u32 key, u64 value)
{
	int c = hold(statep(m, i));
	if (c == 2)
		return -E_BUSY;
	if (c == 0)
		return 1;
	if (*keyp(m, i) != (u64)key) {
		st_release_u32(statep(m, i), FULL);
		return 1;
	}
	*valp(m, i) = value;
	HP_IN_PLACE_HOOK();
	st_release_u32(statep(m, i), FULL);
	stamp(m, i);
	return 0;
}

// Take the home lock (atom.or of bit 31, acquire; relaxed re-reads with nanosleep while
// it is held). false: timed out.
HD bool lock_home(u32 *lock)
{
	for (;;) {
		if (!(or_acquire(lock, LOCK) & LOCK))
			return true;
		if (!wait_clear_lock(lock))
			return false;
	}
}

// bpf_map_update_elem: 0 or -errno. As maps.rs at 26f3c89 (EARLY: the reservation as
// specs/abi.md at ca7df46 has it, before the lock): the count (acquire), the home
// lock word (acquire), then find. Present: NOEXIST refuses, else update in place.
// Absent: EXIST refuses; a full hash map whose home lock was free refuses without the
// lock; else take the home lock, find again (present: unlock, update in place), reserve
// a place in the count under the lock (none left: refuse, or an LRU map evicts under the
// lock and takes the victim's place), claim the first free slot from home (+1 overflow on
// every slot passed), store the key word with release, the value, publish, unlock.
template <bool AGG = true, bool EARLY = false> HD int update(const HMap &m, u32 key, u64 value, int flags)
{
	u64 mask = m.aux - 1;
	u64 hash = fnv1a(key);
	u64 home = hash & mask;
	u32 *lock = metap(m, home);
	// Whether the round reads the count and the lock word with acquire (maps.ptx: after a
	// wait, or after the recheck below).
	bool ordered = false;
	for (u32 round = 0; round < UPDATE_ROUNDS; round++) {
		// maps.rs at 1b8a677: weak reads before any wait for the lock (the twin waits
		// only inside lock_home, after them).
		u64 cnt = EARLY ? 0 : ordered ? ld_acquire_u64(m.cnt) : ld_weak_u64(m.cnt);
		u32 lw = EARLY ? 0 : ordered ? ld_acquire_u32(lock) : ld_weak_u32(lock);
		long long d = find(m, key, home);
		if (d < 0) {
			if (flags == EXIST)
				return -E_NOENT;
			if (EARLY) {
				// specs/abi.md at ca7df46: reserve (relaxed look, then one atomic per
				// group) before the lock; refuse or evict without it.
				if (ld_relaxed_u64(m.cnt) >= m.max || !reserve<AGG>(m)) {
					if (!m.lru) {
						note(m, C_FULL);
						return -E_2BIG;
					}
					if (!evict(m, hash))
						break;
				}
			} else if (!m.lru && cnt >= m.max && !(lw & LOCK)) {
				note(m, C_FULL);
				return -E_2BIG;
			} else if (!m.lru && !ordered && cnt < m.max && ld_acquire_u64(m.cnt) >= m.max) {
				// maps.ptx: a weak count that said room, rechecked with acquire before
				// the lock; full: the round again with acquire reads (not counted).
				ordered = true;
				round--;
				continue;
			}
			if (!lock_home(lock)) {
				if (EARLY)
					red_add_u64(m.cnt, (u64)-1);
				break;
			}
			d = find(m, key, home);
			if (d < 0) {
				// maps.rs at 26f3c89: a place in the count under the lock.
				if (!EARLY && !reserve<AGG>(m)) {
					if (!m.lru) {
						and_release(lock, ~LOCK);
						note(m, C_FULL);
						return -E_2BIG;
					}
					if (!evict(m, hash)) {
						and_release(lock, ~LOCK);
						break;
					}
				}
				u64 j = 0;
				for (; j < m.aux; j++) {
					u64 i = (home + j) & mask;
					if (cas_relaxed(statep(m, i), FREE, BUSY) == FREE)
						break;
					red_add_u32(metap(m, i), 1);
				}
				if (j == m.aux) {
					for (u64 k = 0; k < m.aux; k++)
						red_add_u32(metap(m, (home + k) & mask), (u32)-1);
					red_add_u64(m.cnt, (u64)-1);
					and_release(lock, ~LOCK);
					break;
				}
				u64 i = (home + j) & mask;
				st_release_u64(keyp(m, i), key); // the whole key word, zero-extended
				*valp(m, i) = value;
				st_release_u32(statep(m, i), FULL);
				and_release(lock, ~LOCK);
				stamp(m, i);
				return 0;
			}
			// Inserted meanwhile: unlock (EARLY: give the place back), then it is present.
			and_release(lock, ~LOCK);
			if (EARLY)
				red_add_u64(m.cnt, (u64)-1);
		}
		if (flags == NOEXIST)
			return -E_EXIST;
		int r = in_place(m, (home + (u64)d) & mask, key, value);
		if (r == 1)
			continue;
		if (r == 0)
			return 0;
		break;
	}
	note(m, C_BUSY);
	return -E_BUSY;
}

// bpf_map_delete_elem: 0 or -errno.
template <bool AGG = true> HD int remove(const HMap &m, u32 key)
{
	u64 mask = m.aux - 1;
	u64 home = fnv1a(key) & mask;
	for (u32 round = 0; round < UPDATE_ROUNDS; round++) {
		long long d = find(m, key, home);
		if (d < 0)
			return -E_NOENT;
		u64 i = (home + (u64)d) & mask;
		int c = hold(statep(m, i));
		if (c == 2)
			break;
		if (c == 0)
			continue;
		if (*keyp(m, i) != (u64)key) {
			st_release_u32(statep(m, i), FULL);
			continue;
		}
		st_relaxed_u32(statep(m, i), BUSY); // K leaves the map
		unlink(m, home, (u64)d);
		if (AGG)
			group_add(m.cnt, (u64)-1);
		else
			red_add_u64(m.cnt, (u64)-1);
		return 0;
	}
	note(m, C_BUSY);
	return -E_BUSY;
}

} // namespace hp
#endif
