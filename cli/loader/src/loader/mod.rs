//! The host loader: binds a module's maps in their placement, launches kernels, drains
//! rings in host memory while a kernel runs, and reads every map back, printed the way
//! `bpftool map dump` prints maps.
//!
//! ```text
//!  Object (the probe's maps) + Module (PTX with the probe: bpf2ptx's own, or injected)
//!    │ Loader::new      descriptors found by symbol; host-placed maps moved to pinned
//!    │                  mapped memory (descriptor word 3 rewritten; a ring's counters
//!    │                  stay in device memory); each ring's bound (word 7) set to its
//!    │                  producer
//!    ▼
//!  Loader::launch(kernel, dims, params)   per-thread and per-warp arrays sized from
//!    │                  dims; a host thread starts draining host-placed rings, then
//!    │                  Gpu::start; it drains until the kernel ends (records kept,
//!    │                  bytes zeroed, the consumer published to the device through a
//!    │                  CopyStream every quarter ring, so the ring never fills while
//!    │                  the host keeps up)
//!    ▼
//!  Loader::maps_json / records / printk   maps read back (sharded arrays summed, per-SM
//!                                          arrays per SM)
//! ```
//!
//! The layouts are specs/abi.md's ("Maps (device runtime)"). A module whose maps are
//! placed in host memory must have been compiled with the same placement
//! ([`host_flags`] gives the backend's `Options::host`): its atomics on host-placed maps,
//! and the record stores of its rings, then have `.sys` scope, which a host reading or
//! draining that memory while the kernel runs needs. The names are the caller's choice;
//! the command line's defaults (rings and bpftime's host-memory arrays 1512 and 1513 in
//! host memory, everything else in device memory) are the CLI's: `bpf2ptx::compile::host_by_default` and `bpf2ptx::compile::map_options`.
//!
//! A ring placed in host memory has only its bytes there; its counters `[producer,
//! consumer]` stay in the module's device memory (runtime-ptx's ringbuf module doc,
//! "Placement"). While the kernel runs the drainer walks the records from its own consumer
//! position ([`ringbuf::scan_to`]: it stops at a BUSY or all-zero header and never needs
//! the producer), and after every quarter ring it walked (at most 1 MiB) and at the end of
//! a pass zeroes what it consumed and posts the new consumer to the device counter on a
//! stream of its own ([`crate::gpu::CopyStream`]), without waiting for the copy (copies of
//! one stream land in order). It waits for its copies once, after the kernel; then every
//! ring is read through its descriptor as in device placement.
//!
//! The loader works on any module holding the probe's symbols, so it serves an
//! application kernel with a probe injected just as well as bpf2ptx's own
//! `bpf2ptx_entry_*` kernels ([`Loader::run_entry`]):
//!
//! ```no_run
//! use bpf2ptx_backend::back::ptx;
//! use bpf2ptx_loader::gpu::{Dims, Gpu, Param};
//! use bpf2ptx_loader::loader::{host_flags, Loader};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let obj = bpf2ptx_compiler::front::load_path("probe.bpf.o".as_ref())?;
//! let host = vec!["events".to_string()]; // drain this ring while the kernel runs
//! let opts = ptx::Options {
//!     target: "sm_90".into(),
//!     host: host_flags(&obj, &host)?,
//!     ..Default::default()
//! };
//! // ... compile the probe with `opts` (`bpf2ptx::compile::compile`: verify, then lower)
//! // and merge it into the application's PTX (`bpf2ptx inject`) ...
//! # let app_ptx = String::new();
//! let gpu = Gpu::open()?;
//! let module = gpu.load(&app_ptx)?;
//! let mut loader = Loader::new(&gpu, &module, &obj, &host)?;
//! let mut out = gpu.alloc(4 << 20)?;
//! let dims = Dims { grid: [4096, 1, 1], block: [256, 1, 1] };
//! let report = loader.launch("vecAdd", dims, &[Param::U64(out.ptr()), Param::U32(1 << 20)])?;
//! println!("{} records drained while the kernel ran", report.drained);
//! println!("{}", serde_json::to_string_pretty(&loader.maps_json()?)?);
//! # Ok(())
//! # }
//! ```
//!
//! # Parts
//!
//! Each file does one job; they share the loader's private state (`Bound`, `RingState`).
//!
//! - `mod.rs` (this file): the public types ([`Placement`], [`LoaderError`],
//!   [`LaunchReport`], [`DrainStats`], [`EntryResult`]), [`host_flags`] and the [`Loader`]:
//!   binding the maps in their placement ([`Loader::new`], and the per-thread and per-warp
//!   storage sized at each launch) and launching ([`Loader::launch`],
//!   [`Loader::run_entry`]), the drainer thread included.
//! - `drain.rs`: reading rings, after a kernel through the descriptor ([`Loader::records`])
//!   and while it runs straight from pinned host memory (the live ring and the drainer's
//!   loop).
//! - `dump.rs`: reading maps back: [`MapCounts`] ([`Loader::counts`], [`Loader::losses`],
//!   [`Loader::drops`]) and [`Loader::maps_json`], every map as bpftool dumps it; the
//!   bytes it reads are decoded by [`crate::image`].
//! - `printk.rs`: [`Loader::printk`] and [`format_printk`], the host's side of
//!   `trace_printk` and `puts`.
//! - `tests.rs`: the unit tests (the live drainer on a host buffer, counts, host flags,
//!   printk formats).
//!
//! # Invariants
//!
//! - One `Bound` per runtime map the module declares, in the object's map order; its
//!   descriptor address does not change over the loader's life, and the storage a
//!   descriptor points to (host placement, per-unit arrays) is owned by its `Bound` for as
//!   long as the descriptor points there: the live ring's raw pointer relies on it.
//! - A ring's records are kept in its `RingState` only. A launch hands the host rings'
//!   states to the drainer thread and gives them back, settled, before anything can fail,
//!   so no record once read is lost.
//! - Whoever consumes ring bytes (the live drainer or a read after the kernel) zeroes them
//!   before the consumer position that frees them reaches the device.

