//! Chrome trace-event JSON (the "JSON Object Format" of the Trace Event Format, which
//! Perfetto and chrome://tracing open; specs/trace.md, "Trace events"; schema
//! specs/trace-events.schema.json).
//!
//! Timestamps are microseconds since the trace started (fractional: nanosecond
//! resolution). Tracks: process 0 is the host, with one thread per stream for the launch
//! calls and one per ring and device (and printk) for records; process `1 + d` is GPU
//! `d`, one thread per stream, holding each launch from its first block's start to its
//! last block's end. `M` events name them. A session's processes ([`trace_events_of`])
//! each have their own: the host's tracks under the process's pid, its GPUs' under ids
//! of their own above any pid. Every launch and ring record names its device
//! (`args.device`).

use super::snapshot::{Event, EventData, TracedMap};
use super::types::hex;
use super::wire::{Event as WireEvent, LaunchRecord};
use bpf2ptx_loader::image::MapData;
use serde_json::{json, Value as J};
use std::collections::{BTreeMap, HashMap};

/// One instrumented kernel launch, as the interposer saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    /// The launch's number in the process (from 1; a host program's `seq`).
    pub seq: u64,
    /// The kernel's name (its PTX name, mangled or not).
    pub kernel: String,
    /// The GPU it ran on.
    pub device: u32,
    /// The stream it was launched on (0: the legacy default stream).
    pub stream: u64,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// When the host called the launch, ns since the trace started.
    pub host_ns: u64,
    /// The first block's start, from the probes' `%globaltimer` stamps on the same
    /// timeline; `None` when no probe recorded it.
    pub first_block_ns: Option<u64>,
    /// The last block's end, likewise.
    pub last_block_ns: Option<u64>,
}

/// One measurement of the host/GPU clock offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// When, ns since the trace started.
    pub at_ns: u64,
    /// `%globaltimer - CLOCK_MONOTONIC`, ns.
    pub offset_ns: i64,
    /// How noisy the measurement was, ns.
    pub spread_ns: i64,
}

/// The launches of `records` (the interposer's `launches.jsonl`) on the trace's
/// timeline, named by the kernel events of `events`, with the first block's start and
/// the last block's end where a map marked `bpf2ptx:launch_spans` in `spans` holds them
/// (keyed by the launch's host time: `types::LAUNCH_SPANS_TAG`). The origin is the
/// session's start as the first clock measurement put it on the GPU's timeline; without
/// one, the first launch.
pub fn launches<'m>(
    records: &[LaunchRecord],
    events: &[WireEvent],
    spans: impl Iterator<Item = &'m TracedMap>,
) -> Vec<Launch> {
    let mut names = HashMap::new();
    let mut start = None;
    for e in events {
        match e {
            WireEvent::Kernel { name, id, .. } => {
                names.insert(*id, name.as_str());
            }
            WireEvent::Clock { start_ns, .. } if start.is_none() => start = Some(*start_ns),
            _ => {}
        }
    }
    let mut stamps: HashMap<u64, (u64, u64)> = HashMap::new();
    for m in spans {
        if let MapData::Hash { entries } = &m.image.data {
            for (k, v) in entries {
                let word = |b: &[u8], i: usize| {
                    b.get(i * 8..i * 8 + 8)
                        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
                };
                if let (Some(key), Some(first), Some(last)) = (word(k, 0), word(v, 0), word(v, 1)) {
                    stamps.insert(key, (first, last));
                }
            }
        }
    }
    let origin = start
        .or_else(|| records.iter().map(|r| r.host_ns).min())
        .unwrap_or(0);
    let on = |t: u64| t.saturating_sub(origin);
    records
        .iter()
        .map(|r| {
            let span = stamps.get(&r.host_ns).filter(|(f, l)| *f != 0 && l >= f);
            Launch {
                seq: r.seq,
                kernel: names
                    .get(&r.kernel)
                    .map_or_else(|| format!("kernel {}", r.kernel), |n| n.to_string()),
                device: r.device,
                stream: r.stream,
                grid: r.grid,
                block: r.block,
                host_ns: on(r.host_ns),
                first_block_ns: span.map(|s| on(s.0)),
                last_block_ns: span.map(|s| on(s.1)),
            }
        })
        .collect()
}

