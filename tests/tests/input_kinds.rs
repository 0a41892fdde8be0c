//! What a file given as a BPF input looks like is said before it is read as something
//! else, and an error repeats at most a line of the input (issue 13, D10 and D11).

use bpf2ptx_tests::{bpf2ptx_bin, repo_root};
use std::process::Command;

/// `bpf2ptx verify` of a file with `bytes`: (exit code, stderr).
fn verify(name: &str, bytes: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let o = Command::new(bpf2ptx_bin())
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn files_that_are_not_bpf_are_named_for_what_they_are() {
    let ptx = std::fs::read(repo_root().join("examples/apps/vecadd.ptx")).unwrap();
    let cases: &[(&str, &[u8], &str)] = &[
        ("probe.o", &ptx, "this is PTX (`.version` on line"),
        ("one.o", b"\0", "binary data (byte 0x00 at offset 0)"),
        (
            "ctl.o",
            b"r0 = 0\x01\nexit\n",
            "binary data (byte 0x01 at offset 6)",
        ),
        ("empty.o", b"", "the file is empty"),
        ("blank.o", b"\n \n", "the file is empty"),
    ];
    for (name, bytes, want) in cases {
        let (code, err) = verify(name, bytes);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(
            err.contains("bpf2ptx reads clang-built BPF ELF objects"),
            "{name}: {err}"
        );
    }
    // Assembly text still reads as assembly.
    let (code, err) = verify("ok.s", b"r0 = 0\nexit\n");
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn an_error_repeats_at_most_a_line_of_a_huge_token() {
    let huge = "x".repeat(1 << 20);
    for text in [
        format!("{huge}\nexit\n"),
        format!("r0 = {huge}\nexit\n"),
        format!("goto {huge}\nexit\n"),
        format!(".map m {huge} 4 8 1\nr0 = 0\nexit\n"),
        format!(".map m array 4 8 {huge}\nr0 = 0\nexit\n"),
    ] {
        let (code, err) = verify("huge.s", text.as_bytes());
        assert_eq!(code, Some(2), "{}", &err[..err.len().min(300)]);
        assert!(err.len() < 1000, "{} bytes of message", err.len());
        assert!(err.contains(" bytes)"), "{err}");
    }
}
