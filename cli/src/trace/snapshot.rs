//! What one snapshot holds ([`Snapshot`]) and the views the text and JSON printers share:
//! a map's rows, sorted, with zero rows elided ([`Table`]), and a histogram's buckets
//! ([`Histogram`]). A moment of a trace is one snapshot per device and, with several
//! devices, their sum ([`moment`]; specs/trace.md, "Several GPUs").

use super::args::Hist;
use super::hist::{self, Bucket};
use super::types::{MapTypes, Shape, Value};
use bpf2ptx_compiler::program::Map;
use bpf2ptx_loader::image::{MapCounts, MapData, MapImage};
use bpf2ptx_runtime::MapKind;

/// One section of what is printed at a moment of a trace: one device's maps, or their
/// sum over the devices ([`Scope`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Nanoseconds since the trace started.
    pub elapsed_ns: u64,
    /// Whose maps these are.
    pub scope: Scope,
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

/// Whose maps a [`Snapshot`] holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The process's, no device's: nothing was instrumented (maps host programs share
    /// only, or none).
    Process,
    /// One device's map set (with the process-wide maps when it is the only device).
    Device {
        /// CUDA's ordinal.
        device: u32,
        /// 0, or the how-manieth further context of the device (each has its own set).
        context: u32,
        /// The application used several devices (or contexts): the text header names
        /// this one.
        several: bool,
    },
    /// The sum over these devices of the maps whose values add up, with the maps the
    /// whole process shares.
    Sum {
        /// The devices summed.
        devices: Vec<u32>,
    },
}

impl Scope {
    /// The device, for a device's snapshot.
    pub fn device(&self) -> Option<u32> {
        match self {
            Scope::Device { device, .. } => Some(*device),
            _ => None,
        }
    }
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
    /// In a sum over devices: the other devices' contents, added to `image` key by key
    /// ([`TracedMap::sum`]); empty for one device's map.
    pub sum_with: Vec<MapImage>,
}

impl TracedMap {
    /// One device's (or the process's) map.
    pub fn new(map: Map, types: MapTypes, image: MapImage) -> TracedMap {
        TracedMap {
            map,
            types,
            image,
            sum_with: Vec::new(),
        }
    }

    /// The sum of `maps`, the same map on several devices, for the sum section: arrays
    /// of every kind add key by key (per-SM and per-unit arrays pool their copies), hash
    /// maps merge by key and add the values of a key several devices hold. `None` for
    /// kinds that do not add up (rings: their records are each device's), or when
    /// `maps` is empty.
    pub fn sum(maps: &[&TracedMap]) -> Option<TracedMap> {
        let first = maps.first()?;
        let summable = first.map.is(MapKind::is_array_like)
            || first.map.is(MapKind::is_per_unit)
            || first.map.is(MapKind::is_hash);
        if !summable {
            return None;
        }
        // A device where the map is not bound holds nothing to add.
        let mut bound = maps
            .iter()
            .map(|m| &m.image)
            .filter(|i| !matches!(i.data, MapData::Unbound))
            .cloned();
        let image = bound.next().unwrap_or_else(|| first.image.clone());
        Some(TracedMap {
            map: first.map.clone(),
            types: first.types.clone(),
            image,
            sum_with: bound.collect(),
        })
    }

    /// Every image the map's contents come from: one, or one per device in a sum.
    fn images(&self) -> impl Iterator<Item = &MapImage> {
        std::iter::once(&self.image).chain(&self.sum_with)
    }

    /// The failure counters: one device's, or in a sum every device's added.
    pub fn counts(&self) -> MapCounts {
        let mut c = MapCounts::default();
        for i in self.images() {
            c.full += i.counts.full;
            c.busy += i.counts.busy;
            c.evicted += i.counts.evicted;
            c.dropped += i.counts.dropped;
        }
        c
    }

    /// A hash map's keys: the count word of one device's, the distinct live keys of a
    /// sum (a key several devices hold counts once).
    pub fn keys(&self) -> Option<u64> {
        if self.sum_with.is_empty() {
            return self.image.keys;
        }
        self.image.keys?;
        Some(self.hash_entries().len() as u64)
    }

