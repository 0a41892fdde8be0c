//! `bpf2ptx build SOURCE` and C sources given to the other commands (issue 17, part 1):
//! the object clang makes, clang missing (exit 2, how to get one), clang's own errors
//! passed through, `-D`/`-I` passed on, `--keep-object`, a probe the verifier rejects,
//! and `bpf2ptx_helpers.h` on its own and after `vmlinux.h`.
//!
//! The tests that run clang need it (`bpf2ptx_tests::require_clang`: CI installs it; only
//! `BPF2PTX_SKIP_CLANG=1` skips them); those about a missing clang run everywhere.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root, require_clang};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bpf2ptx(args: &[&std::ffi::OsStr], cwd: &Path) -> Output {
    Command::new(bpf2ptx_bin())
        .args(args)
        .current_dir(cwd)
        .env_remove("BPF2PTX_CLANG")
        .output()
        .unwrap()
}

/// Runs `bpf2ptx ARGS` in `cwd` (strings).
fn run(args: &[&str], cwd: &Path) -> Output {
    let a: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    bpf2ptx(&a, cwd)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A folder with the gallery's `launch_count.bpf.c` and its `common.h`.
fn gallery_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["launch_count.bpf.c", "common.h"] {
        std::fs::copy(
            repo_root().join("examples/probes").join(f),
            dir.path().join(f),
        )
        .unwrap();
    }
    dir
}

fn map_sizes(obj: &Path) -> Vec<(String, u32)> {
    let o = bpf2ptx::load_path(obj).unwrap_or_else(|e| panic!("{e}"));
    o.maps
        .iter()
        .map(|m| (m.name.clone(), m.max_entries))
        .collect()
}

