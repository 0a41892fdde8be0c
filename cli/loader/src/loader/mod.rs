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
//! the command line's defaults (rings in host memory, everything else in device memory)
//! are the CLI's: `bpf2ptx::compile::host_by_default` and `bpf2ptx::compile::map_options`.
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

use crate::gpu::{Buffer, CopyStream, Dims, Gpu, GpuError, HostBuffer, Module, Param};
use bpf2ptx_backend::back::ptx::{
    entry_symbol, map_data_symbol, map_desc_symbol, map_symbol, PRINTK_DESC,
};
use bpf2ptx_compiler::isa::table::{CallKind, Kind};
use bpf2ptx_compiler::program::{map_type_name, MapOrigin, Object};
use bpf2ptx_runtime::ringbuf::{self, Record, RingError};
use bpf2ptx_runtime::{desc, maps, MapKind};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use thiserror::Error;

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

/// The host's side of a ring: its records so far.
#[derive(Default)]
struct RingState {
    /// Records read so far, in order (after [`RingState::settle`]).
    records: Vec<Record>,
    /// A ring that could not be decoded (a producer bug): reading stopped there.
    error: Option<RingError>,
    /// Records the live drainer took and has not made [`Record`]s of yet: their data
    /// bytes back to back, and each one's position and length. A pass then costs one
    /// copy per record into one growing buffer, no allocation per record, so the drainer
    /// hands the ring back sooner.
    staged_bytes: Vec<u8>,
    staged: Vec<(u64, u32)>,
}

impl RingState {
    /// Turns the staged records into [`Record`]s, after the ones read before.
    fn settle(&mut self) {
        let mut at = 0;
        self.records.reserve(self.staged.len());
        for (offset, len) in self.staged.drain(..) {
            let end = at + len as usize;
            self.records.push(Record {
                offset,
                data: self.staged_bytes[at..end].to_vec(),
            });
            at = end;
        }
        self.staged_bytes = Vec::new();
    }
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

/// What a map's operations did other than what the program asked, by reason: nothing a
/// probe does is lost without being counted here (specs/abi.md, "Hash maps" and the
/// ringbuf bullet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapCounts {
    /// Hash maps: insertions refused because the map held `max_entries` keys (-E2BIG).
    pub full: u64,
    /// Hash maps: operations that gave up waiting for a lock or a slot (-EBUSY).
    pub busy: u64,
    /// LRU hash maps: entries evicted to make room (what the map did instead of refusing).
    pub evicted: u64,
    /// Rings: records dropped because the ring had no room.
    pub dropped: u64,
}

impl MapCounts {
    /// The counts that apply to a map of type `map_type`, as JSON.
    pub fn json(&self, map_type: u32) -> Value {
        let kind = MapKind::from_id(map_type);
        if kind.is_some_and(MapKind::is_hash) {
            let mut v = json!({ "full": self.full, "busy": self.busy });
            if kind == Some(MapKind::LruHash) {
                v["evicted"] = json!(self.evicted);
            }
            v
        } else if kind.is_some_and(MapKind::is_ring) {
            json!({ "dropped": self.dropped })
        } else {
            json!({})
        }
    }
}

