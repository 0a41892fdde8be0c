//! The odd-object corpus (`tests/corpus/odd`: objects as older clang, hand-written
//! assembly, iproute2 and libbpf's extern conventions leave them; `build.sh` rebuilds
//! them): every object loads and dumps as its snapshot (`tests/out/odd`, `BLESS=1`
//! rewrites them), and the table [`CASES`] runs `dump`, `verify` and compiling on each
//! through the real binary: exit code, and what stdout and stderr must hold.

use bpf2ptx::dump::Dump;
use bpf2ptx_tests::{bpf2ptx_bin, check_snapshot, files_with_ext, repo_root};
use std::process::Command;

/// One command over one object of the odd corpus.
struct Case {
    /// The object, in `tests/corpus/odd/obj`.
    obj: &'static str,
    /// The arguments before the object (`-o OUT` is added after it for `compile`).
    args: &'static [&'static str],
    /// Compile to a temporary `-o` (the object is the positional argument).
    compile: bool,
    /// `--kconfig tests/corpus/odd/src/kconfig.config`.
    kconfig: bool,
    /// The exit code.
    code: i32,
    /// What stdout must hold.
    stdout: &'static [&'static str],
    /// What stderr must hold.
    stderr: &'static [&'static str],
}

const NONE: &[&str] = &[];

