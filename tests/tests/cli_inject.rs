//! `bpf2ptx inject` as users run it: exit codes, outputs written only on success (an old
//! output survives a failure), `--sites`, notes on stderr, containers.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root};
use std::path::Path;
use std::process::{Command, Output};

fn inject(probes: &str, app: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(bpf2ptx_bin())
        .arg("inject")
        .arg(repo_root().join(probes))
        .arg("--into")
        .arg(app)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn success_writes_the_output_and_the_sites() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    let sites = dir.path().join("sites.json");
    let app = repo_root().join("examples/apps/vecadd.ptx");
    let r = inject(
        "examples/probes/mem_hist.bpf.o",
        &app,
        &out,
        &["--sites", sites.to_str().unwrap()],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("// ---- bpf2ptx probes ----"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sites).unwrap()).unwrap();
    // vecadd: two global loads and one global store.
    assert_eq!(json.as_array().unwrap().len(), 3, "{json}");
}

#[test]
fn failures_keep_the_old_output_and_exit_with_the_documented_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    std::fs::write(&out, "old").unwrap();
    let vecadd = repo_root().join("examples/apps/vecadd.ptx");
    let cases: &[(&str, &Path, i32, &str)] = &[
        // A SASS-only fatbin: bad input (2), with the rebuild hint.
        (
            "examples/probes/mem_hist.bpf.o",
            &repo_root().join("tests/inject/fatbin/vecadd.sass.fatbin"),
            2,
            "code=compute_90",
        ),
        // A probe object that does not exist.
        ("examples/probes/nope.bpf.o", &vecadd, 2, "nope.bpf.o"),
        // A program whose section is not an attach point (text input: no section).
        (
            "tests/verifier/atomic_ctx.s",
            &vecadd,
            2,
            "not an attach point",
        ),
    ];
    for (probes, app, code, says) in cases {
        let r = inject(probes, app, &out, &[]);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(*code), "{probes}: {stderr}");
        assert!(stderr.contains(says), "{probes}: {stderr}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "old", "{probes}");
    }
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn rejected_probe_exits_1_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("v.ptx");
    // A memory probe that reads past its 80-byte context.
    let r = inject(
        "tests/inject/probes/bad_ctx.bpf.o",
        &repo_root().join("examples/apps/vecadd.ptx"),
        &out,
        &[],
    );
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("mem-bounds"), "{stderr}");
    assert!(stderr.contains("bad_ctx.bpf.c:21"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn no_match_leaves_the_app_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.ptx");
    let app = repo_root().join("examples/apps/matmul.ptx");
    // kprobe/vecAdd: an empty probe for another kernel. No match is exit 1 unless
    // --allow-no-match (tests/tests/exit_codes.rs).
    let r = inject(
        "tests/inject/probes/empty.bpf.o",
        &app,
        &out,
        &["--allow-no-match"],
    );
    assert!(r.status.success());
    assert!(String::from_utf8_lossy(&r.stderr).contains("output = input"));
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&app).unwrap());
}

/// `bpf2ptx verify` says what a probe was checked as (its attach point and context).
#[test]
fn verify_names_the_attach_point() {
    let r = Command::new(bpf2ptx_bin())
        .arg("verify")
        .arg(repo_root().join("examples/probes/mem_hist.bpf.o"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success());
    assert!(
        out.contains("(memory-access probe of every kernel, 80-byte context): accepted"),
        "{out}"
    );
    let r = Command::new(bpf2ptx_bin())
        .args(["verify", "--format", "json"])
        .arg(repo_root().join("tests/inject/probes/bad_ctx.bpf.o"))
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    let p = &doc["programs"][0];
    assert_eq!(p["verdict"], "rejected");
    assert_eq!(p["attach"]["point"], "mem");
    assert_eq!(p["attach"]["context_bytes"], 80);
    assert_eq!(p["errors"][0]["rule"], "mem-bounds");
}

/// `--rebind-maps`: the lowering `bpf2ptx trace` asks for (specs/abi.md, "Rebinding
/// maps"), here to measure its cost: the ring's reference word and the arrays' address
/// words (`.const`, starting out naming the module's own storage, read by the inlined
/// lookups) are there, and not without the flag.
#[test]
fn rebind_maps_gives_the_trace_lowering() {
    let dir = tempfile::tempdir().unwrap();
    let app = repo_root().join("examples/apps/vecadd.ptx");
    let run = |extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        let r = inject("tests/inject/probes/fuse_ring.bpf.o", &app, &out, extra);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        std::fs::read_to_string(out).unwrap()
    };
    let plain = run(&["--no-fuse"], "plain.ptx");
    let rebound = run(&["--no-fuse", "--rebind-maps"], "rebound.ptx");
    assert!(!plain.contains("bpf2ptx_mapref_"));
    assert!(rebound.contains(
        ".visible .global .align 8 .u64 bpf2ptx_mapref_events = generic(bpf2ptx_map_events);"
    ));
    assert!(!plain.contains("bpf2ptx_mapaddr_"));
    assert!(rebound.contains(
        ".visible .const .align 8 .u64 bpf2ptx_mapaddr_hits = generic(bpf2ptx_mapdata_hits);"
    ));
    assert!(rebound.contains("ld.const.u64 %lkd0, [bpf2ptx_mapaddr_hits];"));
    assert!(!rebound.contains("mov.u64 %lkd0, bpf2ptx_mapdata_"));
}
