//! The CPU side of issue 18's GPU checks of Triton and torch.compile kernels, so that what
//! the GPU machine runs next is known to hold together before it gets there:
//!
//! - examples/probes/kernel_stats.bpf.o (tests/gpu/trace_compile.py's probe): it verifies,
//!   GPU and host programs alike; its host program shares exactly the maps
//!   trace_compile.py places in pinned host memory (`HOST_MAPS`);
//! - trace_compile.py's override (its `instrument_dump` over a dump directory laid out as
//!   Triton's, with a Hopper `sm_90a` kernel and an nvcc one): the instrumented PTX is
//!   byte for byte what `bpf2ptx trace`'s interposer makes of the same PTX (its inject
//!   options: rebound maps, the shared maps pinned and unsharded), so trace binds the
//!   cubin Triton assembles from it as one of its own; ptxas assembles it; `cached_ptx`
//!   tells instrumented PTX from Triton's own;
//! - trace_compile.py's `analyse` on snapshots printed by `bpf2ptx trace`'s own JSON
//!   renderer from known map contents (a process tree: a periodic and a final round, a
//!   launcher without a device, two devices with the process-wide maps only in the sum):
//!   every row passes where the maps agree with the profiler's counts, and the rows that
//!   should fail do when a kernel's GPU launches or warps are off, in override mode and
//!   in trace-only mode;
//! - tests/gpu/trace/compile_app.py's reader of torch.profiler's Chrome trace;
//! - tests/gpu/triton_common.py's `traffic`, which sums mem_traffic.bpf.o's maps for the
//!   Triton checks (triton_attach.py, triton_softmax.py), on keys laid out as the probe
//!   lays them out.
//!
//! The Python parts need python3 (tests/run.sh needs it too); ptxas as the other tests
//! find it.

use bpf2ptx::host::HostPrograms;
use bpf2ptx::inject::{self, Options};
use bpf2ptx::trace::{self, AppEnd, DeviceView, Format, Snapshot, TracedMap};
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::image::{MapCounts, MapData, MapImage};
use bpf2ptx_tests::{bpf2ptx_bin, python3, repo_root, require_ptxas};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

const STATS: &str = "examples/probes/kernel_stats.bpf.o";

fn object(rel: &str) -> Object {
    bpf2ptx::load_path(&repo_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// python3 `script` (which prints one JSON value) with `input` written to a file, its path
/// the script's argv[1]; the value.
fn python_json(script: &str, input: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("input.json");
    std::fs::write(&f, input.to_string()).unwrap();
    let out = python3(&["-c", script, f.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)))
}

fn fnv1a64(name: &str) -> u64 {
    bpf2ptx::host::kernel_hash(name)
}

#[test]
fn kernel_stats_verifies_and_shares_the_maps_the_override_pins() {
    let out = Command::new(bpf2ptx_bin())
        .args(["verify", STATS])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    for p in ["launch_start", "warp_enter", "warp_exit"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(&format!("program {p} ")) && l.contains("accepted")),
            "{stdout}"
        );
    }
    assert!(
        stderr.contains("host-side program on_launch (section host/launch/*")
            && stderr.contains("accepted for bpf2ptx trace"),
        "{stderr}"
    );
    let obj = object(STATS);
    let host = HostPrograms::load(&obj, &[]).expect("the host program loads");
    let mut shared: Vec<String> = host
        .shared_maps
        .iter()
        .map(|&k| obj.maps[k].name.clone())
        .collect();
    shared.sort();
    let got = python_json(
        "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_compile as t; \
         print(json.dumps(sorted(t.HOST_MAPS)))",
        &json!(null),
    );
    assert_eq!(got, json!(shared), "trace_compile.HOST_MAPS");
}

/// ptxas here may be older than the PTX's `.version` (nvcc 13's 9.0); nothing in these
/// kernels is newer than 8.8, so the check lowers it as tests/tests/gallery.rs does.
fn assemble(ptxas: &Path, ptx: &Path) -> Output {
    let mut t = std::fs::read_to_string(ptx).unwrap();
    if let Some(v) = t.lines().find(|l| l.starts_with(".version ")) {
        let ver: f64 = v[".version ".len()..].trim().parse().unwrap_or(0.0);
        if ver > 8.8 {
            t = t.replacen(v, ".version 8.8", 1);
        }
    }
    let arch = if t.contains(".target sm_90a") {
        "sm_90a"
    } else {
        "sm_90"
    };
    let src = ptx.with_extension("88.ptx");
    std::fs::write(&src, t).unwrap();
    Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-o")
        .arg(src.with_extension("cubin"))
        .arg(&src)
        .output()
        .unwrap()
}

