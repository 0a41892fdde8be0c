//! Golden PTX: the module bpf2ptx emits for every corpus object, every bpf_conformance
//! program and every inject fixture is byte-identical to its file under tests/out/ptx
//! (`BLESS=1 cargo test -p bpf2ptx-tests --test golden_ptx` rewrites them, and removes
//! goldens whose input is gone; nothing is written anywhere else).
//!
//! One documented set of options, what these command lines write:
//!
//! - `corpus/<object>.ptx`: `bpf2ptx tests/corpus/obj/<object> --target sm_90 -o OUT`
//!   (one module per object, all its GPU programs; host-side programs skipped as the CLI
//!   skips them; no `--entry`, thread granularity, no `--map`).
//! - `conformance/<test>.ptx`: `bpf2ptx tests/conformance/tests/<test>.data --target sm_90
//!   -o OUT`, same options.
//! - `inject/<fixture>.counters.ptx`: `bpf2ptx inject tests/inject/probes/counters.bpf.o
//!   --into FIXTURE -o OUT` (default options: merged, inlined, thread granularity; the
//!   target is the fixture's) for every fixture tests/tests/inject.rs runs:
//!   tests/inject/ptx/*.ptx and examples/apps/*.ptx (`app.<name>.counters.ptx`).
//!
//! - `fused/<name>.ptx`: `bpf2ptx inject PROBE --into APP -o OUT [OPTIONS]` for each row of
//!   [`FUSED`]: the example probes and the fusion test probes on the example applications
//!   and tests/inject/loop/strided.ptx,
//!   fused (the default) and with the options that keep today's lowering (`--no-fuse`,
//!   `--map NAME=live`), so what fusion inserts (accumulators, flushes, forwarded slots)
//!   is reviewed in the diff of these files.
//!
//! Inputs are named by their repository-relative path, as the CLI run from the root names
//! them, so no golden depends on where the checkout is. A difference fails with a diff of
//! the first differing module (the lines that differ, with context) and how many differ.

use bpf2ptx::compile;
use bpf2ptx::inject;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_tests::{conformance_dir, files_with_ext, repo_root};
use std::path::{Path, PathBuf};

/// The `--target` of every compile.
const TARGET: &str = "sm_90";
/// The probe object every inject fixture is instrumented with.
const PROBES: &str = "tests/inject/probes/counters.bpf.o";
/// Lines of context around the differing lines of the first differing module.
const CONTEXT: usize = 3;