impl std::fmt::Display for MapCounts {
    /// `3 refused (full), 2 dropped`: the non-zero counts, for a line on stderr.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            (self.full, "refused (full)"),
            (self.busy, "gave up waiting (busy)"),
            (self.evicted, "evicted (LRU)"),
            (self.dropped, "dropped (ring full)"),
        ];
        let text: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        f.write_str(&text.join(", "))
    }
}

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
            let threads = match m.kind() {
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

    /// A ring's records read so far plus those still in it, in order; `None` when the
    /// module has no ring of that name. Reading advances the ring's consumer, so each
    /// record is returned once over the loader's life (later calls return it again from
    /// the loader's copy).
    pub fn records(&mut self, name: &str) -> Result<Option<&[Record]>, LoaderError> {
        let Some(k) = self.maps.iter().position(|b| {
            self.obj.maps[b.index].name == name && self.obj.maps[b.index].is(MapKind::is_ring)
        }) else {
            return Ok(None);
        };
        self.collect_ring(k)?;
        Ok(Some(&self.maps[k].ring.records))
    }

    /// Reads what is left in ring `k` (device or host memory) into its state and moves its
    /// consumer to the end.
    fn collect_ring(&mut self, k: usize) -> Result<(), LoaderError> {
        let b = &mut self.maps[k];
        let d = self.gpu.read(b.desc, desc::BYTES as usize)?;
        collect(self.gpu, &d, &mut b.ring)?;
        Ok(())
    }

    /// The `drops` word of map `name`'s descriptor: records a full ring dropped. `None`
    /// when the module has no such map.
    pub fn drops(&self, name: &str) -> Result<Option<u64>, LoaderError> {
        Ok(self.counts(name)?.map(|c| c.dropped))
    }

    /// What map `name`'s operations did other than what the program asked, by reason
    /// ([`MapCounts`]). `None` when the module has no such map.
    pub fn counts(&self, name: &str) -> Result<Option<MapCounts>, LoaderError> {
        match self
            .maps
            .iter()
            .find(|b| self.obj.maps[b.index].name == name)
        {
            Some(b) => Ok(Some(self.read_counts(b)?.1)),
            None => Ok(None),
        }
    }

    /// [`Loader::counts`] of every map of the module whose counts are not all 0, in the
    /// object's map order: what a run must not lose silently.
    pub fn losses(&self) -> Result<Vec<(String, MapCounts)>, LoaderError> {
        let mut out = Vec::new();
        for b in &self.maps {
            let (_, c) = self.read_counts(b)?;
            if c != MapCounts::default() {
                out.push((self.obj.maps[b.index].name.clone(), c));
            }
        }
        Ok(out)
    }

    /// A bound map's key count (hash maps; `None` for other kinds) and its counts: a
    /// ring's drops from descriptor word 6, a hash map's from its counts block (word 5,
    /// the shards summed).
    fn read_counts(&self, b: &Bound) -> Result<(Option<u64>, MapCounts), LoaderError> {
        let d = self.gpu.read(b.desc, desc::BYTES as usize)?;
        let mut c = MapCounts {
            dropped: desc::read(&d, desc::DROPS),
            ..MapCounts::default()
        };
        let counts = desc::read(&d, desc::AUX2);
        if !self.obj.maps[b.index].is(MapKind::is_hash) || counts == 0 {
            return Ok((None, c));
        }
        let block = self.gpu.read(counts, maps::COUNTS_BYTES as usize)?;
        let (keys, [full, busy, evicted]) = maps::read_counts(&block);
        (c.full, c.busy, c.evicted) = (full, busy, evicted);
        Ok((Some(keys), c))
    }

    /// Every map of the object as JSON: name, type, sizes, placement and its entries
    /// (`key`/`value` as hex byte strings, as bpftool prints them). Sharded arrays are
    /// summed over their replicas; per-CPU arrays, per SM on the GPU, print every SM's
    /// copy as bpftool prints per-CPU values (`values`: `cpu` = the replica, `smid & 255`,
    /// and `value`). Per-thread and per-warp arrays of more than 1024 threads (warps)
    /// print, per key, the sum of the values' first 8 bytes instead of every one. Rings
    /// print their records (up to 1024 as byte arrays, more as one hex string each).
    pub fn maps_json(&mut self) -> Result<Value, LoaderError> {
        let mut out = Vec::new();
        for k in 0..self.obj.maps.len() {
            out.push(self.map_json(k)?);
        }
        Ok(Value::Array(out))
    }

    fn map_json(&mut self, index: usize) -> Result<Value, LoaderError> {
        let (gpu, obj) = (self.gpu, self.obj);
        let m = &obj.maps[index];
        let stride = (u64::from(m.value_size).div_ceil(8) * 8) as usize;
        let mut out = json!({
            "name": m.name,
            "type": map_type_name(m.map_type).unwrap_or("?"),
            "key_size": m.key_size,
            "value_size": m.value_size,
            "max_entries": m.max_entries,
        });
        if m.origin == MapOrigin::GlobalData {
            if let Some((p, size)) = gpu.global(self.module, &map_symbol(&m.name))? {
                out["value"] = hex(&gpu.read(p, size.min(m.value_size as usize))?);
            }
            return Ok(out);
        }
        let Some(k) = self.maps.iter().position(|b| b.index == index) else {
            out["note"] = json!("not in this module (the program does not use it)");
            return Ok(out);
        };
        let d = gpu.read(self.maps[k].desc, desc::BYTES as usize)?;
        let (data, aux, aux2) = (
            desc::read(&d, desc::DATA),
            desc::read(&d, desc::AUX),
            desc::read(&d, desc::AUX2),
        );
        if self.maps[k].placement == Placement::Host {
            out["placement"] = json!("host");
        }
        let (keys, counts) = self.read_counts(&self.maps[k])?;
        if m.is(MapKind::is_ring) {
            out["drops"] = json!(counts.dropped);
        }
        if let Some(keys) = keys {
            out["keys"] = json!(keys);
        }
        out["counts"] = counts.json(m.map_type);
        if data == 0 {
            out["note"] = json!("not bound");
            return Ok(out);
        }
        let n = m.max_entries as usize;
        let mut entries = Vec::new();
        match m.kind() {
            Some(kind) if kind.is_array_like() => {
                // A sharded array (aux = replicas) is summed replica by replica, per
                // 64-bit word: the device only ever added to it. A per-CPU array's
                // replicas are the SMs' own copies and print one by one.
                // Replica r starts at r * aux2 (whole 128-byte lines, specs/abi.md).
                let replicas = (aux as usize).max(1);
                let replica = if aux > 0 { aux2 as usize } else { n * stride };
                let bytes = gpu.read(data, replica * (replicas - 1) + n * stride)?;
                if kind == MapKind::PercpuArray && aux > 0 {
                    for key in 0..n {
                        let values = (0..replicas)
                            .map(|r| {
                                let at = r * replica + key * stride;
                                let v = &bytes[at..at + m.value_size as usize];
                                json!({ "cpu": r, "value": hex(v) })
                            })
                            .collect();
                        entries.push(json!({
                            "key": hex(&(key as u32).to_le_bytes()),
                            "values": Value::Array(values),
                        }));
                    }
                    out["per_sm"] = json!(aux);
                    out["entries"] = Value::Array(entries);
                    return Ok(out);
                }
                for key in 0..n {
                    let mut v = bytes[key * stride..(key + 1) * stride].to_vec();
                    for r in 1..replicas {
                        let at = r * replica + key * stride;
                        for (w, o) in v
                            .chunks_exact_mut(8)
                            .zip(bytes[at..at + stride].chunks_exact(8))
                        {
                            let sum = word(w, 0).wrapping_add(word(o, 0));
                            w.copy_from_slice(&sum.to_le_bytes());
                        }
                    }
                    v.truncate(m.value_size as usize);
                    entries
                        .push(json!({ "key": hex(&(key as u32).to_le_bytes()), "value": hex(&v) }));
                }
                if aux > 0 {
                    out["sharded"] = json!(aux);
                }
            }
            Some(kind) if kind.is_per_unit() => {
                let (unit, units) = if kind == MapKind::PerThreadArray {
                    ("thread", "threads")
                } else {
                    ("warp", "warps")
                };
                let threads = aux as usize;
                let bytes = gpu.read(data, n * threads * stride)?;
                for key in 0..n {
                    let slot = |t: usize| {
                        let at = (key * threads + t) * stride;
                        &bytes[at..at + m.value_size as usize]
                    };
                    let mut e = json!({ "key": hex(&(key as u32).to_le_bytes()) });
                    if threads <= 1024 {
                        e["values"] = Value::Array(
                            (0..threads)
                                .map(|t| json!({ unit: t, "value": hex(slot(t)) }))
                                .collect(),
                        );
                    } else {
                        let sum = (0..threads)
                            .map(|t| word(&pad8(slot(t)), 0))
                            .fold(0u64, u64::wrapping_add);
                        e[units] = json!(threads);
                        e["sum_u64"] = json!(sum);
                    }
                    entries.push(e);
                }
            }
            Some(kind) if kind.is_hash() => {
                let key8 = (m.key_size as usize).div_ceil(8) * 8;
                let slot = 8 + key8 + stride;
                let bytes = gpu.read(data, aux as usize * slot)?;
                for s in bytes.chunks_exact(slot) {
                    let state = word(s, 0) as u32;
                    if state == maps::SLOT_FULL || state == maps::SLOT_HELD {
                        let key = &s[8..8 + m.key_size as usize];
                        let value = &s[8 + key8..8 + key8 + m.value_size as usize];
                        entries.push(json!({ "key": hex(key), "value": hex(value) }));
                    }
                }
            }
            Some(kind) if kind.is_ring() => {
                self.collect_ring(k)?;
                let st = &self.maps[k].ring;
                let recs = &st.records;
                if recs.len() <= 1024 {
                    out["records"] = Value::Array(recs.iter().map(|r| hex(&r.data)).collect());
                } else {
                    out["record_count"] = json!(recs.len());
                    out["records_hex"] = Value::Array(
                        recs.iter()
                            .map(|r| {
                                Value::String(r.data.iter().map(|b| format!("{b:02x}")).collect())
                            })
                            .collect(),
                    );
                }
                if let Some(e) = &st.error {
                    out["error"] = json!(e.to_string());
                }
                let ctr = gpu.read(aux2, 16)?;
                out["producer"] = json!(word(&ctr, 0));
                return Ok(out);
            }
            _ => {}
        }
        out["entries"] = Value::Array(entries);
        Ok(out)
    }

    /// The lines `trace_printk` and `puts` wrote, formatted on the host: each record holds
    /// the address of its format (or string) in a read-only global-data map and its
    /// arguments.
    pub fn printk(&self) -> Result<Vec<String>, LoaderError> {
        let (gpu, module, obj) = (self.gpu, self.module, self.obj);
        // Only modules whose programs print have the printk ring; asking the driver for a
        // symbol it lacks is harmless but is an API error to compute-sanitizer.
        let prints = obj.programs.iter().flat_map(|p| &p.insns).any(|i| {
            i.kind() == Kind::Call(CallKind::Helper)
                && matches!(
                    bpf2ptx_runtime::helper(i.imm).map(|h| h.lowering),
                    Some(bpf2ptx_runtime::Lowering::Printk { .. })
                )
        });
        if !prints {
            return Ok(Vec::new());
        }
        let Some((d, _)) = gpu.global(module, PRINTK_DESC)? else {
            return Ok(Vec::new());
        };
        let mut st = RingState::default();
        collect(gpu, &gpu.read(d, desc::BYTES as usize)?, &mut st)?;
        // Where each global-data map lives on the device, to turn addresses into strings.
        let mut bases = Vec::new();
        for m in obj
            .maps
            .iter()
            .filter(|m| m.origin == MapOrigin::GlobalData)
        {
            if let (Some((p, size)), Some(init)) =
                (gpu.global(module, &map_symbol(&m.name))?, &m.init)
            {
                bases.push((p, size as u64, init.clone()));
            }
        }
        let string_at = |addr: u64, max: u64| -> String {
            for (p, size, init) in &bases {
                if (*p..p + size).contains(&addr) {
                    let off = (addr - p) as usize;
                    let end = init.len().min(off.saturating_add(max as usize));
                    let bytes = &init[off.min(end)..end];
                    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
                    return String::from_utf8_lossy(bytes).into_owned();
                }
            }
            format!("<string at 0x{addr:x}>")
        };
        let mut lines = Vec::new();
        for r in st.records.iter().filter(|r| r.data.len() >= 48) {
            let w = |k: usize| word(&r.data, k);
            let line = if w(0) == 1 {
                string_at(w(1), 4096)
            } else {
                format_printk(&string_at(w(1), w(2)), [w(3), w(4), w(5)])
            };
            lines.push(line.trim_end_matches('\n').to_string());
        }
        Ok(lines)
    }
}

