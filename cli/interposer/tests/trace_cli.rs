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
