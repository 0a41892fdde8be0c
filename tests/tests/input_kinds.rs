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

/// A corpus object with `patch` applied to its bytes, loaded: the error text.
fn load_patched(patch: impl Fn(&mut Vec<u8>)) -> String {
    let mut b = std::fs::read(repo_root().join("tests/corpus/obj/launch_stamp.v3.o")).unwrap();
    patch(&mut b);
    match bpf2ptx::load_bytes("p.o", &b) {
        Ok(_) => String::from("loaded"),
        Err(e) => e.to_string(),
    }
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// Byte offset of the header of the first section of type `ty`.
fn section_of_type(b: &[u8], ty: u32) -> usize {
    let (shoff, shnum) = (u64_at(b, 0x28) as usize, u16_at(b, 0x3c) as usize);
    (0..shnum)
        .map(|k| shoff + k * 64)
        .find(|&h| u32::from_le_bytes(b[h + 4..h + 8].try_into().unwrap()) == ty)
        .expect("section of that type")
}

#[test]
fn every_elf_header_field_that_locates_something_is_checked() {
    assert_eq!(load_patched(|_| {}), "loaded");
    let shentsize = load_patched(|b| b[0x3a..0x3c].copy_from_slice(&1u16.to_le_bytes()));
    assert!(
        shentsize.contains("e_shentsize is 1, not 64"),
        "{shentsize}"
    );
    let shstrndx = load_patched(|b| {
        let n = u16_at(b, 0x3c);
        b[0x3e..0x40].copy_from_slice(&(n + 5).to_le_bytes());
    });
    assert!(shstrndx.contains("e_shstrndx is"), "{shstrndx}");
    assert!(!shstrndx.contains("relocation"), "{shstrndx}");
    let link = load_patched(|b| {
        let h = section_of_type(b, 9); // SHT_REL
        b[h + 0x28..h + 0x2c].copy_from_slice(&999u32.to_le_bytes());
    });
    assert!(link.contains("sh_link (its symbol table) is 999"), "{link}");
    let name = load_patched(|b| {
        let h = section_of_type(b, 2); // SHT_SYMTAB
        let (off, size) = (u64_at(b, h + 0x18) as usize, u64_at(b, h + 0x20) as usize);
        // The last symbol (a named one: programs and maps come last in clang's order).
        let at = off + size - 24;
        b[at..at + 4].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    });
    assert!(
        name.contains("its name is at offset 2147418112 of .strtab"),
        "{name}"
    );
}
