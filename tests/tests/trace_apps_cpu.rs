//! The CPU side of the GPU-only pieces of issue 16's application checks, so that what
//! the GPU machine runs next is known to hold together before it gets there:
//!
//! - examples/probes/gpu_sharing.bpf.o (examples/gpu_sharing): the committed object
//!   verifies, GPU and host programs alike, its host program shares exactly the maps the
//!   GPU probes read the launch time from, its histograms and launch spans are marked as
//!   the summary expects, and it injects into nvcc's PTX (examples/apps, no nvcc needed)
//!   with the placement `bpf2ptx trace` gives shared maps, which ptxas assembles;
//! - examples/gpu_sharing/summary.py on snapshots printed by `bpf2ptx trace`'s own JSON
//!   renderer from known map contents: its percentiles, per-launch figures, blocks per
//!   SM, notes and exit status, in today's shape (a line per module) and in a nested one
//!   (per process and device, maps shared by host programs printed twice);
//! - tests/gpu/trace_torch.py's readers: the `counts` slots from rendered snapshots in
//!   both shapes (earlier snapshots ignored), and the kernels it takes from trace's
//!   stderr lines;
//! - tests/gpu/trace_ddp.py's readers (issue 20): each process's last snapshot among
//!   JSON lines as `bpf2ptx trace` prints a process tree (periodic and final rounds, a
//!   launcher with no device, several devices, a second context, the sum), the
//!   instrumented kernels per process from trace's stderr, the text's process headers
//!   and device names; and what tests/gpu/trace/ddp_app.py reads of its own session
//!   folder (`proc-<pid>/`, `events.jsonl` as the interposer writes it).
//!
//! The Python parts need python3 (tests/run.sh needs it too); ptxas as the other tests
//! find it.

use bpf2ptx::host::HostPrograms;
use bpf2ptx::trace::{self, AppEnd, Format, Hist, Scope, Snapshot, TracedMap};
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::image::{MapCounts, MapData, MapImage};
use bpf2ptx_tests::{bpf2ptx_bin, python3, repo_root, require_ptxas};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

const SHARING: &str = "examples/probes/gpu_sharing.bpf.o";

