//! Bad input through the real `bpf2ptx dump` binary: every malformed file ends in exit code
//! 2 and one `error: ` message that names the file and where the problem is (section and
//! `+0x` offset, `insn N` or `line N`) and why — never a panic.
//!
//! Each case patches a committed corpus object (or writes a small text) in memory; the
//! patch sites are found by parsing the ELF section headers, symbols and relocations here
//! (a few lines of hand parsing, so the test needs no ELF crate). The table [`CASES`] holds
//! one row per case: the base input, the patch, and the substrings the message must hold.

use bpf2ptx_tests::{bpf2ptx_bin, conformance_dir, repo_root};
use std::path::PathBuf;
use std::process::Command;

/// Where the patched input comes from.
#[derive(Clone, Copy)]
enum Base {
    /// A committed object in `tests/corpus/obj`.
    Obj(&'static str),
    /// A committed object of the odd-object corpus, `tests/corpus/odd/obj`.
    Odd(&'static str),
    /// A bpf_conformance `.data` file.
    Conformance(&'static str),
    /// Literal bytes.
    Text(&'static str),
}

/// One case: the base input, how to break it, the name of the file written, and what the
/// error message must contain (besides `error: ` and the file name, which every case
/// checks).
struct Case {
    name: &'static str,
    base: Base,
    patch: fn(&mut Vec<u8>),
    expect: &'static [&'static str],
}

const KPROBE: &str = "kprobe/_Z9vectorAddPKfS0_Pfi";

const CASES: &[Case] = &[
    Case {
        name: "truncated_header.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| b.truncate(40),
        expect: &["offset 0x0", "truncated ELF header", "40 bytes"],
    },
    Case {
        // Cut inside .BTF: the section header table (at the end) is gone with it.
        name: "truncated_mid_section.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF");
            b.truncate(s.offset + s.size / 2);
        },
        expect: &[
            "truncated",
            "section header table",
            "past the end of the file",
        ],
    },
    Case {
        // The section table is intact but .BTF claims more bytes than the file has.
        name: "section_past_eof.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF");
            put_u64(b, s.header + 32, 0x10_0000);
        },
        expect: &[
            "truncated",
            "section .BTF #",
            "at file offset 0x",
            "past the end of the file",
        ],
    },
    Case {
        name: "x86_64.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| put_u16(b, 18, 62),
        expect: &["offset 0x0", "e_machine is 62", "EM_BPF"],
    },
    Case {
        name: "elf32.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| b[4] = 1,
        expect: &["offset 0x0", "32-bit"],
    },
    Case {
        name: "big_endian.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| b[5] = 2,
        expect: &["offset 0x0", "big-endian"],
    },
    Case {
        name: "executable.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| put_u16(b, 16, 2),
        expect: &["offset 0x0", "not a relocatable object"],
    },
    Case {
        name: "reloc_missing_symbol.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let r = rel_entry(b, KPROBE, 0);
            put_u32(b, r + 12, 0xffff); // r_info high half: the symbol index
        },
        expect: &[
            "section kprobe/_Z9vectorAddPKfS0_Pfi+0x20",
            "missing symbol #65535",
        ],
    },
    Case {
        // Point the first map relocation at the second slot of its ld_imm64.
        name: "reloc_mid_insn.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let r = rel_entry(b, KPROBE, 0);
            let off = get_u64(b, r);
            put_u64(b, r, off + 8);
        },
        expect: &[
            "section kprobe/_Z9vectorAddPKfS0_Pfi+0x28",
            "not at the start of an instruction",
        ],
    },
    Case {
        name: "reloc_unknown_type.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let r = rel_entry(b, KPROBE, 0);
            put_u32(b, r + 8, 99); // r_info low half: the type
        },
        expect: &[
            "section kprobe/_Z9vectorAddPKfS0_Pfi+0x20",
            "relocation type 99",
        ],
    },
    Case {
        // Make the relocated symbol (`counters`) undefined, as an extern would be.
        name: "reloc_undefined_symbol.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let r = rel_entry(b, KPROBE, 0);
            let sym = get_u32(b, r + 12) as usize;
            let symtab = section(b, ".symtab");
            put_u16(b, symtab.offset + sym * 24 + 6, 0); // st_shndx = SHN_UNDEF
        },
        expect: &[
            "section kprobe/_Z9vectorAddPKfS0_Pfi+0x20",
            "`counters`",
            "not defined",
        ],
    },
    Case {
        name: "unknown_opcode.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, KPROBE);
            b[s.offset + 8] = 0xff; // insn 1
        },
        expect: &[
            "section kprobe/_Z9vectorAddPKfS0_Pfi+0x8",
            "insn 1",
            "unknown opcode 0xff",
        ],
    },
    Case {
        // insn 0 is `r1 = 0` (0xb7): give it a source register, which MOV_K must not have.
        name: "reserved_field.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, KPROBE);
            assert_eq!(b[s.offset], 0xb7, "counter.v1.o insn 0 changed");
            b[s.offset + 1] |= 0x30;
        },
        expect: &["section kprobe/_Z9vectorAddPKfS0_Pfi+0x0", "insn 0", "0xb7"],
    },
    Case {
        name: "code_not_multiple_of_8.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, KPROBE);
            put_u64(b, s.header + 32, s.size as u64 - 4);
        },
        expect: &["section kprobe/_Z9vectorAddPKfS0_Pfi", "multiple of 8"],
    },
    Case {
        name: "btf_bad_magic.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF");
            put_u16(b, s.offset, 0x1234);
        },
        expect: &[".BTF+0x0", "bad magic 0x1234"],
    },
    Case {
        // Shorten the type section by 4 bytes: the last type record is cut.
        name: "btf_types_truncated.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF");
            let type_len = get_u32(b, s.offset + 12);
            put_u32(b, s.offset + 12, type_len - 4);
        },
        expect: &[".BTF+0x", "truncated"],
    },
    Case {
        name: "btf_ext_bad_magic.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF.ext");
            put_u16(b, s.offset, 0x1234);
        },
        expect: &[".BTF.ext+0x0", "bad magic 0x1234"],
    },
    Case {
        // `thread_calls` is `__uint(type, 1502)`: BTF encodes it as `int (*type)[1502]`,
        // an ARRAY whose nelems (after elem type 2 and index type 4) we rewrite.
        name: "unknown_map_type.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF");
            let pat: Vec<u8> = [2u32, 4, 1502]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            let at = find_unique(&b[s.offset..s.offset + s.size], &pat);
            put_u32(b, s.offset + at + 8, 9999);
        },
        expect: &[
            "section .maps",
            "map `thread_calls`",
            "unknown map type 9999",
        ],
    },
    Case {
        // The same ARRAY's element type points past the last type.
        name: "btf_bad_type_ref.o",
        base: Base::Obj("counter.v1.o"),
        patch: |b| {
            let s = section(b, ".BTF");
            let pat: Vec<u8> = [2u32, 4, 1502]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
            let at = find_unique(&b[s.offset..s.offset + s.size], &pat);
            put_u32(b, s.offset + at, 9999);
        },
        expect: &[".BTF+0x", "type [9999]"],
    },
    Case {
        // The first legacy map definition's `type` field.
        name: "legacy_unknown_map_type.o",
        base: Base::Obj("legacy_maps.v1.o"),
        patch: |b| {
            let s = section(b, "maps");
            put_u32(b, s.offset, 9999);
        },
        expect: &["section maps", "unknown map type 9999"],
    },
    Case {
        // A pc-relative call in .text (to a static function) moved one slot into its
        // callee's body.
        name: "call_mid_function.o",
        base: Base::Obj("subprog.v1.o"),
        patch: |b| {
            let s = section(b, ".text");
            let at = (0..s.size / 8)
                .map(|i| s.offset + 8 * i)
                .find(|&p| b[p] == 0x85 && b[p + 1] >> 4 == 1 && get_u32(b, p + 4) != u32::MAX)
                .expect("subprog.v1.o has a pc-relative local call in .text");
            let imm = get_u32(b, at + 4);
            put_u32(b, at + 4, imm + 1);
        },
        expect: &["section .text+0x", "not the start of a function"],
    },
    // iproute2's struct bpf_elf_map (36 bytes; map_inner at 0, map_outer at 36): the
    // fields after flags are id 5, pinning 6, inner_id 7, inner_idx 8.
    Case {
        name: "iproute2_inner_id_names_no_map.o",
        base: Base::Odd("iproute2_map_in_map.o"),
        patch: |b| {
            let s = section(b, "maps");
            assert_eq!(get_u32(b, s.offset + 36 + 28), 42, "map_outer's inner_id");
            put_u32(b, s.offset + 36 + 28, 43);
        },
        expect: &["section maps", "`map_outer`", "inner_id 43 names no map"],
    },
    Case {
        name: "iproute2_map_in_map_without_inner.o",
        base: Base::Odd("iproute2_map_in_map.o"),
        patch: |b| {
            let s = section(b, "maps");
            put_u32(b, s.offset + 36 + 28, 0);
        },
        expect: &[
            "section maps",
            "`map_outer` is a map of maps (array_of_maps) without an inner map",
            "inner_id",
        ],
    },
    Case {
        name: "iproute2_inner_id_on_plain_map.o",
        base: Base::Odd("iproute2_map_in_map.o"),
        patch: |b| {
            let s = section(b, "maps");
            put_u32(b, s.offset + 36, 2); // map_outer: type array
        },
        expect: &[
            "`map_outer`",
            "inner_id 42 on a map that is not a map of maps",
        ],
    },
    Case {
        name: "iproute2_inner_idx_past_entries.o",
        base: Base::Odd("iproute2_map_in_map.o"),
        patch: |b| {
            let s = section(b, "maps");
            put_u32(b, s.offset + 32, 5); // map_inner's inner_idx
        },
        expect: &["`map_outer`", "slot 5 (inner_idx), past its 1 entries"],
    },
    Case {
        // outer_arr's `.values = { [0] = &inner_a, ... }` relocation moved before `values`.
        name: "map_slot_outside_values.o",
        base: Base::Odd("btf_map_in_map.o"),
        patch: |b| {
            let r = rel_entry(b, ".maps", 0);
            put_u64(b, r, 0x40);
        },
        expect: &[
            "section .rel.maps+0x40",
            "`inner_a`",
            "not an entry of its `values`",
        ],
    },
    Case {
        // ... and against a program instead of a map.
        name: "map_slot_not_a_map.o",
        base: Base::Odd("btf_map_in_map.o"),
        patch: |b| {
            let r = rel_entry(b, ".maps", 0);
            put_u32(b, r + 12, 17); // symbol #17: lookup_outer
        },
        expect: &[
            "section .rel.maps+0x58",
            "`lookup_outer`",
            "not a map of .maps",
        ],
    },
    Case {
        // The call to the kfunc bpf_iter_num_new relocated as an ld_imm64 would be.
        name: "kfunc_reloc_wrong_type.o",
        base: Base::Odd("ksym.o"),
        patch: |b| {
            let r = rel_entry(b, "gpu/entry/vecadd", 0);
            put_u32(b, r + 8, 1);
        },
        expect: &[
            "section gpu/entry/vecadd+0x48",
            "relocation type 1",
            "`bpf_iter_num_new`, a kfunc",
        ],
    },
    Case {
        // A pc-relative call in a section without function symbols that lands past it.
        name: "nosym_call_out_of_section.o",
        base: Base::Odd("nosym.o"),
        patch: |b| {
            let s = section(b, "gpu/entry/vecadd");
            let at = s.offset + 11 * 8;
            assert_eq!(
                &b[at..at + 2],
                &[0x85, 0x10],
                "nosym.o insn 11 is `call pc+1`"
            );
            put_u32(b, at + 4, 40);
        },
        expect: &[
            "section gpu/entry/vecadd+0x58",
            "not the start of a function",
        ],
    },
    Case {
        name: "unknown_section.data",
        base: Base::Conformance("add.data"),
        patch: |b| b.extend_from_slice(b"-- foo\n1\n"),
        expect: &["line ", "unknown section `-- foo`"],
    },
    Case {
        name: "bad_raw.data",
        base: Base::Conformance("add.data"),
        patch: |b| b.extend_from_slice(b"-- raw\nnot-a-word\n"),
        expect: &["section raw, line ", "`not-a-word`"],
    },
    Case {
        name: "bad_register.s",
        base: Base::Text("r0 = 1\nr11 = 2\nexit\n"),
        patch: |_| {},
        expect: &["line 2", "invalid register", "r11"],
    },
    Case {
        name: "unknown_mnemonic.s",
        base: Base::Text("mov %r0, 1\nfrobnicate %r1\nexit\n"),
        patch: |_| {},
        expect: &["line 2", "unknown instruction", "frobnicate"],
    },
    Case {
        // `call pc+2` from slot 1 lands on slot 4, the second slot of the ld_imm64.
        name: "call_mid_insn.s",
        base: Base::Text("r0 = 0\ncall pc+2\nexit\nr1 = 7 ll\nexit\n"),
        patch: |_| {},
        expect: &["insn 1", "does not target the start of an instruction"],
    },
    Case {
        name: "empty.s",
        base: Base::Text(""),
        patch: |_| {},
        expect: &["the file is empty"],
    },
    Case {
        name: "binary.bin",
        base: Base::Text("\u{0}\u{1}\u{2}"),
        patch: |b| b[1] = 0xff,
        expect: &["neither an ELF object nor text", "byte 1"],
    },
];

