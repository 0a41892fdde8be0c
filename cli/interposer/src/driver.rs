//! The slice of the CUDA driver ABI the interposer speaks: handle types, result codes and
//! the signatures of the functions it hooks or calls. Written from the driver API's
//! documented C declarations (cuda.h); only what the interposer uses.
//!
//! Every handle is an opaque pointer. The interposer never dereferences one; it keeps
//! them as `usize` keys ([`Handle`]).

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `CUresult`.
pub type CuResult = c_int;
/// `CUDA_SUCCESS`.
pub const SUCCESS: CuResult = 0;
/// `CUDA_ERROR_INVALID_VALUE`: what the interposer answers when it must refuse a call it
/// cannot forward (the real function was never resolved).
pub const ERROR_INVALID_VALUE: CuResult = 1;
/// `CUDA_ERROR_NOT_FOUND`: `cuGetProcAddress` found no such symbol.
pub const ERROR_NOT_FOUND: CuResult = 500;

/// An opaque driver handle (`CUmodule`, `CUfunction`, `CUlibrary`, `CUkernel`, ...).
pub type Ptr = *mut c_void;
/// A driver handle as a map key.
pub type Handle = usize;

/// `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM`: `cuGetProcAddress` returns the
/// per-thread-default-stream variant (`_ptsz`) of stream-taking functions.
pub const PROC_PER_THREAD_STREAM: u64 = 1 << 1;

/// `CU_JIT_INPUT_PTX` of `CUjitInputType`.
pub const JIT_INPUT_PTX: c_uint = 1;

/// `cuGetProcAddress_v2` (CUDA 12+).
pub type GetProcAddressV2 =
    unsafe extern "C" fn(*const c_char, *mut Ptr, c_int, u64, *mut c_int) -> CuResult;
/// `cuGetProcAddress` (CUDA 11.3-11.8).
pub type GetProcAddressV1 = unsafe extern "C" fn(*const c_char, *mut Ptr, c_int, u64) -> CuResult;
/// `cuModuleLoadData(CUmodule *, const void *image)`.
pub type ModuleLoadData = unsafe extern "C" fn(*mut Ptr, *const c_void) -> CuResult;
/// `cuModuleLoadDataEx(CUmodule *, const void *image, n, CUjit_option *, void **values)`.
pub type ModuleLoadDataEx =
    unsafe extern "C" fn(*mut Ptr, *const c_void, c_uint, *mut c_int, *mut Ptr) -> CuResult;
/// `cuModuleLoad(CUmodule *, const char *fname)`.
pub type ModuleLoad = unsafe extern "C" fn(*mut Ptr, *const c_char) -> CuResult;
/// `cuModuleUnload(CUmodule)`.
pub type ModuleUnload = unsafe extern "C" fn(Ptr) -> CuResult;
/// `cuModuleGetFunction(CUfunction *, CUmodule, const char *name)`.
pub type ModuleGetFunction = unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> CuResult;
/// `cuModuleGetGlobal_v2(CUdeviceptr *, size_t *, CUmodule, const char *name)`.
pub type ModuleGetGlobal =
    unsafe extern "C" fn(*mut u64, *mut usize, Ptr, *const c_char) -> CuResult;
/// `cuLibraryLoadData(CUlibrary *, const void *code, CUjit_option *, void **, n,
/// CUlibraryOption *, void **, n)`.
pub type LibraryLoadData = unsafe extern "C" fn(
    *mut Ptr,
    *const c_void,
    *mut c_int,
    *mut Ptr,
    c_uint,
    *mut c_int,
    *mut Ptr,
    c_uint,
) -> CuResult;
/// `cuLibraryLoadFromFile(CUlibrary *, const char *fileName, ...)`: as
/// [`LibraryLoadData`] with a path.
pub type LibraryLoadFromFile = unsafe extern "C" fn(
    *mut Ptr,
    *const c_char,
    *mut c_int,
    *mut Ptr,
    c_uint,
    *mut c_int,
    *mut Ptr,
    c_uint,
) -> CuResult;
/// `cuLibraryUnload(CUlibrary)`.
pub type LibraryUnload = unsafe extern "C" fn(Ptr) -> CuResult;
/// `cuLibraryGetKernel(CUkernel *, CUlibrary, const char *name)`.
pub type LibraryGetKernel = unsafe extern "C" fn(*mut Ptr, Ptr, *const c_char) -> CuResult;
/// `cuLibraryGetModule(CUmodule *, CUlibrary)`.
pub type LibraryGetModule = unsafe extern "C" fn(*mut Ptr, Ptr) -> CuResult;
/// `cuLibraryGetGlobal(CUdeviceptr *, size_t *, CUlibrary, const char *name)`.
pub type LibraryGetGlobal =
    unsafe extern "C" fn(*mut u64, *mut usize, Ptr, *const c_char) -> CuResult;
