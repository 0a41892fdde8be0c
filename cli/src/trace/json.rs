//! The JSON form of a snapshot (specs/trace.md, "JSON"; schema
//! specs/trace-snapshot.schema.json): one object, printed on one line.

use super::snapshot::{AppEnd, EventData, Scope, Snapshot, TracedMap};
use super::types::{hex, Value};
use bpf2ptx_loader::image::MapData;
use serde_json::{json, Value as J};

/// `s` as one JSON object.
pub(super) fn render(s: &Snapshot) -> J {
    let end = s.end.map(|e| match e {
        AppEnd::Exited { code } => json!({ "exit_code": code, "text": e.describe() }),
        AppEnd::Signaled { signal } => json!({ "signal": signal, "text": e.describe() }),
    });
    let failures: Vec<J> = s
        .failures()
        .into_iter()
        .map(|(what, reason, count)| json!({ "what": what, "reason": reason, "count": count }))
        .collect();
    let events: Vec<J> = s
        .events
        .iter()
        .map(|e| match &e.data {
            EventData::Ring { map, data } => json!({
                "ns": e.ns,
                "ring": map,
                "value": Value::of(s.ring_value(map), data).json(),
                "hex": hex(data),
            }),
            EventData::Printk { line } => json!({ "ns": e.ns, "printk": line }),
        })
        .collect();
    let mut out = json!({
        "elapsed_ns": s.elapsed_ns,
        "device": s.scope.device(),
        "end": end,
        "maps": s.maps.iter().map(map).collect::<Vec<_>>(),
        "failures": failures,
        "events": events,
    });
    match &s.scope {
        Scope::Device { context, .. } if *context > 0 => out["context"] = json!(context + 1),
        Scope::Sum { devices } => out["sum_of"] = json!(devices),
        _ => {}
    }
    out
}

fn map(m: &TracedMap) -> J {
    let mut out = json!({
        "name": m.map.name,
        "type": m.kind_name(),
        "key_size": m.map.key_size,
        "value_size": m.map.value_size,
        "max_entries": m.map.max_entries,
    });
    if let Some(keys) = m.keys() {
        out["keys"] = json!(keys);
    }
    match &m.image.data {
        MapData::Unbound => out["bound"] = json!(false),
        MapData::Ring {
            records, producer, ..
        } => {
            out["records"] = json!(records.len());
            out["producer"] = json!(producer);
        }
        _ => {}
    }
    if let Some(h) = m.histogram() {
        let buckets: Vec<J> = h
            .buckets
            .iter()
            .map(|b| {
                json!({
                    "label": b.label,
                    "min": b.min.map(bound),
                    "max": b.max.map(bound),
                    "count": b.count,
                })
            })
            .collect();
        out["histogram"] = json!({ "kind": hist_kind(&h.hist), "buckets": buckets });
    } else if let Some(t) = m.table() {
        let rows: Vec<J> = t
            .rows
            .iter()
            .map(|r| {
                let mut row = json!({ "key": r.key.json(), "value": r.value.json() });
                if let Some(n) = r.nonzero {
                    row["nonzero_copies"] = json!(n);
                }
                row
            })
            .collect();
        if let Some(r) = t.sharded {
            out["sharded"] = json!(r);
        }
        if let Some((unit, n)) = t.copies {
            out["copies"] = json!({ "unit": unit, "count": n });
        }
        out["entries"] = J::Array(rows);
        out["elided"] = json!(t.elided);
    }
    out
}

/// A bucket bound as a JSON number: exact up to 2^64, the largest a u64 count's log2
/// bucket can reach; past that (keys of 64 and more) a float.
fn bound(v: i128) -> J {
    match u64::try_from(v) {
        Ok(u) => json!(u),
        Err(_) => i64::try_from(v).map_or_else(|_| json!(v as f64), |i| json!(i)),
    }
}

fn hist_kind(h: &super::args::Hist) -> J {
    match *h {
        super::args::Hist::Log2 => json!({ "log2": {} }),
        super::args::Hist::Linear { min, max, step } => {
            json!({ "linear": { "min": min, "max": max, "step": step } })
        }
    }
}
