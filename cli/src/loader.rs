//! The host side of the device runtime: binds the maps a module needs before a launch and
//! reads every map back afterwards, printed the way `bpftool map dump` prints them.
//!
//! The descriptor and storage layouts are specs/abi.md's ("Maps (device runtime)"). Maps
//! with storage in the module need nothing before a launch; per-thread arrays are sized
//! from the launch, so [`bind`] allocates them and points their descriptors there.

use crate::gpu::{Buffer, Gpu, GpuError, HostBuffer, Launch, Module};
use bpf2ptx_compiler::back::ptx::{
    map_counter_symbol, map_data_symbol, map_desc_symbol, map_symbol,
};
use bpf2ptx_compiler::program::{map_type_name, MapOrigin, Object};
use serde_json::{json, Value};

/// Allocations that must outlive the launch.
pub struct Bound {
    _buffers: Vec<Buffer>,
    _host: Vec<HostBuffer>,
}

/// Where a map's storage lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Device memory (the default): fastest for the probe.
    Device,
    /// Pinned host memory mapped into the GPU: the host can read it while the kernel runs.
    /// The runtime's atomics stay at `.gpu` scope (every writer is on the GPU; the host only
    /// reads, and sees values without ordering guarantees until the kernel ends).
    Host,
}

fn word(desc: &[u8], k: usize) -> u64 {
    u64::from_le_bytes(desc[8 * k..8 * k + 8].try_into().expect("8 bytes"))
}

/// Binds the maps of `obj` for `launch`: per-thread arrays get storage sized from the
/// launch, and the maps named in `host` move to pinned host memory.
pub fn bind(
    gpu: &Gpu,
    module: &Module,
    obj: &Object,
    launch: Launch,
    host: &[String],
) -> Result<Bound, GpuError> {
    let mut bound = Bound {
        _buffers: Vec::new(),
        _host: Vec::new(),
    };
    for m in obj
        .maps
        .iter()
        .filter(|m| m.origin != MapOrigin::GlobalData)
    {
        let Some((desc, _)) = gpu.global(module, &map_desc_symbol(&m.name))? else {
            continue;
        };
        let on_host = host.contains(&m.name);
        let bytes = if m.map_type == 1502 {
            gpu.write(desc + 32, &launch.threads().to_le_bytes())?;
            let stride = u64::from(m.value_size).div_ceil(8) * 8;
            (stride * u64::from(m.max_entries) * launch.threads()) as usize
        } else if on_host {
            match gpu.global(module, &map_data_symbol(&m.name))? {
                Some((_, size)) => size,
                None => continue,
            }
        } else {
            continue;
        };
        let ptr = if on_host {
            let b = gpu.alloc_host(bytes)?;
            let p = b.device_ptr();
            bound._host.push(b);
            p
        } else {
            let mut b = gpu.alloc(bytes)?;
            let p = b.ptr();
            bound._buffers.push(b);
            p
        };
        gpu.write(desc + 24, &ptr.to_le_bytes())?;
        // A ring's counters move with it.
        if on_host && matches!(m.map_type, 27 | 1527 | 4) {
            if let Some((_, size)) = gpu.global(module, &map_counter_symbol(&m.name))? {
                let c = gpu.alloc_host(size)?;
                gpu.write(desc + 40, &c.device_ptr().to_le_bytes())?;
                bound._host.push(c);
            }
        }
    }
    Ok(bound)
}

fn hex(bytes: &[u8]) -> Value {
    Value::Array(
        bytes
            .iter()
            .map(|b| Value::String(format!("0x{b:02x}")))
            .collect(),
    )
}

