//! Every name the backend emits is a valid PTX identifier that clashes with nothing
//! (specs/abi.md, "Programs and functions" and "Maps"): programs and maps with hostile
//! names — PTX's invalid `_`, `$` and `%` forms, names PTX or the backend reserve, every
//! device-runtime symbol and every map symbol form, a 1,000-byte name, non-ASCII, names
//! that differ only in bytes an escape writes — as program, map, ring and BPF-to-BPF
//! function (subprogram) names lower, through the verifier, to PTX that
//! ptxas accepts for sm_70; the symbols stay distinct; a clash the scheme leaves
//! (`.bss` and a map named `bss`) is a compile error before ptxas.
//!
//! ptxas as in tests/ptxas.rs: `$PTXAS`, the venv, `PATH`; without it the test fails
//! unless `BPF2PTX_SKIP_PTXAS=1`.

use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_tests::require_ptxas;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Names that a program or a map may have and that today's PTX cannot spell as is.
fn hostile() -> Vec<String> {
    let mut v: Vec<String> = [
        "_",
        "$",
        "$x",
        "%r1",
        "%tid",
        "1abc",
        "WARP_SZ",
        "bpf_ret",
        "bpf_a1",
        "bpf_stack",
        "bpf_lanes",
        "bpf_h0",
        "bpf_p1",
        "café",
        "a.b",
        "a-b",
        "a$2eb",
        "a_b",
        "x__y",
        "counts",
        "lookup_elem",
        "hash_find",
        "array_slot",
        "m",
        // The device runtime's symbols.
        "bpf2ptx_map_lookup_elem",
        "bpf2ptx_map_update_elem",
        "bpf2ptx_map_delete_elem",
        "bpf2ptx_map_hash_find",
        "bpf2ptx_map_hash_update",
        "bpf2ptx_map_array_slot",
        "bpf2ptx_map_key_eq",
        "bpf2ptx_copy",
        "bpf2ptx_ringbuf_output",
        "bpf2ptx_ringbuf_reserve",
        "bpf2ptx_ringbuf_submit",
        "bpf2ptx_ringbuf_discard",
        "bpf2ptx_ringbuf_query",
        "bpf2ptx_ringbuf_bound",
        "bpf2ptx_printk",
        "bpf2ptx_printk_data",
        "bpf2ptx_printk_ctr",
        "bpf2ptx_ldu4",
        "bpf2ptx_stu8",
        // Every map symbol form, for the map `m` of the test programs, and the kernels'.
        "bpf2ptx_map_m",
        "bpf2ptx_mapdata_m",
        "bpf2ptx_mapctr_m",
        "bpf2ptx_mapcnt_m",
        "bpf2ptx_map_counts",
        "bpf2ptx_map_counts_",
        "bpf2ptx_entry_m",
        "bpf2ptx_entry_prog",
        "bpf2ptx_p_",
        "bpf2ptx_p__",
        "bpf2ptx_",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.push("n".repeat(1000));
    v.push("é".repeat(500));
    v
}

/// A text program with a hash map and a ringbuf (so the map and ring functions of the
/// runtime are in the module), named `prog`.
fn object(maps: &[(&str, &str)]) -> Object {
    let mut src = String::new();
    for (i, (_, def)) in maps.iter().enumerate() {
        src.push_str(&format!(".map m{i} {def}\n"));
    }
    src.push_str("r1 = 0\n*(u64 *)(r10 - 8) = r1\n");
    for (i, (_, def)) in maps.iter().enumerate() {
        if def.starts_with("ringbuf") {
            src.push_str(&format!(
                "r1 = map_idx({i}) ll\nr2 = r10\nr2 += -8\nr3 = 8\nr4 = 0\ncall 130\n"
            ));
        } else {
            src.push_str(&format!(
                "r2 = r10\nr2 += -8\nr1 = map_idx({i}) ll\ncall 1\n"
            ));
        }
    }
    src.push_str("r0 = 0\nexit\n");
    let mut obj = bpf2ptx::load_bytes("prog.s", src.as_bytes()).unwrap();
    for (m, (name, _)) in obj.maps.iter_mut().zip(maps) {
        m.name = name.to_string();
    }
    obj
}

/// A text program `prog` that calls a subprogram (which stores to the stack and reads a
/// hash map, so the function has a frame and a helper call), the subprogram being
/// `funcs[1]`.
fn with_subprogram() -> Object {
    let src = ".map m0 hash 4 8 16\nr1 = 0\ncall pc+2\nr0 = 0\nexit\n\
               r1 = 0\n*(u64 *)(r10 - 8) = r1\nr2 = r10\nr2 += -8\nr1 = map_idx(0) ll\n\
               call 1\nr0 = 0\nexit\n";
    let obj = bpf2ptx::load_bytes("prog.s", src.as_bytes()).unwrap();
    assert_eq!(
        obj.programs[0].funcs.len(),
        2,
        "the text has one subprogram"
    );
    obj
}

fn lower(obj: &Object) -> Result<String, String> {
    let opts = ptx::Options {
        target: "sm_70".into(),
        entry: true,
        ..Default::default()
    };
    bpf2ptx::compile::compile(obj, &opts).map_err(|e| e.to_string())
}

fn assemble(ptxas: &Path, dir: &Path, n: usize, ptx: &str) -> Result<(), String> {
    let src = dir.join(format!("{n}.ptx"));
    std::fs::write(&src, ptx).unwrap();
    let out = Command::new(ptxas)
        .arg("-arch=sm_70")
        .arg(&src)
        .arg("-o")
        .arg(dir.join(format!("{n}.cubin")))
        .output()
        .map_err(|e| format!("running ptxas: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ptxas: {} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .take(3)
                .collect::<Vec<_>>()
                .join(" | ")
        ))
    }
}

