//! The verifiers side by side: how long bpf2ptx's verifier and the running Linux kernel's
//! take to accept or reject the same programs (issue 15, point 5: rejecting a program that
//! explodes the state space takes no longer than Linux).
//!
//!     cargo run --release -p bpf2ptx-benches --example verifier-time -- [--runs N] [--write] [FILE.s ...]
//!
//! Programs: the files given, else every `benches/verifier/*.s` (`benches/verifier/gen.py`
//! writes the generated ones). Each is assembled here, encoded to raw instructions and
//! loaded into the kernel as a `BPF_PROG_TYPE_KPROBE` program (a GPU probe's counterpart,
//! as `tests/tests/verifier_kernel.rs` loads them) by `tests/kernel/testrun.c --load-only
//! --stats`, built with gcc and libbpf: one `BPF_PROG_LOAD` at log level `BPF_LOG_STATS`,
//! which gives the kernel's "verification time", "processed N insns" and states without an
//! instruction trace, and the wall time of the call. bpf2ptx's side is the release binary's
//! `bpf2ptx verify FILE` as a process (start-up, parsing and printing included, so its
//! figures cover more than the kernel's), under `/usr/bin/time` for its CPU time (user and
//! system) and peak memory. Each side gets a wall time and a CPU time (`getrusage` around
//! the kernel's load): on a busy machine the wall times grow with the other load, the CPU
//! times do not. The two alternate, `--runs` times each (default 5); the table shows
//! medians. Needs root, gcc, libbpf-dev and a kernel that allows bpf(2); it says why and
//! exits 2 otherwise.
//!
//! `--write` puts the table into `benches/results/verifier-explosion.md` between its
//! `verifier-time` markers. The exit status is 1 when bpf2ptx's median wall or CPU time is
//! above the kernel's on any program.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use bpf2ptx_compiler::isa;
use bpf2ptx_tests::kernel::{build_testrun, release};
use bpf2ptx_tests::{bpf2ptx_bin, files_with_ext, repo_root};

const BEGIN: &str = "<!-- verifier-time:begin -->";
const END: &str = "<!-- verifier-time:end -->";
const RESULTS: &str = "benches/results/verifier-explosion.md";

/// One load by the kernel.
struct KernelRun {
    verdict: String,
    /// Its last log line that is not a statistic (empty when it accepts).
    reason: String,
    wall_us: u64,
    /// CPU time of the load (user and system), which other load on the machine does not
    /// inflate.
    cpu_us: u64,
    verification_us: u64,
    processed: u64,
    /// "total/peak" states, as the kernel counts them.
    states: String,
}

/// One `bpf2ptx verify`.
struct OurRun {
    verdict: String,
    /// The first error's rule and message, or the accepted line's worst case.
    reason: String,
    wall_us: u64,
    /// User and system CPU time.
    cpu_us: u64,
    max_rss_kb: u64,
}

fn main() {
    let mut runs = 5usize;
    let mut write = false;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .expect("--runs needs a positive number")
            }
            "--write" => write = true,
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        files = files_with_ext(&repo_root().join("benches/verifier"), "s");
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let testrun = build_testrun(tmp.path()).unwrap_or_else(|why| {
        eprintln!("verifier-time: the kernel side cannot run here: {why}");
        std::process::exit(2);
    });
    let bpf2ptx = bpf2ptx_bin();
    let mut table = String::new();
    let mut slower = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let obj = bpf2ptx::load_path(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(obj.programs.len(), 1, "{name}: one program expected");
        let insns = &obj.programs[0].insns;
        let bin = tmp.path().join("prog.bin");
        std::fs::write(&bin, isa::encode(insns)).expect("write prog.bin");
        let (mut kernel, mut ours) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            kernel.push(kernel_load(&testrun, &bin));
            ours.push(verify(&bpf2ptx, f, tmp.path()));
        }
        eprintln!("{name}: {runs} runs each");
        let k_wall = median(kernel.iter().map(|r| r.wall_us));
        let k_time = median(kernel.iter().map(|r| r.verification_us));
        let k_cpu = median(kernel.iter().map(|r| r.cpu_us));
        let o_wall = median(ours.iter().map(|r| r.wall_us));
        let o_cpu = median(ours.iter().map(|r| r.cpu_us));
        let o_rss = ours.iter().map(|r| r.max_rss_kb).max().unwrap_or(0);
        let (k, o) = (&kernel[0], &ours[0]);
        // A verdict that changes between runs would make the medians meaningless.
        assert!(
            kernel.iter().all(|r| r.verdict == k.verdict)
                && ours.iter().all(|r| r.verdict == o.verdict),
            "{name}: the verdict changed between runs"
        );
        if o_wall > k_wall || o_cpu > k_cpu {
            slower.push(name.clone());
        }
        writeln!(
            table,
            "\n### {name}\n\n{} instructions.\n\n\
             | verifier | result | reason | processed | states (total/peak) | verification time | wall | CPU | max RSS |\n\
             |---|---|---|---:|---:|---:|---:|---:|---:|\n\
             | Linux {} | {} | {} | {} | {} | {} | {} | {} | |\n\
             | bpf2ptx | {} | {} | | | | {} | {} | {} KB |\n\n\
             bpf2ptx / Linux: wall **{:.2}**, CPU **{:.2}**.",
            insns.len(),
            release(),
            k.verdict,
            cell(&k.reason),
            k.processed,
            k.states,
            ms(k_time),
            ms(k_wall),
            ms(k_cpu),
            o.verdict,
            cell(&o.reason),
            ms(o_wall),
            ms(o_cpu),
            o_rss,
            o_wall as f64 / k_wall.max(1) as f64,
            o_cpu as f64 / k_cpu.max(1) as f64,
        )
        .unwrap();
    }
    let body = format!(
        "Measured by `cargo run --release -p bpf2ptx-benches --example verifier-time -- --runs \
         {runs} --write` on {} ({} CPUs), kernel {}; medians of {runs} runs each, the kernel's \
         and bpf2ptx's alternating.\n{table}",
        cpu_model(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        release()
    );
    println!("{body}");
    if write {
        let path = repo_root().join(RESULTS);
        let doc = std::fs::read_to_string(&path).expect(RESULTS);
        let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
            panic!("{RESULTS} lacks the {BEGIN} / {END} markers");
        };
        let new = format!("{}{BEGIN}\n{body}{END}{}", &doc[..a], &doc[b + END.len()..]);
        std::fs::write(&path, new).expect("write the results");
    }
    if !slower.is_empty() {
        eprintln!(
            "verifier-time: bpf2ptx is slower than Linux on {}",
            slower.join(", ")
        );
        std::process::exit(1);
    }
}

