// SPDX-License-Identifier: MIT OR Apache-2.0
//
// Reading a bpf2ptx probe's array map from the host of an instrumented program.
//
// After `bpf2ptx inject` the probe's maps are globals of the kernel's own module: the
// 64-byte descriptor `bpf2ptx_map_NAME` and the storage `bpf2ptx_mapdata_NAME`
// (specs/abi.md, "Maps"). The CUDA runtime loaded that module for the kernel, so the
// driver API finds it from the kernel: cudaGetFuncBySymbol -> cuFuncGetModule ->
// cuModuleGetGlobal. An uninstrumented build has no such global: the read says so and the
// program runs as before.
#pragma once
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <vector>

// The values of array map `name` in the module of `kernel`, summed over its per-SM
// replicas when bpf2ptx sharded it (word 4 = replicas, word 5 = bytes per replica); false
// when the module has no such map (not instrumented) or it is not an array of u64 values.
static bool bpf2ptx_read_array(const void *kernel, const char *name, std::vector<uint64_t> &out)
{
	cudaFunction_t f;
	if (cudaGetFuncBySymbol(&f, kernel) != cudaSuccess)
		return false;
	CUmodule mod;
	if (cuFuncGetModule(&mod, (CUfunction)f) != CUDA_SUCCESS)
		return false;
	char sym[256];
	CUdeviceptr desc, data;
	size_t desc_bytes, data_bytes;
	snprintf(sym, sizeof sym, "bpf2ptx_map_%s", name);
	if (cuModuleGetGlobal(&desc, &desc_bytes, mod, sym) != CUDA_SUCCESS || desc_bytes != 64)
		return false;
	snprintf(sym, sizeof sym, "bpf2ptx_mapdata_%s", name);
	if (cuModuleGetGlobal(&data, &data_bytes, mod, sym) != CUDA_SUCCESS)
		return false;
	uint64_t w[8];
	if (cuMemcpyDtoH(w, desc, sizeof w) != CUDA_SUCCESS)
		return false;
	uint32_t type = (uint32_t)w[0], max_entries = (uint32_t)w[2];
	uint32_t value_size = (uint32_t)(w[1] >> 32), stride = (uint32_t)(w[2] >> 32);
	// Array (2), per-SM array (6), GPU array (1503): max_entries slots of `stride` bytes.
	if ((type != 2 && type != 6 && type != 1503) || value_size != 8)
		return false;
	uint64_t replicas = w[4] > 1 ? w[4] : 1;
	uint64_t per = replicas > 1 ? w[5] : (uint64_t)max_entries * stride;
	if (replicas * per > data_bytes)
		return false;
	std::vector<unsigned char> bytes(replicas * per);
	if (cuMemcpyDtoH(bytes.data(), data, bytes.size()) != CUDA_SUCCESS)
		return false;
	out.assign(max_entries, 0);
	for (uint64_t r = 0; r < replicas; r++)
		for (uint32_t i = 0; i < max_entries; i++)
			out[i] += *(const uint64_t *)(bytes.data() + r * per + (uint64_t)i * stride);
	return true;
}
