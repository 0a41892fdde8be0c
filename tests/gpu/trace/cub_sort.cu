// SPDX-License-Identifier: MIT OR Apache-2.0
// A CUB radix sort for tests/gpu/cub_sort.py (issue 18, memory accounting): N pseudo-random
// 32-bit keys sorted once by cub::DeviceRadixSort::SortKeys (the DoubleBuffer form, so the
// keys move only between the two buffers the app owns and CUB's temporary storage holds
// only its counters), checked against std::sort on the host.
//
//     cub_sort N SORTED.bin [KEYS.bin]
//
// Built PTX only, so `bpf2ptx trace` can probe every kernel:
//     nvcc -O2 -gencode arch=compute_90,code=compute_90 cub_sort.cu -o cub_sort
//
// CUB_DEBUG_LOG makes CUB print (stdout, host printf) each kernel launch it makes with its
// grid, block, items per thread and digit bits ("Invoking onesweep_kernel<<<B, 384, 0, S>>>(),
// 20 items per thread, current bit 0, bit_grain 8, portion 0/1"): the configuration the
// CPU model of tests/gpu/cub_sort.py reads. It adds no device code (no RDC build).
//
// Prints `sorted n N selector S agrees 0|1 fnv 0x...` (FNV-1a of the sorted bytes) and
// writes the sorted keys to SORTED.bin and, when given, the input keys to KEYS.bin (the
// model recomputes the histogram kernel's per-block digit sets from them). Exit 1 when the
// result differs from std::sort or a CUDA call fails.
#define CUB_DEBUG_LOG
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

// splitmix64's output function, high half: the same keys on every run and machine.
static uint32_t key_of(uint64_t i)
{
	uint64_t z = i * 0x9E3779B97F4A7C15ull + 0x6A09E667F3BCC909ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return uint32_t(z >> 32);
}

static int fail(const char *what, cudaError_t e)
{
	fprintf(stderr, "cub_sort: %s: %s\n", what, cudaGetErrorString(e));
	return 1;
}

static bool write_file(const char *path, const void *data, size_t bytes)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(data, 1, bytes, f) == bytes;
	return fclose(f) == 0 && ok;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: cub_sort N SORTED.bin [KEYS.bin]\n");
		return 2;
	}
	const int n = atoi(argv[1]);
	std::vector<uint32_t> keys(n);
	for (int i = 0; i < n; i++)
		keys[i] = key_of(uint64_t(i));
	if (argc > 3 && !write_file(argv[3], keys.data(), size_t(n) * 4)) {
		fprintf(stderr, "cub_sort: cannot write %s\n", argv[3]);
		return 1;
	}

	uint32_t *a = nullptr, *b = nullptr;
	void *temp = nullptr;
	size_t temp_bytes = 0;
	cudaError_t e;
	if ((e = cudaMalloc(&a, size_t(n) * 4)) || (e = cudaMalloc(&b, size_t(n) * 4)))
		return fail("cudaMalloc", e);
	if ((e = cudaMemcpy(a, keys.data(), size_t(n) * 4, cudaMemcpyHostToDevice)))
		return fail("cudaMemcpy", e);
	cub::DoubleBuffer<uint32_t> buf(a, b);
	// The size query launches nothing.
	if ((e = cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, buf, n)))
		return fail("SortKeys (size)", e);
	if ((e = cudaMalloc(&temp, temp_bytes)))
		return fail("cudaMalloc (temp)", e);
	printf("temp_bytes %zu\n", temp_bytes);
	fflush(stdout);
	if ((e = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, buf, n)))
		return fail("SortKeys", e);
	if ((e = cudaDeviceSynchronize()))
		return fail("sort", e);

	std::vector<uint32_t> got(n);
	if ((e = cudaMemcpy(got.data(), buf.Current(), size_t(n) * 4, cudaMemcpyDeviceToHost)))
		return fail("cudaMemcpy (back)", e);
	std::vector<uint32_t> want(keys);
	std::sort(want.begin(), want.end());
	bool agrees = got == want;
	uint64_t h = 0xcbf29ce484222325ull;
	const unsigned char *p = reinterpret_cast<const unsigned char *>(got.data());
	for (size_t i = 0; i < size_t(n) * 4; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	printf("sorted n %d selector %d agrees %d fnv 0x%016llx\n", n, buf.selector, int(agrees),
	       (unsigned long long)h);
	if (!write_file(argv[2], got.data(), size_t(n) * 4)) {
		fprintf(stderr, "cub_sort: cannot write %s\n", argv[2]);
		return 1;
	}
	cudaFree(temp);
	cudaFree(a);
	cudaFree(b);
	return agrees ? 0 : 1;
}