/// The objects the test lowers: each hostile name as the program's name (beside maps
/// named `m` and `counts`) and as a map's name (beside a program named after the map's
/// descriptor), and pairs of names in one object.
fn cases() -> Vec<(String, Object)> {
    let mut out = Vec::new();
    let short = |s: &str| s.chars().take(40).collect::<String>();
    for h in hostile() {
        let mut o = object(&[("m", "hash 4 8 16"), ("counts", "ringbuf 0 0 4096")]);
        o.programs[0].name = h.clone();
        out.push((format!("program `{}`", short(&h)), o));
        let mut o = object(&[(&h, "hash 4 8 16"), ("r", "ringbuf 0 0 4096")]);
        o.programs[0].name = ptx::map_desc_symbol(&h);
        out.push((format!("map `{}`", short(&h)), o));
        let mut o = object(&[("r", "hash 4 8 16"), (&h, "ringbuf 0 0 4096")]);
        o.programs[0].name = ptx::map_counter_symbol(&h);
        out.push((format!("ringbuf `{}`", short(&h)), o));
    }
    // A BPF-to-BPF function (subprogram) with the hostile name, called from the program.
    for h in hostile() {
        let mut o = with_subprogram();
        o.programs[0].funcs[1].name = h.clone();
        out.push((format!("function `{}`", short(&h)), o));
    }
    // Names today's `_` replacement gave one symbol, in one object.
    for (a, b) in [
        ("a.b", "a-b"),
        ("a.b", "a_b"),
        ("café", "caf__"),
        ("1x", "_1x"),
    ] {
        let mut o = object(&[(a, "hash 4 8 16"), (b, "hash 4 8 16")]);
        let mut p = o.programs[0].clone();
        o.programs[0].name = a.into();
        p.name = b.into();
        o.programs.push(p);
        out.push((format!("`{a}` and `{b}`"), o));
    }
    out
}

