//! The host loader: binds a module's maps in their placement, launches kernels, drains
//! rings in host memory while a kernel runs, and reads every map back, printed the way
//! `bpftool map dump` prints maps.
//!
//! ```text
//!  Object (the probe's maps) + Module (PTX with the probe: bpf2ptx's own, or injected)
//!    │ Loader::new      descriptors found by symbol; host-placed maps moved to pinned
//!    │                  mapped memory (descriptor words 3 and 5 rewritten)
//!    ▼
//!  Loader::launch(kernel, dims, params)   per-thread arrays sized from dims, then
//!    │                  Gpu::start; a host thread drains host-placed rings until the
//!    │                  kernel ends (records kept, consumer advanced, so the ring never
//!    │                  fills while the host keeps up)
//!    ▼
//!  Loader::maps_json / records / printk   maps read back (sharded arrays summed)
//! ```
//!
//! The layouts are specs/abi.md's ("Maps (device runtime)"). A module whose maps are
//! placed in host memory must have been compiled with the same placement
//! ([`host_flags`] gives the backend's `Options::host`): its atomics then have `.sys`
//! scope, which a host reading or draining that memory while the kernel runs needs.
//!
//! The loader works on any module holding the probe's symbols, so it serves an
//! application kernel with a probe injected just as well as bpf2ptx's own
//! `bpf2ptx_entry_*` kernels ([`Loader::run_entry`]):
//!
//! ```no_run
//! use bpf2ptx::gpu::{Dims, Gpu, Param};
//! use bpf2ptx::loader::{host_flags, Loader};
//! use bpf2ptx_compiler::back::ptx;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let obj = bpf2ptx::load_path("probe.bpf.o".as_ref())?;
//! let host = vec!["events".to_string()]; // drain this ring while the kernel runs
//! let opts = ptx::Options {
//!     target: "sm_90".into(),
//!     host: host_flags(&obj, &host)?,
//!     ..Default::default()
//! };
//! let probe_ptx = bpf2ptx::compile::compile(&obj, &opts)?;
//! // ... merge `probe_ptx` into the application's PTX (`bpf2ptx inject`) ...
//! # let app_ptx = probe_ptx;
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

use crate::gpu::{Buffer, Dims, Gpu, GpuError, HostBuffer, Module, Param};
use bpf2ptx_compiler::back::ptx::{
    entry_symbol, map_counter_symbol, map_data_symbol, map_desc_symbol, map_symbol, PRINTK_DESC,
};
use bpf2ptx_compiler::program::{map_type_name, MapOrigin, Object};
use bpf2ptx_runtime::ringbuf::{self, Record, RingError};
use serde_json::{json, Value};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use thiserror::Error;

/// Where a map's storage lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Device memory (the default): fastest for the probe.
    Device,
    /// Pinned host memory mapped into the GPU: the host reads it while the kernel runs,
    /// and drains rings placed there (the module needs `.sys` atomics: [`host_flags`]).
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

/// The host's side of a ring: its records so far and, for a ring in host memory, where
/// the host reads it directly.
#[derive(Default)]
struct RingState {
    /// Records read so far, in order.
    records: Vec<Record>,
    /// A ring that could not be decoded (a producer bug): reading stopped there.
    error: Option<RingError>,
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
    /// A ring's counters the loader allocated (host placement).
    counters: Option<HostBuffer>,
    /// Threads the per-thread storage is sized for.
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
}

fn word(desc: &[u8], k: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(b) = desc.get(8 * k..8 * k + 8) {
        w.copy_from_slice(b);
    }
    u64::from_le_bytes(w)
}

