//! `bpf2ptx trace` end to end under the stand-in driver (tests/fake): the front end
//! verifies the probes, starts the application with the interposer, prints the snapshots
//! and says what it instrumented; exit codes, crashes, rejected probes and probes that
//! match nothing, one instance of each map per device and their sum. No GPU: the fake
//! driver acts out tests/trace/shared_maps.bpf.o's probes where a test asks it to.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{repo, OTHER, PROBED};

/// The fake driver, the app and its two-kernel PTX, built in a scratch folder.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path());
    dir
}

/// `bpf2ptx trace ARGS -- app MODE app.ptx PROBED OTHER` in `dir`.
fn trace(dir: &Path, args: &[&str], mode: &str) -> Output {
    let so = bpf2ptx_tests::interposer_lib();
    Command::new(bpf2ptx_tests::bpf2ptx_bin())
        .arg("trace")
        .args(args)
        .arg("--")
        .arg(dir.join("app"))
        .args([mode, dir.join("app.ptx").to_str().unwrap(), PROBED, OTHER])
        .current_dir(repo())
        .env("LD_LIBRARY_PATH", dir)
        .env("BPF2PTX_INTERPOSER", so)
        .env("FAKE_CUDA_LOG", dir.join("driver.log"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_traced_app_runs_unchanged_and_the_last_snapshot_says_how_it_ended() {
    let dir = fixture();
    let snaps = dir.path().join("snaps.txt");
    let out = trace(
        dir.path(),
        &[
            "--interval",
            "20ms",
            "-o",
            snaps.to_str().unwrap(),
            "tests/probes/bpftime/cuda_counter.bpf.o",
        ],
        "linked",
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "app done\n", "the app's own output only");
    assert!(
        err.contains(&format!(
            "bpf2ptx trace: module 1: probes in {PROBED} (inject"
        )),
        "{err}"
    );
    let printed = std::fs::read_to_string(&snaps).unwrap();
    assert!(
        printed.contains("final snapshot (the app exited with code 0)"),
        "{printed}"
    );
    let log = std::fs::read_to_string(dir.path().join("driver.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(PROBED) && l.ends_with("probed=1")),
        "{log}"
    );
}

/// The probes as C source: compiled with clang before the application starts (the
/// interposer gets the object), named by the source in what the front end says.
#[test]
fn a_c_probe_is_compiled_first() {
    if bpf2ptx_tests::require_clang().is_none() {
        return;
    }
    let dir = fixture();
    let out = trace(
        dir.path(),
        &["tests/probes/bpftime/cuda_counter.bpf.c"],
        "linked",
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("app done\n")
            && stdout.contains("final snapshot (the app exited with code 0)"),
        "{stdout}"
    );
    assert!(
        err.contains(&format!(
            "bpf2ptx trace: module 1: probes in {PROBED} (inject"
        )),
        "{err}"
    );
    let log = std::fs::read_to_string(dir.path().join("driver.log")).unwrap();
    assert!(
        log.lines()
            .any(|l| l.contains(PROBED) && l.ends_with("probed=1")),
        "{log}"
    );
    // No clang: exit 2 before the application runs.
    let out = Command::new(bpf2ptx_tests::bpf2ptx_bin())
        .args(["trace", "tests/probes/bpftime/cuda_counter.bpf.c", "--"])
        .arg(dir.path().join("app"))
        .current_dir(repo())
        .env("BPF2PTX_CLANG", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).starts_with("error: BPF2PTX_CLANG=/nonexistent: cannot run it"));
}

#[test]
fn json_snapshots_are_one_object_per_line() {
    let dir = fixture();
    let out = trace(
        dir.path(),
        &[
            "--format",
            "json",
            "--interval",
            "20ms",
            "tests/probes/bpftime/cuda_counter.bpf.o",
        ],
        "linked",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let json: Vec<serde_json::Value> = stdout
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!json.is_empty(), "{stdout}");
    assert!(json.last().unwrap().get("end").is_some(), "{stdout}");
}

#[test]
fn a_crash_exits_with_its_signal_and_still_prints_the_last_snapshot() {
    let dir = fixture();
    let out = trace(
        dir.path(),
        &["tests/probes/bpftime/cuda_counter.bpf.o"],
        "crash",
    );
    assert_eq!(out.status.code(), Some(128 + 11), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("app done"), "{stdout}");
    assert!(stdout.contains("SIGSEGV"), "{stdout}");
}

#[test]
fn a_rejected_probe_stops_before_the_app_runs() {
    let dir = fixture();
    let out = trace(dir.path(), &["tests/inject/probes/bad_ctx.bpf.o"], "linked");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("rejected"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !dir.path().join("driver.log").exists(),
        "the app never started"
    );
}

#[test]
fn probes_that_match_nothing_say_so_with_the_kernels_seen() {
    let dir = fixture();
    let out = trace(dir.path(), &["tests/inject/probes/empty.bpf.o"], "linked");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "no probe matched a kernel; kernels launched: {PROBED}, {OTHER}"
        )),
        "{err}"
    );
}

