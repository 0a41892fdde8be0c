//! Running a compiled program on an NVIDIA GPU through the CUDA driver API.
//!
//! ```text
//!  PTX text ──Gpu::load──▶ Module (cuModuleLoadDataEx, JIT error log kept)
//!  Module + entry + mem ──Gpu::run_entry──▶ RunResult { r0, mem, kernel_ms }
//!  Module + any kernel + Dims + [Param] ──Gpu::start──▶ Pending ──wait──▶ kernel ms
//! ```
//!
//! [`Gpu::start`] launches any kernel of a module (an application kernel with a probe
//! injected, say) with a 3-D shape and by-value parameters and returns while it runs, so
//! that the host loader ([`crate::loader`]) can drain rings in host memory meanwhile.
//!
//! The driver is loaded at run time (cudarc's `dynamic-loading`), so the `bpf2ptx` binary
//! neither links libcuda nor needs it unless a program is actually run on a GPU.
//! [`Gpu::open`] checks for the library first and returns [`GpuError::NoDriver`] where it
//! is missing (cudarc itself would panic).
//!
//! One [`Gpu`] holds one context (the primary context of device 0) and its default
//! stream, where every kernel runs; a process loads any number of modules into it and
//! launches any number of kernels. A [`CopyStream`] adds a non-blocking stream for small
//! copies into device memory while a kernel runs. Every launch is synchronous:
//! [`Gpu::run_entry`] returns after the kernel has finished and its results have been
//! copied back.
//!
//! The entry ABI, as the backend emits it with `--entry`:
//!
//! ```text
//! .visible .entry NAME(.param .u64 mem, .param .u64 mem_len, .param .u64 result)
//! ```
//!
//! `mem` points to a device copy of the input bytes (a 1-byte allocation when the input is
//! empty, with `mem_len` 0) and `result` to one `u64` where the kernel stores r0. The
//! kernel runs as one thread (grid 1x1x1, block 1x1x1).
//!
//! A fault inside a kernel (illegal address, trap, ...) is sticky: every later driver call
//! of the process fails with the same error, and (checked with driver 580 on an H200)
//! neither dropping every context, nor `cuDevicePrimaryCtxReset`, nor a new non-primary
//! context recovers; only a new process does. [`GpuError::is_context_lost`] says when
//! that has happened.

use cudarc::driver::result::DriverError;
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaStream, DevicePtrMut};
use std::ffi::{c_void, CString};
use std::sync::Arc;
use thiserror::Error;

/// Why something on the GPU failed.
#[derive(Debug, Error)]
pub enum GpuError {
    /// libcuda could not be loaded.
    #[error(
        "no CUDA driver (libcuda.so) found: `bpf2ptx run` needs an NVIDIA GPU; \
         use --cpu for the reference interpreter"
    )]
    NoDriver,
    /// The driver is there but sees no device.
    #[error("the CUDA driver found no GPU: `bpf2ptx run` needs an NVIDIA GPU; use --cpu for the reference interpreter")]
    NoDevice,
    /// A driver call failed outside the cases below.
    #[error("cuda {op} failed: {}", describe(source))]
    Driver {
        /// What was being done (`init`, `context`, `alloc`, `copy`, ...).
        op: &'static str,
        /// The driver's error.
        source: DriverError,
    },
    /// The driver rejected the PTX (JIT compilation failed).
    #[error("ptx jit failed: {}{}{log}", describe(source), if log.is_empty() { "" } else { "\n" })]
    Jit {
        /// The JIT compiler's error log (`ptxas ...` lines), possibly empty.
        log: String,
        /// The driver's error.
        source: DriverError,
    },
    /// The PTX text holds a NUL byte, which the driver API cannot take.
    #[error("the ptx text holds a NUL byte at offset {offset}")]
    NulInPtx {
        /// Byte offset of the first NUL.
        offset: usize,
    },
    /// The module has no kernel of that name.
    #[error("the module has no kernel `{entry}`")]
    NoEntry {
        /// The name asked for.
        entry: String,
    },
    /// The launch failed, or the kernel faulted while running.
    #[error("kernel `{entry}` failed: {}", describe(source))]
    Kernel {
        /// The kernel.
        entry: String,
        /// The driver's error.
        source: DriverError,
    },
}

