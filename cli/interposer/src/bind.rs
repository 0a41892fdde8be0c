//! One instance of every map per process and device, bound into every instrumented
//! module on that device (specs/trace.md, "Maps: one instance per process and device").
//!
//! ```text
//!  module instrumented (inject with rebind_maps, driver JIT), in the launching context
//!    ▼
//!  MapSets::current(): the set of that context (made at its first module: device from
//!    │                 cuCtxGetDevice, a stream of its own for snapshot copies)
//!    ▼
//!  DeviceSet::bind(module): per map the module holds (its descriptor or global symbol)
//!    - first module to hold it: the instance, sized from the module's own symbols
//!      (cuModuleGetGlobal's sizes: storage, hash counts block, ring counters), zeroed;
//!      a writable global-data section copied from the module (`.data`'s initial bytes,
//!      once); a ring gets a descriptor of its own (its words 6 and 7 are the ring's
//!      claim state, which every module sharing the ring must share)
//!    - every module: its layout checked against the instance's (descriptor words 0-2
//!      and 4), then descriptor words 3-5 written (storage, aux, counts or counters),
//!      the address words of arrays and hash maps (`bpf2ptx_mapaddr_<name>`, `.const`:
//!      storage, and a hash map's counts block) too, and for rings
//!      and writable global data the reference word (`bpf2ptx_mapref_<name>`) pointed
//!      at the instance
//!    ▼
//!  before any launch of the module: the code finds every map where the set put it
//!  (ptx::Options::rebind_maps: no access path takes a module address as a constant)
//! ```
//!
//! Sets are per context rather than per device because device memory allocated in one
//! context is not for another context's kernels to use; applications use one context per
//! device (the primary context: cudart, CuPy, PyTorch), so a set is a device's. A second
//! context on a device gets a set of its own, numbered (`context`) in the snapshot.
//!
//! Left per module: read-only global data (`.rodata`: every module holds the same bytes,
//! and GPU printk records point into it), the printk ring and loop-budget counters
//! (each module's read at every snapshot, [`DeviceSet::module_output`]), and the maps host programs share, which are one
//! allocation of pinned host memory for the whole process ([`crate::hostprog`]).
//!
//! **Per-thread and per-warp arrays** are sized from each launch: a launch with more
//! units (threads, or warps) than the instance has gets a new, zeroed allocation with the
//! old contents copied key by key to their places in the wider layout (slot = `(key *
//! units + unit) * stride`), and words 3 and 4 rewritten in the descriptor of every module
//! bound to it. Kernels still running read those words, so growing first waits for the
//! context's work (`cuCtxSynchronize`): a rare cost, paid when a launch is larger than
//! every one before. A smaller launch uses the storage as it is. Instances live in device
//! memory, host-placed kinds (1512, rings) included: the modules' `.sys` accesses are
//! correct there too.

use crate::driver::*;
use crate::resolve::driver_fn;
use bpf2ptx_backend::back::ptx::{
    has_map_ref, loop_budget_symbol, map_addr_symbol, map_counter_symbol, map_counts_symbol,
    map_data_symbol, map_desc_symbol, map_ref_symbol, map_symbol, PRINTK_DESC,
};
use bpf2ptx_compiler::program::{Map, MapOrigin, Object};
use bpf2ptx_loader::gpu::Dims;
use bpf2ptx_runtime::{desc, MapKind};
use std::ffi::CString;
use std::sync::{Arc, Mutex};
use thiserror::Error;

