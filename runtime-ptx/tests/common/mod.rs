//! ptxas for the runtime's assembly tests, found by the one finder of the test suites
//! (`tests/tools.rs`: `$PTXAS`, the project's `.venv`, `PATH`); a missing ptxas fails the
//! test unless `BPF2PTX_SKIP_PTXAS=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

// runtime-ptx cannot depend on the tests crate (which depends on it), so the finder's
// file is included here as a module.
#[path = "../../../tests/tools.rs"]
mod tools;

/// Assemble `text` for `arch` with `extra` options; panics with ptxas's message on error.
pub fn assemble(ptxas: &PathBuf, text: &str, arch: &str, extra: &[&str]) {
    let dir = std::env::temp_dir().join(format!("bpf2ptx-runtime-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run in parallel and may assemble for the same arch and options: a counter
    // keeps their files apart.
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let tag = format!("{arch}{}-{n}", extra.join(""));
    let src = dir.join(format!("module-{tag}.ptx"));
    let obj = dir.join(format!("module-{tag}.cubin"));
    std::fs::write(&src, text).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("--gpu-name={arch}"))
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("running ptxas");
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&obj);
    assert!(
        out.status.success(),
        "ptxas {arch} {extra:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `f` with ptxas; without one, panics with how to get it, unless
/// `BPF2PTX_SKIP_PTXAS=1` (then prints the skip and returns).
pub fn with_ptxas(f: impl FnOnce(&PathBuf)) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if let Some(p) = tools::require_ptxas_in(&root) {
        f(&p);
    }
}
