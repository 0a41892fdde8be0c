//! Benchmarks of the PTX backend: lowering alone, verification plus lowering, and the
//! end-to-end `bpf2ptx prog.o -o x.ptx` of a typical probe, in-process and as a process.
//!
//! The targets: lowering above 1M instructions/s on the largest program that
//! lowers (`lower/big_globals.v3`, 9,435 instructions), and the end-to-end compile of a
//! typical probe (`end_to_end/*/launch_stamp.v3`) under 5 ms.
//!
//! `end_to_end/process/*` runs the release binary `target/release/bpf2ptx` (build it first
//! with `cargo build --release -p bpf2ptx`; `$BPF2PTX_BIN` overrides the path). Without it
//! those benchmarks are skipped with a printed reason.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use bpf2ptx::compile;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::front::load_bytes;
use bpf2ptx_compiler::program::Object;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The largest corpus program (34,686 instructions; maps and GPU helpers through the device
/// runtime).
const LARGEST: &str = "big.v4";
/// A typical probe: two functions, global data, `bpf_ktime_get_ns`.
const PROBE: &str = "launch_stamp.v3";
/// Typical tiny programs from the bpf_conformance suite: a loop, a packet parser, stack
/// slots, a bpf-to-bpf call, straight-line ALU.
const CONFORMANCE: &[&str] = &["prime", "subnet", "stack", "call_local", "alu64-arith"];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ has a parent")
        .to_path_buf()
}

fn corpus_path(name: &str) -> PathBuf {
    repo_root().join(format!("tests/corpus/obj/{name}.o"))
}

fn conformance_path(name: &str) -> PathBuf {
    repo_root().join(format!("tests/conformance/tests/{name}.data"))
}

/// Reads and loads a file; the name passed to the loader is the path as given, as the CLI
/// does.
fn load(path: &Path) -> (String, Vec<u8>, Object) {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{file}: {e}"));
    let obj = load_bytes(&file, &bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
    (file, bytes, obj)
}

/// The total instruction count (slots of the linked code) of every program of an object.
fn insn_count(obj: &Object) -> u64 {
    obj.programs.iter().map(|p| p.insns.len() as u64).sum()
}

/// The CLI's default options: `--target sm_70`, no `--entry`.
fn options() -> ptx::Options {
    ptx::Options {
        target: "sm_70".into(),
        entry: false,
        ..Default::default()
    }
}

/// Every benchmarked input: (benchmark id, path).
fn inputs() -> Vec<(String, PathBuf)> {
    let mut v = vec![
        (LARGEST.to_string(), corpus_path(LARGEST)),
        (PROBE.to_string(), corpus_path(PROBE)),
    ];
    v.extend(
        CONFORMANCE
            .iter()
            .map(|n| (format!("conformance/{n}"), conformance_path(n))),
    );
    v
}

/// `ptx::write_string` on an object already loaded and verified (the verifier runs once,
/// outside the loop), with the verifier's facts, as the CLI lowers it.
fn lower(c: &mut Criterion) {
    let mut group = c.benchmark_group("lower");
    let opts = options();
    for (id, path) in inputs() {
        let (_, _, obj) = load(&path);
        let verified = compile::verify(&obj).unwrap_or_else(|e| panic!("{id}: {e}"));
        ptx::write_string(&verified, &opts).unwrap_or_else(|e| panic!("{id}: {e}"));
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(&id), &verified, |b, v| {
            b.iter(|| ptx::write_string(black_box(v), &opts).expect("lowers"))
        });
    }
    group.finish();
}

/// The verifier alone (`compile::verify`: every program, with the attach point's entry
/// state, returning the facts the backend uses).
fn verify(c: &mut Criterion) {
    let mut group = c.benchmark_group("verify");
    for (id, path) in inputs().into_iter().take(2) {
        let (_, _, obj) = load(&path);
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(&id), &obj, |b, obj| {
            b.iter(|| compile::verify(black_box(obj)).expect("verifies"))
        });
    }
    group.finish();
}

/// `compile::compile`: the verifier, then `ptx::write_string` with its facts.
fn verify_and_lower(c: &mut Criterion) {
    let mut group = c.benchmark_group("verify_and_lower");
    let opts = options();
    for (id, path) in inputs().into_iter().take(2) {
        let (_, _, obj) = load(&path);
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(&id), &obj, |b, obj| {
            // The CLI's path: the full verifier, then lowering with its facts.
            b.iter(|| compile::compile(black_box(obj), &opts).expect("verifies and lowers"))
        });
    }
    group.finish();
}

