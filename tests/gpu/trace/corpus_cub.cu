// SPDX-License-Identifier: MIT OR Apache-2.0
// The CUB/Thrust part of tests/gpu/corpus.py's real-world PTX corpus (issue 18, "Build"
// 4): a handful of the algorithms applications call, on N keys (argv[1], default
// 2^20 + 12345), each checked against the CPU. Built PTX only
// (`-gencode arch=compute_90,code=compute_90`), so the driver JITs the module, and run
// untraced and under `bpf2ptx trace`: stdout (one line per algorithm, a FNV-1a checksum of
// its output's bytes and whether it agrees with the CPU) must be the same.
//
//   thrust::sort                          int32 keys (radix sort, signed twiddle)
//   cub::DeviceRadixSort::SortPairsDescending  uint32 keys, uint32 values (stable)
//   cub::DeviceReduce::Sum                uint64 (exact) and float (tree order)
//   cub::DeviceScan::InclusiveSum         uint32
//   thrust::transform                     saxpy on float
//
// Exit 1 when a result disagrees with the CPU, 2 on a CUDA error.
#include <cub/cub.cuh>
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <vector>

#define CHECK(x)                                                                         \
	do {                                                                             \
		cudaError_t e_ = (x);                                                    \
		if (e_ != cudaSuccess) {                                                 \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,       \
				cudaGetErrorString(e_));                                  \
			exit(2);                                                         \
		}                                                                        \
	} while (0)