/// Why a module's maps could not be bound to the process's instance (the module then
/// runs unmodified), or a per-unit array could not grow.
#[derive(Debug, Error)]
pub enum BindError {
    /// The driver does not export a function binding needs.
    #[error("the driver lacks {0}")]
    Missing(&'static str),
    /// No context is current (or the driver cannot say which device it is on).
    #[error("no current CUDA context (CUresult {0})")]
    NoContext(CuResult),
    /// A driver call failed.
    #[error("map {map}: {what} failed (CUresult {rc})")]
    Driver {
        /// The map.
        map: String,
        /// What was asked.
        what: &'static str,
        /// The driver's answer.
        rc: CuResult,
    },
    /// A symbol the rebinding lowering defines is missing from the module.
    #[error("map {map}: the module has no {symbol} (not injected for rebinding)")]
    NoSymbol {
        /// The map.
        map: String,
        /// The symbol.
        symbol: String,
    },
    /// This module lays the map out differently from the instance made for an earlier
    /// module (same probes, same options: only a different object could).
    #[error("map {map}: descriptor word {word} is {this:#x} in this module, {instance:#x} in the process's instance")]
    Layout {
        /// The map.
        map: String,
        /// The descriptor word.
        word: usize,
        /// This module's.
        this: u64,
        /// The instance's.
        instance: u64,
    },
}

/// The driver functions binding needs, and a non-blocking stream of the set's own that
/// every copy and memset goes through (each waited for with `cuStreamSynchronize`).
/// Why not the synchronous calls: they use the legacy default stream, and a module
/// instrumented at its first launch inside a stream capture (a CUDA graph captured from a
/// blocking stream) would make the legacy stream depend on the capturing one, which the
/// driver refuses (CUresult 906) and which invalidates the application's capture.
#[derive(Debug, Clone, Copy)]
struct Fns {
    alloc: MemAlloc,
    free: MemFree,
    memset_async: MemsetD8Async,
    dtod_async: MemcpyDtoDAsync,
    htod_async: MemcpyHtoDAsync,
    dtoh_async: MemcpyDtoHAsync,
    stream_sync: StreamSynchronize,
    sync: CtxSynchronize,
    stream: Ptr,
}

// SAFETY: the stream handle is the interposer's own; the driver's stream functions may be
// called from any thread.
unsafe impl Send for Fns {}
// SAFETY: as above.
unsafe impl Sync for Fns {}

impl Fns {
    /// The functions, and a new non-blocking stream in the current context.
    fn get() -> Result<Fns, BindError> {
        let f = |n: &'static std::ffi::CStr| {
            driver_fn(n).ok_or(BindError::Missing(
                n.to_str().unwrap_or("a memory function"),
            ))
        };
        // SAFETY: each pointer is the driver's function of that name (CUDA 12.0 ABI).
        unsafe {
            let create = std::mem::transmute::<Ptr, StreamCreate>(f(c"cuStreamCreate")?);
            let mut stream: Ptr = std::ptr::null_mut();
            let rc = create(&mut stream, STREAM_NON_BLOCKING);
            if rc != SUCCESS {
                return Err(BindError::Driver {
                    map: "(all)".into(),
                    what: "creating the set's stream",
                    rc,
                });
            }
            Ok(Fns {
                alloc: std::mem::transmute::<Ptr, MemAlloc>(f(c"cuMemAlloc")?),
                free: std::mem::transmute::<Ptr, MemFree>(f(c"cuMemFree")?),
                memset_async: std::mem::transmute::<Ptr, MemsetD8Async>(f(c"cuMemsetD8Async")?),
                dtod_async: std::mem::transmute::<Ptr, MemcpyDtoDAsync>(f(c"cuMemcpyDtoDAsync")?),
                htod_async: std::mem::transmute::<Ptr, MemcpyHtoDAsync>(f(c"cuMemcpyHtoDAsync")?),
                dtoh_async: std::mem::transmute::<Ptr, MemcpyDtoHAsync>(f(c"cuMemcpyDtoHAsync")?),
                stream_sync: std::mem::transmute::<Ptr, StreamSynchronize>(f(
                    c"cuStreamSynchronize",
                )?),
                sync: std::mem::transmute::<Ptr, CtxSynchronize>(f(c"cuCtxSynchronize")?),
                stream,
            })
        }
    }

    /// `rc`, or the stream's completion when `rc` is success.
    fn done(&self, rc: CuResult) -> CuResult {
        if rc != SUCCESS {
            return rc;
        }
        // SAFETY: the set's own stream.
        unsafe { (self.stream_sync)(self.stream) }
    }

    /// Zeroes `n` bytes at device address `at`, waited for.
    ///
    /// # Safety
    /// `at..at + n` is device memory of the set's context.
    unsafe fn memset(&self, at: u64, n: usize) -> CuResult {
        self.done((self.memset_async)(at, 0, n, self.stream))
    }

    /// Copies `n` bytes from device address `src` to `dst`, waited for.
    ///
    /// # Safety
    /// Both ranges are device memory of the set's context.
    unsafe fn dtod(&self, dst: u64, src: u64, n: usize) -> CuResult {
        self.done((self.dtod_async)(dst, src, n, self.stream))
    }