#[test]
fn the_override_instruments_as_the_interposer_does_and_ptxas_assembles_it() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, ov) = (dir.path().join("dump"), dir.path().join("override"));
    // Triton's layout: DUMP/<hash>/<kernel>.<stage>.
    let kernels = [
        (
            "4f3c2a0e",
            "hopper_copies",
            "tests/inject/hand/hopper_memory.ptx",
        ),
        (
            "0123abcd",
            "vecadd",
            "tests/inject/fatbin/vecadd.compute_90.ptx",
        ),
    ];
    for (hash, name, src) in kernels {
        let d = dump.join(hash);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(repo_root().join(src), d.join(format!("{name}.ptx"))).unwrap();
        std::fs::write(d.join(format!("{name}.ttgir")), "// not PTX").unwrap();
    }
    let got = python_json(
        "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_compile as t; \
         d = json.load(open(sys.argv[1])); \
         print(json.dumps([t.instrument_dump(d['dump'], d['ov']), t.cached_ptx(d['ov']), \
         t.cached_ptx(d['dump'])]))",
        &json!({"dump": dump, "ov": ov}),
    );
    assert_eq!(
        got,
        json!([
            {"hopper_copies": null, "vecadd": null},
            {"hopper_copies": true, "vecadd": true},
            {"hopper_copies": false, "vecadd": false},
        ])
    );

    // What the interposer makes of the same PTX (registry: inject_options).
    let obj = object(STATS);
    let host = HostPrograms::load(&obj, &[]).unwrap();
    let opts = Options {
        // With a driver that has cuStreamWriteValue64 (every CUDA 12+ driver).
        maps: host.map_options(&obj, &[], &host.pushed),
        rebind_maps: true,
        ..Default::default()
    };
    let ptxas = require_ptxas();
    for (hash, name, src) in kernels {
        let ptx = std::fs::read_to_string(repo_root().join(src)).unwrap();
        let (woven, _) = inject::inject(&repo_root().join(STATS), &ptx, src, &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let out = ov.join(hash).join(format!("{name}.ptx"));
        let mine = std::fs::read_to_string(&out).unwrap();
        assert!(
            mine == woven.text,
            "{name}: the override's PTX differs from the interposer's"
        );
        assert!(!ov.join(hash).join(format!("{name}.ttgir")).exists());
        if let Some(p) = &ptxas {
            let r = assemble(p, &out);
            assert!(r.status.success(), "{name}: ptxas: {}", text(&r.stderr));
        }
    }
}

// ---- rendered snapshots for the readers ----------------------------------------------

/// Array map `name` of `obj` holding the u64 `vals` at their keys, zeros elsewhere, as
/// trace decodes it (the object's BTF).
fn counts(obj: &Object, name: &str, vals: &[(usize, u64)]) -> TracedMap {
    let m = obj.maps.iter().find(|m| m.name == name).unwrap().clone();
    let mut values = vec![vec![0u8; m.value_size as usize]; m.max_entries as usize];
    for &(k, v) in vals {
        values[k][..8].copy_from_slice(&v.to_le_bytes());
    }
    let btf = trace::object_btf(&std::fs::read(&obj.file).unwrap()).unwrap();
    let types = trace::map_types(obj, btf.as_ref(), &[]).unwrap();
    let k = obj.maps.iter().position(|x| x.name == name).unwrap();
    TracedMap::new(
        m,
        types[k].clone(),
        MapImage {
            counts: MapCounts::default(),
            keys: None,
            data: MapData::Array {
                values,
                sharded: None,
            },
        },
    )
}

/// One kernel of the traced run: its id, name, launches and warps per launch, and its
/// warps' histogram buckets (log2 ns, count).
#[derive(Clone, Copy)]
struct K<'a> {
    id: usize,
    name: &'a str,
    launches: u64,
    warps: u64,
    /// Whether its kernels carry the probes (Triton's, through the override).
    probed: bool,
    hist: &'a [(usize, u64)],
}