fn pad8(s: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    let n = s.len().min(8);
    w[..n].copy_from_slice(&s[..n]);
    w
}

fn hex(bytes: &[u8]) -> Value {
    Value::Array(
        bytes
            .iter()
            .map(|b| Value::String(format!("0x{b:02x}")))
            .collect(),
    )
}

/// Reads a ring's committed records from `consumer` on through its descriptor (device or
/// mapped host memory, by copies), appends them to `st` and advances the consumer past
/// them. Used after a kernel has ended.
fn collect(gpu: &Gpu, d: &[u8], st: &mut RingState) -> Result<(), GpuError> {
    let (data, aux, ctr) = (
        desc::read(d, desc::DATA),
        desc::read(d, desc::AUX),
        desc::read(d, desc::AUX2),
    );
    if data == 0 || ctr == 0 || st.error.is_some() {
        return Ok(());
    }
    let ring = gpu.read(data, aux as usize)?;
    let c = gpu.read(ctr, 16)?;
    match ringbuf::decode(&ring, word(&c, 0), word(&c, 1)) {
        Ok(d) => {
            st.records.extend(d.records);
            // Zero what was consumed, as a live reader does, so that a later launch's
            // reservations there read as "not yet written" until they are.
            let (from, to) = (word(&c, 1), d.consumer);
            let mut at = from;
            while at < to {
                let off = at % aux;
                let n = (to - at).min(aux - off);
                gpu.write(data + off, &vec![0u8; n as usize])?;
                at += n;
            }
            gpu.write(ctr + 8, &to.to_le_bytes())?;
        }
        Err(e) => st.error = Some(e),
    }
    Ok(())
}

