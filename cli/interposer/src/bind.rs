//! Per-thread and per-warp arrays, sized from each launch (specs/abi.md, "Storage
//! layouts"): the module reserves no storage for them, so the interposer does what a host
//! loader does before a launch, for every instrumented function that uses one.
//!
//! Storage only grows: a launch with more units (threads, or warps) than the storage has
//! gets a new, zeroed allocation with the old contents copied key by key to their places
//! in the wider layout (slot = `(key * units + unit) * stride`), and the descriptor's words
//! 3 and 4 rewritten. Kernels still running read those words while they run, so growing
//! first waits for the context's work (`cuCtxSynchronize`): a rare cost, paid when a
//! launch is larger than every one before. A smaller launch uses the storage as it is
//! (units past its own are left alone). This version places every such array in device
//! memory, host-placed kinds (1512) included: the module's `.sys` accesses are correct
//! there too.

use crate::driver::*;
use crate::resolve::driver_fn;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::gpu::Dims;
use bpf2ptx_runtime::{desc, MapKind};
use std::ffi::CString;

/// The driver functions binding needs.
#[derive(Debug, Clone, Copy)]
struct Fns {
    alloc: MemAlloc,
    free: MemFree,
    memset: MemsetD8,
    dtod: MemcpyDtoD,
    htod: MemcpyHtoD,
    sync: CtxSynchronize,
}

impl Fns {
    fn get() -> Option<Fns> {
        // SAFETY: each pointer is the driver's function of that name (CUDA 12.0 ABI).
        unsafe {
            Some(Fns {
                alloc: std::mem::transmute::<Ptr, MemAlloc>(driver_fn(c"cuMemAlloc")?),
                free: std::mem::transmute::<Ptr, MemFree>(driver_fn(c"cuMemFree")?),
                memset: std::mem::transmute::<Ptr, MemsetD8>(driver_fn(c"cuMemsetD8")?),
                dtod: std::mem::transmute::<Ptr, MemcpyDtoD>(driver_fn(c"cuMemcpyDtoD")?),
                htod: std::mem::transmute::<Ptr, MemcpyHtoD>(driver_fn(c"cuMemcpyHtoD")?),
                sync: std::mem::transmute::<Ptr, CtxSynchronize>(driver_fn(c"cuCtxSynchronize")?),
            })
        }
    }
}

/// One per-unit array of an instrumented module.
#[derive(Debug, Clone)]
struct UnitMap {
    name: String,
    /// Device address of its descriptor.
    desc: u64,
    per_warp: bool,
    entries: u64,
    stride: u64,
    /// The storage bound now (0: none) and the units it holds.
    data: u64,
    units: u64,
}

/// The per-unit arrays of one instrumented module.
#[derive(Debug)]
pub struct Binder {
    fns: Fns,
    maps: Vec<UnitMap>,
}

impl Binder {
    /// The binder of instrumented module `h` (a library when `library`), or `None` when
    /// the module has no per-unit array. `global` finds a module global's address.
    pub fn new(
        obj: &Object,
        mut global: impl FnMut(&str) -> Option<u64>,
    ) -> Result<Option<Binder>, String> {
        let mut maps = Vec::new();
        for m in &obj.maps {
            let Some(kind) = m.kind().filter(|k| k.is_per_unit()) else {
                continue;
            };
            let sym = bpf2ptx_backend::back::ptx::map_desc_symbol(&m.name);
            // A map the probes do not use has no descriptor in the module.
            let Some(desc) = global(&sym) else {
                continue;
            };
            maps.push(UnitMap {
                name: m.name.clone(),
                desc,
                per_warp: kind.layout() == MapKind::PerWarpArray,
                entries: u64::from(m.max_entries),
                stride: u64::from(m.value_size).div_ceil(8) * 8,
                data: 0,
                units: 0,
            });
        }
        if maps.is_empty() {
            return Ok(None);
        }
        let fns =
            Fns::get().ok_or("the driver lacks the memory functions per-thread arrays need")?;
        Ok(Some(Binder { fns, maps }))
    }

    /// Makes every per-unit array hold at least the units of `dims` before its launch.
    pub fn before_launch(&mut self, dims: Dims) -> Result<(), String> {
        let mut synced = false;
        for m in &mut self.maps {
            let units = if m.per_warp {
                dims.warps()
            } else {
                dims.threads()
            };
            if units <= m.units {
                continue;
            }
            let f = self.fns;
            let err = |what: &str, rc: CuResult| {
                format!(
                    "map {}: {what} for {units} units failed (CUresult {rc})",
                    m.name
                )
            };
            // SAFETY: the driver's functions on memory it allocated and on the module's
            // descriptor; sizes as allocated.
            unsafe {
                if !synced {
                    (f.sync)();
                    synced = true;
                }
                let bytes = m.entries * units * m.stride;
                let mut new = 0u64;
                let rc = (f.alloc)(&mut new, bytes as usize);
                if rc != SUCCESS {
                    return Err(err("allocation", rc));
                }
                (f.memset)(new, 0, bytes as usize);
                if m.data != 0 {
                    let old_row = m.units * m.stride;
                    for key in 0..m.entries {
                        (f.dtod)(
                            new + key * units * m.stride,
                            m.data + key * old_row,
                            old_row as usize,
                        );
                    }
                    (f.free)(m.data);
                }
                // Words 3 (data) and 4 (aux = units) are adjacent.
                const _: () = assert!(desc::AUX == desc::DATA + 8);
                let words = [new, units];
                let rc = (f.htod)(m.desc + desc::DATA, words.as_ptr().cast(), 16);
                if rc != SUCCESS {
                    return Err(err("descriptor write", rc));
                }
                m.data = new;
                m.units = units;
            }
        }
        Ok(())
    }
}

/// The address of global `name` of module or library `h`.
pub fn global_address(h: Handle, library: bool, name: &str) -> Option<u64> {
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
    (rc == SUCCESS && addr != 0).then_some(addr)
}