/// `cuKernelGetFunction(CUfunction *, CUkernel)`.
pub type KernelGetFunction = unsafe extern "C" fn(*mut Ptr, Ptr) -> CuResult;
/// `cuLaunchKernel(f, grid x/y/z, block x/y/z, shared bytes, stream, params, extra)`.
pub type LaunchKernel = unsafe extern "C" fn(
    Ptr,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Ptr,
    *mut Ptr,
    *mut Ptr,
) -> CuResult;
/// `cuLaunchCooperativeKernel`: [`LaunchKernel`] without `extra`.
pub type LaunchCooperativeKernel = unsafe extern "C" fn(
    Ptr,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    Ptr,
    *mut Ptr,
) -> CuResult;
/// `cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, void **params, void **extra)`.
pub type LaunchKernelEx =
    unsafe extern "C" fn(*const LaunchConfig, Ptr, *mut Ptr, *mut Ptr) -> CuResult;
/// `cuCtxSynchronize()`.
pub type CtxSynchronize = unsafe extern "C" fn() -> CuResult;

/// `CUlaunchConfig`: the grid and block of a [`LaunchKernelEx`] launch (the attributes
/// are passed through untouched).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct LaunchConfig {
    /// Grid size in blocks, x.
    pub grid_x: c_uint,
    /// Grid y.
    pub grid_y: c_uint,
    /// Grid z.
    pub grid_z: c_uint,
    /// Block size in threads, x.
    pub block_x: c_uint,
    /// Block y.
    pub block_y: c_uint,
    /// Block z.
    pub block_z: c_uint,
    /// Dynamic shared memory bytes.
    pub shared_bytes: c_uint,
    /// The stream.
    pub stream: Ptr,
    /// `CUlaunchAttribute *`.
    pub attrs: Ptr,
    /// Number of attributes.
    pub num_attrs: c_uint,
}

/// `CU_STREAM_NON_BLOCKING`: a stream that does not synchronize with the legacy default
/// stream, so the interposer's copies never wait for the application's work there.
pub const STREAM_NON_BLOCKING: c_uint = 1;
/// `cuStreamCreate(CUstream *, unsigned flags)`.
pub type StreamCreate = unsafe extern "C" fn(*mut Ptr, c_uint) -> CuResult;
/// `cuStreamSynchronize(CUstream)`.
pub type StreamSynchronize = unsafe extern "C" fn(Ptr) -> CuResult;
/// `cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream)`.
pub type MemcpyDtoHAsync = unsafe extern "C" fn(*mut c_void, u64, usize, Ptr) -> CuResult;
/// `cuCtxGetCurrent(CUcontext *)`.
pub type CtxGetCurrent = unsafe extern "C" fn(*mut Ptr) -> CuResult;
/// `cuCtxSetCurrent(CUcontext)`.
pub type CtxSetCurrent = unsafe extern "C" fn(Ptr) -> CuResult;
/// `cuMemAlloc_v2(CUdeviceptr *, size_t)`.
pub type MemAlloc = unsafe extern "C" fn(*mut u64, usize) -> CuResult;
/// `cuMemFree_v2(CUdeviceptr)`.
pub type MemFree = unsafe extern "C" fn(u64) -> CuResult;
/// `cuMemsetD8_v2(CUdeviceptr, unsigned char, size_t)`.
pub type MemsetD8 = unsafe extern "C" fn(u64, u8, usize) -> CuResult;
/// `cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t)`.
pub type MemcpyDtoD = unsafe extern "C" fn(u64, u64, usize) -> CuResult;
/// `cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t)`.
pub type MemcpyHtoD = unsafe extern "C" fn(u64, *const c_void, usize) -> CuResult;
/// `cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t)`.
pub type MemcpyDtoH = unsafe extern "C" fn(*mut c_void, u64, usize) -> CuResult;
/// `cuMemsetD8Async(CUdeviceptr, unsigned char, size_t, CUstream)`.
pub type MemsetD8Async = unsafe extern "C" fn(u64, u8, usize, Ptr) -> CuResult;
/// `cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t, CUstream)`.
pub type MemcpyDtoDAsync = unsafe extern "C" fn(u64, u64, usize, Ptr) -> CuResult;
/// `cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t, CUstream)`.
pub type MemcpyHtoDAsync = unsafe extern "C" fn(u64, *const c_void, usize, Ptr) -> CuResult;
/// `CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS`: 1 when `cuStreamWriteValue64`
/// works on the device.
pub const ATTR_64_BIT_STREAM_MEM_OPS: std::ffi::c_int = 122;
/// `cuStreamWriteValue64_v2(CUstream, CUdeviceptr, cuuint64_t value, unsigned flags)`: a
/// 64-bit write in stream order, the value taken at the call.
pub type StreamWriteValue64 = unsafe extern "C" fn(Ptr, u64, u64, u32) -> CuResult;
/// `cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *)`: sets the calling thread's
/// mode, returning the old one in place.
pub type ThreadExchangeStreamCaptureMode = unsafe extern "C" fn(*mut c_int) -> CuResult;
/// `CU_STREAM_CAPTURE_MODE_RELAXED`: this thread's calls are not checked against
/// captures in progress (the driver refuses "unsafe" calls during a global-mode capture
/// otherwise, and the refusal invalidates the application's capture).
pub const STREAM_CAPTURE_MODE_RELAXED: c_int = 2;
/// `cuCtxGetDevice(CUdevice *)`: the device of the current context (its ordinal).
pub type CtxGetDevice = unsafe extern "C" fn(*mut c_int) -> CuResult;

