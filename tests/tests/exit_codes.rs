//! Exit codes a CI gate can trust (README "Exit codes"): `bpf2ptx verify` of an input with
//! nothing to verify is bad input (2), not a silent pass; `bpf2ptx inject` where no probe
//! matches a kernel fails (1) and says which kernels there are, unless `--allow-no-match`.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const VECADD: &str = "examples/apps/vecadd.ptx";

/// A committed object with every occurrence of `from` replaced by `to` (same length, so
/// the ELF layout stays), written into `dir`.
fn patched(dir: &Path, obj: &str, name: &str, from: &str, to: &str) -> PathBuf {
    assert_eq!(from.len(), to.len());
    let bytes = std::fs::read(repo_root().join(obj)).unwrap();
    let (from, to) = (from.as_bytes(), to.as_bytes());
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let mut hits = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
            hits += 1;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    assert!(hits > 0, "{from:?} not in {obj}");
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

/// mixed.v2.o with its GPU program's section renamed to a host-side one: an object that
/// loads but has no GPU programs.
fn host_only(dir: &Path) -> PathBuf {
    patched(
        dir,
        "tests/corpus/obj/mixed.v2.o",
        "host_only.o",
        "kprobe/_Z6vecAddPKfS0_Pfi",
        "uprobe/_Z6vecAddPKfS0_Pfi",
    )
}

fn verify(file: &Path, extra: &[&str]) -> Output {
    Command::new(bpf2ptx_bin())
        .arg("verify")
        .args(extra)
        .arg(file)
        .output()
        .unwrap()
}

fn inject(probes: &Path, app: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(bpf2ptx_bin())
        .arg("inject")
        .arg(probes)
        .arg("--into")
        .arg(app)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn stderr(r: &Output) -> String {
    String::from_utf8_lossy(&r.stderr).into_owned()
}

#[test]
fn verify_with_no_programs_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let obj = host_only(dir.path());
    let r = verify(&obj, &[]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{err}");
    let says = format!("{}: no programs to verify", obj.display());
    assert!(err.contains(&says), "{err}");
    // The host-side programs are still named as skipped.
    assert!(err.contains("skipped host-side program"), "{err}");
}

#[test]
fn verify_json_with_no_programs_exits_2_with_an_error_field() {
    let dir = tempfile::tempdir().unwrap();
    let obj = host_only(dir.path());
    let r = verify(&obj, &["--format", "json"]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(doc["programs"], serde_json::json!([]), "{doc}");
    let error = doc["error"].as_str().unwrap_or_default();
    assert!(error.ends_with(": no programs to verify"), "{doc}");
}

#[test]
fn inject_with_no_match_exits_1_lists_kernels_and_keeps_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    std::fs::write(&out, "old").unwrap();
    // kprobe/_Z9vectorAddPKfS0_Pfi against _Z6vecAddPKfS0_Pfi: not the same base name,
    // but the closest one.
    let probes = repo_root().join("tests/corpus/obj/counter.v1.o");
    let r = inject(&probes, &repo_root().join(VECADD), &out, &[]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("no probe matches"), "{err}");
    assert!(err.contains("kernels: _Z6vecAddPKfS0_Pfi"), "{err}");
    assert!(err.contains("did you mean _Z6vecAddPKfS0_Pfi"), "{err}");
    assert!(err.contains("--allow-no-match"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn inject_suggests_the_kernel_whose_mangled_parameters_differ() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    // vecAdd(const float*, const float*, float*, unsigned): same base name as the
    // kernel's vecAdd(..., int), another PTX name.
    let probes = patched(
        dir.path(),
        "tests/corpus/obj/launch_stamp.v3.o",
        "unsigned.o",
        "kprobe/_Z6vecAddPKfS0_Pfi",
        "kprobe/_Z6vecAddPKfS0_Pfj",
    );
    let r = inject(&probes, &repo_root().join(VECADD), &out, &[]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("did you mean _Z6vecAddPKfS0_Pfi"), "{err}");
    assert!(err.contains("_Z6vecAddPKfS0_Pfj"), "{err}");
    assert!(!out.exists());
}

#[test]
fn inject_lists_the_first_20_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    let app = dir.path().join("many.ptx");
    let mut ptx = String::from(".version 7.0\n.target sm_70\n.address_size 64\n\n");
    for k in 0..25 {
        ptx += &format!(".visible .entry kernel{k:02}()\n{{\n\tret;\n}}\n\n");
    }
    std::fs::write(&app, ptx).unwrap();
    let probes = repo_root().join("tests/inject/probes/empty.bpf.o"); // kprobe/vecAdd
    let r = inject(&probes, &app, &out, &[]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("kernel00, kernel01"), "{err}");
    assert!(err.contains("kernel19 and 5 more"), "{err}");
    assert!(!err.contains("kernel20"), "{err}");
    assert!(!err.contains("did you mean"), "{err}");
    assert!(!out.exists());
}

#[test]
fn inject_into_an_empty_input_is_no_match() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    let probes = repo_root().join("examples/probes/mem_hist.bpf.o"); // gpu/mem/*
    let r = inject(&probes, Path::new("/dev/null"), &out, &[]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(err.contains("/dev/null has no kernels"), "{err}");
    assert!(!out.exists());
}

#[test]
fn allow_no_match_writes_the_input_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    let app = repo_root().join(VECADD);
    let probes = repo_root().join("tests/corpus/obj/counter.v1.o");
    let r = inject(&probes, &app, &out, &["--allow-no-match"]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(0), "{err}");
    assert!(err.contains("note: no probe matches"), "{err}");
    assert!(err.contains("output = input"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&app).unwrap());
    // An empty input too.
    let empty = dir.path().join("e.ptx");
    let r = inject(
        &probes,
        Path::new("/dev/null"),
        &empty,
        &["--allow-no-match"],
    );
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
}

/// A probe that matches a kernel but has no effects is a match (it is elided, not
/// missing): exit 0, and no "no probe matches" note.
#[test]
fn an_elided_probe_is_not_a_no_match() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    let probes = repo_root().join("tests/inject/probes/empty.bpf.o"); // kprobe/vecAdd
    let r = inject(&probes, &repo_root().join(VECADD), &out, &[]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(0), "{err}");
    assert!(err.contains("has no effects"), "{err}");
    assert!(!err.contains("no probe matches"), "{err}");
}

/// `run --cpu` on an object with a host-side program (`host/launch/*`, which has a launch
/// context only under `bpf2ptx trace`) skips it, says so, and runs the first GPU program:
/// the failure is the interpreter's (a GPU helper it lacks), not a verifier rejection of
/// the host program with an empty context.
#[test]
fn run_cpu_skips_host_side_programs() {
    let obj = repo_root().join("examples/probes/trace_latency.bpf.o");
    let r = Command::new(bpf2ptx_bin())
        .args(["run", "--cpu"])
        .arg(&obj)
        .output()
        .unwrap();
    let err = stderr(&r);
    assert!(
        err.contains("skipped host-side program on_launch (section host/launch/*)"),
        "{err}"
    );
    assert!(!err.contains("rejected"), "{err}");
    assert!(
        err.contains("helper 502 is not available in the interpreter"),
        "{err}"
    );
    assert_eq!(r.status.code(), Some(1), "{err}");
}
