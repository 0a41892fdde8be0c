// SPDX-License-Identifier: MIT OR Apache-2.0
// Vector add, the first example application: c[i] = a[i] + b[i].
// Launched with 2^24 elements and 256 threads per block. Only the kernel is
// here: the host programs (Python + CuPy) load the PTX that
//     nvcc -ptx -arch=sm_90 vecadd.cu -o vecadd.ptx
// writes, or the PTX `bpf2ptx inject` makes from it.
__global__ void vecAdd(const float *a, const float *b, float *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}
