// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Hand-written CUDA C++ twins of the example probes (examples/probes/*.bpf.c):
// the floor that bpf2ptx-injected probes are measured against in
// benches/gpu/overhead.py. The two applications are the same source as
// examples/apps/{vecadd,matmul}.cu with a probe policy P spliced in at kernel
// entry, kernel exit and at every memory access the source makes:
//
//   p.entry(m0, m1)             kernel entry
//   p.leave(m0, m1)             kernel exit
//   p.mem(m0, space, kind, sz)  before each load / store
//
// on one instance `P p` per thread, so a policy can keep per-thread state in registers
// (the fused twins: what `bpf2ptx inject`'s fusion does, written by hand, issue 19; inject
// accumulates only adds made in a loop, so on vecadd the accumulating twin shows what
// fusion would cost there, and inject's mem_hist rows equal today's lowering).
//
// m0 / m1 are the probe's maps (u64 arrays the host allocates). "Naive" twins
// add to one address with atomicAdd; "sharded" twins use the layout bpf2ptx
// gives arrays that are only added to (specs/abi.md): 256 replicas, SM s
// updates replica s % 256, the host sums them. Each exported kernel is
// extern "C": <app>_<probe>, e.g. vecadd_thread_sharded.
//
//     nvcc -cubin -arch=sm_90 -O3 twins.cu -o twins.cubin
#include <cstdint>

typedef unsigned long long u64;

#define SHARDS 256u

__device__ __forceinline__ unsigned smid()
{
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	return s;
}

__device__ __forceinline__ unsigned laneid()
{
	unsigned l;
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
	return l;
}