fn object(rel: &str) -> Object {
    bpf2ptx::load_path(&repo_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_sharing_probe_verifies_and_its_host_program_shares_the_launch_time() {
    let out = Command::new(bpf2ptx_bin())
        .args(["verify", SHARING])
        .current_dir(repo_root())
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    for p in ["block_start", "block_end"] {
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

    let obj = object(SHARING);
    let host = HostPrograms::load(&obj, &[]).expect("the host program loads");
    let names: Vec<&str> = host.programs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["on_launch"]);
    let shared: Vec<&str> = host
        .shared_maps
        .iter()
        .map(|&k| obj.maps[k].name.as_str())
        .collect();
    assert_eq!(shared, ["launch", "launches"], "pinned, one per process");

    let btf = trace::object_btf(&std::fs::read(repo_root().join(SHARING)).unwrap()).unwrap();
    let types = trace::map_types(&obj, btf.as_ref(), &[]).unwrap();
    let hist = |name: &str| {
        let k = obj.maps.iter().position(|m| m.name == name).unwrap();
        types[k].hist
    };
    assert_eq!(hist("lat_log2"), Some(Hist::Log2));
    assert_eq!(
        hist("lat_fine"),
        Some(Hist::Linear {
            min: 0,
            max: 2000,
            step: 2
        })
    );
    assert_eq!(
        hist("lat_coarse"),
        Some(Hist::Linear {
            min: 0,
            max: 100_000,
            step: 100
        })
    );
    assert_eq!(hist("sm_blocks"), None);
    let spans: Vec<&str> = trace::launch_span_maps(&obj, btf.as_ref())
        .iter()
        .map(|&k| obj.maps[k].name.as_str())
        .collect();
    assert_eq!(spans, ["spans"]);
}

/// ptxas here may be older than the nvcc that wrote the examples' PTX; they use nothing
/// newer than PTX 8.8 (as tests/tests/gallery.rs assembles them).
fn assemble(ptxas: &Path, ptx: &Path) -> Output {
    let mut t = std::fs::read_to_string(ptx).unwrap();
    if let Some(v) = t.lines().find(|l| l.starts_with(".version ")) {
        if v[".version ".len()..].trim().parse::<f64>().unwrap_or(0.0) > 8.8 {
            t = t.replacen(v, ".version 8.8", 1);
        }
    }
    let src = ptx.with_extension("88.ptx");
    std::fs::write(&src, t).unwrap();
    Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(ptx.with_extension("cubin"))
        .arg(&src)
        .output()
        .unwrap()
}

#[test]
fn the_sharing_probe_injects_into_nvcc_ptx_as_trace_places_its_maps() {
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let obj = object(SHARING);
    let host = HostPrograms::load(&obj, &[]).unwrap();
    // What the trace session asks inject for: the shared maps unsharded; `launch`, which
    // the GPU only reads, in device memory (pushed), `launches`, which no GPU program
    // names, in pinned host memory.
    let maps = host.map_options(&obj, &[], &host.pushed);
    assert_eq!(
        maps,
        ["launch=unsharded", "launches=host", "launches=unsharded"]
    );
    let dir = tempfile::tempdir().unwrap();
    for (app, kernels) in [
        ("vecadd", vec!["_Z6vecAddPKfS0_Pfi"]),
        ("matmul", vec!["_Z6matmulPKfS0_Pfi"]),
    ] {
        let out = dir.path().join(format!("{app}.ptx"));
        let sites = dir.path().join(format!("{app}.sites.json"));
        let mut cmd = Command::new(bpf2ptx_bin());
        cmd.arg("inject")
            .arg(SHARING)
            .arg("--into")
            .arg(format!("examples/apps/{app}.ptx"))
            .arg("-o")
            .arg(&out)
            .arg("--sites")
            .arg(&sites);
        for m in &maps {
            cmd.args(["--map", m]);
        }
        let r = cmd.current_dir(repo_root()).output().unwrap();
        assert!(r.status.success(), "{app}: {}", text(&r.stderr));
        let sites: Value = serde_json::from_str(&std::fs::read_to_string(&sites).unwrap()).unwrap();
        let mut got: Vec<(String, String, String)> = sites
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| {
                let (k, p) = (s["kernel"].as_str().unwrap(), s["point"].as_str().unwrap());
                s["probes"].as_array().unwrap().iter().map(move |n| {
                    (
                        k.to_string(),
                        p.to_string(),
                        n.as_str().unwrap().to_string(),
                    )
                })
            })
            .collect();
        got.sort();
        got.dedup();
        let mut want: Vec<(String, String, String)> = kernels
            .iter()
            .flat_map(|k| {
                [("entry", "block_start"), ("exit", "block_end")]
                    .map(|(p, n)| (k.to_string(), p.to_string(), n.to_string()))
            })
            .collect();
        want.sort();
        assert_eq!(got, want, "{app}: where the probes attached");
        let ptx = std::fs::read_to_string(&out).unwrap();
        for m in ["launch", "spans", "sm_blocks", "lat_fine", "lat_coarse"] {
            assert!(
                ptx.contains(&format!("bpf2ptx_map_{m}")),
                "{app}: map {m} missing from the instrumented PTX"
            );
        }
        let a = assemble(&ptxas, &out);
        assert!(a.status.success(), "{app}: ptxas: {}", text(&a.stderr));
    }
}

// ---- rendered snapshots for the Python readers ----------------------------------------

/// An array's data: `vals` at their keys, zeros elsewhere, `value_size` bytes each.
fn array(obj: &Object, name: &str, vals: &[(usize, &[u8])]) -> TracedMap {
    let m = obj.maps.iter().find(|m| m.name == name).unwrap().clone();
    let mut values = vec![vec![0u8; m.value_size as usize]; m.max_entries as usize];
    for (k, v) in vals {
        values[*k][..v.len()].copy_from_slice(v);
    }
    traced(
        obj,
        m,
        MapData::Array {
            values,
            sharded: None,
        },
        MapCounts::default(),
    )
}

fn counts(obj: &Object, name: &str, vals: &[(usize, u64)]) -> TracedMap {
    let bytes: Vec<(usize, Vec<u8>)> = vals
        .iter()
        .map(|&(k, v)| (k, v.to_le_bytes().to_vec()))
        .collect();
    let refs: Vec<(usize, &[u8])> = bytes.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    array(obj, name, &refs)
}

fn traced(
    obj: &Object,
    map: bpf2ptx_compiler::program::Map,
    data: MapData,
    c: MapCounts,
) -> TracedMap {
    let btf = trace::object_btf(&std::fs::read(&obj.file).unwrap()).unwrap();
    let types = trace::map_types(obj, btf.as_ref(), &[]).unwrap();
    let k = obj.maps.iter().position(|m| m.name == map.name).unwrap();
    TracedMap::new(
        map,
        types[k].clone(),
        MapImage {
            counts: c,
            keys: None,
            data,
        },
    )
}

/// One JSON snapshot line as `bpf2ptx trace --format json` prints it.
fn render(maps: Vec<TracedMap>, end: bool) -> Value {
    let s = Snapshot {
        elapsed_ns: 2_000_000_000,
        scope: Scope::Device {
            device: 0,
            context: 0,
            several: false,
        },
        end: end.then_some(AppEnd::Exited { code: 0 }),
        maps,
        loop_budget: Vec::new(),
        printk_dropped: 0,
        events: Vec::new(),
    };
    serde_json::from_str(&trace::render(&s, Format::Json)).unwrap()
}

struct Run<'a> {
    fine: &'a [(usize, u64)],
    coarse: &'a [(usize, u64)],
    sm: &'a [(usize, u64)],
    launches: u64,
    early: u64,
    /// (launch time, first block start, last block end)
    spans: &'a [(u64, u64, u64)],
    evicted: u64,
}