/// The device maps (gpu_launches, warp_hist) and the process-wide ones (the host
/// program's) of `ks`, with `scale` applied to every count (a device's share).
fn device_maps(obj: &Object, ks: &[K], share: (u64, u64)) -> Vec<TracedMap> {
    let part = |v: u64| v * share.0 / share.1;
    vec![
        counts(
            obj,
            "gpu_launches",
            &ks.iter()
                .filter(|k| k.probed)
                .map(|k| (k.id, part(k.launches)))
                .collect::<Vec<_>>(),
        ),
        counts(
            obj,
            "warp_hist",
            &ks.iter()
                .filter(|k| k.probed)
                .flat_map(|k| k.hist.iter().map(|&(b, c)| (k.id * 64 + b, part(c))))
                .collect::<Vec<_>>(),
        ),
    ]
}

fn process_maps(obj: &Object, ks: &[K]) -> Vec<TracedMap> {
    vec![
        counts(obj, "current", &[(0, ks.last().unwrap().id as u64)]),
        counts(
            obj,
            "host_launches",
            &ks.iter().map(|k| (k.id, k.launches)).collect::<Vec<_>>(),
        ),
        counts(
            obj,
            "host_warps",
            &ks.iter()
                .map(|k| (k.id, k.launches * k.warps))
                .collect::<Vec<_>>(),
        ),
        counts(
            obj,
            "kernel_hashes",
            &ks.iter()
                .map(|k| (k.id, fnv1a64(k.name)))
                .collect::<Vec<_>>(),
        ),
    ]
}

/// JSON lines as `bpf2ptx trace --format json` prints a process tree running `ks`: the
/// launcher (pid 10, no device; the command's end), and the worker (pid 20): a periodic
/// round with half of everything on one device, then the final round on two devices
/// (three quarters and one quarter; the process-wide maps in their sum only).
fn trace_lines(obj: &Object, ks: &[K]) -> Vec<Value> {
    let line = |s: &Snapshot, pid: u32, last: bool| -> Value {
        let p = trace::ProcessInfo { pid, last };
        serde_json::from_str(&trace::render_process(s, Format::Json, p)).unwrap()
    };
    let view = |device: u32, share: (u64, u64)| DeviceView {
        device,
        maps: device_maps(obj, ks, share),
        ..Default::default()
    };
    let mut lines = Vec::new();
    for s in trace::moment(
        1_000,
        None,
        vec![view(0, (1, 2))],
        process_maps(obj, ks),
        vec![],
    ) {
        lines.push(line(&s, 20, false));
    }
    let exited = Some(AppEnd::Exited { code: 0 });
    for s in trace::moment(9_000, exited, vec![], vec![], vec![]) {
        lines.push(line(&s, 10, false));
    }
    let last = trace::moment(
        8_000,
        None,
        vec![view(0, (3, 4)), view(1, (1, 4))],
        process_maps(obj, ks),
        vec![],
    );
    assert_eq!(last.len(), 3, "two devices and their sum");
    for s in last {
        lines.push(line(&s, 20, true));
    }
    lines
}

const CUBLAS: &str = "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8";
const GELU: &str = "triton_poi_fused_addmm_gelu_0";
const NORM: &str = "triton_per_fused_add_addmm_native_layer_norm_1";

