//! The hooked driver functions: one table ([`ROWS`]) of every symbol the interposer
//! defines in the driver's place, and the hooks themselves.
//!
//! Each hook forwards to the driver's function and tells the [`registry`] what happened
//! (a module loaded, a function looked up) or asks it which function to launch. Nothing a
//! hook does for the interposer may change what the application sees: the registry's
//! work runs under `catch_unwind`, and any failure there means the original call,
//! untouched.
//!
//! [`registry`]: crate::registry

#![allow(non_snake_case)]

use crate::driver::*;
use crate::registry::{self, LaunchArgs, Via};
use crate::resolve::real_of;
use bpf2ptx_loader::gpu::Dims;
use std::ffi::{c_char, c_uint, c_void, CStr};
use std::os::unix::ffi::OsStrExt as _;
use std::sync::atomic::AtomicUsize;

/// One hooked symbol.
#[derive(Debug)]
pub struct Row {
    /// The exported symbol (what `dlsym` is asked for).
    pub symbol: &'static CStr,
    /// The name `cuGetProcAddress` is asked for (no `_v2`/`_ptsz`).
    pub proc_name: &'static str,
    /// The per-thread-default-stream variant (`_ptsz`, or `cuGetProcAddress` with
    /// [`PROC_PER_THREAD_STREAM`]).
    pub ptsz: bool,
    /// `cuGetProcAddress` versions this row answers: `[min, max)`.
    pub versions: (i32, i32),
    /// The hook's address (a function: a pointer cannot become an integer in a static).
    addr: fn() -> usize,
    /// The driver's function behind it (0 until known).
    pub real: &'static AtomicUsize,
}

macro_rules! rows {
    ($( $sym:literal, $proc:literal, $ptsz:expr, $vers:expr, $hook:path; )*) => {
        /// Every hooked symbol.
        pub static ROWS: &[Row] = &[ $( Row {
            symbol: $sym,
            proc_name: $proc,
            ptsz: $ptsz,
            versions: $vers,
            addr: || $hook as *const () as usize,
            real: { static R: AtomicUsize = AtomicUsize::new(0); &R },
        }, )* ];
    };
}

const ANY: (i32, i32) = (0, i32::MAX);

rows! {
    c"cuGetProcAddress", "cuGetProcAddress", false, (0, 12000), crate::resolve::cuGetProcAddress;
    c"cuGetProcAddress_v2", "cuGetProcAddress", false, (12000, i32::MAX), crate::resolve::cuGetProcAddress_v2;
    c"cuModuleLoadData", "cuModuleLoadData", false, ANY, cuModuleLoadData;
    c"cuModuleLoadDataEx", "cuModuleLoadDataEx", false, ANY, cuModuleLoadDataEx;
    c"cuModuleLoadFatBinary", "cuModuleLoadFatBinary", false, ANY, cuModuleLoadFatBinary;
    c"cuModuleLoad", "cuModuleLoad", false, ANY, cuModuleLoad;
    c"cuModuleUnload", "cuModuleUnload", false, ANY, cuModuleUnload;
    c"cuModuleGetFunction", "cuModuleGetFunction", false, ANY, cuModuleGetFunction;
    c"cuLibraryLoadData", "cuLibraryLoadData", false, ANY, cuLibraryLoadData;
    c"cuLibraryLoadFromFile", "cuLibraryLoadFromFile", false, ANY, cuLibraryLoadFromFile;
    c"cuLibraryUnload", "cuLibraryUnload", false, ANY, cuLibraryUnload;
    c"cuLibraryGetKernel", "cuLibraryGetKernel", false, ANY, cuLibraryGetKernel;
    c"cuLibraryGetModule", "cuLibraryGetModule", false, ANY, cuLibraryGetModule;
    c"cuKernelGetFunction", "cuKernelGetFunction", false, ANY, cuKernelGetFunction;
    c"cuLaunchKernel", "cuLaunchKernel", false, ANY, cuLaunchKernel;
    c"cuLaunchKernel_ptsz", "cuLaunchKernel", true, ANY, cuLaunchKernel_ptsz;
    c"cuLaunchKernelEx", "cuLaunchKernelEx", false, ANY, cuLaunchKernelEx;
    c"cuLaunchKernelEx_ptsz", "cuLaunchKernelEx", true, ANY, cuLaunchKernelEx_ptsz;
    c"cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel", false, ANY, cuLaunchCooperativeKernel;
    c"cuLaunchCooperativeKernel_ptsz", "cuLaunchCooperativeKernel", true, ANY, cuLaunchCooperativeKernel_ptsz;
    c"cuLinkAddData", "cuLinkAddData", false, (0, 0), cuLinkAddData;
    c"cuLinkAddData_v2", "cuLinkAddData", false, ANY, cuLinkAddData_v2;
    c"cuLinkAddFile", "cuLinkAddFile", false, (0, 0), cuLinkAddFile;
    c"cuLinkAddFile_v2", "cuLinkAddFile", false, ANY, cuLinkAddFile_v2;
    c"cuGraphAddKernelNode_v2", "cuGraphAddKernelNode", false, (12000, i32::MAX), cuGraphAddKernelNode_v2;
    c"cuGraphKernelNodeSetParams_v2", "cuGraphKernelNodeSetParams", false, (12000, i32::MAX), cuGraphKernelNodeSetParams_v2;
    c"cuGraphExecKernelNodeSetParams_v2", "cuGraphExecKernelNodeSetParams", false, (12000, i32::MAX), cuGraphExecKernelNodeSetParams_v2;
}