#[test]
fn a_missing_interposer_or_command_is_bad_input() {
    let dir = fixture();
    let out = Command::new(bpf2ptx_tests::bpf2ptx_bin())
        .args([
            "trace",
            "tests/probes/bpftime/cuda_counter.bpf.o",
            "--",
            "/nonexistent/app",
        ])
        .current_dir(repo())
        .env("BPF2PTX_INTERPOSER", dir.path().join("nope.so"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("interposer is missing"),
        "{}",
        text(&out.stderr)
    );
    let so = bpf2ptx_tests::interposer_lib();
    let out = Command::new(bpf2ptx_tests::bpf2ptx_bin())
        .args([
            "trace",
            "tests/probes/bpftime/cuda_counter.bpf.o",
            "--",
            "/nonexistent/app",
        ])
        .current_dir(repo())
        .env("BPF2PTX_INTERPOSER", so)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/nonexistent/app"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn host_programs_share_their_maps_and_launches_become_trace_events() {
    let dir = fixture();
    let snaps = dir.path().join("snaps.jsonl");
    let events = dir.path().join("events.json");
    let out = trace(
        dir.path(),
        &[
            "--format",
            "json",
            "-o",
            snaps.to_str().unwrap(),
            "--trace-events",
            events.to_str().unwrap(),
            "examples/probes/trace_latency.bpf.o",
        ],
        "linked",
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "app done\n");
    let printed = std::fs::read_to_string(&snaps).unwrap();
    let last: serde_json::Value =
        serde_json::from_str(printed.lines().last().expect("a snapshot")).unwrap();
    // The host program's counter, in the shared map printed with the module's maps.
    let launches = last["maps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "launches")
        .unwrap_or_else(|| panic!("{last}"));
    assert_eq!(launches["entries"][0]["value"], 4, "{launches}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&events).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("specs/trace-events.schema.json")).unwrap(),
    )
    .unwrap();
    let errors = bpf2ptx_tests::json_schema::check(&schema, &doc);
    assert!(errors.is_empty(), "{errors:?}");
    let evs = doc["traceEvents"].as_array().unwrap();
    // No GPU ran the probes here: each launch is an instant at its call, in order.
    let seqs: Vec<u64> = evs
        .iter()
        .filter(|e| e["cat"] == "launch")
        .map(|e| e["args"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4], "{doc}");
    assert!(evs.iter().any(|e| e["name"] == format!("launch {OTHER}")));
    assert!(evs.iter().any(|e| e["cat"] == "calibration"), "{doc}");
}

/// An app that uses two devices (the fake driver's contexts 0x1 and 0x2), probes acted
/// out by the fake driver: the text shows each device's maps and their sum, the JSON
/// names the device of every snapshot (and so of every record in it), and the trace
/// events name the device of every launch and ring record.
#[test]
fn two_devices_print_each_device_and_their_sum() {
    let dir = fixture();
    let run = |args: &[&str]| {
        let so = bpf2ptx_tests::interposer_lib();
        let out = Command::new(bpf2ptx_tests::bpf2ptx_bin())
            .arg("trace")
            .args(args)
            .arg("tests/trace/shared_maps.bpf.o")
            .arg("--")
            .arg(dir.path().join("app"))
            .args([
                "twodev",
                dir.path().join("app.ptx").to_str().unwrap(),
                PROBED,
                OTHER,
            ])
            .current_dir(repo())
            .env("LD_LIBRARY_PATH", dir.path())
            .env("BPF2PTX_INTERPOSER", so)
            .env("FAKE_CUDA_RUN_PROBES", "1")
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let printed = run(&["--interval", "10s"]);
    let headers: Vec<&str> = printed.lines().filter(|l| l.starts_with("===")).collect();
    assert_eq!(headers.len(), 3, "{printed}");
    assert!(
        headers[0].contains(", device 0: final snapshot"),
        "{printed}"
    );
    assert!(
        headers[1].contains(", device 1: final snapshot"),
        "{printed}"
    );
    assert!(
        headers[2].contains(", sum of devices 0, 1: final snapshot"),
        "{printed}"
    );
    let sum = &printed[printed.find(headers[2]).unwrap()..];
    // 3 launches per device; the per-thread array's key 0 over 32+64+96 and 64+96+128
    // threads; the hash map's keys of both devices.
    assert!(
        sum.contains("@hits: array[4], sum of 2 devices\n  key  value  devices\n    0  6      2\n"),
        "{sum}"
    );
    assert!(
        sum.contains("@per_thr: perthread_array[2], sum of 224 thread copies\n  key  value  threads\n    0  480    224\n"),
        "{sum}"
    );
    assert!(
        sum.contains("@seen: hash[4], sum of 2 devices, 6 keys"),
        "{sum}"
    );
    assert!(
        !sum.contains("@records"),
        "rings stay with their device: {sum}"
    );
    let device0 = &printed[..printed.find(headers[1]).unwrap()];
    assert!(device0.contains("@seen: hash[4], 3 keys"), "{device0}");
    assert!(device0.contains("] @records: 0x5"), "{device0}");

    let events = dir.path().join("events.json");
    let json = run(&[
        "--format",
        "json",
        "--trace-events",
        events.to_str().unwrap(),
    ]);
    let lines: Vec<serde_json::Value> = json
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last: Vec<&serde_json::Value> = lines.iter().filter(|l| !l["end"].is_null()).collect();
    assert_eq!(last.len(), 3, "{json}");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("specs/trace-snapshot.schema.json")).unwrap(),
    )
    .unwrap();
    for l in &last {
        let errors = bpf2ptx_tests::json_schema::check(&schema, l);
        assert!(errors.is_empty(), "{errors:?}");
    }
    assert_eq!(
        (last[0]["device"].as_u64(), last[1]["device"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(last[2]["device"].is_null());
    assert_eq!(last[2]["sum_of"], serde_json::json!([0, 1]));
    // Each device's ring records are in its own snapshot.
    let rings = |l: &serde_json::Value| -> Vec<String> {
        l["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["hex"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        rings(last[0]),
        ["0100000000000000", "0300000000000000", "0500000000000000"]
    );
    assert_eq!(
        rings(last[1]),
        ["0200000000000000", "0400000000000000", "0600000000000000"]
    );
    assert!(rings(last[2]).is_empty());

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&events).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("specs/trace-events.schema.json")).unwrap(),
    )
    .unwrap();
    let errors = bpf2ptx_tests::json_schema::check(&schema, &doc);
    assert!(errors.is_empty(), "{errors:?}");
    let evs = doc["traceEvents"].as_array().unwrap();
    let launch_devices: Vec<u64> = evs
        .iter()
        .filter(|e| e["cat"] == "launch")
        .map(|e| e["args"]["device"].as_u64().unwrap())
        .collect();
    assert_eq!(launch_devices, [0, 1, 0, 1, 0, 1], "{doc}");
    let record_devices: Vec<u64> = evs
        .iter()
        .filter(|e| e["cat"] == "record")
        .map(|e| e["args"]["device"].as_u64().unwrap())
        .collect();
    assert_eq!(record_devices, [0, 0, 0, 1, 1, 1], "{doc}");
    assert!(evs
        .iter()
        .any(|e| e["ph"] == "M" && e["args"]["name"] == "ring records (GPU 1)"));
}

/// `bpf2ptx trace ARGS shared_maps.bpf.o -- app MODE ...` with the probes acted out by
/// the fake driver: the exit code and what it printed on stdout.
fn trace_tree(dir: &Path, args: &[&str], mode: &str) -> (Option<i32>, String, String) {
    trace_tree_with(dir, args, "tests/trace/shared_maps.bpf.o", mode)
}

/// [`trace_tree`] with another probe object.
fn trace_tree_with(
    dir: &Path,
    args: &[&str],
    probes: &str,
    mode: &str,
) -> (Option<i32>, String, String) {
    let out = Command::new(bpf2ptx_tests::bpf2ptx_bin())
        .arg("trace")
        .args(args)
        .arg(probes)
        .arg("--")
        .arg(dir.join("app"))
        .args([mode, dir.join("app.ptx").to_str().unwrap(), PROBED, OTHER])
        .current_dir(repo())
        .env("LD_LIBRARY_PATH", dir)
        .env("BPF2PTX_INTERPOSER", bpf2ptx_tests::interposer_lib())
        .env("FAKE_CUDA_RUN_PROBES", "1")
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env_remove("LD_PRELOAD")
        .output()
        .unwrap();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The text's sections, one per process: (its header, what follows up to the next).
fn sections(printed: &str) -> Vec<(&str, &str)> {
    let starts: Vec<usize> = printed
        .match_indices("--- process ")
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let end = starts.get(k + 1).copied().unwrap_or(printed.len());
            let body = &printed[i..end];
            let nl = body.find('\n').unwrap();
            (&body[..nl], &body[nl + 1..])
        })
        .collect()
}

/// An app that forks (as torchrun starts its workers): the child inherits the interposer
/// and the session, and each process's maps print in a section of their own, with its
/// own counts; JSON snapshots and trace events carry each process's pid.
#[test]
fn a_process_tree_prints_one_section_per_process() {
    let dir = fixture();
    let (code, printed, err) = trace_tree(dir.path(), &["--interval", "10s"], "fork");
    assert_eq!(code, Some(0), "{err}");
    assert!(printed.starts_with("child done\napp done\n"), "{printed}");
    let s = sections(&printed);
    assert_eq!(s.len(), 2, "{printed}");
    let pid = |h: &str| -> u32 {
        h["--- process ".len()..]
            .split(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_ne!(pid(s[0].0), pid(s[1].0));
    // The parent launched the probed kernel twice, the child three times; only the
    // command (the parent) ended with an exit code.
    let hits = |n: u32| format!("@hits: array[4], 256 replicas summed\n  key  value\n    0  {n}\n");
    let parent = s
        .iter()
        .find(|(_, b)| b.contains(&hits(2)))
        .expect(&printed);
    let child = s
        .iter()
        .find(|(_, b)| b.contains(&hits(3)))
        .expect(&printed);
    assert!(
        parent.0.contains("app fork ") && child.0.contains("app fork "),
        "{printed}"
    );
    assert!(
        parent
            .1
            .contains(": final snapshot (the app exited with code 0) ==="),
        "{printed}"
    );
    assert!(!child.1.contains("final snapshot ("), "{printed}");
    assert!(!child.0.contains("no final snapshot"), "{printed}");
    assert!(
        err.contains(&format!(
            "bpf2ptx trace: process {}: module 1: probes in",
            pid(child.0)
        )),
        "{err}"
    );

    let events = dir.path().join("events.json");
    let (code, json, err) = trace_tree(
        dir.path(),
        &[
            "--format",
            "json",
            "--trace-events",
            events.to_str().unwrap(),
        ],
        "fork",
    );
    assert_eq!(code, Some(0), "{err}");
    let last: Vec<serde_json::Value> = json
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(last.len(), 2, "{json}");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("specs/trace-snapshot.schema.json")).unwrap(),
    )
    .unwrap();
    for l in &last {
        let errors = bpf2ptx_tests::json_schema::check(&schema, l);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(l["final"], true, "{l}");
    }
    let hits = |l: &serde_json::Value| {
        l["maps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "hits")
            .unwrap()["entries"][0]["value"]
            .as_u64()
    };
    let by_pid: std::collections::BTreeMap<u64, Option<u64>> = last
        .iter()
        .map(|l| (l["pid"].as_u64().unwrap(), hits(l)))
        .collect();
    assert_eq!(by_pid.len(), 2, "{json}");
    let mut counts: Vec<Option<u64>> = by_pid.values().copied().collect();
    counts.sort();
    assert_eq!(counts, [Some(2), Some(3)], "{json}");
    // Trace events: each process's launches under its own pid.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&events).unwrap()).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("specs/trace-events.schema.json")).unwrap(),
    )
    .unwrap();
    let errors = bpf2ptx_tests::json_schema::check(&schema, &doc);
    assert!(errors.is_empty(), "{errors:?}");
    for (pid, hits) in &by_pid {
        let n = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "launch" && e["pid"].as_u64() == Some(*pid))
            .count() as u64;
        assert_eq!(Some(n), *hits, "pid {pid}: {doc}");
    }
}