    /// A hash map's entries, `(key bytes, value, devices that hold the key)`: one
    /// device's in slot order, or a sum's merged by key (first seen first), the values
    /// of a key held by several devices added.
    fn hash_entries(&self) -> Vec<(Vec<u8>, Value, usize)> {
        let shape = self.types.value.as_ref();
        let mut out: Vec<(Vec<u8>, Value, usize)> = Vec::new();
        let mut at = std::collections::HashMap::new();
        for image in self.images() {
            let MapData::Hash { entries } = &image.data else {
                continue;
            };
            for (k, v) in entries {
                let v = Value::of(shape, v);
                match at.get(k) {
                    Some(&i) => {
                        let e: &mut (Vec<u8>, Value, usize) = &mut out[i];
                        e.1.add(&v);
                        e.2 += 1;
                    }
                    None => {
                        at.insert(k.clone(), out.len());
                        out.push((k.clone(), v, 1));
                    }
                }
            }
        }
        out
    }
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

/// One device's part of a moment of a trace: its map set's maps, decoded, and the ring
/// records read from them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceView {
    /// CUDA's ordinal.
    pub device: u32,
    /// 0, or the how-manieth further context of the device.
    pub context: u32,
    /// The maps, in the object's order.
    pub maps: Vec<TracedMap>,
    /// Its rings' records and its modules' printk lines.
    pub events: Vec<Event>,
    /// Per program, the runs whose loop budget ran out (summed over its modules).
    pub loop_budget: Vec<(String, u64)>,
    /// Printk records its modules' rings had no room for.
    pub printk_dropped: u64,
}

/// The snapshots printed at one moment (specs/trace.md, "Several GPUs"): with no device,
/// the process's maps; with one, that device's maps and the process-wide ones (`process`:
/// the maps host programs share, one instance for every device) in one snapshot; with
/// several, one snapshot per device (its own maps and records) and then their sum (each
/// map that adds up, [`TracedMap::sum`], then the process-wide maps). `host_events`
/// (host programs' printk lines) go with the process-wide maps.
pub fn moment(
    elapsed_ns: u64,
    end: Option<AppEnd>,
    devices: Vec<DeviceView>,
    process: Vec<TracedMap>,
    host_events: Vec<Event>,
) -> Vec<Snapshot> {
    let snap = |scope, maps, mut events: Vec<Event>, budget: (Vec<(String, u64)>, u64)| {
        // Stable: printk lines read at one snapshot keep their ring order.
        events.sort_by_key(|e: &Event| e.ns);
        Snapshot {
            elapsed_ns,
            scope,
            end,
            maps,
            loop_budget: budget.0,
            printk_dropped: budget.1,
            events,
        }
    };
    // The sum of every device's loop budgets and printk drops.
    let mut total: (Vec<(String, u64)>, u64) = (Vec::new(), 0);
    for d in &devices {
        total.1 += d.printk_dropped;
        for (p, n) in &d.loop_budget {
            match total.0.iter_mut().find(|t| &t.0 == p) {
                Some(t) => t.1 += n,
                None => total.0.push((p.clone(), *n)),
            }
        }
    }
    match devices.len() {
        0 => vec![snap(Scope::Process, process, host_events, total)],
        1 => {
            let d = devices.into_iter().next().expect("one device");
            let scope = Scope::Device {
                device: d.device,
                context: d.context,
                several: false,
            };
            let mut maps = d.maps;
            maps.extend(process);
            let mut events = d.events;
            events.extend(host_events);
            vec![snap(scope, maps, events, total)]
        }
        _ => {
            let mut names: Vec<&str> = Vec::new();
            for d in &devices {
                for m in &d.maps {
                    if !names.contains(&m.map.name.as_str()) {
                        names.push(&m.map.name);
                    }
                }
            }
            let mut sum: Vec<TracedMap> = names
                .iter()
                .filter_map(|n| {
                    let same: Vec<&TracedMap> = devices
                        .iter()
                        .filter_map(|d| d.maps.iter().find(|m| m.map.name == *n))
                        .collect();
                    TracedMap::sum(&same)
                })
                .collect();
            sum.extend(process);
            let mut ids: Vec<u32> = Vec::new();
            for d in &devices {
                if !ids.contains(&d.device) {
                    ids.push(d.device);
                }
            }
            let mut out: Vec<Snapshot> = devices
                .into_iter()
                .map(|d| {
                    let scope = Scope::Device {
                        device: d.device,
                        context: d.context,
                        several: true,
                    };
                    snap(scope, d.maps, d.events, (d.loop_budget, d.printk_dropped))
                })
                .collect();
            out.push(snap(Scope::Sum { devices: ids }, sum, host_events, total));
            out
        }
    }
}