    /// A zeroed device allocation of `bytes`.
    fn zeroed(&self, map: &str, bytes: u64) -> Result<u64, BindError> {
        let mut at = 0u64;
        let err = |what, rc| BindError::Driver {
            map: map.to_string(),
            what,
            rc,
        };
        // SAFETY: the driver's allocation and memset on what it returned.
        unsafe {
            let rc = (self.alloc)(&mut at, bytes.max(8) as usize);
            if rc != SUCCESS || at == 0 {
                return Err(err("allocating the instance", rc));
            }
            let rc = self.memset(at, bytes.max(8) as usize);
            if rc != SUCCESS {
                (self.free)(at);
                return Err(err("zeroing the instance", rc));
            }
        }
        Ok(at)
    }

    /// Writes `words` at device address `at`.
    fn write(
        &self,
        map: &str,
        what: &'static str,
        at: u64,
        words: &[u64],
    ) -> Result<(), BindError> {
        // SAFETY: `words.len() * 8` bytes from a live slice into device memory the module
        // or the set owns.
        let rc = unsafe {
            self.done((self.htod_async)(
                at,
                words.as_ptr().cast(),
                words.len() * 8,
                self.stream,
            ))
        };
        if rc == SUCCESS {
            Ok(())
        } else {
            Err(BindError::Driver {
                map: map.to_string(),
                what,
                rc,
            })
        }
    }

    /// The 8 words at device address `at`.
    fn read_desc(&self, map: &str, at: u64) -> Result<[u64; desc::WORDS], BindError> {
        let mut w = [0u64; desc::WORDS];
        // SAFETY: a descriptor's bytes into a live array of the same size.
        let rc = unsafe {
            self.done((self.dtoh_async)(
                w.as_mut_ptr().cast(),
                at,
                desc::BYTES as usize,
                self.stream,
            ))
        };
        if rc == SUCCESS {
            Ok(w)
        } else {
            Err(BindError::Driver {
                map: map.to_string(),
                what: "reading the module's descriptor",
                rc,
            })
        }
    }
}

/// The calling thread's stream-capture mode set to relaxed until dropped (then the old
/// one again): binding a module at its first launch, which may come inside the
/// application's stream capture, allocates and copies, which a global-mode capture
/// (cudart's default) otherwise refuses as unsafe, invalidating the capture.
pub struct RelaxedCapture {
    exchange: Option<ThreadExchangeStreamCaptureMode>,
    old: std::ffi::c_int,
}

/// [`RelaxedCapture`] now (a driver without the call: nothing to change).
pub fn relaxed_capture() -> RelaxedCapture {
    // SAFETY: the driver's function of that name.
    let exchange = driver_fn(c"cuThreadExchangeStreamCaptureMode")
        .map(|p| unsafe { std::mem::transmute::<Ptr, ThreadExchangeStreamCaptureMode>(p) });
    let mut old = STREAM_CAPTURE_MODE_RELAXED;
    if let Some(f) = exchange {
        // SAFETY: a valid in/out pointer.
        if unsafe { f(&mut old) } != SUCCESS {
            return RelaxedCapture {
                exchange: None,
                old,
            };
        }
    }
    RelaxedCapture { exchange, old }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        if let Some(f) = self.exchange {
            // SAFETY: as in relaxed_capture.
            unsafe { f(&mut self.old) };
        }
    }
}

/// Where a module global is and how large it is; `None` when the module has none.
pub type Global<'a> = dyn FnMut(&str) -> Option<(u64, usize)> + 'a;

/// One map's instance in a set.
#[derive(Debug)]
struct Instance {
    /// The descriptor words as a host loader writes them for the instance (words 3-5
    /// naming its storage, aux and counts or counters); empty for global data.
    desc: Vec<u64>,
    /// The storage (global data: the section), and its bytes.
    data: u64,
    bytes: u64,
    /// A hash map's counts block or a ring's counters, and their bytes.
    aux2: Option<(u64, u64)>,
    /// A ring's descriptor, which every module's reference word names.
    ring_desc: Option<u64>,
    /// Per-unit arrays: the descriptors bound to the instance, with their modules
    /// (growth rewrites them all), and the units the storage holds.
    bound: Vec<(Handle, u64)>,
    units: u64,
}

/// What a module's binding left for its launches.
#[derive(Debug, Clone, Default)]
pub struct Bound {
    /// The per-unit arrays the module uses (object map indices): sized before each of
    /// its launches ([`DeviceSet::before_launch`]).
    pub per_unit: Arc<[usize]>,
}

#[derive(Debug, Default)]
struct SetState {
    /// By object map index.
    maps: Vec<Option<Instance>>,
    /// The modules bound, in order: handle and label.
    modules: Vec<(Handle, String)>,
    /// Per module bound (same order), what the snapshot reads of its own.
    own: Vec<ModuleOwn>,
    /// Per-unit storage replaced while a stream was being captured, to free later.
    retired: Vec<u64>,
}