impl GpuError {
    /// Whether the error is a sticky one (a fault inside a kernel): every later CUDA call
    /// of this process fails, [`Gpu::open`] included (see the module doc).
    pub fn is_context_lost(&self) -> bool {
        use sys::cudaError_enum as E;
        let code = match self {
            GpuError::Driver { source, .. }
            | GpuError::Jit { source, .. }
            | GpuError::Kernel { source, .. } => source.0,
            _ => return false,
        };
        matches!(
            code,
            E::CUDA_ERROR_ILLEGAL_ADDRESS
                | E::CUDA_ERROR_LAUNCH_FAILED
                | E::CUDA_ERROR_LAUNCH_TIMEOUT
                | E::CUDA_ERROR_HARDWARE_STACK_ERROR
                | E::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | E::CUDA_ERROR_MISALIGNED_ADDRESS
                | E::CUDA_ERROR_INVALID_ADDRESS_SPACE
                | E::CUDA_ERROR_INVALID_PC
                | E::CUDA_ERROR_ASSERT
                | E::CUDA_ERROR_ECC_UNCORRECTABLE
                | E::CUDA_ERROR_CONTEXT_IS_DESTROYED
        )
    }
}

/// `CUDA_ERROR_X (text)`, from the driver's own tables.
fn describe(e: &DriverError) -> String {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned());
    let text = e.error_string().map(|s| s.to_string_lossy().into_owned());
    match (name, text) {
        (Ok(n), Ok(t)) => format!("{n} ({t})"),
        (Ok(n), Err(_)) => n,
        _ => format!("{:?}", e.0),
    }
}

fn driver(op: &'static str) -> impl FnOnce(DriverError) -> GpuError {
    move |source| GpuError::Driver { op, source }
}

/// One CUDA context (device 0's primary context) and its default stream.
#[derive(Debug)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
}

/// A one-dimensional launch: `grid` blocks of `block` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Blocks.
    pub grid: u32,
    /// Threads per block.
    pub block: u32,
}

impl Default for Launch {
    fn default() -> Self {
        Launch { grid: 1, block: 1 }
    }
}

impl Launch {
    /// Threads in the whole launch.
    pub fn threads(&self) -> u64 {
        u64::from(self.grid) * u64::from(self.block)
    }
}

/// The module-scope variables PTX text defines: the name of every `.global` declaration
/// outside functions (`[.visible] .global [.align N] .type NAME[...] [= ...];`; `.extern`
/// ones are not defined here).
pub fn global_names(ptx: &str) -> std::collections::HashSet<String> {
    ptx.lines()
        .map(str::trim_start)
        .filter(|l| {
            let l = l
                .strip_prefix(".visible")
                .or_else(|| l.strip_prefix(".weak"))
                .unwrap_or(l);
            l.trim_start().starts_with(".global")
        })
        .filter_map(|l| {
            // The first word that is neither a directive nor a number (`.align 8`).
            let name = l
                .split_whitespace()
                .find(|t| !t.starts_with('.') && !t.starts_with(|c: char| c.is_ascii_digit()))?;
            let end = name.find(['[', ';', '=']).unwrap_or(name.len());
            Some(name[..end].to_string()).filter(|n| !n.is_empty())
        })
        .collect()
}

/// A three-dimensional launch shape, as `cuLaunchKernel` takes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dims {
    /// Blocks in x, y, z.
    pub grid: [u32; 3],
    /// Threads per block in x, y, z.
    pub block: [u32; 3],
}

impl Dims {
    /// Threads in the whole launch (what per-thread arrays are sized for).
    pub fn threads(&self) -> u64 {
        self.grid
            .iter()
            .chain(&self.block)
            .map(|&d| u64::from(d))
            .product()
    }

    /// Warps in the whole launch (what per-warp arrays are sized for): each block's
    /// threads, in linear order, make up whole warps of 32 and a last partial one.
    pub fn warps(&self) -> u64 {
        let blocks: u64 = self.grid.iter().map(|&d| u64::from(d)).product();
        let threads: u64 = self.block.iter().map(|&d| u64::from(d)).product();
        blocks * threads.div_ceil(32)
    }
}

