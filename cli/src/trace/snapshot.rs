//! What one snapshot holds ([`Snapshot`]) and the views the text and JSON printers share:
//! a map's rows, sorted, with zero rows elided ([`Table`]), and a histogram's buckets
//! ([`Histogram`]).

use super::args::Hist;
use super::hist::{self, Bucket};
use super::types::{MapTypes, Shape, Value};
use bpf2ptx_compiler::program::Map;
use bpf2ptx_loader::image::{MapData, MapImage};
use bpf2ptx_runtime::MapKind;

/// Everything printed at one moment of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Nanoseconds since the trace started.
    pub elapsed_ns: u64,
    /// The GPU the maps belong to, when the application uses several (one snapshot per
    /// device and moment: maps are per device, never summed across devices).
    pub device: Option<u32>,
    /// Set on the last snapshot: how the application ended.
    pub end: Option<AppEnd>,
    /// The maps, in the object's map order.
    pub maps: Vec<TracedMap>,
    /// Per program run under a loop budget: runs that ended because it ran out.
    pub loop_budget: Vec<(String, u64)>,
    /// `trace_printk` records the printk ring had no room for.
    pub printk_dropped: u64,
    /// Ring records and printk lines that arrived since the previous snapshot.
    pub events: Vec<Event>,
}

/// One map of a snapshot: its definition, how to print it, and its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracedMap {
    /// The definition (the compiler's map model).
    pub map: Map,
    /// Key and value layouts, histogram marking.
    pub types: MapTypes,
    /// The contents ([`bpf2ptx_loader::image::decode`]).
    pub image: MapImage,
}

/// How the traced application ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEnd {
    /// It exited with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// A signal ended it.
    Signaled {
        /// The signal number.
        signal: i32,
    },
}

impl AppEnd {
    /// The last snapshot's header line: a clean exit is the final snapshot; a signal or a
    /// failing exit code means the application stopped early, and this snapshot is the
    /// last one taken before (so the reader knows the counts may be partial).
    pub fn describe(self) -> String {
        match self {
            AppEnd::Exited { code: 0 } => "final snapshot (the app exited with code 0)".into(),
            AppEnd::Exited { code } => {
                format!("last snapshot before the app failed (exit code {code})")
            }
            AppEnd::Signaled { signal } => {
                let (name, how) = match signal {
                    1 => ("SIGHUP", "was interrupted"),
                    2 => ("SIGINT", "was interrupted"),
                    15 => ("SIGTERM", "was interrupted"),
                    4 => ("SIGILL", "crashed"),
                    6 => ("SIGABRT", "crashed"),
                    7 => ("SIGBUS", "crashed"),
                    8 => ("SIGFPE", "crashed"),
                    9 => ("SIGKILL", "was killed"),
                    11 => ("SIGSEGV", "crashed"),
                    _ => ("", "was stopped"),
                };
                let name = if name.is_empty() {
                    String::new()
                } else {
                    format!(", {name}")
                };
                format!("last snapshot before the app {how} (signal {signal}{name})")
            }
        }
    }
}

/// A ring record or printk line, stamped with when the host read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the trace started.
    pub ns: u64,
    /// What arrived.
    pub data: EventData,
}

/// What an [`Event`] carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventData {
    /// A record of ring `map`.
    Ring {
        /// The ring's name.
        map: String,
        /// The record's bytes.
        data: Vec<u8>,
    },
    /// A formatted `trace_printk` / `puts` line.
    Printk {
        /// The line, without its newline.
        line: String,
    },
}