/// A ring whose bytes are in pinned host memory, read by the host directly while the
/// producers run; its consumer counter is in device memory.
struct LiveRing {
    data: *mut u8,
    size: u64,
    /// Device address of the consumer counter (word 5's second u64).
    consumer_at: u64,
    /// The consumer position, as last published.
    consumer: u64,
    /// A pass gives bytes back (zeroes them and publishes the consumer) every time it has
    /// walked this many, not only at its end ([`publish_every`]).
    every: u64,
}

/// Bytes a drain pass walks between two consumer publications: a quarter of the ring, at
/// most 1 MiB. Producers that find the ring full get room back while the host is still
/// walking the rest, instead of after a whole ring and a copy's round trip; a publication
/// (an async copy, [`crate::gpu::CopyStream::post_u64`]) costs the host a few
/// microseconds, about what walking a few hundred records does, so finer parts would
/// spend the drainer's time on copies rather than records.
fn publish_every(size: u64) -> u64 {
    (size / 4).clamp(8, 1 << 20)
}

/// What one [`LiveRing::drain`] pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Pass {
    /// Committed records taken.
    records: u64,
    /// Consumer positions published.
    publishes: u64,
}

// SAFETY: the pointer is into a `HostBuffer` the loader owns and keeps alive for every use
// (the drain thread is scoped inside `Loader::launch`, which borrows the loader).
unsafe impl Send for LiveRing {}

impl LiveRing {
    fn new(data: &HostBuffer, consumer_at: u64, consumer: u64) -> LiveRing {
        let bytes = data.bytes();
        // SAFETY: the host buffer's bytes, alive as long as the loader.
        unsafe {
            LiveRing::from_raw(
                bytes.as_ptr().cast_mut(),
                bytes.len(),
                consumer_at,
                consumer,
            )
        }
    }

    /// # Safety
    ///
    /// `data` points to `len` bytes, 8-aligned, valid (and written only through atomics or
    /// by a device) while the value is used.
    unsafe fn from_raw(data: *mut u8, len: usize, consumer_at: u64, consumer: u64) -> LiveRing {
        LiveRing {
            data,
            // The compiler sizes rings as powers of two; a ring of another size (a
            // different module) is not drained live ([`ringbuf::scan_to`] refuses it).
            size: len as u64,
            consumer_at,
            consumer,
            every: publish_every(len as u64),
        }
    }

