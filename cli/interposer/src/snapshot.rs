//! Map snapshots: the raw bytes of every map of every device's map set ([`crate::bind`]:
//! one instance per process and device, whatever the number of instrumented modules),
//! copied from the device while the application runs and written to the process's
//! `proc-<pid>/snapshot.json` in the session folder for the front end, which decodes and prints them.
//!
//! A snapshot is taken every `interval_ms` (the config's; none when 0) by a thread of the
//! interposer's own, with copies on a non-blocking stream of its own (the application's
//! streams are neither waited for nor ordered with), and once more at exit (`final`: the
//! process ran `exit`, after the last kernel finished). An application that crashes keeps
//! the last periodic one. Each is written to `snapshot.json.tmp` and renamed, so the front
//! end never reads half a snapshot.
//!
//! What is copied per map is what specs/abi.md gives a host loader: the descriptor (8
//! words), the storage, a hash map's counts block and a ring's counters, each as large as
//! the module symbol it was sized from, and writable global data (`.bss`, `.data`) whole.
//! Each set is read on a stream of its own, made in its context.

use crate::driver::*;
use crate::resolve::driver_fn;
pub use bpf2ptx::trace::wire::{
    hex, read, unhex, write, DeviceMaps, PrintkLine, RawMap, RawSnapshot as Snapshot,
};

/// How the snapshot thread reads a map set's device memory: copies on a stream of its
/// own.
#[derive(Debug, Clone, Copy)]
pub struct Reader {
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
                copy: std::mem::transmute::<Ptr, MemcpyDtoHAsync>(f(c"cuMemcpyDtoHAsync")?),
                sync: std::mem::transmute::<Ptr, StreamSynchronize>(f(c"cuStreamSynchronize")?),
                stream,
            })
        }
    }

    /// `size` bytes of device memory at `addr`.
    pub fn copy(&self, addr: u64, size: usize) -> Option<Vec<u8>> {
        let mut buf = vec![0u8; size];
        // SAFETY: the destination has `size` bytes and is waited for before it is read;
        // `addr` is memory of a map set, allocated by the interposer.
        unsafe {
            if (self.copy)(buf.as_mut_ptr().cast(), addr, size, self.stream) != SUCCESS
                || (self.sync)(self.stream) != SUCCESS
            {
                return None;
            }
        }
        Some(buf)
    }
}