/// Every map of `obj` as JSON: name, type, sizes, and its entries (`key`/`value` as hex
/// byte strings, as bpftool prints them). Per-thread arrays of more than 1024 threads
/// print, per key, the sum of the values' first 8 bytes instead of every thread's value.
pub fn dump(gpu: &Gpu, module: &Module, obj: &Object) -> Result<Value, GpuError> {
    let mut maps = Vec::new();
    for m in &obj.maps {
        let stride = (u64::from(m.value_size).div_ceil(8) * 8) as usize;
        let mut out = json!({
            "name": m.name,
            "type": map_type_name(m.map_type).unwrap_or("?"),
            "key_size": m.key_size,
            "value_size": m.value_size,
            "max_entries": m.max_entries,
        });
        if m.origin == MapOrigin::GlobalData {
            if let Some((p, size)) = gpu.global(module, &map_symbol(&m.name))? {
                out["value"] = hex(&gpu.read(p, size.min(m.value_size as usize))?);
            }
            maps.push(out);
            continue;
        }
        let Some((d, _)) = gpu.global(module, &map_desc_symbol(&m.name))? else {
            out["note"] = json!("not in this module (the program does not use it)");
            maps.push(out);
            continue;
        };
        let desc = gpu.read(d, 64)?;
        let (data, aux, drops) = (word(&desc, 3), word(&desc, 4), word(&desc, 6));
        out["drops"] = json!(drops);
        if data == 0 {
            out["note"] = json!("not bound");
            maps.push(out);
            continue;
        }
        let n = m.max_entries as usize;
        let mut entries = Vec::new();
        match m.map_type {
            2 | 6 | 1503 => {
                // A sharded array (aux = replicas) is summed replica by replica, per
                // 64-bit word: the device only ever added to it.
                let replicas = (aux as usize).max(1);
                let bytes = gpu.read(data, n * stride * replicas)?;
                for k in 0..n {
                    let mut v = bytes[k * stride..(k + 1) * stride].to_vec();
                    for r in 1..replicas {
                        let other = &bytes[(r * n + k) * stride..(r * n + k + 1) * stride];
                        for (w, o) in v.chunks_exact_mut(8).zip(other.chunks_exact(8)) {
                            let sum = u64::from_le_bytes(w.try_into().expect("8"))
                                .wrapping_add(u64::from_le_bytes(o.try_into().expect("8")));
                            w.copy_from_slice(&sum.to_le_bytes());
                        }
                    }
                    v.truncate(m.value_size as usize);
                    entries
                        .push(json!({ "key": hex(&(k as u32).to_le_bytes()), "value": hex(&v) }));
                }
                if aux > 0 {
                    out["sharded"] = json!(aux);
                }
            }

            1502 => {
                let threads = aux as usize;
                let bytes = gpu.read(data, n * threads * stride)?;
                for k in 0..n {
                    let slot = |t: usize| {
                        &bytes[(k * threads + t) * stride
                            ..(k * threads + t) * stride + m.value_size as usize]
                    };
                    let mut e = json!({ "key": hex(&(k as u32).to_le_bytes()) });
                    if threads <= 1024 {
                        e["values"] = Value::Array(
                            (0..threads)
                                .map(|t| json!({ "thread": t, "value": hex(slot(t)) }))
                                .collect(),
                        );
                    } else {
                        let sum: u64 = (0..threads)
                            .map(|t| {
                                let mut w = [0u8; 8];
                                let s = slot(t);
                                w[..s.len().min(8)].copy_from_slice(&s[..s.len().min(8)]);
                                u64::from_le_bytes(w)
                            })
                            .fold(0u64, u64::wrapping_add);
                        e["threads"] = json!(threads);
                        e["sum_u64"] = json!(sum);
                    }
                    entries.push(e);
                }
            }
            1 | 1501 => {
                let key8 = (m.key_size as usize).div_ceil(8) * 8;
                let slot = 8 + key8 + stride;
                let bytes = gpu.read(data, aux as usize * slot)?;
                for s in bytes.chunks_exact(slot) {
                    if u32::from_le_bytes(s[..4].try_into().expect("4 bytes")) == 2 {
                        let key = &s[8..8 + m.key_size as usize];
                        let value = &s[8 + key8..8 + key8 + m.value_size as usize];
                        entries.push(json!({ "key": hex(key), "value": hex(value) }));
                    }
                }
            }
            27 | 1527 | 4 => {
                let (ring, prod, cons) = read_ring(gpu, &desc)?;
                match bpf2ptx_runtime::ringbuf::records(&ring, prod, cons) {
                    Ok(rs) => {
                        out["records"] = Value::Array(rs.iter().map(|r| hex(&r.data)).collect());
                    }
                    Err(e) => out["error"] = json!(e.to_string()),
                }
                out["producer"] = json!(prod);
                maps.push(out);
                continue;
            }
            _ => {}
        }
        out["entries"] = Value::Array(entries);
        maps.push(out);
    }
    Ok(Value::Array(maps))
}

/// A ring's bytes and its producer and consumer positions, from its descriptor.
fn read_ring(gpu: &Gpu, desc: &[u8]) -> Result<(Vec<u8>, u64, u64), GpuError> {
    let (data, aux, ctr) = (word(desc, 3), word(desc, 4), word(desc, 5));
    let ring = gpu.read(data, aux as usize)?;
    let c = gpu.read(ctr, 16)?;
    Ok((ring, word(&c, 0), word(&c, 1)))
}