/// A child that crashes: its section is its last periodic snapshot, said as such.
#[test]
fn a_crashed_child_keeps_its_last_periodic_snapshot() {
    let dir = fixture();
    let (code, printed, err) = trace_tree(dir.path(), &["--interval", "20ms"], "forkcrash");
    assert_eq!(code, Some(0), "{err}");
    assert!(printed.contains("child failed\napp done\n"), "{printed}");
    // Only the last round says which snapshot is not a final one (periodic rounds may
    // come before or after the app's own output, on the same stdout).
    let s = sections(&printed);
    let note =
        "(no final snapshot: it ended without one, or still runs; its last periodic one, at ";
    let crashed: Vec<_> = s.iter().filter(|(h, _)| h.contains(note)).collect();
    assert_eq!(crashed.len(), 1, "{printed}");
    assert!(
        crashed[0]
            .1
            .contains("@hits: array[4], 256 replicas summed\n  key  value\n    0  3\n"),
        "{printed}"
    );
    // The command's own section: its final snapshot, with its end, in the same round.
    let parent: Vec<_> = s
        .iter()
        .filter(|(_, b)| b.contains(": final snapshot (the app exited with code 0) ==="))
        .collect();
    assert_eq!(parent.len(), 1, "{printed}");
    assert_ne!(parent[0].0, crashed[0].0, "{printed}");
    assert!(parent[0].1.contains("    0  2\n"), "{printed}");
}