    /// One pass: takes the committed records from the consumer on, up to the first BUSY or
    /// all-zero header and at most one ring's worth, in parts of [`LiveRing::every`] bytes
    /// ([`ringbuf::scan_to`]); after each part it zeroes the part's bytes, then publishes
    /// the new consumer with `publish(consumer_at, consumer)`, which issues the copy that
    /// carries it to the device (copies land in the order issued). Each header is read with
    /// acquire semantics (the flags were released by `submit`, `.sys`), so the record's
    /// bytes read after it are the ones written before it. A publication that fails ends
    /// the pass with the consumer where it was published last.
    fn drain(
        &mut self,
        st: &mut RingState,
        mut publish: impl FnMut(u64, u64) -> Result<(), GpuError>,
    ) -> Result<Pass, GpuError> {
        let mut pass = Pass::default();
        // At most one ring's worth per pass, so the drainer goes on to its other rings.
        let (data, last) = (self.data, self.consumer.saturating_add(self.size));
        let header = |off: u64| {
            // SAFETY: `scan_to` passes 8-aligned offsets below `size`: the header is inside
            // the ring, which is 8-aligned.
            let h = unsafe { &*(data.add(off as usize) as *const AtomicU64) };
            h.load(Ordering::Acquire)
        };
        while st.error.is_none() {
            // No record ends past the consumer published last plus the ring, which the
            // parts before moved: the walk's end is that, not the pass's start plus the
            // ring (a record the producers wrote into a part given back earlier in this
            // pass may cross that).
            let from = self.consumer;
            let end = from.saturating_add(self.size);
            let stop_at = from.saturating_add(self.every).min(last);
            let walk = ringbuf::scan_to(self.size, from, end, stop_at, header, |pos, off, len| {
                // SAFETY: `scan_to` checked that the record lies inside the ring; its bytes
                // were released before the flags acquired above, and nobody writes them
                // until this reader gives them back.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        data.add((off + ringbuf::HEADER_SIZE) as usize),
                        len as usize,
                    )
                };
                st.staged_bytes.extend_from_slice(bytes);
                st.staged.push((pos, len));
                pass.records += 1;
            });
            if let Some(e) = walk.error {
                st.error = Some(e);
            }
            let to = walk.consumer;
            if to == from {
                break;
            }
            // Zero what was consumed (a header reserved there later must read as "not yet
            // written"), then publish the consumer: the zeroing stores are done before the
            // copy that carries it is issued.
            let mut at = from;
            while at < to {
                let off = at % self.size;
                let n = (to - at).min(self.size - off);
                // SAFETY: `off + n <= size`, inside the ring.
                unsafe { std::ptr::write_bytes(data.add(off as usize), 0, n as usize) };
                at += n;
            }
            std::sync::atomic::fence(Ordering::SeqCst);
            publish(self.consumer_at, to)?;
            self.consumer = to;
            pass.publishes += 1;
            // Stopped short of the part's end (an uncommitted record), or one ring walked.
            if to < stop_at || to >= last {
                break;
            }
        }
        Ok(pass)
    }
}

/// The live drainer's loop, run by the thread [`Loader::launch`] starts before the kernel:
/// passes over every ring without sleeping (a pass that found nothing yields the CPU once)
/// until `stop`, each publishing its ring's consumer through `publish` as
/// [`LiveRing::drain`] says; counts what it did. Stops at the first failed publication.
fn drain_until(
    live: &mut [LiveRing],
    states: &mut [RingState],
    stop: &AtomicBool,
    mut publish: impl FnMut(u64, u64) -> Result<(), GpuError>,
) -> Result<DrainStats, GpuError> {
    let start = std::time::Instant::now();
    let mut stats = DrainStats::default();
    while !stop.load(Ordering::Acquire) {
        let mut got = 0;
        for (r, st) in live.iter_mut().zip(states.iter_mut()) {
            let pass = r.drain(st, &mut publish)?;
            got += pass.records;
            stats.publishes += pass.publishes;
        }
        stats.passes += 1;
        if got == 0 {
            stats.idle_passes += 1;
            std::thread::yield_now();
            continue;
        }
        let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        if stats.records == 0 {
            stats.first_record_us = us;
        }
        stats.last_record_us = us;
        stats.records += got;
        stats.max_pass_records = stats.max_pass_records.max(got);
    }
    Ok(stats)
}