/// A read-only global-data section of a module: its address, size and initial bytes.
type RodataBase = (u64, u64, Vec<u8>);

/// What a module keeps of its own (not bound to the set) that snapshots read: its printk
/// ring and its loop-budget counters.
#[derive(Debug, Default)]
struct ModuleOwn {
    /// The printk ring's descriptor, and the read-only global data its records point
    /// into: per section its address in the module, size and initial bytes.
    printk: Option<(u64, Vec<RodataBase>)>,
    /// Per program run under a loop budget, its counter's address.
    loopcnt: Vec<(String, u64)>,
}

/// What a set's modules wrote on their own since the previous snapshot.
#[derive(Debug, Default)]
pub struct ModuleOutput {
    /// New printk lines, per module in bind order: module label and line.
    pub printk: Vec<(String, String)>,
    /// Printk records the modules' rings had no room for (so far, summed).
    pub printk_dropped: u64,
    /// Per program, the runs whose loop budget ran out (so far, summed over modules).
    pub loop_budget: Vec<(String, u64)>,
}

/// The maps of one context (a device's): one instance of each, shared by every module
/// instrumented there.
#[derive(Debug)]
pub struct DeviceSet {
    /// The device (`cuCtxGetDevice`).
    pub device: u32,
    /// The sets made for this device before this one (0 for the device's first context).
    pub context: u32,
    /// The context (a driver handle, as a key).
    pub ctx: Handle,
    fns: Fns,
    state: Mutex<SetState>,
}

impl DeviceSet {
    /// Writes `words` at device address `at` in this set's context, on the set's own
    /// stream (safe inside the application's stream capture).
    pub fn write_words(&self, map: &str, at: u64, words: &[u64]) -> Result<(), BindError> {
        self.fns
            .write(map, "binding it to the shared storage", at, words)
    }