const CASES: &[Case] = &[
    // Sections without function symbols: one program each, named after the section; a
    // call inside the section gets a subprogram.
    Case {
        obj: "nosym.o",
        args: &["dump"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "program gpu/entry/vecadd (section gpu/entry/vecadd): 15 insns",
            "call pc+1                                ; call gpu/entry/vecadd+0x68",
            "gpu/entry/vecadd+0x68:  ; gpu/entry/vecadd+0x68",
            "program kprobe/matmul (section kprobe/matmul)",
            "program classifier (section classifier)",
        ],
        stderr: NONE,
    },
    Case {
        obj: "nosym.o",
        args: &["verify"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "program gpu/entry/vecadd (entry probe of kernel vecadd, 8-byte context): accepted",
            "program kprobe/matmul (entry probe of kernel matmul, 8-byte context): accepted",
        ],
        stderr: &["skipped host-side program classifier (section classifier)"],
    },
    Case {
        obj: "nosym.o",
        args: &[],
        compile: true,
        kconfig: false,
        code: 0,
        stdout: NONE,
        stderr: NONE,
    },
    // iproute2's struct bpf_elf_map.
    Case {
        obj: "iproute2_maps.o",
        args: &["dump"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "[0] acc_map              array(2) key 4 value 8 entries 2 flags 0x0  (legacy in maps)",
            "iproute2: id 0 pinning global_ns (2) inner_id 0 inner_idx 0",
            "iproute2: id 7 pinning object_ns (1) inner_id 0 inner_idx 0",
        ],
        stderr: NONE,
    },
    Case {
        obj: "iproute2_maps.o",
        args: &[],
        compile: true,
        kconfig: false,
        code: 0,
        stdout: NONE,
        stderr: &["skipped host-side program cls_main (section classifier)"],
    },
    // Maps of maps: dumped with their inner map and initial entries; the verifier refuses
    // a lookup in one by name; compiling refuses it at the instruction, exit 2.
    Case {
        obj: "iproute2_map_in_map.o",
        args: &["dump"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "[1] map_outer            array_of_maps(12) key 4 value 4 entries 1",
            "iproute2: id 42 pinning global_ns (2) inner_id 0 inner_idx 0",
            "inner map map_inner: array(2) key 4 value 4 entries 1 flags 0x0",
            "initial entries: [0] = map_inner",
        ],
        stderr: NONE,
    },
    Case {
        obj: "iproute2_map_in_map.o",
        args: &[],
        compile: true,
        kconfig: false,
        code: 2,
        stdout: NONE,
        stderr: &["program imm_main (section gpu/entry/vecadd): insn 4: `r1 = map_idx(1) ll` \
                   (iproute2_map_in_map.bpf.c:43: void *inner = bpf_map_lookup_elem(&map_outer, &key);): \
                   map `map_outer` is a map of maps (array_of_maps): map-in-map is not supported on the GPU"],
    },
    Case {
        obj: "btf_map_in_map.o",
        args: &["dump"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "[2] outer_arr            array_of_maps(12) key 4 value 4 entries 3",
            "inner map outer_arr.inner: array(2) key 4 value 8 entries 4 flags 0x0",
            "initial entries: [0] = inner_a, [2] = inner_b",
            "[3] outer_hash           hash_of_maps(13) key 4 value 4 entries 8",
            "inner map outer_hash.inner: hash(1) key 4 value 4 entries 16 flags 0x0",
        ],
        stderr: NONE,
    },
    Case {
        obj: "btf_map_in_map.o",
        args: &["verify"],
        compile: false,
        kconfig: false,
        code: 1,
        stdout: &["program direct_inner (exit probe of kernel vecadd, 8-byte context): accepted"],
        stderr: &[
            "program lookup_outer (entry probe of kernel vecadd, 8-byte context): rejected",
            "not `outer_arr` (array_of_maps)",
        ],
    },
    Case {
        obj: "btf_map_in_map.o",
        args: &[],
        compile: true,
        kconfig: false,
        code: 2,
        stdout: NONE,
        stderr: &["program lookup_outer (section gpu/entry/vecadd): insn 4: `r1 = map_idx(2) ll` \
                   (btf_map_in_map.bpf.c:38:",
                  "map `outer_arr` is a map of maps (array_of_maps): map-in-map is not supported on the GPU"],
    },
    // Kconfig externs: laid out in .kconfig as libbpf lays them out; values from
    // --kconfig, weak ones 0; a non-weak one without a value is a named error.
    Case {
        obj: "kconfig.o",
        args: &["dump"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "[1] .kconfig             array(2) key 4 value 30 entries 1 flags 0x480  (global_data in .kconfig)",
            "[0] LINUX_KERNEL_VERSION     kconfig u32 at .kconfig+16 (4 bytes)",
            "[5] CONFIG_DEFAULT_HOSTNAME  kconfig char[8] at .kconfig+22 (8 bytes), BTF id 28, weak",
            "r1 = map_idx_value(1, 8) ll              ; .kconfig+8 (R_BPF_64_64 CONFIG_HZ)",
        ],
        stderr: NONE,
    },
    Case {
        obj: "kconfig.o",
        args: &[],
        compile: true,
        kconfig: false,
        code: 2,
        stdout: NONE,
        stderr: &["kconfig extern `CONFIG_HZ` (s32) has no value: give it in a Linux config file with --kconfig FILE"],
    },
    Case {
        obj: "kconfig.o",
        args: &["verify"],
        compile: false,
        kconfig: false,
        code: 2,
        stdout: NONE,
        stderr: &["kconfig extern `CONFIG_HZ` (s32) has no value"],
    },
    Case {
        obj: "kconfig.o",
        args: &[],
        compile: true,
        kconfig: true,
        code: 0,
        stdout: NONE,
        stderr: NONE,
    },
    Case {
        obj: "kconfig.o",
        args: &["verify"],
        compile: false,
        kconfig: true,
        code: 0,
        stdout: &["program read_kconfig (entry probe of kernel vecadd, 8-byte context): accepted"],
        stderr: NONE,
    },
    // Ksym externs: kfunc calls keep their name (the verifier decides on them); a kernel
    // variable has no address on the GPU.
    Case {
        obj: "ksym.o",
        args: &["dump"],
        compile: false,
        kconfig: false,
        code: 0,
        stdout: &[
            "[0] bpf_iter_num_new         kfunc, BTF id 20",
            "[4] jiffies_64               ksym variable (typeless), BTF id 31",
            "call kfunc(23)                           ; kfunc bpf_iter_num_next (R_BPF_64_32 bpf_iter_num_next)",
            "r1 = btf_id(29, 0) ll                    ; ksym bpf_prog_active (R_BPF_64_64 bpf_prog_active)",
        ],
        stderr: NONE,
    },
    Case {
        obj: "ksym.o",
        args: &[],
        compile: true,
        kconfig: false,
        code: 2,
        stdout: NONE,
        stderr: &["program read_ksym (section gpu/exit/vecadd): insn 2: `r1 = btf_id(29, 0) ll`",
                  "`bpf_prog_active` is a kernel variable (__ksym), which has no address on the GPU"],
    },
];

