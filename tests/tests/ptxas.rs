//! Every PTX the backend emits is accepted by ptxas for sm_70, sm_80 and sm_90: all 313
//! conformance programs (with their `.entry` kernels) and every BPF object under tests/,
//! benches/gpu-runtime and examples/probes (the benchmark probes; each must lower; a
//! failure to lower fails the test too), and the bpftime-style probes that lower.
//!
//! ptxas comes from `$PTXAS`, else the project's venv (`.venv`, which `.ci/run` creates
//! with `pip install nvidia-cuda-nvcc-cu12`), else `PATH`. Without it the test fails,
//! unless `BPF2PTX_SKIP_PTXAS=1` says to skip on purpose.

use bpf2ptx_backend::back::ptx;
use bpf2ptx_tests::{conformance_dir, files_with_ext, repo_root, require_ptxas};
use std::path::Path;
use std::process::Command;

const TARGETS: &[&str] = &["sm_70", "sm_80", "sm_90"];

/// Assembles `ptx` for every target; returns the error text of the first failure.
fn assemble(ptxas: &Path, dir: &Path, name: &str, ptx: &str) -> Result<(), String> {
    let src = dir.join(format!("{name}.ptx"));
    std::fs::write(&src, ptx).unwrap();
    for t in TARGETS {
        let out = Command::new(ptxas)
            .arg(format!("-arch={t}"))
            .arg(&src)
            .arg("-o")
            .arg(dir.join(format!("{name}.{t}.cubin")))
            .output()
            .map_err(|e| format!("running ptxas: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{name} ({t}): {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// The PTX of every program of `f` with its `.entry` kernel, for sm_70 (the lowest
/// target), through the verifier so the facts-driven forms (ld.global, no zero test,
/// inlined lookups and ring outputs) are assembled too. Panics when it does not lower.
fn lower(f: &Path) -> String {
    lower_budget(f, None)
}

/// [`lower`] with `--loop-budget`.
fn lower_budget(f: &Path, loop_budget: Option<u64>) -> String {
    // Host-side programs (`host/launch/K`, `uprobe`) run on the CPU: skipped, as the CLI
    // skips them.
    let (obj, _) = bpf2ptx::compile::gpu_programs(&bpf2ptx::load_path(f).unwrap());
    let opts = ptx::Options {
        target: "sm_70".into(),
        entry: true,
        loop_budget,
        ..Default::default()
    };
    bpf2ptx::compile::compile(&obj, &opts).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
}

/// [`lower`] with every map that is not a hash map placed in host memory (`--map
/// NAME=host`, as `bpf2ptx trace` places the maps a host program shares), under
/// `rebind_maps`: hash code on a device map in a `.sys` module calls the runtime's `.gpu`
/// copy of the map functions (`maps::gpu_copy`), which must assemble beside (or instead
/// of) the `.sys` ones. `None` when the object has no hash map and no other map.
fn lower_mixed(f: &Path) -> Option<String> {
    use bpf2ptx_compiler::program::MapOrigin;
    use bpf2ptx_runtime::MapKind;
    let (obj, _) = bpf2ptx::compile::gpu_programs(&bpf2ptx::load_path(f).unwrap());
    let host: Vec<bool> = obj
        .maps
        .iter()
        .map(|m| m.origin != MapOrigin::GlobalData && !m.is(MapKind::is_hash))
        .collect();
    let hash = obj.maps.iter().any(|m| m.is(MapKind::is_hash));
    if !hash || !host.iter().any(|h| *h) {
        return None;
    }
    let opts = ptx::Options {
        target: "sm_70".into(),
        entry: true,
        host,
        rebind_maps: true,
        ..Default::default()
    };
    Some(bpf2ptx::compile::compile(&obj, &opts).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
}

#[test]
fn ptxas_accepts_all_emitted_ptx() {
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut jobs: Vec<(String, String)> = Vec::new();
    let conf = conformance_dir().expect("vendored conformance suite");
    for f in files_with_ext(&conf.join("tests"), "data") {
        let text = lower(&f);
        jobs.push((f.file_stem().unwrap().to_string_lossy().into_owned(), text));
    }
    // Every BPF object under tests/ (the corpus, the GPU checks' probes, the injection
    // probes) and the benchmark probes: each must lower. The one injection probe that
    // the verifier must reject (it reads past its context) is the exception.
    let mut lowered = 0;
    let mut mixed = 0;
    let mut copies = 0;
    for dir in [
        "tests/corpus/obj",
        "tests/gpu/probes",
        "tests/inject/probes",
        "benches/gpu-runtime/obj",
        "examples/probes",
    ] {
        for f in files_with_ext(&repo_root().join(dir), "o") {
            let name = f.file_name().unwrap().to_string_lossy().replace('.', "_");
            if name == "bad_ctx_bpf_o" {
                continue;
            }
            let text = lower(&f);
            jobs.push((format!("{}_{name}", dir.replace('/', "_")), text));
            lowered += 1;
            if let Some(text) = lower_mixed(&f) {
                copies += usize::from(text.contains(bpf2ptx_runtime::maps::GPU_COPY_PREFIX));
                jobs.push((format!("{}_{name}_mixed", dir.replace('/', "_")), text));
                mixed += 1;
            }
        }
    }
    // The bpftime-style probes that lower today (tests/probes/bpftime/README.md):
    // perf_event_output with a NULL context and trace_vprintk among them.
    for name in [
        "cuda_counter",
        "gpu_hash_perthread",
        "perf_output_null",
        "printk_vargs",
        "gemm_bpf_loop",
        "gemm_bpf_for",
        "gemm_can_loop",
    ] {
        let f = repo_root().join(format!("tests/probes/bpftime/{name}.bpf.o"));
        jobs.push((format!("bpftime_{name}"), lower(&f)));
        lowered += 1;
    }
    // The plain GEMM loop under --loop-budget (the counter and the budget register).
    let f = repo_root().join("tests/probes/bpftime/gemm_budget.bpf.o");
    jobs.push(("bpftime_gemm_budget".into(), lower_budget(&f, Some(4096))));
    lowered += 1;
    // Four workers: ptxas is single-threaded and each file takes ~10 ms.
    let chunks: Vec<Vec<(String, String)>> = {
        let mut c = vec![Vec::new(); 4];
        for (i, j) in jobs.into_iter().enumerate() {
            c[i % 4].push(j);
        }
        c
    };
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                let (ptxas, dir) = (&ptxas, tmp.path());
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|(n, t)| assemble(ptxas, dir, n, t).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(
        failures.is_empty(),
        "{} ptxas failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        mixed >= 6 && copies >= 4,
        "{mixed} objects with a hash map and another map, {copies} calling the .gpu copy"
    );
    eprintln!(
        "ptxas accepted 313 conformance modules, {lowered} probe modules and {mixed} of them \
         with their other maps host-placed, for {TARGETS:?}"
    );
}