/// The profiler's counts of the untraced run for `ks`.
fn profile(ks: &[K]) -> Value {
    ks.iter()
        .map(|k| {
            (
                k.name.to_string(),
                json!({"launches": k.launches, "warps": k.launches * k.warps}),
            )
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// trace_compile.analyse's rows, each [case, what, got, want] (got and want as Python
/// reprs), and its report.
fn analyse(
    lines: &[Value],
    kernels: &Value,
    stderr: &str,
    cached: &Value,
    over: &Value,
) -> (Vec<Value>, Value) {
    let v = python_json(
        "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_compile as t; \
         d = json.load(open(sys.argv[1])); \
         rows, report = t.analyse(d['lines'], d['kernels'], d['stderr'], d['cached'], \
         d['override']); \
         print(json.dumps([[[c, w, repr(g), repr(x)] for c, w, g, x in rows], report]))",
        &json!({"lines": lines, "kernels": kernels, "stderr": stderr, "cached": cached,
                "override": over}),
    );
    (v[0].as_array().unwrap().clone(), v[1].clone())
}

fn failing(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .filter(|r| r[2] != r[3])
        .map(|r| format!("{} | {} | {} | {}", r[0], r[1], r[2], r[3]))
        .collect()
}

#[test]
fn the_compile_check_reads_what_trace_prints() {
    let obj = object(STATS);
    // Counts divisible by 4: each device holds its share exactly.
    let good = [
        K {
            id: 1,
            name: CUBLAS,
            launches: 20,
            warps: 64 * 4,
            probed: false,
            hist: &[],
        },
        K {
            id: 2,
            name: GELU,
            launches: 8,
            warps: 512 * 4,
            probed: true,
            hist: &[(11, 4096), (12, 12_288)],
        },
        K {
            id: 3,
            name: NORM,
            launches: 4,
            warps: 256 * 2,
            probed: true,
            hist: &[(13, 2048)],
        },
    ];
    let kernels = profile(&good);
    let lines = trace_lines(&obj, &good);
    let stderr = format!(
        "bpf2ptx trace: library 3: no PTX (SASS for sm_90), so kernel {CUBLAS} cannot be probed; rebuild with -gencode arch=compute_90,code=compute_90; it runs unmodified\n"
    );
    let over = json!({"injected": {GELU: null, NORM: null, "triton_unused_2": null}});
    let cached = json!({GELU: true, NORM: true});

    let (rows, report) = analyse(&lines, &kernels, &stderr, &cached, &over);
    assert!(failing(&rows).is_empty(), "{:#?}", failing(&rows));
    // kernels (4), override (1), per Triton kernel (2 each), maps (2).
    assert_eq!(rows.len(), 4 + 1 + 2 * 2 + 2, "{rows:#?}");
    let report = report.to_string();
    assert!(report.contains("checked: pid 20"), "{report}");
    assert!(
        report.contains(&format!(
            "{GELU} (ids [2]): 8 launches, warp time: [2K, 4K) ns 4096, [4K, 8K) ns 12288"
        )),
        "{report}"
    );

    // Four warps fewer in GELU's histogram, one launch fewer of NORM on the GPU: GELU's
    // warps, NORM's launches and the twins rows fail; the override rows hold.
    let mut off = trace_lines(
        &obj,
        &[
            good[0],
            K {
                hist: &[(11, 4096), (12, 12_284)],
                ..good[1]
            },
            good[2],
        ],
    );
    // The last round's gpu_launches of NORM, device 1: one launch fewer.
    let dev1 = off
        .iter_mut()
        .rev()
        .find(|l| l["device"] == json!(1))
        .unwrap();
    for m in dev1["maps"].as_array_mut().unwrap() {
        if m["name"] == "gpu_launches" {
            for e in m["entries"].as_array_mut().unwrap() {
                if e["key"] == json!(3) {
                    e["value"] = json!(0);
                }
            }
        }
    }
    let (rows, _) = analyse(&off, &kernels, &stderr, &cached, &over);
    let bad = failing(&rows);
    assert_eq!(bad.len(), 3, "{bad:#?}");
    for (case, what) in [
        (GELU, "warps"),
        (NORM, "launches"),
        ("maps", "GPU launches differ"),
    ] {
        assert!(
            bad.iter()
                .any(|b| b.starts_with(&format!("\"{case}\"")) && b.contains(what)),
            "{case} {what}: {bad:#?}"
        );
    }

    // Failures in either mode: a kernel Triton assembled from its own PTX (its cache),
    // a module trace could not bind; and the override's own: kernels not instrumented.
    let over_bad = json!({"injected": {GELU: "error: inject failed"}});
    let cached_bad = json!({GELU: true, NORM: false});
    let stderr_bad = format!(
        "{stderr}bpf2ptx trace: module 7: cuModuleGetGlobal: 500; its probes use maps of their own, not in the snapshot\n"
    );
    let (rows, _) = analyse(&lines, &kernels, &stderr_bad, &cached_bad, &over_bad);
    let bad = failing(&rows);
    assert_eq!(bad.len(), 3, "{bad:#?}");
    for (case, what, names) in [
        ("kernels", "Triton cache", &[NORM][..]),
        ("kernels", "module 7", &[][..]),
        ("override", "not instrumented", &[GELU, NORM][..]),
    ] {
        assert!(
            bad.iter().any(|b| b.starts_with(&format!("\"{case}\""))
                && b.contains(what)
                && names.iter().all(|n| b.contains(n))),
            "{case} {what}: {bad:#?}"
        );
    }

    // Trace alone: the kernels it names as instrumented on stderr (the Python hook's
    // lines).
    let named = format!(
        "{stderr}bpf2ptx trace: triton kernel {GELU}: probes in {GELU} (inject 1.0 ms, JIT 0.0 ms)\n"
    );
    let (rows, _) = analyse(&lines, &kernels, &named, &cached, &Value::Null);
    let bad = failing(&rows);
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(
        bad[0].contains("did not name") && bad[0].contains(NORM) && !bad[0].contains(GELU),
        "{bad:#?}"
    );
}

#[test]
fn the_compile_app_reads_the_profilers_kernels() {
    let chrome = json!({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": GELU, "args": {"grid": [512, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": GELU, "args": {"grid": [512, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": NORM, "args": {"grid": [4, 2, 1], "block": [96, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": CUBLAS, "args": {}},
        {"ph": "X", "cat": "kernel", "name": CUBLAS, "args": {"grid": [1, 1, 1], "block": [32, 1, 1]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "args": {}},
        {"ph": "i", "cat": "kernel", "name": GELU, "args": {}},
    ]});
    let got = python_json(
        "import json, sys; sys.path.insert(0, 'tests/gpu/trace'); import compile_app as a; \
         print(json.dumps(a.kernel_counts(sys.argv[1])))",
        &chrome,
    );
    assert_eq!(
        got,
        json!({
            GELU: {"launches": 2, "warps": 2 * 512 * 4},
            NORM: {"launches": 1, "warps": 8 * 3},
            CUBLAS: {"launches": 2, "warps": null},
        })
    );
}

#[test]
fn the_triton_checks_sum_mem_traffic_by_direction_and_space() {
    // Keys as mem_traffic.bpf.c lays them out: op << 4 | side << 3 | space, an mbarrier's
    // transaction bytes at op << 4 | 15 (ops: compiler/backend/src/inject/opcodes.rs).
    let key = |op: usize, side: usize, space: usize| op << 4 | side << 3 | space;
    let (ld, st, atom, cp_async, tensor, ldmatrix, mbarrier) = (1, 3, 20, 30, 39, 50, 74);
    let (generic, global, shared) = (0, 1, 2);
    let bytes = [
        (key(ld, 0, global), 400, 100),
        (key(cp_async, 0, global), 1000, 70),
        (key(cp_async, 1, shared), 1200, 70),
        (key(st, 0, global), 800, 200),
        (key(atom, 0, global), 8, 2),
        (key(ld, 0, shared), 64, 16),
        (key(ldmatrix, 0, shared), 128, 8),
        (key(st, 0, shared), 32, 8),
        (key(ld, 0, generic), 16, 4),
        (key(tensor, 0, global), 0, 2),
        (key(tensor, 1, shared), 0, 2),
        (mbarrier << 4 | 15, 4096, 1),
    ];
    let mut by = vec![0u64; 4096];
    let mut cnt = vec![0u64; 4096];
    for &(k, b, c) in &bytes {
        by[k] = b;
        cnt[k] = c;
    }
    let got = python_json(
        "import json, sys; sys.path.insert(0, 'tests/gpu'); import triton_common as c; \
         d = json.load(open(sys.argv[1])); t = c.traffic(d['by'], d['cnt']); \
         rows = t.pop('table'); print(json.dumps([t, len(rows), c.traffic_table(rows)[2]]))",
        &json!({"by": by, "cnt": cnt}),
    );
    assert_eq!(
        got,
        json!([
            {
                "global_read": 400 + 1000 + 8,
                "global_write": 800 + 8,
                "cp_shared": 1200,
                "shared_read": 64 + 128,
                "shared_write": 32 + 1200,
                "generic": 16,
                "tma": 2,
                "tx": 4096,
            },
            bytes.len(),
            "| mbarrier | tx bytes | 1 | 4096 |",
        ])
    );
}