/// tests/gpu/trace_ddp.py (issue 20's DDP check, run on a GPU machine) reads each
/// process's last snapshot out of what `bpf2ptx trace --format json` prints for a process
/// tree, periodic rounds included, and the instrumented kernels per process out of its
/// stderr: here on the real front end's output, the fake driver's process tree.
#[test]
fn the_ddp_check_reads_a_process_trees_json_and_stderr() {
    let dir = fixture();
    let read = |mode: &str| -> (serde_json::Value, String) {
        let (code, json, err) = trace_tree(
            dir.path(),
            &["--format", "json", "--interval", "20ms"],
            mode,
        );
        assert_eq!(code, Some(0), "{err}");
        let f = dir.path().join(format!("{mode}.jsonl"));
        let lines: String = json
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(&f, lines).unwrap();
        std::fs::write(dir.path().join(format!("{mode}.err")), &err).unwrap();
        let out = Command::new("python3")
            .arg("-c")
            .arg(
                "import json, sys; sys.path.insert(0, 'tests/gpu'); import trace_ddp as t; \
                 lines = [json.loads(l) for l in open(sys.argv[1])]; \
                 last = t.last_per_process(lines); c = t.counted(lines); \
                 hits = lambda s: [m['entries'][0]['value'] for m in s['maps'] \
                                   if m['name'] == 'hits']; \
                 k = t.instrumented_per_process(open(sys.argv[2]).read()); \
                 print(json.dumps(sorted([[sorted(c[p]['slots']), c[p]['final'], \
                 c[p]['end'] and c[p]['end'].get('exit_code'), \
                 [hits(s) for s in last[p].values()], k.get(p)] for p in c], key=str)))",
            )
            .arg(&f)
            .arg(dir.path().join(format!("{mode}.err")))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .current_dir(repo())
            .output()
            .expect("python3");
        assert!(out.status.success(), "{}", text(&out.stderr));
        (serde_json::from_str(&text(&out.stdout)).unwrap(), json)
    };
    // Both processes on device 0, each with its own counts; both final; the command's
    // end on the parent's section (the parent launched twice, the child three times).
    let (got, json) = read("fork");
    assert_eq!(
        got,
        serde_json::json!([
            [[0], true, 0, [[2]], [PROBED]],
            [[0], true, null, [[3]], [PROBED]],
        ]),
        "{json}"
    );
    // A child that crashed: its last snapshot is a periodic one.
    let (got, json) = read("forkcrash");
    assert_eq!(
        got,
        serde_json::json!([
            [[0], false, null, [[3]], [PROBED]],
            [[0], true, 0, [[2]], [PROBED]],
        ]),
        "{json}"
    );
}

