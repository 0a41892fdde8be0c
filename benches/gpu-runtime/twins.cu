// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Hand-written CUDA C++ twins of the runtime-operation probes (src/*.bpf.c): the same
// operation, the same memory layout (specs/abi.md, "Maps (device runtime)") and the same
// placement (the harness passes device or mapped pinned host pointers), written the way a
// CUDA programmer would, with everything known at compile time. Every kernel also stores
// 0 through `result` from each thread that runs the operation, as the `--entry` kernels
// bpf2ptx emits store r0 there.
//
//     nvcc -arch=sm_90 -O3 -cubin twins.cu -o twins.cubin
//     nvcc -arch=sm_90 -O3 -cubin -DSYSTEM_SCOPE twins.cu -o twins_sys.cubin
//
// SYSTEM_SCOPE builds the host-placement twins: system-scope atomics and acquire/release,
// what bpf2ptx emits for a map compiled with `--map NAME=host` (the host reads it while
// the kernel runs), so host rows compare the same operation. A ring placed in the host
// has only its bytes there: its counters, bound and drops stay in device memory
// with `.gpu` atomics in both builds, and only the record stores (header, release of the
// flags) take the system scope, as bpf2ptx does (runtime-ptx/src/ringbuf.rs, "Placement").
#include <cstdint>

#ifdef SYSTEM_SCOPE
#define atomicAdd atomicAdd_system
#define atomicCAS atomicCAS_system
#define SCOPE "sys"
#else
#define SCOPE "gpu"
#endif

typedef unsigned long long u64;

__device__ __forceinline__ unsigned smid()
{
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}

__device__ __forceinline__ u64 gid() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }

// Arrays: slot (gid % N) += 1 (N = 1 for the one-slot case), plain or sharded into
// `shards` (a power of two) per-SM replicas of the whole array, each padded to whole
// 128-byte lines (replica smid & (shards - 1)), as bpf2ptx does (specs/abi.md).
template <unsigned N>
__device__ __forceinline__ void array_add(u64 *slots, unsigned shards, u64 key)
{
	constexpr u64 replica_words = (N * 8 + 127) / 128 * 16;
	u64 row = key;
	if (shards)
		row += (u64)(smid() & (shards - 1)) * replica_words;
	atomicAdd(&slots[row], 1ULL);
}

extern "C" __global__ void twin_array_n(u64 *slots, u64 *result)
{
	array_add<1024>(slots, 0, gid() % 1024);
	*result = 0;
}
extern "C" __global__ void twin_array_n_sharded(u64 *slots, u64 *result)
{
	array_add<1024>(slots, 256, gid() % 1024);
	*result = 0;
}
extern "C" __global__ void twin_array_1(u64 *slots, u64 *result)
{
	array_add<1>(slots, 0, 0);
	*result = 0;
}
extern "C" __global__ void twin_array_1_sharded(u64 *slots, u64 *result)
{
	array_add<1>(slots, 256, 0);
	*result = 0;
}

// One update per warp, by the lowest active lane: slot (global warp id % 1024) += 1.
__device__ __forceinline__ bool warp_leader()
{
	unsigned mask = __activemask();
	return (threadIdx.x & 31) == (unsigned)(__ffs(mask) - 1);
}
extern "C" __global__ void twin_warp_array(u64 *slots, u64 *result)
{
	if (!warp_leader())
		return;
	array_add<1024>(slots, 0, (gid() / 32) % 1024);
	*result = 0;
}
extern "C" __global__ void twin_warp_array_sharded(u64 *slots, u64 *result)
{
	if (!warp_leader())
		return;
	array_add<1024>(slots, 256, (gid() / 32) % 1024);
	*result = 0;
}

// Per-thread array (one key): the thread's own slot += gid, for gid < threads.
extern "C" __global__ void twin_thread_array(u64 *slots, u64 *result, u64 threads)
{
	u64 id = gid();
	if (id < threads)
		slots[id] += id;
	*result = 0;
}

// Hash map with u64 keys and u64 values: slots of {u32 state, u32 pad, u64 key, u64 value}
// (24 bytes), `nslots` a power of two, FNV-1a of the key's 8 bytes, linear probing; a slot
// is claimed with cas 0 -> 1 on its state and published with a release store of 2.
struct Slot {
	unsigned state, pad;
	u64 key, value;
};

__device__ __forceinline__ u64 fnv1a8(u64 key)
{
	u64 h = 0xcbf29ce484222325ULL;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		h ^= (key >> (8 * i)) & 0xff;
		h *= 0x100000001b3ULL;
	}
	return h;
}

