//! The BPF C corpus (tests/corpus/obj): every object loads, dumps as its snapshot (plain
//! and JSON), round-trips through encode/decode and disassemble/assemble, and its maps have
//! the sizes the kernel gives them when libbpf loads the same object.

use bpf2ptx::dump::Dump;
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_tests::{check_snapshot, files_with_ext, repo_root};
use std::path::Path;

mod common;

fn corpus() -> Vec<(String, Object)> {
    let root = repo_root();
    files_with_ext(&root.join("tests/corpus/obj"), "o")
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().display().to_string();
            let bytes = std::fs::read(&p).unwrap();
            let obj = bpf2ptx::load_bytes(&rel, &bytes).unwrap_or_else(|e| panic!("{e}"));
            (p.file_name().unwrap().to_string_lossy().into_owned(), obj)
        })
        .collect()
}

#[test]
fn every_object_loads_with_programs_and_maps() {
    let objs = corpus();
    assert!(objs.len() >= 12, "corpus has {} objects", objs.len());
    for (name, obj) in &objs {
        assert!(!obj.programs.is_empty(), "{name}: no programs");
        assert!(!obj.maps.is_empty(), "{name}: no maps");
        for p in &obj.programs {
            assert!(!p.lines.is_empty(), "{name}/{}: no source lines", p.name);
        }
    }
}

#[test]
fn dump_snapshots() {
    let out = repo_root().join("tests/out/dump");
    for (name, obj) in corpus() {
        // The big objects exist for the loader benchmark; their dumps would be megabytes.
        if name.starts_with("big") {
            continue;
        }
        let d = Dump::new(&obj);
        check_snapshot(&out.join(format!("{name}.txt")), &d.to_text());
        check_snapshot(&out.join(format!("{name}.json")), &d.to_json());
    }
}

#[test]
fn corpus_roundtrips() {
    let mut n = 0;
    for (name, obj) in corpus() {
        for p in &obj.programs {
            n += common::check_roundtrips(&format!("{name}/{}", p.name), &p.insns);
        }
    }
    assert!(n > 40_000, "only {n} instructions");
    eprintln!("{n} corpus instructions round-tripped");
}

/// The name libbpf gives a map (global-data maps get an object-name prefix).
fn libbpf_name(object_file: &str, m: &bpf2ptx_compiler::program::Map) -> String {
    if m.origin != MapOrigin::GlobalData || m.name[1..].contains('.') {
        return m.name.clone();
    }
    let obj_name = object_file.split('.').next().unwrap_or("");
    let pfx: String = obj_name.chars().take(8).collect();
    format!("{pfx}{}", m.name)
}

fn compare_with_kernel(tsv: &Path) {
    let text = std::fs::read_to_string(tsv).unwrap();
    let objs = corpus();
    let mut checked = 0;
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 8, "malformed row `{line}`");
        let (obj_name, map_name) = (f[0], f[1]);
        let num = |s: &str| -> u32 {
            match s.strip_prefix("0x") {
                Some(h) => u32::from_str_radix(h, 16).unwrap(),
                None => s.parse().unwrap(),
            }
        };
        let (_, obj) = objs
            .iter()
            .find(|(n, _)| n == obj_name)
            .unwrap_or_else(|| panic!("{obj_name} not in corpus"));
        let m = obj
            .maps
            .iter()
            .find(|m| libbpf_name(obj_name, m) == map_name)
            .unwrap_or_else(|| panic!("{obj_name}: kernel map {map_name} not found by bpf2ptx"));
        let ours = (m.map_type, m.key_size, m.value_size, m.max_entries, m.flags);
        let kernel = (num(f[2]), num(f[3]), num(f[4]), num(f[5]), num(f[6]));
        assert_eq!(
            ours, kernel,
            "{obj_name}/{map_name}: (type, key, value, entries, flags) differ from the kernel"
        );
        checked += 1;
    }
    // Every map the kernel can create is in the table: count ours of known kernel types.
    let ours: usize = objs
        .iter()
        .filter(|(n, _)| !n.starts_with("legacy_maps"))
        .map(|(_, o)| o.maps.iter().filter(|m| m.map_type < 1000).count())
        .sum();
    assert_eq!(
        checked,
        ours,
        "{}: kernel rows vs bpf2ptx maps of kernel types",
        tsv.display()
    );
    eprintln!("{checked} maps agree with {}", tsv.display());
}

#[test]
fn map_sizes_match_the_kernel() {
    compare_with_kernel(&repo_root().join("tests/corpus/kernel/kernel-maps.tsv"));
    // CI regenerates the table on its own kernel (as root) and points us at it.
    match std::env::var_os("BPF2PTX_KERNEL_MAPS") {
        Some(p) => compare_with_kernel(Path::new(&p)),
        None => eprintln!("live kernel comparison skipped: BPF2PTX_KERNEL_MAPS not set (.ci/run sets it where bpf(2) works)"),
    }
}
