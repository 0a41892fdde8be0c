//! The build-system glue of issue 17 part 3, without a GPU or CUDA: `cli/cmake/bpf2ptx-embed`
//! (the compiler launcher that instruments nvcc's objects), `cli/make/bpf2ptx.mk` with
//! `examples/cmake-app/Makefile`, and `cli/cmake/Bpf2ptx.cmake`'s functions, each run for
//! real against a stand-in nvcc. The stand-in's `-c` writes an nvcc-built object (the
//! fixture `tests/inject/fatbin/vecadd.o`, whose `.nv_fatbin` holds vecAdd's PTX) or, for
//! `main.cu`, a host-only object; its `-fatbin` writes a marker, its arguments and the PTX
//! it was given, so a test reads back from the object exactly what the launcher put there.
//! tests/gpu/build_integration.sh does the same with nvcc 13 and runs the programs.
//!
//! Needs bash, make, cmake, gcc and binutils (CI installs them) and clang (`require_clang`).

use bpf2ptx_tests::{bpf2ptx_bin, repo_root, require_clang};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FAKE_NVCC: &str = r#"#!/usr/bin/env bash
# A stand-in for nvcc: -c copies an nvcc-built object (host-only for main.cu), -fatbin
# writes a marker, the arguments and the PTX, a link writes its inputs.
set -euo pipefail
echo "$*" >>"$FAKE_NVCC_LOG"
[ "$*" != --version ] || { echo "fake nvcc"; exit 0; }
out= compile=0 fatbin=0 inputs=()
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out="$2"; shift ;;
	-MT | -MF | -x) shift ;;
	-c) compile=1 ;;
	-fatbin) fatbin=1 ;;
	-*) ;;
	*) inputs+=("$1") ;;
	esac
	shift
done
if [ $fatbin = 1 ]; then
	{ echo "FAKE-FATBIN"; echo "args: $(tail -n 1 "$FAKE_NVCC_LOG")"; cat "${inputs[@]}"; } >"$out"
elif [ $compile = 1 ]; then
	[ -e "${inputs[0]}" ] || { echo "nvcc fatal   : Cannot find ${inputs[0]}" >&2; exit 1; }
	case "$(basename "${inputs[0]}")" in
	main.cu) echo 'int main(void) { return 0; }' >"$out.c"; gcc -c "$out.c" -o "$out"; rm "$out.c" ;;
	hostonly.cu)
		echo 'int host_only(void) { return 1; }' >"$out.c"; gcc -c "$out.c" -o "$out.h.o"; rm "$out.c"
		objcopy --add-section .nv_fatbin="$FAKE_NVCC_SASS" "$out.h.o" "$out"; rm "$out.h.o" ;;
	*) cp "$FAKE_NVCC_OBJECT" "$out"; chmod u+w "$out" ;;
	esac
else
	printf 'FAKE-LINK %s\n' "${inputs[*]}" >"$out"
fi
"#;

struct Env {
    dir: tempfile::TempDir,
    nvcc: PathBuf,
    log: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("nvcc");
    std::fs::write(&nvcc, FAKE_NVCC).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = dir.path().join("nvcc.log");
    Env { dir, nvcc, log }
}

impl Env {
    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("FAKE_NVCC_LOG", &self.log)
            .env(
                "FAKE_NVCC_OBJECT",
                repo_root().join("tests/inject/fatbin/vecadd.o"),
            )
            .env(
                "FAKE_NVCC_SASS",
                repo_root().join("tests/inject/fatbin/vecadd.sass.fatbin"),
            )
            .current_dir(self.dir.path());
        c
    }

    /// `bpf2ptx-embed --probe PROBE -- nvcc ARGS`.
    fn embed(&self, probe: &Path, nvcc_args: &[&str]) -> Output {
        self.cmd(repo_root().join("cli/cmake/bpf2ptx-embed"))
            .arg("--bpf2ptx")
            .arg(bpf2ptx_bin())
            .arg("--probe")
            .arg(probe)
            .arg("--")
            .arg(&self.nvcc)
            .args(nvcc_args)
            .output()
            .unwrap()
    }
}