fn is_ring(map_type: u32) -> bool {
    matches!(map_type, 27 | 1527 | 4)
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
                counters: None,
                threads: 0,
                ring: RingState::default(),
            };
            if placement == Placement::Host && m.map_type != 1502 {
                if let Some((_, size)) = gpu.global(module, &map_data_symbol(&m.name))? {
                    let h = gpu.alloc_host(size)?;
                    gpu.write(desc + 24, &h.device_ptr().to_le_bytes())?;
                    b.data = Some(Storage::Host(h));
                }
                // A ring's counters move with it: the host advances the consumer.
                if is_ring(m.map_type) {
                    if let Some((_, size)) = gpu.global(module, &map_counter_symbol(&m.name))? {
                        let c = gpu.alloc_host(size)?;
                        gpu.write(desc + 40, &c.device_ptr().to_le_bytes())?;
                        b.counters = Some(c);
                    }
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
        })
    }

    /// Whether [`Loader::launch`] drains host-placed rings while the kernel runs (the
    /// default). Off, they are read only after the kernel, as device rings are: a ring
    /// smaller than what the kernel writes then drops the rest.
    pub fn set_live_drain(&mut self, on: bool) {
        self.live_drain = on;
    }

    /// Sizes per-thread arrays for `threads` (a new, zeroed allocation when the count
    /// changes) and writes their descriptors.
    fn bind_per_thread(&mut self, threads: u64) -> Result<(), LoaderError> {
        for b in &mut self.maps {
            let m = &self.obj.maps[b.index];
            if m.map_type != 1502 || (b.data.is_some() && b.threads == threads) {
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
            self.gpu.write(b.desc + 32, &threads.to_le_bytes())?;
            self.gpu.write(b.desc + 24, &ptr.to_le_bytes())?;
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
        self.bind_per_thread(dims.threads())?;
        let mut live: Vec<(LiveRing, &mut RingState)> = Vec::new();
        for b in &mut self.maps {
            if let (Some(Storage::Host(data)), Some(ctr)) = (&b.data, &b.counters) {
                live.push((LiveRing::new(data, ctr), &mut b.ring));
            }
        }
        let gpu = self.gpu;
        let (module, drain) = (self.module, self.live_drain && !live.is_empty());
        let stop = AtomicBool::new(false);
        let (kernel_ms, drained) = std::thread::scope(|s| {
            let pending = gpu.start(module, kernel, dims, params)?;
            let drainer = drain.then(|| {
                let live = &mut live;
                let stop = &stop;
                s.spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Acquire) {
                        let got: u64 = live.iter_mut().map(|(r, st)| r.drain(st)).sum();
                        n += got;
                        if got == 0 {
                            std::thread::yield_now();
                        }
                    }
                    n
                })
            });
            let waited = pending.wait();
            stop.store(true, Ordering::Release);
            let drained = drainer.map_or(0, |h| h.join().unwrap_or(0));
            waited.map(|ms| (ms, drained))
        })?;
        // The kernel has ended: what is left in host rings is committed.
        let drained_after = live.iter_mut().map(|(r, st)| r.drain(st)).sum();
        Ok(LaunchReport {
            kernel_ms,
            drained,
            drained_after,
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
            self.obj.maps[b.index].name == name && is_ring(self.obj.maps[b.index].map_type)
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
        let desc = self.gpu.read(b.desc, 64)?;
        collect(self.gpu, &desc, &mut b.ring)?;
        Ok(())
    }

    /// The `drops` word of map `name`'s descriptor: records a full ring dropped, inserts a
    /// full hash map refused. `None` when the module has no such map.
    pub fn drops(&self, name: &str) -> Result<Option<u64>, LoaderError> {
        for b in &self.maps {
            if self.obj.maps[b.index].name == name {
                return Ok(Some(word(&self.gpu.read(b.desc, 64)?, 6)));
            }
        }
        Ok(None)
    }

    /// Every map of the object as JSON: name, type, sizes, placement and its entries
    /// (`key`/`value` as hex byte strings, as bpftool prints them). Sharded arrays are
    /// summed over their replicas. Per-thread arrays of more than 1024 threads print, per
    /// key, the sum of the values' first 8 bytes instead of every thread's value. Rings
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
        let desc = gpu.read(self.maps[k].desc, 64)?;
        let (data, aux, aux2, drops) = (
            word(&desc, 3),
            word(&desc, 4),
            word(&desc, 5),
            word(&desc, 6),
        );
        if self.maps[k].placement == Placement::Host {
            out["placement"] = json!("host");
        }
        out["drops"] = json!(drops);
        if data == 0 {
            out["note"] = json!("not bound");
            return Ok(out);
        }
        let n = m.max_entries as usize;
        let mut entries = Vec::new();
        match m.map_type {
            2 | 6 | 1503 => {
                // A sharded array (aux = replicas) is summed replica by replica, per
                // 64-bit word: the device only ever added to it.
                // Replica r starts at r * aux2 (whole 128-byte lines, specs/abi.md).
                let replicas = (aux as usize).max(1);
                let replica = if aux > 0 { aux2 as usize } else { n * stride };
                let bytes = gpu.read(data, replica * (replicas - 1) + n * stride)?;
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
            1502 => {
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
                                .map(|t| json!({ "thread": t, "value": hex(slot(t)) }))
                                .collect(),
                        );
                    } else {
                        let sum = (0..threads)
                            .map(|t| word(&pad8(slot(t)), 0))
                            .fold(0u64, u64::wrapping_add);
                        e["threads"] = json!(threads);
                        e["sum_u64"] = json!(sum);
                    }
                    entries.push(e);
                }
            }
            1 | 1501 => {
                let key8 = (m.key_size as usize).div_ceil(8) * 8;
                let slot = 8 + key8 + stride;
                let bytes = gpu.read(data, aux as usize * slot)?;
                for s in bytes.chunks_exact(slot) {
                    if word(s, 0) as u32 == bpf2ptx_runtime::maps::SLOT_FULL {
                        let key = &s[8..8 + m.key_size as usize];
                        let value = &s[8 + key8..8 + key8 + m.value_size as usize];
                        entries.push(json!({ "key": hex(key), "value": hex(value) }));
                    }
                }
            }
            t if is_ring(t) => {
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
                let ctr = gpu.read(word(&desc, 5), 16)?;
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
        let Some((d, _)) = gpu.global(module, PRINTK_DESC)? else {
            return Ok(Vec::new());
        };
        let mut st = RingState::default();
        collect(gpu, &gpu.read(d, 64)?, &mut st)?;
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
fn collect(gpu: &Gpu, desc: &[u8], st: &mut RingState) -> Result<(), GpuError> {
    let (data, aux, ctr) = (word(desc, 3), word(desc, 4), word(desc, 5));
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

/// A ring in pinned host memory, read by the host directly while producers run.
struct LiveRing {
    data: *mut u8,
    size: u64,
    counters: *const AtomicU64,
}

// SAFETY: the pointers are into `HostBuffer`s the loader owns and keeps alive for every
// use (the drain thread is scoped inside `Loader::launch`, which borrows the loader).
unsafe impl Send for LiveRing {}

impl LiveRing {
    fn new(data: &HostBuffer, counters: &HostBuffer) -> LiveRing {
        let bytes = data.bytes();
        LiveRing {
            data: bytes.as_ptr().cast_mut(),
            // The compiler sizes rings as powers of two; a ring of another size (a
            // different module) is read as its largest power-of-two prefix's worth
            // of bytes, and decoding errors out where that matters.
            size: if bytes.len().is_power_of_two() {
                bytes.len() as u64
            } else {
                0
            },
            counters: counters.bytes().as_ptr().cast(),
        }
    }

    /// One pass: takes the committed records between consumer and producer, zeroes their
    /// bytes, publishes the new consumer; returns how many records it took. The protocol
    /// (ringbuf.rs, "What a reader can rely on") with `.sys`-scope producers: a header is
    /// read with acquire semantics (its flags are released by `submit`), the consumed
    /// bytes are zeroed before the consumer is released.
    fn drain(&mut self, st: &mut RingState) -> u64 {
        if self.size < 16 || st.error.is_some() {
            return 0;
        }
        // SAFETY: `counters` points to two 8-aligned u64 in a live host allocation.
        let (prod_ctr, cons_ctr) = unsafe { (&*self.counters, &*self.counters.add(1)) };
        let producer = prod_ctr.load(Ordering::Acquire);
        let consumer = cons_ctr.load(Ordering::Relaxed);
        if producer == consumer {
            return 0;
        }
        if consumer > producer || producer - consumer > self.size || (producer | consumer) % 8 != 0
        {
            st.error = Some(RingError::Positions { producer, consumer });
            return 0;
        }
        let mut pos = consumer;
        let mut taken = 0;
        while pos < producer {
            let off = pos % self.size;
            // SAFETY: `off` is 8-aligned and below `size`, so the header is in the ring.
            let header = unsafe { &*(self.data.add(off as usize) as *const AtomicU64) };
            let h = header.load(Ordering::Acquire);
            let (len, flags) = (h as u32, (h >> 32) as u32);
            if flags & ringbuf::BUSY != 0 || h == 0 {
                break;
            }
            let total = ringbuf::record_size(u64::from(len));
            let bad = if flags & !ringbuf::DISCARD != 0 {
                Some(RingError::Flags { offset: pos, flags })
            } else if off + total > self.size {
                Some(RingError::Wraps { offset: pos, len })
            } else if total > producer - pos {
                Some(RingError::PastProducer { offset: pos, len })
            } else {
                None
            };
            if let Some(e) = bad {
                st.error = Some(e);
                break;
            }
            if flags == 0 {
                let mut data = vec![0u8; len as usize];
                // SAFETY: the record lies inside the ring (checked above); its bytes were
                // released before the flags we acquired.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        self.data.add((off + ringbuf::HEADER_SIZE) as usize),
                        data.as_mut_ptr(),
                        len as usize,
                    );
                }
                st.records.push(Record { offset: pos, data });
                taken += 1;
            }
            pos += total;
        }
        if pos > consumer {
            // Zero what was consumed (a header reserved there later must read as "not
            // yet written"), then release the consumer.
            let mut at = consumer;
            while at < pos {
                let off = at % self.size;
                let n = (pos - at).min(self.size - off);
                // SAFETY: `off + n <= size`, inside the ring.
                unsafe { std::ptr::write_bytes(self.data.add(off as usize), 0, n as usize) };
                at += n;
            }
            fence(Ordering::Release);
            cons_ctr.store(pos, Ordering::Release);
        }
        taken
    }
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
    use super::{format_printk, host_flags, LoaderError};
    use bpf2ptx_compiler::back::ptx;

    fn corpus(name: &str) -> bpf2ptx_compiler::program::Object {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        crate::load_path(&root.join("tests/corpus/obj").join(name)).unwrap()
    }

    #[test]
    fn host_placement_compiles_sys_scope_atomics() {
        let obj = corpus("rt_rings.v3.o");
        let compile = |host: &[String]| {
            let opts = ptx::Options {
                target: "sm_90".into(),
                entry: true,
                host: host_flags(&obj, host).unwrap(),
                ..Default::default()
            };
            crate::compile::compile(&obj, &opts).unwrap()
        };
        let device = compile(&[]);
        assert!(device.contains("atom.acq_rel.gpu.add.u64") && !device.contains(".sys."));
        let host = compile(&["rb".to_string()]);
        assert!(host.contains("atom.acq_rel.sys.add.u64") && !host.contains(".gpu."));
        // The program's own atomics (`fails` counters) follow: `red.sys.global`.
        assert!(host.contains("red.sys.global.add.u64"), "{host}");
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
