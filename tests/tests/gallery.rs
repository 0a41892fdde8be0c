//! The probe gallery (examples/probes/README.md, issue 17 part 4): every probe in its
//! table builds, verifies, compiles and injects into examples/apps/vecadd.ptx with ONE
//! `bpf2ptx` command from its C source, and ptxas assembles what comes out. The committed
//! object of each gives the same instrumented PTX, so the tools that use the objects
//! (examples/*/run.sh) run what the sources say.
//!
//! Needs clang (`bpf2ptx_tests::require_clang`) and ptxas (`require_ptxas`).

use bpf2ptx_tests::{bpf2ptx_bin, repo_root, require_clang, require_ptxas};
use std::path::Path;
use std::process::Command;

/// The probes of the gallery table, read from its README: the link of each row.
fn gallery() -> Vec<String> {
    let readme = std::fs::read_to_string(repo_root().join("examples/probes/README.md")).unwrap();
    readme
        .lines()
        .filter_map(|l| l.strip_prefix("| [`"))
        .filter_map(|l| l.split_once("`]"))
        .map(|(name, _)| name.to_string())
        .collect()
}

#[test]
fn the_gallery_lists_the_probes_the_issue_asks_for() {
    let g = gallery();
    for p in [
        "launch_count.bpf.c",
        "warp_time.bpf.c",
        "block_time.bpf.c",
        "mem_hist.bpf.c",
        "mem_bytes.bpf.c",
        "blocks_per_sm.bpf.c",
        "launch_latency.bpf.c",
        "warp_divergence.bpf.c",
    ] {
        assert!(
            g.iter().any(|x| x == p),
            "{p} missing from the gallery: {g:?}"
        );
    }
    for p in &g {
        let src = repo_root().join("examples/probes").join(p);
        assert!(src.is_file(), "{p}");
        let obj = src.with_extension("o");
        assert!(
            obj.is_file(),
            "{p}: no committed object (bash examples/probes/build.sh)"
        );
    }
}

/// ptxas here may be older than the nvcc that wrote vecadd.ptx; vecadd uses nothing
/// newer than PTX 8.8, so the check lowers `.version` as tests/tests/inject.rs does.
fn assemble(ptxas: &Path, ptx: &Path, dir: &Path) -> Result<(), String> {
    let mut text = std::fs::read_to_string(ptx).unwrap();
    if let Some(v) = text.lines().find(|l| l.starts_with(".version ")) {
        let ver: f64 = v[".version ".len()..].trim().parse().unwrap_or(0.0);
        if ver > 8.8 {
            text = text.replacen(v, ".version 8.8", 1);
        }
    }
    let src = dir.join(ptx.file_name().unwrap());
    let src = src.with_extension("88.ptx");
    std::fs::write(&src, text).unwrap();
    let out = Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(src.with_extension("cubin"))
        .arg(&src)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn each_gallery_probe_goes_from_c_to_injected_ptx_in_one_command() {
    let Some(_) = require_clang() else {
        return;
    };
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let vecadd = repo_root().join("examples/apps/vecadd.ptx");
    let mut failures = Vec::new();
    for p in gallery() {
        let stem = p.trim_end_matches(".bpf.c");
        let out = dir.path().join(format!("{stem}.ptx"));
        let sites = dir.path().join(format!("{stem}.sites.json"));
        // The one command: clang, verifier, backend, injection.
        let r = Command::new(bpf2ptx_bin())
            .arg("inject")
            .arg(format!("examples/probes/{p}"))
            .arg("--into")
            .arg(&vecadd)
            .arg("-o")
            .arg(&out)
            .arg("--sites")
            .arg(&sites)
            .current_dir(repo_root())
            .output()
            .unwrap();
        if !r.status.success() {
            failures.push(format!("{p}: {}", String::from_utf8_lossy(&r.stderr)));
            continue;
        }
        let n: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&sites).unwrap()).unwrap();
        assert!(
            !n.as_array().unwrap().is_empty(),
            "{p}: attached nowhere in vecadd"
        );
        if let Err(e) = assemble(&ptxas, &out, dir.path()) {
            failures.push(format!("{p}: ptxas: {e}"));
        }
        // The committed object injects to the same PTX, but for -mcpu differences clang
        // makes (v3 committed; this clang may have v4), which only the instructions show.
        let from_obj = dir.path().join(format!("{stem}.obj.ptx"));
        let r = Command::new(bpf2ptx_bin())
            .arg("inject")
            .arg(format!("examples/probes/{stem}.bpf.o"))
            .arg("--into")
            .arg(&vecadd)
            .arg("-o")
            .arg(&from_obj)
            .current_dir(repo_root())
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "{stem}.bpf.o: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let maps = |f: &Path| -> Vec<String> {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|l| l.contains(".global") && l.contains("bpf2ptx_map"))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(
            maps(&out),
            maps(&from_obj),
            "{p}: the maps differ from the committed object's"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `bpf2ptx build` on each: the verified object, as the gallery README shows it.
#[test]
fn each_gallery_probe_builds() {
    if require_clang().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for p in gallery() {
        let out = dir.path().join(p.replace(".c", ".o"));
        let r = Command::new(bpf2ptx_bin())
            .arg("build")
            .arg(format!("examples/probes/{p}"))
            .arg("-o")
            .arg(&out)
            .current_dir(repo_root())
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "{p}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        let obj = bpf2ptx::load_path(&out).unwrap();
        let committed = bpf2ptx::load_path(
            &repo_root()
                .join("examples/probes")
                .join(p.replace(".c", ".o")),
        )
        .unwrap();
        let names = |o: &bpf2ptx_compiler::program::Object| -> Vec<(String, String)> {
            o.programs
                .iter()
                .map(|p| (p.name.clone(), p.section.clone()))
                .collect()
        };
        assert_eq!(names(&obj), names(&committed), "{p}");
    }
}
