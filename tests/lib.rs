//! Shared helpers of the bpf2ptx test suites: where the corpus and the conformance suite
//! are, and the snapshot comparison with `BLESS=1`.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The bpf_conformance suite: `$BPF_CONFORMANCE_DIR`, else the vendored copy in
/// `tests/conformance`. `None` when neither is there; the suite is vendored, so tests
/// treat that as a failure.
pub fn conformance_dir() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("BPF_CONFORMANCE_DIR").map(PathBuf::from),
        Some(repo_root().join("tests/conformance")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.join("tests").is_dir())
}

/// The files with extension `ext` in `dir`, sorted by name.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    v.sort();
    v
}

/// Compares `actual` with the snapshot file at `path`; with `BLESS=1` in the environment
/// rewrites the snapshot instead.
pub fn check_snapshot(path: &Path, actual: &str) {
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create snapshot dir");
        }
        std::fs::write(path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "snapshot {} missing ({e}); run with BLESS=1 to create it",
            path.display()
        )
    });
    pretty_assertions::assert_eq!(
        expected,
        actual,
        "snapshot {} drifted; BLESS=1 rewrites it",
        path.display()
    );
}

/// ptxas: `$PTXAS`, else the project's venv (`.venv`, which `.ci/run` creates with
/// `pip install nvidia-cuda-nvcc-cu12`), else `PATH`.
pub fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let venv = repo_root().join(".venv/lib");
    if let Ok(rd) = std::fs::read_dir(&venv) {
        for e in rd.flatten() {
            let p = e.path().join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    std::process::Command::new("ptxas")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("ptxas"))
}

pub mod random;