__device__ __forceinline__ u64 globaltimer()
{
	u64 t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

// bpf2ptx's warp leader: the lowest active lane.
__device__ __forceinline__ bool warp_leader()
{
	unsigned m = __activemask();
	return laneid() == (unsigned)(__ffs(m) - 1);
}

__device__ __forceinline__ u64 global_tid()
{
	u64 blk = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
	u64 thr = ((u64)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
	return blk * ((u64)blockDim.x * blockDim.y * blockDim.z) + thr;
}

__device__ __forceinline__ unsigned log2u(u64 v)
{
	return v ? 63 - __clzll(v) : 0;
}

enum { SP_GLOBAL = 1, SP_SHARED = 2 };
enum { K_LOAD = 1, K_STORE = 2 };

struct None {
	static __device__ __forceinline__ void entry(u64 *, u64 *) {}
	static __device__ __forceinline__ void leave(u64 *, u64 *) {}
	static __device__ __forceinline__ void mem(u64 *, int, int, int) {}
};

// empty entry probe
struct Empty : None {};

// SHARD: replica smid % 256; PAD: u64 words between replicas (1 = adjacent, as
// bpf2ptx lays out a 1-slot sharded array; 16 = one 128-byte line per SM).
template <bool SHARD, bool WARP, int PAD = 1> struct Counter : None {
	static __device__ __forceinline__ void entry(u64 *m0, u64 *)
	{
		if (WARP && !warp_leader())
			return;
		atomicAdd(&m0[SHARD ? (smid() % SHARDS) * PAD : 0], 1ull);
	}
};

// Per-thread counter aggregated per warp: the leader adds the active lanes.
struct ThreadWarpAgg : None {
	static __device__ __forceinline__ void entry(u64 *m0, u64 *)
	{
		unsigned m = __activemask();
		if (laneid() == (unsigned)(__ffs(m) - 1))
			atomicAdd(&m0[(smid() % SHARDS) * 16], (u64)__popc(m));
	}
};

// per-warp time histogram: m0 = start time per global warp, m1 = 64 buckets
template <bool SHARD> struct WarpTime : None {
	static __device__ __forceinline__ void entry(u64 *m0, u64 *)
	{
		if (!warp_leader())
			return;
		m0[global_tid() >> 5] = globaltimer();
	}
	static __device__ __forceinline__ void leave(u64 *m0, u64 *m1)
	{
		if (!warp_leader())
			return;
		u64 now = globaltimer();
		unsigned b = log2u(now - m0[global_tid() >> 5]);
		atomicAdd(&m1[(SHARD ? (smid() % SHARDS) * 64 : 0) + b], 1ull);
	}
};

// memory-access histogram: key = space << 5 | kind << 3 | log2(size), 128 slots
template <bool SHARD> struct MemHist : None {
	static __device__ __forceinline__ void mem(u64 *m0, int space, int kind, int size)
	{
		unsigned key = space << 5 | kind << 3 | log2u(size);
		atomicAdd(&m0[(SHARD ? (smid() % SHARDS) * 128 : 0) + key], 1ull);
	}
};

// The fused twins (issue 19): what `bpf2ptx inject` does by default, by hand.

// Sum of v over a whole warp (every lane active and calling it): redux.sync when the
// values fit (sm_80+), else shuffles; lane 0 gets the sum.
__device__ __forceinline__ u64 warp_sum(u64 v)
{
#if __CUDA_ARCH__ >= 800
	if (__all_sync(0xffffffffu, v < (1ull << 27)))
		return __reduce_add_sync(0xffffffffu, (unsigned)v);
#endif
	for (int d = 16; d > 0; d >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, d);
	return v;
}

// Adds v to *p once per warp (a whole warp: the warp's sum by lane 0), or per lane.
__device__ __forceinline__ void flush_add(u64 *p, u64 v)
{
	if (__activemask() == 0xffffffffu) {
		if (!__any_sync(0xffffffffu, v != 0))
			return;
		u64 s = warp_sum(v);
		if (laneid() == 0 && s != 0)
			atomicAdd(p, s);
	} else if (v != 0) {
		atomicAdd(p, v);
	}
}

// memory-access histogram, fused: a per-thread register per key the apps make (the key
// is a constant at each site, so each add picks its register at compile time), added to
// the SM's padded replica at exit.
struct MemHistFused : None {
	enum {
		GLOBAL_LOAD = SP_GLOBAL << 5 | K_LOAD << 3 | 2,
		GLOBAL_STORE = SP_GLOBAL << 5 | K_STORE << 3 | 2,
		SHARED_LOAD = SP_SHARED << 5 | K_LOAD << 3 | 2,
		SHARED_STORE = SP_SHARED << 5 | K_STORE << 3 | 2,
	};
	u64 gl = 0, gs = 0, sl = 0, ss = 0;
	// log2 of an access size, foldable (so every key is a constant at its site).
	static __device__ __forceinline__ constexpr int lg(int s)
	{
		return s >= 16 ? 4 : s >= 8 ? 3 : s >= 4 ? 2 : s >= 2 ? 1 : 0;
	}
	__device__ __forceinline__ void mem(u64 *m0, int space, int kind, int size)
	{
		int key = space << 5 | kind << 3 | lg(size);
		if (key == GLOBAL_LOAD)
			gl += 1;
		else if (key == GLOBAL_STORE)
			gs += 1;
		else if (key == SHARED_LOAD)
			sl += 1;
		else if (key == SHARED_STORE)
			ss += 1;
		else
			atomicAdd(&m0[(smid() % SHARDS) * 128 + key], 1ull);
	}
	__device__ __forceinline__ void leave(u64 *m0, u64 *)
	{
		u64 *rep = &m0[(smid() % SHARDS) * 128];
		flush_add(&rep[GLOBAL_LOAD], gl);
		flush_add(&rep[GLOBAL_STORE], gs);
		flush_add(&rep[SHARED_LOAD], sl);
		flush_add(&rep[SHARED_STORE], ss);
	}
};

// per-warp time histogram, fused: lane 0 keeps its start in a register; the store stays
// (a host may read it), the exit's load goes.
struct WarpTimeFused : None {
	u64 start = 0;
	__device__ __forceinline__ void entry(u64 *m0, u64 *)
	{
		if (laneid() != 0)
			return;
		start = globaltimer();
		m0[global_tid() >> 5] = start;
	}
	__device__ __forceinline__ void leave(u64 *, u64 *m1)
	{
		if (laneid() != 0)
			return;
		u64 now = globaltimer();
		atomicAdd(&m1[(smid() % SHARDS) * 64 + log2u(now - start)], 1ull);
	}
};

template <class P>
__device__ __forceinline__ void vecadd_body(const float *a, const float *b, float *c, int n, u64 *m0, u64 *m1)
{
	P p;
	p.entry(m0, m1);
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		p.mem(m0, SP_GLOBAL, K_LOAD, 4);
		float x = a[i];
		p.mem(m0, SP_GLOBAL, K_LOAD, 4);
		float y = b[i];
		p.mem(m0, SP_GLOBAL, K_STORE, 4);
		c[i] = x + y;
	}
	p.leave(m0, m1);
}

#define TILE 16

template <class P>
__device__ __forceinline__ void matmul_body(const float *A, const float *B, float *C, int n, u64 *m0, u64 *m1)
{
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE];
	P p;
	p.entry(m0, m1);
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
	float acc = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		p.mem(m0, SP_GLOBAL, K_LOAD, 4);
		p.mem(m0, SP_SHARED, K_STORE, 4);
		As[ty][tx] = A[row * n + t + tx];
		p.mem(m0, SP_GLOBAL, K_LOAD, 4);
		p.mem(m0, SP_SHARED, K_STORE, 4);
		Bs[ty][tx] = B[(t + ty) * n + col];
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; k++) {
			p.mem(m0, SP_SHARED, K_LOAD, 4);
			p.mem(m0, SP_SHARED, K_LOAD, 4);
			acc += As[ty][k] * Bs[k][tx];
		}
		__syncthreads();
	}
	p.mem(m0, SP_GLOBAL, K_STORE, 4);
	C[row * n + col] = acc;
	p.leave(m0, m1);
}

