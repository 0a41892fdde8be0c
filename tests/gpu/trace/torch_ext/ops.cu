// SPDX-License-Identifier: MIT OR Apache-2.0
// A PyTorch C++/CUDA extension for tests/gpu/trace_torch.py: two kernels of our own, built
// by torch.utils.cpp_extension with TORCH_CUDA_ARCH_LIST="9.0+PTX", so that the
// extension's fatbin carries compute_90 PTX beside its sm_90 SASS and `bpf2ptx trace`
// can instrument them, while torch's own kernels (SASS only in its wheels) run as they
// are. Nothing here knows about bpf2ptx.
//
// - scale_add: out = a * x + y, one thread per element, 256 threads a block, a partial
//   last block (threads past n return at once: an early exit the exit probes must see);
//   an extern "C" kernel (PTX name `ext_scale_add`; no name here starts with `bpf2ptx_`,
//   the prefix of the probes' own symbols, which the interposer takes as "already probed").
// - row_sum<96>: one block per row of a 2-D tensor, 96 threads (3 warps) striding over the
//   columns, partial sums in shared memory, thread 0 adds them in order (deterministic);
//   a template (PTX name mangled, `_Z7row_sumILi96EEvPKfPfi`).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

constexpr int SCALE_ADD_BLOCK = 256;
constexpr int ROW_SUM_BLOCK = 96;

extern "C" __global__ void ext_scale_add(const float *x, const float *y, float *out,
					     float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	out[i] = a * x[i] + y[i];
}

template <int BLOCK> __global__ void row_sum(const float *x, float *out, int cols)
{
	__shared__ float part[BLOCK];
	const float *row = x + (size_t)blockIdx.x * cols;
	float s = 0.0f;
	for (int c = threadIdx.x; c < cols; c += BLOCK)
		s += row[c];
	part[threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		float t = 0.0f;
		for (int k = 0; k < BLOCK; k++)
			t += part[k];
		out[blockIdx.x] = t;
	}
}

static void check_f32_cuda(const torch::Tensor &t, const char *name)
{
	TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
	TORCH_CHECK(t.scalar_type() == torch::kFloat32, name, " must be float32");
	TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
}

torch::Tensor scale_add(torch::Tensor x, torch::Tensor y, double a)
{
	check_f32_cuda(x, "x");
	check_f32_cuda(y, "y");
	TORCH_CHECK(x.numel() == y.numel(), "x and y differ in size");
	TORCH_CHECK(x.numel() < (1ll << 31), "too many elements");
	auto out = torch::empty_like(x);
	int n = (int)x.numel();
	int grid = (n + SCALE_ADD_BLOCK - 1) / SCALE_ADD_BLOCK;
	if (grid > 0) {
		ext_scale_add<<<grid, SCALE_ADD_BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
			x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), (float)a, n);
		C10_CUDA_KERNEL_LAUNCH_CHECK();
	}
	return out;
}

torch::Tensor row_sums(torch::Tensor x)
{
	check_f32_cuda(x, "x");
	TORCH_CHECK(x.dim() == 2, "x must be 2-D");
	auto out = torch::empty({ x.size(0) }, x.options());
	if (x.size(0) > 0) {
		row_sum<ROW_SUM_BLOCK>
			<<<(int)x.size(0), ROW_SUM_BLOCK, 0, at::cuda::getCurrentCUDAStream()>>>(
				x.data_ptr<float>(), out.data_ptr<float>(), (int)x.size(1));
		C10_CUDA_KERNEL_LAUNCH_CHECK();
	}
	return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
	m.def("scale_add", &scale_add, "out = a * x + y (kernel ext_scale_add)");
	m.def("row_sums", &row_sums, "per-row sums of a 2-D tensor (kernel row_sum<96>)");
	m.attr("SCALE_ADD_BLOCK") = SCALE_ADD_BLOCK;
	m.attr("ROW_SUM_BLOCK") = ROW_SUM_BLOCK;
}
