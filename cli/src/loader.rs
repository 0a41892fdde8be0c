//! The host side of the device runtime: binds the maps a module needs before a launch and
//! reads every map back afterwards, printed the way `bpftool map dump` prints them.
//!
//! The descriptor and storage layouts are specs/abi.md's ("Maps (device runtime)"). Maps
//! with storage in the module need nothing before a launch; per-thread arrays are sized
//! from the launch, so [`bind`] allocates them and points their descriptors there.

use crate::gpu::{Buffer, Gpu, GpuError, Launch, Module};
use bpf2ptx_compiler::back::ptx::{map_desc_symbol, map_symbol};
use bpf2ptx_compiler::program::{map_type_name, MapOrigin, Object};
use serde_json::{json, Value};

/// Allocations that must outlive the launch.
pub struct Bound {
    _buffers: Vec<Buffer>,
}

fn word(desc: &[u8], k: usize) -> u64 {
    u64::from_le_bytes(desc[8 * k..8 * k + 8].try_into().expect("8 bytes"))
}

/// Binds the per-thread arrays of `obj` for `launch`.
pub fn bind(gpu: &Gpu, module: &Module, obj: &Object, launch: Launch) -> Result<Bound, GpuError> {
    let mut buffers = Vec::new();
    for m in obj.maps.iter().filter(|m| m.map_type == 1502) {
        let Some((desc, _)) = gpu.global(module, &map_desc_symbol(&m.name))? else {
            continue;
        };
        let stride = u64::from(m.value_size).div_ceil(8) * 8;
        let bytes = stride * u64::from(m.max_entries) * launch.threads();
        let mut buf = gpu.alloc(bytes as usize)?;
        let ptr = buf.ptr();
        gpu.write(desc + 24, &ptr.to_le_bytes())?;
        gpu.write(desc + 32, &launch.threads().to_le_bytes())?;
        buffers.push(buf);
    }
    Ok(Bound { _buffers: buffers })
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
                let bytes = gpu.read(data, n * stride)?;
                for k in 0..n {
                    let v = &bytes[k * stride..k * stride + m.value_size as usize];
                    entries.push(json!({ "key": hex(&(k as u32).to_le_bytes()), "value": hex(v) }));
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
            _ => {}
        }
        out["entries"] = Value::Array(entries);
        maps.push(out);
    }
    Ok(Value::Array(maps))
}