fn sharing_maps(obj: &Object, r: &Run) -> Vec<TracedMap> {
    let spans = obj.maps.iter().find(|m| m.name == "spans").unwrap().clone();
    let entries = r
        .spans
        .iter()
        .map(|&(t0, a, b)| {
            let v: Vec<u8> = [a, b].iter().flat_map(|w| w.to_le_bytes()).collect();
            (t0.to_le_bytes().to_vec(), v)
        })
        .collect();
    vec![
        counts(obj, "launches", &[(0, r.launches)]),
        counts(obj, "lat_fine", r.fine),
        counts(obj, "lat_coarse", r.coarse),
        counts(obj, "sm_blocks", r.sm),
        counts(obj, "early", &[(0, r.early)]),
        traced(
            obj,
            spans,
            MapData::Hash { entries },
            MapCounts {
                evicted: r.evicted,
                ..Default::default()
            },
        ),
    ]
}

/// python3 ARGS with `input` on its standard input.
fn python_with_input(args: &[&str], input: &str) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new("python3")
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3: {e} (tests/run.sh needs python3 too)"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn write_run(dir: &Path, name: &str, lines: &[Value], launches: u64, window: (u64, u64)) {
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(format!("{name}.jsonl")), jsonl).unwrap();
    std::fs::write(
        dir.join(format!("{name}.out")),
        format!(
            "shape launches {n} grid 4 block 256 iters 20000 sms 4\n\
             roundtrip_us p50 30.0 p90 35.0 p99 40.0 max 90.0\n\
             window_ns {} {}\nresult 0.999983 wrong 0\n",
            window.0,
            window.1,
            n = launches - 1
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join(format!("{name}.err")),
        format!("bpf2ptx trace: module 1: probes in _Z9spin_workPfi (inject 1.0 ms, JIT 9.0 ms)\nmodel spin_work launches {launches} grid 4 block 256\n"),
    )
    .unwrap();
}