/// A small printf for `trace_printk` formats: `%d %i %u %x %X %o %p %c %%` with `l`, `ll`,
/// `h` and `hh` lengths, flags, width; at most three arguments, as in Linux.
pub fn format_printk(fmt: &str, args: [u64; 3]) -> String {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut next = args.into_iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&f) = it.peek() {
            if "-+ 0#".contains(f) || f.is_ascii_digit() {
                spec.push(f);
                it.next();
            } else {
                break;
            }
        }
        let mut long = 0;
        let mut short = 0;
        while let Some(&l) = it.peek() {
            match l {
                'l' => long += 1,
                'h' => short += 1,
                _ => break,
            }
            it.next();
        }
        let Some(conv) = it.next() else { break };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let v = next.next().unwrap_or(0);
        let (bits, width) = match (long, short) {
            (0, 0) => (
                32,
                spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                    .parse::<usize>()
                    .unwrap_or(0),
            ),
            (0, 1) => (16, 0),
            (0, _) => (8, 0),
            _ => (64, 0),
        };
        let width = if width == 0 {
            spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                .parse::<usize>()
                .unwrap_or(0)
        } else {
            width
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let u = v & mask;
        let signed = if bits == 64 {
            u as i64
        } else if u >> (bits - 1) & 1 == 1 {
            (u | !mask) as i64
        } else {
            u as i64
        };
        let text = match conv {
            'd' | 'i' => signed.to_string(),
            'u' => u.to_string(),
            'x' => format!("{u:x}"),
            'X' => format!("{u:X}"),
            'o' => format!("{u:o}"),
            'p' => format!("0x{v:x}"),
            'c' => char::from(u as u8).to_string(),
            other => format!("%{other}"),
        };
        let pad = if spec.starts_with('0') { '0' } else { ' ' };
        if spec.starts_with('-') {
            out.push_str(&format!("{text:<width$}"));
        } else if text.len() < width {
            out.extend(std::iter::repeat_n(pad, width - text.len()));
            out.push_str(&text);
        } else {
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{drain_until, format_printk, host_flags, LiveRing, LoaderError, RingState};
    use bpf2ptx_runtime::ringbuf::{RingError, BUSY, DISCARD};

    fn corpus(name: &str) -> bpf2ptx_compiler::program::Object {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        bpf2ptx_compiler::front::load_path(&root.join("tests/corpus/obj").join(name)).unwrap()
    }

    /// A 64-byte ring in an 8-aligned buffer, drained as the loader drains host rings.
    struct Ring {
        words: Vec<u64>,
    }

    impl Ring {
        fn new() -> Ring {
            Ring { words: vec![0; 8] }
        }
        fn bytes(&mut self) -> &mut [u8] {
            // SAFETY: 64 initialised bytes, borrowed mutably with `self`.
            unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), 64) }
        }
        /// A header `{len, flags}` at position `pos` and `data` after it.
        fn put(&mut self, pos: u64, len: u32, flags: u32, data: &[u8]) {
            let off = (pos % 64) as usize;
            let b = self.bytes();
            b[off..off + 4].copy_from_slice(&len.to_le_bytes());
            b[off + 4..off + 8].copy_from_slice(&flags.to_le_bytes());
            b[off + 8..off + 8 + data.len()].copy_from_slice(data);
        }
        fn live(&mut self, consumer: u64) -> LiveRing {
            // SAFETY: the buffer outlives every use in these tests and is only accessed
            // from this thread.
            unsafe { LiveRing::from_raw(self.words.as_mut_ptr().cast(), 64, 0xd000, consumer) }
        }
    }

    /// One pass; (records taken, consumers published).
    fn pass(r: &mut LiveRing, st: &mut RingState) -> (u64, Vec<(u64, u64)>) {
        let mut published = Vec::new();
        let p = r
            .drain(st, |at, c| {
                published.push((at, c));
                Ok(())
            })
            .unwrap();
        st.settle();
        assert_eq!(p.publishes, published.len() as u64);
        (p.records, published)
    }

    fn data(st: &RingState) -> Vec<(u64, &[u8])> {
        st.records
            .iter()
            .map(|r| (r.offset, r.data.as_slice()))
            .collect()
    }

    #[test]
    fn live_drain_takes_committed_records_zeroes_them_and_publishes() {
        let mut ring = Ring::new();
        ring.put(0, 3, 0, b"abc");
        ring.put(16, 4, DISCARD, b"gone");
        ring.put(32, 2, BUSY, b"zz");
        let mut r = ring.live(0);
        let mut st = RingState::default();
        // A 64-byte ring gives bytes back every 16 (a quarter ring): after the record and
        // after the discarded one; the busy one stops the pass.
        assert_eq!(r.every, 16);
        assert_eq!(pass(&mut r, &mut st), (1, vec![(0xd000, 16), (0xd000, 32)]));
        assert_eq!(data(&st), vec![(0, &b"abc"[..])]);
        // What was consumed is zero; the busy record is untouched.
        assert!(ring.bytes()[..32].iter().all(|&b| b == 0));
        assert_eq!(&ring.bytes()[40..42], b"zz");
        // Nothing new: no record, nothing published.
        assert_eq!(pass(&mut r, &mut st), (0, vec![]));
        // Submitted, then padding up to the end (offset 48) and a record in the next lap
        // at offset 0: the walk wraps.
        ring.put(32, 2, 0, b"zz");
        ring.put(48, 8, DISCARD, b"");
        ring.put(64, 5, 0, b"hello");
        assert_eq!(
            pass(&mut r, &mut st),
            (2, vec![(0xd000, 48), (0xd000, 64), (0xd000, 80)])
        );
        assert_eq!(
            data(&st),
            vec![(0, &b"abc"[..]), (32, &b"zz"[..]), (64, &b"hello"[..])]
        );
        assert!(ring.bytes().iter().all(|&b| b == 0));
        assert_eq!(st.error, None);
    }

    #[test]
    fn live_drain_of_a_full_ring_stops_after_one_ring() {
        // Four committed 16-byte records from position 64: the ring is full. The walk must
        // stop at 128, not read the record at 64 again (its header is still there).
        let mut ring = Ring::new();
        for (k, pos) in [64u64, 80, 96, 112].into_iter().enumerate() {
            ring.put(pos, 8, 0, &[k as u8; 8]);
        }
        let mut r = ring.live(64);
        let mut st = RingState::default();
        let every_16 = [80, 96, 112, 128].map(|c| (0xd000, c)).to_vec();
        assert_eq!(pass(&mut r, &mut st), (4, every_16));
        assert_eq!(st.records.last().map(|r| r.offset), Some(112));
        assert!(ring.bytes().iter().all(|&b| b == 0));
    }

    #[test]
    fn live_drain_gives_bytes_back_after_the_record_that_ends_a_part() {
        // Records of 16, 24 and 16 bytes from 0 in a 64-byte ring (parts of 16 bytes): the
        // second starts in the second part and ends in the third, so that part ends after
        // it, at 40; the zeroing and each publication go exactly up to the part's end.
        let mut ring = Ring::new();
        ring.put(0, 8, 0, &[1; 8]);
        ring.put(16, 16, 0, &[2; 16]);
        ring.put(40, 8, 0, &[3; 8]);
        ring.put(56, 8, BUSY, b"");
        let mut r = ring.live(0);
        let mut st = RingState::default();
        let mut seen = Vec::new();
        let p = r
            .drain(&mut st, |_, c| {
                seen.push(c);
                Ok(())
            })
            .unwrap();
        assert_eq!((p.records, seen), (3, vec![16, 40, 56]));
        assert!(ring.bytes()[..56].iter().all(|&b| b == 0));
        assert_eq!(
            ring.words[7],
            u64::from(BUSY) << 32 | 8,
            "the busy header stays"
        );
    }

    #[test]
    fn live_drain_walks_records_written_into_parts_it_gave_back() {
        // Consumer at 8: one record. After the first part is given back (consumer 24) the
        // producers may write up to 24 + 64 = 88; they do, and their last record ([64, 80))
        // crosses 72, where the pass began plus one ring. The pass takes it (the walk of a
        // part ends at the consumer published last plus the ring, never before), and ends
        // once it has walked one ring's worth.
        let mut ring = Ring::new();
        ring.put(8, 8, 0, &[1; 8]);
        let mut r = ring.live(8);
        let mut st = RingState::default();
        let mut seen = Vec::new();
        let p = r
            .drain(&mut st, |_, c| {
                if c == 24 {
                    ring.put(24, 24, 0, &[2; 24]);
                    ring.put(56, 0, DISCARD, b"");
                    ring.put(64, 8, 0, &[3; 8]);
                }
                seen.push(c);
                Ok(())
            })
            .unwrap();
        st.settle();
        assert_eq!(st.error, None);
        assert_eq!((p.records, seen), (3, vec![24, 56, 80]));
        assert_eq!(
            data(&st),
            vec![(8, &[1; 8][..]), (24, &[2; 24][..]), (64, &[3; 8][..])]
        );
    }

    /// The drainer's loop beside a producer thread that follows the device's rules on a
    /// 4096-byte ring: it writes a record only below the consumer it last saw published
    /// plus the ring (acquire), finds those bytes zero (the drainer zeroed them before it
    /// published), writes the data, then releases the header; a record that would cross the
    /// ring's end is preceded by one padding record up to it. It waits when the ring is
    /// full (the device would drop). Every record arrives once, in order, intact, and the
    /// drainer, in parts of a quarter ring, took most of them while the producer ran.
    #[test]
    fn live_drain_keeps_up_with_a_producer_in_another_thread() {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        const SIZE: u64 = 4096;
        const N: u64 = 20_000;
        let mut words = vec![0u64; (SIZE / 8) as usize];
        let base = words.as_mut_ptr() as usize;
        // SAFETY: 4096 bytes, 8-aligned, alive until the end of the test; the drainer and
        // the producer share them by the ring's rules.
        let mut live = [unsafe { LiveRing::from_raw(base as *mut u8, SIZE as usize, 0, 0) }];
        let mut states = [RingState::default()];
        let published = AtomicU64::new(0);
        let (stop, done) = (AtomicBool::new(false), AtomicBool::new(false));
        // Stops the drainer however the producer's side ends (a failed check panics, and
        // the scope then waits for the drainer).
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let stats = std::thread::scope(|s| {
            let _stop = Stop(&stop);
            let drainer = s.spawn(|| {
                drain_until(&mut live, &mut states, &stop, |at, c| {
                    assert_eq!(at, 0);
                    assert!(c > published.load(Ordering::Relaxed));
                    published.store(c, Ordering::Release);
                    Ok(())
                })
            });
            let mut p = 0u64;
            let t0 = std::time::Instant::now();
            let wait_room = |need: u64| loop {
                let c = published.load(Ordering::Acquire);
                if need <= c + SIZE {
                    break;
                }
                assert!(
                    t0.elapsed().as_secs() < 60,
                    "the drainer gave no room back: need {need}, published {c}"
                );
                std::thread::yield_now();
            };
            let at = |pos: u64| (base + (pos % SIZE) as usize) as *mut u8;
            let header = |pos: u64| {
                // SAFETY: an 8-aligned position's header, inside the ring.
                unsafe { &*(at(pos) as *const AtomicU64) }
            };
            for i in 0..N {
                let len = 8 * (1 + i % 3); // 8, 16 or 24 data bytes
                let t = 8 + len;
                let off = p % SIZE;
                if off + t > SIZE {
                    wait_room(p + (SIZE - off));
                    header(p).store(
                        u64::from(DISCARD) << 32 | (SIZE - off - 8),
                        Ordering::Release,
                    );
                    p += SIZE - off;
                }
                wait_room(p + t);
                // SAFETY: `t` bytes at `p`, inside the ring (no record crosses its end), given
                // back by the drainer (zeroed, then published) and not yet written again.
                let rec = unsafe { std::slice::from_raw_parts_mut(at(p), t as usize) };
                assert!(rec.iter().all(|&b| b == 0), "record {i}: bytes not zeroed");
                for (k, b) in rec[8..].iter_mut().enumerate() {
                    *b = (i as u8).wrapping_add(k as u8);
                }
                header(p).store(len, Ordering::Release);
                p += t;
            }
            done.store(true, Ordering::Release);
            // Let the drainer take what it can, then stop it as the kernel's end does.
            while published.load(Ordering::Acquire) < p && t0.elapsed().as_secs() < 60 {
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Release);
            (drainer.join().unwrap().unwrap(), p)
        });
        let (stats, p) = stats;
        assert!(done.load(Ordering::Acquire));
        let st = &mut states[0];
        st.settle();
        assert_eq!(live[0].consumer, p, "everything given back");
        assert_eq!(st.records.len() as u64, N);
        for (i, r) in st.records.iter().enumerate() {
            let len = 8 * (1 + i as u64 % 3);
            assert_eq!(r.data.len() as u64, len, "record {i}");
            assert!(r
                .data
                .iter()
                .enumerate()
                .all(|(k, &b)| b == (i as u8).wrapping_add(k as u8)));
        }
        assert_eq!(stats.records, N);
        // Every record of 16 to 32 bytes passed through a 4096-byte ring: more than a
        // hundred rings' worth, given back in parts of a quarter ring.
        assert!(stats.publishes >= p / SIZE, "{stats:?}");
        assert!(stats.max_pass_records <= SIZE / 16, "{stats:?}");
        assert!(stats.first_record_us <= stats.last_record_us);
        assert!(stats.passes > stats.idle_passes, "{stats:?}");
    }

    #[test]
    fn live_drain_keeps_what_it_read_before_a_bad_header() {
        let mut ring = Ring::new();
        ring.put(0, 1, 0, b"a");
        ring.put(16, 1, 1, b"b"); // unknown flag bit
        let mut r = ring.live(0);
        let mut st = RingState::default();
        assert_eq!(pass(&mut r, &mut st), (1, vec![(0xd000, 16)]));
        assert_eq!(
            st.error,
            Some(RingError::Flags {
                offset: 16,
                flags: 1
            })
        );
        // Stopped for good.
        ring.put(16, 1, 0, b"b");
        assert_eq!(pass(&mut r, &mut st), (0, vec![]));
    }

    #[test]
    fn live_drain_does_not_advance_when_publishing_fails() {
        let mut ring = Ring::new();
        ring.put(0, 1, 0, b"a");
        let mut r = ring.live(0);
        let mut st = RingState::default();
        let e = r
            .drain(&mut st, |_, _| Err(crate::gpu::GpuError::NoDevice))
            .unwrap_err();
        assert!(matches!(e, crate::gpu::GpuError::NoDevice));
        assert_eq!(r.consumer, 0);
    }

    #[test]
    fn map_counts_say_what_was_lost_by_kind() {
        use super::MapCounts;
        let c = MapCounts {
            full: 3,
            busy: 0,
            evicted: 0,
            dropped: 2,
        };
        assert_eq!(c.to_string(), "3 refused (full), 2 dropped (ring full)");
        assert_eq!(c.json(1), serde_json::json!({ "full": 3, "busy": 0 }));
        assert_eq!(
            c.json(9),
            serde_json::json!({ "full": 3, "busy": 0, "evicted": 0 })
        );
        assert_eq!(c.json(27), serde_json::json!({ "dropped": 2 }));
        assert_eq!(c.json(2), serde_json::json!({}));
        assert_eq!(MapCounts::default().to_string(), "");
    }

    #[test]
    fn host_flags_name_runtime_maps_only() {
        let obj = corpus("globals.v4.o");
        let e = host_flags(&obj, &["nope".to_string()]).unwrap_err();
        assert!(
            matches!(&e, LoaderError::NoMap { name, .. } if name == "nope"),
            "{e}"
        );
        let data = obj
            .maps
            .iter()
            .find(|m| m.origin == bpf2ptx_compiler::program::MapOrigin::GlobalData)
            .unwrap();
        let e = host_flags(&obj, std::slice::from_ref(&data.name)).unwrap_err();
        assert!(matches!(e, LoaderError::NotPlaceable { .. }), "{e}");
    }

    #[test]
    fn printk_formats() {
        assert_eq!(
            format_printk("sm %d lane %u\n", [3, 31, 0]),
            "sm 3 lane 31\n"
        );
        assert_eq!(
            format_printk("%x %llx %5d|%%", [255, u64::MAX, 42]),
            "ff ffffffffffffffff    42|%"
        );
        assert_eq!(format_printk("[%-4d]", [7, 0, 0]), "[7   ]");
        assert_eq!(
            format_printk("%d %lld", [u64::from(u32::MAX), u64::MAX, 0]),
            "-1 -1"
        );
    }
}
