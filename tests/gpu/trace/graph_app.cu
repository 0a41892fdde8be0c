// SPDX-License-Identifier: MIT OR Apache-2.0
// An unmodified CUDA application whose kernels run inside CUDA graphs, for `bpf2ptx
// trace`'s GPU checks: `scale` launched REPS times into a graph captured from a stream,
// and `shift` added REPS times to a graph as explicit kernel nodes; each graph launched
// twice. Prints the number of wrong elements (0 when correct) and, on stderr, the model
// line tests/gpu/trace_apps.py reads.
#include <cstdio>
#include <vector>

__global__ void scale(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }
__global__ void shift(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }

int main()
{
	const int reps = 3, block = 128, blocks = 512, n = block * blocks;
	std::vector<float> h(n);
	for (int i = 0; i < n; i++)
		h[i] = float(i % 100);
	float *d;
	cudaMalloc(&d, n * sizeof(float));
	cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
	cudaStream_t s;
	cudaStreamCreate(&s);
	// Captured: scale x reps.
	cudaGraph_t captured;
	cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
	for (int r = 0; r < reps; r++)
		scale<<<blocks, block, 0, s>>>(d);
	cudaStreamEndCapture(s, &captured);
	// Explicit: shift x reps, chained.
	cudaGraph_t explicit_graph;
	cudaGraphCreate(&explicit_graph, 0);
	cudaGraphNode_t prev = nullptr;
	void *args[] = {&d};
	for (int r = 0; r < reps; r++) {
		cudaKernelNodeParams p = {};
		p.func = (void *)shift;
		p.gridDim = dim3(blocks);
		p.blockDim = dim3(block);
		p.kernelParams = args;
		cudaGraphNode_t node;
		cudaGraphAddKernelNode(&node, explicit_graph, prev ? &prev : nullptr, prev ? 1 : 0, &p);
		prev = node;
	}
	cudaGraphExec_t e1, e2;
	cudaGraphInstantiate(&e1, captured, 0);
	cudaGraphInstantiate(&e2, explicit_graph, 0);
	for (int k = 0; k < 2; k++) {
		cudaGraphLaunch(e1, s);
		cudaGraphLaunch(e2, s);
	}
	cudaError_t err = cudaStreamSynchronize(s);
	std::vector<float> out(n);
	cudaMemcpy(out.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
	int wrong = 0;
	for (int i = 0; i < n; i++) {
		float v = h[i];
		for (int k = 0; k < 2; k++) {
			for (int r = 0; r < reps; r++)
				v *= 2.0f;
			for (int r = 0; r < reps; r++)
				v += 1.0f;
		}
		wrong += out[i] != v;
	}
	printf("graphs elements %d wrong %d (%s)\n", n, wrong, cudaGetErrorString(err));
	fprintf(stderr, "model scale launches %d grid %d block %d\n", 2 * reps, blocks, block);
	fprintf(stderr, "model shift launches %d grid %d block %d\n", 2 * reps, blocks, block);
	return wrong != 0 || err != cudaSuccess;
}
