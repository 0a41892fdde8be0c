//! The snapshot thread: periodically and at exit, every device's map set copied into the
//! session folder's `snapshot.json` (each in its context, on a stream of its own), with
//! the maps host programs share, and the launch records kept since the last snapshot
//! appended to `launches.jsonl`.
//!
//! Apart from the registry's bookkeeping (`mod.rs`) because it runs on a thread of its
//! own and at exit, never inside an application's call: it reads what the hooks left
//! (the map sets, the pending launch records) and rechecks the clock, and decides nothing
//! about launches.

use super::{current_context, session, set_context, Session, MAX_PENDING_LAUNCHES};
use crate::clock;
use crate::driver::*;
use crate::hostprog::HostRuntime;
use crate::resolve::driver_fn;
use crate::snapshot::{self, DeviceMaps, Reader, Snapshot};
use bpf2ptx::trace::wire::append_launches;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::Relaxed;

/// The snapshot thread's side: whether snapshots started, and per map set's context the
/// reader made there (a stream of its own).
#[derive(Default)]
pub(super) struct Copier {
    started: bool,
    /// The context current where snapshots started (the clock's rechecks run there).
    home: Handle,
    readers: Vec<(Handle, Option<Reader>)>,
}

impl Session {
    /// At the first instrumentation (or launch that runs host programs or is recorded):
    /// notes the current context (where the clock is rechecked), registers the last
    /// snapshot at exit (now, after the CUDA runtime registered its own teardown, so that
    /// ours runs first), and starts the periodic snapshots.
    pub(super) fn start_snapshots(&'static self) {
        let mut copier = self.copier.lock().unwrap_or_else(|e| e.into_inner());
        if copier.started {
            return;
        }
        copier.started = true;
        copier.home = current_context().unwrap_or(0);
        extern "C" fn last_snapshot() {
            if let Some(s) = session() {
                let _ = catch_unwind(|| s.snapshot(true));
            }
        }
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(last_snapshot) };
        if self.config.interval_ms > 0 {
            let every = std::time::Duration::from_millis(self.config.interval_ms);
            let _ = std::thread::Builder::new()
                .name("bpf2ptx-snapshots".into())
                .spawn(move || {
                    // For the whole thread: its copies (on streams of its own) must not be
                    // refused as unsafe, and so invalidate the capture, while the
                    // application captures a graph in global mode on another thread.
                    let _relaxed = crate::bind::relaxed_capture();
                    loop {
                        std::thread::sleep(every);
                        let _ = catch_unwind(AssertUnwindSafe(|| self.snapshot(false)));
                    }
                });
        }
    }

    /// Copies every map set's maps (one per device) into `snapshot.json`, each in its
    /// context on a stream of its own, and the maps host programs share. `last`: at exit,
    /// after waiting for each context's work. The calling thread's context is restored.
    fn snapshot(&self, last: bool) {
        let mut copier = self.copier.lock().unwrap_or_else(|e| e.into_inner());
        // A child forked after the session started has its parent's maps, not its own.
        if !copier.started || !self.log.owned() {
            return;
        }
        // Under the copier's lock: a periodic snapshot either ran before the last one or
        // sees the flag.
        use std::sync::atomic::Ordering::SeqCst;
        if self.finished.load(SeqCst) || last && self.finished.swap(true, SeqCst) {
            return;
        }
        let before = current_context();
        let now = self.started.elapsed().as_nanos() as u64;
        let measured = self.clock_at.load(Relaxed);
        if !last
            && measured != u64::MAX
            && self.clock.measured()
            && now.saturating_sub(measured) >= clock::RECHECK.as_nanos() as u64
        {
            set_context(copier.home);
            self.measure_clock();
        }
        let mut devices = Vec::new();
        for set in self.sets.all() {
            set_context(set.ctx);
            if last {
                // SAFETY: the driver's function, in the set's context.
                unsafe {
                    if let Some(sync) = driver_fn(c"cuCtxSynchronize") {
                        std::mem::transmute::<Ptr, CtxSynchronize>(sync)();
                    }
                }
            }
            let at = match copier.readers.iter().position(|r| r.0 == set.ctx) {
                Some(at) => at,
                None => {
                    let reader = Reader::new();
                    if reader.is_none() {
                        self.log.say(&format!(
                            "device {}: map snapshots unavailable (the driver lacks stream copies)",
                            set.device
                        ));
                    }
                    copier.readers.push((set.ctx, reader));
                    copier.readers.len() - 1
                }
            };
            let Some(reader) = copier.readers[at].1 else {
                continue;
            };
            // A pushed shared map's device copy holds what its host copy held at the last
            // launch: the snapshot shows the host copy, once, in `shared`.
            let pushed = self.host.as_ref().map_or(&[][..], |h| h.pushed());
            let (modules, maps) = set.raw_maps(self.obj, pushed, &|a, n| reader.copy(a, n));
            let own = set.module_output(&|a, n| reader.copy(a, n));
            devices.push(DeviceMaps {
                device: set.device,
                context: set.context,
                modules,
                maps,
                printk: own
                    .printk
                    .into_iter()
                    .map(|(module, line)| snapshot::PrintkLine { module, line })
                    .collect(),
                printk_dropped: own.printk_dropped,
                loop_budget: own.loop_budget,
            });
        }
        if let Some(ctx) = before {
            set_context(ctx);
        }
        let shared = self.host.as_ref().and_then(HostRuntime::shared_now);
        let snap = Snapshot {
            time_ns: now,
            last,
            devices,
            shared: shared.map_or_else(Vec::new, |s| {
                s.maps
                    .iter()
                    .map(|m| snapshot::RawMap {
                        name: m.name.clone(),
                        desc: m.desc.to_vec(),
                        data: snapshot::hex(&m.bytes_now()),
                        counts: None,
                        counters: None,
                    })
                    .collect()
            }),
        };
        if let Err(e) = snapshot::write(self.log.dir(), &snap) {
            self.log.say(&format!("snapshot not written: {e}"));
        }
        self.write_launches(last);
    }

    /// Appends the launch records kept since the last call to `launches.jsonl`; at the
    /// end, says how many were dropped.
    fn write_launches(&self, last: bool) {
        let records = std::mem::take(&mut *self.launches.lock().unwrap_or_else(|e| e.into_inner()));
        if !records.is_empty() {
            if let Err(e) = append_launches(self.log.dir(), &records) {
                self.log.say(&format!("launch records not written: {e}"));
            }
        }
        let dropped = self.launches_dropped.load(Relaxed);
        if last && dropped > 0 {
            self.log.say(&format!(
                "{dropped} launch records dropped (more than {MAX_PENDING_LAUNCHES} between snapshots)"
            ));
        }
    }
}
