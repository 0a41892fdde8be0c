//! `bpf_snprintf` (helper 165) end to end on the cases of `tests/snprintf/*.s`: text
//! assembly programs that format into their input memory (`# entry: mem N`, r1) and return
//! the helper's result, with the expectation written next to them:
//!
//! - `# r0: N`: the helper's result (the untruncated length plus 1);
//! - `# out: TEXT`: the bytes before the NUL (`\xHH` escapes), the rest of the memory 0.
//!
//! The expectations were written with C's printf semantics (Python's `%` operator), not
//! with bpf2ptx's formatter. Each case must verify, give its expectation in the reference
//! interpreter (`bpf2ptx run --cpu`), and compile to PTX that ptxas accepts when it is
//! installed. Where bpf(2) is usable (root, gcc, libbpf), the Linux kernel runs each case
//! through `BPF_PROG_TEST_RUN` as a syscall program (its context is the memory) and must
//! print the same bytes and return the same value (`kernel_formats_the_same`). The GPU
//! runs them with `bpf2ptx run` (tests/gpu/README.md).

use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::interp::{self, Interp};
use bpf2ptx_compiler::isa;
use bpf2ptx_tests::kernel::build_testrun;
use bpf2ptx_tests::{files_with_ext, repo_root};
use bpf2ptx_verifier::{verify_with, Entry, Options, Verified};
use std::process::Command;

struct Case {
    name: String,
    obj: bpf2ptx_compiler::program::Object,
    mem: usize,
    r0: u64,
    out: Vec<u8>,
}

/// `\xHH` escapes of `# out:` back to bytes.
fn unescape(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') {
            let hex = std::str::from_utf8(&b[i + 2..i + 4]).expect("escape");
            out.push(u8::from_str_radix(hex, 16).expect("hex escape"));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn cases() -> Vec<Case> {
    let files = files_with_ext(&repo_root().join("tests/snprintf"), "s");
    assert!(files.len() >= 7, "the cases of tests/snprintf");
    files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let src = std::fs::read_to_string(f).unwrap();
            let field = |key: &str| {
                src.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .unwrap_or_else(|| panic!("{name}: no `{key}` line"))
                    .to_string()
            };
            Case {
                obj: bpf2ptx::load_bytes(&name, src.as_bytes())
                    .unwrap_or_else(|e| panic!("{name}: {e}")),
                mem: field("# entry: mem ").trim().parse().expect("mem"),
                r0: field("# r0: ").trim().parse().expect("r0"),
                out: unescape(field("# out: ").trim_end_matches('\n')),
                name,
            }
        })
        .collect()
}

/// The memory a case must leave: its text, then zeros.
fn expected_mem(c: &Case) -> Vec<u8> {
    let mut m = c.out.clone();
    m.resize(c.mem, 0);
    m
}

#[test]
fn cases_verify_and_interpret_as_expected() {
    for c in cases() {
        verify_with(&c.obj, 0, &Entry::conformance(c.mem), &Options::default())
            .unwrap_or_else(|d| panic!("{}: rejected: {d:?}", c.name));
        let mut mem = vec![0u8; c.mem];
        let r0 = Interp::new(&c.obj, interp::Options::default())
            .run(0, &mut mem)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(r0, c.r0, "{}: r0", c.name);
        assert_eq!(
            String::from_utf8_lossy(&mem),
            String::from_utf8_lossy(&expected_mem(&c)),
            "{}: memory",
            c.name
        );
    }
}

/// Each case compiles (with its memory as the entry, as `bpf2ptx run` compiles it), and
/// ptxas (when installed) accepts the PTX.
#[test]
fn cases_compile_and_assemble() {
    let dir = tempfile::tempdir().unwrap();
    let ptxas = bpf2ptx_tests::ptxas();
    for c in cases() {
        let v = Verified::new(&c.obj, |_| Entry::conformance(c.mem))
            .unwrap_or_else(|e| panic!("{}: {e:?}", c.name));
        let opts = ptx::Options {
            target: "sm_90".into(),
            entry: true,
            ..Default::default()
        };
        let text = ptx::write_string(&v, &opts).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert!(text.contains("call.uni bpf2ptx_fmt_end"), "{}", c.name);
        let Some(ptxas) = &ptxas else { continue };
        let path = dir.path().join("x.ptx");
        std::fs::write(&path, text).unwrap();
        let out = Command::new(ptxas)
            .args(["-arch=sm_90", "-o"])
            .arg(dir.path().join("x.cubin"))
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: ptxas: {}",
            c.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Linux formats each case the same (skipped, with the reason, where bpf(2) is not
/// usable here).
#[test]
fn kernel_formats_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let bin = match build_testrun(dir.path()) {
        Ok(b) => b,
        Err(why) => {
            eprintln!("kernel_formats_the_same: skipped: {why}");
            return;
        }
    };
    for c in cases() {
        let prog = dir.path().join("prog.bin");
        let mem = dir.path().join("mem.bin");
        std::fs::write(&prog, isa::encode(&c.obj.programs[0].insns)).unwrap();
        std::fs::write(&mem, vec![0u8; c.mem]).unwrap();
        let mut cmd = Command::new(&bin);
        cmd.args(["--type", "syscall"]);
        for m in &c.obj.maps {
            let init: String = m
                .init
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            cmd.args([
                "--map",
                &format!(
                    "{}:{}:{}:{}:{:#x}:{init}",
                    m.map_type, m.key_size, m.value_size, m.max_entries, m.flags
                ),
            ]);
        }
        let out = cmd.arg(&prog).arg(&mem).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let field = |key: &str| {
            stdout
                .lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
                .map(str::to_string)
        };
        let retval = field("retval")
            .unwrap_or_else(|| panic!("{}: the kernel did not run it: {stdout}", c.name));
        assert_eq!(
            retval.parse::<u64>().unwrap(),
            c.r0,
            "{}: kernel r0",
            c.name
        );
        let kmem: Vec<u8> = field("mem")
            .map(|h| {
                (0..h.len() / 2)
                    .map(|k| u8::from_str_radix(&h[2 * k..2 * k + 2], 16).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            String::from_utf8_lossy(&kmem),
            String::from_utf8_lossy(&expected_mem(&c)),
            "{}: kernel memory",
            c.name
        );
    }
}
