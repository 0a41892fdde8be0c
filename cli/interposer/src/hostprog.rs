//! Host-side programs at kernel launches, and the maps they share with the GPU probes
//! (specs/trace.md, "Host-side programs").
//!
//! ```text
//!  launch hook ─▶ registry: the launch's decided entry (swap), with the bit set of
//!                 host programs that match its kernel (computed once per function)
//!                   │ set empty: nothing more (one branch)
//!                   ▼
//!                 context on the stack (struct bpf2ptx_launch_ctx, or pt_regs for
//!                 uprobe programs) ─▶ the reference interpreter, per program
//!                   │ map helpers
//!                   ▼
//!                 pinned host memory, one allocation per shared map, the same bytes
//!                 that descriptor word 3 of every instrumented module points at
//! ```
//!
//! **Maps.** The maps host programs use ([`HostPrograms::shared_maps`]: arrays only)
//! are injected with `NAME=host,unsharded`: the module reads them through descriptor word
//! 3 with `.sys` atomics. The interposer allocates each once per process
//! (`cuMemHostAlloc`, portable and mapped, zeroed), binds word 3 of every instrumented
//! module to it, and lends the same bytes to the interpreter, whose map helpers use the
//! device runtime's array layout. So a host program's store is a CPU store the next
//! kernel reads, and the modules of every device share one instance of these maps (every
//! other map is one instance per device, [`crate::bind`]). Except the *pushed* ones
//! ([`HostPrograms::pushed`]: small, read by GPU programs, written by none): the modules
//! read those from their device's map set, whose copy `HostRuntime::push` brings up to
//! the pinned copy's words at every launch of an instrumented kernel, in stream order. Global data (`.bss`, `.data`,
//! `.rodata`) in a host program is the host's own copy.
//!
//! **Cost.** Per launch: nothing when no host program matches the kernel; otherwise a
//! context written on the stack, a lock, and the interpreter, which allocates nothing
//! after a program's first run (`Interp`: kept control-flow graph and stacks).
//!
//! **Failures.** A program whose run fails (the interpreter's error) is said once and
//! not run again; the launch goes on.

use crate::bind::DeviceSet;
use crate::clock::Clock;
use crate::driver::*;
use crate::resolve::driver_fn;
use crate::session::{Event, Log};
use bpf2ptx::host::{launch_ctx, pt_regs, HostAttach, HostPrograms, LAUNCH_CTX_SIZE, PT_REGS_SIZE};
use bpf2ptx_compiler::interp::{self, Env, Interp};
use bpf2ptx_compiler::program::Object;
use bpf2ptx_runtime::desc;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};

/// One map shared by host programs and the GPU, in pinned host memory.
#[derive(Debug)]
pub struct SharedMap {
    /// Index in the object's maps.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Host address of its storage (`max_entries x stride` bytes).
    host: *mut u8,
    /// Its device address (the same with unified addressing).
    pub dev: u64,
    /// Bytes of storage.
    pub bytes: usize,
    /// The descriptor words a host loader would write for it: what the snapshot shows.
    pub desc: [u64; 8],
    /// No GPU program writes it ([`HostPrograms::pushed`]): the modules read a copy in
    /// each map set's device memory, which `HostRuntime::push` updates at launches,
    /// and are not bound to this storage.
    pub pushed: bool,
}

// SAFETY: pinned memory the interposer owns for the whole process; every access is a
// byte copy or an atomic.
unsafe impl Send for SharedMap {}
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// A copy of its storage now.
    pub fn bytes_now(&self) -> Vec<u8> {
        // SAFETY: `bytes` bytes of live pinned memory; the GPU may write them meanwhile,
        // which a snapshot accepts (as its device copies do).
        unsafe { std::slice::from_raw_parts(self.host, self.bytes) }.to_vec()
    }
}

/// The shared maps of a session, allocated at first need (in a context).
#[derive(Debug)]
pub struct Shared {
    /// The maps, in object order.
    pub maps: Vec<SharedMap>,
    /// By object map index: the position in `maps`.
    by_index: Vec<Option<usize>>,
}