/// The bytes of `obj`'s `.nv_fatbin` section, or `None` when it has none.
fn fatbin(obj: &Path) -> Option<Vec<u8>> {
    let dump = obj.with_extension("section");
    let r = Command::new("objcopy")
        .arg(format!("--dump-section=.nv_fatbin={}", dump.display()))
        .arg(obj)
        .arg(obj.with_extension("copy"))
        .output()
        .unwrap();
    if !r.status.success() {
        return None;
    }
    std::fs::read(&dump).ok()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn the_launcher_replaces_the_fatbin_with_the_instrumented_ptx() {
    let e = env();
    let probe = repo_root().join("examples/probes/launch_count.bpf.o");
    std::fs::write(e.dir.path().join("k.cu"), "").unwrap();
    let r = e.embed(
        &probe,
        &[
            "-O2",
            "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
            "-MD",
            "-MT",
            "k.o",
            "-x",
            "cu",
            "-c",
            "k.cu",
            "-o",
            "k.o",
        ],
    );
    assert!(r.status.success(), "{}", text(&r));
    let obj = e.dir.path().join("k.o");
    let fb = String::from_utf8(fatbin(&obj).expect(".nv_fatbin")).unwrap();
    assert!(fb.starts_with("FAKE-FATBIN\n"), "{fb}");
    // The fatbin was built from the instrumented PTX, for the command's architectures
    // only (none of its other flags).
    let args = fb.lines().nth(1).unwrap();
    assert!(
        args.starts_with("args: -fatbin --generate-code=arch=compute_90,code=[compute_90,sm_90] -o k.o.bpf2ptx.fatbin k.o.bpf2ptx.ptx"),
        "{args}"
    );
    assert!(!args.contains("-MD") && !args.contains("-O2"), "{args}");
    assert!(fb.contains(".visible .entry vecadd("), "{fb}");
    assert!(fb.contains("bpf2ptx_map_launches"), "{fb}");
    // The sites and the PTX stay beside the object; the fatbin file does not.
    let sites: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(e.dir.path().join("k.o.bpf2ptx.sites.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(sites[0]["kernel"], "vecadd");
    assert!(!e.dir.path().join("k.o.bpf2ptx.fatbin").exists());
    // The rest of the object is nvcc's: the same symbols.
    let syms = |p: &Path| {
        let o = Command::new("nm").arg(p).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(
        syms(&obj),
        syms(&repo_root().join("tests/inject/fatbin/vecadd.o"))
    );
}

#[test]
fn objects_without_device_code_or_matching_kernels_stay_as_nvcc_made_them() {
    if require_clang().is_none() {
        return;
    }
    let e = env();
    let launch_count = repo_root().join("examples/probes/launch_count.bpf.o");
    // main.cu: the stand-in makes a host-only object.
    std::fs::write(e.dir.path().join("main.cu"), "").unwrap();
    let r = e.embed(&launch_count, &["-c", "main.cu", "-o", "main.o"]);
    assert!(r.status.success(), "{}", text(&r));
    assert!(fatbin(&e.dir.path().join("main.o")).is_none());
    assert!(!e.dir.path().join("main.o.bpf2ptx.ptx").exists());
    // hostonly.cu: a fatbin without PTX (as nvcc may embed for a file without kernels),
    // and no kernel registered: left alone, where injecting would fail for want of PTX.
    std::fs::write(e.dir.path().join("hostonly.cu"), "").unwrap();
    let r = e.embed(&launch_count, &["-c", "hostonly.cu", "-o", "hostonly.o"]);
    assert!(r.status.success(), "{}", text(&r));
    assert_eq!(
        fatbin(&e.dir.path().join("hostonly.o")).unwrap(),
        std::fs::read(repo_root().join("tests/inject/fatbin/vecadd.sass.fatbin")).unwrap()
    );
    assert!(!e.dir.path().join("hostonly.o.bpf2ptx.ptx").exists());
    // A probe for a kernel the object does not have (given as C: compiled on the way).
    std::fs::write(
        e.dir.path().join("other.bpf.c"),
        "#include \"bpf2ptx_helpers.h\"\nSEC(\"gpu/entry/other_kernel\") int f(void *ctx) { return 0; }\n",
    )
    .unwrap();
    std::fs::write(e.dir.path().join("k.cu"), "").unwrap();
    let r = e.embed(
        &e.dir.path().join("other.bpf.c"),
        &["-arch=sm_90", "-c", "k.cu", "-o", "k.o"],
    );
    assert!(r.status.success(), "{}", text(&r));
    assert_eq!(
        std::fs::read(e.dir.path().join("k.o")).unwrap(),
        std::fs::read(repo_root().join("tests/inject/fatbin/vecadd.o")).unwrap()
    );
    // Commands that make no object pass through.
    let r = e.embed(&launch_count, &["--version"]);
    assert!(r.status.success(), "{}", text(&r));
    let log = std::fs::read_to_string(&e.log).unwrap();
    assert!(!log.contains("-fatbin"), "{log}");
}

#[test]
fn failures_remove_the_object() {
    let e = env();
    std::fs::write(e.dir.path().join("k.cu"), "").unwrap();
    let obj = e.dir.path().join("k.o");
    // A probe that does not load.
    let r = e.embed(
        Path::new("/nonexistent.bpf.o"),
        &["-c", "k.cu", "-o", "k.o"],
    );
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    assert!(text(&r).contains("bpf2ptx-embed: k.o: bpf2ptx inject failed (exit 2)"));
    assert!(!obj.exists());
    // Separable compilation.
    let probe = repo_root().join("examples/probes/launch_count.bpf.o");
    let r = e.embed(&probe, &["-rdc=true", "-c", "k.cu", "-o", "k.o"]);
    assert_eq!(r.status.code(), Some(2), "{}", text(&r));
    assert!(text(&r).contains("relocatable device code"), "{}", text(&r));
    assert!(!obj.exists());
    // nvcc's own failure is nvcc's exit code, and nothing is instrumented.
    let r = e.embed(&probe, &["-c", "missing.cu", "-o", "k.o"]);
    assert_ne!(r.status.code(), Some(0));
    assert!(!obj.exists());
}

/// examples/cmake-app/Makefile through cli/make/bpf2ptx.mk: the probe built from C, plain
/// and instrumented objects, both programs linked; the instrumented one from the
/// instrumented objects.
#[test]
fn the_make_example_builds_both_programs() {
    if require_clang().is_none() {
        return;
    }
    let e = env();
    let b = e.dir.path().join("build");
    let r = e
        .cmd("make")
        .arg("-C")
        .arg(repo_root().join("examples/cmake-app"))
        .arg(format!("B={}", b.display()))
        .arg(format!("NVCC={}", e.nvcc.display()))
        .arg(format!("BPF2PTX={}", bpf2ptx_bin().display()))
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r));
    let link = |f: &str| std::fs::read_to_string(b.join(f)).unwrap();
    assert!(link("app").starts_with("FAKE-LINK"), "{}", link("app"));
    for (prog, obj) in [("app", ".o"), ("app.probed", ".probed.o")] {
        for s in ["main", "vecadd", "scale"] {
            let want = b.join(format!("{s}{obj}")).display().to_string();
            assert!(link(prog).contains(&want), "{prog}: {}", link(prog));
        }
    }
    // The probe object, verified, with its header list.
    assert!(b.join("app_probe.bpf.o").is_file());
    let deps = std::fs::read_to_string(b.join("app_probe.bpf.o.d")).unwrap();
    assert!(deps.contains("app_probe.bpf.c"), "{deps}");
    for s in ["vecadd", "scale"] {
        let plain = fatbin(&b.join(format!("{s}.o"))).unwrap();
        assert!(!String::from_utf8_lossy(&plain).contains("FAKE-FATBIN"));
        let probed = String::from_utf8(fatbin(&b.join(format!("{s}.probed.o"))).unwrap()).unwrap();
        assert!(probed.contains("bpf2ptx_map_counts"), "{s}");
        assert!(
            probed.lines().nth(1).unwrap().contains("-arch=sm_90"),
            "{s}"
        );
    }
    // Nothing to do the second time.
    let r = e
        .cmd("make")
        .arg("-C")
        .arg(repo_root().join("examples/cmake-app"))
        .arg(format!("B={}", b.display()))
        .arg(format!("NVCC={}", e.nvcc.display()))
        .arg(format!("BPF2PTX={}", bpf2ptx_bin().display()))
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        r.status.success(),
        "make -q: out of date after a build: {}",
        text(&r)
    );
}

/// Bpf2ptx.cmake's functions in a C project (CMake's CUDA support needs a real nvcc):
/// bpf2ptx_add_probe builds and verifies the probe at build time; bpf2ptx_instrument puts
/// the launcher on the target's CUDA compiles; wrong uses stop the configure with why.
#[test]
fn the_cmake_module_builds_probes_and_sets_the_launcher() {
    if require_clang().is_none() {
        return;
    }
    let e = env();
    let src = e.dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let module = repo_root().join("cli/cmake");
    let probe = repo_root().join("examples/probes/launch_count.bpf.c");
    let project = |extra: &str| {
        format!(
            "cmake_minimum_required(VERSION 3.20)\nproject(t LANGUAGES C)\n\
             list(APPEND CMAKE_MODULE_PATH \"{}\")\ninclude(Bpf2ptx)\n\
             bpf2ptx_add_probe(lc SOURCES \"{}\" DEFINITIONS MAX_KERNELS=32)\n\
             add_executable(t t.c)\n\
             set_property(TARGET t PROPERTY CUDA_COMPILER_LAUNCHER ccache)\n{extra}",
            module.display(),
            probe.display()
        )
    };
    std::fs::write(src.join("t.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(
        src.join("CMakeLists.txt"),
        project(
            "bpf2ptx_instrument(TARGET t PROBES lc INJECT_OPTIONS --granularity warp)\n\
             file(GENERATE OUTPUT launcher.txt CONTENT \"$<TARGET_PROPERTY:t,CUDA_COMPILER_LAUNCHER>\")\n",
        ),
    )
    .unwrap();
    let b = e.dir.path().join("b");
    let configure = |b: &Path| {
        e.cmd("cmake")
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(b)
            .arg(format!("-DBPF2PTX_EXECUTABLE={}", bpf2ptx_bin().display()))
            .output()
            .unwrap()
    };
    let r = configure(&b);
    assert!(r.status.success(), "{}", text(&r));
    let r = e.cmd("cmake").arg("--build").arg(&b).output().unwrap();
    assert!(r.status.success(), "{}", text(&r));
    let obj = b.join("lc.bpf.o");
    let o = bpf2ptx::load_path(&obj).unwrap();
    assert_eq!(o.maps[0].max_entries, 32, "DEFINITIONS reach clang");
    let launcher = std::fs::read_to_string(b.join("launcher.txt")).unwrap();
    let want = format!(
        "{};--bpf2ptx;{};--probe;{};--inject-arg;--granularity;--inject-arg;warp;--;ccache",
        repo_root().join("cli/cmake/bpf2ptx-embed").display(),
        bpf2ptx_bin().display(),
        obj.display()
    );
    // CMake normalises the module path (cli/cmake/../cmake); compare the tails.
    assert!(
        launcher.ends_with(&want[want.find(";--bpf2ptx").unwrap()..]),
        "{launcher}\n{want}"
    );
    assert!(launcher.contains("bpf2ptx-embed;"), "{launcher}");
    // Wrong uses.
    for (extra, says) in [
        ("bpf2ptx_instrument(TARGET t PROBES lc lc)\n", "PROBES takes one probe (got 2)"),
        ("bpf2ptx_instrument(TARGET nope PROBES lc)\n", "TARGET `nope` is not a target"),
        (
            "bpf2ptx_add_probe(two SOURCES a.bpf.c b.bpf.c)\n",
            "SOURCES takes one .bpf.c (got 2)",
        ),
        (
            "set_property(TARGET t PROPERTY CUDA_SEPARABLE_COMPILATION ON)\nbpf2ptx_instrument(TARGET t PROBES lc)\n",
            "CUDA_SEPARABLE_COMPILATION is on",
        ),
    ] {
        std::fs::write(src.join("CMakeLists.txt"), project(extra)).unwrap();
        let b2 = tempfile::tempdir_in(e.dir.path()).unwrap();
        let r = configure(b2.path());
        assert!(!r.status.success(), "{extra}");
        assert!(text(&r).contains(says), "{extra}: {}", text(&r));
    }
}
