// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Runs examples/apps/vecadd with a probe that lives in a SEPARATE module,
// through the CUDA driver API:
//
//   link_host jit   APP.extern.ptx PROBES.ptx [MAP]   link at run time (cuLink*)
//   link_host cubin LINKED.cubin [MAP]                load what nvlink linked at build time
//
// APP.extern.ptx is `bpf2ptx inject --extern` output: the kernel calls the
// probe through `.extern .func`; PROBES.ptx is `bpf2ptx PROBES.bpf.o`. The
// maps (descriptor bpf2ptx_map_MAP, storage bpf2ptx_mapdata_MAP) come from the
// probe module and are found in the linked module with cuModuleGetGlobal.
//
//     nvcc -O2 link_host.cu -o link_host -lcuda
#include <cuda.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                                      \
	do {                                                                                       \
		CUresult r_ = (x);                                                                 \
		if (r_ != CUDA_SUCCESS) {                                                          \
			const char *s_ = "?";                                                      \
			cuGetErrorString(r_, &s_);                                                 \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);            \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static const char *KERNEL = "_Z6vecAddPKfS0_Pfi";

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "jit") == 0 && argc < 4)) {
		fprintf(stderr, "usage: %s jit APP.extern.ptx PROBES.ptx [MAP] | cubin LINKED.cubin [MAP]\n", argv[0]);
		return 2;
	}
	bool jit = strcmp(argv[1], "jit") == 0;
	const char *map = argc > (jit ? 4 : 3) ? argv[jit ? 4 : 3] : "thread_count";

	CK(cuInit(0));
	CUdevice dev;
	CK(cuDeviceGet(&dev, 0));
	CUcontext ctx;
	CK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(cuCtxSetCurrent(ctx));

	CUmodule mod;
	if (jit) {
		static char log[1 << 14], err[1 << 14];
		CUjit_option opt[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
				      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
		void *val[] = {log, (void *)(uintptr_t)sizeof log, err, (void *)(uintptr_t)sizeof err};
		CUlinkState ls;
		CK(cuLinkCreate(4, opt, val, &ls));
		for (int i = 2; i <= 3; i++) {
			CUresult r = cuLinkAddFile(ls, CU_JIT_INPUT_PTX, argv[i], 0, nullptr, nullptr);
			if (r != CUDA_SUCCESS) {
				fprintf(stderr, "cuLinkAddFile %s failed:\n%s\n", argv[i], err);
				return 1;
			}
		}
		void *cubin;
		size_t size;
		if (cuLinkComplete(ls, &cubin, &size) != CUDA_SUCCESS) {
			fprintf(stderr, "cuLinkComplete failed:\n%s\n", err);
			return 1;
		}
		printf("cuLink: %s + %s -> %zu-byte cubin\n", argv[2], argv[3], size);
		CK(cuModuleLoadData(&mod, cubin));
		CK(cuLinkDestroy(ls));
	} else {
		CK(cuModuleLoad(&mod, argv[2]));
		printf("loaded %s (linked by nvlink at build time)\n", argv[2]);
	}

	CUfunction f;
	CK(cuModuleGetFunction(&f, mod, KERNEL));

	// The probe's map: descriptor (8 u64 words) and storage.
	char sym[256];
	CUdeviceptr desc, data;
	size_t desc_bytes, data_bytes;
	snprintf(sym, sizeof sym, "bpf2ptx_map_%s", map);
	CK(cuModuleGetGlobal(&desc, &desc_bytes, mod, sym));
	snprintf(sym, sizeof sym, "bpf2ptx_mapdata_%s", map);
	CK(cuModuleGetGlobal(&data, &data_bytes, mod, sym));
	uint64_t w[8];
	CK(cuMemcpyDtoH(w, desc, sizeof w));
	unsigned type = (unsigned)w[0], max_entries = (unsigned)w[2], stride = (unsigned)(w[2] >> 32);
	uint64_t replicas = (type == 2 || type == 6 || type == 1503) && w[4] > 1 ? w[4] : 1;
	printf("map %s: type %u, max_entries %u, value stride %u, %llu replica(s), %zu bytes of storage\n",
	       map, type, max_entries, stride, (unsigned long long)replicas, data_bytes);
	CK(cuMemsetD8(data, 0, data_bytes));

	const int n = 1 << 24;
	std::vector<float> a(n), b(n), c(n);
	for (int i = 0; i < n; i++) {
		a[i] = (float)(i % 1000);
		b[i] = 0.5f * (float)(i % 77);
	}
	CUdeviceptr da, db, dc;
	CK(cuMemAlloc(&da, n * 4));
	CK(cuMemAlloc(&db, n * 4));
	CK(cuMemAlloc(&dc, n * 4));
	CK(cuMemcpyHtoD(da, a.data(), n * 4));
	CK(cuMemcpyHtoD(db, b.data(), n * 4));
	int nn = n;
	void *args[] = {&da, &db, &dc, &nn};
	CK(cuLaunchKernel(f, n / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH(c.data(), dc, n * 4));
	long bad = 0;
	for (int i = 0; i < n; i++)
		bad += c[i] != a[i] + b[i];
	printf("vecAdd over %d elements: %s\n", n, bad ? "WRONG" : "correct");

	std::vector<uint64_t> s(data_bytes / 8);
	CK(cuMemcpyDtoH(s.data(), data, data_bytes));
	// Replica r of a sharded array starts r * w[5] bytes in (whole 128-byte lines).
	uint64_t per = (replicas > 1 ? w[5] : (uint64_t)max_entries * stride) / 8, total = 0;
	for (uint64_t r = 0; r < replicas; r++)
		total += s[r * per];
	printf("%s[0] = %llu (threads launched: %d)\n", map, (unsigned long long)total, n);
	return bad || total != (uint64_t)n;
}