/// Newest modification time of the `.rs` files under `dir` (recursively).
fn newest_source(dir: &Path) -> Option<SystemTime> {
    let mut newest = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let t = if p.is_dir() {
            newest_source(&p)
        } else if p.extension().is_some_and(|x| x == "rs") {
            e.metadata().and_then(|m| m.modified()).ok()
        } else {
            None
        };
        newest = newest.max(t);
    }
    newest
}

/// The release binary, or why it cannot be used. Warns (but still runs) when a source file
/// of the crates it is built from is newer than it.
fn release_binary() -> Result<PathBuf, String> {
    let bin = match std::env::var_os("BPF2PTX_BIN") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("target/tmp has a parent")
            .join("release/bpf2ptx"),
    };
    if !bin.is_file() {
        return Err(format!(
            "{} not found; build it with `cargo build --release -p bpf2ptx` or set BPF2PTX_BIN",
            bin.display()
        ));
    }
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
    let src = ["cli", "compiler", "verifier", "runtime-ptx"]
        .iter()
        .filter_map(|d| newest_source(&repo_root().join(d).join("src")))
        .max();
    if let (Some(built), Some(src)) = (built, src) {
        if src > built {
            eprintln!(
                "warning: {} is older than the sources; rebuild with `cargo build --release -p bpf2ptx`",
                bin.display()
            );
        }
    }
    Ok(bin)
}

/// What `bpf2ptx FILE -o OUT` does, in-process: read, load, verify, lower, write the
/// output atomically (temporary file, fsync, rename).
fn compile_file(input: &Path, out: &Path) {
    let obj = bpf2ptx::load_path(input).expect("loads");
    let text = compile::compile(&obj, &options()).expect("compiles");
    compile::write_output(out, &text, &[input]).expect("writes");
}

fn end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("end_to_end");
    // On the build disk (target/tmp), like an output next to a build's other files.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    // The process benchmarks first: right after the in-process ones (thousands of fsyncs
    // in a few seconds) the binary's own fsync is slower (3.6 ms instead of 2.0 ms for
    // launch_stamp on the recording machine).
    match release_binary() {
        Ok(bin) => {
            for name in [PROBE, LARGEST] {
                let input = corpus_path(name);
                let (_, _, obj) = load(&input);
                group.throughput(Throughput::Elements(insn_count(&obj)));
                let out = dir.path().join(format!("{name}.process.ptx"));
                let run = |bin: &Path| {
                    let st = Command::new(bin)
                        .arg(&input)
                        .arg("-o")
                        .arg(&out)
                        .status()
                        .expect("running bpf2ptx");
                    assert!(st.success(), "{} {}: {st}", bin.display(), input.display());
                };
                run(&bin);
                let expected = compile::compile(&obj, &options()).expect("compiles");
                if std::fs::read(&out).ok().as_deref() != Some(expected.as_bytes()) {
                    eprintln!(
                        "warning: {name}: the binary's output differs from the in-process output (stale binary?)"
                    );
                }
                group.bench_with_input(BenchmarkId::new("process", name), &bin, |b, bin| {
                    b.iter(|| run(black_box(bin)))
                });
            }
        }
        Err(why) => eprintln!("skipped end_to_end/process/*: {why}"),
    }
    for name in [PROBE, LARGEST] {
        let input = corpus_path(name);
        let (_, _, obj) = load(&input);
        group.throughput(Throughput::Elements(insn_count(&obj)));
        let out = dir.path().join(format!("{name}.in_process.ptx"));
        group.bench_with_input(BenchmarkId::new("in_process", name), &input, |b, input| {
            b.iter(|| compile_file(black_box(input), &out))
        });
        // The same with a plain `std::fs::write` (no temporary file, no fsync): the compile
        // and write without waiting for the disk, which other processes' writes slow down.
        let out_nosync = dir.path().join(format!("{name}.no_fsync.ptx"));
        group.bench_with_input(
            BenchmarkId::new("in_process_no_fsync", name),
            &input,
            |b, input| {
                b.iter(|| {
                    let obj = bpf2ptx::load_path(black_box(input)).expect("loads");
                    let text = compile::compile(&obj, &options()).expect("compiles");
                    std::fs::write(&out_nosync, text).expect("writes")
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, lower, verify, verify_and_lower, end_to_end);
criterion_main!(benches);