use crate::gpu::{Buffer, CopyStream, Dims, Gpu, GpuError, HostBuffer, Module, Param};
use bpf2ptx_backend::back::ptx::{entry_symbol, map_data_symbol, map_desc_symbol};
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_runtime::{desc, ringbuf, MapKind};
use std::sync::atomic::{AtomicBool, Ordering};
use thiserror::Error;

mod drain;
mod dump;
mod printk;
#[cfg(test)]
mod tests;

use drain::{drain_until, LiveRing, RingState};
pub use dump::MapCounts;
pub use printk::{format_printk, printk_line, prints};

/// Where a map's storage lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Device memory (the default): fastest for the probe.
    Device,
    /// Pinned host memory mapped into the GPU: the host reads it while the kernel runs,
    /// and drains rings placed there (the module needs `.sys` scope: [`host_flags`]). A
    /// ring's bytes move there, its counters stay in device memory.
    Host,
}

/// Why the loader failed.
#[derive(Debug, Error)]
pub enum LoaderError {
    /// A CUDA call failed (no driver or GPU, a JIT error, a kernel fault, ...).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// Bytes read back do not decode as their map (a descriptor the module changed).
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// A map named for host placement is not a map of the object.
    #[error("no map `{name}` in {file}")]
    NoMap {
        /// The name asked for.
        name: String,
        /// The object.
        file: String,
    },
    /// A map of the object that host placement cannot move (global data).
    #[error("map `{name}` is global data; only runtime maps can be placed in host memory")]
    NotPlaceable {
        /// The map.
        name: String,
    },
    /// The object has no program of that name.
    #[error("no program `{name}` in {file}")]
    NoProgram {
        /// The name asked for.
        name: String,
        /// The object.
        file: String,
    },
}

/// The backend's per-map host flags (`Options::host`) for the maps named in `host`.
pub fn host_flags(obj: &Object, host: &[String]) -> Result<Vec<bool>, LoaderError> {
    let mut flags = vec![false; obj.maps.len()];
    for name in host {
        let k = obj
            .maps
            .iter()
            .position(|m| &m.name == name)
            .ok_or_else(|| LoaderError::NoMap {
                name: name.clone(),
                file: obj.file.clone(),
            })?;
        if obj.maps[k].origin == MapOrigin::GlobalData {
            return Err(LoaderError::NotPlaceable { name: name.clone() });
        }
        flags[k] = true;
    }
    Ok(flags)
}

