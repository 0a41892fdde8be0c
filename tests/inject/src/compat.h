// compat.h: the few CUDA names the fixtures use, for nvcc (with the CUDA headers) and for
// clang with -nocudainc (no CUDA headers; NVVM builtins instead).
#pragma once
#ifdef __NVCC__
#define TID_X threadIdx.x
#define BID_X blockIdx.x
#define BDIM_X blockDim.x
#define TID_Y threadIdx.y
#define BID_Y blockIdx.y
#define SYNC() __syncthreads()
#define SHFL_DOWN(v, d) __shfl_down_sync(0xffffffffu, (v), (d))
#define LDG(p) __ldg(p)
#define ATOMIC_ADD(p, v) atomicAdd((p), (v))
#else
#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __noinline__ __attribute__((noinline))
#define TID_X __nvvm_read_ptx_sreg_tid_x()
#define BID_X __nvvm_read_ptx_sreg_ctaid_x()
#define BDIM_X __nvvm_read_ptx_sreg_ntid_x()
#define TID_Y __nvvm_read_ptx_sreg_tid_y()
#define BID_Y __nvvm_read_ptx_sreg_ctaid_y()
#define SYNC() __nvvm_bar_sync(0)
#define SHFL_DOWN(v, d) __nvvm_shfl_sync_down_f32(0xffffffffu, (v), (d), 0x1f)
#define LDG(p) __nvvm_ldg_f(p)
#define ATOMIC_ADD(p, v) __nvvm_atom_add_gen_f((p), (v))
struct float4 { float x, y, z, w; } __attribute__((aligned(16)));
#endif
