// SPDX-License-Identifier: MIT OR Apache-2.0
// Issue 16, "Overhead" (GPU side): times one kernel of a PTX module, loaded through the
// driver API as an application loads a module, with CUDA events around each launch.
//
//     probe_time MODULE.ptx KERNEL N WARMUP LAUNCHES
//
// KERNEL is vecAdd's signature (a, b, c, n) on N floats, 256 threads per block. Prints
// `median_ms X checksum Y` (Y: a sum over c, the same for every variant when the output
// is unchanged). Run untraced on nvcc's PTX (native) and on `bpf2ptx inject`'s output,
// and under `bpf2ptx trace` on nvcc's PTX (the interposer instruments it at the first
// launch), by benches/gpu-trace/probe_overhead.py.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <fstream>
#include <sstream>
#include <vector>

#define CK(x)                                                                      \
	do {                                                                       \
		CUresult r = (x);                                                  \
		if (r != CUDA_SUCCESS) {                                           \
			const char *s = "?";                                       \
			cuGetErrorString(r, &s);                                   \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s); \
			exit(1);                                                   \
		}                                                                  \
	} while (0)

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s MODULE.ptx KERNEL N WARMUP LAUNCHES\n", argv[0]);
		return 2;
	}
	std::ifstream f(argv[1]);
	std::stringstream ss;
	ss << f.rdbuf();
	std::string ptx = ss.str();
	int n = atoi(argv[3]), warm = atoi(argv[4]), launches = atoi(argv[5]);
	CK(cuInit(0));
	CUdevice dev;
	CK(cuDeviceGet(&dev, 0));
	CUcontext ctx;
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));
	CUmodule mod;
	CK(cuModuleLoadData(&mod, ptx.c_str()));
	CUfunction fn;
	CK(cuModuleGetFunction(&fn, mod, argv[2]));
	std::vector<float> a(n), b(n), c(n);
	for (int i = 0; i < n; i++) {
		a[i] = float(i % 1000) * 0.5f;
		b[i] = float(i % 77);
	}
	CUdeviceptr da, db, dc;
	CK(cuMemAlloc(&da, n * sizeof(float)));
	CK(cuMemAlloc(&db, n * sizeof(float)));
	CK(cuMemAlloc(&dc, n * sizeof(float)));
	CK(cuMemcpyHtoD(da, a.data(), n * sizeof(float)));
	CK(cuMemcpyHtoD(db, b.data(), n * sizeof(float)));
	void *args[] = {&da, &db, &dc, &n};
	unsigned blocks = (n + 255) / 256;
	CUevent e0, e1;
	CK(cuEventCreate(&e0, 0));
	CK(cuEventCreate(&e1, 0));
	std::vector<float> ms;
	for (int i = 0; i < warm + launches; i++) {
		CK(cuEventRecord(e0, 0));
		CK(cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, 0, args, 0));
		CK(cuEventRecord(e1, 0));
		CK(cuEventSynchronize(e1));
		float t;
		CK(cuEventElapsedTime(&t, e0, e1));
		if (i >= warm)
			ms.push_back(t);
	}
	CK(cuMemcpyDtoH(c.data(), dc, n * sizeof(float)));
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += c[i] * double(i % 13 + 1);
	std::sort(ms.begin(), ms.end());
	printf("median_ms %.6f checksum %.1f\n", ms[ms.size() / 2], sum);
	return 0;
}