impl Row {
    /// The hook's address.
    pub fn hook(&self) -> usize {
        (self.addr)()
    }
}

/// The row of an exported symbol name.
pub fn by_symbol(name: &[u8]) -> Option<&'static Row> {
    ROWS.iter().find(|r| r.symbol.to_bytes() == name)
}

/// The row answering `cuGetProcAddress(name, version, flags)`. Only stream-taking
/// functions have `_ptsz` rows; for the others the flag changes nothing.
pub fn by_proc_name(name: &[u8], version: i32, flags: u64) -> Option<&'static Row> {
    let ptsz = flags & PROC_PER_THREAD_STREAM != 0;
    let mut rows = ROWS.iter().filter(|r| {
        r.proc_name.as_bytes() == name && (r.versions.0..r.versions.1).contains(&version)
    });
    let all: Vec<&Row> = rows.by_ref().collect();
    all.iter()
        .find(|r| r.ptsz == ptsz)
        .or_else(|| all.iter().find(|r| !r.ptsz))
        .copied()
}

fn row(symbol: &CStr) -> &'static Row {
    by_symbol(symbol.to_bytes()).expect("every hook has a row")
}

/// The driver's function behind the hook of `symbol`, as a `T`.
///
/// # Safety
/// `T` must be the function pointer type of that symbol.
pub(crate) unsafe fn real<T: Copy>(symbol: &CStr) -> Option<T> {
    let p = real_of(row(symbol))?;
    Some(std::mem::transmute_copy::<usize, T>(&p))
}

