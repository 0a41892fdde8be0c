//! One timeline for the host and the GPU: the host's `CLOCK_MONOTONIC` moved onto the
//! GPU's `%globaltimer` by an offset measured inside the application (specs/trace.md,
//! "One timeline").
//!
//! Host-side programs' `bpf_ktime_get_ns()`, their context's `host_ns` and the launch
//! records of the trace events are `monotonic + offset`, so a GPU probe may subtract a
//! host time from its `bpf_get_globaltimer()` directly.
//!
//! Measuring: a one-thread kernel of the interposer's own ([`SPIN_PTX`]) keeps storing
//! `%globaltimer` into mapped pinned host memory while the host reads that word between
//! reads of its own clock. A value `g` read before host time `h1` was written before
//! `h1`, so `g - h1 <= offset`; the largest `g - h1` over a few thousand reads is the
//! offset, low by how stale the freshest value was (the PCIe write latency plus a loop
//! iteration, about a microsecond). `spread` (best minus median) says how noisy the reads
//! were. The kernel runs on a non-blocking stream of the interposer's own and stops when
//! the host sets a flag (or after 50 ms), so the application's streams never wait for it.
//!
//! The offset is measured when first needed (the first launch a host program runs at,
//! or the first instrumentation of a session that records launches) and again every
//! [`RECHECK`] from the snapshot thread: the two clocks drift apart by parts per million.
//!
//! A stand-in driver (the tests' fake libcuda) provides `%globaltimer` by writing its own
//! clock plus an offset of its choosing when the spin kernel is "launched"; nothing here
//! knows whether the driver is real.

use crate::driver::*;
use crate::resolve::driver_fn;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// How often the offset is measured again.
pub const RECHECK: Duration = Duration::from_secs(10);
/// Reads of the timer word per measurement.
const SAMPLES: usize = 2000;
/// How long the host waits for the spin kernel to start (the GPU may be full).
const START_TIMEOUT: Duration = Duration::from_secs(2);

/// The spin kernel: `%globaltimer` into `out` until `*stop` or `max_ns` have passed.
pub const SPIN_PTX: &str = "\
.version 6.0
.target sm_50
.address_size 64

.visible .entry bpf2ptx_globaltimer_spin(.param .u64 out, .param .u64 stop, .param .u64 max_ns)
{
\t.reg .b64 %rd<8>;
\t.reg .b32 %r<2>;
\t.reg .pred %p<3>;
\tld.param.u64 %rd1, [out];
\tld.param.u64 %rd2, [stop];
\tld.param.u64 %rd3, [max_ns];
\tmov.u64 %rd4, %globaltimer;
$L_spin:
\tmov.u64 %rd5, %globaltimer;
\tst.volatile.global.u64 [%rd1], %rd5;
\tmembar.sys;
\tld.volatile.global.u32 %r1, [%rd2];
\tsetp.ne.u32 %p1, %r1, 0;
\tsub.u64 %rd6, %rd5, %rd4;
\tsetp.ge.u64 %p2, %rd6, %rd3;
\tor.pred %p1, %p1, %p2;
\t@!%p1 bra $L_spin;
\tret;
}
\0";
/// The spin kernel's name.
pub const SPIN_KERNEL: &std::ffi::CStr = c"bpf2ptx_globaltimer_spin";
/// The most the spin kernel runs (ns), should the host never set the flag.
const SPIN_MAX_NS: u64 = 50_000_000;

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offset {
    /// `%globaltimer - CLOCK_MONOTONIC`, ns.
    pub offset_ns: i64,
    /// The best read minus the median one, ns: how noisy the reads were.
    pub spread_ns: i64,
}

/// Why a measurement failed.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    /// The driver lacks a function the measurement needs.
    #[error("the driver lacks {0}")]
    Missing(&'static str),
    /// A driver call failed.
    #[error("{call} failed (CUresult {rc})")]
    Driver {
        /// The call.
        call: &'static str,
        /// Its result.
        rc: CuResult,
    },
    /// The spin kernel did not start in time.
    #[error("the timer kernel did not start within {0:?} (the GPU is busy)")]
    Timeout(Duration),
}

/// What a measurement keeps between rechecks: the module, the pinned words and the
/// stream (all made once, in the context of the first measurement).
struct Spinner {
    func: Ptr,
    stream: Ptr,
    /// Host address of the two words `[timer, stop]` (mapped pinned memory).
    host: *mut u64,
    /// Their device address.
    dev: u64,
}

// SAFETY: driver handles and pinned memory, used under the clock's lock only.
unsafe impl Send for Spinner {}

/// The session's clock: the offset, once measured.
#[derive(Default)]
pub struct Clock {
    offset: AtomicI64,
    measured: AtomicBool,
    spinner: Mutex<Option<Spinner>>,
}

impl Clock {
    /// Now, on the GPU's timeline (`CLOCK_MONOTONIC` before the first measurement).
    pub fn now(&self) -> u64 {
        self.at(monotonic_ns())
    }

    /// Monotonic time `t` on the GPU's timeline.
    pub fn at(&self, t: u64) -> u64 {
        t.wrapping_add(self.offset.load(Relaxed) as u64)
    }

    /// Whether the offset was measured.
    pub fn measured(&self) -> bool {
        self.measured.load(Relaxed)
    }

