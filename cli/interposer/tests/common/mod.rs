//! What the interposer's process tests share: the stand-in driver and the miniature
//! application (tests/fake), built with `cc` into a scratch folder, with the app's PTX.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The kernel the bpftime probes of tests/probes/bpftime match.
pub const PROBED: &str = "_Z9vectorAddPKfS0_Pf";
/// A kernel nothing there matches.
pub const OTHER: &str = "_Z6vecSubPKfS0_Pf";

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds `libcuda.so.1` (and its `libcuda.so` link), `app` and `app.ptx` into `d`: a
/// module of two kernels, nvcc's vecAdd under [`PROBED`] and a copy under [`OTHER`].
pub fn build(d: &Path) {
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake");
    let cc = |args: &[&Path]| {
        let st = Command::new("cc")
            .args(args)
            .status()
            .expect("cc (gcc) is needed");
        assert!(st.success(), "cc {args:?}");
    };
    let lib = d.join("libcuda.so.1");
    // -Bsymbolic: the fake's own table of entry points (what its cuGetProcAddress hands
    // out) holds its own functions, as a real libcuda's does, not the interposer's
    // preloaded hooks of the same names.
    cc(&[
        Path::new("-shared"),
        Path::new("-fPIC"),
        Path::new("-Wl,-Bsymbolic"),
        Path::new("-o"),
        &lib,
        &fake.join("libcuda.c"),
    ]);
    std::os::unix::fs::symlink(&lib, d.join("libcuda.so")).unwrap();
    cc(&[
        Path::new("-o"),
        &d.join("app"),
        &fake.join("app.c"),
        Path::new("-L"),
        d,
        Path::new("-lcuda"),
        Path::new("-ldl"),
    ]);
    let src = std::fs::read_to_string(repo().join("examples/apps/vecadd.ptx")).unwrap();
    let add = src.replace("_Z6vecAddPKfS0_Pfi", PROBED);
    let start = add.find(".visible .entry").unwrap();
    let sub = add[start..].replace(PROBED, OTHER);
    std::fs::write(d.join("app.ptx"), format!("{add}\n{sub}")).unwrap();
}