/// Loads `prog` (raw instructions) into the kernel once, through testrun.
fn kernel_load(testrun: &Path, prog: &Path) -> KernelRun {
    let out = Command::new(testrun)
        .args(["--type", "kprobe", "--load-only", "--stats"])
        .arg(prog)
        .output()
        .expect("run testrun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "testrun failed: {stdout}");
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .unwrap_or("")
            .to_string()
    };
    let number = |key: &str| {
        field(key)
            .parse()
            .unwrap_or_else(|_| panic!("testrun printed no {key}: {stdout}"))
    };
    KernelRun {
        verdict: field("verdict"),
        reason: field("reason"),
        wall_us: number("wall_us"),
        cpu_us: number("cpu_us"),
        verification_us: number("verification_us"),
        processed: number("processed"),
        states: field("states"),
    }
}

/// Runs `bpf2ptx verify FILE` once under `/usr/bin/time`.
fn verify(bpf2ptx: &Path, file: &Path, tmp: &Path) -> OurRun {
    let times = tmp.join("time.txt");
    let start = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&times)
        .args(["-f", "%U %S %M"])
        .arg(bpf2ptx)
        .arg("verify")
        .arg(file)
        .output()
        .expect("run /usr/bin/time bpf2ptx verify");
    let wall_us = start.elapsed().as_micros() as u64;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let verdict = match out.status.code() {
        Some(0) => "accepted",
        Some(1) => "rejected",
        _ => panic!("bpf2ptx verify {}: {}", file.display(), text),
    };
    // An error is `error[rule]: message` (specs/verifier.md, "Output"); an acceptance is
    // one line ending in the worst case.
    let lines: Vec<&str> = text.lines().collect();
    let reason = match lines.iter().find_map(|l| l.strip_prefix("error[")) {
        Some(l) => {
            let (rule, message) = l.split_once("]: ").unwrap_or((l, ""));
            format!("{rule}: {}", message.trim())
        }
        None => lines
            .first()
            .and_then(|l| l.split("accepted; ").nth(1))
            .unwrap_or("")
            .to_string(),
    };
    // The figures are the last line: a failing command's exit status comes first.
    let time = std::fs::read_to_string(&times).expect("read /usr/bin/time's output");
    let fields: Vec<&str> = time
        .lines()
        .last()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let seconds = |k: usize| fields.get(k).and_then(|s| s.parse::<f64>().ok());
    let (Some(user), Some(sys), Some(rss)) = (seconds(0), seconds(1), seconds(2)) else {
        panic!("/usr/bin/time printed `{time}`");
    };
    OurRun {
        verdict: verdict.into(),
        reason,
        wall_us,
        cpu_us: ((user + sys) * 1e6) as u64,
        max_rss_kb: rss as u64,
    }
}

fn median(v: impl Iterator<Item = u64>) -> u64 {
    let mut v: Vec<u64> = v.collect();
    v.sort_unstable();
    v[v.len() / 2]
}

/// Microseconds as milliseconds, for the table.
fn ms(us: u64) -> String {
    format!("{:.1} ms", us as f64 / 1000.0)
}

/// Text for a table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name")?.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "an unknown CPU".into())
}