/// `CUDA_KERNEL_NODE_PARAMS` (`_v2`, CUDA 12+): an explicit graph kernel node's function
/// (or, when `func` is null, its `CUkernel`), launch shape and arguments.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct KernelNodeParams {
    /// The function (`CUfunction`), or null with `kern` set.
    pub func: Ptr,
    /// Grid size in blocks, x.
    pub grid_x: c_uint,
    /// Grid y.
    pub grid_y: c_uint,
    /// Grid z.
    pub grid_z: c_uint,
    /// Block size in threads, x.
    pub block_x: c_uint,
    /// Block y.
    pub block_y: c_uint,
    /// Block z.
    pub block_z: c_uint,
    /// Dynamic shared memory bytes.
    pub shared_bytes: c_uint,
    /// `void **kernelParams`.
    pub params: *mut Ptr,
    /// `void **extra`.
    pub extra: *mut Ptr,
    /// The kernel (`CUkernel`) when `func` is null.
    pub kern: Ptr,
    /// The context of `kern`'s function.
    pub ctx: Ptr,
}

/// `cuGraphAddKernelNode_v2(CUgraphNode *, CUgraph, const CUgraphNode *deps, size_t n,
/// const CUDA_KERNEL_NODE_PARAMS *)`.
pub type GraphAddKernelNode =
    unsafe extern "C" fn(*mut Ptr, Ptr, *const Ptr, usize, *const KernelNodeParams) -> CuResult;
/// `cuGraphKernelNodeSetParams_v2(CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *)`.
pub type GraphKernelNodeSetParams = unsafe extern "C" fn(Ptr, *const KernelNodeParams) -> CuResult;
/// `cuGraphExecKernelNodeSetParams_v2(CUgraphExec, CUgraphNode, const
/// CUDA_KERNEL_NODE_PARAMS *)`.
pub type GraphExecKernelNodeSetParams =
    unsafe extern "C" fn(Ptr, Ptr, *const KernelNodeParams) -> CuResult;

/// `cuLinkAddData_v2(CUlinkState, CUjitInputType, void *data, size_t size, const char
/// *name, unsigned n, CUjit_option *, void **values)`.
pub type LinkAddData = unsafe extern "C" fn(
    Ptr,
    c_uint,
    *mut c_void,
    usize,
    *const c_char,
    c_uint,
    *mut c_int,
    *mut Ptr,
) -> CuResult;
/// `cuLinkAddFile_v2(CUlinkState, CUjitInputType, const char *path, unsigned n,
/// CUjit_option *, void **values)`.
pub type LinkAddFile =
    unsafe extern "C" fn(Ptr, c_uint, *const c_char, c_uint, *mut c_int, *mut Ptr) -> CuResult;

/// `CU_MEMHOSTALLOC_PORTABLE`: pinned memory every context may use (maps shared by host
/// programs serve every module, whatever context loaded it).
pub const MEMHOSTALLOC_PORTABLE: c_uint = 1;
/// `CU_MEMHOSTALLOC_DEVICEMAP`: pinned memory the device can address.
pub const MEMHOSTALLOC_DEVICEMAP: c_uint = 2;
/// `cuMemHostAlloc(void **pp, size_t bytes, unsigned flags)`.
pub type MemHostAlloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> CuResult;
/// `cuMemHostGetDevicePointer_v2(CUdeviceptr *, void *p, unsigned flags)`.
pub type MemHostGetDevicePointer = unsafe extern "C" fn(*mut u64, *mut c_void, c_uint) -> CuResult;
/// `cuStreamQuery(CUstream)`: `SUCCESS` when its work is done.
pub type StreamQuery = unsafe extern "C" fn(Ptr) -> CuResult;
/// `cuStreamIsCapturing(CUstream, CUstreamCaptureStatus *)`: status 0 when not capturing.
pub type StreamIsCapturing = unsafe extern "C" fn(Ptr, *mut c_int) -> CuResult;