impl From<Launch> for Dims {
    fn from(l: Launch) -> Dims {
        Dims {
            grid: [l.grid, 1, 1],
            block: [l.block, 1, 1],
        }
    }
}

/// One kernel parameter, passed by value. The driver copies as many bytes as the kernel
/// declares for the parameter, so each must have the declared type (device pointers are
/// [`Param::U64`]); every value is kept in 8 bytes, so a mismatch never reads outside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param {
    /// `.u32`, `.s32`, `.b32`.
    U32(u32),
    /// `.u64`, `.s64`, `.b64`, pointers.
    U64(u64),
    /// `.f32`.
    F32(f32),
    /// `.f64`.
    F64(f64),
}

impl Param {
    fn bytes(self) -> u64 {
        match self {
            Param::U32(v) => u64::from(v),
            Param::U64(v) => v,
            Param::F32(v) => u64::from(v.to_bits()),
            Param::F64(v) => v.to_bits(),
        }
    }
}

/// A kernel launched by [`Gpu::start`] and not yet waited for.
#[must_use = "a launch must be waited for to see its errors"]
pub struct Pending<'g> {
    gpu: &'g Gpu,
    entry: String,
    start: cudarc::driver::CudaEvent,
    end: cudarc::driver::CudaEvent,
}

impl Pending<'_> {
    /// Waits for the kernel; returns its time in milliseconds (CUDA events around the
    /// launch, as in [`RunResult::kernel_ms`]).
    pub fn wait(self) -> Result<f32, GpuError> {
        let kernel_err = |source| GpuError::Kernel {
            entry: self.entry.clone(),
            source,
        };
        self.gpu.stream.synchronize().map_err(kernel_err)?;
        self.gpu.ctx.check_err().map_err(kernel_err)?;
        self.start
            .elapsed_ms(&self.end)
            .map_err(driver("event timing"))
    }
}

/// A device allocation the host loader made (freed on drop).
pub struct Buffer {
    buf: cudarc::driver::CudaSlice<u8>,
    stream: Arc<CudaStream>,
}

impl Buffer {
    /// The device address.
    pub fn ptr(&mut self) -> u64 {
        let (p, _g) = self.buf.device_ptr_mut(&self.stream);
        p
    }
}

/// Host memory pinned and mapped into the GPU's address space (`cuMemHostAlloc` with
/// `DEVICEMAP`): the device reads and writes it through [`HostBuffer::device_ptr`], the host
/// can read it while a kernel runs. Freed on drop.
pub struct HostBuffer {
    host: *mut c_void,
    dptr: u64,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the allocation is owned by this value and only freed in `drop`.
unsafe impl Send for HostBuffer {}

impl HostBuffer {
    /// The address the device uses.
    pub fn device_ptr(&self) -> u64 {
        self.dptr
    }

    /// The bytes as the host sees them now.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `host` points to `len` bytes allocated by cuMemHostAlloc, alive until drop.
        unsafe { std::slice::from_raw_parts(self.host.cast::<u8>(), self.len) }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: allocated by cuMemHostAlloc in this context, freed once.
        unsafe {
            sys::cuMemFreeHost(self.host);
        }
    }
}

/// A stream of the [`Gpu`]'s context besides its default one, for small host-to-device
/// copies while a kernel runs: it is created non-blocking (`CU_STREAM_NON_BLOCKING`), so its
/// copies neither wait for the kernels of the default stream nor make them wait, and the
/// copy engines run them beside the kernel. The host loader publishes a drained ring's
/// consumer position through it ([`CopyStream::post_u64`]).
///
/// A copy is posted without waiting for it to land: the copies of one stream land in
/// order, so a consumer published later never lands before one published earlier, and the
/// drainer walks on while a copy travels instead of idling for its round trip each time it
/// gives bytes back. Each copy
/// in flight reads its own slot of pinned staging memory; the stream is waited for only
/// when every slot was used since the last wait.
pub struct CopyStream {
    stream: Arc<CudaStream>,
    /// [`STAGING_SLOTS`] u64s of pinned memory the copies read from (a pageable source
    /// could make the copy wait).
    staging: HostBuffer,
    /// Slots used since the stream was last waited for.
    used: usize,
}