#define TWIN(name, P)                                                                              \
	extern "C" __global__ void vecadd_##name(const float *a, const float *b, float *c, int n,  \
						 u64 *m0, u64 *m1)                                 \
	{                                                                                          \
		vecadd_body<P>(a, b, c, n, m0, m1);                                                \
	}                                                                                          \
	extern "C" __global__ void matmul_##name(const float *A, const float *B, float *C, int n,  \
						 u64 *m0, u64 *m1)                                 \
	{                                                                                          \
		matmul_body<P>(A, B, C, n, m0, m1);                                                \
	}

typedef Counter<false, true> WarpNaive;
typedef Counter<true, true> WarpSharded;
typedef Counter<true, true, 16> WarpPadded;
typedef Counter<false, false> ThreadNaive;
typedef Counter<true, false> ThreadSharded;
typedef Counter<true, false, 16> ThreadPadded;
typedef WarpTime<false> WarpTimeNaive;
typedef WarpTime<true> WarpTimeSharded;
typedef MemHist<false> MemHistNaive;
typedef MemHist<true> MemHistSharded;

TWIN(native, None)
TWIN(empty, Empty)
TWIN(warp_naive, WarpNaive)
TWIN(warp_sharded, WarpSharded)
TWIN(warp_padded, WarpPadded)
TWIN(thread_naive, ThreadNaive)
TWIN(thread_sharded, ThreadSharded)
TWIN(thread_padded, ThreadPadded)
TWIN(thread_warpagg, ThreadWarpAgg)
TWIN(warptime_naive, WarpTimeNaive)
TWIN(warptime_sharded, WarpTimeSharded)
TWIN(memhist_naive, MemHistNaive)
TWIN(memhist_sharded, MemHistSharded)
TWIN(memhist_fused, MemHistFused)
TWIN(warptime_fused, WarpTimeFused)