    /// Binds the maps of instrumented module `module` (named `label`) to the set's
    /// instances (made now for the maps no earlier module held); `global` finds the
    /// module's globals. Maps of indices `skip` (shared with host programs) are left to
    /// [`crate::hostprog`].
    pub fn bind(
        &self,
        obj: &Object,
        module: Handle,
        label: &str,
        global: &mut Global<'_>,
        skip: &[usize],
    ) -> Result<Bound, BindError> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.maps.len() < obj.maps.len() {
            st.maps.resize_with(obj.maps.len(), || None);
        }
        let mut per_unit = Vec::new();
        // Instances made here stay when a later map of the module fails (other modules
        // may bind them); the failing module does not run instrumented.
        for (k, m) in obj.maps.iter().enumerate() {
            if skip.contains(&k) {
                continue;
            }
            if m.origin == MapOrigin::GlobalData {
                if has_map_ref(m) {
                    self.bind_global(m, &mut st.maps[k], global)?;
                }
                continue;
            }
            // A map the module's probes do not use has no descriptor in it.
            let Some((d, _)) = global(&map_desc_symbol(&m.name)) else {
                continue;
            };
            let words = self.fns.read_desc(&m.name, d)?;
            if st.maps[k].is_none() {
                st.maps[k] = Some(self.instance(m, words, global)?);
            }
            let inst = st.maps[k].as_mut().expect("made above");
            for w in [0, 1, 2, desc::word(desc::AUX)] {
                if m.is(MapKind::is_per_unit) && w == desc::word(desc::AUX) {
                    continue;
                }
                if words[w] != inst.desc[w] {
                    return Err(BindError::Layout {
                        map: m.name.clone(),
                        word: w,
                        this: words[w],
                        instance: inst.desc[w],
                    });
                }
            }
            let from = desc::word(desc::DATA);
            let to = desc::word(desc::AUX2);
            if m.is(MapKind::is_per_unit) {
                inst.bound.push((module, d));
                per_unit.push(k);
                if inst.units > 0 {
                    self.fns.write(
                        &m.name,
                        "binding the descriptor",
                        d + desc::DATA,
                        &[inst.data, inst.units],
                    )?;
                }
            } else {
                self.fns.write(
                    &m.name,
                    "binding the descriptor",
                    d + desc::DATA,
                    &inst.desc[from..=to],
                )?;
                // The address words (`.const`), which inlined lookups read: an array's
                // storage; a hash map's storage and counts block.
                if let Some((at, size)) = global(&map_addr_symbol(&m.name)) {
                    let words = [inst.data, inst.aux2.map_or(0, |(a, _)| a)];
                    let n = (size / 8).clamp(1, 2);
                    self.fns
                        .write(&m.name, "binding the address words", at, &words[..n])?;
                }
            }
            if let Some(ring) = inst.ring_desc {
                let r = map_ref_symbol(&m.name);
                let (at, _) = global(&r).ok_or_else(|| BindError::NoSymbol {
                    map: m.name.clone(),
                    symbol: r,
                })?;
                self.fns
                    .write(&m.name, "binding the ring's reference", at, &[ring])?;
            }
        }
        st.modules.push((module, label.to_string()));
        st.own.push(own_of(obj, global));
        Ok(Bound {
            per_unit: per_unit.into(),
        })
    }

    /// A writable global-data section: its instance (a copy of this module's initial
    /// bytes, made once), and this module's reference word pointed at it.
    fn bind_global(
        &self,
        m: &Map,
        slot: &mut Option<Instance>,
        global: &mut Global<'_>,
    ) -> Result<(), BindError> {
        let sym = map_symbol(&m.name);
        let Some((at, size)) = global(&sym) else {
            return Ok(());
        };
        let r = map_ref_symbol(&m.name);
        let (ref_at, _) = global(&r).ok_or_else(|| BindError::NoSymbol {
            map: m.name.clone(),
            symbol: r,
        })?;
        if slot.is_none() {
            let data = self.fns.zeroed(&m.name, size as u64)?;
            // SAFETY: both are device allocations of at least `size` bytes.
            let rc = unsafe { self.fns.dtod(data, at, size) };
            if rc != SUCCESS {
                return Err(BindError::Driver {
                    map: m.name.clone(),
                    what: "copying the section's initial bytes",
                    rc,
                });
            }
            *slot = Some(Instance {
                desc: Vec::new(),
                data,
                bytes: size as u64,
                aux2: None,
                ring_desc: None,
                bound: Vec::new(),
                units: 0,
            });
        }
        let data = slot.as_ref().map_or(0, |i| i.data);
        self.fns
            .write(&m.name, "binding the section's reference", ref_at, &[data])
    }

    /// A new instance of map `m`, laid out as this module's descriptor `words` and its
    /// symbols say, zeroed.
    fn instance(
        &self,
        m: &Map,
        mut words: [u64; desc::WORDS],
        global: &mut Global<'_>,
    ) -> Result<Instance, BindError> {
        let mut inst = Instance {
            desc: Vec::new(),
            data: 0,
            bytes: 0,
            aux2: None,
            ring_desc: None,
            bound: Vec::new(),
            units: 0,
        };
        if m.is(MapKind::is_per_unit) {
            // Storage comes with the first launch.
            words[desc::word(desc::DATA)] = 0;
            words[desc::word(desc::AUX)] = 0;
            inst.desc = words.to_vec();
            return Ok(inst);
        }
        let sym = map_data_symbol(&m.name);
        let (_, bytes) = global(&sym).ok_or_else(|| BindError::NoSymbol {
            map: m.name.clone(),
            symbol: sym,
        })?;
        inst.bytes = bytes as u64;
        inst.data = self.fns.zeroed(&m.name, inst.bytes)?;
        words[desc::word(desc::DATA)] = inst.data;
        // Hash maps: the counts block; rings: the counters. Word 5 names them.
        let aux2 = if m.is(MapKind::is_hash) {
            Some(map_counts_symbol(&m.name))
        } else if m.is(MapKind::is_ring) {
            Some(map_counter_symbol(&m.name))
        } else {
            None
        };
        if let Some(sym) = aux2 {
            let (_, n) = global(&sym).ok_or_else(|| BindError::NoSymbol {
                map: m.name.clone(),
                symbol: sym,
            })?;
            let at = self.fns.zeroed(&m.name, n as u64)?;
            inst.aux2 = Some((at, n as u64));
            words[desc::word(desc::AUX2)] = at;
        }
        if m.is(MapKind::is_ring) {
            // The ring's own descriptor: no drops, no claims yet (bound = producer = 0).
            words[desc::word(desc::DROPS)] = 0;
            words[desc::word(desc::BOUND)] = 0;
            let at = self.fns.zeroed(&m.name, desc::BYTES)?;
            self.fns
                .write(&m.name, "writing the ring's descriptor", at, &words)?;
            inst.ring_desc = Some(at);
        }
        inst.desc = words.to_vec();
        Ok(inst)
    }

    /// Writes every word of a shared map's host copy (`words` of them, `word(i)` each)
    /// into map `k`'s instance, each with `cuStreamWriteValue64` on `stream`: ordered
    /// before the launch that follows on that stream, with the value taken now, so a later
    /// host write cannot reach an earlier launch. Every word, not the changed ones: a
    /// word another stream wrote may not have landed yet when this stream's kernel runs,
    /// so only this stream's own writes order this launch (a pushed map is small,
    /// `bpf2ptx::host::PUSH_MAX_WORDS`). Why not one copy: a copy from pinned memory reads
    /// its source when the stream gets to it, and a stream write costs the launch less
    /// than a copy engine's start. Nothing when no module of this set uses the map yet.
    pub(crate) fn push(
        &self,
        k: usize,
        map: &str,
        words: usize,
        word: &dyn Fn(usize) -> u64,
        stream: Ptr,
        write: StreamWriteValue64,
    ) -> Result<(), BindError> {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(inst) = st.maps.get(k).and_then(Option::as_ref) else {
            return Ok(());
        };
        for i in 0..words.min((inst.bytes / 8) as usize) {
            // SAFETY: the driver's function; word `i` of the instance's storage, a live
            // allocation of this set's context; the application's stream handle.
            let rc = unsafe { write(stream, inst.data + 8 * i as u64, word(i), 0) };
            if rc != SUCCESS {
                return Err(BindError::Driver {
                    map: map.to_string(),
                    what: "writing a host program's value for the GPU",
                    rc,
                });
            }
        }
        Ok(())
    }

    /// Makes the per-unit arrays `maps` hold at least the units of `dims` before a
    /// launch, moving each grown instance and rebinding every module bound to it.
    pub fn before_launch(
        &self,
        obj: &Object,
        maps: &[usize],
        dims: Dims,
        capturing: &dyn Fn() -> bool,
    ) -> Result<(), BindError> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *guard;
        let mut synced = false;
        // Set at the first growth: whether the launch is being captured into a graph.
        let mut capture: Option<(bool, RelaxedCapture)> = None;
        for &k in maps {
            let m = &obj.maps[k];
            let Some(inst) = st.maps.get_mut(k).and_then(Option::as_mut) else {
                continue;
            };
            let units = if m.kind().map(MapKind::layout) == Some(MapKind::PerWarpArray) {
                dims.warps()
            } else {
                dims.threads()
            };
            if units <= inst.units {
                continue;
            }
            let f = self.fns;
            let (in_capture, _) = capture.get_or_insert_with(|| (capturing(), relaxed_capture()));
            let in_capture = *in_capture;
            if !synced && !in_capture {
                // SAFETY: the driver's cuCtxSynchronize in the launching context.
                unsafe { (f.sync)() };
                synced = true;
                // Storage retired during captures: no kernel runs with it any more.
                for old in st.retired.drain(..) {
                    // SAFETY: allocations of this set that no descriptor names.
                    unsafe { (f.free)(old) };
                }
            }
            let entries = u64::from(m.max_entries);
            let stride = bpf2ptx_runtime::maps::round8(u64::from(m.value_size));
            let new = f.zeroed(&m.name, entries * units * stride)?;
            if inst.data != 0 {
                let old_row = inst.units * stride;
                for key in 0..entries {
                    // SAFETY: rows within both allocations (the new one is wider).
                    let rc = unsafe {
                        f.dtod(
                            new + key * units * stride,
                            inst.data + key * old_row,
                            old_row as usize,
                        )
                    };
                    if rc != SUCCESS {
                        // SAFETY: the allocation made above, used by no one yet.
                        unsafe { (f.free)(new) };
                        return Err(BindError::Driver {
                            map: m.name.clone(),
                            what: "moving the contents",
                            rc,
                        });
                    }
                }
            }
            for &(_, d) in &inst.bound {
                f.write(
                    &m.name,
                    "rebinding the descriptor",
                    d + desc::DATA,
                    &[new, units],
                )?;
            }
            if inst.data != 0 && in_capture {
                // Inside a stream capture the context cannot be synchronised, so kernels
                // of other streams may still run with the old storage: freed at the next
                // growth outside a capture, after its synchronisation.
                st.retired.push(inst.data);
            } else if inst.data != 0 {
                // SAFETY: the old storage, which no descriptor names any more and no
                // kernel runs with (synchronised above).
                unsafe { (f.free)(inst.data) };
            }
            inst.data = new;
            inst.units = units;
            inst.bytes = entries * units * stride;
            inst.desc[desc::word(desc::DATA)] = new;
            inst.desc[desc::word(desc::AUX)] = units;
        }
        Ok(())
    }

    /// The set's maps as the snapshot holds them: per instance the descriptor words (a
    /// ring's read back from its descriptor: drops and bound change), the storage, and a
    /// hash map's counts block or a ring's counters, in the object's map order, except
    /// the maps of indices `skip`. `copy` reads device memory.
    pub fn raw_maps(
        &self,
        obj: &Object,
        skip: &[usize],
        copy: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
    ) -> (Vec<String>, Vec<bpf2ptx::trace::wire::RawMap>) {
        use bpf2ptx::trace::wire::{hex, RawMap};
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (k, inst) in st.maps.iter().enumerate() {
            let (Some(inst), Some(m)) = (inst, obj.maps.get(k)) else {
                continue;
            };
            if skip.contains(&k) {
                continue;
            }
            let desc = match inst.ring_desc {
                Some(at) => copy(at, desc::BYTES as usize)
                    .map(|b| {
                        b.chunks_exact(8)
                            .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                            .collect()
                    })
                    .unwrap_or_else(|| inst.desc.clone()),
                None => inst.desc.clone(),
            };
            let data = (inst.data != 0 && inst.bytes > 0)
                .then(|| copy(inst.data, inst.bytes as usize))
                .flatten();
            let aux2 = inst
                .aux2
                .and_then(|(at, n)| copy(at, n as usize))
                .map(|b| hex(&b));
            let (counts, counters) = if m.is(MapKind::is_ring) {
                (None, aux2)
            } else {
                (aux2, None)
            };
            out.push(RawMap {
                name: m.name.clone(),
                desc,
                data: data.map(|d| hex(&d)).unwrap_or_default(),
                counts,
                counters,
            });
        }
        (st.modules.iter().map(|m| m.1.clone()).collect(), out)
    }

    /// The printk lines the set's modules wrote since the last call (their rings read
    /// and consumed), the rings' drops and the loop-budget counters summed per program.
    /// `copy` reads device memory.
    pub fn module_output(&self, copy: &dyn Fn(u64, usize) -> Option<Vec<u8>>) -> ModuleOutput {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = ModuleOutput::default();
        for ((_, label), own) in st.modules.iter().zip(&st.own) {
            if let Some((d, bases)) = &own.printk {
                let Some(words) = copy(*d, desc::BYTES as usize) else {
                    continue;
                };
                out.printk_dropped += desc::read(&words, desc::DROPS);
                for rec in self.read_ring(&words, copy) {
                    out.printk.push((
                        label.clone(),
                        bpf2ptx_loader::loader::printk_line(&rec.data, bases),
                    ));
                }
            }
            for (prog, at) in &own.loopcnt {
                let n = copy(*at, 8).map_or(0, |b| {
                    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
                });
                match out.loop_budget.iter_mut().find(|p| &p.0 == prog) {
                    Some(p) => p.1 += n,
                    None => out.loop_budget.push((prog.clone(), n)),
                }
            }
        }
        out
    }

    /// The committed records of the ring of descriptor `words`, consumed: their bytes
    /// zeroed and the consumer counter moved past them, as `bpf2ptx run` reads a ring.
    fn read_ring(
        &self,
        words: &[u8],
        copy: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
    ) -> Vec<bpf2ptx_runtime::ringbuf::Record> {
        let (data, size, ctr) = (
            desc::read(words, desc::DATA),
            desc::read(words, desc::AUX),
            desc::read(words, desc::AUX2),
        );
        if data == 0 || ctr == 0 || size == 0 {
            return Vec::new();
        }
        let (Some(ring), Some(c)) = (copy(data, size as usize), copy(ctr, 16)) else {
            return Vec::new();
        };
        let w = |k: usize| u64::from_le_bytes(c[k * 8..k * 8 + 8].try_into().expect("8 bytes"));
        let Ok(d) = bpf2ptx_runtime::ringbuf::decode(&ring, w(0), w(1)) else {
            return Vec::new();
        };
        let mut at = w(1);
        while at < d.consumer {
            let off = at % size;
            let n = (d.consumer - at).min(size - off);
            // SAFETY: bytes within the module's ring.
            unsafe { self.fns.memset(data + off, n as usize) };
            at += n;
        }
        if self
            .fns
            .write("printk", "advancing the consumer", ctr + 8, &[d.consumer])
            .is_err()
        {
            return Vec::new();
        }
        d.records
    }

    /// Module `module` was unloaded: its descriptors are gone, and growth must not write
    /// them any more.
    fn forget(&self, module: Handle) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = &mut *st;
        let mut own = std::mem::take(&mut st.own).into_iter();
        st.own = st
            .modules
            .iter()
            .filter_map(|m| own.next().filter(|_| m.0 != module))
            .collect();
        st.modules.retain(|m| m.0 != module);
        for inst in st.maps.iter_mut().flatten() {
            inst.bound.retain(|b| b.0 != module);
        }
    }
}