/// Copies a [`CopyStream`] may have in flight at once.
pub const STAGING_SLOTS: usize = 64;

impl CopyStream {
    /// Makes the stream's context current on the calling thread, which every copy needs
    /// (a drain thread does it once, before the kernel starts, so its first copy does not
    /// pay for it).
    pub fn bind(&self) -> Result<(), GpuError> {
        self.stream
            .context()
            .bind_to_thread()
            .map_err(driver("bind context"))
    }

    /// Issues a copy of `value` to the 8 device bytes at `dst` (8-aligned) and returns
    /// without waiting for it, unless all [`STAGING_SLOTS`] are in use (then it first waits
    /// for the copies posted before). Copies land in the order they were posted. Stores the
    /// caller made to host memory before the call are done before the copy is issued.
    pub fn post_u64(&mut self, dst: u64, value: u64) -> Result<(), GpuError> {
        self.bind()?;
        if self.used == STAGING_SLOTS {
            self.wait()?;
        }
        // SAFETY: `staging` holds STAGING_SLOTS writable, 8-aligned u64s (cuMemHostAlloc);
        // slot `used` is read by no copy now: every copy that read it was waited for, since
        // slots are used in order and counted from the last wait.
        let slot = unsafe { self.staging.host.cast::<u64>().add(self.used) };
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(slot, value) };
        // SAFETY: `dst` is 8 bytes of device memory the caller got from `global` or
        // `alloc`; the source is the pinned staging slot, not written again until the copy
        // was waited for.
        unsafe { sys::cuMemcpyHtoDAsync_v2(dst, slot.cast(), 8, self.stream.cu_stream()) }
            .result()
            .map_err(driver("async copy to device"))?;
        self.used += 1;
        Ok(())
    }

    /// Waits for every copy posted so far: on return the device sees each of them.
    pub fn wait(&mut self) -> Result<(), GpuError> {
        self.bind()?;
        self.stream
            .synchronize()
            .map_err(driver("copy stream synchronize"))?;
        self.used = 0;
        Ok(())
    }

    /// Copies `value` to the 8 device bytes at `dst` and waits for that copy (and those
    /// posted before), and only for them: a kernel running on another stream goes on.
    pub fn write_u64(&mut self, dst: u64, value: u64) -> Result<(), GpuError> {
        self.post_u64(dst, value)?;
        self.wait()
    }
}

/// A PTX module loaded into a [`Gpu`]'s context; unloaded when dropped.
#[derive(Debug)]
pub struct Module {
    module: sys::CUmodule,
    ctx: Arc<CudaContext>,
    /// The module-scope variables its PTX declares (`.global`), so that [`Gpu::global`]
    /// never asks the driver for a name the module lacks: a failed `cuModuleGetGlobal` is
    /// an API error compute-sanitizer counts, even where the caller expects it.
    globals: std::collections::HashSet<String>,
}

// SAFETY: a CUmodule is a handle valid in any thread once its context is bound, which every
// use here does first (the same reasoning as cudarc's own `CudaModule`).
unsafe impl Send for Module {}
// SAFETY: as above; the module is never mutated through `&Module`.
unsafe impl Sync for Module {}

impl Drop for Module {
    fn drop(&mut self) {
        // Errors here (a lost context) cannot be reported; `Gpu::run_entry` and
        // `Gpu::load` read cudarc's recorded error state, so they are not lost for good,
        // but a failing unload must not be blamed on the next program.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: the module was loaded by `Gpu::load` and is unloaded only here.
            let _ = unsafe { sys::cuModuleUnload(self.module) };
        }
    }
}

/// What one kernel run gives back.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// The value the kernel stored through `result`.
    pub r0: u64,
    /// The memory after the run (the kernel may write it); as long as the input.
    pub mem: Vec<u8>,
    /// Kernel time in milliseconds, measured with CUDA events recorded on the stream just
    /// before and after the launch (device time, including the launch's own latency).
    pub kernel_ms: f32,
}

