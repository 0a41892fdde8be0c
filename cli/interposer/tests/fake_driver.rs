//! The interposer in a real process, under a stand-in driver (tests/fake/libcuda.c) and a
//! miniature application (tests/fake/app.c) built here with `cc`: no GPU needed.
//!
//! The application loads a PTX module of two kernels, `_Z9vectorAddPKfS0_Pf` (which
//! tests/probes/bpftime/cuda_counter.bpf.o probes) and `_Z6vecSubPKfS0_Pf` (which nothing
//! probes), and launches each twice. The fake driver logs every load and launch, and
//! whether the launched function's module holds bpf2ptx code. Each test reads that log.

use std::path::PathBuf;
use std::process::{Command, Output};

mod common;
use common::{repo, OTHER, PROBED};

const PROBES: &str = "tests/probes/bpftime/cuda_counter.bpf.o";

/// The interposer cdylib, built for this test's profile.
fn interposer() -> PathBuf {
    bpf2ptx_tests::interposer_lib()
}

/// A scratch folder with the fake driver, the app and the app's PTX built in it.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        common::build(dir.path());
        Fixture { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The folder of the one process that wrote into the last run's session folder.
    fn proc(&self) -> PathBuf {
        let trace = self.path("trace");
        let pids = bpf2ptx::trace::wire::processes(&trace);
        assert_eq!(pids.len(), 1, "one process wrote: {pids:?}");
        bpf2ptx::trace::wire::proc_dir(&trace, pids[0])
    }

    /// Runs the app in `mode`; `session`: with a trace session of [`PROBES`] (config in
    /// `trace/`); `env`: more variables. Returns the output and the fake driver's log.
    fn run(&self, mode: &str, session: bool, env: &[(&str, &str)]) -> (Output, Vec<String>) {
        self.run_probes(mode, session.then_some(PROBES), env)
    }

    /// [`Fixture::run`] with a session of the probe object `probes` (from the repository
    /// root), if any.
    fn run_probes(
        &self,
        mode: &str,
        probes: Option<&str>,
        env: &[(&str, &str)],
    ) -> (Output, Vec<String>) {
        let session = probes.is_some();
        let log = self.path(&format!("driver-{mode}-{session}.log"));
        let _ = std::fs::remove_file(&log);
        let mut cmd = Command::new(self.path("app"));
        cmd.args([mode, self.path("app.ptx").to_str().unwrap(), PROBED, OTHER])
            .env("LD_LIBRARY_PATH", self.dir.path())
            .env("LD_PRELOAD", interposer())
            .env("FAKE_CUDA_LOG", &log)
            .env_remove("BPF2PTX_TRACE_DIR");
        if let Some(probes) = probes {
            let trace = self.path("trace");
            // A fresh session folder: no process folders of an earlier run.
            let _ = std::fs::remove_dir_all(&trace);
            std::fs::create_dir_all(&trace).unwrap();
            let mut config = serde_json::json!({ "probes": repo().join(probes) });
            if let Some((_, dir)) = env.iter().find(|(k, _)| *k == "TEST_JIT_CACHE") {
                config["cache"] = serde_json::json!(dir);
            }
            if let Some((_, n)) = env.iter().find(|(k, _)| *k == "TEST_LOOP_BUDGET") {
                config["loop_budget"] = serde_json::json!(n.parse::<u64>().unwrap());
            }
            if env.iter().any(|(k, _)| *k == "TEST_LAUNCH_LOG") {
                config["launch_log"] = serde_json::json!(true);
            }
            std::fs::write(trace.join("config.json"), config.to_string()).unwrap();
            cmd.env("BPF2PTX_TRACE_DIR", &trace);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        if env.iter().any(|(k, _)| *k == "TEST_NO_DRIVER_LOG") {
            cmd.env_remove("FAKE_CUDA_LOG");
        }
        let out = cmd.output().unwrap();
        let lines = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        (out, lines)
    }
}

fn launches<'a>(log: &'a [String], kernel: &str) -> Vec<&'a str> {
    log.iter()
        .filter(|l| l.starts_with("launch ") && l.split(' ').nth(2) == Some(kernel))
        .map(String::as_str)
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn linked_app_launches_the_instrumented_kernel_and_only_that_one() {
    let f = Fixture::new();
    let (out, log) = f.run("linked", true, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "app done\n");
    let probed = launches(&log, PROBED);
    let other = launches(&log, OTHER);
    assert_eq!(probed.len(), 2, "{log:?}");
    assert!(probed.iter().all(|l| l.ends_with("probed=1")), "{log:?}");
    assert!(
        other.len() == 2 && other.iter().all(|l| l.ends_with("probed=0")),
        "{log:?}"
    );
    // One instrumented load, lazily: after the app's own load.
    let loads: Vec<&String> = log.iter().filter(|l| l.starts_with("load")).collect();
    assert_eq!(loads.len(), 2, "{log:?}");
    assert!(loads[0].ends_with("probed=0") && loads[1].ends_with("probed=1"));
    let events = bpf2ptx_interposer::session::read_events(&f.proc());
    let instrumented: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            bpf2ptx_interposer::session::Event::Instrumented { kernels, .. } => Some(kernels),
            _ => None,
        })
        .collect();
    assert_eq!(instrumented, vec![&vec![PROBED.to_string()]], "{events:?}");
    assert!(!stderr(&out).contains("bpf2ptx trace"), "{}", stderr(&out));
}

