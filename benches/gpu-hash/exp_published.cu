// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Where the time of the "as published" probe goes (issue 12, case 3): vecadd 2^24 with,
// at entry, `v = lookup(key = tid); if (v) *v += 1; else update(key, 1, NOEXIST)` into a
// hash of 1024 entries (2048 slots), on the protocol of hash_proto.cuh, with one thing
// changed per variant. A standalone experiment (CUDA events, medians), not the benchmark:
//
//     nvcc -O3 -arch=sm_90 -o /tmp/exp benches/gpu-hash/exp_published.cu && /tmp/exp
//
// The figures in benches/results/device-runtime-history.md ("Issue 12, session 6") were taken when
// hash_proto.cuh's update still read the count and lock word with acquire; it now reads
// them weak, as the runtime does, so "twin (as benchmarked)" is no longer that variant.
//
// Variants (bit flags of the kernel template):
//   LOOKUP_ONLY  no update after a miss
//   WEAK_FIND    find's filter loads are weak (ld.global: may be served by L1), a
//                candidate still decided by the acquire loads
//   NOTE_RELAXED the `full` counter: one red.relaxed per converged group, no bar/fence
//   CHECK_RELAXED the update's count and home-lock reads relaxed (not acquire)
//   FUSED        the update after a lookup miss skips its own first find
//   CHECK_WEAK   the count and home-lock reads weak
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hash_proto.cuh"

using namespace hp;

enum { LOOKUP_ONLY = 1, WEAK_FIND = 2, NOTE_RELAXED = 4, CHECK_RELAXED = 8, FUSED = 16, CHECK_WEAK = 32 };

template <int F> __device__ __forceinline__ long long find_v(const HMap &m, u32 key, u64 home)
{
	return find<(F & WEAK_FIND) != 0>(m, key, home);
}

template <int F> __device__ __forceinline__ void note_full(const HMap &m)
{
	if (F & NOTE_RELAXED) {
		u32 g = __activemask();
		if (laneid() == lowest_lane(g))
			red_add_u64(&m.cnt[16 + 16 * (smid() & (SHARDS - 1)) + C_FULL], popc(g));
	} else {
		note(m, C_FULL);
	}
}

__device__ __forceinline__ u64 global_tid()
{
	return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}