/// Where module `global`'s printk ring (when `obj`'s programs print) and loop-budget
/// counters are.
fn own_of(obj: &Object, global: &mut Global<'_>) -> ModuleOwn {
    let printk = if bpf2ptx_loader::loader::prints(obj) {
        global(PRINTK_DESC).map(|(d, _)| {
            let bases = obj
                .maps
                .iter()
                .filter(|m| m.origin == MapOrigin::GlobalData && !has_map_ref(m))
                .filter_map(|m| {
                    let (p, size) = global(&map_symbol(&m.name))?;
                    Some((p, size as u64, m.init.clone()?))
                })
                .collect();
            (d, bases)
        })
    } else {
        None
    };
    let loopcnt = obj
        .programs
        .iter()
        .filter_map(|p| Some((p.name.clone(), global(&loop_budget_symbol(p))?.0)))
        .collect();
    ModuleOwn { printk, loopcnt }
}

/// The process's map sets, one per context that instrumented modules were loaded in.
#[derive(Debug, Default)]
pub struct MapSets {
    sets: Mutex<Vec<Arc<DeviceSet>>>,
}

impl MapSets {
    /// The set of the current context, made now if this is its first module.
    pub fn current(&self) -> Result<Arc<DeviceSet>, BindError> {
        let get = |n: &'static std::ffi::CStr| {
            driver_fn(n).ok_or(BindError::Missing(n.to_str().unwrap_or("?")))
        };
        // SAFETY: the driver's functions of those names (CUDA 12.0 ABI).
        let (cur, dev) = unsafe {
            (
                std::mem::transmute::<Ptr, CtxGetCurrent>(get(c"cuCtxGetCurrent")?),
                std::mem::transmute::<Ptr, CtxGetDevice>(get(c"cuCtxGetDevice")?),
            )
        };
        let mut ctx: Ptr = std::ptr::null_mut();
        // SAFETY: a valid out pointer.
        let rc = unsafe { cur(&mut ctx) };
        if rc != SUCCESS || ctx.is_null() {
            return Err(BindError::NoContext(rc));
        }
        let mut sets = self.sets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = sets.iter().find(|s| s.ctx == ctx as Handle) {
            return Ok(s.clone());
        }
        let mut device = 0;
        // SAFETY: a valid out pointer; the context is current.
        let rc = unsafe { dev(&mut device) };
        if rc != SUCCESS || device < 0 {
            return Err(BindError::NoContext(rc));
        }
        let device = device as u32;
        let set = Arc::new(DeviceSet {
            device,
            context: sets.iter().filter(|s| s.device == device).count() as u32,
            ctx: ctx as Handle,
            fns: Fns::get()?,
            state: Mutex::default(),
        });
        sets.push(set.clone());
        Ok(set)
    }

    /// Module (or library) `module` is being unloaded: no set writes into it again.
    pub fn unloaded(&self, module: Handle) {
        for set in self.all() {
            set.forget(module);
        }
    }

    /// Every set, in the order they were made.
    pub fn all(&self) -> Vec<Arc<DeviceSet>> {
        self.sets.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The address and size of global `name` of module or library `h`.
pub fn global_symbol(h: Handle, library: bool, name: &str) -> Option<(u64, usize)> {
    let c = CString::new(name).ok()?;
    let (mut addr, mut size) = (0u64, 0usize);
    // SAFETY: the driver's functions on a handle it returned, valid out pointers.
    let rc = unsafe {
        if library {
            let f = std::mem::transmute::<Ptr, LibraryGetGlobal>(driver_fn(c"cuLibraryGetGlobal")?);
            f(&mut addr, &mut size, h as Ptr, c.as_ptr())
        } else {
            let f = std::mem::transmute::<Ptr, ModuleGetGlobal>(driver_fn(c"cuModuleGetGlobal")?);
            f(&mut addr, &mut size, h as Ptr, c.as_ptr())
        }
    };
    (rc == SUCCESS && addr != 0).then_some((addr, size))
}

/// The address of global `name` of module or library `h`.
pub fn global_address(h: Handle, library: bool, name: &str) -> Option<u64> {
    global_symbol(h, library, name).map(|(a, _)| a)
}