/// What one [`Loader::launch`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LaunchReport {
    /// Kernel time in milliseconds (CUDA events around the launch).
    pub kernel_ms: f32,
    /// Records taken from host-placed rings while the kernel ran.
    pub drained: u64,
    /// Records taken from them after it ended (what was left).
    pub drained_after: u64,
    /// What the live drainer did (all 0 when it did not run).
    pub drain: DrainStats,
}

/// What the live drainer did during one launch: a few counters, kept whether or not anyone
/// reads them (`bpf2ptx run` prints them with `BPF2PTX_DRAIN_STATS=1`), to tell a drainer
/// that kept up from one that started late, published seldom or found the ring full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Records taken while the kernel ran (= [`LaunchReport::drained`]).
    pub records: u64,
    /// Passes over the host rings (each walks every ring once, in parts).
    pub passes: u64,
    /// Passes that took no record.
    pub idle_passes: u64,
    /// Consumer positions published to the device.
    pub publishes: u64,
    /// Most records one pass took.
    pub max_pass_records: u64,
    /// Microseconds from the drainer's start (just before the launch) to the end of the
    /// first pass that took a record, and of the last one (0 when none did).
    pub first_record_us: u64,
    /// See [`DrainStats::first_record_us`].
    pub last_record_us: u64,
}

/// What [`Loader::run_entry`] gives back.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryResult {
    /// r0 of one thread (all threads store it to the same word).
    pub r0: u64,
    /// The memory after the run.
    pub mem: Vec<u8>,
    /// The launch.
    pub report: LaunchReport,
}

/// Memory the loader allocated for a map.
enum Storage {
    /// Kept alive for the descriptor that points to it.
    Device {
        _buffer: Buffer,
    },
    Host(HostBuffer),
}

/// One runtime map of the object that the module declares.
struct Bound {
    /// Index in `obj.maps`.
    index: usize,
    /// Device address of the descriptor.
    desc: u64,
    placement: Placement,
    /// Data storage the loader allocated (host placement, per-thread arrays).
    data: Option<Storage>,
    /// Threads (per-thread arrays) or warps (per-warp arrays) the storage is sized for.
    threads: u64,
    ring: RingState,
}

/// Binds the maps of a probe object in a loaded module and runs its kernels.
///
/// Maps live as long as the loader (and the module): values carry over from one launch to
/// the next, as they do for a BPF program.
pub struct Loader<'a> {
    gpu: &'a Gpu,
    module: &'a Module,
    obj: &'a Object,
    maps: Vec<Bound>,
    live_drain: bool,
    /// The stream the drainer publishes consumer positions on (made at the first launch
    /// that drains).
    copies: Option<CopyStream>,
}

/// Word `k` (little-endian u64) of `desc`; 0 past its end.
fn word(desc: &[u8], k: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(b) = desc.get(8 * k..8 * k + 8) {
        w.copy_from_slice(b);
    }
    u64::from_le_bytes(w)
}