/// The records of a ring's image as events stamped `ns` (a ring read by copying its bytes
/// knows no better time than the copy's).
pub fn ring_events(map: &str, image: &MapImage, ns: u64) -> Vec<Event> {
    match &image.data {
        MapData::Ring { records, .. } => records
            .iter()
            .map(|r| Event {
                ns,
                data: EventData::Ring {
                    map: map.to_string(),
                    data: r.data.clone(),
                },
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A table's rows: keys and values decoded, zero rows left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Table {
    /// Sorted: arrays by key, hash maps by value, largest first (ties by key bytes).
    pub rows: Vec<Row>,
    /// Rows left out because every byte of their value was 0.
    pub elided: usize,
    /// Per-SM, per-thread and per-warp arrays: the unit (`SM`, `thread`, `warp`) and the
    /// copies summed per key.
    pub copies: Option<(&'static str, usize)>,
    /// Replicas of a sharded array, summed.
    pub sharded: Option<u64>,
}

/// One row of a [`Table`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Row {
    pub key: Value,
    pub value: Value,
    /// Copies of the value that are not zero (per-SM and per-unit arrays).
    pub nonzero: Option<usize>,
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

impl TracedMap {
    /// Arrays and hash maps as a table; `None` for other kinds (rings, unbound maps).
    pub(super) fn table(&self) -> Option<Table> {
        let value_shape = self.types.value.as_ref();
        let index = |k: usize| Value::U(k as u64);
        let mut t = Table {
            rows: Vec::new(),
            elided: 0,
            copies: None,
            sharded: None,
        };
        match &self.image.data {
            MapData::Array { values, sharded } => {
                t.sharded = *sharded;
                for (k, v) in values.iter().enumerate() {
                    if is_zero(v) {
                        t.elided += 1;
                    } else {
                        t.rows.push(Row {
                            key: index(k),
                            value: Value::of(value_shape, v),
                            nonzero: None,
                        });
                    }
                }
            }
            MapData::PerSm(c) | MapData::PerUnit { values: c, .. } => {
                let unit = match &self.image.data {
                    MapData::PerUnit { unit, .. } => unit.name(),
                    _ => "SM",
                };
                t.copies = Some((unit, c.copies()));
                for k in 0..c.keys() {
                    let mut sum: Option<Value> = None;
                    let mut nonzero = 0;
                    for copy in (0..c.copies()).map(|u| c.get(k, u)).filter(|b| !is_zero(b)) {
                        nonzero += 1;
                        let v = Value::of(value_shape, copy);
                        match &mut sum {
                            Some(s) => s.add(&v),
                            None => sum = Some(v),
                        }
                    }
                    match sum {
                        Some(value) => t.rows.push(Row {
                            key: index(k),
                            value,
                            nonzero: Some(nonzero),
                        }),
                        None => t.elided += 1,
                    }
                }
            }
            MapData::Hash { entries } => {
                let key_shape = self.types.key.as_ref();
                let mut rows: Vec<(&[u8], Row)> = Vec::new();
                for (k, v) in entries {
                    if is_zero(v) {
                        t.elided += 1;
                        continue;
                    }
                    let row = Row {
                        key: Value::of(key_shape, k),
                        value: Value::of(value_shape, v),
                        nonzero: None,
                    };
                    rows.push((k, row));
                }
                rows.sort_by(|(ka, a), (kb, b)| {
                    b.value.rank().cmp(&a.value.rank()).then_with(|| ka.cmp(kb))
                });
                t.rows = rows.into_iter().map(|(_, r)| r).collect();
            }
            _ => return None,
        }
        Some(t)
    }

    /// A map marked as a histogram, its buckets; `None` when it is not marked or holds
    /// nothing readable as counts.
    pub(super) fn histogram(&self) -> Option<Histogram> {
        let hist = self.types.hist?;
        let mut counts: Vec<(u64, u64)> = Vec::new();
        let count = |v: &Value| v.rank().map_or(0, |r| r.clamp(0, u64::MAX.into()) as u64);
        match &self.image.data {
            MapData::Hash { entries } => {
                for (k, v) in entries {
                    let mut w = [0u8; 8];
                    let n = k.len().min(8);
                    w[..n].copy_from_slice(&k[..n]);
                    counts.push((
                        u64::from_le_bytes(w),
                        count(&Value::of(self.types.value.as_ref(), v)),
                    ));
                }
            }
            _ => {
                let t = self.table()?;
                for r in &t.rows {
                    if let Value::U(k) = r.key {
                        counts.push((k, count(&r.value)));
                    }
                }
            }
        }
        Some(Histogram {
            hist,
            buckets: hist::buckets(hist, &counts),
        })
    }

    /// The map kind's name (`array`, `gpu_hash`, ...).
    pub(super) fn kind_name(&self) -> &'static str {
        self.map.kind().map_or("?", MapKind::name)
    }
}

/// A map's counts as histogram buckets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Histogram {
    pub hist: Hist,
    /// From the first non-zero bucket to the last, zero buckets between included.
    pub buckets: Vec<Bucket>,
}

impl Snapshot {
    /// Every non-zero failure counter, as (what, reason, count): map counts first (in map
    /// order, reasons in [`MapCounts`](bpf2ptx_loader::image::MapCounts) order), then the
    /// printk ring's drops, then loop budgets.
    pub(super) fn failures(&self) -> Vec<(String, &'static str, u64)> {
        let mut out = Vec::new();
        for m in &self.maps {
            let c = m.image.counts;
            for (n, reason) in [
                (c.full, "full"),
                (c.busy, "busy"),
                (c.evicted, "evicted"),
                (c.dropped, "dropped"),
            ] {
                if n > 0 {
                    out.push((format!("@{}", m.map.name), reason, n));
                }
            }
        }
        if self.printk_dropped > 0 {
            out.push(("printk".to_string(), "dropped", self.printk_dropped));
        }
        for (program, n) in &self.loop_budget {
            if *n > 0 {
                out.push((format!("program {program}"), "loop_budget", *n));
            }
        }
        out
    }

    /// The value layout of the ring `map`, if it has one.
    pub(super) fn ring_value(&self, map: &str) -> Option<&Shape> {
        self.maps
            .iter()
            .find(|m| m.map.name == map)
            .and_then(|m| m.types.value.as_ref())
    }
}
