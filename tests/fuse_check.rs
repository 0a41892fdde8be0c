//! Fused and unfused injection side by side on the PTX-level model ([`crate::ptx_model`]):
//! the same probes woven into the same application with and without fusion
//! (`bpf2ptx inject` with and without `--no-fuse`), each run over the same launch, and
//! every map a host would read compared (sharded arrays summed over their replicas, as
//! the host sums them). Used by tests/tests/fuse.rs.

use crate::ptx_model::Model;
use bpf2ptx::inject;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::isa::table::{CallKind, Kind};
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_runtime::MapKind;
use std::path::Path;

/// Environment variable: a folder where tests/tests/fuse.rs's randomized test writes each
/// case (fused and unfused PTX, the launch and the maps to read, the model's outcome) for
/// the same comparison on a GPU (tests/gpu/fuse_random.py).
pub const EXPORT_VAR: &str = "BPF2PTX_FUSE_RANDOM_OUT";

/// The initial contents of a buffer, byte by byte.
pub type Fill = fn(usize) -> u8;

/// An application launch: the kernel, its shape and how to make its arguments.
pub struct App {
    /// The application's PTX.
    pub ptx: String,
    /// The kernel to launch.
    pub kernel: String,
    /// Blocks.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Buffers to allocate (bytes, initial contents by index), passed first, in order.
    pub buffers: Vec<(u64, Fill)>,
    /// Scalar arguments after the buffers.
    pub scalars: Vec<u64>,
}

/// What one run left behind: each map's contents as the host reads them (by map name),
/// and each buffer's bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    /// `(map name, bytes)`: arrays summed over replicas, per-unit arrays' whole storage.
    pub maps: Vec<(String, Vec<u8>)>,
    /// The application's buffers after the launch.
    pub buffers: Vec<Vec<u8>>,
}

/// Injects the probes of `probes` into `app` with `opts` and runs the result on the
/// model; `obj` is the probe object (for its maps).
pub fn run(
    probes: &Path,
    obj: &Object,
    app: &App,
    opts: &inject::Options,
) -> Result<Outcome, String> {
    let (woven, _) =
        inject::inject(probes, &app.ptx, "app.ptx", opts).map_err(|e| e.to_string())?;
    run_text(&woven.text, obj, app)
}

/// Runs already woven PTX on the model.
pub fn run_text(text: &str, obj: &Object, app: &App) -> Result<Outcome, String> {
    let mut m = Model::new(text)?;
    let threads =
        u64::from(app.grid.iter().product::<u32>()) * u64::from(app.block.iter().product::<u32>());
    let warps = u64::from(app.grid.iter().product::<u32>())
        * u64::from(app.block.iter().product::<u32>().div_ceil(32));
    // Per-thread and per-warp arrays get storage for the launch, bound as a loader binds
    // it (descriptor words 3 and 4).
    let mut bound = Vec::new();
    for map in &obj.maps {
        if map.origin == MapOrigin::GlobalData || !map.is(MapKind::is_per_unit) {
            continue;
        }
        let Some((desc, _)) = m.symbol(&ptx::map_desc_symbol(&map.name)) else {
            continue;
        };
        let units = if map.kind() == Some(MapKind::PerWarpArray) {
            warps
        } else {
            threads
        };
        let stride = bpf2ptx_runtime::maps::round8(u64::from(map.value_size));
        let bytes = units * u64::from(map.max_entries) * stride;
        let at = m.alloc(bytes);
        m.write(desc + 24, &at.to_le_bytes());
        m.write(desc + 32, &units.to_le_bytes());
        bound.push((map.name.clone(), at, bytes));
    }
    let mut args = Vec::new();
    let mut bufs = Vec::new();
    for (bytes, fill) in &app.buffers {
        let at = m.alloc(*bytes);
        let data: Vec<u8> = (0..*bytes as usize).map(fill).collect();
        m.write(at, &data);
        args.push(at);
        bufs.push((at, *bytes));
    }
    args.extend(&app.scalars);
    m.launch(&app.kernel, app.grid, app.block, &args, 200_000_000)?;
    let mut maps = Vec::new();
    for map in &obj.maps {
        let bytes = if map.origin == MapOrigin::GlobalData {
            match m.symbol(&ptx::map_symbol(&map.name)) {
                Some((at, n)) => m.read(at, n),
                None => continue,
            }
        } else if let Some((_, at, n)) = bound.iter().find(|b| b.0 == map.name) {
            m.read(*at, *n)
        } else if map.is(MapKind::is_array_like) {
            let Some((desc, _)) = m.symbol(&ptx::map_desc_symbol(&map.name)) else {
                continue;
            };
            let word = |k: u64| u64::from_le_bytes(m.read(desc + 8 * k, 8).try_into().expect("8"));
            let (data, replicas, replica) = (word(3), word(4), word(5));
            let stride = bpf2ptx_runtime::maps::round8(u64::from(map.value_size));
            let size = u64::from(map.max_entries) * stride;
            if replicas == 0 {
                m.read(data, size)
            } else {
                let mut sum = vec![0u64; (size / 8) as usize];
                for r in 0..replicas {
                    let b = m.read(data + r * replica, size);
                    for (k, w) in b.chunks(8).enumerate() {
                        sum[k] = sum[k].wrapping_add(u64::from_le_bytes(w.try_into().expect("8")));
                    }
                }
                sum.iter().flat_map(|w| w.to_le_bytes()).collect()
            }
        } else {
            continue;
        };
        maps.push((map.name.clone(), bytes));
    }
    let buffers = bufs.iter().map(|&(at, n)| m.read(at, n)).collect();
    Ok(Outcome { maps, buffers })
}

