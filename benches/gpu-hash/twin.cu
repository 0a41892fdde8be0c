// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Hand-written CUDA C++ twins of the hash-map benchmark probes (benches/gpu-hash/probes):
// vecadd (examples/apps/vecadd.cu) with the probe's logic at kernel entry and exit, on
// the protocol of specs/abi.md "### Hash maps" (hash_proto.cuh). bench.py launches each
// with the launch shape of the injected module it is compared with.
//
// Arrays the probes only add to are laid out as bpf2ptx lays them out (sharded: 256
// replicas, SM s uses replica s & 255, each replica whole 128-byte lines): hist = 256 x
// 64 u64, missed = 256 x 16 u64 (one u64 used per replica).
//
// Hash maps are passed as (data, counts block, aux, max_entries); the host allocates and
// zeroes them (aux * 24 bytes, + aux * 4 rounded up to 8 for LRU stamps; 4224 bytes of
// counts).
//
//     nvcc -cubin -arch=sm_90 -O3 twin.cu -o twin.cubin
#include "hash_proto.cuh"

using hp::HMap;

#define HASH_ARGS char *data, u64 *cnt, u64 aux, u32 max_entries
#define VEC_ARGS const float *a, const float *b, float *c, int n

__device__ __forceinline__ u64 global_tid()
{
	u64 blk = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	u64 thr = ((u64)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
	return blk * ((u64)blockDim.x * blockDim.y * blockDim.z) + thr;
}

// bpf2ptx's warp leader: the lowest active lane.
__device__ __forceinline__ bool warp_leader()
{
	return hp::laneid() == hp::lowest_lane(__activemask());
}

__device__ __forceinline__ unsigned log2u(u64 v)
{
	return v ? 63 - __clzll(v) : 0;
}

__device__ __forceinline__ void vecadd(VEC_ARGS)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

// probes/common.h MIX_KEY: a bijective scramble of an id, so that homes collide.
__device__ __forceinline__ u32 key_of(u64 id, bool mix)
{
	return mix ? (u32)id * 0x9E3779B1u : (u32)id;
}

// The value the inserting probes store (probes/common.h VALUE_OF).
__device__ __forceinline__ u64 value_of(u32 k)
{
	return (u64)k * 0x9E3779B97F4A7C15ull + 1;
}

extern "C" __global__ void vecadd_native(VEC_ARGS)
{
	vecadd(a, b, c, n);
}

// Case 1, churn (probes/churn.h): update(start, id, now, ANY) at entry; at exit lookup,
// hist[log2(now - start)] += 1 and delete, or missed += 1. Per warp the lanes that
// arrived together wait for their leader's update (__syncwarp): without it the leader,
// alone after the inlined update's loops, reached the exit apart from its warp and the
// exit ran twice per warp (seen on an H200).
template <bool WARP, bool AGG, bool MIX>
__device__ __forceinline__ void churn(VEC_ARGS, HASH_ARGS, u64 *hist, u64 *missed)
{
	HMap m{data, cnt, aux, max_entries, false};
	u32 key = key_of(global_tid() >> (WARP ? 5 : 0), MIX);
	if (WARP) {
		unsigned arrived = __activemask();
		if (warp_leader())
			hp::update<AGG, !AGG>(m, key, hp::globaltimer(), hp::ANY);
		__syncwarp(arrived);
	} else {
		hp::update<AGG, !AGG>(m, key, hp::globaltimer(), hp::ANY);
	}
	vecadd(a, b, c, n);
	if (!WARP || warp_leader()) {
		u64 *v = hp::lookup(m, key);
		unsigned r = hp::smid() & 255;
		if (v) {
			atomicAdd(&hist[r * 64 + log2u(hp::globaltimer() - *v)], 1ull);
			hp::remove<AGG>(m, key);
		} else {
			atomicAdd(&missed[r * 16], 1ull);
		}
	}
}

extern "C" __global__ void churn_warp(VEC_ARGS, HASH_ARGS, u64 *hist, u64 *missed)
{
	churn<true, true, false>(a, b, c, n, data, cnt, aux, max_entries, hist, missed);
}
extern "C" __global__ void churn_thread(VEC_ARGS, HASH_ARGS, u64 *hist, u64 *missed)
{
	churn<false, true, false>(a, b, c, n, data, cnt, aux, max_entries, hist, missed);
}
extern "C" __global__ void churn_warp_mix(VEC_ARGS, HASH_ARGS, u64 *hist, u64 *missed)
{
	churn<true, true, true>(a, b, c, n, data, cnt, aux, max_entries, hist, missed);
}
extern "C" __global__ void churn_thread_mix(VEC_ARGS, HASH_ARGS, u64 *hist, u64 *missed)
{
	churn<false, true, true>(a, b, c, n, data, cnt, aux, max_entries, hist, missed);
}
// The same with one atom.add per lane on the count word to reserve and give back (the
// protocol before ca7df46; a data point for what aggregating the count buys).
extern "C" __global__ void churn_thread_perlane(VEC_ARGS, HASH_ARGS, u64 *hist, u64 *missed)
{
	churn<false, false, false>(a, b, c, n, data, cnt, aux, max_entries, hist, missed);
}

// Case 2, over-full (probes/overfull.h): update(keys, tid, VALUE_OF(tid), ANY) at entry.
template <bool LRU, bool EARLY> __device__ __forceinline__ void overfull(VEC_ARGS, HASH_ARGS)
{
	HMap m{data, cnt, aux, max_entries, LRU};
	u32 key = (u32)global_tid();
	hp::update<true, EARLY>(m, key, value_of(key), hp::ANY);
	vecadd(a, b, c, n);
}
extern "C" __global__ void overfull_hash(VEC_ARGS, HASH_ARGS)
{
	overfull<false, false>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void overfull_lru(VEC_ARGS, HASH_ARGS)
{
	overfull<true, false>(a, b, c, n, data, cnt, aux, max_entries);
}
// _early: the reservation before the home lock (specs/abi.md at ca7df46), for comparison.
extern "C" __global__ void overfull_hash_early(VEC_ARGS, HASH_ARGS)
{
	overfull<false, true>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void overfull_lru_early(VEC_ARGS, HASH_ARGS)
{
	overfull<true, true>(a, b, c, n, data, cnt, aux, max_entries);
}

// Case 3, as published (probes/published.bpf.c): lookup; add 1, or insert 1 NOEXIST.
template <bool EARLY> __device__ __forceinline__ void published(VEC_ARGS, HASH_ARGS)
{
	HMap m{data, cnt, aux, max_entries, false};
	u32 key = (u32)global_tid();
	u64 *v = hp::lookup(m, key);
	if (v)
		atomicAdd(v, 1ull);
	else
		hp::update<true, EARLY>(m, key, 1, hp::NOEXIST);
	vecadd(a, b, c, n);
}
extern "C" __global__ void published(VEC_ARGS, HASH_ARGS)
{
	published<false>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void published_early(VEC_ARGS, HASH_ARGS)
{
	published<true>(a, b, c, n, data, cnt, aux, max_entries);
}

// Case 4, insert and update throughput (probes/insert.bpf.c, probes/update.bpf.c).
template <bool AGG, bool MIX, bool EARLY = false> __device__ __forceinline__ void insert(VEC_ARGS, HASH_ARGS)
{
	HMap m{data, cnt, aux, max_entries, false};
	u32 key = key_of(global_tid(), MIX);
	hp::update<AGG, EARLY>(m, key, value_of(key), hp::ANY);
	vecadd(a, b, c, n);
}
extern "C" __global__ void insert_any(VEC_ARGS, HASH_ARGS)
{
	insert<true, false>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void insert_any_mix(VEC_ARGS, HASH_ARGS)
{
	insert<true, true>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void insert_any_mix_early(VEC_ARGS, HASH_ARGS)
{
	insert<true, true, true>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void insert_any_perlane(VEC_ARGS, HASH_ARGS)
{
	insert<false, false, true>(a, b, c, n, data, cnt, aux, max_entries);
}
template <bool MIX> __device__ __forceinline__ void update(VEC_ARGS, HASH_ARGS)
{
	HMap m{data, cnt, aux, max_entries, false};
	u32 key = key_of(global_tid(), MIX);
	hp::update<true>(m, key, ~value_of(key), hp::EXIST);
	vecadd(a, b, c, n);
}
extern "C" __global__ void update_exist(VEC_ARGS, HASH_ARGS)
{
	update<false>(a, b, c, n, data, cnt, aux, max_entries);
}
extern "C" __global__ void update_exist_mix(VEC_ARGS, HASH_ARGS)
{
	update<true>(a, b, c, n, data, cnt, aux, max_entries);
}