impl<'a> Loader<'a> {
    /// Finds the descriptor of every runtime map of `obj` in `module` (maps the module
    /// does not declare are skipped: no program uses them) and moves the maps named in
    /// `host` to pinned host memory mapped into the GPU. Per-thread arrays get their
    /// storage at [`Loader::launch`], sized from its launch.
    pub fn new(
        gpu: &'a Gpu,
        module: &'a Module,
        obj: &'a Object,
        host: &[String],
    ) -> Result<Self, LoaderError> {
        let flags = host_flags(obj, host)?;
        let mut maps = Vec::new();
        for (index, m) in obj.maps.iter().enumerate() {
            if m.origin == MapOrigin::GlobalData {
                continue;
            }
            let Some((desc, _)) = gpu.global(module, &map_desc_symbol(&m.name))? else {
                continue;
            };
            let placement = if flags[index] {
                Placement::Host
            } else {
                Placement::Device
            };
            let mut b = Bound {
                index,
                desc,
                placement,
                data: None,
                threads: 0,
                ring: RingState::default(),
            };
            // A ring's bound (word 7) must equal its producer whenever no reservation runs
            // (specs/abi.md): set it from the producer, whatever moved the positions
            // before this loader, so the first launch's reservations see the room there is.
            if m.is(MapKind::is_ring) {
                let ctr = desc::read(&gpu.read(desc, desc::BYTES as usize)?, desc::AUX2);
                if ctr != 0 {
                    let producer = gpu.read(ctr, 8)?;
                    gpu.write(desc + ringbuf::BOUND_OFFSET, &producer)?;
                }
            }
            // A ring's bytes move; its counters (word 5) stay in the module's device
            // memory, where the reserving leaders' atomics are fast.
            if placement == Placement::Host && !m.is(MapKind::is_per_unit) {
                if let Some((_, size)) = gpu.global(module, &map_data_symbol(&m.name))? {
                    let h = gpu.alloc_host(size)?;
                    gpu.write(desc + desc::DATA, &h.device_ptr().to_le_bytes())?;
                    b.data = Some(Storage::Host(h));
                }
            }
            maps.push(b);
        }
        Ok(Loader {
            gpu,
            module,
            obj,
            maps,
            live_drain: true,
            copies: None,
        })
    }

    /// Whether [`Loader::launch`] drains host-placed rings while the kernel runs (the
    /// default). Off, they are read only after the kernel, as device rings are: a ring
    /// smaller than what the kernel writes then drops the rest.
    pub fn set_live_drain(&mut self, on: bool) {
        self.live_drain = on;
    }

    /// Sizes per-thread arrays for the launch's threads and per-warp arrays for its warps
    /// (a new, zeroed allocation when the count changes) and writes their descriptors.
    fn bind_per_unit(&mut self, dims: &Dims) -> Result<(), LoaderError> {
        for b in &mut self.maps {
            let m = &self.obj.maps[b.index];
            let threads = match m.kind().map(MapKind::layout) {
                Some(MapKind::PerThreadArray) => dims.threads(),
                Some(MapKind::PerWarpArray) => dims.warps(),
                _ => continue,
            };
            if b.data.is_some() && b.threads == threads {
                continue;
            }
            let stride = u64::from(m.value_size).div_ceil(8) * 8;
            let bytes = (stride * u64::from(m.max_entries) * threads) as usize;
            let (storage, ptr) = match b.placement {
                Placement::Host => {
                    let h = self.gpu.alloc_host(bytes)?;
                    let p = h.device_ptr();
                    (Storage::Host(h), p)
                }
                Placement::Device => {
                    let mut d = self.gpu.alloc(bytes)?;
                    let p = d.ptr();
                    (Storage::Device { _buffer: d }, p)
                }
            };
            self.gpu.write(b.desc + desc::AUX, &threads.to_le_bytes())?;
            self.gpu.write(b.desc + desc::DATA, &ptr.to_le_bytes())?;
            b.data = Some(storage);
            b.threads = threads;
        }
        Ok(())
    }