impl Shared {
    fn alloc(obj: &Object, shared: &[usize], pushed: &[usize]) -> Result<Shared, String> {
        let f = |n| driver_fn(n).ok_or("the driver lacks cuMemHostAlloc");
        // SAFETY: the driver's functions of these names (CUDA 12 ABI).
        let (alloc, devptr) = unsafe {
            (
                std::mem::transmute::<Ptr, MemHostAlloc>(f(c"cuMemHostAlloc")?),
                std::mem::transmute::<Ptr, MemHostGetDevicePointer>(f(
                    c"cuMemHostGetDevicePointer",
                )?),
            )
        };
        let mut maps = Vec::new();
        let mut by_index = vec![None; obj.maps.len()];
        for &k in shared {
            let m = &obj.maps[k];
            let stride = u64::from(m.value_size).div_ceil(8) * 8;
            let bytes = (u64::from(m.max_entries) * stride).max(8) as usize;
            let mut host: *mut c_void = std::ptr::null_mut();
            let mut dev = 0u64;
            // SAFETY: valid out pointers; the memory is zeroed before anyone reads it.
            unsafe {
                let rc = alloc(
                    &mut host,
                    bytes,
                    MEMHOSTALLOC_PORTABLE | MEMHOSTALLOC_DEVICEMAP,
                );
                if rc != SUCCESS || host.is_null() {
                    return Err(format!(
                        "map {}: cuMemHostAlloc of {bytes} bytes failed (CUresult {rc})",
                        m.name
                    ));
                }
                std::ptr::write_bytes(host.cast::<u8>(), 0, bytes);
                let rc = devptr(&mut dev, host, 0);
                if rc != SUCCESS {
                    return Err(format!(
                        "map {}: cuMemHostGetDevicePointer failed (CUresult {rc})",
                        m.name
                    ));
                }
            }
            let mut b = [0u8; desc::BYTES as usize];
            for (at, v) in [
                (desc::MAP_TYPE, m.map_type),
                (desc::MAP_FLAGS, m.flags),
                (desc::KEY_SIZE, m.key_size),
                (desc::VALUE_SIZE, m.value_size),
                (desc::MAX_ENTRIES, m.max_entries),
                (desc::VALUE_STRIDE, stride as u32),
            ] {
                b[at as usize..at as usize + 4].copy_from_slice(&v.to_le_bytes());
            }
            b[desc::DATA as usize..desc::DATA as usize + 8].copy_from_slice(&dev.to_le_bytes());
            let mut d = [0u64; 8];
            for (w, c) in d.iter_mut().zip(b.chunks_exact(8)) {
                *w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            }
            by_index[k] = Some(maps.len());
            maps.push(SharedMap {
                index: k,
                name: m.name.clone(),
                host: host.cast(),
                dev,
                bytes,
                desc: d,
                pushed: pushed.contains(&k),
            });
        }
        Ok(Shared { maps, by_index })
    }

    /// Points descriptor word 3 of every shared map that instrumented module `h` uses
    /// at the shared storage (not the pushed ones: the module's map set holds those); `global` finds a module global's device address, `write`
    /// writes words at a device address (the map set's, which is safe inside a stream
    /// capture: [`crate::bind::DeviceSet::write_words`]).
    pub fn bind(
        &self,
        mut global: impl FnMut(&str) -> Option<u64>,
        mut write: impl FnMut(&str, u64, &[u64]) -> Result<(), String>,
    ) -> Result<(), String> {
        for m in self.maps.iter().filter(|m| !m.pushed) {
            // A map no GPU program uses has no descriptor in the module.
            let Some(d) = global(&bpf2ptx_backend::back::ptx::map_desc_symbol(&m.name)) else {
                continue;
            };
            write(&m.name, d + desc::DATA, &[m.dev])?;
        }
        Ok(())
    }
}

/// What a launch gives its host programs.
#[derive(Debug, Clone, Copy)]
pub struct LaunchFacts {
    /// Grid and block.
    pub grid: [u32; 3],
    /// Block.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub shared: u32,
    /// The stream handle.
    pub stream: u64,
    /// The function handle the application launched.
    pub func: u64,
    /// The kernel's id (1-based, order of first launch).
    pub kernel: u32,
    /// FNV-1a of its name.
    pub kernel_hash: u64,
    /// The launch's number.
    pub seq: u64,
    /// The launch call's time on the GPU's timeline.
    pub host_ns: u64,
}

