// SPDX-License-Identifier: MIT OR Apache-2.0
// Issue 16: what one read of mapped pinned host memory (cuMemHostAlloc with DEVICEMAP,
// where `bpf2ptx trace` keeps the maps host programs share) costs a kernel at block
// start, beside a read of device memory, on this machine's GPU.
//
// Per mode, LAUNCHES launches of a 4-blocks-per-SM grid (as examples/trace_latency's
// app); thread 0 of each block stamps %globaltimer, reads one u64 (volatile), stamps
// again. Per launch: the min / median / max over blocks of the read's time, and the CUDA
// events around the launch; printed as medians over the launches after the first.
//   none      no read
//   device    a u64 in cudaMalloc memory
//   host      a u64 in mapped pinned memory the host writes before every launch
//   host-ro   the same, never written by the host after the first launch
//   host-line the host writes a u64 in the same 64-byte line before every launch, the
//             kernel reads its neighbour
//
//     nvcc -O2 -arch=sm_90 benches/gpu-trace/hostread.cu -o hostread && ./hostread [LAUNCHES]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                   \
	do {                                                                       \
		cudaError_t e_ = (x);                                              \
		if (e_ != cudaSuccess) {                                           \
			fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));   \
			exit(2);                                                   \
		}                                                                  \
	} while (0)

__device__ __forceinline__ unsigned long long globaltimer()
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

__global__ void probe(const volatile unsigned long long *src, unsigned long long *stamps,
		      unsigned long long *sink)
{
	if (threadIdx.x == 0) {
		unsigned long long t0 = globaltimer(), v = 0;
		if (src)
			v = *src;
		unsigned long long t1 = globaltimer();
		stamps[2 * blockIdx.x] = t0;
		stamps[2 * blockIdx.x + 1] = t1;
		if (v == 0x5a5a5a5a5a5a5a5aull)
			*sink = v;
	}
}

static double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v.empty() ? 0 : v[v.size() / 2];
}

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 30;
	int sms = 0;
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	int grid = 4 * sms, block = 256;
	unsigned long long *dev, *stamps, *sink, *host, *hostdev;
	CHECK(cudaMalloc(&dev, 64));
	CHECK(cudaMemset(dev, 0, 64));
	CHECK(cudaMalloc(&stamps, sizeof(unsigned long long) * 2 * grid));
	CHECK(cudaMalloc(&sink, 8));
	CHECK(cudaHostAlloc((void **)&host, 64, cudaHostAllocPortable | cudaHostAllocMapped));
	CHECK(cudaHostGetDevicePointer((void **)&hostdev, host, 0));
	for (int i = 0; i < 8; i++)
		host[i] = 0;
	cudaEvent_t e0, e1;
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	std::vector<unsigned long long> h(2 * grid);
	const char *modes[] = {"none", "device", "host", "host-ro", "host-line"};
	printf("grid %d block %d launches %d\n", grid, block, launches);
	printf("| mode | read min (us) | read median (us) | read max (us) | CUDA events (us) |\n");
	printf("|---|---|---|---|---|\n");
	for (int m = 0; m < 5; m++) {
		std::vector<double> mins, meds, maxs, evs;
		for (int l = 0; l < launches; l++) {
			const unsigned long long *src = m == 0 ? nullptr : m == 1 ? dev : hostdev;
			if (m == 2)
				host[0] = l + 1;
			if (m == 4)
				host[1] = l + 1;
			CHECK(cudaEventRecord(e0));
			probe<<<grid, block>>>(src, stamps, sink);
			CHECK(cudaEventRecord(e1));
			CHECK(cudaEventSynchronize(e1));
			CHECK(cudaGetLastError());
			float ms = 0;
			CHECK(cudaEventElapsedTime(&ms, e0, e1));
			CHECK(cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost));
			if (l == 0)
				continue;
			std::vector<double> d(grid);
			for (int b = 0; b < grid; b++)
				d[b] = (h[2 * b + 1] - h[2 * b]) / 1000.0;
			std::sort(d.begin(), d.end());
			mins.push_back(d.front());
			meds.push_back(d[grid / 2]);
			maxs.push_back(d.back());
			evs.push_back(ms * 1000.0);
		}
		printf("| %s | %.2f | %.2f | %.2f | %.2f |\n", modes[m], median(mins), median(meds),
		       median(maxs), median(evs));
	}
	return 0;
}