#[test]
fn static_cudart_style_proc_address_is_hooked_per_variant() {
    let f = Fixture::new();
    let (out, log) = f.run("procaddr", true, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let probed = launches(&log, PROBED);
    assert_eq!(probed.len(), 2, "{log:?}");
    // The per-thread-stream variant the app asked for, instrumented.
    assert!(probed
        .iter()
        .all(|l| l.starts_with("launch ptsz") && l.ends_with("probed=1")));
    assert!(launches(&log, OTHER)
        .iter()
        .all(|l| l.ends_with("probed=0")));
}

#[test]
fn library_kernels_and_their_functions_are_swapped() {
    let f = Fixture::new();
    let (out, log) = f.run("library", true, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let probed = launches(&log, PROBED);
    assert_eq!(probed.len(), 4, "{log:?}");
    assert!(probed.iter().all(|l| l.ends_with("probed=1")), "{log:?}");
    assert!(launches(&log, OTHER)
        .iter()
        .all(|l| l.ends_with("probed=0")));
    assert!(log
        .iter()
        .any(|l| l.starts_with("load library") && l.ends_with("probed=1")));
}

#[test]
fn without_a_session_nothing_changes() {
    let f = Fixture::new();
    for mode in ["linked", "procaddr", "library"] {
        let (out, log) = f.run(mode, false, &[]);
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        assert!(
            log.iter().all(|l| !l.contains("probed=1")),
            "{mode}: {log:?}"
        );
        assert_eq!(log.iter().filter(|l| l.starts_with("load")).count(), 1);
        assert_eq!(stderr(&out), "");
    }
}

#[test]
fn a_failed_jit_leaves_the_app_unmodified_with_one_line() {
    let f = Fixture::new();
    for (env, why) in [
        (
            ("BPF2PTX_TRACE_FAULT", "jit"),
            "forced by BPF2PTX_TRACE_FAULT=jit",
        ),
        (
            ("FAKE_CUDA_REFUSE_PROBED", "1"),
            "the driver refused the instrumented PTX",
        ),
    ] {
        let (out, log) = f.run("linked", true, &[env]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "app done\n");
        assert!(log.iter().all(|l| !l.contains("probed=1")), "{log:?}");
        assert_eq!(launches(&log, PROBED).len(), 2);
        let err = stderr(&out);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("bpf2ptx trace:"))
            .collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains("module 1") && lines[0].contains(why),
            "{err}"
        );
        assert!(lines[0].ends_with("it runs unmodified"), "{err}");
    }
}