#[test]
fn build_writes_a_verified_object_beside_the_source() {
    if require_clang().is_none() {
        return;
    }
    let dir = gallery_copy();
    let r = run(&["build", "launch_count.bpf.c"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(r.stdout.is_empty(), "build is silent on success");
    let obj = dir.path().join("launch_count.bpf.o");
    let loaded = bpf2ptx::load_path(&obj).unwrap();
    // Named by the object it is; its line info names the source clang compiled.
    let names: Vec<&str> = loaded.programs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["count_launch"]);
    assert_eq!(map_sizes(&obj), [("launches".to_string(), 256)]);
    assert!(loaded.programs[0]
        .lines
        .iter()
        .any(|(_, l)| l.file.ends_with("launch_count.bpf.c")));
    // -o elsewhere, and the object verifies as `bpf2ptx verify` sees it.
    let out = dir.path().join("sub");
    std::fs::create_dir(&out).unwrap();
    let r = run(
        &["build", "launch_count.bpf.c", "-o", "sub/x.o"],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = run(&["verify", "sub/x.o"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    // --depfile: the object depends on the source and every header clang read, not on
    // the header bpf2ptx provided from a temporary folder.
    let r = run(
        &[
            "build",
            "launch_count.bpf.c",
            "-o",
            "sub/y.o",
            "--depfile",
            "sub/y.d",
        ],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let d = std::fs::read_to_string(dir.path().join("sub/y.d")).unwrap();
    assert!(
        d.starts_with("sub/y.o: \\\n  launch_count.bpf.c \\\n  common.h \\\n"),
        "{d}"
    );
    assert!(
        d.contains("/linux/bpf.h") && d.contains("/bpf/bpf_helpers.h"),
        "{d}"
    );
    assert!(!d.contains("bpf2ptx-build-"), "{d}");
    // -o -: the object on stdout, nothing else there.
    let r = run(&["build", "launch_count.bpf.c", "-o", "-"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(r.stdout.starts_with(b"\x7fELF"));
    assert_eq!(
        bpf2ptx::load_bytes("stdout", &r.stdout)
            .unwrap()
            .programs
            .len(),
        1
    );
}

#[test]
fn defines_and_includes_reach_clang() {
    if require_clang().is_none() {
        return;
    }
    let dir = gallery_copy();
    let r = run(
        &[
            "build",
            "launch_count.bpf.c",
            "-D",
            "MAX_KERNELS=64",
            "-o",
            "a.o",
        ],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(
        map_sizes(&dir.path().join("a.o")),
        [("launches".to_string(), 64)]
    );
    // The attached form too, and a define without a value.
    let inc = dir.path().join("inc");
    std::fs::create_dir(&inc).unwrap();
    std::fs::write(
        inc.join("sizes.h"),
        "#ifdef BIG\n#define SLOTS 4096\n#else\n#define SLOTS 16\n#endif\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("sized.bpf.c"),
        "#include \"bpf2ptx_helpers.h\"\n#include <sizes.h>\n\
         struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, SLOTS);\n\
         __type(key, __u32); __type(value, __u64); } slots SEC(\".maps\");\n\
         SEC(\"gpu/entry/*\") int on_entry(struct bpf2ptx_kernel_ctx *ctx) { return 0; }\n\
         char LICENSE[] SEC(\"license\") = \"GPL\";\n",
    )
    .unwrap();
    let r = run(
        &["build", "sized.bpf.c", "-Iinc", "-DBIG", "-o", "b.o"],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(
        map_sizes(&dir.path().join("b.o")),
        [("slots".to_string(), 4096)]
    );
    let r = run(
        &["build", "sized.bpf.c", "-I", "inc", "-o", "c.o"],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(
        map_sizes(&dir.path().join("c.o")),
        [("slots".to_string(), 16)]
    );
    // Without -I the header is not found: clang says so, and nothing is written.
    let r = run(&["build", "sized.bpf.c", "-o", "d.o"], dir.path());
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("sizes.h"), "{}", stderr(&r));
    assert!(!dir.path().join("d.o").exists());
}

#[test]
fn clang_errors_pass_through_and_end_in_one_line_naming_the_file() {
    if require_clang().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.bpf.c"),
        "#include \"bpf2ptx_helpers.h\"\nSEC(\"gpu/entry/*\") int f(void *ctx) { return undeclared_thing; }\n",
    )
    .unwrap();
    for args in [
        &["build", "broken.bpf.c"][..],
        &["verify", "broken.bpf.c"],
        &["broken.bpf.c", "-o", "x.ptx"],
        &["dump", "broken.bpf.c"],
    ] {
        let r = run(args, dir.path());
        let err = stderr(&r);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        // clang's own diagnostic, as clang prints it (file:line:col, the caret line).
        assert!(
            err.contains("broken.bpf.c:2:")
                && err.contains("undeclared_thing")
                && err.contains('^'),
            "{args:?}: {err}"
        );
        let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("error: ")).collect();
        assert_eq!(
            ours,
            ["error: broken.bpf.c: clang failed (exit status: 1); its messages are above"],
            "{args:?}: {err}"
        );
        assert!(r.stdout.is_empty(), "{args:?}");
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing written"
    );
}

/// No clang: exit 2 with one line that says how to get one, whichever command was given
/// the C file. These need no clang.
#[test]
fn missing_clang_is_exit_2_with_how_to_install_it() {
    let dir = gallery_copy();
    let cases: &[&[&str]] = &[
        &["build", "launch_count.bpf.c"],
        &["verify", "launch_count.bpf.c"],
        &["launch_count.bpf.c", "-o", "x.ptx"],
        &["dump", "launch_count.bpf.c"],
        &["run", "--cpu", "launch_count.bpf.c"],
    ];
    let vecadd = repo_root().join("examples/apps/vecadd.ptx");
    let inject: Vec<&str> = vec![
        "inject",
        "launch_count.bpf.c",
        "--into",
        vecadd.to_str().unwrap(),
        "-o",
        "y.ptx",
    ];
    for args in cases.iter().copied().chain([&inject[..]]) {
        // $BPF2PTX_CLANG naming nothing.
        let r = Command::new(bpf2ptx_bin())
            .args(args)
            .current_dir(dir.path())
            .env("BPF2PTX_CLANG", "/nonexistent")
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert_eq!(
            stderr(&r),
            "error: BPF2PTX_CLANG=/nonexistent: cannot run it (No such file or directory \
             (os error 2)); set BPF2PTX_CLANG to a clang that has the BPF target, or unset \
             it to search PATH\n",
            "{args:?}"
        );
        // --clang naming nothing wins over the variable.
        let mut with_opt: Vec<&str> = args.to_vec();
        with_opt.extend(["--clang", "/no/such/clang"]);
        let r = Command::new(bpf2ptx_bin())
            .args(&with_opt)
            .current_dir(dir.path())
            .env("BPF2PTX_CLANG", "/nonexistent")
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(
            stderr(&r).starts_with("error: --clang /no/such/clang: cannot run it"),
            "{args:?}: {}",
            stderr(&r)
        );
        // Nothing on PATH and nothing named.
        let r = Command::new(bpf2ptx_bin())
            .args(args)
            .current_dir(dir.path())
            .env_remove("BPF2PTX_CLANG")
            .env("PATH", dir.path())
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        let err = stderr(&r);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with(
                "error: launch_count.bpf.c: compiling C needs clang, and none was found"
            ) && err.contains("apt-get install clang libbpf-dev")
                && err.contains("BPF2PTX_CLANG=/path/to/clang"),
            "{args:?}: {err}"
        );
    }
    // A source that is not there is that, clang or not.
    let r = Command::new(bpf2ptx_bin())
        .args(["build", "nope.bpf.c"])
        .current_dir(dir.path())
        .env("BPF2PTX_CLANG", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert_eq!(
        stderr(&r),
        "error: nope.bpf.c: No such file or directory (os error 2)\n"
    );
    // Nothing was written.
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["common.h", "launch_count.bpf.c"]);
}

/// A clang that is not clang (runs, but cannot compile for BPF) is named, with its first
/// line of complaint.
#[test]
fn a_clang_without_the_bpf_target_is_refused() {
    let dir = gallery_copy();
    let fake = dir.path().join("fake-clang");
    std::fs::write(&fake, "#!/bin/sh\necho \"fake: no BPF here\" >&2\nexit 1\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let r = run(
        &[
            "build",
            "launch_count.bpf.c",
            "--clang",
            fake.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert_eq!(
        stderr(&r),
        format!(
            "error: --clang {}: cannot compile for BPF (`-target bpf -mcpu=v2` fails: fake: no \
             BPF here); give --clang a clang that has the BPF target\n",
            fake.display()
        )
    );
}

#[test]
fn keep_object_keeps_it_beside_the_output_or_the_source() {
    if require_clang().is_none() {
        return;
    }
    let dir = gallery_copy();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    // Without the flag: only the PTX.
    let r = run(&["launch_count.bpf.c", "-o", "out/a.ptx"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(!dir.path().join("out/launch_count.bpf.o").exists());
    assert!(!dir.path().join("launch_count.bpf.o").exists());
    // With it: beside the output.
    let r = run(
        &["launch_count.bpf.c", "-o", "out/a.ptx", "--keep-object"],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let kept = dir.path().join("out/launch_count.bpf.o");
    assert_eq!(map_sizes(&kept), [("launches".to_string(), 256)]);
    assert!(stderr(&r).contains("kept the object of launch_count.bpf.c as out/launch_count.bpf.o"));
    // A command without an output keeps it beside the source.
    let r = run(
        &["verify", "launch_count.bpf.c", "--keep-object"],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(dir.path().join("launch_count.bpf.o").is_file());
    // The kept object gives the PTX the C source gave (but for the header line that
    // names the input).
    let r = run(&["out/launch_count.bpf.o", "-o", "out/b.ptx"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let body = |f: &str| {
        let t = std::fs::read_to_string(dir.path().join(f)).unwrap();
        let (head, rest) = t.split_once("\n//\n").unwrap();
        assert!(head.contains("Generated by bpf2ptx"), "{head}");
        rest.to_string()
    };
    assert_eq!(body("out/a.ptx"), body("out/b.ptx"));
}

#[test]
fn a_rejected_probe_is_not_built() {
    if require_clang().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A lookup used without the NULL check: the verifier rejects the access.
    std::fs::write(
        dir.path().join("oob.bpf.c"),
        "#include \"bpf2ptx_helpers.h\"\n\
         struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);\n\
         __type(key, __u32); __type(value, __u64); } m SEC(\".maps\");\n\
         SEC(\"gpu/entry/*\") int f(struct bpf2ptx_kernel_ctx *ctx)\n\
         { __u32 k = ctx->kernel; __u64 *v = bpf_map_lookup_elem(&m, &k); *v += 1; return 0; }\n",
    )
    .unwrap();
    let r = run(&["build", "oob.bpf.c"], dir.path());
    assert_eq!(r.status.code(), Some(1), "{}", stderr(&r));
    assert!(
        stderr(&r).contains("oob.bpf.c: program f rejected"),
        "{}",
        stderr(&r)
    );
    assert!(!dir.path().join("oob.bpf.o").exists());
}

/// Every command that takes an object takes the C source and names it in what it says.
#[test]
fn c_sources_are_accepted_wherever_objects_are() {
    if require_clang().is_none() {
        return;
    }
    let dir = gallery_copy();
    std::fs::write(
        dir.path().join("answer.bpf.c"),
        "#include \"bpf2ptx_helpers.h\"\nSEC(\"gpu/entry/*\") int answer(void *ctx) { return 42; }\n",
    )
    .unwrap();
    let r = run(&["verify", "launch_count.bpf.c"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(String::from_utf8_lossy(&r.stdout)
        .starts_with("launch_count.bpf.c: program count_launch (entry probe of every kernel"));
    let r = run(
        &["launch_count.bpf.c", "-o", "l.ptx", "--target", "sm_90"],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let ptx = std::fs::read_to_string(dir.path().join("l.ptx")).unwrap();
    assert!(ptx.contains(".target sm_90") && ptx.contains("bpf2ptx_map_launches"));
    let r = run(&["dump", "launch_count.bpf.c"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(String::from_utf8_lossy(&r.stdout).contains("launches"));
    let r = run(&["run", "--cpu", "answer.bpf.c"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(
        String::from_utf8_lossy(&r.stdout).starts_with("r0 = 0x2a (42)"),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    let vecadd = repo_root().join("examples/apps/vecadd.ptx");
    let r = run(
        &[
            "inject",
            "launch_count.bpf.c",
            "--into",
            vecadd.to_str().unwrap(),
            "-o",
            "v.ptx",
        ],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let woven = std::fs::read_to_string(dir.path().join("v.ptx")).unwrap();
    assert!(woven.contains("bpf2ptx_map_launches"));
    // The same PTX as from the object `bpf2ptx build` makes of it.
    let r = run(&["build", "launch_count.bpf.c", "-o", "l.o"], dir.path());
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let r = run(
        &[
            "inject",
            "l.o",
            "--into",
            vecadd.to_str().unwrap(),
            "-o",
            "w.ptx",
        ],
        dir.path(),
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(
        woven,
        std::fs::read_to_string(dir.path().join("w.ptx")).unwrap()
    );
}

/// A stand-in for bpftool's vmlinux.h: the same guard and the same kind of content (the
/// UAPI types and enums <linux/bpf.h> also defines), so that including <linux/bpf.h> after
/// it is an error, as with the real one.
const VMLINUX: &str = "#ifndef __VMLINUX_H__\n#define __VMLINUX_H__\n\
typedef unsigned char __u8; typedef unsigned short __u16; typedef unsigned int __u32;\n\
typedef unsigned long long __u64; typedef signed char __s8; typedef short __s16;\n\
typedef int __s32; typedef long long __s64; typedef __u16 __be16; typedef __u32 __be32;\n\
typedef __u32 __wsum; typedef _Bool bool; enum { false = 0, true = 1 };\n\
enum bpf_map_type { BPF_MAP_TYPE_UNSPEC = 0, BPF_MAP_TYPE_HASH = 1, BPF_MAP_TYPE_ARRAY = 2 };\n\
enum { BPF_ANY = 0, BPF_NOEXIST = 1, BPF_EXIST = 2 };\n\
struct bpf_map_def { unsigned int type; };\n\
#endif\n";

fn probe_with(includes: &str) -> String {
    format!(
        "{includes}\
         struct {{ __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 4);\n\
         __type(key, __u32); __type(value, __u64); }} hits SEC(\".maps\");\n\
         SEC(\"gpu/entry/*\") int on_entry(struct bpf2ptx_kernel_ctx *ctx)\n\
         {{ __u32 k = ctx->kernel & 3; __u64 *n = bpf_map_lookup_elem(&hits, &k);\n\
         if (n) __sync_fetch_and_add(n, bpf_get_globaltimer() & 1); return 0; }}\n\
         char LICENSE[] SEC(\"license\") = \"GPL\";\n"
    )
}

/// The header alone, after <linux/bpf.h> and <bpf/bpf_helpers.h> (the old order), and
/// after vmlinux.h with or without <bpf/bpf_helpers.h>; the control case shows the
/// stand-in vmlinux.h really clashes with <linux/bpf.h>, so the guard is what lets the
/// header follow it.
#[test]
fn the_helpers_header_is_self_contained_and_follows_vmlinux_h() {
    if require_clang().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("vmlinux.h"), VMLINUX).unwrap();
    let cases: &[(&str, &str, i32)] = &[
        ("alone", "#include \"bpf2ptx_helpers.h\"\n", 0),
        (
            "after_uapi",
            "#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n#include \"bpf2ptx_helpers.h\"\n",
            0,
        ),
        (
            "after_vmlinux",
            "#include \"vmlinux.h\"\n#include \"bpf2ptx_helpers.h\"\n",
            0,
        ),
        (
            "after_vmlinux_and_libbpf",
            "#include \"vmlinux.h\"\n#include <bpf/bpf_helpers.h>\n#include \"bpf2ptx_helpers.h\"\n",
            0,
        ),
        (
            "twice",
            "#include \"bpf2ptx_helpers.h\"\n#include \"bpf2ptx_helpers.h\"\n",
            0,
        ),
        (
            "control_vmlinux_then_uapi",
            "#include \"vmlinux.h\"\n#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\n",
            2,
        ),
    ];
    for (name, includes, code) in cases {
        let src = format!("{name}.bpf.c");
        std::fs::write(dir.path().join(&src), probe_with(includes)).unwrap();
        let r = run(&["build", &src], dir.path());
        assert_eq!(r.status.code(), Some(*code), "{name}: {}", stderr(&r));
        if *code == 0 {
            let obj: PathBuf = dir.path().join(format!("{name}.bpf.o"));
            assert_eq!(map_sizes(&obj), [("hits".to_string(), 4)], "{name}");
        }
    }
}
