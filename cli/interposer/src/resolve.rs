//! How the application's calls reach the hooks, and the hooks reach the driver.
//!
//! An application gets a driver function in one of three ways, and each is covered:
//!
//! 1. **Linked against libcuda** (CuPy, hand-written driver code): the dynamic linker
//!    binds the call to the first definition of the symbol, which is the preloaded
//!    interposer's. The hook finds the driver's own with `dlsym(RTLD_NEXT, name)`.
//! 2. **`dlopen` + `dlsym`** (the shared cudart, older code): the interposer defines
//!    `dlsym` itself, forwards to glibc's (found with `dlvsym`, which it does not
//!    define), and hands back its hook for a hooked name, keeping the driver's pointer.
//! 3. **`cuGetProcAddress`** (the static cudart nvcc links by default, CUDA 12 and 13):
//!    cudart gets only `cuGetProcAddress_v2` by `dlsym` and every other entry point from
//!    it. The interposer's `cuGetProcAddress[_v2]` asks the driver's and swaps the answer
//!    for hooked names, per variant (`_ptsz` when the per-thread default stream is asked
//!    for).
//!
//! Glibc's `dlsym` resolves `RTLD_NEXT` relative to its caller, which is now the
//! interposer: an application's `dlsym(RTLD_NEXT, x)` finds the definition after the
//! interposer rather than after the application. With the interposer preloaded first
//! these are the same objects but for the application itself.

use crate::driver::{GetProcAddressV2, Ptr};
use crate::hooks::{self, Row};
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// glibc's `dlsym`, found by version so that the lookup never comes back here.
fn real_dlsym() -> Option<unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let p = *REAL.get_or_init(|| {
        for v in [c"GLIBC_2.34", c"GLIBC_2.2.5", c"GLIBC_2.17", c"GLIBC_2.0"] {
            // SAFETY: dlvsym with constant NUL-terminated names; RTLD_NEXT is valid here.
            let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), v.as_ptr()) };
            if !p.is_null() {
                return p as usize;
            }
        }
        0
    });
    // SAFETY: a non-zero value is glibc's dlsym, whose signature this is.
    (p != 0).then(|| unsafe { std::mem::transmute::<usize, _>(p) })
}

/// Looks `name` up as glibc would, without the interposer's substitution.
///
/// # Safety
/// `handle` must be a handle `dlsym` accepts.
pub unsafe fn lookup(handle: *mut c_void, name: &CStr) -> *mut c_void {
    match real_dlsym() {
        Some(f) => f(handle, name.as_ptr()),
        None => std::ptr::null_mut(),
    }
}

/// The interposer's `dlsym`: glibc's answer, with the hook in place of a hooked driver
/// function (whose real address the hook then calls).
///
/// # Safety
/// As `dlsym`.
#[no_mangle]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let found = match real_dlsym() {
        Some(f) => f(handle, symbol),
        None => return std::ptr::null_mut(),
    };
    if found.is_null() || symbol.is_null() {
        return found;
    }
    let name = CStr::from_ptr(symbol);
    match hooks::by_symbol(name.to_bytes()) {
        Some(row) => substitute(row, found),
        None => found,
    }
}

/// Records `real` as what `row`'s hook calls and returns the hook; a `real` that is the
/// hook itself (a lookup that found the interposer) is not recorded.
fn substitute(row: &Row, real: *mut c_void) -> *mut c_void {
    if real as usize != row.hook() {
        let _ = row
            .real
            .compare_exchange(0, real as usize, Ordering::AcqRel, Ordering::Acquire);
    }
    row.hook() as *mut c_void
}

/// The driver's `cuGetProcAddress_v2`, found through glibc (`RTLD_NEXT`, then libcuda by
/// name: cudart opens it `RTLD_LOCAL`).
fn driver_get_proc() -> Option<GetProcAddressV2> {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let mut p = REAL.load(Ordering::Acquire);
    if p == 0 {
        // SAFETY: constant names; dlopen with RTLD_NOLOAD only returns an existing handle.
        unsafe {
            p = lookup(libc::RTLD_NEXT, c"cuGetProcAddress_v2") as usize;
            if p == 0 {
                let h = libcuda();
                if !h.is_null() {
                    p = lookup(h, c"cuGetProcAddress_v2") as usize;
                }
            }
        }
        if p == 0 || p == cuGetProcAddress_v2 as *const () as usize {
            return None;
        }
        REAL.store(p, Ordering::Release);
    }
    // SAFETY: p is the driver's cuGetProcAddress_v2.
    Some(unsafe { std::mem::transmute::<usize, GetProcAddressV2>(p) })
}

/// The application's libcuda handle (opened again, which only counts a reference).
fn libcuda() -> *mut c_void {
    // SAFETY: constant name.
    unsafe {
        let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if h.is_null() {
            libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL)
        } else {
            h
        }
    }
}

/// A driver function the interposer calls for itself (not one it hooks, or the real one
/// behind a hook), asked of the driver's `cuGetProcAddress_v2` for CUDA 12.0's ABI.
pub fn driver_fn(name: &CStr) -> Option<Ptr> {
    let get = driver_get_proc()?;
    let mut p: Ptr = std::ptr::null_mut();
    let mut status = 0;
    // SAFETY: the driver's function with valid out pointers.
    let rc = unsafe { get(name.as_ptr(), &mut p, 12000, 0, &mut status) };
    (rc == 0 && !p.is_null()).then_some(p)
}

/// The real function behind `row`'s hook: recorded by `dlsym`/`cuGetProcAddress`, else
/// looked up now (the application called the interposer's exported symbol directly).
pub fn real_of(row: &Row) -> Option<usize> {
    let p = row.real.load(Ordering::Acquire);
    if p != 0 {
        return Some(p);
    }
    // SAFETY: constant name; RTLD_NEXT finds the driver's definition after ours.
    let mut found = unsafe { lookup(libc::RTLD_NEXT, row.symbol) } as usize;
    if found == 0 || found == row.hook() {
        let h = libcuda();
        if !h.is_null() {
            // SAFETY: a live handle and a constant name.
            found = unsafe { lookup(h, row.symbol) } as usize;
        }
    }
    if found == 0 || found == row.hook() {
        return None;
    }
    let _ = row
        .real
        .compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire);
    Some(row.real.load(Ordering::Acquire))
}

/// The interposer's `cuGetProcAddress_v2`.
///
/// # Safety
/// As the driver's.
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut Ptr,
    version: i32,
    flags: u64,
    status: *mut i32,
) -> i32 {
    let Some(get) = driver_get_proc() else {
        return crate::driver::ERROR_NOT_FOUND;
    };
    let rc = get(symbol, pfn, version, flags, status);
    if rc == 0 && !symbol.is_null() && !pfn.is_null() && !(*pfn).is_null() {
        let name = CStr::from_ptr(symbol).to_bytes();
        if let Some(row) = hooks::by_proc_name(name, version, flags) {
            *pfn = substitute(row, *pfn);
        }
    }
    rc
}

/// The interposer's `cuGetProcAddress` (the CUDA 11.3-11.8 signature, still exported by
/// the driver; no query status).
///
/// # Safety
/// As the driver's.
#[no_mangle]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut Ptr,
    version: i32,
    flags: u64,
) -> i32 {
    let mut status = 0;
    cuGetProcAddress_v2(symbol, pfn, version, flags, &mut status)
}
