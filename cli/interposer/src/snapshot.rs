//! Map snapshots: the raw bytes of every map of every instrumented module, copied from
//! the device while the application runs and written to the session's `snapshot.json`
//! for the front end, which decodes and prints them.
//!
//! A snapshot is taken every `interval_ms` (the config's; none when 0) by a thread of the
//! interposer's own, with copies on a non-blocking stream of its own (the application's
//! streams are neither waited for nor ordered with), and once more at exit (`final`: the
//! process ran `exit`, after the last kernel finished). An application that crashes keeps
//! the last periodic one. Each is written to `snapshot.json.tmp` and renamed, so the front
//! end never reads half a snapshot.
//!
//! What is copied per map is what specs/abi.md gives a host loader: the descriptor (8
//! words), the storage (`bpf2ptx_mapdata_`), a hash map's counts block (`bpf2ptx_mapcnt_`)
//! and a ring's counters (`bpf2ptx_mapctr_`), each as long as the module's symbol, and
//! global data (`.bss`, `.data`, `.rodata`) whole. The symbols' names come from the
//! backend ([`bpf2ptx_backend::back::ptx`]), their one home.

use crate::driver::*;
use crate::resolve::driver_fn;
pub use bpf2ptx::trace::wire::{
    hex, read, unhex, write, ModuleMaps, RawMap, RawSnapshot as Snapshot,
};
use bpf2ptx_backend::back::ptx::{
    map_counter_symbol, map_counts_symbol, map_data_symbol, map_desc_symbol, map_symbol,
};
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_runtime::{desc, MapKind};
use std::ffi::CString;

/// How the copier reads a module's globals from the device.
#[derive(Debug, Clone, Copy)]
pub struct Reader {
    get_module_global: ModuleGetGlobal,
    get_library_global: LibraryGetGlobal,
    copy: MemcpyDtoHAsync,
    sync: StreamSynchronize,
    stream: Ptr,
}

// SAFETY: the stream handle is the interposer's own, used under the session's lock.
unsafe impl Send for Reader {}

impl Reader {
    /// The driver functions and a non-blocking stream of the interposer's own, made in
    /// the current context.
    pub fn new() -> Option<Reader> {
        let f = |n: &std::ffi::CStr| driver_fn(n);
        // SAFETY: each pointer is the driver's function of that name and ABI (12.0).
        unsafe {
            let create = std::mem::transmute::<Ptr, StreamCreate>(f(c"cuStreamCreate")?);
            let mut stream: Ptr = std::ptr::null_mut();
            if create(&mut stream, STREAM_NON_BLOCKING) != SUCCESS {
                return None;
            }
            Some(Reader {
                get_module_global: std::mem::transmute::<Ptr, ModuleGetGlobal>(f(
                    c"cuModuleGetGlobal",
                )?),
                get_library_global: std::mem::transmute::<Ptr, LibraryGetGlobal>(f(
                    c"cuLibraryGetGlobal",
                )?),
                copy: std::mem::transmute::<Ptr, MemcpyDtoHAsync>(f(c"cuMemcpyDtoHAsync")?),
                sync: std::mem::transmute::<Ptr, StreamSynchronize>(f(c"cuStreamSynchronize")?),
                stream,
            })
        }
    }

    /// The bytes of global `name` of module or library `h`; `None` when it has none.
    fn global(&self, h: Handle, library: bool, name: &str) -> Option<Vec<u8>> {
        let c = CString::new(name).ok()?;
        let (mut addr, mut size) = (0u64, 0usize);
        // SAFETY: driver calls on a handle it returned, with valid out pointers; the
        // copy's destination has `size` bytes and is waited for before it is read.
        unsafe {
            let rc = if library {
                (self.get_library_global)(&mut addr, &mut size, h as Ptr, c.as_ptr())
            } else {
                (self.get_module_global)(&mut addr, &mut size, h as Ptr, c.as_ptr())
            };
            if rc != SUCCESS || size == 0 {
                return None;
            }
        }
        self.copy(addr, size)
    }

    /// `size` bytes of device memory at `addr`.
    fn copy(&self, addr: u64, size: usize) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; size];
        // SAFETY: the destination has `size` bytes and is waited for before it is read;
        // `addr` is a module global's or a storage word the interposer bound.
        unsafe {
            if (self.copy)(buf.as_mut_ptr().cast(), addr, size, self.stream) != SUCCESS
                || (self.sync)(self.stream) != SUCCESS
            {
                return None;
            }
        }
        Some(buf)
    }

    /// The maps of `obj` in the instrumented module `h`, but those of indices `skip`
    /// (maps shared through pinned host memory, which the snapshot holds once).
    pub fn module_maps(
        &self,
        label: &str,
        h: Handle,
        library: bool,
        obj: &Object,
        skip: &[usize],
    ) -> ModuleMaps {
        let mut maps = Vec::new();
        for (k, m) in obj.maps.iter().enumerate() {
            if skip.contains(&k) {
                continue;
            }
            if m.origin == MapOrigin::GlobalData {
                if let Some(data) = self.global(h, library, &map_symbol(&m.name)) {
                    maps.push(RawMap {
                        name: m.name.clone(),
                        desc: Vec::new(),
                        data: hex(&data),
                        counts: None,
                        counters: None,
                    });
                }
                continue;
            }
            let Some(desc) = self.global(h, library, &map_desc_symbol(&m.name)) else {
                continue;
            };
            let words: Vec<u64> = desc
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
                .collect();
            // Per-unit arrays have no module storage: their bytes are where word 3 points,
            // `max_entries x units (word 4) x stride` of them.
            let data = if m.is(MapKind::is_per_unit) {
                let word = |o| words.get(desc::word(o)).copied().unwrap_or(0);
                let stride = u64::from(m.value_size).div_ceil(8) * 8;
                let bytes = u64::from(m.max_entries) * word(desc::AUX) * stride;
                (word(desc::DATA) != 0 && bytes > 0)
                    .then(|| self.copy(word(desc::DATA), bytes as usize))
                    .flatten()
            } else {
                self.global(h, library, &map_data_symbol(&m.name))
            };
            maps.push(RawMap {
                name: m.name.clone(),
                desc: words,
                data: data.map(|d| hex(&d)).unwrap_or_default(),
                counts: self
                    .global(h, library, &map_counts_symbol(&m.name))
                    .map(|d| hex(&d)),
                counters: self
                    .global(h, library, &map_counter_symbol(&m.name))
                    .map(|d| hex(&d)),
            });
        }
        ModuleMaps {
            label: label.to_string(),
            maps,
        }
    }
}