/// `path` relative to the repository root, with `/` separators.
fn rel(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .expect("input under the repository")
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// What `bpf2ptx FILE --target sm_90 -o OUT` writes (cli/src/main.rs `compile_cmd` with
/// no `--map`).
fn compile_file(path: &Path) -> String {
    let name = rel(path);
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{name}: {e}"));
    let obj = bpf2ptx::load_bytes(&name, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let (gpu, _skipped) = compile::gpu_programs(&obj);
    assert!(!gpu.programs.is_empty(), "{name}: no GPU programs");
    let (maps, _) = compile::map_options(&gpu, &[]).unwrap();
    let opts = ptx::Options {
        target: TARGET.into(),
        sharded: maps.sharded,
        unsharded: maps.unsharded,
        host: maps.host,
        ..Default::default()
    };
    compile::compile(&gpu, &opts).unwrap_or_else(|e| panic!("{e}"))
}

/// `(golden file name, PTX)` for every corpus object.
fn corpus() -> Vec<(String, String)> {
    let objs = files_with_ext(&repo_root().join("tests/corpus/obj"), "o");
    assert_eq!(objs.len(), 25, "corpus objects");
    objs.iter()
        .map(|p| (format!("{}.ptx", file_name(p)), compile_file(p)))
        .collect()
}

/// `(golden file name, PTX)` for every bpf_conformance test.
fn conformance() -> Vec<(String, String)> {
    let dir = conformance_dir().expect("the vendored bpf_conformance suite (tests/conformance)");
    let files = files_with_ext(&dir.join("tests"), "data");
    assert_eq!(files.len(), 313, "conformance tests");
    files
        .iter()
        .map(|p| {
            let stem = p.file_stem().unwrap().to_string_lossy();
            (format!("{stem}.ptx"), compile_file(p))
        })
        .collect()
}

/// `(golden file name, PTX)` for every inject fixture, instrumented with [`PROBES`].
fn injected() -> Vec<(String, String)> {
    let root = repo_root();
    let mut apps: Vec<(String, PathBuf)> = files_with_ext(&root.join("tests/inject/ptx"), "ptx")
        .into_iter()
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    assert!(apps.len() >= 30, "inject fixtures missing");
    apps.extend(
        files_with_ext(&root.join("examples/apps"), "ptx")
            .into_iter()
            .map(|p| {
                (
                    format!("app.{}", p.file_stem().unwrap().to_string_lossy()),
                    p,
                )
            }),
    );
    let probes = root.join(PROBES);
    apps.iter()
        .map(|(stem, app)| {
            let name = rel(app);
            let text = std::fs::read_to_string(app).unwrap_or_else(|e| panic!("{name}: {e}"));
            let (woven, _) = inject::inject(&probes, &text, &name, &inject::Options::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (format!("{stem}.counters.ptx"), woven.text)
        })
        .collect()
}

/// One fused golden: (golden file name, probe object, application, `--no-fuse`, `--map`
/// options), all paths repository-relative.
type FusedRow = (
    &'static str,
    &'static str,
    &'static str,
    bool,
    &'static [&'static str],
);

/// The fused goldens: register accumulation (mem_hist on the grid-stride vector add and
/// the tiled matmul, whose loops accumulate; on the plain vector add, whose sites run once
/// per thread, the adds stay atomics), forwarding (warp_time), a map a probe reads and a
/// ring output next to fused adds (both stay unfused), and the same probe with fusion off
/// and with its map live (both today's lowering).
const FUSED: &[FusedRow] = &[
    (
        "vecadd.mem_hist",
        "examples/probes/mem_hist.bpf.o",
        "examples/apps/vecadd.ptx",
        false,
        &[],
    ),
    (
        "strided.mem_hist",
        "examples/probes/mem_hist.bpf.o",
        STRIDED,
        false,
        &[],
    ),
    (
        "matmul.mem_hist",
        "examples/probes/mem_hist.bpf.o",
        "examples/apps/matmul.ptx",
        false,
        &[],
    ),
    (
        "vecadd.warp_time",
        "examples/probes/warp_time.bpf.o",
        "examples/apps/vecadd.ptx",
        false,
        &[],
    ),
    (
        "strided.fuse_reads",
        "tests/inject/probes/fuse_reads.bpf.o",
        STRIDED,
        false,
        &[],
    ),
    (
        "strided.fuse_ring",
        "tests/inject/probes/fuse_ring.bpf.o",
        STRIDED,
        false,
        &[],
    ),
    (
        "strided.mem_hist.no-fuse",
        "examples/probes/mem_hist.bpf.o",
        STRIDED,
        true,
        &[],
    ),
    (
        "strided.mem_hist.live",
        "examples/probes/mem_hist.bpf.o",
        STRIDED,
        false,
        &["mem_hist=live"],
    ),
];

/// The grid-stride vector add (its memory sites in a loop).
const STRIDED: &str = "tests/inject/loop/strided.ptx";

/// `(golden file name, PTX)` for every row of [`FUSED`].
fn fused() -> Vec<(String, String)> {
    let root = repo_root();
    FUSED
        .iter()
        .map(|&(name, probe, app, no_fuse, maps)| {
            let text =
                std::fs::read_to_string(root.join(app)).unwrap_or_else(|e| panic!("{app}: {e}"));
            let opts = inject::Options {
                no_fuse,
                maps: maps.iter().map(|m| m.to_string()).collect(),
                ..Default::default()
            };
            let (woven, _) = inject::inject(&root.join(probe), &text, app, &opts)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (format!("{name}.ptx"), woven.text)
        })
        .collect()
}

/// The lines of `a` and `b` that differ (common leading and trailing lines dropped, but
/// [`CONTEXT`] of them kept), and the 1-based line the window starts at.
fn window(a: &str, b: &str) -> (String, String, usize) {
    let (la, lb): (Vec<&str>, Vec<&str>) = (
        a.split_inclusive('\n').collect(),
        b.split_inclusive('\n').collect(),
    );
    let head = la.iter().zip(&lb).take_while(|(x, y)| x == y).count();
    let tail = la[head..]
        .iter()
        .rev()
        .zip(lb[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let start = head.saturating_sub(CONTEXT);
    let cut = |l: &[&str]| l[start..(l.len() - tail + CONTEXT.min(tail))].concat();
    (cut(&la), cut(&lb), start + 1)
}

/// Compares `modules` with the goldens in tests/out/ptx/`kind`, or with `BLESS=1` writes
/// them there (and removes `.ptx` files there that no module is named by).
fn check(kind: &str, modules: Vec<(String, String)>) {
    let dir = repo_root().join("tests/out/ptx").join(kind);
    let bless = std::env::var_os("BLESS").is_some_and(|v| v == "1");
    let existing: Vec<PathBuf> = if dir.is_dir() {
        files_with_ext(&dir, "ptx")
    } else {
        Vec::new()
    };
    let stale: Vec<String> = existing
        .iter()
        .map(|p| file_name(p))
        .filter(|n| !modules.iter().any(|(m, _)| m == n))
        .collect();
    if bless {
        std::fs::create_dir_all(&dir).expect("create tests/out/ptx dir");
        for n in &stale {
            std::fs::remove_file(dir.join(n)).expect("remove stale golden");
        }
        for (n, text) in &modules {
            let path = dir.join(n);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&path, text).expect("write golden");
            }
        }
        eprintln!("{kind}: {} goldens blessed", modules.len());
        return;
    }
    // (name, golden or None where it is missing, emitted)
    let mut differ: Vec<(&str, Option<String>, &str)> = Vec::new();
    for (n, text) in &modules {
        match std::fs::read_to_string(dir.join(n)) {
            Ok(want) if want == *text => {}
            Ok(want) => differ.push((n, Some(want), text)),
            Err(_) => differ.push((n, None, text)),
        }
    }
    let missing = differ.iter().filter(|(_, w, _)| w.is_none()).count();
    let names: Vec<&str> = differ.iter().map(|(n, _, _)| *n).take(20).collect();
    let summary = format!(
        "{} of {} {kind} modules differ from tests/out/ptx/{kind} ({missing} golden(s) missing), \
         {} stale golden(s) {stale:?}; `BLESS=1 cargo test -p bpf2ptx-tests --test golden_ptx` \
         rewrites them. Differing (first 20): {names:?}",
        differ.len(),
        modules.len(),
        stale.len(),
    );
    if let Some((n, want, got)) = differ.first() {
        let Some(want) = want else {
            panic!("tests/out/ptx/{kind}/{n} missing; {summary}");
        };
        let (w, g, line) = window(want, got);
        pretty_assertions::assert_str_eq!(
            w,
            g,
            "tests/out/ptx/{kind}/{n} (left, from line {line}) != emitted (right); {summary}"
        );
        // Only a trailing newline or the like: the window shows nothing useful.
        panic!("tests/out/ptx/{kind}/{n} differs; {summary}");
    }
    assert!(stale.is_empty(), "{summary}");
    eprintln!("{kind}: {} modules match their goldens", modules.len());
}

#[test]
fn corpus_ptx_is_golden() {
    check("corpus", corpus());
}

#[test]
fn conformance_ptx_is_golden() {
    check("conformance", conformance());
}

#[test]
fn injected_ptx_is_golden() {
    check("inject", injected());
}

#[test]
fn fused_ptx_is_golden() {
    check("fused", fused());
}
