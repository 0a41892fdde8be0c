//! `bpf2ptx triton` (cli/src/triton.rs) against Triton's dump and override layout
//! (`<dir>/<hash>/<kernel>.ptx`, Triton 3.x's `compile()`), without Triton: file mode over
//! a dump directory made by hand, and run mode over a stand-in for a Triton program (a
//! shell script that does what Triton does with TRITON_KERNEL_DUMP, TRITON_KERNEL_OVERRIDE
//! and TRITON_CACHE_DIR), including one that ignores the override like an older Triton.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root, require_ptxas};
use std::path::Path;
use std::process::Command;

const HASH: &str = "4f3c2a0e9b8d7c6b5a4f3c2a0e9b8d7c6b5a4f3c2a0e9b8d7c6b5a4f3c2a0e9b";

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A dump directory with the Hopper fixture as one kernel file and vecadd as another.
fn dump_dir(root: &Path) -> std::path::PathBuf {
    let dump = root.join("dump");
    let hopper =
        std::fs::read_to_string(repo_root().join("tests/inject/hand/hopper_memory.ptx")).unwrap();
    write(&dump.join(HASH).join("hopper_copies.ptx"), &hopper);
    write(&dump.join(HASH).join("hopper_copies.ttgir"), "// not PTX");
    let vecadd =
        std::fs::read_to_string(repo_root().join("tests/inject/ptx/vecadd.sm70.clang.ptx"))
            .unwrap();
    write(&dump.join("0123abcd").join("vecadd.ptx"), &vecadd);
    dump
}

fn triton(args: &[&str]) -> std::process::Output {
    Command::new(bpf2ptx_bin())
        .arg("triton")
        .args(args)
        .current_dir(repo_root())
        .output()
        .unwrap()
}

#[test]
fn file_mode_writes_the_matched_kernels_where_triton_looks() {
    let d = tempfile::tempdir().unwrap();
    let dump = dump_dir(d.path());
    let ov = d.path().join("override");
    let r = triton(&[
        "examples/probes/tensor_core_count.bpf.o",
        "--dump-dir",
        dump.to_str().unwrap(),
        "--override-dir",
        ov.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    let out = ov.join(HASH).join("hopper_copies.ptx");
    let text = std::fs::read_to_string(&out).expect("the instrumented kernel");
    assert!(text.contains("// ---- bpf2ptx probes ----"));
    // vecadd has no tensor-core instruction but matches `*`: no sites, so no override
    // (the manifest lists it as left to Triton); the .ttgir is not PTX.
    assert!(!ov.join("0123abcd/vecadd.ptx").exists());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(ov.join("bpf2ptx-triton.json")).unwrap())
            .unwrap();
    let inst = manifest["instrumented"].as_array().unwrap();
    let hopper = inst.iter().find(|k| k["file"] == "hopper_copies").unwrap();
    assert!(hopper["sites"].as_u64().unwrap() >= 3, "{manifest}");
    assert_eq!(inst.len(), 1, "{manifest}");
    assert_eq!(manifest["skipped"][0], "0123abcd/vecadd");
    assert!(manifest["maps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m == "tc_per_warp"));
    assert!(err.contains("TRITON_KERNEL_OVERRIDE=1"), "{err}");
    if let Some(ptxas) = require_ptxas() {
        let o = Command::new(ptxas)
            .args(["-arch=sm_90a"])
            .arg(&out)
            .arg("-o")
            .arg(d.path().join("k.cubin"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // Again into the same directory: its own files are replaced, not refused.
    let r = triton(&[
        "tests/inject/probes/attach_all.bpf.o",
        "--dump-dir",
        dump.to_str().unwrap(),
        "--override-dir",
        ov.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
}

#[test]
fn file_mode_errors_are_clear() {
    let d = tempfile::tempdir().unwrap();
    let dump = dump_dir(d.path());
    // A foreign override directory.
    let foreign = d.path().join("foreign");
    write(&foreign.join("x.ptx"), "mine");
    let r = triton(&[
        "examples/probes/mem_traffic.bpf.o",
        "--dump-dir",
        dump.to_str().unwrap(),
        "--override-dir",
        foreign.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("not written by bpf2ptx triton"));
    // No probe matches: exit 1, the kernels listed.
    let r = triton(&[
        "tests/inject/probes/empty.bpf.o",
        "--dump-dir",
        dump.to_str().unwrap(),
        "--override-dir",
        d.path().join("ov2").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("hopper_copies") && err.contains("vecadd"),
        "{err}"
    );
    // An empty dump directory: what Triton needs.
    let empty = d.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let r = triton(&[
        "examples/probes/mem_traffic.bpf.o",
        "--dump-dir",
        empty.to_str().unwrap(),
        "--override-dir",
        d.path().join("ov3").to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("Triton 3.0"));
    // Neither mode.
    let r = triton(&["examples/probes/mem_traffic.bpf.o"]);
    assert_eq!(r.status.code(), Some(2));
}

/// A stand-in for a Triton program: dumps its kernel's PTX, takes an override when
/// `override` is true, and keeps the PTX it "assembled" in its cache, as Triton does.
fn fake_triton(dir: &Path, honours_override: bool) -> std::path::PathBuf {
    let ptx = repo_root().join("tests/inject/hand/hopper_memory.ptx");
    let script = dir.join(if honours_override { "app.sh" } else { "old.sh" });
    let take = if honours_override {
        r#"if [ "$TRITON_KERNEL_OVERRIDE" = 1 ] && [ -f "$TRITON_OVERRIDE_DIR/$H/k.ptx" ]; then src="$TRITON_OVERRIDE_DIR/$H/k.ptx"; fi"#
    } else {
        ""
    };
    write(
        &script,
        &format!(
            "#!/bin/sh\nset -e\nH={HASH}\nsrc={}\n{take}\n\
             if [ \"$TRITON_KERNEL_DUMP\" = 1 ]; then mkdir -p \"$TRITON_DUMP_DIR/$H\"; cp {} \"$TRITON_DUMP_DIR/$H/k.ptx\"; fi\n\
             mkdir -p \"$TRITON_CACHE_DIR/key\"; cp \"$src\" \"$TRITON_CACHE_DIR/key/k.ptx\"\n\
             exit ${{APP_EXIT:-0}}\n",
            ptx.display(),
            ptx.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn run_mode_checks_that_triton_used_the_instrumented_ptx() {
    let d = tempfile::tempdir().unwrap();
    let app = fake_triton(d.path(), true);
    let work = d.path().join("work");
    let r = triton(&[
        "examples/probes/tensor_core_count.bpf.o",
        "--work-dir",
        work.to_str().unwrap(),
        "--",
        app.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    let used = std::fs::read_to_string(work.join("cache/key/k.ptx")).unwrap();
    assert!(used.contains("// ---- bpf2ptx probes ----"));
    // An older Triton takes no override: a clear error, exit 2.
    let old = fake_triton(d.path(), false);
    let r = triton(&[
        "examples/probes/tensor_core_count.bpf.o",
        "--work-dir",
        work.to_str().unwrap(),
        "--",
        old.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("Triton 3.0 or newer"), "{err}");
}
