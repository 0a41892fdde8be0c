//! Shared helpers of the bpf2ptx test suites: where the corpus and the conformance suite
//! are, the snapshot comparison with `BLESS=1`, and the tools the suites run (ptxas,
//! the `bpf2ptx` binary).

use std::path::{Path, PathBuf};

pub mod json_schema;
mod tools;

pub use tools::skip_ptxas;

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

/// Every program of the conformance suite ([`conformance_dir`]), sorted by file name:
/// its file name, the loaded object and the object's test case (`-- mem`, `-- result`,
/// `-- error`). Panics when the suite is missing or a file does not load.
pub fn conformance_cases() -> Vec<(
    String,
    bpf2ptx_compiler::program::Object,
    bpf2ptx_compiler::program::TestCase,
)> {
    let dir = conformance_dir().expect("the vendored bpf_conformance suite (tests/conformance)");
    files_with_ext(&dir.join("tests"), "data")
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let obj = bpf2ptx::load_path(f).unwrap_or_else(|e| panic!("{e}"));
            let test = obj
                .test
                .clone()
                .expect("a conformance file has a test case");
            (name, obj, test)
        })
        .collect()
}

/// The PTX of every program of `verified` with its `.entry` kernel (what `bpf2ptx run`
/// launches), for sm_70, the lowest target: the form the conformance and random-program
/// checks run, in the PTX model, under ptxas and on the GPU.
pub fn entry_kernels_ptx(verified: &bpf2ptx_verifier::Verified<'_>) -> String {
    use bpf2ptx_backend::back::ptx;
    ptx::write_string(
        verified,
        &ptx::Options {
            target: "sm_70".into(),
            entry: true,
            ..Default::default()
        },
    )
    .expect("an accepted program lowers")
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
/// `pip install nvidia-cuda-nvcc-cu12`), else `PATH` (`tests/tools.rs`, shared with
/// runtime-ptx's tests).
pub fn ptxas() -> Option<PathBuf> {
    tools::ptxas_in(&repo_root())
}

/// [`ptxas`] for a test that needs it: `None` (the skip printed) only with
/// `BPF2PTX_SKIP_PTXAS=1`; without ptxas otherwise, panics with how to get one.
pub fn require_ptxas() -> Option<PathBuf> {
    tools::require_ptxas_in(&repo_root())
}

/// Whether `BPF2PTX_SKIP_CLANG=1` asks to skip the tests that compile C with clang.
pub fn skip_clang() -> bool {
    std::env::var_os("BPF2PTX_SKIP_CLANG").is_some_and(|v| v == "1")
}

/// clang for a test that compiles C probes, found as `bpf2ptx build` finds it
/// (`bpf2ptx::build::Clang::find`: `$BPF2PTX_CLANG`, else `PATH`), the way
/// [`require_ptxas`] finds ptxas: `None` (the skip printed) only with
/// `BPF2PTX_SKIP_CLANG=1`; without a usable clang otherwise, panics with how to get one.
/// CI installs clang (`.ci/run`), so these tests cannot pass there by not running.
pub fn require_clang() -> Option<PathBuf> {
    match bpf2ptx::build::Clang::find(None, Path::new("test.bpf.c")) {
        Ok(c) => Some(c.path),
        Err(e) if skip_clang() => {
            eprintln!("skipped: {e} (BPF2PTX_SKIP_CLANG=1)");
            None
        }
        Err(e) => panic!(
            "{e}\nthe tests that compile C probes need clang and libbpf-dev \
             (apt-get install clang libbpf-dev; `bash .ci/run` installs them); \
             BPF2PTX_SKIP_CLANG=1 skips them on purpose"
        ),
    }
}

/// The `bpf2ptx` binary of this build. The tests crate depends only on the `bpf2ptx`
/// library, so cargo does not build the binary for it: build it here (a no-op when it is
/// fresh; cargo has released the target-dir lock by the time tests run) into the profile
/// directory this test binary lives in (`<target>/<profile>/deps/..`).
pub fn bpf2ptx_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let name = format!("bpf2ptx{}", std::env::consts::EXE_SUFFIX);
            build_artifact(&["-p", "bpf2ptx", "--bin", "bpf2ptx"], &name)
        })
        .clone()
}

/// The interposer library `bpf2ptx trace` preloads (`libbpf2ptx_interposer.so`), built as
/// [`bpf2ptx_bin`] is: a test links the crate's rlib, and cargo builds the cdylib only
/// when asked.
pub fn interposer_lib() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            build_artifact(
                &["-p", "bpf2ptx-interposer", "--lib"],
                "libbpf2ptx_interposer.so",
            )
        })
        .clone()
}