__device__ __forceinline__ unsigned load_acquire(const unsigned *p)
{
	unsigned v;
	asm volatile("ld.acquire." SCOPE ".b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
	return v;
}

__device__ __forceinline__ void store_release(unsigned *p, unsigned v)
{
	asm volatile("st.release." SCOPE ".b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// State of a slot, waiting (bounded) while it is being written.
__device__ __forceinline__ unsigned slot_state(Slot *s)
{
	unsigned st;
	for (int i = 0; (st = load_acquire(&s->state)) == 1 && i < 1000; i++)
		;
	return st;
}

__device__ __forceinline__ Slot *hash_find(Slot *t, u64 nslots, u64 key)
{
	u64 mask = nslots - 1, i = fnv1a8(key) & mask;
	for (u64 n = 0; n < nslots; n++, i = (i + 1) & mask) {
		unsigned st = slot_state(&t[i]);
		if (st == 0)
			return nullptr;
		if (st == 2 && t[i].key == key)
			return &t[i];
	}
	return nullptr;
}

// 0, -17 (exists, with noexist), -16 (busy), -7 (full).
__device__ __forceinline__ int hash_update(Slot *t, u64 nslots, u64 key, u64 value, bool noexist)
{
	u64 mask = nslots - 1, i = fnv1a8(key) & mask;
	for (u64 n = 0; n < nslots; n++, i = (i + 1) & mask) {
		unsigned st = slot_state(&t[i]);
		if (st == 0) {
			st = atomicCAS(&t[i].state, 0u, 1u);
			if (st == 0) {
				t[i].key = key;
				t[i].value = value;
				store_release(&t[i].state, 2);
				return 0;
			}
			st = slot_state(&t[i]);
		}
		if (st == 1)
			return -16;
		if (st == 2 && t[i].key == key) {
			if (noexist)
				return -17;
			t[i].value = value;
			return 0;
		}
	}
	return -7;
}

// Lookup; if absent insert 0 (noexist) and look up again; add 1.
extern "C" __global__ void twin_hash_add(Slot *t, u64 *result, u64 nslots)
{
	u64 key = gid() % 4096;
	Slot *s = hash_find(t, nslots, key);
	if (!s) {
		hash_update(t, nslots, key, 0, true);
		s = hash_find(t, nslots, key);
	}
	if (s)
		atomicAdd(&s->value, 1ULL);
	*result = 0;
}

// update(key, key * 3 + 1, BPF_ANY).
extern "C" __global__ void twin_hash_update(Slot *t, u64 *result, u64 nslots)
{
	u64 key = gid() % 4096;
	hash_update(t, nslots, key, key * 3 + 1, false);
	*result = 0;
}

// Ring buffer output of 16 bytes {gid, ~gid}: the bpf2ptx ring layout (8-byte header
// {u32 len, u32 flags (bit 31 busy)}, records 8-aligned, never wrapping; counters
// {producer, consumer}; `bound` is descriptor word 7, the producer plus the claims in
// flight), reserved per warp: the lowest active lane reads the consumer and the bound,
// claims as many records as fit on the bound with one atomicAdd, keeps those that fit
// below what it returned, gives the rest back and takes the kept ones with one atomicAdd on
// the producer; each lane writes its record at its prefix and publishes it with a release
// store. A record that does not fit is dropped and counted. The counters, bound and drops
// are in device memory in both builds (plain, `.gpu`, atomics); the record's stores use
// SCOPE.
#ifdef SYSTEM_SCOPE
#undef atomicAdd
#endif
__device__ __forceinline__ u64 ld_relaxed(const u64 *p)
{
	u64 v;
	asm volatile("ld.relaxed.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}
__device__ __forceinline__ u64 ld_acquire64(const u64 *p)
{
	u64 v;
	asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
	return v;
}

extern "C" __global__ void twin_ring_output(unsigned char *ring, u64 *ctr, u64 *result,
					     u64 size, u64 *bound, u64 *drops)
{
	const u64 t = 8 + 16;
	unsigned mask = __activemask();
	unsigned lane = threadIdx.x & 31;
	unsigned leader = __ffs(mask) - 1;
	unsigned rank = __popc(mask & ((1u << lane) - 1));
	unsigned n = __popc(mask);
	u64 pos = 0;
	unsigned ok = 0;
	if (lane == leader) {
		u64 cons = ld_acquire64(&ctr[1]);
		u64 b = ld_relaxed(bound);
		u64 room = cons <= b && b <= cons + size ? cons + size - b : 0;
		unsigned k0 = (unsigned)min((u64)n, room / t);
		if (k0) {
			u64 old = atomicAdd(bound, k0 * t);
			u64 left = cons <= old && old <= cons + size ? cons + size - old : 0;
			ok = (unsigned)min((u64)k0, left / t);
			if (ok < k0)
				atomicAdd(bound, (u64)0 - (k0 - ok) * t);
			if (ok)
				pos = atomicAdd(&ctr[0], ok * t);
		}
		if (ok < n)
			atomicAdd(drops, (u64)(n - ok));
	}
	ok = __shfl_sync(mask, ok, leader);
	pos = __shfl_sync(mask, pos, leader);
	if (rank < ok) {
		u64 off = (pos + rank * t) & (size - 1);
		if (off + t <= size) {
			u64 *rec = (u64 *)(ring + off);
			u64 id = gid();
			asm volatile("st.relaxed." SCOPE ".b64 [%0], %1;" ::"l"(rec),
				     "l"(16 | 0x8000000000000000ULL) : "memory");
			rec[1] = id;
			rec[2] = ~id;
			asm volatile("st.release." SCOPE ".b32 [%0], %1;" ::"l"((char *)rec + 4), "r"(0u)
				     : "memory");
		} else {
			atomicAdd(drops, 1ULL);
		}
	}
	*result = 0;
}
#ifdef SYSTEM_SCOPE
#define atomicAdd atomicAdd_system
#endif

// The empty probe: only the result store.
extern "C" __global__ void twin_empty(u64 *result) { *result = 0; }
