// SPDX-License-Identifier: MIT OR Apache-2.0
//
// The example application: a fixed series of launches of two kernels (vecadd.cu,
// scale.cu) over sizes that leave the last block partly idle, each result checked on the
// CPU. Standard output is the same with and without a probe: one line per launch
// (`launch KERNEL n=N grid=G block=B`, what a CPU model of the probe's maps needs) and the
// checks. With PROBE_MAPS=FILE set it also writes the probe's `counts` map of each
// kernel's module to FILE (`KERNEL counts v0 v1 ...`, or `KERNEL not instrumented`).
#include "kernels.h"
#include "probe_maps.h"
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                 \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct Launch {
	const char *kernel;
	int n, block;
};

// Sizes not multiples of the block (idle threads in the last block) and repeated launches.
static const Launch LAUNCHES[] = {
	{"vecadd", 1 << 20, 256}, {"vecadd", 1 << 20, 256}, {"vecadd", 1000003, 128},
	{"scale", 500001, 512},   {"vecadd", 4097, 64},     {"scale", 77, 32},
};

int main()
{
	const int max_n = 1 << 20;
	std::vector<float> a(max_n), b(max_n), c(max_n);
	for (int i = 0; i < max_n; i++) {
		a[i] = (float)(i % 1000);
		b[i] = 0.5f * (float)(i % 77);
	}
	float *da, *db, *dc;
	CK(cudaMalloc(&da, max_n * sizeof(float)));
	CK(cudaMalloc(&db, max_n * sizeof(float)));
	CK(cudaMalloc(&dc, max_n * sizeof(float)));
	CK(cudaMemcpy(da, a.data(), max_n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), max_n * sizeof(float), cudaMemcpyHostToDevice));
	int bad_total = 0;
	for (const Launch &l : LAUNCHES) {
		bool add = l.kernel[0] == 'v';
		CK(cudaMemset(dc, 0, max_n * sizeof(float)));
		if (add)
			launch_vecadd(da, db, dc, l.n, l.block);
		else
			launch_scale(da, dc, 3.0f, l.n, l.block);
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(c.data(), dc, max_n * sizeof(float), cudaMemcpyDeviceToHost));
		int bad = 0;
		double sum = 0;
		for (int i = 0; i < max_n; i++) {
			float want = i < l.n ? (add ? a[i] + b[i] : 3.0f * a[i]) : 0.0f;
			bad += c[i] != want;
			sum += c[i];
		}
		bad_total += bad;
		printf("launch %s n=%d grid=%d block=%d\n", l.kernel, l.n, (l.n + l.block - 1) / l.block,
		       l.block);
		printf("  %s, sum %.1f\n", bad ? "WRONG" : "correct", sum);
	}
	if (const char *path = getenv("PROBE_MAPS")) {
		FILE *f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		const struct {
			const char *name;
			const void *sym;
		} kernels[] = {{"vecadd", vecadd_symbol()}, {"scale", scale_symbol()}};
		for (const auto &k : kernels) {
			std::vector<uint64_t> v;
			if (!bpf2ptx_read_array(k.sym, "counts", v)) {
				fprintf(f, "%s not instrumented\n", k.name);
				continue;
			}
			fprintf(f, "%s counts", k.name);
			for (uint64_t x : v)
				fprintf(f, " %llu", (unsigned long long)x);
			fprintf(f, "\n");
		}
		fclose(f);
	}
	printf("%s\n", bad_total ? "FAILED" : "all launches correct");
	return bad_total != 0;
}
