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
# A stand-in for nvcc: -c copies an nvcc-built object (host-only for main.cu) and writes a
# depfile for -MF (with a phony rule for the header after it, as -MP adds); -fatbin and
# -cubin write a marker, the arguments and the PTX; a link writes its inputs.
set -euo pipefail
echo "$*" >>"$FAKE_NVCC_LOG"
[ "$*" != --version ] || { echo "fake nvcc"; exit 0; }
out= compile=0 fatbin=0 cubin=0 depfile= inputs=()
while [ $# -gt 0 ]; do
	case "$1" in
	-o) out="$2"; shift ;;
	-MF) depfile="$2"; shift ;;
	-MT | -x | -maxrregcount | -Xptxas | -gencode) shift ;;
	-c) compile=1 ;;
	-fatbin) fatbin=1 ;;
	-cubin) cubin=1 ;;
	-*) ;;
	*) inputs+=("$1") ;;
	esac
	shift
done
if [ $fatbin = 1 ] || [ $cubin = 1 ]; then
	marker=FAKE-FATBIN; [ $cubin = 0 ] || marker=FAKE-CUBIN
	{ echo "$marker"; echo "args: $(tail -n 1 "$FAKE_NVCC_LOG")"; cat "${inputs[@]}"; } >"$out"
elif [ $compile = 1 ]; then
	[ -e "${inputs[0]}" ] || { echo "nvcc fatal   : Cannot find ${inputs[0]}" >&2; exit 1; }
	case "$(basename "${inputs[0]}")" in
	main.cu) echo 'int main(void) { return 0; }' >"$out.c"; gcc -c "$out.c" -o "$out"; rm "$out.c" ;;
	hostonly.cu)
		echo 'int host_only(void) { return 1; }' >"$out.c"; gcc -c "$out.c" -o "$out.h.o"; rm "$out.c"
		objcopy --add-section .nv_fatbin="$FAKE_NVCC_SASS" "$out.h.o" "$out"; rm "$out.h.o" ;;
	*) cp "$FAKE_NVCC_OBJECT" "$out"; chmod u+w "$out" ;;
	esac
	[ -z "$depfile" ] || printf '%s : %s \\\n    /usr/include/stdio.h\n\n/usr/include/stdio.h :\n' "$out" "${inputs[0]}" >"$depfile"
else
	printf 'FAKE-LINK %s\n' "${inputs[*]}" >"$out"
fi
"#;

/// nvcc's fatbinary, beside the stand-in nvcc (where bpf2ptx-embed looks): a marker, the
/// arguments, then each image's kind, architecture and content.
const FAKE_FATBINARY: &str = r#"#!/usr/bin/env bash
set -euo pipefail
out= images=()
for a in "$@"; do
	case "$a" in
	--create=*) out="${a#--create=}" ;;
	--image3=*) images+=("${a#--image3=}") ;;
	esac
done
{
	echo "FAKE-FATBINARY"
	echo "args: $*"
	for i in "${images[@]}"; do echo "== image ${i%%,file=*}"; cat "${i#*,file=}"; done
} >"$out"
"#;