/// The clock measurements of `events`.
pub fn calibrations(events: &[WireEvent]) -> Vec<Calibration> {
    events
        .iter()
        .filter_map(|e| match e {
            WireEvent::Clock {
                offset_ns,
                spread_ns,
                at_ns,
                ..
            } => Some(Calibration {
                at_ns: *at_ns,
                offset_ns: *offset_ns,
                spread_ns: *spread_ns,
            }),
            _ => None,
        })
        .collect()
}

const HOST: u64 = 0;

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// The trace-event document of `launches` and `events`.
pub fn trace_events(launches: &[Launch], events: &[Event]) -> J {
    trace_events_with(launches, events, &[])
}

/// [`trace_events`] with the clock measurements, as instants on a track of their own.
pub fn trace_events_with(launches: &[Launch], events: &[Event], clock: &[Calibration]) -> J {
    let mut doc = Doc::default();
    doc.process(
        HOST,
        &|d| 1 + u64::from(d),
        "host".into(),
        &|d| format!("GPU {d}"),
        launches,
        events,
        clock,
    );
    doc.finish()
}

/// What one process of a traced tree left: its launches, records and clock measurements.
#[derive(Clone, Debug, Default)]
pub struct ProcessTrace {
    /// The operating system's process id.
    pub pid: u32,
    /// Its command line, when known (it names the process's tracks).
    pub command: Option<String>,
    /// Its instrumented launches.
    pub launches: Vec<Launch>,
    /// Its ring records and printk lines.
    pub events: Vec<Event>,
    /// Its clock measurements.
    pub clock: Vec<Calibration>,
}

/// Where GPU tracks of processes start: above Linux's largest pid (2^22), so that a GPU's
/// track never takes a real process's id, and below 2^31, which trace viewers read as a
/// 32-bit id.
pub const GPU_TRACK_BASE: u64 = 1 << 30;

/// The trace-event document of the processes of a traced tree: each process's host
/// tracks under its own pid (so that Perfetto shows the processes apart), each of its
/// GPUs as a track process of its own, [`GPU_TRACK_BASE`]` + pid * 64 + device`, named
/// `GPU d (pid P)`.
pub fn trace_events_of(processes: &[ProcessTrace]) -> J {
    let mut doc = Doc::default();
    for p in processes {
        let pid = u64::from(p.pid);
        let name = match &p.command {
            Some(c) => format!("pid {}: {c}", p.pid),
            None => format!("pid {}", p.pid),
        };
        doc.process(
            pid,
            &|d| GPU_TRACK_BASE + pid * 64 + u64::from(d),
            name,
            &|d| format!("GPU {d} (pid {pid})"),
            &p.launches,
            &p.events,
            &p.clock,
        );
    }
    doc.finish()
}

/// A trace-event document being built: the events, and the names of their processes and
/// threads for the metadata (BTreeMaps for a stable order).
#[derive(Default)]
struct Doc {
    out: Vec<J>,
    threads: BTreeMap<(u64, u64), String>,
    processes: BTreeMap<u64, String>,
}