/// The host-side programs of a session, ready to run.
pub struct HostRuntime {
    /// The programs and their maps.
    pub progs: HostPrograms,
    obj: &'static Object,
    interp: Mutex<Interp<'static>>,
    shared: OnceLock<Result<Shared, String>>,
    /// The driver's `cuStreamWriteValue64`, looked up at the first need: without it no
    /// map is pushed (they all stay in pinned memory for the GPU too).
    writer: OnceLock<Option<StreamWriteValue64>>,
    /// Programs that failed once (bit per program), not run again.
    failed: AtomicU64,
}

impl HostRuntime {
    /// The runtime of `progs`, programs of `obj`.
    pub fn new(obj: &'static Object, progs: HostPrograms) -> HostRuntime {
        HostRuntime {
            progs,
            obj,
            interp: Mutex::new(Interp::new(obj, interp::Options::default())),
            shared: OnceLock::new(),
            writer: OnceLock::new(),
            failed: AtomicU64::new(0),
        }
    }

    /// The driver's `cuStreamWriteValue64`, when the (first) device says 64-bit stream
    /// memory operations work on it.
    fn writer(&self) -> Option<StreamWriteValue64> {
        *self.writer.get_or_init(|| {
            if crate::jit::device_attribute(ATTR_64_BIT_STREAM_MEM_OPS) != Some(1) {
                return None;
            }
            // SAFETY: the driver's function of that name (CUDA 12 ABI, `_v2`).
            driver_fn(c"cuStreamWriteValue64")
                .map(|p| unsafe { std::mem::transmute::<Ptr, StreamWriteValue64>(p) })
        })
    }

    /// The shared maps the GPU reads from device memory ([`HostPrograms::pushed`]), or
    /// none when the driver has no `cuStreamWriteValue64`. Decided at the first call
    /// (the first instrumentation, with the driver loaded), the same for the session.
    pub fn pushed(&self) -> &[usize] {
        if self.writer().is_some() {
            &self.progs.pushed
        } else {
            &[]
        }
    }

    /// Brings the device copies of the pushed maps in `set` up to the host programs'
    /// values, ordered before the launch that follows on `stream` (after that launch's
    /// host programs ran). A failure is said once; that launch's kernels read the values
    /// of the last push that worked.
    pub(crate) fn push(&self, set: &DeviceSet, stream: Ptr, log: &Log) {
        let (Some(shared), Some(write)) = (self.shared_now(), self.writer()) else {
            return;
        };
        for m in shared.maps.iter().filter(|m| m.pushed) {
            let base = m.host.cast::<AtomicU64>();
            // SAFETY: word `i < bytes / 8` of the map's live pinned storage (page-aligned,
            // a multiple of 8 bytes), read atomically: a host program on another thread
            // may be storing to it.
            let word = |i: usize| unsafe { (*base.add(i)).load(Relaxed) };
            if let Err(e) = set.push(m.index, &m.name, m.bytes / 8, &word, stream, write) {
                static SAID: std::sync::atomic::AtomicBool =
                    std::sync::atomic::AtomicBool::new(false);
                if !SAID.swap(true, Relaxed) {
                    log.say(&format!(
                        "{e}; kernels read its values of an earlier launch"
                    ));
                }
            }
        }
    }

    /// The shared maps, allocated now (in the current context) if this is the first
    /// need; `None` when allocating failed (said once: lookups then return NULL).
    pub fn shared(&self, log: &Log) -> Option<&Shared> {
        self.shared
            .get_or_init(|| {
                let r = Shared::alloc(self.obj, &self.progs.shared_maps, self.pushed());
                if let Err(e) = &r {
                    log.say(&format!(
                        "{e}; host programs' map lookups return NULL and the GPU keeps \
                         its own copy"
                    ));
                }
                r
            })
            .as_ref()
            .ok()
    }

    /// The shared maps if they were allocated.
    pub fn shared_now(&self) -> Option<&Shared> {
        self.shared.get()?.as_ref().ok()
    }

