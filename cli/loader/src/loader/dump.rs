//! Reading maps back: what their operations lost ([`MapCounts`]) and every map as JSON,
//! printed the way `bpftool map dump` prints maps ([`Loader::maps_json`]).

use super::{word, Bound, Loader, LoaderError, Placement};
use bpf2ptx_backend::back::ptx::map_symbol;
use bpf2ptx_compiler::program::{map_type_name, MapOrigin};
use bpf2ptx_runtime::{desc, maps, MapKind};
use serde_json::{json, Value};

/// What a map's operations did other than what the program asked, by reason: nothing a
/// probe does is lost without being counted here (specs/abi.md, "Hash maps" and the
/// ringbuf bullet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapCounts {
    /// Hash maps: insertions refused because the map held `max_entries` keys (-E2BIG).
    pub full: u64,
    /// Hash maps: operations that gave up waiting for a lock or a slot (-EBUSY).
    pub busy: u64,
    /// LRU hash maps: entries evicted to make room (what the map did instead of refusing).
    pub evicted: u64,
    /// Rings: records dropped because the ring had no room.
    pub dropped: u64,
}

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

impl std::fmt::Display for MapCounts {
    /// `3 refused (full), 2 dropped`: the non-zero counts, for a line on stderr.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            (self.full, "refused (full)"),
            (self.busy, "gave up waiting (busy)"),
            (self.evicted, "evicted (LRU)"),
            (self.dropped, "dropped (ring full)"),
        ];
        let text: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        f.write_str(&text.join(", "))
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

    /// A bound map's key count (hash maps; `None` for other kinds) and its counts: a
    /// ring's drops from descriptor word 6, a hash map's from its counts block (word 5,
    /// the shards summed).
    fn read_counts(&self, b: &Bound) -> Result<(Option<u64>, MapCounts), LoaderError> {
        let d = self.gpu.read(b.desc, desc::BYTES as usize)?;
        let mut c = MapCounts {
            dropped: desc::read(&d, desc::DROPS),
            ..MapCounts::default()
        };
        let counts = desc::read(&d, desc::AUX2);
        if !self.obj.maps[b.index].is(MapKind::is_hash) || counts == 0 {
            return Ok((None, c));
        }
        let block = self.gpu.read(counts, maps::COUNTS_BYTES as usize)?;
        let (keys, [full, busy, evicted]) = maps::read_counts(&block);
        (c.full, c.busy, c.evicted) = (full, busy, evicted);
        Ok((Some(keys), c))
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
        let stride = (u64::from(m.value_size).div_ceil(8) * 8) as usize;
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
        let d = gpu.read(self.maps[k].desc, desc::BYTES as usize)?;
        let (data, aux, aux2) = (
            desc::read(&d, desc::DATA),
            desc::read(&d, desc::AUX),
            desc::read(&d, desc::AUX2),
        );
        if self.maps[k].placement == Placement::Host {
            out["placement"] = json!("host");
        }
        let (keys, counts) = self.read_counts(&self.maps[k])?;
        if m.is(MapKind::is_ring) {
            out["drops"] = json!(counts.dropped);
        }
        if let Some(keys) = keys {
            out["keys"] = json!(keys);
        }
        out["counts"] = counts.json(m.map_type);
        if data == 0 {
            out["note"] = json!("not bound");
            return Ok(out);
        }
        let n = m.max_entries as usize;
        let mut entries = Vec::new();
        match m.kind() {
            Some(kind) if kind.is_array_like() => {
                // A sharded array (aux = replicas) is summed replica by replica, per
                // 64-bit word: the device only ever added to it. A per-CPU array's
                // replicas are the SMs' own copies and print one by one.
                // Replica r starts at r * aux2 (whole 128-byte lines, specs/abi.md).
                let replicas = (aux as usize).max(1);
                let replica = if aux > 0 { aux2 as usize } else { n * stride };
                let bytes = gpu.read(data, replica * (replicas - 1) + n * stride)?;
                if kind == MapKind::PercpuArray && aux > 0 {
                    for key in 0..n {
                        let values = (0..replicas)
                            .map(|r| {
                                let at = r * replica + key * stride;
                                let v = &bytes[at..at + m.value_size as usize];
                                json!({ "cpu": r, "value": hex(v) })
                            })
                            .collect();
                        entries.push(json!({
                            "key": hex(&(key as u32).to_le_bytes()),
                            "values": Value::Array(values),
                        }));
                    }
                    out["per_sm"] = json!(aux);
                    out["entries"] = Value::Array(entries);
                    return Ok(out);
                }
                for key in 0..n {
                    let mut v = bytes[key * stride..(key + 1) * stride].to_vec();
                    for r in 1..replicas {
                        let at = r * replica + key * stride;
                        for (w, o) in v
                            .chunks_exact_mut(8)
                            .zip(bytes[at..at + stride].chunks_exact(8))
                        {
                            let sum = word(w, 0).wrapping_add(word(o, 0));
                            w.copy_from_slice(&sum.to_le_bytes());
                        }
                    }
                    v.truncate(m.value_size as usize);
                    entries
                        .push(json!({ "key": hex(&(key as u32).to_le_bytes()), "value": hex(&v) }));
                }
                if aux > 0 {
                    out["sharded"] = json!(aux);
                }
            }
            Some(kind) if kind.is_per_unit() => {
                let (unit, units) = if kind.layout() == MapKind::PerThreadArray {
                    ("thread", "threads")
                } else {
                    ("warp", "warps")
                };
                let threads = aux as usize;
                let bytes = gpu.read(data, n * threads * stride)?;
                for key in 0..n {
                    let slot = |t: usize| {
                        let at = (key * threads + t) * stride;
                        &bytes[at..at + m.value_size as usize]
                    };
                    let mut e = json!({ "key": hex(&(key as u32).to_le_bytes()) });
                    if threads <= 1024 {
                        e["values"] = Value::Array(
                            (0..threads)
                                .map(|t| json!({ unit: t, "value": hex(slot(t)) }))
                                .collect(),
                        );
                    } else {
                        let sum = (0..threads)
                            .map(|t| word(&pad8(slot(t)), 0))
                            .fold(0u64, u64::wrapping_add);
                        e[units] = json!(threads);
                        e["sum_u64"] = json!(sum);
                    }
                    entries.push(e);
                }
            }
            Some(kind) if kind.is_hash() => {
                let key8 = (m.key_size as usize).div_ceil(8) * 8;
                let slot = 8 + key8 + stride;
                let bytes = gpu.read(data, aux as usize * slot)?;
                for s in bytes.chunks_exact(slot) {
                    let state = word(s, 0) as u32;
                    if state == maps::SLOT_FULL || state == maps::SLOT_HELD {
                        let key = &s[8..8 + m.key_size as usize];
                        let value = &s[8 + key8..8 + key8 + m.value_size as usize];
                        entries.push(json!({ "key": hex(key), "value": hex(value) }));
                    }
                }
            }
            Some(kind) if kind.is_ring() => {
                self.collect_ring(k)?;
                let st = &self.maps[k].ring;
                let recs = &st.records;
                if recs.len() <= 1024 {
                    out["records"] = Value::Array(recs.iter().map(|r| hex(&r.data)).collect());
                } else {
                    out["record_count"] = json!(recs.len());
                    out["records_hex"] = Value::Array(
                        recs.iter()
                            .map(|r| {
                                Value::String(r.data.iter().map(|b| format!("{b:02x}")).collect())
                            })
                            .collect(),
                    );
                }
                if let Some(e) = &st.error {
                    out["error"] = json!(e.to_string());
                }
                let ctr = gpu.read(aux2, 16)?;
                out["producer"] = json!(word(&ctr, 0));
                return Ok(out);
            }
            _ => {}
        }
        out["entries"] = Value::Array(entries);
        Ok(out)
    }
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
