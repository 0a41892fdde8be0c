// SPDX-License-Identifier: MIT OR Apache-2.0
// An ordinary CUDA application for examples/gpu_sharing: it launches one compute kernel
// many times, waiting for each launch before the next (as a request-serving loop does),
// and times each round trip itself. Two copies of it started at once share the GPU by
// time-slicing (no MPS): what each one's blocks see of that is what the example's probe
// (examples/probes/gpu_sharing.bpf.c) measures under `bpf2ptx trace`. Nothing here knows
// about bpf2ptx.
//
//     nvcc -O2 -gencode arch=compute_90,code=[sm_90,compute_90] sharing_app.cu -o sharing_app
//     ./sharing_app [LAUNCHES] [ITERS] [BLOCKS_PER_SM] [START_AT_MS]
//
// LAUNCHES (default 3000) measured launches after one warm-up launch; ITERS (default
// 20000) dependent multiply-adds per thread, which sets how long a block runs;
// BLOCKS_PER_SM (default 16) sets the grid, 256 threads a block, so that an SM holds
// only part of a launch at once and blocks run in waves; START_AT_MS, when given and
// not 0, a CLOCK_REALTIME time in milliseconds: after the warm-up the app sleeps until
// then, so that two copies started together measure the same stretch of time even when
// one of them paid a JIT the other found cached.
//
// Prints on stdout: the shape, the round-trip percentiles (launch call to the return of
// cudaStreamSynchronize, CLOCK_MONOTONIC, microseconds), the measured window (CLOCK_MONOTONIC
// ns: the same clock in every process of the machine, so two runs' windows compare), and a
// checksum of the result; on stderr one `model NAME launches L grid G block B` line (every
// launch, the warm-up included), for the summary's count of blocks. Exit 0 when the
// result equals the host's own computation of it.
#include <algorithm>
#include <cmath>
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

static long long clock_ns(clockid_t c)
{
	timespec ts;
	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

// A fixed amount of dependent arithmetic per thread: a block's run time does not depend
// on the clock, so a block that is switched out for another process's time slice takes
// longer in wall time, which the probe's spans show.
__global__ void spin_work(float *x, int iters)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float v = x[i];
	for (int k = 0; k < iters; k++)
		v = v * 0.999f + 0.001f;
	x[i] = v;
}

static double pct(std::vector<double> v, double p)
{
	std::sort(v.begin(), v.end());
	size_t k = (size_t)std::ceil(p / 100.0 * v.size());
	return v[k == 0 ? 0 : k - 1];
}

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 3000;
	int iters = argc > 2 ? atoi(argv[2]) : 20000;
	int per_sm = argc > 3 ? atoi(argv[3]) : 16;
	long long start_at_ms = argc > 4 ? atoll(argv[4]) : 0;
	if (launches < 1 || iters < 0 || per_sm < 1) {
		fprintf(stderr, "usage: %s [LAUNCHES>=1] [ITERS>=0] [BLOCKS_PER_SM>=1] [START_AT_MS]\n",
			argv[0]);
		return 2;
	}
	int sms = 0;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const int block = 256, grid = per_sm * sms, n = grid * block;

	float *x;
	CHECK(cudaMalloc(&x, n * sizeof(float)));
	CHECK(cudaMemset(x, 0, n * sizeof(float)));
	cudaStream_t s;
	CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	// Warm-up: module load (and under bpf2ptx trace the instrumentation), not timed.
	spin_work<<<grid, block, 0, s>>>(x, iters);
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaGetLastError());
	if (start_at_ms > 0) {
		long long wait_ns = start_at_ms * 1000000ll - clock_ns(CLOCK_REALTIME);
		if (wait_ns > 0) {
			timespec ts = { (time_t)(wait_ns / 1000000000ll), (long)(wait_ns % 1000000000ll) };
			nanosleep(&ts, nullptr);
		}
	}

	std::vector<double> rt(launches);
	long long w0 = clock_ns(CLOCK_MONOTONIC);
	for (int r = 0; r < launches; r++) {
		long long t0 = clock_ns(CLOCK_MONOTONIC);
		spin_work<<<grid, block, 0, s>>>(x, iters);
		CHECK(cudaStreamSynchronize(s));
		rt[r] = (clock_ns(CLOCK_MONOTONIC) - t0) / 1000.0;
	}
	long long w1 = clock_ns(CLOCK_MONOTONIC);
	CHECK(cudaGetLastError());

	// Every element went through (launches + 1) * iters steps of v = v * 0.999 + 0.001
	// from 0, the same float operations on the host (the kernel's multiply-add is fused
	// by nvcc: fmaf here too), stopping early at the fixed point it reaches.
	float want = 0.0f;
	for (long long k = 0; k < (long long)(launches + 1) * iters; k++) {
		float next = fmaf(want, 0.999f, 0.001f);
		if (next == want)
			break;
		want = next;
	}
	std::vector<float> got(n);
	CHECK(cudaMemcpy(got.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
	int wrong = 0;
	for (int i = 0; i < n; i++)
		wrong += got[i] != want;

	printf("shape launches %d grid %d block %d iters %d sms %d\n", launches, grid, block, iters,
	       sms);
	printf("roundtrip_us p50 %.1f p90 %.1f p99 %.1f max %.1f\n", pct(rt, 50), pct(rt, 90),
	       pct(rt, 99), pct(rt, 100));
	printf("window_ns %lld %lld\n", w0, w1);
	printf("result %.6f wrong %d\n", got[0], wrong);
	fprintf(stderr, "model spin_work launches %d grid %d block %d\n", launches + 1, grid, block);
	return wrong != 0;
}
