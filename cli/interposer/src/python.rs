//! The two functions `bpf2ptx trace`'s Python start-up hook (the front end's
//! `sitecustomize.py`, specs/trace.md "Triton") calls through `ctypes` in a traced
//! Python process.
//!
//! Triton assembles each kernel itself (its own `ptxas`) and loads the cubin, so the
//! driver never sees PTX the interposer could instrument. The hook wraps Triton's `ptx`
//! compilation stage and hands each kernel's PTX here before Triton assembles it; the
//! cubin made of the returned text holds the probes, and its load is recognised and bound
//! to the process's maps as a linked cubin's is ([`crate::registry`]). Injecting here,
//! in the interposer, keeps one home for the inject options a traced module gets.

use crate::registry;
use std::ffi::{c_char, CStr, CString};

/// The instrumented text of `ptx`, the PTX of Triton kernel `name`: a NUL-terminated
/// string that the caller gives back with [`bpf2ptx_trace_free`], or null when the text
/// is to be assembled as it is (no probe matches the kernel, no session, or injecting
/// failed, which the session said on stderr).
///
/// # Safety
/// `ptx` and `name` are null or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn bpf2ptx_trace_instrument_ptx(
    ptx: *const c_char,
    name: *const c_char,
) -> *mut c_char {
    if ptx.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: as the caller's contract.
    let text = unsafe { CStr::from_ptr(ptx) }.to_bytes();
    let name = if name.is_null() {
        "unnamed".into()
    } else {
        // SAFETY: as the caller's contract.
        unsafe { CStr::from_ptr(name) }.to_string_lossy()
    };
    registry::jit_ptx(text, &name).map_or(std::ptr::null_mut(), CString::into_raw)
}

/// Gives back a string [`bpf2ptx_trace_instrument_ptx`] returned (null: nothing).
///
/// # Safety
/// `p` is null or a pointer that function returned, given back once.
#[no_mangle]
pub unsafe extern "C" fn bpf2ptx_trace_free(p: *mut c_char) {
    if !p.is_null() {
        // SAFETY: made by CString::into_raw in bpf2ptx_trace_instrument_ptx.
        drop(unsafe { CString::from_raw(p) });
    }
}