/// The lines `trace_printk` and `puts` wrote, formatted on the host: each record holds the
/// address of its format (or string) in a read-only global-data map and its arguments.
pub fn printk(gpu: &Gpu, module: &Module, obj: &Object) -> Result<Vec<String>, GpuError> {
    let Some((d, _)) = gpu.global(module, bpf2ptx_compiler::back::ptx::PRINTK_DESC)? else {
        return Ok(Vec::new());
    };
    let desc = gpu.read(d, 64)?;
    let (ring, prod, cons) = read_ring(gpu, &desc)?;
    let records = bpf2ptx_runtime::ringbuf::records(&ring, prod, cons).unwrap_or_default();
    // Where each global-data map lives on the device, to turn addresses into strings.
    let mut bases = Vec::new();
    for m in obj
        .maps
        .iter()
        .filter(|m| m.origin == MapOrigin::GlobalData)
    {
        if let (Some((p, size)), Some(init)) = (gpu.global(module, &map_symbol(&m.name))?, &m.init)
        {
            bases.push((p, size as u64, init.clone()));
        }
    }
    let string_at = |addr: u64, max: u64| -> String {
        for (p, size, init) in &bases {
            if (*p..p + size).contains(&addr) {
                let off = (addr - p) as usize;
                let end = init.len().min(off + max as usize);
                let bytes = &init[off.min(end)..end];
                let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
                return String::from_utf8_lossy(bytes).into_owned();
            }
        }
        format!("<string at 0x{addr:x}>")
    };
    let mut lines = Vec::new();
    for r in records {
        if r.data.len() < 48 {
            continue;
        }
        let w =
            |k: usize| u64::from_le_bytes(r.data[8 * k..8 * k + 8].try_into().expect("8 bytes"));
        let line = if w(0) == 1 {
            string_at(w(1), 4096)
        } else {
            format_printk(&string_at(w(1), w(2)), [w(3), w(4), w(5)])
        };
        lines.push(line.trim_end_matches('\n').to_string());
    }
    Ok(lines)
}

/// A small printf for `trace_printk` formats: `%d %i %u %x %X %o %p %c %%` with `l`, `ll`,
/// `h` and `hh` lengths, flags, width; at most three arguments, as in Linux.
pub fn format_printk(fmt: &str, args: [u64; 3]) -> String {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut next = args.into_iter();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&f) = it.peek() {
            if "-+ 0#".contains(f) || f.is_ascii_digit() {
                spec.push(f);
                it.next();
            } else {
                break;
            }
        }
        let mut long = 0;
        let mut short = 0;
        while let Some(&l) = it.peek() {
            match l {
                'l' => long += 1,
                'h' => short += 1,
                _ => break,
            }
            it.next();
        }
        let Some(conv) = it.next() else { break };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let v = next.next().unwrap_or(0);
        let (bits, width) = match (long, short) {
            (0, 0) => (
                32,
                spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                    .parse::<usize>()
                    .unwrap_or(0),
            ),
            (0, 1) => (16, 0),
            (0, _) => (8, 0),
            _ => (64, 0),
        };
        let width = if width == 0 {
            spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                .parse::<usize>()
                .unwrap_or(0)
        } else {
            width
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let u = v & mask;
        let signed = if bits == 64 {
            u as i64
        } else if u >> (bits - 1) & 1 == 1 {
            (u | !mask) as i64
        } else {
            u as i64
        };
        let text = match conv {
            'd' | 'i' => signed.to_string(),
            'u' => u.to_string(),
            'x' => format!("{u:x}"),
            'X' => format!("{u:X}"),
            'o' => format!("{u:o}"),
            'p' => format!("0x{v:x}"),
            'c' => char::from(u as u8).to_string(),
            other => format!("%{other}"),
        };
        let pad = if spec.starts_with('0') { '0' } else { ' ' };
        if spec.starts_with('-') {
            out.push_str(&format!("{text:<width$}"));
        } else if text.len() < width {
            out.extend(std::iter::repeat_n(pad, width - text.len()));
            out.push_str(&text);
        } else {
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::format_printk;

    #[test]
    fn printk_formats() {
        assert_eq!(
            format_printk("sm %d lane %u\n", [3, 31, 0]),
            "sm 3 lane 31\n"
        );
        assert_eq!(
            format_printk("%x %llx %5d|%%", [255, u64::MAX, 42]),
            "ff ffffffffffffffff    42|%"
        );
        assert_eq!(format_printk("[%-4d]", [7, 0, 0]), "[7   ]");
        assert_eq!(
            format_printk("%d %lld", [u64::from(u32::MAX), u64::MAX, 0]),
            "-1 -1"
        );
    }
}