    /// Launches `kernel` of the module over `dims` with `params` (which must match the
    /// kernel's parameters; see [`Param`]) and waits for it. Host-placed rings are drained
    /// by a host thread while it runs (unless [`Loader::set_live_drain`] turned that off)
    /// and once more after it ends.
    pub fn launch(
        &mut self,
        kernel: &str,
        dims: Dims,
        params: &[Param],
    ) -> Result<LaunchReport, LoaderError> {
        self.bind_per_unit(&dims)?;
        let gpu = self.gpu;
        // Host rings: where the host reads them, where their consumer lives on the device,
        // and the consumer now (the kernel has not started: plain copies are fine).
        let (mut live, mut which): (Vec<LiveRing>, Vec<usize>) = (Vec::new(), Vec::new());
        for (k, b) in self.maps.iter().enumerate() {
            let Some(Storage::Host(data)) = &b.data else {
                continue;
            };
            if !self.obj.maps[b.index].is(MapKind::is_ring) {
                continue;
            }
            let d = gpu.read(b.desc, desc::BYTES as usize)?;
            let ctr = desc::read(&d, desc::AUX2);
            if ctr == 0 || desc::read(&d, desc::DATA) != data.device_ptr() {
                continue;
            }
            let consumer = word(&gpu.read(ctr + 8, 8)?, 0);
            live.push(LiveRing::new(data, ctr + 8, consumer));
            which.push(k);
        }
        let drain = self.live_drain && !live.is_empty();
        if drain && self.copies.is_none() {
            self.copies = Some(gpu.copy_stream()?);
        }
        let mut states: Vec<RingState> = which
            .iter()
            .map(|&k| std::mem::take(&mut self.maps[k].ring))
            .collect();
        let module = self.module;
        let copies = self.copies.as_mut();
        let stop = AtomicBool::new(false);
        let result = std::thread::scope(|s| {
            // The drainer starts before the kernel: a ring fills within microseconds of the
            // first reservations, and a thread started after the launch began to free it
            // only after its own start-up.
            let drainer = copies.filter(|_| drain).map(|copies| {
                let (live, states, stop) = (&mut live, &mut states, &stop);
                s.spawn(move || -> Result<DrainStats, GpuError> {
                    copies.bind()?;
                    let stats = drain_until(live, states, stop, |at, c| copies.post_u64(at, c));
                    // The last consumer posted is in device memory before the host reads
                    // the ring after the kernel through its counters.
                    let landed = copies.wait();
                    let stats = stats?;
                    landed?;
                    Ok(stats)
                })
            });
            let waited = gpu
                .start(module, kernel, dims, params)
                .and_then(|pending| pending.wait());
            stop.store(true, Ordering::Release);
            let drained = match drainer.map(|h| h.join()) {
                None => Ok(DrainStats::default()),
                Some(Ok(r)) => r,
                Some(Err(_)) => Ok(DrainStats::default()),
            };
            // The kernel's error first: a fault makes the copies fail too.
            let ms = waited?;
            Ok::<_, GpuError>((ms, drained?))
        });
        // Give the states back before anything can fail, so no record is lost.
        for (&k, mut st) in which.iter().zip(states) {
            st.settle();
            self.maps[k].ring = st;
        }
        let (kernel_ms, drain) = result?;
        // The kernel has ended: what is left in host rings is committed; read it through
        // the descriptor (counters in device memory) as for device placement.
        let mut drained_after = 0;
        for &k in &which {
            let before = self.maps[k].ring.records.len();
            self.collect_ring(k)?;
            drained_after += (self.maps[k].ring.records.len() - before) as u64;
        }
        Ok(LaunchReport {
            kernel_ms,
            drained: drain.records,
            drained_after,
            drain,
        })
    }

    /// Runs program `program`'s `bpf2ptx_entry_*` kernel (compiled with `--entry`) over
    /// `dims`, every thread with r1 = a device copy of `mem` and r2 = its length.
    pub fn run_entry(
        &mut self,
        program: &str,
        dims: Dims,
        mem: &[u8],
    ) -> Result<EntryResult, LoaderError> {
        let prog = self
            .obj
            .programs
            .iter()
            .find(|p| p.name == program)
            .ok_or_else(|| LoaderError::NoProgram {
                name: program.to_string(),
                file: self.obj.file.clone(),
            })?;
        let mut d_mem = self.gpu.alloc(mem.len())?;
        self.gpu.write(d_mem.ptr(), mem)?;
        let mut d_r0 = self.gpu.alloc(8)?;
        let params = [
            Param::U64(d_mem.ptr()),
            Param::U64(mem.len() as u64),
            Param::U64(d_r0.ptr()),
        ];
        let report = self.launch(&entry_symbol(prog), dims, &params)?;
        let r0 = word(&self.gpu.read(d_r0.ptr(), 8)?, 0);
        let mem = self.gpu.read(d_mem.ptr(), mem.len())?;
        Ok(EntryResult { r0, mem, report })
    }
}
