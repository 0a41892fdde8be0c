//! Benchmarks of `bpf2ptx inject`: weaving `tests/inject/probes/counters.bpf.o` (entry,
//! exit and memory probes at `*`: 5 sites a kernel) into synthetic modules of N copies of
//! `examples/apps/vecadd.ptx`'s kernel, built as `results/inject-scaling.md` builds them
//! (each `.visible .entry` renamed `NAME_k`), in process: probes loaded, verified and
//! lowered, the application parsed and every site woven, as the CLI does before writing.
//!
//! - `inject/inline/N`: each site gets the probe's body inlined (the default);
//! - `inject/call/N`: each site calls the probe's one function (`--call`);
//! - `inject/parse/N`: parsing the application alone (`ptx::parse`).
//!
//! Throughput is bytes of application PTX. The modules are generated here (100 and 1,000
//! kernels, 0.1 and 1 MB); the 20,000-kernel figures of issue 13 are measured with the
//! release binary (`results/inject-scaling.md`).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bpf2ptx::inject::{inject, Options};
use bpf2ptx_backend::inject::ptx;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Kernels in the generated modules.
const SIZES: &[usize] = &[100, 1000];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ has a parent")
        .to_path_buf()
}

/// `n` copies of vecadd's kernel after its header, the `k`-th renamed `NAME_k` (the
/// Python snippet of `results/inject-scaling.md`).
fn module(n: usize) -> String {
    let path = repo_root().join("examples/apps/vecadd.ptx");
    let s = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let i = s.find(".visible .entry").expect("vecadd.ptx has a kernel");
    let (head, kernel) = s.split_at(i);
    let after = kernel[".visible .entry".len()..].trim_start();
    let name = &after[..after.find('(').expect("the kernel has parameters")];
    let mut out = head.to_string();
    for k in 0..n {
        out.push_str(&kernel.replace(name, &format!("{name}_{k}")));
        out.push('\n');
    }
    out
}

fn probes() -> PathBuf {
    repo_root().join("tests/inject/probes/counters.bpf.o")
}

fn run(probes: &Path, app: &str, opts: &Options) -> usize {
    let (woven, _) = inject(probes, app, "many.ptx", opts).expect("injects");
    woven.text.len()
}

fn bench_inject(c: &mut Criterion) {
    let probes = probes();
    let mut group = c.benchmark_group("inject");
    // Modest: about 4 s a benchmark.
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for &n in SIZES {
        let app = module(n);
        group.throughput(Throughput::Bytes(app.len() as u64));
        group.bench_with_input(BenchmarkId::new("inline", n), &app, |b, app| {
            b.iter(|| run(&probes, black_box(app), &Options::default()))
        });
        let call = Options {
            call: true,
            ..Options::default()
        };
        group.bench_with_input(BenchmarkId::new("call", n), &app, |b, app| {
            b.iter(|| run(&probes, black_box(app), &call))
        });
        group.bench_with_input(BenchmarkId::new("parse", n), &app, |b, app| {
            b.iter(|| ptx::parse(black_box(app)).expect("parses").items().len())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_inject);
criterion_main!(benches);
