//! Every command README.md shows in a `sh` block runs, as written, from the repository
//! root (issue 17: "every command it shows runs in a test"). `cargo run --release -p
//! bpf2ptx --` is this build's `bpf2ptx`; the commands run in a scratch folder that sees the
//! repository's `examples/` and `tests/` (so their outputs do not land in the checkout).
//! `bash tests/run.sh` and `bash .ci/run` are the test runners themselves: CI runs them.
//! A command this test does not know how to run fails it, so a new README command
//! cannot go unchecked.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root, require_clang};
use std::process::Command;

/// The commands of README.md's `sh` blocks: continuation lines joined, comments dropped,
/// `a && b` split.
fn readme_commands() -> Vec<String> {
    let text = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut line = String::new();
    for l in text.lines() {
        if !in_sh {
            in_sh = l.trim() == "```sh";
            continue;
        }
        if l.trim() == "```" {
            in_sh = false;
            continue;
        }
        let l = l.trim();
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        match l.strip_suffix('\\') {
            Some(head) => {
                line.push_str(head);
                line.push(' ');
            }
            None => {
                line.push_str(l);
                out.extend(
                    line.split("&&")
                        .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" ")),
                );
                line.clear();
            }
        }
    }
    out
}

/// The test runners, which CI itself runs.
const RUNNERS: &[&str] = &["bash tests/run.sh", "bash .ci/run"];

#[test]
fn every_readme_command_runs() {
    let cmds = readme_commands();
    assert!(
        cmds.iter().any(|c| c.contains(" build ")),
        "README shows `bpf2ptx build`: {cmds:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    for d in ["examples", "tests"] {
        std::os::unix::fs::symlink(repo_root().join(d), dir.path().join(d)).unwrap();
    }
    let mut ran = 0;
    for cmd in &cmds {
        if RUNNERS.contains(&cmd.as_str()) || cmd.starts_with("echo ") {
            continue;
        }
        let Some(args) = cmd.strip_prefix("cargo run --release -p bpf2ptx -- ") else {
            panic!("README command not covered by tests/tests/readme.rs: `{cmd}`");
        };
        let args: Vec<&str> = args.split_whitespace().collect();
        let needs_clang = args.first() == Some(&"build") || args.iter().any(|a| a.ends_with(".c"));
        if needs_clang && require_clang().is_none() {
            continue;
        }
        let r = Command::new(bpf2ptx_bin())
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "`{cmd}`: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        // Each output it names was written.
        for w in args.windows(2) {
            if matches!(w[0], "-o" | "--sites") {
                assert!(dir.path().join(w[1]).is_file(), "`{cmd}` wrote no {}", w[1]);
            }
        }
        ran += 1;
    }
    assert!(ran >= 2, "ran {ran} of {cmds:?}");
}