#[test]
fn bad_inputs_exit_2_with_located_message() {
    let bin = bpf2ptx_bin();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    let mut ran = 0;
    for case in CASES {
        let mut bytes = match case.base {
            Base::Obj(f) => std::fs::read(repo_root().join("tests/corpus/obj").join(f))
                .unwrap_or_else(|e| panic!("reading corpus object {f}: {e}")),
            Base::Odd(f) => std::fs::read(repo_root().join("tests/corpus/odd/obj").join(f))
                .unwrap_or_else(|e| panic!("reading odd corpus object {f}: {e}")),
            Base::Conformance(f) => match conformance_dir() {
                Some(d) => std::fs::read(d.join("tests").join(f))
                    .unwrap_or_else(|e| panic!("reading conformance file {f}: {e}")),
                None => {
                    eprintln!("{}: skipped, no bpf_conformance suite found", case.name);
                    continue;
                }
            },
            Base::Text(t) => t.as_bytes().to_vec(),
        };
        (case.patch)(&mut bytes);
        let path = dir.path().join(case.name);
        std::fs::write(&path, &bytes).expect("write case");
        let out = Command::new(&bin)
            .arg("dump")
            .arg(&path)
            .output()
            .expect("run bpf2ptx");
        ran += 1;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Shown with `--nocapture`, to review the wording of every message.
        println!("{:<28} {}", case.name, stderr.trim_end());
        let mut problems = Vec::new();
        if out.status.code() != Some(2) {
            problems.push(format!("exit status {:?}, expected 2", out.status.code()));
        }
        if !stderr.starts_with("error: ") {
            problems.push("stderr does not start with `error: `".to_string());
        }
        if stderr.contains("panicked") {
            problems.push("panicked".to_string());
        }
        let path_text = path.display().to_string();
        for want in std::iter::once(path_text.as_str()).chain(case.expect.iter().copied()) {
            if !stderr.contains(want) {
                problems.push(format!("missing `{want}`"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{}: {}\n    stderr: {}",
                case.name,
                problems.join("; "),
                stderr.trim_end()
            ));
        }
    }
    assert!(ran > 0, "no case ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} bad-input cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// bpftime's kernel-user maps (1001, 1002, 1004, 1006) load, so `dump` shows them, but
/// `verify` and compiling refuse the object by name with exit code 2: such a map is shared
/// with the Linux kernel's eBPF, which needs host-side programs bpf2ptx does not run.
#[test]
fn kernel_user_map_loads_but_does_not_compile() {
    let bin = bpf2ptx_bin();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = std::fs::read(repo_root().join("tests/corpus/obj/counter.v1.o")).expect("read");
    // `thread_calls` is `__uint(type, 1502)` (see `unknown_map_type.o` above).
    let s = section(&bytes, ".BTF");
    let pat: Vec<u8> = [2u32, 4, 1502]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let at = find_unique(&bytes[s.offset..s.offset + s.size], &pat);
    put_u32(&mut bytes, s.offset + at + 8, 1002);
    let path = dir.path().join("kernel_user_map.o");
    std::fs::write(&path, &bytes).expect("write");
    let run = |args: &[&str]| {
        let out = Command::new(&bin)
            .args(args)
            .arg(&path)
            .output()
            .expect("run bpf2ptx");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stdout, stderr)
    };
    let (code, stdout, stderr) = run(&["dump"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("thread_calls") && stdout.contains("kernel_user_array(1002)"),
        "{stdout}"
    );
    let want = format!(
        "error: {}: map `thread_calls` is a kernel-user map (bpftime type 1002): maps shared \
         with the Linux kernel's eBPF need host-side programs, which bpf2ptx does not run",
        path.display()
    );
    let out = dir.path().join("out.ptx");
    let out = out.to_str().expect("utf-8 path");
    for args in [&["verify"][..], &["-o", out][..]] {
        let (code, _, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&want), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("out.ptx").exists());
}

/// Every file committed under `tests/bad-input/` (fuzzer finds, hand-made reproducers) is
/// rejected by the binary with exit code 2 and an `error: ` message naming it.
#[test]
fn committed_bad_inputs_exit_2() {
    let bin = bpf2ptx_bin();
    let dir = repo_root().join("tests/bad-input");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no reproducers in {}", dir.display());
    let mut failures = Vec::new();
    for f in &files {
        let out = Command::new(&bin)
            .arg("dump")
            .arg(f)
            .output()
            .expect("run bpf2ptx");
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(2)
            || !stderr.starts_with("error: ")
            || !stderr.contains(&f.display().to_string())
        {
            failures.push(format!(
                "{}: exit {:?}, stderr: {}",
                f.display(),
                out.status.code(),
                stderr.trim_end()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A section: where its header and its data are.
struct Sec {
    header: usize,
    offset: usize,
    size: usize,
}

/// Finds a section by name in a little-endian ELF64 object (panics on a malformed base:
/// the bases are committed, well-formed objects).
fn section(b: &[u8], name: &str) -> Sec {
    let shoff = get_u64(b, 0x28) as usize;
    let shentsize = get_u16(b, 0x3a) as usize;
    let shnum = get_u16(b, 0x3c) as usize;
    let shstrndx = get_u16(b, 0x3e) as usize;
    let hdr = |i: usize| shoff + i * shentsize;
    let strtab = get_u64(b, hdr(shstrndx) + 24) as usize;
    (0..shnum)
        .find(|&i| {
            let n = strtab + get_u32(b, hdr(i)) as usize;
            let end = n + b[n..].iter().position(|&c| c == 0).expect("NUL");
            &b[n..end] == name.as_bytes()
        })
        .map(|i| Sec {
            header: hdr(i),
            offset: get_u64(b, hdr(i) + 24) as usize,
            size: get_u64(b, hdr(i) + 32) as usize,
        })
        .unwrap_or_else(|| panic!("no section {name}"))
}

/// File offset of relocation entry `k` (an `Elf64_Rel`: r_offset u64, r_info u64) of the
/// section clang names `.rel<name>`.
fn rel_entry(b: &[u8], name: &str, k: usize) -> usize {
    let s = section(b, &format!(".rel{name}"));
    assert!(16 * (k + 1) <= s.size, "no relocation {k} for {name}");
    s.offset + 16 * k
}

fn find_unique(hay: &[u8], pat: &[u8]) -> usize {
    let hits: Vec<usize> = hay
        .windows(pat.len())
        .enumerate()
        .filter(|(_, w)| *w == pat)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "pattern {pat:02x?} found {} times",
        hits.len()
    );
    hits[0]
}

fn get_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}
fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