template <int F> __global__ void published(const float *a, const float *b, float *c, int n, char *data, u64 *cnt, u64 aux, u32 max)
{
	HMap m{data, cnt, aux, max, false};
	u32 key = (u32)global_tid();
	u64 home = fnv1a(key) & (aux - 1);
	long long d = find_v<F>(m, key, home);
	if (d >= 0) {
		atomicAdd(valp(m, (home + (u64)d) & (aux - 1)), 1ull);
	} else if (!(F & LOOKUP_ONLY)) {
		if (F & (CHECK_RELAXED | CHECK_WEAK | NOTE_RELAXED | FUSED | WEAK_FIND)) {
			// The refusal path of hash_proto's update, with the variant's changes; the
			// rest (room in the map) goes to the unchanged update.
			u64 cn = (F & CHECK_WEAK) ? ld_weak_u64(cnt) : (F & CHECK_RELAXED) ? ld_relaxed_u64(cnt) : ld_acquire_u64(cnt);
			u32 lw = (F & CHECK_WEAK) ? ld_weak_u32(metap(m, home)) : (F & CHECK_RELAXED) ? ld_relaxed_u32(metap(m, home)) : ld_acquire_u32(metap(m, home));
			long long d2 = (F & FUSED) ? -1 : find_v<F>(m, key, home);
			if (d2 < 0 && cn >= max && !(lw & LOCK)) {
				note_full<F>(m);
			} else {
				update<true, false>(m, key, 1, NOEXIST);
			}
		} else {
			update<true, false>(m, key, 1, NOEXIST);
		}
	}
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void native(const float *a, const float *b, float *c, int n, char *, u64 *, u64, u32)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

typedef void (*kern_t)(const float *, const float *, float *, int, char *, u64 *, u64, u32);

struct Variant {
	const char *name;
	kern_t k;
};

#define CK(x)                                                                      \
	do {                                                                       \
		cudaError_t e = (x);                                               \
		if (e != cudaSuccess) {                                            \
			fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

int main()
{
	const int n = 1 << 24, bs = 256, grid = n / bs;
	const u64 aux = 2048;
	const u32 max = 1024;
	Variant vs[] = {
		{"native", native},
		{"twin (as benchmarked)", published<0>},
		{"lookup only", published<LOOKUP_ONLY>},
		{"lookup only, weak find", published<LOOKUP_ONLY | WEAK_FIND>},
		{"note relaxed", published<NOTE_RELAXED>},
		{"note relaxed + check relaxed", published<NOTE_RELAXED | CHECK_RELAXED>},
		{"note relaxed + check relaxed + fused", published<NOTE_RELAXED | CHECK_RELAXED | FUSED>},
		{"weak find + note relaxed + check relaxed + fused", published<WEAK_FIND | NOTE_RELAXED | CHECK_RELAXED | FUSED>},
		{"weak find + note relaxed + check weak + fused", published<WEAK_FIND | NOTE_RELAXED | CHECK_WEAK | FUSED>},
		{"weak find + note relaxed + check weak", published<WEAK_FIND | NOTE_RELAXED | CHECK_WEAK>},
	};
	const int NV = sizeof vs / sizeof vs[0];
	float *a, *b, *c;
	char *data;
	u64 *cnt;
	CK(cudaMalloc(&a, n * 4));
	CK(cudaMalloc(&b, n * 4));
	CK(cudaMalloc(&c, n * 4));
	CK(cudaMalloc(&data, aux * SLOT));
	CK(cudaMalloc(&cnt, 4224));
	CK(cudaMemset(a, 0, n * 4));
	CK(cudaMemset(b, 0, n * 4));
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	const int REPS = 30;
	for (int mode = 0; mode < 2; mode++) { // 0 fresh, 1 accumulating
		std::vector<std::vector<float>> t(NV);
		for (int r = 0; r < REPS; r++) {
			for (int vi = 0; vi < NV; vi++) {
				int v = (vi + r) % NV;
				if (mode == 0 || r == 0) {
					CK(cudaMemset(data, 0, aux * SLOT));
					CK(cudaMemset(cnt, 0, 4224));
					if (mode == 1) // fill it: the launch the accumulating ones follow
						vs[v].k<<<grid, bs>>>(a, b, c, n, data, cnt, aux, max);
				}
				if (mode == 1 && r > 0) { // each variant its own accumulated table: refill
					CK(cudaMemset(data, 0, aux * SLOT));
					CK(cudaMemset(cnt, 0, 4224));
					vs[v].k<<<grid, bs>>>(a, b, c, n, data, cnt, aux, max);
				}
				native<<<grid, bs>>>(a, b, c, n, data, cnt, aux, max);
				CK(cudaEventRecord(e0));
				vs[v].k<<<grid, bs>>>(a, b, c, n, data, cnt, aux, max);
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				float ms;
				CK(cudaEventElapsedTime(&ms, e0, e1));
				t[v].push_back(ms);
				if (v > 0 && !(vs[v].name[0] == 'l')) { // lookup-only variants insert nothing
					u64 h[2];
					CK(cudaMemcpy(h, cnt, 8, cudaMemcpyDeviceToHost));
					if (h[0] != max) {
						printf("CHECK FAILED: %s count %llu\n", vs[v].name, h[0]);
					}
				}
			}
		}
		printf("== %s (vecadd 2^24, 1024 entries, median of %d, ms)\n", mode ? "accumulating (after one fill launch)" : "fresh", REPS);
		float nat = 0;
		for (int v = 0; v < NV; v++) {
			std::sort(t[v].begin(), t[v].end());
			float med = t[v][REPS / 2];
			if (v == 0)
				nat = med;
			printf("%-52s %8.4f  %7.3fx native\n", vs[v].name, med, med / nat);
		}
	}
	int regs[16];
	for (int v = 0; v < NV; v++) {
		cudaFuncAttributes fa;
		CK(cudaFuncGetAttributes(&fa, (const void *)vs[v].k));
		printf("regs %-52s %d\n", vs[v].name, fa.numRegs);
		regs[v % 16] = fa.numRegs;
	}
	(void)regs;
	return 0;
}
