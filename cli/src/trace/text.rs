//! The text form of a snapshot (specs/trace.md, "Text"): a header, each map as a table
//! or a histogram, the non-zero failure counters, then the records that arrived.

use super::hist;
use super::snapshot::{EventData, Scope, Snapshot, TracedMap};
use super::types::Value;
use bpf2ptx_loader::image::MapData;
use std::fmt::Write;

/// Writes `s` as text.
pub(super) fn render(s: &Snapshot, max_rows: usize) -> String {
    let mut out = String::new();
    let secs = s.elapsed_ns as f64 / 1e9;
    let device = match &s.scope {
        Scope::Device {
            device,
            context,
            several: true,
        } => match context {
            0 => format!(", device {device}"),
            c => format!(", device {device} (context {})", c + 1),
        },
        Scope::Sum { devices } => {
            let ids: Vec<String> = devices.iter().map(u32::to_string).collect();
            format!(", sum of devices {}", ids.join(", "))
        }
        _ => String::new(),
    };
    let end = s
        .end
        .map(|e| format!(": {}", e.describe()))
        .unwrap_or_default();
    let _ = writeln!(out, "=== bpf2ptx trace {secs:.3} s{device}{end} ===");
    for m in &s.maps {
        map(&mut out, m, max_rows);
    }
    let failures = s.failures();
    if !failures.is_empty() {
        let _ = writeln!(out, "\nfailures:");
        for (what, reason, n) in failures {
            let _ = match what.strip_prefix("program ") {
                Some(p) if reason == "loop_budget" => {
                    writeln!(out, "  loop budget ran out: {p} {n} times")
                }
                _ => writeln!(out, "  {what}: {n} {}", reason_text(reason)),
            };
        }
    }
    if !s.events.is_empty() {
        let _ = writeln!(out, "\nrecords:");
        for e in &s.events {
            let at = e.ns as f64 / 1e9;
            let _ = match &e.data {
                EventData::Ring { map, data } => {
                    let v = Value::of(s.ring_value(map), data);
                    writeln!(out, "  [{at:.6}] @{map}: {v}")
                }
                EventData::Printk { line } => writeln!(out, "  [{at:.6}] printk: {line}"),
            };
        }
    }
    out
}

/// What each failure reason means, after its count.
fn reason_text(reason: &str) -> &'static str {
    match reason {
        "full" => "refused (full)",
        "busy" => "gave up waiting (busy)",
        "evicted" => "evicted (LRU)",
        "dropped" => "dropped (ring full)",
        _ => "runs ended by the loop budget",
    }
}

fn map(out: &mut String, m: &TracedMap, max_rows: usize) {
    let name = &m.map.name;
    let kind = m.kind_name();
    if let Some(h) = m.histogram() {
        // bpftrace's layout: `@name:` then the bars, then a blank line.
        let _ = writeln!(out, "\n@{name}:");
        if h.buckets.is_empty() {
            let _ = writeln!(out, "  (empty)");
        }
        out.push_str(&hist::text(&h.buckets));
        return;
    }
    match &m.image.data {
        MapData::Unbound => {
            let _ = writeln!(out, "\n@{name}: {kind}, not bound");
            return;
        }
        MapData::Ring { records, .. } => {
            let n = records.len() as u64;
            let _ = writeln!(out, "\n@{name}: {kind}, {n} {}", plural(n, "record"));
            return;
        }
        MapData::Other => return,
        _ => {}
    }
    let Some(t) = m.table() else { return };
    let mut head = format!("\n@{name}: {kind}[{}]", m.map.max_entries);
    if let Some(r) = t.sharded {
        let _ = write!(head, ", {r} replicas summed");
    }
    match t.copies {
        Some(("device", n)) => {
            let _ = write!(head, ", sum of {n} devices");
        }
        Some((unit, n)) => {
            let _ = write!(head, ", sum of {n} {unit} copies");
        }
        None => {}
    }
    if let Some(keys) = m.keys() {
        let _ = write!(head, ", {keys} {}", plural(keys, "key"));
    }
    out.push_str(&head);
    out.push('\n');
    // The first `max_rows` rows (as sorted: arrays by key, hash maps largest first).
    let shown = if max_rows == 0 {
        t.rows.len()
    } else {
        t.rows.len().min(max_rows)
    };
    let mut rows: Vec<[String; 3]> = t.rows[..shown]
        .iter()
        .map(|r| {
            let n = r.nonzero.map(|n| n.to_string()).unwrap_or_default();
            [r.key.to_string(), r.value.to_string(), n]
        })
        .collect();
    if rows.is_empty() {
        let _ = writeln!(out, "  (empty)");
    } else {
        let third = t
            .copies
            .map(|(unit, _)| format!("{unit}s"))
            .unwrap_or_default();
        rows.insert(0, ["key".into(), "value".into(), third]);
        let kw = rows.iter().map(|r| r[0].chars().count()).max().unwrap_or(0);
        let vw = rows.iter().map(|r| r[1].chars().count()).max().unwrap_or(0);
        for [k, v, n] in rows {
            let line = if t.copies.is_some() {
                format!("  {k:>kw$}  {v:<vw$}  {n}")
            } else {
                format!("  {k:>kw$}  {v}")
            };
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    if shown < t.rows.len() {
        let more = t.rows.len() - shown;
        let _ = writeln!(
            out,
            "  ({more} more {} not shown: --rows 0 prints all, --format json has every one)",
            plural(more as u64, "row")
        );
    }
    if t.elided > 0 {
        let _ = writeln!(
            out,
            "  ({} zero {} elided)",
            t.elided,
            plural(t.elided as u64, "row")
        );
    }
}

/// `word` or `words` for `n`.
fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}