/// GPU printk lines and loop-budget counts reach the printed snapshot: the fake driver
/// acts out tests/trace/printk.bpf.c at each launch (a `hello %d` record, 3 runs ended
/// by the loop budget), in text and in JSON.
#[test]
fn gpu_printk_lines_and_loop_budgets_are_printed() {
    let dir = fixture();
    let run = |format: &[&str]| {
        let so = bpf2ptx_tests::interposer_lib();
        let out = Command::new(bpf2ptx_tests::bpf2ptx_bin())
            .arg("trace")
            .args(format)
            .args(["--loop-budget", "8"])
            .arg("tests/trace/printk.bpf.o")
            .arg("--")
            .arg(dir.path().join("app"))
            .args([
                "twomod",
                dir.path().join("app.ptx").to_str().unwrap(),
                PROBED,
                OTHER,
            ])
            .current_dir(repo())
            .env("LD_LIBRARY_PATH", dir.path())
            .env("BPF2PTX_INTERPOSER", so)
            .env("FAKE_CUDA_RUN_PROBES", "1")
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env_remove("LD_PRELOAD")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let printed = run(&[]);
    let hellos = printed
        .lines()
        .filter(|l| l.contains("] printk: hello "))
        .count();
    assert!(hellos > 0, "{printed}");
    let budget = format!("  loop budget ran out: on_entry {} times", 3 * hellos);
    assert!(printed.lines().any(|l| l == budget), "{printed}");
    let json = run(&["--format", "json"]);
    assert!(json.contains("\"printk\":\"hello 1\""), "{json}");
    assert!(json.contains("\"loop_budget\""), "{json}");
}

/// A snapshot printed by a periodic round and again at the end (the child's final one,
/// taken while the parent still runs) prints its GPU printk lines once: they are the
/// records since the snapshot before it. Per process, every `hello` line printed stands
/// for one run of the probe, and each run ended 3 times on the loop budget.
#[test]
fn a_snapshot_printed_twice_prints_its_printk_lines_once() {
    let dir = fixture();
    let (code, printed, err) = trace_tree_with(
        dir.path(),
        &["--interval", "20ms", "--loop-budget", "8"],
        "tests/trace/printk.bpf.o",
        "forkwait",
    );
    assert_eq!(code, Some(0), "{err}");
    let mut hellos: std::collections::HashMap<&str, usize> = Default::default();
    let mut budget: std::collections::HashMap<&str, usize> = Default::default();
    for (header, body) in sections(&printed) {
        let pid = header["--- process ".len()..]
            .split([':', ' '])
            .next()
            .unwrap();
        *hellos.entry(pid).or_default() += body
            .lines()
            .filter(|l| l.contains("] printk: hello "))
            .count();
        // The last section of a process has its final count.
        if let Some(n) = body.lines().find_map(|l| {
            l.strip_prefix("  loop budget ran out: on_entry ")
                .and_then(|r| r.strip_suffix(" times"))
        }) {
            budget.insert(pid, n.parse().unwrap());
        }
    }
    assert_eq!(hellos.len(), 2, "{printed}");
    for (pid, n) in &hellos {
        assert!(*n > 0, "{printed}");
        assert_eq!(budget.get(pid), Some(&(3 * n)), "process {pid}:\n{printed}");
    }
}