#[test]
fn odd_objects_run_as_the_table_says() {
    let bin = bpf2ptx_bin();
    let root = repo_root();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for (k, c) in CASES.iter().enumerate() {
        let obj = format!("tests/corpus/odd/obj/{}", c.obj);
        let out = dir.path().join(format!("{k}.ptx"));
        let mut cmd = Command::new(&bin);
        cmd.current_dir(&root).args(c.args).arg(&obj);
        if c.compile {
            cmd.arg("-o").arg(&out);
        }
        if c.kconfig {
            cmd.args(["--kconfig", "tests/corpus/odd/src/kconfig.config"]);
        }
        let r = cmd.output().expect("run bpf2ptx");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&r.stdout),
            String::from_utf8_lossy(&r.stderr),
        );
        let mut problems = Vec::new();
        if r.status.code() != Some(c.code) {
            problems.push(format!("exit {:?}, expected {}", r.status.code(), c.code));
        }
        for want in c.stdout {
            if !stdout.contains(want) {
                problems.push(format!("stdout lacks `{want}`"));
            }
        }
        for want in c.stderr {
            if !stderr.contains(want) {
                problems.push(format!("stderr lacks `{want}`"));
            }
        }
        if stderr.contains("panicked") {
            problems.push("panicked".into());
        }
        if c.compile && (c.code == 0) != out.exists() {
            problems.push(format!("output written: {}", out.exists()));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{} {:?}{}: {}\n  stdout: {}\n  stderr: {}",
                c.obj,
                c.args,
                if c.compile { " -o" } else { "" },
                problems.join("; "),
                stdout.trim_end(),
                stderr.trim_end()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn odd_objects_dump_as_snapshots() {
    let root = repo_root();
    let objs = files_with_ext(&root.join("tests/corpus/odd/obj"), "o");
    assert!(objs.len() >= 6, "odd corpus has {} objects", objs.len());
    for p in objs {
        let rel = p.strip_prefix(&root).unwrap().display().to_string();
        let obj = bpf2ptx::load_bytes(&rel, &std::fs::read(&p).unwrap())
            .unwrap_or_else(|e| panic!("{e}"));
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let d = Dump::new(&obj);
        let out = root.join("tests/out/odd");
        check_snapshot(&out.join(format!("{name}.txt")), &d.to_text());
        check_snapshot(&out.join(format!("{name}.json")), &d.to_json());
    }
}

/// The values `--kconfig` gives kconfig.o, byte for byte at libbpf's offsets.
#[test]
fn kconfig_values_land_at_libbpf_offsets() {
    let root = repo_root();
    let mut obj = bpf2ptx::load_path(&root.join("tests/corpus/odd/obj/kconfig.o")).unwrap();
    bpf2ptx::compile::apply_kconfig(
        &mut obj,
        Some(&root.join("tests/corpus/odd/src/kconfig.config")),
    )
    .unwrap();
    let m = obj.maps.iter().find(|m| m.name == ".kconfig").unwrap();
    let v = m.init.as_ref().unwrap();
    assert_eq!(v.len(), 30);
    let u32_at = |o: usize| u32::from_le_bytes(v[o..o + 4].try_into().unwrap());
    assert_eq!(u64::from_le_bytes(v[0..8].try_into().unwrap()), 0x200); // CONFIG_NR_CPUS
    assert_eq!(u32_at(8), 250); // CONFIG_HZ
    assert_eq!(u32_at(12), 2); // CONFIG_NET_SCHED=m
    assert_eq!(u32_at(16), 0x060800); // LINUX_KERNEL_VERSION
    assert_eq!(v[20], 1); // CONFIG_BPF_JIT=y
    assert_eq!(v[21], b'y'); // CONFIG_LOCALVERSION_CHAR=y (a char)
    assert_eq!(&v[22..30], b"gpu\0\0\0\0\0"); // CONFIG_DEFAULT_HOSTNAME
}
