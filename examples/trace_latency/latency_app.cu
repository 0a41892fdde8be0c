// SPDX-License-Identifier: MIT OR Apache-2.0
// An ordinary CUDA application that measures its own launch latency, so that
// `bpf2ptx trace` (examples/probes/trace_latency.bpf.o) can be compared with it
// (tests/gpu/trace_latency.py). Nothing here knows about bpf2ptx.
//
// It measures, independently of bpf2ptx:
//   - the offset between CLOCK_MONOTONIC and %globaltimer, as bpf2ptx does it (a
//     one-thread kernel stores %globaltimer into mapped pinned memory while the host
//     reads it: offset = max(g - h_after));
//   - per launch: CLOCK_MONOTONIC just before the launch call, CUDA events recorded
//     just before and after the launch on the same stream, and, from inside the kernel,
//     the earliest block start and latest block end on %globaltimer (atomicMin/Max).
//
// Prints `offset O spread S`, then per launch
//   `launch I host_ns H event_us E first_ns F last_ns L`
// (H on CLOCK_MONOTONIC, F and L on %globaltimer) and on stderr one
// `model launches N grid G block B` line per kernel shape launched.
//
//     nvcc -O2 -arch=sm_90 examples/trace_latency/latency_app.cu -o latency_app
//     ./latency_app [LAUNCHES] [ITERS]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define CHECK(x)                                                                   \
	do {                                                                       \
		cudaError_t e_ = (x);                                              \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));   \
			exit(2);                                                   \
		}                                                                  \
	} while (0)

static unsigned long long monotonic_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__device__ __forceinline__ unsigned long long globaltimer()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void clock_spin(volatile unsigned long long *out, volatile int *stop)
{
	unsigned long long t0 = globaltimer(), t;
	do {
		t = globaltimer();
		*out = t;
		__threadfence_system();
	} while (!*stop && t - t0 < 50000000ull);
}

// stamps[0]: earliest block start, stamps[1]: latest block end (%globaltimer).
__global__ void work(float *x, int iters, unsigned long long *stamps)
{
	if (threadIdx.x == 0)
		atomicMin(&stamps[0], globaltimer());
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = x[i];
	for (int k = 0; k < iters; k++)
		v = v * 0.999f + 0.001f;
	x[i] = v;
	__syncthreads();
	if (threadIdx.x == 0)
		atomicMax(&stamps[1], globaltimer());
}

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 50;
	int iters = argc > 2 ? atoi(argv[2]) : 20000;
	int sms = 0;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const int block = 256, grid = 4 * sms;

	// The clock offset, measured as bpf2ptx measures it.
	unsigned long long *words;
	CHECK(cudaHostAlloc(&words, 16, cudaHostAllocMapped));
	words[0] = 0;
	((volatile int *)&words[1])[0] = 0;
	unsigned long long *dwords;
	CHECK(cudaHostGetDevicePointer(&dwords, words, 0));
	cudaStream_t side;
	CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
	clock_spin<<<1, 1, 0, side>>>(dwords, (int *)&dwords[1]);
	while (((volatile unsigned long long *)words)[0] == 0)
		;
	long long best = -(1ll << 62);
	std::vector<long long> d(2000);
	for (auto &x : d) {
		unsigned long long g = ((volatile unsigned long long *)words)[0];
		unsigned long long h1 = monotonic_ns();
		x = (long long)(g - h1);
		if (x > best)
			best = x;
	}
	((volatile int *)&words[1])[0] = 1;
	CHECK(cudaStreamSynchronize(side));
	std::vector<long long> sorted = d;
	std::nth_element(sorted.begin(), sorted.begin() + 1000, sorted.end());
	printf("offset %lld spread %lld\n", best, best - sorted[1000]);

	float *x;
	unsigned long long *stamps, init[2] = { ~0ull, 0 }, got[2];
	CHECK(cudaMalloc(&x, grid * block * sizeof(float)));
	CHECK(cudaMemset(x, 0, grid * block * sizeof(float)));
	CHECK(cudaMalloc(&stamps, sizeof init));
	cudaEvent_t e0, e1;
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	// Launch 0 warms up (module load, and under bpf2ptx trace the instrumentation).
	for (int i = 0; i <= launches; i++) {
		CHECK(cudaMemcpy(stamps, init, sizeof init, cudaMemcpyHostToDevice));
		CHECK(cudaDeviceSynchronize());
		CHECK(cudaEventRecord(e0, 0));
		unsigned long long h = monotonic_ns();
		work<<<grid, block>>>(x, iters, stamps);
		CHECK(cudaEventRecord(e1, 0));
		CHECK(cudaDeviceSynchronize());
		CHECK(cudaGetLastError());
		float ms = 0;
		CHECK(cudaEventElapsedTime(&ms, e0, e1));
		CHECK(cudaMemcpy(got, stamps, sizeof got, cudaMemcpyDeviceToHost));
		printf("launch %d host_ns %llu event_us %.3f first_ns %llu last_ns %llu\n", i, h,
		       ms * 1000.0, got[0], got[1]);
	}
	fprintf(stderr, "model launches 1 grid 1 block 1\n");
	fprintf(stderr, "model launches %d grid %d block %d\n", launches + 1, grid, block);
	return 0;
}