struct Env {
    dir: tempfile::TempDir,
    nvcc: PathBuf,
    log: PathBuf,
    /// The object the stand-in's `-c` writes for a source with kernels.
    object: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("nvcc");
    for (path, text) in [
        (&nvcc, FAKE_NVCC),
        (&dir.path().join("fatbinary"), FAKE_FATBINARY),
    ] {
        std::fs::write(path, text).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    let log = dir.path().join("nvcc.log");
    Env {
        dir,
        nvcc,
        log,
        object: repo_root().join("tests/inject/fatbin/vecadd.o"),
    }
}

impl Env {
    fn cmd(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("FAKE_NVCC_LOG", &self.log)
            .env("FAKE_NVCC_OBJECT", &self.object)
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

/// The instrumented PTX of `obj` for `arch` (`OBJ.bpf2ptx.ARCH.ptx`) and its sites.
fn per_arch(obj: &Path, arch: &str) -> (String, serde_json::Value) {
    let f = |ext: &str| PathBuf::from(format!("{}.bpf2ptx.{arch}.{ext}", obj.display()));
    let ptx = std::fs::read_to_string(f("ptx")).unwrap();
    let sites = serde_json::from_str(&std::fs::read_to_string(f("sites.json")).unwrap()).unwrap();
    (ptx, sites)
}

/// Several virtual architectures in one object (nvcc 13: `-arch=sm_90a` keeps compute_90
/// PTX beside compute_90a's; CMake `CUDA_ARCHITECTURES "75;90"`): each architecture's PTX
/// is instrumented on its own, each SASS built from its own architecture's instrumented PTX
/// with the command's ptxas flags, and fatbinary (beside nvcc) puts them in one fatbin, in
/// place of the object's. The objects are nvcc 13.0's (tests/inject/fatbin).
#[test]
fn the_launcher_instruments_each_virtual_architecture() {
    let mut e = env();
    let probe = repo_root().join("examples/probes/launch_count.bpf.o");
    std::fs::write(e.dir.path().join("k.cu"), "").unwrap();
    let obj = e.dir.path().join("k.o");
    e.object = repo_root().join("tests/inject/fatbin/vecadd.sm_90a.o");
    let r = e.embed(&probe, &["-arch=sm_90a", "-O2", "-c", "k.cu", "-o", "k.o"]);
    assert!(r.status.success(), "{}", text(&r));
    let fb = String::from_utf8_lossy(&fatbin(&obj).expect(".nv_fatbin")).into_owned();
    assert!(fb.starts_with("FAKE-FATBINARY\n"), "{fb}");
    let args = fb.lines().nth(1).unwrap();
    assert_eq!(
        args,
        "args: --create=k.o.bpf2ptx.fatbin -64 \
         --image3=kind=elf,sm=90a,file=k.o.bpf2ptx.compute_90a.sm_90a.cubin \
         --image3=kind=ptx,sm=90a,file=k.o.bpf2ptx.compute_90a.ptx \
         --image3=kind=ptx,sm=90,file=k.o.bpf2ptx.compute_90.ptx"
    );
    // The SASS from the arch-specific PTX, instrumented; each PTX its own architecture's.
    let images: Vec<&str> = fb.split("== image ").skip(1).collect();
    assert_eq!(images.len(), 3, "{fb}");
    assert!(images[0].starts_with("kind=elf,sm=90a\nFAKE-CUBIN\nargs: -cubin --generate-code=arch=compute_90a,code=sm_90a -o k.o.bpf2ptx.compute_90a.sm_90a.cubin k.o.bpf2ptx.compute_90a.ptx\n"), "{}", images[0]);
    for (image, target) in [
        (images[0], "sm_90a"),
        (images[1], "sm_90a"),
        (images[2], "sm_90"),
    ] {
        assert!(image.contains(&format!(".target {target}\n")), "{image}");
        assert!(image.contains("bpf2ptx_map_launches"), "{image}");
    }
    for arch in ["compute_90", "compute_90a"] {
        let (ptx, sites) = per_arch(&obj, arch);
        assert!(ptx.contains(".visible .entry vecadd("), "{arch}");
        assert_eq!(sites[0]["kernel"], "vecadd", "{arch}");
    }
    assert!(!e.dir.path().join("k.o.bpf2ptx.fatbin").exists());
    assert!(!e
        .dir
        .path()
        .join("k.o.bpf2ptx.compute_90a.sm_90a.cubin")
        .exists());

    // CMake's flags for CUDA_ARCHITECTURES "75;90", with ptxas options.
    e.object = repo_root().join("tests/inject/fatbin/vecadd.multi.o");
    let r = e.embed(
        &probe,
        &[
            "--generate-code=arch=compute_75,code=[compute_75,sm_75]",
            "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
            "-Xptxas=-v",
            "-maxrregcount",
            "64",
            "-c",
            "k.cu",
            "-o",
            "k.o",
        ],
    );
    assert!(r.status.success(), "{}", text(&r));
    let fb = String::from_utf8_lossy(&fatbin(&obj).unwrap()).into_owned();
    let images: Vec<&str> = fb.split("== image ").skip(1).collect();
    let heads: Vec<&str> = images.iter().map(|i| i.lines().next().unwrap()).collect();
    assert_eq!(
        heads,
        [
            "kind=ptx,sm=75",
            "kind=elf,sm=75",
            "kind=ptx,sm=90",
            "kind=elf,sm=90"
        ]
    );
    for (image, target) in images.iter().zip(["sm_75", "sm_75", "sm_90", "sm_90"]) {
        assert!(image.contains(&format!(".target {target}\n")), "{image}");
        assert!(image.contains("bpf2ptx_map_launches"), "{image}");
    }
    assert!(
        images[3].contains("args: -cubin --generate-code=arch=compute_90,code=sm_90 -Xptxas=-v -maxrregcount 64 -o"),
        "{}",
        images[3]
    );

    // SASS built from PTX the object does not keep, and -arch=all: refused, object removed.
    for (args, says) in [
        (
            &[
                "-gencode",
                "arch=compute_80,code=sm_80",
                "-gencode",
                "arch=compute_90,code=compute_90",
            ][..],
            "no PTX for compute_80; the input has PTX for compute_75, compute_90",
        ),
        (
            &["-arch=all"][..],
            "-arch=all builds SASS from PTX that the object does not keep",
        ),
    ] {
        let mut a = args.to_vec();
        a.extend(["-c", "k.cu", "-o", "k.o"]);
        let r = e.embed(&probe, &a);
        assert_eq!(r.status.code(), Some(2), "{}", text(&r));
        assert!(text(&r).contains(says), "{}", text(&r));
        assert!(!obj.exists());
    }
}

/// The object depends on the probe: the launcher adds it to the first rule of nvcc's
/// depfile (-MF, as CMake passes), escaped for make and ninja, so a changed probe
/// recompiles exactly the instrumented objects.
#[test]
fn the_launcher_adds_the_probe_to_the_depfile() {
    let e = env();
    let dir = e.dir.path().join("my probes");
    std::fs::create_dir(&dir).unwrap();
    let probe = dir.join("launch_count.bpf.o");
    std::fs::copy(
        repo_root().join("examples/probes/launch_count.bpf.o"),
        &probe,
    )
    .unwrap();
    std::fs::write(e.dir.path().join("k.cu"), "").unwrap();
    let r = e.embed(
        &probe,
        &[
            "-arch=sm_90",
            "-MD",
            "-MT",
            "k.o",
            "-MF",
            "k.o.d",
            "-x",
            "cu",
            "-c",
            "k.cu",
            "-o",
            "k.o",
        ],
    );
    assert!(r.status.success(), "{}", text(&r));
    let dep = std::fs::read_to_string(e.dir.path().join("k.o.d")).unwrap();
    assert_eq!(
        dep,
        format!(
            "k.o : k.cu \\\n    /usr/include/stdio.h \\\n    {}\n\n/usr/include/stdio.h :\n",
            probe.display().to_string().replace(' ', "\\ ")
        )
    );
    // Also when no kernel matches: a changed probe may match then.
    let other = e.dir.path().join("other.bpf.c");
    std::fs::write(
        &other,
        "#include \"bpf2ptx_helpers.h\"\nSEC(\"gpu/entry/other_kernel\") int f(void *ctx) { return 0; }\n",
    )
    .unwrap();
    if require_clang().is_some() {
        let r = e.embed(
            &other,
            &[
                "-arch=sm_90",
                "-MD",
                "-MF",
                "k.o.d",
                "-c",
                "k.cu",
                "-o",
                "k.o",
            ],
        );
        assert!(r.status.success(), "{}", text(&r));
        let dep = std::fs::read_to_string(e.dir.path().join("k.o.d")).unwrap();
        assert!(dep.contains(&format!("    {}\n", other.display())), "{dep}");
    }
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

/// The Make example on a machine without clang (`APP_PROBE=app_probe.bpf.o`, as
/// tests/gpu/build_integration.sh runs it there), in a copy of the example: the committed
/// object is verified and used as it is even when the source looks newer (bpf2ptx.mk's
/// `%.bpf.o: %.bpf.c` rule would rebuild it with clang, over the committed file), and a
/// probe depfile left in the folder by an earlier `bpf2ptx build` does not become the
/// default goal.
#[test]
fn the_make_example_takes_the_committed_probe_as_it_is() {
    let e = env();
    let root = e.dir.path().join("repo");
    let app = root.join("examples/cmake-app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir_all(root.join("cli/make")).unwrap();
    std::fs::create_dir_all(root.join("cli/cmake")).unwrap();
    for f in std::fs::read_dir(repo_root().join("examples/cmake-app")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, app.join(f.file_name().unwrap())).unwrap();
    }
    for f in ["cli/make/bpf2ptx.mk", "cli/cmake/bpf2ptx-embed"] {
        std::fs::copy(repo_root().join(f), root.join(f)).unwrap();
    }
    let committed = std::fs::read(app.join("app_probe.bpf.o")).unwrap();
    // The source newer than the object; a stale depfile beside them.
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(app.join("app_probe.bpf.c"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    std::fs::write(
        app.join("app_probe.bpf.o.d"),
        "app_probe.bpf.o: app_probe.bpf.c\n",
    )
    .unwrap();
    let b = e.dir.path().join("build");
    let r = e
        .cmd("make")
        .arg("-C")
        .arg(&app)
        .arg(format!("B={}", b.display()))
        .arg(format!("NVCC={}", e.nvcc.display()))
        .arg(format!("BPF2PTX={}", bpf2ptx_bin().display()))
        .arg("APP_PROBE=app_probe.bpf.o")
        .env("BPF2PTX_CLANG", "/nonexistent/clang")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r));
    assert!(!text(&r).contains("bpf2ptx build"), "{}", text(&r));
    assert_eq!(
        std::fs::read(app.join("app_probe.bpf.o")).unwrap(),
        committed
    );
    assert_eq!(std::fs::read(b.join("app_probe.bpf.o")).unwrap(), committed);
    for prog in ["app", "app.probed"] {
        assert!(b.join(prog).is_file(), "{prog}: {}", text(&r));
    }
    let probed = String::from_utf8(fatbin(&b.join("vecadd.probed.o")).unwrap()).unwrap();
    assert!(probed.contains("bpf2ptx_map_counts"));
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
             add_executable(t t.c k.cu)\n\
             add_executable(plain t.c k.cu)\n\
             set_property(TARGET t PROPERTY CUDA_COMPILER_LAUNCHER ccache)\n{extra}",
            module.display(),
            probe.display()
        )
    };
    std::fs::write(src.join("t.c"), "int main(void) { return 0; }\n").unwrap();
    std::fs::write(src.join("k.cu"), "").unwrap();
    std::fs::write(
        src.join("CMakeLists.txt"),
        project(
            "bpf2ptx_instrument(TARGET t PROBES lc INJECT_OPTIONS --granularity warp)\n\
             file(GENERATE OUTPUT launcher.txt CONTENT \"$<TARGET_PROPERTY:t,CUDA_COMPILER_LAUNCHER>\")\n\
             get_source_file_property(d k.cu OBJECT_DEPENDS)\n\
             file(WRITE ${CMAKE_BINARY_DIR}/object_depends.txt \"${d}\")\n",
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
    // The sources keep no dependency on the probe: `plain` compiles the same k.cu, and a
    // source property would make it depend on (and build) the probe too. The launcher
    // puts the probe in the instrumented objects' depfiles instead.
    assert_eq!(
        std::fs::read_to_string(b.join("object_depends.txt")).unwrap(),
        "NOTFOUND"
    );
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
        (
            "set_property(TARGET t PROPERTY CUDA_ARCHITECTURES 80 90-real)\nbpf2ptx_instrument(TARGET t PROBES lc)\n",
            "CUDA_ARCHITECTURES 90-real keeps no PTX",
        ),
    ] {
        std::fs::write(src.join("CMakeLists.txt"), project(extra)).unwrap();
        let b2 = tempfile::tempdir_in(e.dir.path()).unwrap();
        let r = configure(b2.path());
        assert!(!r.status.success(), "{extra}");
        assert!(text(&r).contains(says), "{extra}: {}", text(&r));
    }
}

/// nvcc for the tests that run the real compiler: `BPF2PTX_TEST_NVCC`, a CUDA toolkit's
/// nvcc (13.0 is what the GPU machine has), with fatbinary beside it and, for CMake's
/// `CUDA::cuda_driver`, `lib64/stubs/libcuda.so` in its root. CI has none: these tests
/// then only say they were skipped. tests/gpu/build_integration.sh runs the same builds
/// on the GPU machine (`BUILD_ONLY=1` without a GPU) and runs the programs.
fn real_nvcc() -> Option<PathBuf> {
    match std::env::var_os("BPF2PTX_TEST_NVCC") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => {
            eprintln!("skipped: BPF2PTX_TEST_NVCC (a real nvcc) is not set");
            None
        }
    }
}

/// One SASS image of a fatbin section: its architecture (90 for sm_90 and sm_90a), whether
/// it has a kernel (a `.text.` section) and whether it has a probe map's symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sass {
    arch: u32,
    kernel: bool,
    probed: bool,
}

/// The SASS images of the fatbins in `.nv_fatbin` of `file` (an object, or an executable
/// with one fatbin per object, 8-byte aligned). ELF images are stored uncompressed unless
/// `-Xfatbin -compress-all`, so their symbol names can be searched as they are.
fn sass_images(file: &Path) -> Vec<Sass> {
    let sec = fatbin(file).expect(".nv_fatbin");
    let le = |at: usize, n: usize| {
        let mut v = 0u64;
        for i in (0..n).rev() {
            v = (v << 8) | u64::from(sec[at + i]);
        }
        v
    };
    let has = |b: &[u8], s: &str| b.windows(s.len()).any(|w| w == s.as_bytes());
    let mut out = Vec::new();
    let mut off = 0;
    while off + 16 <= sec.len() {
        if le(off, 4) != 0xBA55_ED50 {
            off += 8; // the linker's padding between two objects' fatbins
            continue;
        }
        let end = off + le(off + 6, 2) as usize + le(off + 8, 8) as usize;
        let mut e = off + le(off + 6, 2) as usize;
        while e < end {
            let (kind, header, size) = (le(e, 2), le(e + 4, 4) as usize, le(e + 8, 8) as usize);
            let payload = &sec[e + header..e + header + size];
            if kind == 2 {
                out.push(Sass {
                    arch: le(e + 0x1c, 4) as u32,
                    kernel: has(payload, ".text."),
                    probed: has(payload, "bpf2ptx_map_"),
                });
            }
            e += header + size;
        }
        off = end.next_multiple_of(8);
    }
    out
}

/// The virtual architectures of `file`'s PTX images (by `.target`) and whether each has
/// the probe (a map's symbol).
fn ptx_images(file: &Path) -> Vec<(String, bool)> {
    let bytes = std::fs::read(file).unwrap();
    let mut v: Vec<_> = bpf2ptx_backend::inject::fatbin::extract_ptx(&bytes)
        .unwrap()
        .into_iter()
        .filter(|e| e.ptx.contains(".entry"))
        .map(|e| {
            let arch = bpf2ptx::inject::ptx_virtual_arch(&e.ptx).unwrap();
            (arch, e.ptx.contains("bpf2ptx_map_counts"))
        })
        .collect();
    v.sort();
    v
}

/// `plain` and `probed` hold the same images with kernels, SASS and PTX; the probed
/// one's all instrumented (so the driver cannot run the old SASS), the plain one's none.
fn assert_instrumented(plain: &Path, probed: &Path, what: &str) -> usize {
    let kernels =
        |f: &Path| -> Vec<Sass> { sass_images(f).into_iter().filter(|s| s.kernel).collect() };
    let (p, q) = (kernels(plain), kernels(probed));
    assert_eq!(
        p.iter().map(|s| s.arch).collect::<Vec<_>>(),
        q.iter().map(|s| s.arch).collect::<Vec<_>>(),
        "{what}: SASS architectures"
    );
    assert!(p.iter().all(|s| !s.probed), "{what}: plain SASS {p:?}");
    assert!(q.iter().all(|s| s.probed), "{what}: probed SASS {q:?}");
    let (p, q) = (ptx_images(plain), ptx_images(probed));
    assert_eq!(
        p.iter().map(|(a, _)| a).collect::<Vec<_>>(),
        q.iter().map(|(a, _)| a).collect::<Vec<_>>(),
        "{what}: PTX architectures"
    );
    assert!(p.iter().all(|(_, x)| !x), "{what}: plain PTX {p:?}");
    assert!(
        !q.is_empty() && q.iter().all(|(_, x)| *x),
        "{what}: probed PTX {q:?}"
    );
    kernels(probed).len()
}

/// With a real nvcc: the launcher's objects for one architecture, CMake's "75;90",
/// `-arch=sm_90a` (compute_90 and compute_90a PTX) and PTX only hold the same images as
/// nvcc's own, every one instrumented, SASS included; the depfile names the probe.
#[test]
fn real_nvcc_objects_carry_the_instrumented_sass_and_ptx() {
    let Some(nvcc) = real_nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/cmake-app");
    let probe = app.join("app_probe.bpf.o");
    for flags in [
        &["-arch=sm_90"][..],
        &[
            "--generate-code=arch=compute_75,code=[compute_75,sm_75]",
            "--generate-code=arch=compute_90,code=[compute_90,sm_90]",
        ][..],
        &["-arch=sm_90a"][..],
        &["--generate-code=arch=compute_90,code=[compute_90]"][..],
    ] {
        let what = flags.join(" ");
        for s in ["vecadd", "scale"] {
            let plain = dir.path().join(format!("{s}.o"));
            let probed = dir.path().join(format!("{s}.probed.o"));
            let src = app.join(format!("{s}.cu"));
            let r = Command::new(&nvcc)
                .args(flags)
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&plain)
                .output()
                .unwrap();
            assert!(r.status.success(), "{what}: {}", text(&r));
            let r = Command::new(repo_root().join("cli/cmake/bpf2ptx-embed"))
                .arg("--bpf2ptx")
                .arg(bpf2ptx_bin())
                .arg("--probe")
                .arg(&probe)
                .arg("--")
                .arg(&nvcc)
                .args(flags)
                .args(["-MD", "-MF"])
                .arg(probed.with_extension("o.d"))
                .arg("-c")
                .arg(&src)
                .arg("-o")
                .arg(&probed)
                .output()
                .unwrap();
            assert!(r.status.success(), "{what}: {}", text(&r));
            let sass = assert_instrumented(&plain, &probed, &format!("{what} {s}"));
            assert_eq!(sass > 0, what.contains("sm_"), "{what}: {sass} SASS images");
            let dep = std::fs::read_to_string(probed.with_extension("o.d")).unwrap();
            assert!(dep.contains(&probe.display().to_string()), "{dep}");
        }
    }
}

