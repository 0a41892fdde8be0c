//! Reading maps back: what their operations lost ([`MapCounts`]) and every map as JSON,
//! printed the way `bpftool map dump` prints maps ([`Loader::maps_json`]). The bytes are
//! read here; what they mean is [`crate::image`]'s.

use super::{word, Bound, Loader, LoaderError, Placement};
use crate::image::{self, Copies, MapData, RawMap, RawRing};
use bpf2ptx_backend::back::ptx::map_symbol;
use bpf2ptx_compiler::program::{map_type_name, MapOrigin};
use bpf2ptx_runtime::{desc, maps, MapKind};
use serde_json::{json, Value};

pub use crate::image::MapCounts;

impl MapCounts {
    /// The counts that apply to a map of type `map_type`, as JSON.
    pub fn json(&self, map_type: u32) -> Value {
        let kind = MapKind::from_id(map_type);
        if kind.is_some_and(MapKind::is_hash) {
            let mut v = json!({ "full": self.full, "busy": self.busy });
            if kind == Some(MapKind::LruHash) {
                v["evicted"] = json!(self.evicted);
            }
            v
        } else if kind.is_some_and(MapKind::is_ring) {
            json!({ "dropped": self.dropped })
        } else {
            json!({})
        }
    }
}

impl Loader<'_> {
    /// The `drops` word of map `name`'s descriptor: records a full ring dropped. `None`
    /// when the module has no such map.
    pub fn drops(&self, name: &str) -> Result<Option<u64>, LoaderError> {
        Ok(self.counts(name)?.map(|c| c.dropped))
    }

    /// What map `name`'s operations did other than what the program asked, by reason
    /// ([`MapCounts`]). `None` when the module has no such map.
    pub fn counts(&self, name: &str) -> Result<Option<MapCounts>, LoaderError> {
        match self
            .maps
            .iter()
            .find(|b| self.obj.maps[b.index].name == name)
        {
            Some(b) => Ok(Some(self.read_counts(b)?.1)),
            None => Ok(None),
        }
    }

    /// Per program of the object that has a loop-budget counter (`--loop-budget`,
    /// specs/abi.md "Loop budget counter"): its name and the runs that ended because the
    /// budget ran out.
    pub fn loop_budget_exhausted(&self) -> Result<Vec<(String, u64)>, LoaderError> {
        let mut out = Vec::new();
        for p in &self.obj.programs {
            let sym = bpf2ptx_backend::back::ptx::loop_budget_symbol(p);
            if let Some((addr, size)) = self.gpu.global(self.module, &sym)? {
                let b = self.gpu.read(addr, size.min(8))?;
                out.push((p.name.clone(), word(&b, 0)));
            }
        }
        Ok(out)
    }

    /// [`Loader::counts`] of every map of the module whose counts are not all 0, in the
    /// object's map order: what a run must not lose silently.
    pub fn losses(&self) -> Result<Vec<(String, MapCounts)>, LoaderError> {
        let mut out = Vec::new();
        for b in &self.maps {
            let (_, c) = self.read_counts(b)?;
            if c != MapCounts::default() {
                out.push((self.obj.maps[b.index].name.clone(), c));
            }
        }
        Ok(out)
    }

    /// A bound map's key count (hash maps; `None` for other kinds) and its counts
    /// ([`image::counts`]: a ring's drops from descriptor word 6, a hash map's from its
    /// counts block).
    fn read_counts(&self, b: &Bound) -> Result<(Option<u64>, MapCounts), LoaderError> {
        let d = self.gpu.read(b.desc, desc::BYTES as usize)?;
        let block = self.counts_block(b, &d)?;
        Ok(image::counts(&self.obj.maps[b.index], &d, block.as_deref()))
    }

    /// A hash map's counts block (word 5), when it has one.
    fn counts_block(&self, b: &Bound, d: &[u8]) -> Result<Option<Vec<u8>>, LoaderError> {
        let at = desc::read(d, desc::AUX2);
        if !self.obj.maps[b.index].is(MapKind::is_hash) || at == 0 {
            return Ok(None);
        }
        Ok(Some(self.gpu.read(at, maps::COUNTS_BYTES as usize)?))
    }

    /// Every map of the object as JSON: name, type, sizes, placement and its entries
    /// (`key`/`value` as hex byte strings, as bpftool prints them). Sharded arrays are
    /// summed over their replicas; per-CPU arrays, per SM on the GPU, print every SM's
    /// copy as bpftool prints per-CPU values (`values`: `cpu` = the replica, `smid & 255`,
    /// and `value`). Per-thread and per-warp arrays of more than 1024 threads (warps)
    /// print, per key, the sum of the values' first 8 bytes instead of every one. Rings
    /// print their records (up to 1024 as byte arrays, more as one hex string each).
    pub fn maps_json(&mut self) -> Result<Value, LoaderError> {
        let mut out = Vec::new();
        for k in 0..self.obj.maps.len() {
            out.push(self.map_json(k)?);
        }
        Ok(Value::Array(out))
    }

    fn map_json(&mut self, index: usize) -> Result<Value, LoaderError> {
        let (gpu, obj) = (self.gpu, self.obj);
        let m = &obj.maps[index];
        let mut out = json!({
            "name": m.name,
            "type": map_type_name(m.map_type).unwrap_or("?"),
            "key_size": m.key_size,
            "value_size": m.value_size,
            "max_entries": m.max_entries,
        });
        if m.origin == MapOrigin::GlobalData {
            if let Some((p, size)) = gpu.global(self.module, &map_symbol(&m.name))? {
                out["value"] = hex(&gpu.read(p, size.min(m.value_size as usize))?);
            }
            return Ok(out);
        }
        let Some(k) = self.maps.iter().position(|b| b.index == index) else {
            out["note"] = json!("not in this module (the program does not use it)");
            return Ok(out);
        };
        if m.is(MapKind::is_ring) {
            // Records still in the ring join those drained before, in the ring's state.
            self.collect_ring(k)?;
        }
        let b = &self.maps[k];
        let d = gpu.read(b.desc, desc::BYTES as usize)?;
        let block = self.counts_block(b, &d)?;
        let (data, aux2) = (desc::read(&d, desc::DATA), desc::read(&d, desc::AUX2));
        let storage = match image::storage_bytes(m, &d) {
            0 => Vec::new(),
            n => gpu.read(data, n as usize)?,
        };
        let counters = if m.is(MapKind::is_ring) && data != 0 {
            let c = gpu.read(aux2, 16)?;
            Some([word(&c, 0), word(&c, 1)])
        } else {
            None
        };
        let raw = RawMap {
            desc: &d,
            storage: &storage,
            counts: block.as_deref(),
            ring: counters.map(|counters| RawRing {
                counters,
                taken: &b.ring.records,
                taken_error: b.ring.error.as_ref(),
            }),
        };
        let img = image::decode(m, &raw)?;
        if b.placement == Placement::Host {
            out["placement"] = json!("host");
        }
        if m.is(MapKind::is_ring) {
            out["drops"] = json!(img.counts.dropped);
        }
        if let Some(keys) = img.keys {
            out["keys"] = json!(keys);
        }
        out["counts"] = img.counts.json(m.map_type);
        let index_key = |key: usize| hex(&(key as u32).to_le_bytes());
        let entries: Vec<Value> = match img.data {
            MapData::Unbound => {
                out["note"] = json!("not bound");
                return Ok(out);
            }
            MapData::PerSm(copies) => {
                let entries = (0..copies.keys())
                    .map(|key| {
                        let values = (0..copies.copies())
                            .map(|r| json!({ "cpu": r, "value": hex(copies.get(key, r)) }))
                            .collect();
                        json!({ "key": index_key(key), "values": Value::Array(values) })
                    })
                    .collect();
                out["per_sm"] = json!(copies.copies());
                out["entries"] = Value::Array(entries);
                return Ok(out);
            }
            MapData::Array { values, sharded } => {
                if let Some(replicas) = sharded {
                    out["sharded"] = json!(replicas);
                }
                values
                    .iter()
                    .enumerate()
                    .map(|(key, v)| json!({ "key": index_key(key), "value": hex(v) }))
                    .collect()
            }
            MapData::PerUnit { unit, values } => (0..values.keys())
                .map(|key| per_unit_entry(unit, &values, key, index_key(key)))
                .collect(),
            MapData::Hash { entries } => entries
                .iter()
                .map(|(k, v)| json!({ "key": hex(k), "value": hex(v) }))
                .collect(),
            MapData::Ring {
                records,
                producer,
                error,
            } => {
                if records.len() <= 1024 {
                    out["records"] = Value::Array(records.iter().map(|r| hex(&r.data)).collect());
                } else {
                    out["record_count"] = json!(records.len());
                    out["records_hex"] = Value::Array(
                        records
                            .iter()
                            .map(|r| {
                                Value::String(r.data.iter().map(|b| format!("{b:02x}")).collect())
                            })
                            .collect(),
                    );
                }
                if let Some(e) = error {
                    out["error"] = json!(e.to_string());
                }
                out["producer"] = json!(producer);
                return Ok(out);
            }
            MapData::Other => Vec::new(),
        };
        out["entries"] = Value::Array(entries);
        Ok(out)
    }
}

/// One key of a per-thread or per-warp array: every unit's value, or for more than 1024
/// units their count and the sum of the values' first 8 bytes.
fn per_unit_entry(unit: image::Unit, values: &Copies, key: usize, key_json: Value) -> Value {
    let units = values.copies();
    let mut e = json!({ "key": key_json });
    if units <= 1024 {
        e["values"] = Value::Array(
            (0..units)
                .map(|t| json!({ unit.name(): t, "value": hex(values.get(key, t)) }))
                .collect(),
        );
    } else {
        let sum = (0..units)
            .map(|t| word(&pad8(values.get(key, t)), 0))
            .fold(0u64, u64::wrapping_add);
        e[format!("{}s", unit.name())] = json!(units);
        e["sum_u64"] = json!(sum);
    }
    e
}

fn pad8(s: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    let n = s.len().min(8);
    w[..n].copy_from_slice(&s[..n]);
    w
}

fn hex(bytes: &[u8]) -> Value {
    Value::Array(
        bytes
            .iter()
            .map(|b| Value::String(format!("0x{b:02x}")))
            .collect(),
    )
}