impl Gpu {
    /// Opens device 0.
    pub fn open() -> Result<Gpu, GpuError> {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        cudarc::driver::result::init().map_err(|source| match source.0 {
            sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => GpuError::NoDevice,
            _ => GpuError::Driver { op: "init", source },
        })?;
        let count = cudarc::driver::result::device::get_count().map_err(driver("device count"))?;
        if count < 1 {
            return Err(GpuError::NoDevice);
        }
        let ctx = CudaContext::new(0).map_err(driver("context"))?;
        // One stream only, and every call below synchronises it: cudarc's per-buffer
        // event tracking buys nothing here.
        // SAFETY: all work goes to the single default stream, in order.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream })
    }

    /// The device's name, as the driver reports it.
    pub fn name(&self) -> Result<String, GpuError> {
        self.ctx.name().map_err(driver("device name"))
    }

    /// JIT-compiles PTX text into a module of this context.
    /// The address and size of a module-scope variable (`cuModuleGetGlobal`), or `None`
    /// when the module has no such symbol.
    pub fn global(&self, module: &Module, name: &str) -> Result<Option<(u64, usize)>, GpuError> {
        let c = CString::new(name).map_err(|_| GpuError::NoEntry {
            entry: name.to_string(),
        })?;
        if !module.globals.contains(name) {
            return Ok(None);
        }
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        let (mut ptr, mut size): (sys::CUdeviceptr, usize) = (0, 0);
        // SAFETY: the module is loaded in this context; the out-pointers are valid.
        match unsafe { sys::cuModuleGetGlobal_v2(&mut ptr, &mut size, module.module, c.as_ptr()) } {
            CUresult::CUDA_SUCCESS => Ok(Some((ptr, size))),
            CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            code => Err(driver("get global")(DriverError(code))),
        }
    }

    /// Copies `len` bytes from device address `ptr`.
    pub fn read(&self, ptr: u64, len: usize) -> Result<Vec<u8>, GpuError> {
        let mut out = vec![0u8; len];
        if len == 0 {
            return Ok(out);
        }
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        // SAFETY: `ptr..ptr+len` is device memory the caller got from `global` or `alloc`.
        unsafe { cudarc::driver::result::memcpy_dtoh_sync(&mut out, ptr) }
            .map_err(driver("copy to host"))?;
        Ok(out)
    }

