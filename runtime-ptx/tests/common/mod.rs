//! ptxas for the runtime's assembly tests: found through `$PTXAS` or the project's
//! `.venv` (which `.ci/run` creates); a missing ptxas fails the test unless
//! `BPF2PTX_SKIP_PTXAS=1`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let lib = root.join(".venv/lib");
    for entry in std::fs::read_dir(lib).ok()?.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("python3") {
            let p = entry
                .path()
                .join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

pub fn skip() -> bool {
    std::env::var("BPF2PTX_SKIP_PTXAS").is_ok_and(|v| v == "1")
}

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

pub fn with_ptxas(f: impl FnOnce(&PathBuf)) {
    match ptxas() {
        Some(p) => f(&p),
        None if skip() => eprintln!("ptxas not found; skipped (BPF2PTX_SKIP_PTXAS=1)"),
        None => panic!(
            "ptxas not found: set PTXAS, or create .venv with nvidia-cuda-nvcc-cu12, \
             or set BPF2PTX_SKIP_PTXAS=1"
        ),
    }
}