impl Doc {
    /// Adds one process's tracks: its host's (`host`, named `host_name`) and its GPUs'
    /// (`gpu_of(d)`, named `gpu_name(d)`).
    #[allow(clippy::too_many_arguments)]
    fn process(
        &mut self,
        host: u64,
        gpu_of: &dyn Fn(u32) -> u64,
        host_name: String,
        gpu_name: &dyn Fn(u32) -> String,
        launches: &[Launch],
        events: &[Event],
        clock: &[Calibration],
    ) {
        let Doc {
            out,
            threads,
            processes,
        } = self;
        let host_pid = host;
        processes.insert(host_pid, host_name);
        for l in launches {
            let gpu = gpu_of(l.device);
            processes.insert(gpu, gpu_name(l.device));
            threads.insert(
                (host_pid, l.stream),
                format!("stream {} launches", l.stream),
            );
            threads.insert((gpu, l.stream), format!("stream {}", l.stream));
            let args =
                json!({ "grid": l.grid, "block": l.block, "seq": l.seq, "device": l.device });
            match l.first_block_ns {
                // The call, then the wait until the first block runs: the launch latency.
                Some(first) if first >= l.host_ns => out.push(json!({
                    "name": format!("launch {}", l.kernel), "cat": "launch", "ph": "X",
                    "ts": us(l.host_ns), "dur": us(first - l.host_ns),
                    "pid": host_pid, "tid": l.stream, "args": args,
                })),
                _ => out.push(json!({
                    "name": format!("launch {}", l.kernel), "cat": "launch", "ph": "i", "s": "t",
                    "ts": us(l.host_ns), "pid": host_pid, "tid": l.stream, "args": args,
                })),
            }
            if let (Some(first), Some(last)) = (l.first_block_ns, l.last_block_ns) {
                out.push(json!({
                    "name": l.kernel, "cat": "kernel", "ph": "X",
                    "ts": us(first), "dur": us(last.saturating_sub(first)),
                    "pid": gpu, "tid": l.stream,
                    "args": {
                        "grid": l.grid, "block": l.block, "seq": l.seq, "device": l.device,
                        "launch_latency_us": us(first.saturating_sub(l.host_ns)),
                    },
                }));
            }
        }
        // Record tracks after the streams', numbered in order of first appearance.
        let mut tracks: Vec<String> = Vec::new();
        let first_track = threads
            .keys()
            .filter(|k| k.0 == host_pid)
            .map(|k| k.1 + 1)
            .max()
            .unwrap_or(0);
        for e in events {
            let (track, name, args) = match &e.data {
                EventData::Ring { map, data } => {
                    let mut args = json!({ "hex": hex(data), "bytes": data.len() });
                    let track = match e.device {
                        Some(d) => {
                            args["device"] = json!(d);
                            format!("ring {map} (GPU {d})")
                        }
                        None => format!("ring {map}"),
                    };
                    (track, map.clone(), args)
                }
                EventData::Printk { line } => {
                    ("printk".into(), "printk".into(), json!({ "line": line }))
                }
            };
            let k = tracks.iter().position(|t| *t == track).unwrap_or_else(|| {
                tracks.push(track.clone());
                tracks.len() - 1
            });
            let tid = first_track + k as u64;
            threads.insert((host_pid, tid), track);
            out.push(json!({
                "name": name, "cat": "record", "ph": "i", "s": "t",
                "ts": us(e.ns), "pid": host_pid, "tid": tid, "args": args,
            }));
        }
        if !clock.is_empty() {
            let tid = first_track + tracks.len() as u64;
            threads.insert((host_pid, tid), "clock".into());
            for c in clock {
                out.push(json!({
                    "name": "clock offset", "cat": "calibration", "ph": "i", "s": "t",
                    "ts": us(c.at_ns), "pid": host_pid, "tid": tid,
                    "args": { "offset_ns": c.offset_ns, "spread_ns": c.spread_ns },
                }));
            }
        }
    }

    /// The document: metadata first, then the events.
    fn finish(self) -> J {
        let mut meta: Vec<J> = self
        .processes
        .into_iter()
        .map(|(pid, name)| {
            json!({ "name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": { "name": name } })
        })
        .collect();
        meta.extend(self.threads.into_iter().map(|((pid, tid), name)| {
        json!({ "name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": { "name": name } })
    }));
        meta.extend(self.out);
        json!({ "traceEvents": meta, "displayTimeUnit": "ns" })
    }
}
