// SPDX-License-Identifier: MIT OR Apache-2.0
// Tiled shared-memory matrix multiply, the second example application:
// C = A x B for n x n row-major floats, n a multiple of TILE. Blocks of
// TILE x TILE threads, grid n/TILE x n/TILE; each block stages one tile of A
// and one of B in shared memory per step. Built with
//     nvcc -ptx -arch=sm_90 matmul.cu -o matmul.ptx
#define TILE 16

__global__ void matmul(const float *A, const float *B, float *C, int n)
{
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
	float acc = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		As[ty][tx] = A[row * n + t + tx];
		Bs[ty][tx] = B[(t + ty) * n + col];
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; k++)
			acc += As[ty][k] * Bs[k][tx];
		__syncthreads();
	}
	C[row * n + col] = acc;
}