/// The u64 words of a map's bytes.
pub fn words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|w| {
            let mut b = [0u8; 8];
            b[..w.len()].copy_from_slice(w);
            u64::from_le_bytes(b)
        })
        .collect()
}

/// Writes case `name` into `dir` for tests/gpu/fuse_random.py: `NAME.fused.ptx`,
/// `NAME.unfused.ptx` and `NAME.json` (the kernel, grid and block; the buffers' sizes and
/// their fill, `k * 13 % 256`, the only one the randomized test uses; the scalars; per
/// map how a host reads it: its descriptor, global-data or per-unit storage symbol,
/// entries and stride; whether a probe stores the timer, whose values differ from run to
/// run; and the model's outcome of the fused module, hex per map).
pub fn export_case(
    dir: &Path,
    name: &str,
    fused: &str,
    unfused: &str,
    obj: &Object,
    app: &App,
    model: &Outcome,
) -> std::io::Result<()> {
    use serde_json::json;
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(format!("{name}.fused.ptx")), fused)?;
    std::fs::write(dir.join(format!("{name}.unfused.ptx")), unfused)?;
    let maps: Vec<_> = obj
        .maps
        .iter()
        .map(|m| {
            let global = m.origin == MapOrigin::GlobalData;
            json!({
                "name": m.name,
                "desc": (!global).then(|| ptx::map_desc_symbol(&m.name)),
                "global": global.then(|| ptx::map_symbol(&m.name)),
                "per_unit": m.is(MapKind::is_per_unit),
                "per_warp": m.kind() == Some(MapKind::PerWarpArray),
                "max_entries": m.max_entries,
                "stride": bpf2ptx_runtime::maps::round8(u64::from(m.value_size)),
            })
        })
        .collect();
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let model: serde_json::Map<String, serde_json::Value> = model
        .maps
        .iter()
        .map(|(n, b)| (n.clone(), json!(hex(b))))
        .collect();
    let timer = obj.programs.iter().any(|p| {
        p.insns.iter().any(|i| {
            matches!(i.kind(), Kind::Call(CallKind::Helper))
                && bpf2ptx_runtime::is_helper(i.imm, "get_globaltimer")
        })
    });
    let doc = json!({
        "kernel": app.kernel,
        "grid": app.grid,
        "block": app.block,
        "buffers": app.buffers.iter().map(|b| b.0).collect::<Vec<_>>(),
        "fill": "k * 13 % 256",
        "scalars": app.scalars,
        "timer": timer,
        "maps": maps,
        "model": model,
    });
    std::fs::write(
        dir.join(format!("{name}.json")),
        serde_json::to_string_pretty(&doc).expect("json"),
    )
}