    /// Runs the programs of bit set `set` for one launch.
    pub fn run(&self, set: u64, l: &LaunchFacts, clock: &Clock, log: &Log) {
        let set = set & !self.failed.load(Relaxed);
        if set == 0 {
            return;
        }
        let mut launch = [0u8; LAUNCH_CTX_SIZE];
        let mut put32 = |at: usize, v: u32| launch[at..at + 4].copy_from_slice(&v.to_le_bytes());
        for i in 0..3 {
            put32(launch_ctx::GRID + 4 * i, l.grid[i]);
            put32(launch_ctx::BLOCK + 4 * i, l.block[i]);
        }
        put32(launch_ctx::SHARED, l.shared);
        put32(launch_ctx::KERNEL, l.kernel);
        let mut put64 = |at: usize, v: u64| launch[at..at + 8].copy_from_slice(&v.to_le_bytes());
        put64(launch_ctx::STREAM, l.stream);
        put64(launch_ctx::HOST_NS, l.host_ns);
        put64(launch_ctx::KERNEL_HASH, l.kernel_hash);
        put64(launch_ctx::SEQ, l.seq);
        let mut env = LaunchEnv {
            shared: self.shared(log),
            clock,
            log,
        };
        let mut interp = self.interp.lock().unwrap_or_else(|e| e.into_inner());
        for (i, p) in self.progs.programs.iter().enumerate().take(64) {
            if set & 1 << i == 0 {
                continue;
            }
            let r = match p.attach {
                HostAttach::Launch { .. } => {
                    let mut ctx = launch;
                    interp.run_with(p.index, &mut ctx, &mut env)
                }
                HostAttach::Uprobe => {
                    // cudaLaunchKernel(func, dim3 grid, dim3 block, args, shared, stream):
                    // a dim3 is two registers (x | y << 32, then z).
                    let mut regs = [0u8; PT_REGS_SIZE];
                    let mut put =
                        |at: usize, v: u64| regs[at..at + 8].copy_from_slice(&v.to_le_bytes());
                    put(pt_regs::DI, l.func);
                    put(
                        pt_regs::SI,
                        u64::from(l.grid[0]) | u64::from(l.grid[1]) << 32,
                    );
                    put(pt_regs::DX, u64::from(l.grid[2]));
                    put(
                        pt_regs::CX,
                        u64::from(l.block[0]) | u64::from(l.block[1]) << 32,
                    );
                    put(pt_regs::R8, u64::from(l.block[2]));
                    put(pt_regs::R9, 0);
                    interp.run_with(p.index, &mut regs, &mut env)
                }
            };
            if let Err(e) = r {
                self.failed.fetch_or(1 << i, Relaxed);
                log.say(&format!(
                    "host program {}: {e}; it does not run again (the launches go on)",
                    p.name
                ));
            }
        }
    }
}

/// The interpreter's view of the host at a launch.
struct LaunchEnv<'a> {
    shared: Option<&'a Shared>,
    clock: &'a Clock,
    log: &'a Log,
}

impl Env for LaunchEnv<'_> {
    fn maps(&self) -> bool {
        true
    }

    fn map_storage(&mut self, map: usize) -> Option<&mut [u8]> {
        let s = self.shared?;
        let m = &s.maps[(*s.by_index.get(map)?)?];
        // SAFETY: the map's live pinned storage; the interpreter accesses it within the
        // run, by bytes or atomics (the GPU may update it meanwhile).
        Some(unsafe { std::slice::from_raw_parts_mut(m.host, m.bytes) })
    }

    fn ktime_ns(&mut self, _: u64) -> u64 {
        self.clock.now()
    }

    fn pid_tgid(&mut self) -> Option<u64> {
        // SAFETY: plain system calls.
        let (pid, tid) = unsafe { (libc::getpid(), libc::gettid()) };
        Some((pid as u64) << 32 | tid as u32 as u64)
    }

    fn trace_printk(&mut self, fmt: &[u8], args: [u64; 3]) -> Option<u64> {
        let line = bpf2ptx_loader::loader::format_printk(&String::from_utf8_lossy(fmt), &args);
        self.log.event(&Event::Printk {
            ns: self.clock.now(),
            line: line.trim_end_matches('\n').to_string(),
        });
        Some(0)
    }
}