/// Runs `cargo build --quiet ARGS` into the profile directory of this test binary and
/// returns the path of `file` there.
fn build_artifact(args: &[&str], file: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binary lives in <target>/<profile>/deps");
    let target_dir = profile_dir.parent().expect("<target>/<profile>");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--quiet"])
        .args(args)
        .current_dir(repo_root())
        .env("CARGO_TARGET_DIR", target_dir);
    // `target/debug` is the `dev` profile; any other directory is named after its
    // profile (`release`, custom ones).
    let profile = profile_dir.file_name().and_then(|n| n.to_str());
    if let Some(p) = profile.filter(|&p| p != "debug") {
        cmd.args(["--profile", p]);
    }
    let status = cmd.status().expect("run cargo build");
    assert!(status.success(), "cargo build {args:?} failed: {status}");
    let out = profile_dir.join(file);
    assert!(out.is_file(), "{} was not built", out.display());
    out
}

/// An injected module with everything `inject` added taken out again: the probe section,
/// the per-kernel context declaration, fusion's kernel registers, and each block it
/// inserted, up to its matching `}` (a site block, `{` + `.reg .b64 %bpf2ptx_d..`; an
/// aligned site's rejoin, `{` + `.reg .b32 %bpf2ptx_j..`; a flush, `{` + `.reg .b32
/// %bpf2ptx_f<..`; the zeroing of fusion's registers, `{` + `// bpf2ptx fusion`).
/// `.version`/`.target` lines are left for the caller. What the tests that check that
/// inject keeps the kernel's own code byte for byte compare with the input.
pub fn strip_injected(out: &str) -> String {
    const FUSION_REGS: [&str; 3] = [
        ".reg .b64 %bpf2ptx_acc_",
        ".reg .b64 %bpf2ptx_fw_",
        ".reg .b32 %bpf2ptx_fws_",
    ];
    const BLOCKS: [&str; 4] = [
        ".reg .b64 %bpf2ptx_d",
        ".reg .b32 %bpf2ptx_j",
        ".reg .b32 %bpf2ptx_f<",
        "// bpf2ptx fusion",
    ];
    let lines: Vec<&str> = out.split_inclusive('\n').collect();
    let mut kept = String::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if t.starts_with("// ---- bpf2ptx probes") {
            while i < lines.len() && !lines[i].contains("// ---- end of bpf2ptx probes") {
                i += 1;
            }
            i += 1;
            continue;
        }
        if t.starts_with(".local .align 8 .b8 bpf2ptx_ctx[")
            || FUSION_REGS.iter().any(|r| t.starts_with(r))
        {
            i += 1;
            continue;
        }
        if t == "{"
            && lines
                .get(i + 1)
                .is_some_and(|l| BLOCKS.iter().any(|m| l.trim().starts_with(m)))
        {
            let mut depth = 0;
            while i < lines.len() {
                let t = lines[i].trim();
                if t == "{" {
                    depth += 1;
                } else if t == "}" {
                    depth -= 1;
                }
                i += 1;
                if depth == 0 {
                    break;
                }
            }
            continue;
        }
        kept.push_str(lines[i]);
        i += 1;
    }
    kept
}

/// The kernel oracle shared by the differential tests: `tests/kernel/testrun.c` built with
/// gcc and libbpf, which loads raw instructions through bpf(2) and runs them.
pub mod kernel {
    use super::repo_root;
    use bpf2ptx_compiler::isa::{self, Insn};
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The built `testrun` tool, or why there is none.
    pub fn build_testrun(dir: &Path) -> Result<PathBuf, String> {
        let src = repo_root().join("tests/kernel/testrun.c");
        let bin = dir.join("testrun");
        let out = Command::new("gcc")
            .args(["-O2", "-Wall", "-Wextra"])
            .arg(&src)
            .arg("-lbpf")
            .arg("-o")
            .arg(&bin)
            .output()
            .map_err(|e| format!("cannot run gcc ({e}); apt-get install gcc"))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let hint = if err.contains("bpf/bpf.h") || err.contains("-lbpf") {
                " (libbpf-dev missing? apt-get install libbpf-dev)"
            } else {
                ""
            };
            return Err(format!(
                "gcc testrun.c -lbpf failed{hint}: {}",
                err.lines()
                    .find(|l| l.contains("error"))
                    .unwrap_or("")
                    .trim()
            ));
        }
        let probe = Command::new(&bin)
            .arg("--probe")
            .output()
            .map_err(|e| format!("cannot run testrun --probe: {e}"))?;
        if !probe.status.success() {
            return Err(String::from_utf8_lossy(&probe.stdout).trim().to_string());
        }
        Ok(bin)
    }

    /// Assembles a text the test writes.
    pub fn asm(text: &str) -> Vec<Insn> {
        isa::assemble(text)
            .unwrap_or_else(|e| panic!("`{text}`: {e}"))
            .insns
    }

    pub fn release() -> String {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into())
    }
}

pub mod fuse_check;
pub mod fuse_random;
pub mod ptx_model;
pub mod random;

/// python3 with `args` at the repository root, `BPF2PTX` naming this build's binary (the
/// GPU machine's scripts read it), no bytecode written into the tree. tests/run.sh and
/// CI need python3 anyway (ptxas comes from pip).
pub fn python3(args: &[&str]) -> std::process::Output {
    std::process::Command::new("python3")
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("BPF2PTX", bpf2ptx_bin())
        .current_dir(repo_root())
        .output()
        .unwrap_or_else(|e| panic!("python3: {e} (tests/run.sh needs python3 too)"))
}