/// Forwards to the real function, or answers [`ERROR_INVALID_VALUE`] when it cannot be
/// found (there is then no driver to call).
macro_rules! forward {
    ($sym:literal, $ty:ty, $($arg:expr),*) => {
        match real::<$ty>($sym) {
            Some(f) => f($($arg),*),
            None => ERROR_INVALID_VALUE,
        }
    };
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadData(module: *mut Ptr, image: *const c_void) -> CuResult {
    let rc = forward!(c"cuModuleLoadData", ModuleLoadData, module, image);
    if rc == SUCCESS {
        registry::loaded_image(*module, image.cast(), false);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    module: *mut Ptr,
    image: *const c_void,
    n: c_uint,
    options: *mut i32,
    values: *mut Ptr,
) -> CuResult {
    let rc = forward!(
        c"cuModuleLoadDataEx",
        ModuleLoadDataEx,
        module,
        image,
        n,
        options,
        values
    );
    if rc == SUCCESS {
        registry::loaded_image(*module, image.cast(), false);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoadFatBinary(module: *mut Ptr, image: *const c_void) -> CuResult {
    let rc = forward!(c"cuModuleLoadFatBinary", ModuleLoadData, module, image);
    if rc == SUCCESS {
        registry::loaded_image(*module, image.cast(), false);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuModuleLoad(module: *mut Ptr, path: *const c_char) -> CuResult {
    let rc = forward!(c"cuModuleLoad", ModuleLoad, module, path);
    if rc == SUCCESS {
        registry::loaded_file(*module, path, false);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuModuleUnload(module: Ptr) -> CuResult {
    registry::unloaded(module);
    forward!(c"cuModuleUnload", ModuleUnload, module)
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuModuleGetFunction(
    func: *mut Ptr,
    module: Ptr,
    name: *const c_char,
) -> CuResult {
    let rc = forward!(
        c"cuModuleGetFunction",
        ModuleGetFunction,
        func,
        module,
        name
    );
    if rc == SUCCESS {
        registry::named(*func, module, name, Via::Module);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadData(
    lib: *mut Ptr,
    code: *const c_void,
    jit_opts: *mut i32,
    jit_vals: *mut Ptr,
    n_jit: c_uint,
    lib_opts: *mut i32,
    lib_vals: *mut Ptr,
    n_lib: c_uint,
) -> CuResult {
    let rc = forward!(
        c"cuLibraryLoadData",
        LibraryLoadData,
        lib,
        code,
        jit_opts,
        jit_vals,
        n_jit,
        lib_opts,
        lib_vals,
        n_lib
    );
    if rc == SUCCESS {
        registry::loaded_image(*lib, code.cast(), true);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    lib: *mut Ptr,
    path: *const c_char,
    jit_opts: *mut i32,
    jit_vals: *mut Ptr,
    n_jit: c_uint,
    lib_opts: *mut i32,
    lib_vals: *mut Ptr,
    n_lib: c_uint,
) -> CuResult {
    let rc = forward!(
        c"cuLibraryLoadFromFile",
        LibraryLoadFromFile,
        lib,
        path,
        jit_opts,
        jit_vals,
        n_jit,
        lib_opts,
        lib_vals,
        n_lib
    );
    if rc == SUCCESS {
        registry::loaded_file(*lib, path, true);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryUnload(lib: Ptr) -> CuResult {
    registry::unloaded(lib);
    forward!(c"cuLibraryUnload", LibraryUnload, lib)
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut Ptr,
    lib: Ptr,
    name: *const c_char,
) -> CuResult {
    let rc = forward!(c"cuLibraryGetKernel", LibraryGetKernel, kernel, lib, name);
    if rc == SUCCESS {
        registry::named(*kernel, lib, name, Via::Kernel);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuLibraryGetModule(module: *mut Ptr, lib: Ptr) -> CuResult {
    let rc = forward!(c"cuLibraryGetModule", LibraryGetModule, module, lib);
    if rc == SUCCESS {
        registry::alias(*module, lib);
    }
    rc
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuKernelGetFunction(func: *mut Ptr, kernel: Ptr) -> CuResult {
    let rc = forward!(c"cuKernelGetFunction", KernelGetFunction, func, kernel);
    if rc == SUCCESS {
        registry::kernel_function(*func, kernel);
    }
    rc
}

macro_rules! launch_hooks {
    ($($name:ident, $sym:literal;)*) => { $(
        /// # Safety
        /// As the driver's function.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            f: Ptr,
            gx: c_uint, gy: c_uint, gz: c_uint,
            bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint, stream: Ptr, params: *mut Ptr, extra: *mut Ptr,
        ) -> CuResult {
            let args = LaunchArgs {
                dims: Dims { grid: [gx, gy, gz], block: [bx, by, bz] },
                shared,
                stream,
                launch: true,
            };
            let f = registry::launchable(f, args);
            forward!($sym, LaunchKernel, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
        }
    )* };
}

launch_hooks! {
    cuLaunchKernel, c"cuLaunchKernel";
    cuLaunchKernel_ptsz, c"cuLaunchKernel_ptsz";
}

macro_rules! cooperative_hooks {
    ($($name:ident, $sym:literal;)*) => { $(
        /// # Safety
        /// As the driver's function.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            f: Ptr,
            gx: c_uint, gy: c_uint, gz: c_uint,
            bx: c_uint, by: c_uint, bz: c_uint,
            shared: c_uint, stream: Ptr, params: *mut Ptr,
        ) -> CuResult {
            let args = LaunchArgs {
                dims: Dims { grid: [gx, gy, gz], block: [bx, by, bz] },
                shared,
                stream,
                launch: true,
            };
            let f = registry::launchable(f, args);
            forward!($sym, LaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, shared, stream, params)
        }
    )* };
}

cooperative_hooks! {
    cuLaunchCooperativeKernel, c"cuLaunchCooperativeKernel";
    cuLaunchCooperativeKernel_ptsz, c"cuLaunchCooperativeKernel_ptsz";
}

macro_rules! ex_hooks {
    ($($name:ident, $sym:literal;)*) => { $(
        /// # Safety
        /// As the driver's function.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            config: *const LaunchConfig, f: Ptr, params: *mut Ptr, extra: *mut Ptr,
        ) -> CuResult {
            let args = config.as_ref().map_or(
                LaunchArgs {
                    dims: Dims { grid: [0; 3], block: [0; 3] },
                    shared: 0,
                    stream: std::ptr::null_mut(),
                    launch: true,
                },
                |c| LaunchArgs {
                    dims: Dims {
                        grid: [c.grid_x, c.grid_y, c.grid_z],
                        block: [c.block_x, c.block_y, c.block_z],
                    },
                    shared: c.shared_bytes,
                    stream: c.stream,
                    launch: true,
                },
            );
            let f = registry::launchable(f, args);
            forward!($sym, LaunchKernelEx, config, f, params, extra)
        }
    )* };
}

ex_hooks! {
    cuLaunchKernelEx, c"cuLaunchKernelEx";
    cuLaunchKernelEx_ptsz, c"cuLaunchKernelEx_ptsz";
}

macro_rules! link_hooks {
    ($($data:ident, $data_sym:literal, $file:ident, $file_sym:literal;)*) => { $(
        /// PTX given to the linker is instrumented now (`registry::linked_ptx`): what the
        /// linker makes holds no PTX to instrument later.
        ///
        /// # Safety
        /// As the driver's function.
        #[no_mangle]
        pub unsafe extern "C" fn $data(
            state: Ptr, ty: c_uint, data: *mut c_void, size: usize, name: *const c_char,
            n: c_uint, options: *mut i32, values: *mut Ptr,
        ) -> CuResult {
            let swapped = (ty == JIT_INPUT_PTX && !data.is_null())
                .then(|| registry::linked_ptx(std::slice::from_raw_parts(data as *const u8, size), name))
                .flatten();
            let (data, size) = match &swapped {
                Some(text) => (text.as_ptr() as *mut c_void, text.as_bytes_with_nul().len()),
                None => (data, size),
            };
            forward!($data_sym, LinkAddData, state, ty, data, size, name, n, options, values)
        }

        /// A PTX file given to the linker is read and instrumented as [`cuLinkAddData`]
        /// input would be, and handed over as data.
        ///
        /// # Safety
        /// As the driver's function.
        #[no_mangle]
        pub unsafe extern "C" fn $file(
            state: Ptr, ty: c_uint, path: *const c_char, n: c_uint, options: *mut i32,
            values: *mut Ptr,
        ) -> CuResult {
            if ty == JIT_INPUT_PTX && !path.is_null() {
                let file = std::ffi::OsStr::from_bytes(CStr::from_ptr(path).to_bytes());
                if let Some(text) = std::fs::read(file)
                    .ok()
                    .and_then(|ptx| registry::linked_ptx(&ptx, path))
                {
                    let data = text.as_ptr() as *mut c_void;
                    let size = text.as_bytes_with_nul().len();
                    return forward!($data_sym, LinkAddData, state, ty, data, size, path, n, options, values);
                }
            }
            forward!($file_sym, LinkAddFile, state, ty, path, n, options, values)
        }
    )* };
}

link_hooks! {
    cuLinkAddData, c"cuLinkAddData", cuLinkAddFile, c"cuLinkAddFile";
    cuLinkAddData_v2, c"cuLinkAddData_v2", cuLinkAddFile_v2, c"cuLinkAddFile_v2";
}

/// An explicit graph kernel node's parameters with the function (or kernel) swapped as a
/// launch of it would be; `None` when nothing changes. Kernels captured from streams
/// need nothing of this: their `cuLaunchKernel` was swapped during the capture.
///
/// # Safety
/// `p` is null or points to valid node parameters.
unsafe fn swapped_node(p: *const KernelNodeParams) -> Option<KernelNodeParams> {
    let mut c = *p.as_ref()?;
    let f = if c.func.is_null() { c.kern } else { c.func };
    let dims = Dims {
        grid: [c.grid_x, c.grid_y, c.grid_z],
        block: [c.block_x, c.block_y, c.block_z],
    };
    let g = registry::launchable(
        f,
        LaunchArgs {
            dims,
            shared: c.shared_bytes,
            stream: std::ptr::null_mut(),
            launch: false,
        },
    );
    if g == f {
        return None;
    }
    if c.func.is_null() {
        c.kern = g;
    } else {
        c.func = g;
    }
    Some(c)
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuGraphAddKernelNode_v2(
    node: *mut Ptr,
    graph: Ptr,
    deps: *const Ptr,
    n: usize,
    params: *const KernelNodeParams,
) -> CuResult {
    let swapped = swapped_node(params);
    let p = swapped.as_ref().map_or(params, |s| s as *const _);
    forward!(
        c"cuGraphAddKernelNode_v2",
        GraphAddKernelNode,
        node,
        graph,
        deps,
        n,
        p
    )
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuGraphKernelNodeSetParams_v2(
    node: Ptr,
    params: *const KernelNodeParams,
) -> CuResult {
    let swapped = swapped_node(params);
    let p = swapped.as_ref().map_or(params, |s| s as *const _);
    forward!(
        c"cuGraphKernelNodeSetParams_v2",
        GraphKernelNodeSetParams,
        node,
        p
    )
}

/// # Safety
/// As the driver's function.
#[no_mangle]
pub unsafe extern "C" fn cuGraphExecKernelNodeSetParams_v2(
    exec: Ptr,
    node: Ptr,
    params: *const KernelNodeParams,
) -> CuResult {
    let swapped = swapped_node(params);
    let p = swapped.as_ref().map_or(params, |s| s as *const _);
    forward!(
        c"cuGraphExecKernelNodeSetParams_v2",
        GraphExecKernelNodeSetParams,
        exec,
        node,
        p
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_symbol_has_one_row_and_its_own_hook() {
        for (i, r) in ROWS.iter().enumerate() {
            assert_eq!(
                by_symbol(r.symbol.to_bytes()).map(Row::hook),
                Some(r.hook())
            );
            assert!(
                ROWS[i + 1..].iter().all(|o| o.hook() != r.hook()),
                "{:?}",
                r.symbol
            );
        }
    }

    #[test]
    fn proc_address_picks_the_variant() {
        let ptsz = by_proc_name(b"cuLaunchKernel", 12000, PROC_PER_THREAD_STREAM).unwrap();
        assert_eq!(ptsz.symbol, c"cuLaunchKernel_ptsz");
        let legacy = by_proc_name(b"cuLaunchKernel", 12000, 0).unwrap();
        assert_eq!(legacy.symbol, c"cuLaunchKernel");
        // No _ptsz variant: the flag changes nothing.
        let load = by_proc_name(b"cuModuleLoadData", 12000, PROC_PER_THREAD_STREAM).unwrap();
        assert_eq!(load.symbol, c"cuModuleLoadData");
        assert_eq!(
            by_proc_name(b"cuGetProcAddress", 11080, 0).unwrap().symbol,
            c"cuGetProcAddress"
        );
        assert_eq!(
            by_proc_name(b"cuGetProcAddress", 13000, 0).unwrap().symbol,
            c"cuGetProcAddress_v2"
        );
        assert!(by_proc_name(b"cuMemAlloc", 12000, 0).is_none());
    }
}
