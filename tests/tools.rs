//! Finding ptxas for the tests, in one place: `$PTXAS`, else the project's venv (`.venv`,
//! which `.ci/run` creates with `pip install nvidia-cuda-nvcc-cu12`), else `PATH`. A test
//! that needs ptxas and finds none fails with how to get it, unless `BPF2PTX_SKIP_PTXAS=1`
//! says to skip on purpose (the skip is printed).
//!
//! This file uses only the standard library, so that every crate's tests can include it:
//! the tests crate as a module of `tests/lib.rs` (`bpf2ptx_tests::ptxas`,
//! `bpf2ptx_tests::require_ptxas`), runtime-ptx's assembly tests through `#[path]` in
//! `runtime-ptx/tests/common/mod.rs` (runtime-ptx cannot depend on the tests crate, which
//! depends on it).

use std::path::{Path, PathBuf};

/// ptxas for the repository at `root`: `$PTXAS`, else `root/.venv/lib/*/site-packages/
/// nvidia/cuda_nvcc/bin/ptxas`, else `ptxas` on `PATH` if `ptxas --version` runs.
pub fn ptxas_in(root: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    if let Ok(rd) = std::fs::read_dir(root.join(".venv/lib")) {
        let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let p = d.join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
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

/// Whether `BPF2PTX_SKIP_PTXAS=1` asks to skip the tests that need ptxas.
pub fn skip_ptxas() -> bool {
    std::env::var_os("BPF2PTX_SKIP_PTXAS").is_some_and(|v| v == "1")
}

/// [`ptxas_in`] for a test that needs ptxas: `None` (after printing that the test was
/// skipped) only when none is found and [`skip_ptxas`]; without ptxas otherwise, panics
/// with how to get one.
pub fn require_ptxas_in(root: &Path) -> Option<PathBuf> {
    if let Some(p) = ptxas_in(root) {
        return Some(p);
    }
    if skip_ptxas() {
        eprintln!("skipped: no ptxas and BPF2PTX_SKIP_PTXAS=1");
        return None;
    }
    panic!(
        "ptxas not found: run `bash .ci/run` once (it creates .venv with \
         nvidia-cuda-nvcc-cu12), or set PTXAS, or put ptxas on PATH; \
         BPF2PTX_SKIP_PTXAS=1 skips on purpose"
    )
}