    /// The offset now in use.
    pub fn offset(&self) -> i64 {
        self.offset.load(Relaxed)
    }

    /// Measures the offset in the current context and uses it from now on.
    pub fn measure(&self) -> Result<Offset, ClockError> {
        let mut guard = self.spinner.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            *guard = Some(Spinner::new()?);
        }
        let s = guard.as_ref().expect("made above");
        let o = s.measure()?;
        self.offset.store(o.offset_ns, Relaxed);
        self.measured.store(true, Relaxed);
        Ok(o)
    }
}

fn get<T>(name: &'static std::ffi::CStr) -> Result<T, ClockError> {
    let p = driver_fn(name).ok_or(ClockError::Missing(
        name.to_str().unwrap_or("a driver function"),
    ))?;
    // SAFETY: the caller names `T` as the function type of `name`.
    Ok(unsafe { std::mem::transmute_copy::<Ptr, T>(&p) })
}

fn check(call: &'static str, rc: CuResult) -> Result<(), ClockError> {
    if rc == SUCCESS {
        Ok(())
    } else {
        Err(ClockError::Driver { call, rc })
    }
}

impl Spinner {
    fn new() -> Result<Spinner, ClockError> {
        let load: ModuleLoadData = get(c"cuModuleLoadData")?;
        let getf: ModuleGetFunction = get(c"cuModuleGetFunction")?;
        let create: StreamCreate = get(c"cuStreamCreate")?;
        let alloc: MemHostAlloc = get(c"cuMemHostAlloc")?;
        let devptr: MemHostGetDevicePointer = get(c"cuMemHostGetDevicePointer")?;
        let (mut module, mut func, mut stream): (Ptr, Ptr, Ptr) = (
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        let mut host: *mut c_void = std::ptr::null_mut();
        let mut dev = 0u64;
        // SAFETY: the driver's functions with valid out pointers; the PTX is
        // NUL-terminated.
        unsafe {
            check(
                "cuModuleLoadData (timer kernel)",
                load(&mut module, SPIN_PTX.as_ptr().cast()),
            )?;
            check(
                "cuModuleGetFunction (timer kernel)",
                getf(&mut func, module, SPIN_KERNEL.as_ptr()),
            )?;
            check("cuStreamCreate", create(&mut stream, STREAM_NON_BLOCKING))?;
            check(
                "cuMemHostAlloc",
                alloc(
                    &mut host,
                    16,
                    MEMHOSTALLOC_PORTABLE | MEMHOSTALLOC_DEVICEMAP,
                ),
            )?;
            check("cuMemHostGetDevicePointer", devptr(&mut dev, host, 0))?;
        }
        Ok(Spinner {
            func,
            stream,
            host: host.cast(),
            dev,
        })
    }

    fn measure(&self) -> Result<Offset, ClockError> {
        let launch: LaunchKernel = get(c"cuLaunchKernel")?;
        let query: StreamQuery = get(c"cuStreamQuery")?;
        let (timer, stop) = (self.host, self.host.wrapping_add(1));
        // SAFETY: 16 bytes of pinned memory the interposer owns; the GPU writes the
        // first word while the host reads it, hence volatile accesses.
        unsafe {
            std::ptr::write_volatile(timer, 0);
            std::ptr::write_volatile(stop, 0);
        }
        let (mut out, mut flag, mut max) = (self.dev, self.dev + 8, SPIN_MAX_NS);
        let mut params: [*mut c_void; 3] = [
            (&mut out as *mut u64).cast(),
            (&mut flag as *mut u64).cast(),
            (&mut max as *mut u64).cast(),
        ];
        // SAFETY: the spin kernel's three u64 parameters.
        check("cuLaunchKernel (timer kernel)", unsafe {
            launch(
                self.func,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                self.stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })?;
        let started = monotonic_ns();
        let mut result = Err(ClockError::Timeout(START_TIMEOUT));
        // SAFETY: as above.
        while unsafe { std::ptr::read_volatile(timer) } == 0 {
            if monotonic_ns() - started > START_TIMEOUT.as_nanos() as u64 {
                break;
            }
            std::hint::spin_loop();
        }
        // SAFETY: as above.
        if unsafe { std::ptr::read_volatile(timer) } != 0 {
            let mut diffs = [0i64; SAMPLES];
            for d in diffs.iter_mut() {
                // SAFETY: as above.
                let g = unsafe { std::ptr::read_volatile(timer) };
                let h1 = monotonic_ns();
                *d = g.wrapping_sub(h1) as i64;
            }
            let best = diffs.iter().copied().max().unwrap_or(0);
            diffs.sort_unstable();
            result = Ok(Offset {
                offset_ns: best,
                spread_ns: best - diffs[SAMPLES / 2],
            });
        }
        // SAFETY: as above; the kernel reads the flag.
        unsafe { std::ptr::write_volatile(stop, 1) };
        // Wait (a while) for the kernel to end: its memory stays allocated either way,
        // so a kernel that starts late still finds the flag and ends at once.
        let waited = monotonic_ns();
        // SAFETY: the interposer's own stream.
        while unsafe { query(self.stream) } != SUCCESS
            && monotonic_ns() - waited < START_TIMEOUT.as_nanos() as u64
        {
            std::thread::yield_now();
        }
        result
    }
}