    /// Copies `bytes` to device address `ptr`.
    pub fn write(&self, ptr: u64, bytes: &[u8]) -> Result<(), GpuError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        // SAFETY: as for `read`.
        unsafe { cudarc::driver::result::memcpy_htod_sync(ptr, bytes) }
            .map_err(driver("copy to device"))
    }

    /// A zeroed allocation of `len` bytes of pinned host memory mapped for the device.
    pub fn alloc_host(&self, len: usize) -> Result<HostBuffer, GpuError> {
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        let len = len.max(8);
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer valid; flags ask for a device mapping.
        let r = unsafe { sys::cuMemHostAlloc(&mut host, len, sys::CU_MEMHOSTALLOC_DEVICEMAP) };
        if r != CUresult::CUDA_SUCCESS {
            return Err(driver("pinned host alloc")(DriverError(r)));
        }
        // SAFETY: `host` has `len` writable bytes.
        unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, len) };
        let mut dptr: sys::CUdeviceptr = 0;
        // SAFETY: `host` comes from cuMemHostAlloc with DEVICEMAP.
        let r = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host, 0) };
        let buf = HostBuffer {
            host,
            dptr,
            len,
            ctx: self.ctx.clone(),
        };
        if r != CUresult::CUDA_SUCCESS {
            return Err(driver("map pinned memory")(DriverError(r)));
        }
        Ok(buf)
    }

    /// A [`CopyStream`]: a second, non-blocking stream of this context with
    /// [`STAGING_SLOTS`] u64s of pinned staging memory.
    pub fn copy_stream(&self) -> Result<CopyStream, GpuError> {
        let stream = self.ctx.new_stream().map_err(driver("stream"))?;
        let staging = self.alloc_host(8 * STAGING_SLOTS)?;
        Ok(CopyStream {
            stream,
            staging,
            used: 0,
        })
    }

    /// A zeroed device allocation of `len` bytes.
    pub fn alloc(&self, len: usize) -> Result<Buffer, GpuError> {
        let buf = self
            .stream
            .alloc_zeros::<u8>(len.max(1))
            .map_err(driver("alloc"))?;
        Ok(Buffer {
            buf,
            stream: self.stream.clone(),
        })
    }

    /// Loads PTX text (JIT-compiled by the driver); the driver's log comes with a failure.
    pub fn load(&self, ptx: &str) -> Result<Module, GpuError> {
        let c_src = CString::new(ptx).map_err(|e| GpuError::NulInPtx {
            offset: e.nul_position(),
        })?;
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        let mut log = vec![0u8; 64 * 1024];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads each value as the option's type: a pointer for the buffer and
        // an unsigned int, passed in the pointer's bits, for the size (it writes back the
        // number of bytes used).
        let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: `c_src` is NUL-terminated; `options` and `values` have the same length
        // and the log buffer outlives the call.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                c_src.as_ptr().cast(),
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        match r {
            CUresult::CUDA_SUCCESS => Ok(Module {
                module,
                ctx: self.ctx.clone(),
                globals: global_names(ptx),
            }),
            code => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let log = String::from_utf8_lossy(&log[..end]).trim_end().to_string();
                Err(GpuError::Jit {
                    log,
                    source: DriverError(code),
                })
            }
        }
    }

    /// Launches `kernel` of `module` over `dims` with `params` and returns at once; the
    /// [`Pending`] launch must be waited for.
    pub fn start(
        &self,
        module: &Module,
        kernel: &str,
        dims: Dims,
        params: &[Param],
    ) -> Result<Pending<'_>, GpuError> {
        let func = self.function(module, kernel)?;
        let event = || {
            self.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver("event"))
        };
        let (start, end) = (event()?, event()?);
        let mut values: Vec<u64> = params.iter().map(|p| p.bytes()).collect();
        let mut ptrs: Vec<*mut c_void> =
            values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
        start.record(&self.stream).map_err(driver("event record"))?;
        // SAFETY: `func` comes from a live module of this context; every parameter pointer
        // points to 8 bytes that outlive the call (the driver copies the values), and the
        // caller promises the parameters match the kernel's (see `Param`).
        unsafe {
            cudarc::driver::result::launch_kernel(
                func,
                (dims.grid[0], dims.grid[1], dims.grid[2]),
                (dims.block[0], dims.block[1], dims.block[2]),
                0,
                self.stream.cu_stream(),
                &mut ptrs,
            )
        }
        .map_err(|source| GpuError::Kernel {
            entry: kernel.to_string(),
            source,
        })?;
        end.record(&self.stream).map_err(driver("event record"))?;
        Ok(Pending {
            gpu: self,
            entry: kernel.to_string(),
            start,
            end,
        })
    }

    fn function(&self, module: &Module, entry: &str) -> Result<sys::CUfunction, GpuError> {
        let c_entry = CString::new(entry).map_err(|_| GpuError::NoEntry {
            entry: entry.to_string(),
        })?;
        self.ctx.bind_to_thread().map_err(driver("bind context"))?;
        let mut func: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: the module is loaded in this context and alive for the borrow.
        match unsafe { sys::cuModuleGetFunction(&mut func, module.module, c_entry.as_ptr()) } {
            CUresult::CUDA_SUCCESS => Ok(func),
            CUresult::CUDA_ERROR_NOT_FOUND => Err(GpuError::NoEntry {
                entry: entry.to_string(),
            }),
            code => Err(driver("get function")(DriverError(code))),
        }
    }

    /// Runs `entry` of `module` once, one thread, on a copy of `mem`, and waits for it.
    pub fn run_entry(
        &self,
        module: &Module,
        entry: &str,
        mem: &[u8],
    ) -> Result<RunResult, GpuError> {
        self.run_entry_on(module, entry, mem, Launch::default())
    }

    /// [`Gpu::run_entry`] with a grid of threads: every thread runs the program with the
    /// same r1/r2; the r0 reported is one thread's (they race on one result word).
    pub fn run_entry_on(
        &self,
        module: &Module,
        entry: &str,
        mem: &[u8],
        launch: Launch,
    ) -> Result<RunResult, GpuError> {
        let r = self.launch(module, entry, mem, launch);
        // Errors recorded by cudarc in drops (frees, unloads) belong to this run, not the
        // next one.
        match (r, self.ctx.check_err()) {
            (Ok(_), Err(source)) => Err(GpuError::Kernel {
                entry: entry.to_string(),
                source,
            }),
            (r, _) => r,
        }
    }

    fn launch(
        &self,
        module: &Module,
        entry: &str,
        mem: &[u8],
        launch: Launch,
    ) -> Result<RunResult, GpuError> {
        let kernel_err = |source| GpuError::Kernel {
            entry: entry.to_string(),
            source,
        };
        let func = self.function(module, entry)?;
        let input: &[u8] = if mem.is_empty() { &[0] } else { mem };
        let mut d_mem = self
            .stream
            .clone_htod(input)
            .map_err(driver("copy to device"))?;
        let mut d_result = self.stream.alloc_zeros::<u64>(1).map_err(driver("alloc"))?;
        let start = self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("event"))?;
        let end = self
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(driver("event"))?;
        {
            let (mut p_mem, _g1) = d_mem.device_ptr_mut(&self.stream);
            let mut mem_len = mem.len() as u64;
            let (mut p_result, _g2) = d_result.device_ptr_mut(&self.stream);
            let mut params: [*mut c_void; 3] = [
                (&mut p_mem as *mut sys::CUdeviceptr).cast(),
                (&mut mem_len as *mut u64).cast(),
                (&mut p_result as *mut sys::CUdeviceptr).cast(),
            ];
            start.record(&self.stream).map_err(driver("event record"))?;
            // SAFETY: `func` comes from a live module of this context; its declared
            // parameters are three u64 values (the entry ABI above) and `params` points
            // to three u64 values that outlive the call (the driver copies them).
            unsafe {
                cudarc::driver::result::launch_kernel(
                    func,
                    (launch.grid, 1, 1),
                    (launch.block, 1, 1),
                    0,
                    self.stream.cu_stream(),
                    &mut params,
                )
            }
            .map_err(kernel_err)?;
            end.record(&self.stream).map_err(driver("event record"))?;
        }
        self.stream.synchronize().map_err(kernel_err)?;
        let kernel_ms = start.elapsed_ms(&end).map_err(driver("event timing"))?;
        let r0 = self
            .stream
            .clone_dtoh(&d_result)
            .map_err(driver("copy to host"))?[0];
        let mut out = self
            .stream
            .clone_dtoh(&d_mem)
            .map_err(driver("copy to host"))?;
        out.truncate(mem.len());
        drop((d_mem, d_result));
        // Make sure the frees have happened, so their errors (if any) are seen now.
        self.stream.synchronize().map_err(kernel_err)?;
        Ok(RunResult {
            r0,
            mem: out,
            kernel_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_names_are_the_defined_module_variables() {
        let ptx = ".version 8.0\n.visible .global .align 8 .u64 bpf2ptx_map_a[8] = {1, 2};\n\
                   .global .align 128 .b8 bpf2ptx_mapcnt_a[384];\n\
                   .visible .global .align 8 .u64 bpf2ptx_loopcnt_p = 0;\n\
                   .extern .global .align 8 .b8 elsewhere[16];\n\
                   .visible .entry k() {\n\tld.global.u64 %rd1, [bpf2ptx_map_a];\n}\n";
        let mut names: Vec<String> = global_names(ptx).into_iter().collect();
        names.sort();
        assert_eq!(
            names,
            ["bpf2ptx_loopcnt_p", "bpf2ptx_map_a", "bpf2ptx_mapcnt_a"]
        );
    }

    /// Follows the entry ABI: r0 = mem_len + 2^32, and mem[0] = 0xab when there is memory.
    const PTX: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry t(.param .u64 mem, .param .u64 mem_len, .param .u64 result)
{
    .reg .pred %p<2>;
    .reg .u16 %rs<2>;
    .reg .u64 %rd<6>;
    ld.param.u64 %rd1, [mem];
    ld.param.u64 %rd2, [mem_len];
    ld.param.u64 %rd3, [result];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd3, %rd3;
    add.u64 %rd4, %rd2, 4294967296;
    st.global.u64 [%rd3], %rd4;
    setp.eq.u64 %p1, %rd2, 0;
    @%p1 bra DONE;
    mov.u16 %rs1, 171;
    st.global.u8 [%rd1], %rs1;
DONE:
    ret;
}
.visible .entry fault(.param .u64 mem, .param .u64 mem_len, .param .u64 result)
{
    .reg .u64 %rd<2>;
    mov.u64 %rd1, 0;
    st.global.u64 [%rd1], %rd1;
    ret;
}
"#;

    #[test]
    fn open_without_driver_is_an_error_not_a_panic() {
        // SAFETY: only tries to dlopen the driver library.
        if unsafe { sys::is_culib_present() } {
            eprintln!("skipped: libcuda is present here, so NoDriver cannot be observed");
            return;
        }
        let e = Gpu::open().unwrap_err();
        assert!(matches!(e, GpuError::NoDriver), "{e:?}");
        assert!(e.to_string().contains("use --cpu"), "{e}");
    }

    /// One test, so that the deliberate fault at the end cannot break a test running in
    /// parallel (all `Gpu`s of a process share device 0's primary context).
    #[test]
    fn runs_entries_reports_jit_logs_and_recovers_from_faults() {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { sys::is_culib_present() } {
            eprintln!("skipped: no libcuda here (the GPU tests run on a machine with a GPU)");
            return;
        }
        let gpu = Gpu::open().unwrap();
        eprintln!("device: {}", gpu.name().unwrap());
        let m = gpu.load(PTX).unwrap();
        let r = gpu.run_entry(&m, "t", &[1, 2, 3]).unwrap();
        assert_eq!((r.r0, r.mem.as_slice()), ((1 << 32) + 3, &[0xab, 2, 3][..]));
        assert!(r.kernel_ms > 0.0, "{r:?}");
        let r = gpu.run_entry(&m, "t", &[]).unwrap();
        assert_eq!((r.r0, r.mem.len()), (1 << 32, 0));

        let e = gpu.run_entry(&m, "nope", &[]).unwrap_err();
        assert!(
            matches!(&e, GpuError::NoEntry { entry } if entry == "nope"),
            "{e}"
        );

        let bad = PTX.replace("cvta.to.global.u64 %rd1, %rd1;", "bogus.u64 %rd1;");
        let e = gpu.load(&bad).unwrap_err();
        eprintln!("{e}");
        assert!(
            matches!(&e, GpuError::Jit { log, .. } if log.contains("bogus")),
            "{e}"
        );
        assert!(!e.is_context_lost());
        let e = gpu.load("\0").unwrap_err();
        assert!(matches!(e, GpuError::NulInPtx { offset: 0 }), "{e}");

        // Still usable after those errors.
        assert_eq!(gpu.run_entry(&m, "t", &[0]).unwrap().r0, (1 << 32) + 1);

        let e = gpu.run_entry(&m, "fault", &[0]).unwrap_err();
        eprintln!("{e}");
        assert!(e.is_context_lost(), "{e}");
        let e = gpu.run_entry(&m, "t", &[0]).unwrap_err();
        assert!(e.is_context_lost(), "{e}");
        drop((m, gpu));
        // Driver 580 (H200) refuses even a fresh context for the rest of the process.
        match Gpu::open() {
            Ok(gpu) => {
                eprintln!("this driver recovers from a kernel fault in-process");
                let m = gpu.load(PTX).unwrap();
                assert_eq!(gpu.run_entry(&m, "t", &[7]).unwrap().r0, (1 << 32) + 1);
            }
            Err(e) => assert!(e.is_context_lost(), "{e}"),
        }
    }
}