#[test]
fn hostile_names_lower_to_ptx_ptxas_accepts() {
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for (n, (what, obj)) in cases().iter().enumerate() {
        let r = lower(obj).and_then(|ptx| assemble(&ptxas, tmp.path(), n, &ptx));
        if let Err(e) = r {
            failures.push(format!("{what}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} objects:\n{}",
        failures.len(),
        cases().len(),
        failures.join("\n")
    );
}

#[test]
fn symbols_are_valid_and_distinct() {
    let valid = |s: &str| {
        let ok = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
        let mut cs = s.chars();
        match cs.next() {
            Some(c) if c.is_ascii_alphabetic() => cs.all(ok),
            Some('_' | '$' | '%') => {
                let rest: Vec<char> = cs.collect();
                !rest.is_empty() && rest.into_iter().all(ok)
            }
            _ => false,
        }
    };
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let runtime = [
        "bpf2ptx_map_lookup_elem",
        "bpf2ptx_map_update_elem",
        "bpf2ptx_map_delete_elem",
        "bpf2ptx_map_hash_find",
        "bpf2ptx_map_array_slot",
        "bpf2ptx_copy",
        "bpf2ptx_printk",
    ];
    for r in runtime {
        seen.insert(r.into(), "the runtime".into());
    }
    let o = object(&[("m", "hash 4 8 16")]);
    for h in hostile() {
        let mut p = o.programs[0].clone();
        p.name = h.clone();
        let syms = [
            (ptx::program_symbol(&p), "program"),
            (ptx::entry_symbol(&p), "kernel"),
            (ptx::map_desc_symbol(&h), "descriptor"),
            (ptx::map_data_symbol(&h), "storage"),
            (ptx::map_counter_symbol(&h), "counters"),
            (ptx::map_counts_symbol(&h), "counts"),
        ];
        for (s, kind) in syms {
            assert!(valid(&s), "{kind} of `{h}`: `{s}` is not a PTX identifier");
            if let Some(first) = seen.insert(s.clone(), format!("{kind} of `{h}`")) {
                panic!("`{s}`: {first} and {kind} of `{h}`");
            }
        }
    }
    // Ordinary names keep their symbols.
    let mut p = o.programs[0].clone();
    p.name = "vec_add_probe".into();
    assert_eq!(ptx::program_symbol(&p), "vec_add_probe");
    assert_eq!(ptx::entry_symbol(&p), "bpf2ptx_entry_vec_add_probe");
    assert_eq!(ptx::map_desc_symbol("counts"), "bpf2ptx_map_counts");
    assert_eq!(ptx::map_data_symbol("counts"), "bpf2ptx_mapdata_counts");
    assert_eq!(ptx::map_symbol(".rodata"), "bpf2ptx_map_rodata");
    // The escapes: `$` and every other byte as `$XX`, a runtime name's first byte too.
    p.name = "$x".into();
    assert_eq!(ptx::program_symbol(&p), "$24x");
    p.name = "_".into();
    assert_eq!(ptx::program_symbol(&p), "bpf2ptx_p__");
    p.name = "bpf2ptx_map_counts".into();
    assert_eq!(ptx::program_symbol(&p), "bpf2ptx_p_bpf2ptx_map_counts");
    assert_eq!(ptx::map_desc_symbol("café"), "bpf2ptx_map_caf$c3$a9");
    assert_eq!(
        ptx::map_desc_symbol("lookup_elem"),
        "bpf2ptx_map_$6cookup_elem"
    );
}

#[test]
fn a_remaining_clash_is_a_compile_error() {
    // Global data `.bss` and a map named `bss` both want `bpf2ptx_map_bss`.
    let mut o = object(&[("bss", "hash 4 8 16")]);
    let mut g = bpf2ptx::load_bytes("g.s", b".map .bss array 4 8 1\nr0 = 0\nexit\n")
        .unwrap()
        .maps;
    o.maps.append(&mut g);
    let e = lower(&o).unwrap_err();
    assert!(e.contains("bpf2ptx_map_bss"), "{e}");
    // A program `a__b` and the function `b` of a program `a`.
    let o = object(&[("m", "hash 4 8 16")]);
    let mut a = o.programs[0].clone();
    a.name = "a__b".into();
    let mut b = o.programs[0].clone();
    b.name = "a".into();
    let mut f = b.funcs[0].clone();
    f.name = "b".into();
    f.start = b.insns.len();
    b.funcs.push(f);
    b.insns.extend(
        bpf2ptx_compiler::isa::assemble("r0 = 0\nexit\n")
            .unwrap()
            .insns,
    );
    let mut o2 = o.clone();
    o2.programs = vec![a, b];
    let verified = bpf2ptx::compile::verify(&o2).unwrap_or_else(|e| panic!("{e}"));
    let e = ptx::write_string(&verified, &ptx::Options::default()).unwrap_err();
    assert!(
        matches!(&e, ptx::Error::SymbolClash { symbol, .. } if symbol == "a__b"),
        "{e}"
    );
}