#[test]
fn a_session_that_cannot_start_says_so_once_and_forwards() {
    let f = Fixture::new();
    let trace = f.path("broken");
    std::fs::create_dir_all(&trace).unwrap();
    std::fs::write(
        trace.join("config.json"),
        r#"{"probes": "/nonexistent.bpf.o"}"#,
    )
    .unwrap();
    let (out, log) = f.run(
        "linked",
        false,
        &[("BPF2PTX_TRACE_DIR", trace.to_str().unwrap())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(log.iter().all(|l| !l.contains("probed=1")), "{log:?}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("not started") && err.contains("nonexistent"),
        "{err}"
    );
}

#[test]
fn the_last_snapshot_holds_every_map_of_the_instrumented_module() {
    use bpf2ptx_interposer::snapshot::{read, unhex};
    let f = Fixture::new();
    let (out, log) = f.run("linked", true, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The copies ran on a non-blocking stream of the interposer's own, after the
    // context's work finished.
    assert!(log.iter().any(|l| l == "stream flags=1"), "{log:?}");
    assert!(log.iter().any(|l| l == "synchronize"), "{log:?}");
    let snap = read(&f.proc()).expect("snapshot.json");
    assert!(snap.last);
    assert_eq!(snap.devices.len(), 1);
    let dev = &snap.devices[0];
    assert_eq!((dev.device, dev.context), (0, 0));
    assert_eq!(dev.modules, ["module 1"]);
    let names: Vec<&str> = dev.maps.iter().map(|m| m.name.as_str()).collect();
    // cuda_counter's three hash maps (its .rodata stays the module's own).
    assert_eq!(names, ["entered_at", "launches", "busy_ns"], "{names:?}");
    let obj = bpf2ptx::load_path(&common::repo().join(PROBES)).unwrap();
    for raw in &dev.maps {
        let m = obj.maps.iter().find(|m| m.name == raw.name).unwrap();
        // The instance's words: storage and counts block of its own (not 0), the rest as
        // the module laid the map out.
        assert_eq!(raw.desc[0] as u32, m.map_type, "{}", m.name);
        assert!(
            raw.desc[3] != 0 && raw.desc[5] != 0,
            "{}: {:?}",
            m.name,
            raw.desc
        );
        let desc: Vec<u8> = raw.desc.iter().flat_map(|w| w.to_le_bytes()).collect();
        let data = unhex(&raw.data).unwrap();
        assert_eq!(
            data.len() as u64,
            bpf2ptx_loader::image::storage_bytes(m, &desc),
            "{}: the storage a reader decodes",
            m.name
        );
        assert!(data.iter().all(|&b| b == 0), "nothing ran: zeroed");
        let counts = raw.counts.as_deref().and_then(unhex).unwrap();
        assert_eq!(counts.len() as u64, bpf2ptx_runtime::maps::COUNTS_BYTES);
    }
}

#[test]
fn per_thread_arrays_are_bound_and_grow_with_the_launch() {
    use bpf2ptx_interposer::snapshot::{read, unhex};
    // gpu_hash_perthread has a per-thread array of 2 u64 entries; the app launches 32
    // threads, then 64.
    let f = Fixture::new();
    let (out, log) = f.run_probes(
        "linked",
        Some("tests/probes/bpftime/gpu_hash_perthread.bpf.o"),
        &[],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mem: Vec<&str> = log
        .iter()
        .map(String::as_str)
        .filter(|l| ["alloc 512", "alloc 1024", "dtod 256", "free"].contains(l))
        .collect();
    // 2 keys x 32 threads x 8 bytes; then 2 x 64 x 8 with each key's 32 slots moved.
    assert_eq!(
        mem,
        ["alloc 512", "alloc 1024", "dtod 256", "dtod 256", "free"],
        "{log:?}"
    );
    let snap = read(&f.proc()).expect("snapshot.json");
    let per_thread = snap.devices[0]
        .maps
        .iter()
        .find(|m| m.name == "per_thread")
        .unwrap();
    assert_eq!(per_thread.desc[4], 64, "word 4: the units bound");
    assert_eq!(unhex(&per_thread.data).map(|d| d.len()), Some(1024));
}

/// The first launches of a matched kernel come while the application's streams capture
/// a graph (cudart's global mode): instrumenting and binding the module, and growing its
/// per-thread array, must neither use the legacy stream nor make calls the capture
/// refuses as unsafe, which would invalidate the application's capture (a real driver:
/// CUresult 906, seen on an H100 with tests/gpu/trace/graph_app.cu).
#[test]
fn a_module_first_launched_inside_a_stream_capture_leaves_the_capture_valid() {
    let f = Fixture::new();
    // The plain probe; a per-thread array (grown at the launch); maps shared with a
    // host-side program (pinned storage bound into the module).
    for probes in [
        PROBES,
        "tests/probes/bpftime/gpu_hash_perthread.bpf.o",
        "examples/probes/trace_latency.bpf.o",
    ] {
        let (out, log) = f.run_probes("captured", Some(probes), &[]);
        assert!(out.status.success(), "{probes}: {}", stderr(&out));
        assert!(
            !log.iter().any(|l| l.starts_with("capture invalidated")),
            "{probes}: {log:?}"
        );
        assert!(
            launches(&log, PROBED)
                .iter()
                .all(|l| l.ends_with("probed=1")),
            "{probes}: {log:?}"
        );
        assert!(
            !stderr(&out).contains("runs unmodified"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn the_second_run_loads_the_cached_cubin_without_jit() {
    use bpf2ptx_interposer::session::{read_events, Event};
    let f = Fixture::new();
    let cache = f.path("jit-cache");
    let cache_env = [("TEST_JIT_CACHE", cache.to_str().unwrap())];
    let cached = |f: &Fixture| {
        read_events(&f.proc())
            .into_iter()
            .find_map(|e| match e {
                Event::Instrumented { cached, .. } => Some(cached),
                _ => None,
            })
            .expect("an instrumented event")
    };
    let (out, log) = f.run("linked", true, &cache_env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(log.iter().any(|l| l == "link") && log.iter().any(|l| l == "load cubin"));
    assert!(!cached(&f));
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        2,
        "a .key and a .cubin"
    );
    let (out, log) = f.run("linked", true, &cache_env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!log.iter().any(|l| l == "link"), "{log:?}");
    assert!(log.iter().any(|l| l == "load cubin"));
    assert!(
        launches(&log, PROBED)
            .iter()
            .all(|l| l.ends_with("probed=1")),
        "{log:?}"
    );
    assert!(cached(&f));
}

#[test]
fn explicit_graph_kernel_nodes_get_the_instrumented_function() {
    let f = Fixture::new();
    let (out, log) = f.run("graph", true, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let probed = launches(&log, PROBED);
    assert_eq!(probed.len(), 2, "{log:?}");
    assert!(probed
        .iter()
        .all(|l| l.starts_with("launch graph") && l.ends_with("probed=1")));
    assert!(
        launches(&log, OTHER)
            .iter()
            .all(|l| l.ends_with("probed=0")),
        "{log:?}"
    );
}

#[test]
fn ptx_given_to_the_linker_is_instrumented_once() {
    use bpf2ptx_interposer::session::{read_events, Event};
    let f = Fixture::new();
    let (out, log) = f.run("link", true, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(log.iter().any(|l| l == "load cubin"), "{log:?}");
    // The linked cubin holds the probes; it is not instrumented again.
    assert_eq!(
        log.iter().filter(|l| l.starts_with("load")).count(),
        2,
        "{log:?}"
    );
    assert!(
        launches(&log, PROBED)
            .iter()
            .all(|l| l.ends_with("probed=1")),
        "{log:?}"
    );
    let labels: Vec<String> = read_events(&f.proc())
        .into_iter()
        .filter_map(|e| match e {
            Event::Instrumented { label, kernels, .. } => {
                assert_eq!(kernels, [PROBED]);
                Some(label)
            }
            _ => None,
        })
        .collect();
    assert_eq!(labels, ["link input 1 (app.ptx)"]);
    let snap = bpf2ptx_interposer::snapshot::read(&f.proc()).expect("snapshot");
    assert_eq!(
        snap.devices.iter().map(|d| d.modules.len()).sum::<usize>(),
        1,
        "the linked module's maps are bound and snapshotted"
    );
}

/// `CLOCK_MONOTONIC` in ns (the clock the interposer moves onto the GPU's timeline).
fn monotonic_ns() -> u64 {
    bpf2ptx_interposer::clock::monotonic_ns()
}

/// The fake driver's `%globaltimer` offset in the host-program tests.
const GPU_OFFSET: u64 = 1_000_000_000_000;

fn u64_at(bytes: &[u8], word: usize) -> u64 {
    u64::from_le_bytes(bytes[word * 8..word * 8 + 8].try_into().unwrap())
}

#[test]
fn a_host_program_runs_at_each_launch_and_shares_its_map_with_the_gpu() {
    use bpf2ptx_interposer::session::{read_events, Event};
    use bpf2ptx_interposer::snapshot::{read, unhex};
    let f = Fixture::new();
    let offset = GPU_OFFSET.to_string();
    let before = monotonic_ns();
    let (out, log) = f.run_probes(
        "linked",
        Some("examples/probes/trace_latency.bpf.o"),
        &[
            ("FAKE_CUDA_GLOBALTIMER_OFFSET", offset.as_str()),
            ("TEST_LAUNCH_LOG", "1"),
        ],
    );
    let after = monotonic_ns();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "app done\n");
    assert!(!stderr(&out).contains("bpf2ptx trace"), "{}", stderr(&out));
    // The offset was measured with the interposer's timer kernel, before the launches.
    assert!(log.iter().any(|l| l == "load clock"), "{log:?}");
    let events = read_events(&f.proc());
    let measured = events
        .iter()
        .find_map(|e| match e {
            Event::Clock { offset_ns, .. } => Some(*offset_ns),
            _ => None,
        })
        .expect("a clock event");
    let err = (measured - GPU_OFFSET as i64).abs();
    assert!(err < 1_000_000, "offset {measured} vs {GPU_OFFSET}");
    // The shared maps: pinned host memory (portable, mapped), bound into the module.
    // (and 16 bytes for the timer kernel's words)
    assert_eq!(
        log.iter().filter(|l| l.starts_with("host alloc")).count(),
        3,
        "{log:?}"
    );
    assert!(log.iter().any(|l| l == "host alloc 8 flags=3"), "{log:?}");
    // No GPU program writes `launch`: the GPU reads a device copy, which each launch
    // brings up to the host program's values with stream writes (2 words, both new at
    // every launch: host_ns and seq), not the pinned storage. `launches`, which no GPU
    // program names, is not pushed.
    let writes: Vec<u64> = log
        .iter()
        .filter_map(|l| l.strip_prefix("write value ")?.parse().ok())
        .collect();
    assert_eq!(writes.len(), 8, "{log:?}");
    let snap = read(&f.proc()).expect("snapshot.json");
    let shared = |name: &str| {
        let m = snap
            .shared
            .iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", snap.shared));
        unhex(&m.data).unwrap()
    };
    // Four launches (two kernels, two each), each ran the host program.
    assert_eq!(u64_at(&shared("launches"), 0), 4);
    let launch = shared("launch");
    let (host_ns, seq) = (u64_at(&launch, 0), u64_at(&launch, 1));
    assert_eq!(seq, 4);
    assert_eq!(
        writes[6..],
        [host_ns, seq],
        "the last launch's values reach the GPU"
    );
    let seqs: Vec<u64> = writes.iter().skip(1).step_by(2).copied().collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert!(
        host_ns >= before + GPU_OFFSET - 1_000_000 && host_ns <= after + GPU_OFFSET + 1_000_000,
        "host_ns {host_ns} on the GPU's timeline ({before}..{after} + offset)"
    );
    // One instance: the module's snapshot leaves the shared maps to `shared`.
    assert!(snap.devices[0].maps.iter().all(|m| m.name != "launch"));
    // The launch records, for --trace-events.
    let records = bpf2ptx::trace::wire::read_launches(&f.proc());
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    let shapes: Vec<(u32, u32)> = records.iter().map(|r| (r.kernel, r.grid[0])).collect();
    assert_eq!(shapes, [(1, 1), (1, 2), (2, 1), (2, 2)]);
    assert_eq!(
        records[3].host_ns, host_ns,
        "the record and the context agree"
    );
    assert!(records.windows(2).all(|w| w[0].host_ns <= w[1].host_ns));
}

#[test]
fn a_bpftime_uprobe_on_cuda_launch_kernel_sees_the_launch_arguments() {
    use bpf2ptx_interposer::session::{read_events, Event};
    use bpf2ptx_interposer::snapshot::{read, unhex};
    let f = Fixture::new();
    let offset = GPU_OFFSET.to_string();
    let before = monotonic_ns();
    let (out, log) = f.run_probes(
        "procaddr",
        Some("tests/probes/bpftime/launchlate.bpf.o"),
        &[("FAKE_CUDA_GLOBALTIMER_OFFSET", offset.as_str())],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // The GPU probe matches vectorAdd only; the uprobe runs at every launch.
    assert!(launches(&log, PROBED)
        .iter()
        .all(|l| l.ends_with("probed=1")));
    let snap = read(&f.proc()).expect("snapshot.json");
    let seen = snap
        .shared
        .iter()
        .find(|m| m.name == "host_seen")
        .and_then(|m| unhex(&m.data))
        .expect("host_seen shared");
    assert_eq!(u64_at(&seen, 0), 4, "calls");
    // The last launch: grid (2, 1, 1): rsi = x | y << 32, rdx = grid z (what bpftime's
    // BPF_KPROBE(func, gridDim, blockDim) calls blockDim is the third register).
    assert_eq!(u64_at(&seen, 1), 2 | 1 << 32);
    assert_eq!(u64_at(&seen, 2), 1);
    assert!(
        u64_at(&seen, 3) >= before + GPU_OFFSET - 1_000_000,
        "ktime on the GPU's timeline"
    );
    assert!(u64_at(&seen, 4) != 0, "pid");
    let lines: Vec<String> = read_events(&f.proc())
        .into_iter()
        .filter_map(|e| match e {
            Event::Printk { line, .. } => Some(line),
            _ => None,
        })
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(
        lines[0].starts_with("CPU: cudaLaunchKernel called at ts=") && lines[0].contains("pid="),
        "{lines:?}"
    );
}

/// The interposer's cost per launch call on the host, under the fake driver (whose
/// launch does nothing when it logs nothing): no session, a session whose GPU probe
/// matches (the launch swapped), and one that also runs a host program at each launch
/// and records it. Prints the means; fails only past 5 us, far above what it measures,
/// since the machine running it may be shared. `cargo test -p bpf2ptx-interposer --test
/// fake_driver -- --ignored --nocapture launch_cost`.
#[test]
#[ignore]
fn launch_cost() {
    let f = Fixture::new();
    let mut rows = Vec::new();
    for (what, probes, log) in [
        ("no session", None, false),
        (
            "matched empty GPU probe",
            Some("examples/probes/empty.bpf.o"),
            false,
        ),
        (
            "host program + GPU probe + launch records",
            Some("examples/probes/trace_latency.bpf.o"),
            true,
        ),
    ] {
        let mut env = vec![("FAKE_APP_LAUNCHES", "200000"), ("TEST_NO_DRIVER_LOG", "1")];
        if log {
            env.push(("TEST_LAUNCH_LOG", "1"));
        }
        let (out, _) = f.run_probes("bench", probes, &env);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let ns: f64 = text.split_whitespace().next().unwrap().parse().unwrap();
        rows.push((what, ns));
    }
    for (what, ns) in &rows {
        println!("{what:45} {ns:8.1} ns per launch");
    }
    assert!(rows.iter().all(|(_, ns)| *ns < 5000.0), "{rows:?}");
}

/// tests/trace/shared_maps.bpf.o: a map of every kind the interposer binds, which the
/// fake driver acts on at each instrumented launch (FAKE_CUDA_RUN_PROBES=1).
const SHARED_MAPS: &str = "tests/trace/shared_maps.bpf.o";

/// Runs the app in `mode` (twomod, twodev) with [`SHARED_MAPS`] acted out; returns the
/// driver's log and the last snapshot.
fn run_shared(mode: &str) -> (Vec<String>, bpf2ptx_interposer::snapshot::Snapshot) {
    let f = Fixture::new();
    let (out, log) = f.run_probes(mode, Some(SHARED_MAPS), &[("FAKE_CUDA_RUN_PROBES", "1")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "app done\n");
    assert!(!stderr(&out).contains("bpf2ptx trace"), "{}", stderr(&out));
    let snap = bpf2ptx_interposer::snapshot::read(&f.proc()).expect("snapshot.json");
    assert!(snap.last);
    (log, snap)
}

/// Map `name` of a device's set, decoded as the front end decodes it.
fn decoded(dev: &bpf2ptx::trace::wire::DeviceMaps, name: &str) -> bpf2ptx_loader::image::MapImage {
    use bpf2ptx_interposer::snapshot::unhex;
    let obj = bpf2ptx::load_path(&common::repo().join(SHARED_MAPS)).unwrap();
    let m = obj.maps.iter().find(|m| m.name == name).unwrap();
    let raw = dev
        .maps
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name} in device {}", dev.device));
    let desc: Vec<u8> = raw.desc.iter().flat_map(|w| w.to_le_bytes()).collect();
    let storage = unhex(&raw.data).unwrap();
    let counts = raw.counts.as_deref().and_then(unhex);
    let counters = raw
        .counters
        .as_deref()
        .and_then(unhex)
        .map(|c| [u64_at(&c, 0), u64_at(&c, 1)]);
    bpf2ptx_loader::image::decode(
        m,
        &bpf2ptx_loader::image::RawMap {
            desc: &desc,
            storage: &storage,
            counts: counts.as_deref(),
            ring: counters.map(|counters| bpf2ptx_loader::image::RawRing {
                counters,
                taken: &[],
                taken_error: None,
            }),
        },
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The u64 at the start of each value (array) or `(key, value)` u64 pairs (hash), the
/// per-unit copies of key 0, the ring's records, of a decoded map.
fn contents(image: &bpf2ptx_loader::image::MapImage) -> Vec<u64> {
    use bpf2ptx_loader::image::MapData;
    match &image.data {
        MapData::Array { values, .. } => values.iter().map(|v| u64_at(v, 0)).collect(),
        MapData::PerUnit { values, .. } => (0..values.copies())
            .map(|u| u64_at(values.get(0, u), 0))
            .collect(),
        MapData::Hash { entries } => {
            let mut kv: Vec<(u64, u64)> = entries
                .iter()
                .map(|(k, v)| (u64_at(k, 0), u64_at(v, 0)))
                .collect();
            kv.sort_unstable();
            kv.into_iter().flat_map(|(k, v)| [k, v]).collect()
        }
        MapData::Ring { records, .. } => records.iter().map(|r| u64_at(&r.data, 0)).collect(),
        d => panic!("{d:?}"),
    }
}

/// Per thread, how many of the launches of `threads` threads it was in.
fn per_thread_counts(launches: &[u64]) -> Vec<u64> {
    let max = launches.iter().copied().max().unwrap_or(0);
    (0..max)
        .map(|t| launches.iter().filter(|&&n| n > t).count() as u64)
        .collect()
}

/// Two modules with the same probes, on one device: every launch of either adds to the
/// one instance of each map. The per-thread array grows when module 1 launches more
/// threads than any launch before, keeping module 0's counts, and module 0's later
/// launches count in the grown instance; the hash map holds at most its 4 entries
/// across both modules (the 5th and 6th insertions refused, counted `full`).
#[test]
fn two_modules_with_the_same_probes_share_one_instance_of_each_map() {
    let (log, snap) = run_shared("twomod");
    let probed = launches(&log, PROBED);
    assert_eq!(probed.len(), 6, "{log:?}");
    assert!(
        probed.iter().all(|l| l.ends_with("device=0 probed=1")),
        "{log:?}"
    );
    let sets: Vec<_> = snap
        .devices
        .iter()
        .map(|d| (d.device, &d.modules))
        .collect();
    assert_eq!(sets.len(), 1, "one set: {sets:?}");
    let dev = &snap.devices[0];
    assert_eq!(dev.modules, ["module 1", "module 2"]);
    let hits = decoded(dev, "hits");
    assert_eq!(contents(&hits), [6, 0, 0, 0], "both modules' launches");
    // Launches of 32, 64, 64, 96, 96 and 128 threads, alternating modules.
    let per_thr = decoded(dev, "per_thr");
    assert_eq!(
        contents(&per_thr),
        per_thread_counts(&[32, 64, 64, 96, 96, 128])
    );
    let seen = decoded(dev, "seen");
    assert_eq!(
        contents(&seen),
        [1, 1, 2, 1, 3, 1, 4, 1],
        "the first 4 keys"
    );
    assert_eq!((seen.keys, seen.counts.full), (Some(4), 2));
    assert_eq!(
        contents(&decoded(dev, "records")),
        [1, 2, 3, 4, 5, 6],
        "one ring"
    );
    let bss = dev.maps.iter().find(|m| m.name == ".bss").expect(".bss");
    assert!(bss.desc.is_empty());
    let bss = bpf2ptx_interposer::snapshot::unhex(&bss.data).unwrap();
    assert_eq!(u64_at(&bss, 0), 6, "global data: one instance too");
}

/// Two devices: each keeps its own instance of every map, bound into the module loaded
/// there, and the snapshot names the device of each set.
#[test]
fn two_devices_keep_separate_maps() {
    let (log, snap) = run_shared("twodev");
    let probed = launches(&log, PROBED);
    assert_eq!(
        probed
            .iter()
            .filter(|l| l.ends_with("device=0 probed=1"))
            .count(),
        3,
        "{log:?}"
    );
    assert_eq!(
        probed
            .iter()
            .filter(|l| l.ends_with("device=1 probed=1"))
            .count(),
        3,
        "{log:?}"
    );
    let ids: Vec<(u32, u32, Vec<String>)> = snap
        .devices
        .iter()
        .map(|d| (d.device, d.context, d.modules.clone()))
        .collect();
    assert_eq!(
        ids,
        [
            (0, 0, vec!["module 1".to_string()]),
            (1, 0, vec!["module 2".to_string()])
        ]
    );
    let (d0, d1) = (&snap.devices[0], &snap.devices[1]);
    assert_eq!(contents(&decoded(d0, "hits")), [3, 0, 0, 0]);
    assert_eq!(contents(&decoded(d1, "hits")), [3, 0, 0, 0]);
    assert_eq!(
        contents(&decoded(d0, "per_thr")),
        per_thread_counts(&[32, 64, 96])
    );
    assert_eq!(
        contents(&decoded(d1, "per_thr")),
        per_thread_counts(&[64, 96, 128])
    );
    // Launch numbers alternate between the devices.
    assert_eq!(contents(&decoded(d0, "seen")), [1, 1, 3, 1, 5, 1]);
    assert_eq!(contents(&decoded(d1, "seen")), [2, 1, 4, 1, 6, 1]);
    assert_eq!(contents(&decoded(d0, "records")), [1, 3, 5]);
    assert_eq!(contents(&decoded(d1, "records")), [2, 4, 6]);
}

/// One library (cudart's lazy loading) whose kernel runs on both devices: its
/// instrumented copy is bound once per context, so each device's launches count in that
/// device's maps, through the `CUkernel` (decided per context) and through a function
/// got in the second context.
#[test]
fn a_library_kernel_run_on_two_devices_counts_in_each_device() {
    let (log, snap) = run_shared("twodevlib");
    let probed = launches(&log, PROBED);
    assert_eq!(probed.len(), 6, "{log:?}");
    for d in 0..2 {
        let n = probed
            .iter()
            .filter(|l| l.ends_with(&format!("device={d} probed=1")))
            .count();
        assert_eq!(n, 3, "device {d}: {log:?}");
    }
    let sets: Vec<(u32, Vec<String>)> = snap
        .devices
        .iter()
        .map(|d| (d.device, d.modules.clone()))
        .collect();
    assert_eq!(
        sets,
        [
            (0, vec!["library 1".to_string()]),
            (1, vec!["library 1".to_string()])
        ]
    );
    let (d0, d1) = (&snap.devices[0], &snap.devices[1]);
    assert_eq!(contents(&decoded(d0, "hits")), [3, 0, 0, 0]);
    assert_eq!(contents(&decoded(d1, "hits")), [3, 0, 0, 0]);
    assert_eq!(
        contents(&decoded(d0, "per_thr")),
        per_thread_counts(&[32, 64, 96])
    );
    assert_eq!(
        contents(&decoded(d1, "per_thr")),
        per_thread_counts(&[64, 96, 128])
    );
    assert_eq!(contents(&decoded(d1, "records")), [2, 4, 6]);
}

/// A process of the traced tree that never calls the driver (a launcher, a shell) leaves
/// no folder of its own in the session folder: it has no maps to print.
#[test]
fn a_process_without_cuda_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace");
    std::fs::create_dir(&trace).unwrap();
    std::fs::write(
        trace.join("config.json"),
        serde_json::json!({ "probes": repo().join(PROBES) }).to_string(),
    )
    .unwrap();
    let out = Command::new("sh")
        .args(["-c", "echo hi"])
        .env("LD_PRELOAD", interposer())
        .env("BPF2PTX_TRACE_DIR", &trace)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi\n");
    let left: Vec<_> = std::fs::read_dir(&trace)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["config.json"], "{left:?}");
}

/// GPU printk lines and loop-budget counts reach the snapshot: each launch of the probed
/// kernel acts out tests/trace/printk.bpf.c (a `hello %d` record in the module's printk
/// ring, 3 runs ended by the loop budget); the final snapshot holds the lines not read by
/// an earlier one, in order, and the counts summed over the device's modules.
#[test]
fn printk_lines_and_loop_budgets_reach_the_snapshot() {
    let f = Fixture::new();
    let (out, _) = f.run_probes(
        "twomod",
        Some("tests/trace/printk.bpf.o"),
        &[("FAKE_CUDA_RUN_PROBES", "1"), ("TEST_LOOP_BUDGET", "8")],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("bpf2ptx trace"), "{}", stderr(&out));
    let snap = bpf2ptx_interposer::snapshot::read(&f.proc()).expect("snapshot.json");
    assert!(snap.last);
    let dev = &snap.devices[0];
    let lines: Vec<&str> = dev.printk.iter().map(|p| p.line.as_str()).collect();
    assert!(!lines.is_empty(), "{snap:?}");
    assert!(lines.iter().all(|l| l.starts_with("hello ")), "{lines:?}");
    let launches = lines.len() as u64;
    assert_eq!(
        dev.loop_budget,
        vec![("on_entry".to_string(), 3 * launches)]
    );
    assert_eq!(dev.printk_dropped, 0);
}