// splitmix64's output function: the keys (tests/gpu/trace/cub_sort.cu uses the same).
static uint64_t mix(uint64_t i)
{
	uint64_t z = i * 0x9E3779B97F4A7C15ull + 0x6A09E667F3BCC909ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = static_cast<const unsigned char *>(p);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int bad = 0;

template <typename T> static void report(const char *what, const std::vector<T> &v, bool ok)
{
	bad += !ok;
	printf("%s: n %zu checksum 0x%016llx agrees %d\n", what, v.size(),
	       (unsigned long long)fnv(v.data(), v.size() * sizeof(T)), ok ? 1 : 0);
}

template <typename T> static T *upload(const std::vector<T> &v)
{
	T *d;
	CHECK(cudaMalloc(&d, v.size() * sizeof(T)));
	CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
	return d;
}

template <typename T> static std::vector<T> download(const T *d, size_t n)
{
	std::vector<T> v(n);
	CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
	return v;
}

struct saxpy {
	float a;
	__host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};

int main(int argc, char **argv)
{
	const size_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : (1u << 20) + 12345;
	std::vector<int32_t> ints(n);
	std::vector<uint32_t> keys(n), vals(n);
	std::vector<uint64_t> wide(n);
	std::vector<float> xs(n), ys(n);
	for (size_t i = 0; i < n; i++) {
		uint64_t r = mix(i);
		ints[i] = static_cast<int32_t>(r >> 32);
		keys[i] = static_cast<uint32_t>(r) & 0xfffffu; // repeated keys: stability shows
		vals[i] = static_cast<uint32_t>(i);
		wide[i] = r >> 20;
		xs[i] = static_cast<float>((r >> 40) & 0xffff) / 65536.0f - 0.5f;
		ys[i] = static_cast<float>((r >> 8) & 0xffff) / 4096.0f;
	}

	{ // thrust::sort
		thrust::device_vector<int32_t> d(ints.begin(), ints.end());
		thrust::sort(d.begin(), d.end());
		std::vector<int32_t> got(n), want = ints;
		thrust::copy(d.begin(), d.end(), got.begin());
		std::sort(want.begin(), want.end());
		report("thrust::sort int32", got, got == want);
	}
	{ // cub::DeviceRadixSort::SortPairsDescending
		uint32_t *k_in = upload(keys), *v_in = upload(vals), *k_out, *v_out;
		CHECK(cudaMalloc(&k_out, n * 4));
		CHECK(cudaMalloc(&v_out, n * 4));
		void *tmp = nullptr;
		size_t bytes = 0;
		CHECK(cub::DeviceRadixSort::SortPairsDescending(tmp, bytes, k_in, k_out, v_in, v_out,
								(int)n));
		CHECK(cudaMalloc(&tmp, bytes));
		CHECK(cub::DeviceRadixSort::SortPairsDescending(tmp, bytes, k_in, k_out, v_in, v_out,
								(int)n));
		std::vector<uint32_t> gk = download(k_out, n), gv = download(v_out, n);
		std::vector<uint32_t> order(n);
		std::iota(order.begin(), order.end(), 0u);
		std::stable_sort(order.begin(), order.end(),
				 [&](uint32_t a, uint32_t b) { return keys[a] > keys[b]; });
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++)
			ok = gk[i] == keys[order[i]] && gv[i] == vals[order[i]];
		report("cub::DeviceRadixSort::SortPairsDescending keys", gk, ok);
		report("cub::DeviceRadixSort::SortPairsDescending values", gv, ok);
		CHECK(cudaFree(tmp));
		CHECK(cudaFree(k_in));
		CHECK(cudaFree(v_in));
		CHECK(cudaFree(k_out));
		CHECK(cudaFree(v_out));
	}
	{ // cub::DeviceReduce::Sum, exact (uint64) and in CUB's tree order (float)
		uint64_t *w = upload(wide), *ws;
		float *x = upload(xs), *xsum;
		CHECK(cudaMalloc(&ws, 8));
		CHECK(cudaMalloc(&xsum, 4));
		void *tmp = nullptr;
		size_t a = 0, b = 0;
		CHECK(cub::DeviceReduce::Sum(tmp, a, w, ws, (int)n));
		CHECK(cub::DeviceReduce::Sum(tmp, b, x, xsum, (int)n));
		CHECK(cudaMalloc(&tmp, std::max(a, b)));
		CHECK(cub::DeviceReduce::Sum(tmp, a, w, ws, (int)n));
		CHECK(cub::DeviceReduce::Sum(tmp, b, x, xsum, (int)n));
		std::vector<uint64_t> gw = download(ws, 1);
		std::vector<float> gx = download(xsum, 1);
		uint64_t want = std::accumulate(wide.begin(), wide.end(), uint64_t{0});
		double wantf = 0;
		for (float v : xs)
			wantf += v;
		report("cub::DeviceReduce::Sum uint64", gw, gw[0] == want);
		report("cub::DeviceReduce::Sum float", gx,
		       std::fabs(gx[0] - wantf) <= 1e-3 * (1 + std::fabs(wantf)));
		CHECK(cudaFree(tmp));
		CHECK(cudaFree(w));
		CHECK(cudaFree(ws));
		CHECK(cudaFree(x));
		CHECK(cudaFree(xsum));
	}
	{ // cub::DeviceScan::InclusiveSum
		uint32_t *in = upload(keys), *out;
		CHECK(cudaMalloc(&out, n * 4));
		void *tmp = nullptr;
		size_t bytes = 0;
		CHECK(cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, (int)n));
		CHECK(cudaMalloc(&tmp, bytes));
		CHECK(cub::DeviceScan::InclusiveSum(tmp, bytes, in, out, (int)n));
		std::vector<uint32_t> got = download(out, n), want(n);
		std::partial_sum(keys.begin(), keys.end(), want.begin());
		report("cub::DeviceScan::InclusiveSum uint32", got, got == want);
		CHECK(cudaFree(tmp));
		CHECK(cudaFree(in));
		CHECK(cudaFree(out));
	}
	{ // thrust::transform
		thrust::device_vector<float> x(xs.begin(), xs.end()), y(ys.begin(), ys.end()),
			z(n);
		thrust::transform(x.begin(), x.end(), y.begin(), z.begin(), saxpy{2.5f});
		std::vector<float> got(n);
		thrust::copy(z.begin(), z.end(), got.begin());
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++) {
			float want = 2.5f * xs[i] + ys[i];
			ok = std::fabs(got[i] - want) <= 1e-5f * (1 + std::fabs(want));
		}
		report("thrust::transform saxpy", got, ok);
	}
	CHECK(cudaDeviceSynchronize());
	return bad ? 1 : 0;
}