/// With a real nvcc: examples/cmake-app built with Make (sm_90a) and CMake ("75;90"), the
/// committed probe object (no clang needed): both programs link, and the instrumented
/// one's fatbins hold instrumented SASS and PTX for every kernel, the plain one's none.
#[test]
fn real_nvcc_builds_the_examples() {
    let Some(nvcc) = real_nvcc() else { return };
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/cmake-app");
    let b = dir.path().join("make");
    let r = Command::new("make")
        .arg("-C")
        .arg(&app)
        .arg(format!("B={}", b.display()))
        .arg(format!("NVCC={}", nvcc.display()))
        .arg(format!("BPF2PTX={}", bpf2ptx_bin().display()))
        .arg("ARCH=sm_90a")
        .arg("APP_PROBE=app_probe.bpf.o")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r));
    let sass = assert_instrumented(&b.join("app"), &b.join("app.probed"), "make sm_90a");
    assert_eq!(sass, 2, "vecadd and scale for sm_90a");

    let b = dir.path().join("cmake");
    let r = Command::new("cmake")
        .arg("-S")
        .arg(&app)
        .arg("-B")
        .arg(&b)
        .arg(format!("-DCMAKE_CUDA_COMPILER={}", nvcc.display()))
        .arg("-DCMAKE_CUDA_ARCHITECTURES=75;90")
        .arg(format!("-DBPF2PTX_EXECUTABLE={}", bpf2ptx_bin().display()))
        .arg(format!(
            "-DAPP_PROBE={}",
            app.join("app_probe.bpf.o").display()
        ))
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r));
    let r = Command::new("cmake")
        .arg("--build")
        .arg(&b)
        .arg("-j4")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", text(&r));
    let sass = assert_instrumented(&b.join("app"), &b.join("app_probed"), "cmake 75;90");
    assert_eq!(sass, 4, "vecadd and scale for sm_75 and sm_90");
}