/// A ring record or printk line, stamped with when the host read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Nanoseconds since the trace started.
    pub ns: u64,
    /// The device whose ring held the record; `None` for the host's own lines (host
    /// programs' printk).
    pub device: Option<u32>,
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

/// The records of a ring's image, device `device`'s, as events stamped `ns` (a ring read
/// by copying its bytes knows no better time than the copy's).
pub fn ring_events(map: &str, image: &MapImage, ns: u64, device: Option<u32>) -> Vec<Event> {
    match &image.data {
        MapData::Ring { records, .. } => records
            .iter()
            .map(|r| Event {
                ns,
                device,
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

/// Adds the copies of one key (per-SM, per-unit, per-device) that are not all zero to
/// `sum`, as values of `shape`; returns how many there were. One home for pooling, which
/// both a device's table and the sum over devices do.
fn pool<'a>(
    shape: Option<&Shape>,
    copies: impl Iterator<Item = &'a [u8]>,
    sum: &mut Option<Value>,
) -> usize {
    let mut nonzero = 0;
    for copy in copies.filter(|b| !is_zero(b)) {
        nonzero += 1;
        let v = Value::of(shape, copy);
        match sum {
            Some(s) => s.add(&v),
            None => *sum = Some(v),
        }
    }
    nonzero
}

fn is_zero(b: &[u8]) -> bool {
    b.iter().all(|&x| x == 0)
}

impl TracedMap {
    /// Arrays and hash maps as a table; `None` for other kinds (rings, unbound maps).
    pub(super) fn table(&self) -> Option<Table> {
        if !self.sum_with.is_empty() {
            return self.sum_table();
        }
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
                    let nonzero = pool(value_shape, (0..c.copies()).map(|u| c.get(k, u)), &mut sum);
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

    /// A sum's table: per key the values of every device added (per-SM and per-unit
    /// arrays: every copy of every device), with the copies that were not zero; a hash
    /// map's keys merged, with the devices that hold each.
    fn sum_table(&self) -> Option<Table> {
        let shape = self.types.value.as_ref();
        let devices = 1 + self.sum_with.len();
        let mut t = Table {
            rows: Vec::new(),
            elided: 0,
            copies: None,
            sharded: None,
        };
        let index = |k: usize| Value::U(k as u64);
        match &self.image.data {
            MapData::Array { .. } | MapData::PerSm(_) | MapData::PerUnit { .. } => {
                let mut total = 0;
                for image in self.images() {
                    total += match &image.data {
                        MapData::PerSm(c) | MapData::PerUnit { values: c, .. } => c.copies(),
                        _ => 1,
                    };
                }
                t.copies = Some(match &self.image.data {
                    MapData::PerSm(_) => ("SM", total),
                    MapData::PerUnit { unit, .. } => (unit.name(), total),
                    _ => ("device", devices),
                });
                for k in 0..self.map.max_entries as usize {
                    let mut sum: Option<Value> = None;
                    let mut nonzero = 0;
                    for image in self.images() {
                        let copies: Vec<&[u8]> = match &image.data {
                            MapData::Array { values, .. } => {
                                values.get(k).map(Vec::as_slice).into_iter().collect()
                            }
                            MapData::PerSm(c) | MapData::PerUnit { values: c, .. }
                                if k < c.keys() =>
                            {
                                (0..c.copies()).map(|u| c.get(k, u)).collect()
                            }
                            _ => Vec::new(),
                        };
                        nonzero += pool(shape, copies.into_iter(), &mut sum);
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
            MapData::Hash { .. } => {
                t.copies = Some(("device", devices));
                let key_shape = self.types.key.as_ref();
                let mut rows: Vec<(Vec<u8>, Row)> = Vec::new();
                for (k, value, held) in self.hash_entries() {
                    if value == Value::of(shape, &vec![0; self.map.value_size as usize]) {
                        t.elided += 1;
                        continue;
                    }
                    let row = Row {
                        key: Value::of(key_shape, &k),
                        value,
                        nonzero: Some(held),
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
            MapData::Hash { .. } => {
                for (k, v, _) in self.hash_entries() {
                    let mut w = [0u8; 8];
                    let n = k.len().min(8);
                    w[..n].copy_from_slice(&k[..n]);
                    counts.push((u64::from_le_bytes(w), count(&v)));
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
    /// Leaves out the records its devices' rings held (ring records, GPU printk lines),
    /// keeping the host's own lines: for a snapshot printed a second time, whose device
    /// records were the ones since the snapshot before it and were printed the first time.
    pub fn drop_records(&mut self) {
        self.events.retain(|e| e.device.is_none());
    }

    /// Every non-zero failure counter, as (what, reason, count): map counts first (in map
    /// order, reasons in [`MapCounts`](bpf2ptx_loader::image::MapCounts) order), then the
    /// printk ring's drops, then loop budgets.
    pub(super) fn failures(&self) -> Vec<(String, &'static str, u64)> {
        let mut out = Vec::new();
        for m in &self.maps {
            let c = m.counts();
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

#[cfg(test)]
mod tests {
    use super::*;
    use bpf2ptx_compiler::program::MapOrigin;
    use bpf2ptx_runtime::ringbuf::Record;

    fn map(name: &str, kind: MapKind, key_size: u32, max_entries: u32) -> Map {
        Map {
            name: name.into(),
            origin: MapOrigin::Btf,
            section: ".maps".into(),
            map_type: kind.id(),
            key_size,
            value_size: 8,
            max_entries,
            flags: 0,
            btf_key_type: None,
            btf_value_type: None,
            init: None,
            iproute2: None,
            inner: None,
            slots: Vec::new(),
            fields: Vec::new(),
        }
    }

    fn traced(m: &Map, data: MapData, keys: Option<u64>, full: u64) -> TracedMap {
        let mut image = MapImage {
            counts: MapCounts::default(),
            keys,
            data,
        };
        image.counts.full = full;
        TracedMap::new(m.clone(), MapTypes::default(), image)
    }

    fn word(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    fn hash(m: &Map, entries: &[(u64, u64)], full: u64) -> TracedMap {
        let entries = entries.iter().map(|&(k, v)| (word(k), word(v))).collect();
        traced(m, MapData::Hash { entries }, Some(2), full)
    }

    fn view(device: u32, maps: Vec<TracedMap>, events: Vec<Event>) -> DeviceView {
        DeviceView {
            device,
            context: 0,
            maps,
            events,
            ..DeviceView::default()
        }
    }

    fn ring_event(device: u32) -> Event {
        Event {
            ns: 5,
            device: Some(device),
            data: EventData::Ring {
                map: "r".into(),
                data: vec![1],
            },
        }
    }

    fn printk() -> Event {
        Event {
            ns: 1,
            device: None,
            data: EventData::Printk { line: "hi".into() },
        }
    }

    /// Where each part of a moment goes: the process-wide maps and host lines with the
    /// only device, or in the sum after the summed maps; rings stay with their device.
    #[test]
    fn a_moment_is_one_snapshot_per_device_and_their_sum() {
        let h = map("h", MapKind::Hash, 8, 4);
        let r = map("r", MapKind::Ringbuf, 0, 4096);
        let shared = map("shared", MapKind::Array, 4, 1);
        let ring = |d| {
            traced(
                &r,
                MapData::Ring {
                    records: vec![Record {
                        offset: 0,
                        data: vec![d],
                    }],
                    producer: 16,
                    error: None,
                },
                None,
                0,
            )
        };
        let process = || {
            vec![traced(
                &shared,
                MapData::Array {
                    values: vec![word(7)],
                    sharded: None,
                },
                None,
                0,
            )]
        };
        let none = moment(9, None, Vec::new(), process(), vec![printk()]);
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].scope, Scope::Process);
        let one = moment(
            9,
            None,
            vec![view(3, vec![ring(1)], vec![ring_event(3)])],
            process(),
            vec![printk()],
        );
        assert_eq!(one.len(), 1);
        assert_eq!(
            one[0].scope,
            Scope::Device {
                device: 3,
                context: 0,
                several: false
            }
        );
        let names: Vec<&str> = one[0].maps.iter().map(|m| m.map.name.as_str()).collect();
        assert_eq!(names, ["r", "shared"]);
        assert_eq!(one[0].events.len(), 2, "ring record and host line, by time");
        assert_eq!(one[0].events[0].device, None);
        let two = moment(
            9,
            None,
            vec![
                view(
                    0,
                    vec![hash(&h, &[(1, 10), (2, 20)], 1), ring(1)],
                    vec![ring_event(0)],
                ),
                view(
                    1,
                    vec![hash(&h, &[(2, 5), (3, 1)], 2), ring(2)],
                    vec![ring_event(1)],
                ),
            ],
            process(),
            vec![printk()],
        );
        let scopes: Vec<&Scope> = two.iter().map(|s| &s.scope).collect();
        assert_eq!(
            scopes,
            [
                &Scope::Device {
                    device: 0,
                    context: 0,
                    several: true
                },
                &Scope::Device {
                    device: 1,
                    context: 0,
                    several: true
                },
                &Scope::Sum {
                    devices: vec![0, 1]
                }
            ]
        );
        assert!(two[..2]
            .iter()
            .all(|s| s.maps.len() == 2 && s.events.len() == 1));
        let sum = &two[2];
        let names: Vec<&str> = sum.maps.iter().map(|m| m.map.name.as_str()).collect();
        assert_eq!(names, ["h", "shared"], "no ring in the sum");
        assert_eq!(sum.events, vec![printk()]);
        // Merged by key, a key both hold added, sorted by value; failures added.
        let h = &sum.maps[0];
        assert_eq!(h.keys(), Some(3));
        assert_eq!(h.counts().full, 3);
        let t = h.table().expect("a table");
        let rows: Vec<(String, String, Option<usize>)> = t
            .rows
            .iter()
            .map(|r| (r.key.to_string(), r.value.to_string(), r.nonzero))
            .collect();
        assert_eq!(
            rows,
            [
                ("0x2".into(), "0x19".into(), Some(2)),
                ("0x1".into(), "0xa".into(), Some(1)),
                ("0x3".into(), "0x1".into(), Some(1)),
            ]
        );
        assert_eq!(t.copies, Some(("device", 2)));
    }

    /// A map bound on no device sums to "not bound"; one bound on some devices sums
    /// those; a ring is not summed.
    #[test]
    fn a_sum_skips_unbound_devices_and_rings() {
        let a = map("a", MapKind::Array, 4, 2);
        let unbound = traced(&a, MapData::Unbound, None, 0);
        let bound = traced(
            &a,
            MapData::Array {
                values: vec![word(4), word(0)],
                sharded: None,
            },
            None,
            0,
        );
        let s = TracedMap::sum(&[&unbound, &unbound]).unwrap();
        assert_eq!(s.image.data, MapData::Unbound);
        assert!(s.table().is_none());
        let s = TracedMap::sum(&[&unbound, &bound]).unwrap();
        assert!(s.sum_with.is_empty(), "only the bound device");
        let s = TracedMap::sum(&[&bound, &bound]).unwrap();
        let t = s.table().unwrap();
        assert_eq!((t.rows.len(), t.elided), (1, 1));
        assert_eq!(
            (t.rows[0].value.to_string(), t.rows[0].nonzero),
            ("0x8".into(), Some(2))
        );
        let r = map("r", MapKind::Ringbuf, 0, 4096);
        let ring = traced(
            &r,
            MapData::Ring {
                records: Vec::new(),
                producer: 0,
                error: None,
            },
            None,
            0,
        );
        assert!(TracedMap::sum(&[&ring, &ring]).is_none());
    }
}