#[test]
fn the_sharing_summary_reads_what_trace_prints() {
    let obj = object(SHARING);
    let alone = Run {
        // 404 blocks: 250 in [10, 12) us, 150 in [20, 22), 4 in [100, 102).
        fine: &[(6, 250), (11, 150), (51, 4)],
        coarse: &[(1, 400), (2, 4)],
        sm: &[(0, 101), (1, 101), (2, 101), (3, 101)],
        launches: 101,
        early: 0,
        spans: &[
            (1_000_000, 1_008_000, 1_058_000),
            (2_000_000, 2_012_000, 2_052_000),
        ],
        evicted: 0,
    };
    let shared = Run {
        // 100 blocks in [10, 12) us, 303 in [2.5, 2.6) ms, 1 at 100 ms or more.
        fine: &[(6, 100), (1001, 304)],
        coarse: &[(1, 100), (26, 303), (1001, 1)],
        sm: &[(0, 100), (1, 101), (2, 101), (3, 102)],
        launches: 101,
        early: 3,
        spans: &[
            (1_000_000, 1_010_000, 1_055_000),
            (2_000_000, 4_500_000, 4_545_000),
            (9_000_000, 12_000_000, 14_000_000),
        ],
        evicted: 5,
    };
    let dir = tempfile::tempdir().unwrap();
    // alone-1: today's shape, an earlier snapshot (ignored) then the last one.
    let early_line = render(
        sharing_maps(
            &obj,
            &Run {
                launches: 7,
                ..alone
            },
        ),
        false,
    );
    let last = render(sharing_maps(&obj, &alone), true);
    write_run(
        dir.path(),
        "alone-1",
        &[early_line, last.clone()],
        101,
        (1000, 2000),
    );
    // shared-1: today's shape.
    let s1 = render(sharing_maps(&obj, &shared), true);
    write_run(dir.path(), "shared-1", &[s1], 101, (1500, 2500));
    // shared-2: alone-1's maps nested per device and module, `launches` (shared by the
    // host program) printed beside both modules, the other maps in one.
    let maps = last["maps"].as_array().unwrap().clone();
    let launches: Vec<Value> = maps
        .iter()
        .filter(|m| m["name"] == "launches")
        .cloned()
        .collect();
    let nested = json!({
        "elapsed_ns": 1, "end": last["end"], "failures": [], "events": [],
        "devices": [{"device": 0, "modules": [
            {"label": "module 1", "maps": maps},
            {"label": "module 2", "maps": launches},
        ]}],
    });
    write_run(dir.path(), "shared-2", &[nested], 101, (2000, 3000));

    let out = python3(&[
        "examples/gpu_sharing/summary.py",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(
        rows[1..],
        [
            "| alone-1 | 404 / 404 | 12 / 22 / 22 / 102 | 8.0 / 12.0 (2 launches) | 40.0 / 50.0 | 101 / 101.0 / 101 (4) | 30.0 / 40.0 |",
            "| shared-1 | 404 / 404 | 2600 / 2600 / 2600 / >= 100000 | 2500.0 / 3000.0 (3 launches) | 45.0 / 2000.0 | 100 / 101.0 / 102 (4) | 30.0 / 40.0 |",
            "| shared-2 | 404 / 404 | 12 / 22 / 22 / 102 | 8.0 / 12.0 (2 launches) | 40.0 / 50.0 | 101 / 101.0 / 101 (4) | 30.0 / 40.0 |",
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains("app: launches 100 grid 4 block 256 iters 20000 sms 4"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "shared runs' measured loops overlapped 0.0 ms: 50% of shared-1's, 50% of shared-2's"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "- copy 1, alone -> shared: first-block latency p50 8.0 -> 2500.0 us (x312.5); \
             p99 12.0 -> 3000.0 us (x250.0); kernel span p50 40.0 -> 45.0 us (x1.1); \
             p99 50.0 -> 2000.0 us (x40.0); app round trip p50 30.0 -> 30.0 us, p99 40.0 -> 40.0 us\n"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains("- copy 2"),
        "no alone-2 to compare with: {stdout}"
    );
    assert!(
        stdout.contains("- shared-1: 3 blocks started before"),
        "{stdout}"
    );
    assert!(stdout.contains("- shared-1: @spans: 5 evicted"), "{stdout}");
    assert!(
        !stdout.contains("host program ran at"),
        "launches summed twice: {stdout}"
    );

    // A run that counted other than the blocks it launched fails the summary.
    write_run(dir.path(), "alone-2", &[last], 102, (1000, 2000));
    let out = python3(&[
        "examples/gpu_sharing/summary.py",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("| alone-2 | 404 / 408 MISMATCH |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("- alone-2: the host program ran at 101 launches, the app made 102"),
        "{stdout}"
    );
}

#[test]
fn the_torch_check_reads_counts_in_either_shape_and_the_kernels_from_stderr() {
    let obj = object("tests/inject/probes/counters.bpf.o");
    let slots = |base: u64| -> Vec<(usize, u64)> { (0..8).map(|k| (k, base + k as u64)).collect() };
    // Two modules in today's shape; an earlier snapshot that must not count.
    let lines = [
        render(vec![counts(&obj, "counts", &slots(1_000_000))], false),
        render(vec![counts(&obj, "counts", &slots(100))], true),
        render(vec![counts(&obj, "counts", &slots(10))], true),
    ];
    let nested = json!({"end": lines[1]["end"], "devices": [
        {"device": 0, "maps": lines[1]["maps"]},
        {"device": 1, "maps": lines[2]["maps"]},
    ]});
    let dir = tempfile::tempdir().unwrap();
    let read = |name: &str, lines: &[Value]| -> Value {
        let f = dir.path().join(name);
        std::fs::write(
            &f,
            lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
        )
        .unwrap();
        let out = python3(&[
            "-c",
            "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_torch as t; \
             print(json.dumps(t.counted([json.loads(l) for l in open(sys.argv[1])])))",
            f.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_str(&text(&out.stdout)).unwrap()
    };
    // Slots 0-5 only: 100 + k and 10 + k summed.
    let want = json!([[110, 112, 114, 116, 118, 120], 2]);
    assert_eq!(read("today.jsonl", &lines), want);
    assert_eq!(read("nested.jsonl", &[lines[0].clone(), nested]), want);

    // The stderr lines the check reads: the front end's report of instrumented modules
    // and the interposer's no-PTX and fallback lines
    // (cli/interposer/src/registry/instrument.rs).
    let stderr = "\
bpf2ptx trace: library 3: no PTX (SASS for sm_80, sm_90), so kernel _ZN2at6native18elementwise_kernelILi128ELi2EEEviT1_ cannot be probed; rebuild with -gencode arch=compute_90,code=compute_90 (PyTorch extensions: TORCH_CUDA_ARCH_LIST=\"9.0+PTX\"); it runs unmodified
bpf2ptx trace: library 9: JIT: CUDA_ERROR_NO_BINARY_FOR_GPU; it runs unmodified
bpf2ptx trace: library 7: probes in _Z7row_sumILi96EEvPKfPfi, ext_scale_add (inject 2.0 ms, JIT 40.1 ms)
scale_add: checksum 1.0 agrees True
";
    let out = python_with_input(
        &[
            "-c",
            "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_torch as t; \
             e = sys.stdin.read(); \
             print(json.dumps([sorted(t.instrumented(e)), t.sass_only(e)]))",
        ],
        stderr,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(
        got,
        json!([
            ["_Z7row_sumILi96EEvPKfPfi", "ext_scale_add"],
            [
                ["_ZN2at6native18elementwise_kernelILi128ELi2EEEviT1_"],
                ["bpf2ptx trace: library 9: JIT: CUDA_ERROR_NO_BINARY_FOR_GPU; it runs unmodified"]
            ]
        ])
    );
}

/// One JSON line as `bpf2ptx trace` prints process `pid`'s snapshot `s`.
fn process_line(s: &Snapshot, pid: u32, last: bool) -> Value {
    let p = trace::ProcessInfo { pid, last };
    serde_json::from_str(&trace::render_process(s, Format::Json, p)).unwrap()
}

/// The snapshots of one moment ([`trace::moment`], as the session decodes a process's
/// snapshot file): per `(device, context, base)` a map set whose `counts` hold
/// `base + k` at key `k`.
fn moment_of(
    obj: &Object,
    ns: u64,
    end: Option<AppEnd>,
    sets: &[(u32, u32, u64)],
) -> Vec<Snapshot> {
    let views = sets
        .iter()
        .map(|&(device, context, base)| trace::DeviceView {
            device,
            context,
            maps: vec![counts(
                obj,
                "counts",
                &(0..8).map(|k| (k, base + k as u64)).collect::<Vec<_>>(),
            )],
            events: Vec::new(),
            loop_budget: Vec::new(),
            printk_dropped: 0,
        })
        .collect();
    trace::moment(ns, end, views, Vec::new(), Vec::new())
}

#[test]
fn the_ddp_check_reads_each_process_its_devices_and_its_session_folder() {
    let obj = object("tests/inject/probes/counters.bpf.o");
    let exited = Some(AppEnd::Exited { code: 0 });
    let mut lines: Vec<Value> = Vec::new();
    let mut print = |snaps: Vec<Snapshot>, pid: u32, last: bool| {
        lines.extend(snaps.iter().map(|s| process_line(s, pid, last)));
    };
    // A periodic round: rank 0 (pid 20) mid-run, rank 1 (pid 30) already done (its final
    // snapshot, printed again in the last round).
    print(moment_of(&obj, 1, None, &[(0, 0, 1_000_000)]), 20, false);
    print(moment_of(&obj, 3, None, &[(1, 0, 10)]), 30, true);
    // The last round, by pid: the launcher (the command, which used CUDA but
    // instrumented nothing: it carries the end), the ranks, and a process of two devices
    // and a second context on device 0.
    print(moment_of(&obj, 9, exited, &[]), 10, false);
    print(moment_of(&obj, 2, None, &[(0, 0, 100)]), 20, true);
    print(moment_of(&obj, 3, None, &[(1, 0, 10)]), 30, true);
    print(
        moment_of(&obj, 4, None, &[(0, 0, 1000), (1, 0, 2000), (0, 1, 3000)]),
        40,
        true,
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("snaps.jsonl");
    std::fs::write(
        &f,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let out = python3(&[
        "-c",
        "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_ddp as t; \
         c = t.counted([json.loads(l) for l in open(sys.argv[1])]); \
         print(json.dumps({str(p): [{str(k): s for k, s in v['slots'].items()}, v['final'], \
         v['end'] and v['end']['exit_code']] for p, v in c.items()}, sort_keys=True))",
        f.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let slots = |b: u64| json!((0..6).map(|k| b + k).collect::<Vec<u64>>());
    assert_eq!(
        got,
        json!({
            "10": [{}, false, 0],
            "20": [{"0": slots(100)}, true, null],
            "30": [{"1": slots(10)}, true, null],
            // The sum: every map set's counts added, the second context's too.
            "40": [{"0": slots(1000), "1": slots(2000), "0 (context 2)": slots(3000),
                    "sum": (0..6).map(|k| 6000 + 3 * k).collect::<Vec<u64>>()},
                   true, null],
        })
    );

    // Trace's stderr: the interposer's lines (no process named) and the front end's
    // report, which names the process when there are several.
    let stderr = "\
bpf2ptx trace: library 3: no PTX (SASS for sm_90), so kernel _ZN2at6native18elementwise_kernelILi128ELi2EEEviT1_ cannot be probed; rebuild with -gencode arch=compute_90,code=compute_90 (PyTorch extensions: TORCH_CUDA_ARCH_LIST=\"9.0+PTX\"); it runs unmodified
bpf2ptx trace: process 20: library 7: probes in _Z7row_sumILi96EEvPKfPfi, ext_scale_add (inject 2.0 ms, JIT 40.1 ms)
bpf2ptx trace: process 30: library 7: probes in ext_scale_add (inject 2.0 ms, cached JIT 0.1 ms)
bpf2ptx trace: process 30: library 8: probes in _Z7row_sumILi96EEvPKfPfi (inject 1.0 ms, cached JIT 0.1 ms)
bpf2ptx trace: module 1: probes in vecadd (inject 1.0 ms, JIT 2.0 ms)
";
    // The text: process headers as the session prints them, and a two-device moment.
    let mut printed = String::from(
        "--- process 10: python3 tests/gpu/trace/ddp_app.py run /tmp/ext /tmp/r ---\n\
         === bpf2ptx trace 0.000 s ===\n\
         --- process 20: python3 -c from multiprocessing.spawn import spawn_main (no final snapshot: it ended without one, or still runs; its last periodic one, at 0.120 s) ---\n",
    );
    for s in moment_of(&obj, 4, None, &[(0, 0, 1), (1, 0, 2)]) {
        printed.push_str(&trace::render(&s, Format::Text));
    }
    let out = python_with_input(
        &[
            "-c",
            "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_ddp as t; \
             e, x = sys.stdin.read().split('\\0'); \
             print(json.dumps([t.instrumented_per_process(e), t.text_processes(x), \
             t.text_devices(x)]))",
        ],
        &format!("{stderr}\0{printed}"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(
        got,
        json!([
            {
                "20": ["_Z7row_sumILi96EEvPKfPfi", "ext_scale_add"],
                "30": ["_Z7row_sumILi96EEvPKfPfi", "ext_scale_add"],
                "null": ["vecadd"],
            },
            [10, 20],
            [0, 1],
        ]),
        "{printed}"
    );

    // What a rank reads of its own folder: the files and the events the interposer
    // writes (`wire::Event`, serialized as the interposer does).
    use bpf2ptx::trace::wire::{self, Event};
    let session = dir.path().join("session");
    let proc_dir = wire::create_proc_dir(&session, 4242, b"python3\0-c\0spawn_main\0").unwrap();
    let events = [
        Event::Loaded {
            label: "library 1".into(),
            bytes: 1000,
        },
        Event::Kernel {
            name: "_ZN2at6native29vectorized_elementwise_kernel".into(),
            matched: true,
            id: 1,
        },
        Event::NoPtx {
            label: "library 1".into(),
            kernels: vec!["_ZN2at6native29vectorized_elementwise_kernel".into()],
            sass: vec!["sm_90".into()],
        },
        Event::Fallback {
            label: "library 2".into(),
            reason: "its PTX is for compute_120, newer than this GPU (sm_90)".into(),
        },
        Event::Kernel {
            name: "ext_scale_add".into(),
            matched: true,
            id: 2,
        },
        Event::Instrumented {
            label: "library 3".into(),
            kernels: vec!["_Z7row_sumILi96EEvPKfPfi".into(), "ext_scale_add".into()],
            inject_ms: 2.0,
            jit_ms: 40.0,
            cached: false,
        },
        Event::Clock {
            offset_ns: 5,
            spread_ns: 1,
            start_ns: 7,
            at_ns: 9,
        },
    ];
    let jsonl: String = events
        .iter()
        .map(|e| format!("{}\n", serde_json::to_string(e).unwrap()))
        .collect();
    std::fs::write(proc_dir.join("events.jsonl"), jsonl).unwrap();
    let out = python3(&[
        "-c",
        "import json, sys; sys.path.insert(0, 'tests/gpu/trace'); import ddp_app as a; \
         print(json.dumps([a.session_report(sys.argv[1], 4242), \
         a.session_report(sys.argv[1], 4243), a.session_report(None, 4242)]))",
        session.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(
        got,
        json!([
            {
                "dir": "proc-4242",
                "files": ["cmdline", "events.jsonl"],
                "instrumented": ["_Z7row_sumILi96EEvPKfPfi", "ext_scale_add"],
                "no_ptx": ["_ZN2at6native29vectorized_elementwise_kernel"],
                "fallback": ["library 2: its PTX is for compute_120, newer than this GPU (sm_90)"],
                "kernels": 2,
            },
            {"dir": "proc-4243", "files": null, "instrumented": [], "no_ptx": [],
             "fallback": [], "kernels": 0},
            null,
        ])
    );
}

/// The GPU machine's scripts of these issues parse (python3's parser, `bash -n`): a typo
/// found here costs no GPU session.
#[test]
fn the_gpu_scripts_parse() {
    let py = [
        "tests/gpu/checks.py",
        "tests/gpu/trace_apps.py",
        "tests/gpu/trace_torch.py",
        "tests/gpu/trace/torch_app.py",
        "tests/gpu/trace_ddp.py",
        "tests/gpu/trace/ddp_app.py",
        "examples/gpu_sharing/summary.py",
        "benches/gpu-trace/launch_overhead.py",
        "benches/gpu-trace/probe_overhead.py",
        "benches/gpu-trace/latency_parts.py",
        // Issue 19's randomized check on the GPU (its cases: tests/tests/fuse.rs).
        "tests/gpu/fuse_random.py",
        // Issue 18 (tests/tests/trace_compile_cpu.rs and cub_sort_model.rs check their
        // readers).
        "tests/gpu/triton_common.py",
        "tests/gpu/triton_attach.py",
        "tests/gpu/triton_softmax.py",
        "tests/gpu/cub_sort.py",
        "tests/gpu/trace_compile.py",
        "tests/gpu/trace/compile_app.py",
        // Issue 18's real-world corpus (tests/tests/corpus_cpu.rs checks its opcode
        // reader).
        "tests/gpu/corpus.py",
        "tests/gpu/ptx_opcodes.py",
        "tests/gpu/trace/corpus_triton.py",
        "tests/gpu/trace/corpus_jax.py",
    ];
    let mut args = vec![
        "-c",
        "import ast, sys\nfor f in sys.argv[1:]: ast.parse(open(f).read(), f)",
    ];
    args.extend(py);
    let out = python3(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for sh in ["examples/gpu_sharing/run.sh", "tests/gpu/open_issues.sh"] {
        let out = Command::new("bash")
            .args(["-n", sh])
            .current_dir(repo_root())
            .output()
            .unwrap();
        assert!(out.status.success(), "{sh}: {}", text(&out.stderr));
    }
}
