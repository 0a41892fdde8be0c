//! Triton's kernels under `bpf2ptx trace`, without a GPU or Triton: a stand-in Triton
//! package (tests/fake/py: its NVIDIA backend's `add_stages` and stage table, as Triton
//! 3.x has them) and a program that runs its `ptx` and `cubin` stages
//! (tests/fake/triton_app.py). The front end's Python start-up hook must hand each
//! kernel's PTX to the interposer before the `cubin` stage assembles it, give the command
//! Triton and TorchInductor caches of the session's own, keep the user's PYTHONPATH and
//! sitecustomize, and say so when the Triton is too old.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{repo, OTHER, PROBED};

const PROBE: &str = "tests/probes/bpftime/cuda_counter.bpf.o";

fn fake() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake")
}

/// A scratch folder with the stand-in driver, one PTX file per kernel (nvcc's vecAdd
/// under [`PROBED`] and under [`OTHER`]) and a user's own `sitecustomize` in `site/`.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::build(dir.path());
    let src = std::fs::read_to_string(repo().join("examples/apps/vecadd.ptx")).unwrap();
    for name in [PROBED, OTHER] {
        let ptx = src.replace("_Z6vecAddPKfS0_Pfi", name);
        std::fs::write(dir.path().join(format!("{name}.ptx")), ptx).unwrap();
    }
    std::fs::create_dir(dir.path().join("site")).unwrap();
    std::fs::write(dir.path().join("site/sitecustomize.py"), "MARK = 'user'\n").unwrap();
    dir
}

/// `bpf2ptx trace ARGS -- python3 triton_app.py PROBED=.. OTHER=..` with the stand-in
/// Triton `py` (`py` or `py2`) and the user's `site/` on PYTHONPATH.
fn trace(dir: &Path, args: &[&str], py: &str) -> Output {
    trace_app(dir, args, py, &[])
}

/// [`trace`] with `app_args` before the kernels (`--worker`).
fn trace_app(dir: &Path, args: &[&str], py: &str, app_args: &[&str]) -> Output {
    let kernels =
        [PROBED, OTHER].map(|k| format!("{k}={}", dir.join(format!("{k}.ptx")).display()));
    let path = format!(
        "{}:{}",
        fake().join(py).display(),
        dir.join("site").display()
    );
    Command::new(bpf2ptx_tests::bpf2ptx_bin())
        .arg("trace")
        .args(args)
        .arg(PROBE)
        .args(["--", "python3"])
        .arg(fake().join("triton_app.py"))
        .args(app_args)
        .args(kernels)
        .current_dir(repo())
        .env("LD_LIBRARY_PATH", dir)
        .env("BPF2PTX_INTERPOSER", bpf2ptx_tests::interposer_lib())
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("PYTHONPATH", path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("LD_PRELOAD")
        .env_remove("TRITON_CACHE_DIR")
        .env_remove("TORCHINDUCTOR_CACHE_DIR")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The value the program printed for `var`.
fn printed<'a>(stdout: &'a str, var: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(var)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{var} not printed: {stdout}"))
}

#[test]
fn a_matched_triton_kernel_is_assembled_with_the_probes_and_others_as_they_are() {
    let dir = fixture();
    let out = trace(dir.path(), &[], "py");
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert!(
        stdout.contains(&format!("{PROBED} probed\n")),
        "{stdout}\n{err}"
    );
    assert!(
        stdout.contains(&format!("{OTHER} plain\n")),
        "{stdout}\n{err}"
    );
    // The user's own sitecustomize still ran.
    assert!(stdout.starts_with("sitecustomize user\n"), "{stdout}");
    assert!(
        err.contains(&format!(
            "bpf2ptx trace: triton kernel {PROBED}: probes in {PROBED} (inject"
        )),
        "{err}"
    );
    // Caches of the session's own, under bpf2ptx's cache folder, one key for both.
    let cache = dir.path().join("cache/bpf2ptx");
    let triton = printed(&stdout, "TRITON_CACHE_DIR");
    let inductor = printed(&stdout, "TORCHINDUCTOR_CACHE_DIR");
    let key = triton
        .strip_prefix(&format!("{}/triton/", cache.display()))
        .unwrap_or_else(|| panic!("{triton}"));
    assert_eq!(inductor, format!("{}/inductor/{key}", cache.display()));
    // The same probes again: the same caches (a second run finds its kernels compiled).
    let again = text(&trace(dir.path(), &[], "py").stdout);
    assert_eq!(printed(&again, "TRITON_CACHE_DIR"), triton);
    // Other inject options: other caches.
    let other = text(&trace(dir.path(), &["--loop-budget", "1000"], "py").stdout);
    assert_ne!(printed(&other, "TRITON_CACHE_DIR"), triton, "{other}");
}

/// TorchInductor compiles in worker processes: each hands its kernels' PTX over, and
/// none of them, having loaded no CUDA module, gets a section of its own.
#[test]
fn processes_that_only_compile_get_no_section() {
    let dir = fixture();
    let out = trace_app(dir.path(), &[], "py", &["--worker"]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert_eq!(
        stdout.matches(&format!("{PROBED} probed\n")).count(),
        2,
        "{stdout}"
    );
    assert!(!stdout.contains("--- process"), "{stdout}");
    assert_eq!(
        err.matches(&format!("triton kernel {PROBED}: probes in {PROBED}"))
            .count(),
        2,
        "{err}"
    );
}

#[test]
fn no_triton_leaves_the_kernels_and_the_caches_alone() {
    let dir = fixture();
    let out = trace(dir.path(), &["--no-triton"], "py");
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert!(stdout.contains(&format!("{PROBED} plain\n")), "{stdout}");
    assert_eq!(printed(&stdout, "TRITON_CACHE_DIR"), "-");
    assert!(!err.contains("triton kernel"), "{err}");
}

#[test]
fn a_triton_older_than_3_is_named_and_runs_unmodified() {
    let dir = fixture();
    let out = trace(dir.path(), &[], "py2");
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    assert!(stdout.contains("old triton"), "{stdout}");
    assert!(
        err.contains("bpf2ptx trace: Triton 2.3.1: its kernels run unmodified (bpf2ptx trace probes Triton 3.0 or newer)"),
        "{err}"
    );
}
