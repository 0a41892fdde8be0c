//! Issue 18's attach points: every instruction that moves data is a `gpu/mem` site with a
//! context a probe can use, and every instruction a `gpu/insn/K/OPCODE` site.
//!
//! Over the hand-written Hopper and Blackwell fixtures (`tests/inject/hand/
//! hopper_memory.ptx`, `blackwell_memory.ptx`, written from the PTX ISA the way Triton and
//! CUTLASS write these instructions) and the rest of the corpus:
//! - the memory sites found, with their kind flags, spaces, sizes and operands, match a
//!   reviewed snapshot (`tests/out/inject/*.mem_sites.json`, `BLESS=1` rewrites), and a
//!   few facts are asserted by hand;
//! - every fixture instrumented with memory and instruction probes (thread, warp and block
//!   granularity, inlined and `--call`) is accepted by ptxas for its own target, and keeps
//!   its kernels' code byte for byte;
//! - the fixtures round-trip through the PTX reader and writer byte for byte;
//! - every opcode of the corpus has a row in the opcode table, and every kind of memory
//!   site occurs in the fixtures;
//! - the C header's generated block and specs/abi.md's table are what the tables say.

use bpf2ptx::inject::{self, Options};
use bpf2ptx_backend::back::ptx::Granularity;
use bpf2ptx_backend::inject::access;
use bpf2ptx_backend::inject::attach::{self, Point};
use bpf2ptx_backend::inject::opcodes::{self, Mem};
use bpf2ptx_backend::inject::ptx::{self as model, FunctionKind};
use bpf2ptx_backend::inject::weave::Woven;
use bpf2ptx_tests::{check_snapshot, files_with_ext, repo_root, require_ptxas};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const HOPPER: &str = "tests/inject/hand/hopper_memory.ptx";
const BLACKWELL: &str = "tests/inject/hand/blackwell_memory.ptx";

fn new_fixtures() -> Vec<PathBuf> {
    [HOPPER, BLACKWELL]
        .iter()
        .map(|p| repo_root().join(p))
        .collect()
}

/// Every PTX text of the corpus: the injection fixtures, the hand-written ones, the
/// example applications and the fatbin fixtures' PTX.
fn corpus() -> Vec<PathBuf> {
    let r = repo_root();
    let mut v = files_with_ext(&r.join("tests/inject/ptx"), "ptx");
    v.extend(files_with_ext(&r.join("tests/inject/hand"), "ptx"));
    v.extend(files_with_ext(&r.join("tests/inject/fatbin"), "ptx"));
    v.extend(files_with_ext(&r.join("examples/apps"), "ptx"));
    assert!(v.len() >= 40, "corpus missing");
    v
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn run(probes: &str, app: &Path, opts: &Options) -> Woven {
    let file = repo_root().join("tests/inject/probes").join(probes);
    inject::inject(&file, &read(app), &app.display().to_string(), opts)
        .unwrap_or_else(|e| panic!("{}: {e}", app.display()))
        .0
}

#[test]
fn new_fixtures_round_trip() {
    for f in new_fixtures() {
        let text = read(&f);
        let m = model::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(m.write() == text, "{}: write(parse) differs", f.display());
    }
}

/// The memory sites of a fixture as JSON: per kernel, per instruction, what its context
/// holds (or why its operands were refused).
fn sites_json(text: &str) -> serde_json::Value {
    let m = model::parse(text).expect("parses");
    let mut kernels = serde_json::Map::new();
    for f in m
        .functions()
        .filter(|f| f.kind() == FunctionKind::Entry && f.has_body())
    {
        let sites: Vec<serde_json::Value> = access::describe(f.body())
            .into_iter()
            .map(|(line, insn, site)| match site {
                Ok(s) => serde_json::json!({
                    "line": line,
                    "instruction": insn,
                    "flags": flag_names(s.flags),
                    "site": s,
                }),
                Err(e) => serde_json::json!({"line": line, "instruction": insn, "error": e}),
            })
            .collect();
        kernels.insert(f.name().to_string(), sites.into());
    }
    kernels.into()
}

fn flag_names(flags: u32) -> String {
    let mut v: Vec<String> = attach::MEM_FLAGS
        .iter()
        .filter(|(_, bit, _)| flags & bit != 0)
        .map(|(n, _, _)| n.to_string())
        .collect();
    let space = |code: u32| {
        attach::SPACES
            .iter()
            .find(|(_, c)| *c == code)
            .map_or("?", |(n, _)| n)
            .to_lowercase()
    };
    v.push(format!("space={}", space(flags >> 8 & 0xff)));
    v.push(format!("space2={}", space(flags >> 16 & 0xff)));
    v.join(" ")
}

/// The memory sites of a fixture as reviewable text: one line per site.
fn sites_text(text: &str) -> String {
    let m = model::parse(text).expect("parses");
    let mut out = String::new();
    for f in m
        .functions()
        .filter(|f| f.kind() == FunctionKind::Entry && f.has_body())
    {
        out.push_str(&format!("kernel {}\n", f.name()));
        for (line, insn, site) in access::describe(f.body()) {
            out.push_str(&format!("{line}: {insn}\n"));
            match site {
                Ok(s) => {
                    let coords: Vec<String> = s.coords.iter().map(|c| c.to_string()).collect();
                    out.push_str(&format!(
                        "    {} | {} | addr {} size {} | addr2 {} size2 {} | policy {} | qual {:#x} count {}{}\n",
                        s.op,
                        flag_names(s.flags),
                        s.addr,
                        s.size,
                        s.addr2,
                        s.size2,
                        s.policy,
                        s.qual,
                        s.count,
                        if coords.is_empty() {
                            String::new()
                        } else {
                            format!(" coord {{{}}}", coords.join(", "))
                        }
                    ));
                }
                Err(e) => out.push_str(&format!("    ERROR {e}\n")),
            }
        }
    }
    out
}

#[test]
fn memory_sites_snapshot() {
    for f in new_fixtures() {
        let text = sites_text(&read(&f));
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        check_snapshot(
            &repo_root().join(format!("tests/out/inject/{name}.mem_sites.txt")),
            &text,
        );
        assert!(
            !text.contains("ERROR"),
            "{name}: a site was refused:\n{text}"
        );
    }
}

/// Facts of the snapshot checked by hand: what each kind of site reports.
#[test]
fn memory_sites_say_what_the_isa_says() {
    let all = sites_json(&read(&repo_root().join(HOPPER)));
    let find = |kernel: &str, needle: &str| -> serde_json::Value {
        all[kernel]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["instruction"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("no site `{needle}`"))
            .clone()
    };
    // Triton's masked copy: 16 bytes into shared memory, src-size (a register) from global.
    let s = find("hopper_copies", "[ %r5 + 0 ], [ %rd5 + 0 ], 0x10, %r6");
    assert_eq!(s["flags"], "LOAD STORE2 ASYNC space=global space2=shared");
    assert_eq!(s["site"]["size"]["cp_source"]["reg"], "%r6");
    assert_eq!(s["site"]["size2"]["const"], 16);
    assert_eq!(s["site"]["addr"]["addr"]["base"], "%rd5");
    assert_eq!(s["site"]["addr2"]["addr"]["base"], "%r5");
    let s = find("hopper_copies", "cp.async.cg.shared.global.L2::cache_hint");
    assert_eq!(s["site"]["policy"]["reg"], "%rd6");
    assert!(s["flags"].as_str().unwrap().contains("HINT"));
    let s = find("hopper_copies", "ldmatrix.sync.aligned.m8n8.x2");
    assert_eq!(s["site"]["size"]["lanes"]["lanes"], 16);
    assert_eq!(s["site"]["count"], 2);
    let s = find("hopper_copies", "ld.global.cs.b128");
    assert_eq!(s["site"]["size"]["const"], 16);
    let s = find("hopper_tma", "cp.async.bulk.tensor.5d");
    assert_eq!(s["site"]["count"], 5);
    assert_eq!(s["site"]["coords"].as_array().unwrap().len(), 5);
    assert_eq!(
        s["flags"],
        "LOAD STORE2 ASYNC TENSOR space=global space2=shared_cluster"
    );
    let s = find("hopper_tma", "cp.reduce.async.bulk.tensor");
    assert_eq!(
        s["flags"],
        "STORE ATOMIC LOAD2 ASYNC TENSOR space=global space2=shared"
    );
    let s = find("hopper_tma", "mbarrier.arrive.expect_tx");
    assert_eq!(s["site"]["size2"]["const"], 49152);
    // Not memory sites: the parameter loads, the tensor-map prefetch in .param space, the
    // wgmma, the barrier state query.
    for kernel in ["hopper_copies", "hopper_tma"] {
        for s in all[kernel].as_array().unwrap() {
            let i = s["instruction"].as_str().unwrap();
            for not in [
                "ld.param",
                "prefetch.param",
                "wgmma",
                "pending_count",
                "createpolicy",
            ] {
                assert!(!i.contains(not), "{i} is not a memory site");
            }
        }
    }
    let count = |kernel: &str, op: &str| {
        all[kernel]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["site"]["op"] == op)
            .count()
    };
    assert_eq!(count("hopper_copies", "cp.async"), 5);
    assert_eq!(count("hopper_copies", "ldmatrix"), 3);
    assert_eq!(count("hopper_copies", "stmatrix"), 2);
    assert_eq!(count("hopper_copies", "prefetch"), 3);
    assert_eq!(count("hopper_copies", "prefetchu"), 1);
    assert_eq!(count("hopper_tma", "cp.async.bulk.tensor"), 6);
    assert_eq!(count("hopper_tma", "cp.reduce.async.bulk.tensor"), 1);
    assert_eq!(count("hopper_tma", "cp.async.bulk"), 5);
    assert_eq!(count("hopper_tma", "mbarrier"), 7);
}

/// Every memory-site kind of the opcode table occurs in the fixtures, so the snapshot and
/// the ptxas check cover each reader.
#[test]
fn fixtures_cover_every_kind_of_memory_site() {
    let mut seen = BTreeSet::new();
    for f in new_fixtures() {
        let m = model::parse(&read(&f)).unwrap();
        for func in m.functions() {
            for (_, i) in func.instructions() {
                if let Ok(Some(s)) = access::mem_site(i) {
                    let row = opcodes::classify(&i.opcode).unwrap();
                    seen.insert(format!("{:?}", row.mem));
                    assert_eq!(s.op, row.opcode);
                }
            }
        }
    }
    for r in opcodes::OPCODES.iter().filter(|r| r.is_mem()) {
        let kind = format!("{:?}", r.mem);
        // TensormapCopy needs a tensor map in shared memory; it is read by the same path
        // as a bulk copy and covered by the unit tests of inject/access/.
        if matches!(r.mem, Mem::TensormapCopy) {
            continue;
        }
        assert!(
            seen.contains(&kind),
            "no fixture instruction is a {kind} site ({})",
            r.opcode
        );
    }
}

/// Coverage: every opcode in the corpus is in the table (so it has an `op` number and a
/// documented answer to "is it a memory attach point").
#[test]
fn every_corpus_opcode_is_in_the_table() {
    let mut unknown = BTreeMap::new();
    let mut n = 0;
    for f in corpus() {
        let m = model::parse(&read(&f)).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for func in m.functions() {
            for (_, i) in func.instructions() {
                n += 1;
                if opcodes::classify(&i.opcode).is_none() {
                    unknown.insert(i.opcode.to_string(), f.display().to_string());
                }
            }
        }
    }
    assert!(n > 1000);
    assert!(unknown.is_empty(), "opcodes without a row: {unknown:?}");
}

fn header_line<'a>(text: &'a str, d: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(d))
        .unwrap_or_default()
}

fn target(text: &str) -> String {
    header_line(text, ".target ")
        .trim()
        .trim_start_matches(".target ")
        .split(',')
        .next()
        .unwrap()
        .trim()
        .to_string()
}

#[test]
fn instrumented_fixtures_keep_their_code_and_pass_ptxas() {
    let ptxas = require_ptxas();
    let tmp = tempfile::tempdir().unwrap();
    let mut assembled = 0;
    for f in new_fixtures() {
        let text = read(&f);
        for (g, call) in [
            (Granularity::Thread, false),
            (Granularity::Warp, false),
            (Granularity::Block, false),
            (Granularity::Thread, true),
        ] {
            let opts = Options {
                granularity: g,
                call,
                ..Default::default()
            };
            let woven = run("attach_all.bpf.o", &f, &opts);
            let back = bpf2ptx_tests::strip_injected(&woven.text)
                .replacen(
                    header_line(&woven.text, ".version"),
                    header_line(&text, ".version"),
                    1,
                )
                .replacen(
                    header_line(&woven.text, ".target"),
                    header_line(&text, ".target"),
                    1,
                );
            assert!(back == text, "{}: kernel code changed", f.display());
            let points: BTreeSet<String> = woven
                .sites
                .iter()
                .map(|s| format!("{:?}", s.point))
                .collect();
            assert!(
                points.contains("Mem") && points.contains("Insn"),
                "{points:?}"
            );
            let Some(ptxas) = &ptxas else {
                continue;
            };
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            let src = tmp.path().join(format!("{name}.{g:?}.{call}.ptx"));
            std::fs::write(&src, &woven.text).unwrap();
            let out = Command::new(ptxas)
                .arg(format!("-arch={}", target(&text)))
                .arg(&src)
                .arg("-o")
                .arg(src.with_extension("cubin"))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{} ({g:?}, call {call}): {}",
                f.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            assembled += 1;
        }
    }
    if ptxas.is_some() {
        assert_eq!(assembled, 8);
    }
}

/// The instruction sites are exactly the instructions each probe's opcode names, with the
/// instruction context (16 bytes).
#[test]
fn instruction_sites_follow_their_opcode() {
    let f = repo_root().join(HOPPER);
    let text = read(&f);
    let woven = run("attach_all.bpf.o", &f, &Options::default());
    let m = model::parse(&text).unwrap();
    let mut want: BTreeMap<&str, usize> = BTreeMap::new();
    for func in m.functions() {
        for (_, i) in func.instructions() {
            for (pat, probe) in [
                ("wgmma", "wgmma_per_warp"),
                ("mma", "mma_per_thread"),
                ("bar", "bar_per_block"),
                ("cp.async", "cp_async_per_warp"),
                ("ldmatrix", "ldmatrix_per_thread"),
            ] {
                if opcodes::Pattern::parse(pat).unwrap().matches(&i.opcode) {
                    *want.entry(probe).or_default() += 1;
                }
            }
        }
    }
    let mut got: BTreeMap<&str, usize> = BTreeMap::new();
    for s in woven.sites.iter().filter(|s| s.point == Point::Insn) {
        for p in &s.probes {
            *got.entry(want.keys().find(|k| **k == p).copied().unwrap_or("?"))
                .or_default() += 1;
        }
    }
    assert_eq!(got, want);
    // 4 wgmma.* (fence, mma_async, commit, wait), 1 mma, 3 bar.sync + 1 bar.warp.sync in
    // wmma_kernel... every count is the text's own.
    assert_eq!(want["wgmma_per_warp"], 4);
    assert_eq!(want["mma_per_thread"], 1);
    assert!(want["cp_async_per_warp"] >= 5 + 12);
}

/// A predicated site per warp: the lanes whose predicate is false branch past the rejoin
/// (`bar.warp.sync` over a mask they never read would be undefined); an aligned
/// instruction's site is enclosed in activemask / bar.warp.sync.
#[test]
fn predicated_and_aligned_sites_rejoin_soundly() {
    let app = ".version 8.4\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 k_p)\n{\n.reg .pred %p<2>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [k_p];\nmov.u32 %r1, %tid.x;\nsetp.lt.u32 %p1, %r1, 7;\n@%p1 ld.global.u32 %r2, [%rd1];\nldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r3, %r4, %r5, %r6}, [%r1];\nret;\n}\n";
    let probes = repo_root().join("tests/inject/probes/attach_all.bpf.o");
    let woven = inject::inject(
        &probes,
        app,
        "k.ptx",
        &Options {
            granularity: Granularity::Warp,
            ..Default::default()
        },
    )
    .unwrap()
    .0;
    let text = &woven.text;
    // The guarded block: `@!%p1 bra $L__bpf2ptx_N_g;` and the label after the rejoin.
    let at = text.find("@!%p1 bra $L__bpf2ptx_").expect("a guard");
    let label: String = text[at + "@!%p1 bra ".len()..]
        .chars()
        .take_while(|c| *c != ';')
        .collect();
    assert!(label.ends_with("_g"), "{label}");
    let def = text.find(&format!("{label}:")).expect("the guard's label");
    let rejoin = text[at..]
        .find("bar.warp.sync %bpf2ptx_w0;")
        .expect("a rejoin")
        + at;
    assert!(rejoin < def, "the guard skips past the rejoin");
    // The ldmatrix site: one wrapper, opened before its first block, closed before it.
    let ld = text.find("ldmatrix.sync.aligned").unwrap();
    let open = text[..ld]
        .rfind("activemask.b32 %bpf2ptx_j;")
        .expect("a wrapper");
    let close = text[..ld]
        .rfind("bar.warp.sync %bpf2ptx_j;")
        .expect("its rejoin");
    assert!(open < close);
    assert!(
        !text[close..ld].contains("%bpf2ptx_d0"),
        "nothing after the rejoin"
    );
    // The plain load is not aligned: no wrapper there.
    let ldg = text.find("@%p1 ld.global.u32").unwrap();
    assert!(!text[..ldg].contains("activemask.b32 %bpf2ptx_j;"));
    if let Some(ptxas) = require_ptxas() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("k.ptx");
        std::fs::write(&src, text).unwrap();
        let out = Command::new(ptxas)
            .args(["-arch=sm_90a"])
            .arg(&src)
            .arg("-o")
            .arg(src.with_extension("cubin"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Bad opcode patterns and operands are errors, never panics.
#[test]
fn bad_operands_are_errors() {
    let probes = repo_root().join("tests/inject/probes/attach_all.bpf.o");
    for bad in [
        "cp.async.ca.shared.global [%r1], 4;",
        "cp.async.ca.shared.global [%r1], [%rd1], 12;",
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r1}], [%r1];",
        "ldmatrix.sync.aligned.m8n8.shared.b16 {%r1}, [%r1];",
        "ld.global.u32 %r1, [%q9];",
        "ld.global.u32 %r1, [%rd1+%r1];",
    ] {
        let app = format!(".version 8.4\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n{bad}\nret;\n}}\n");
        let err = inject::inject(&probes, &app, "k.ptx", &Options::default())
            .expect_err(bad)
            .to_string();
        assert!(err.contains("line 8"), "{bad}: {err}");
    }
}

const H_BEGIN: &str = "/* BEGIN GENERATED (tests/tests/attach_points.rs; BLESS=1 rewrites) */";
const H_END: &str = "/* END GENERATED */";
const T_BEGIN: &str =
    "<!-- BEGIN GENERATED ATTACH TABLE (tests/tests/attach_points.rs; BLESS=1 rewrites) -->";
const T_END: &str = "<!-- END GENERATED ATTACH TABLE -->";

/// Checks (or with `BLESS=1` rewrites) the text between two markers of a file.
fn check_block(rel: &str, begin: &str, end: &str, fresh: &str) {
    let path = repo_root().join(rel);
    let doc = read(&path);
    let a = doc.find(begin).expect("begin marker") + begin.len();
    let b = doc.find(end).expect("end marker");
    let fresh = format!("\n{fresh}");
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, format!("{}{}{}", &doc[..a], fresh, &doc[b..])).unwrap();
        return;
    }
    pretty_assertions::assert_eq!(&doc[a..b], fresh, "{rel} drifted; BLESS=1 rewrites it");
}

#[test]
fn header_block_is_current() {
    check_block(
        "runtime-ptx/include/bpf2ptx_helpers.h",
        H_BEGIN,
        H_END,
        &attach::header_block(),
    );
}

#[test]
fn abi_attach_table_is_current() {
    check_block("specs/abi.md", T_BEGIN, T_END, &opcodes::coverage_table());
}

/// The example probes of issue 18 (`examples/probes/tensor_core_count.bpf.o`,
/// `mem_traffic.bpf.o`) instrument the fixtures, and ptxas accepts the result; the tensor
/// core counter attaches to the tensor-core and matrix instructions only.
#[test]
fn example_probes_instrument_the_fixtures() {
    let ptxas = require_ptxas();
    let tmp = tempfile::tempdir().unwrap();
    for f in new_fixtures() {
        let text = read(&f);
        for probe in ["tensor_core_count", "mem_traffic"] {
            let file = repo_root().join(format!("examples/probes/{probe}.bpf.o"));
            let woven = inject::inject(&file, &text, "app.ptx", &Options::default())
                .unwrap_or_else(|e| panic!("{probe}: {e}"))
                .0;
            if probe == "tensor_core_count" {
                for s in &woven.sites {
                    let op = s.instruction.split_whitespace().next().unwrap_or("");
                    assert!(
                        op.starts_with("wgmma.")
                            || op.starts_with("mma.")
                            || op.starts_with("wmma."),
                        "{op}"
                    );
                }
            } else {
                assert!(woven.sites.iter().all(|s| s.point == Point::Mem));
                let m = model::parse(&text).unwrap();
                let want: usize = m
                    .functions()
                    .map(|f| access::describe(f.body()).len())
                    .sum();
                assert_eq!(woven.sites.len(), want);
            }
            let Some(ptxas) = &ptxas else { continue };
            let src = tmp.path().join(format!("{probe}.ptx"));
            std::fs::write(&src, &woven.text).unwrap();
            let out = Command::new(ptxas)
                .arg(format!("-arch={}", target(&text)))
                .arg(&src)
                .arg("-o")
                .arg(src.with_extension("cubin"))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{probe}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// A site may go before any instruction: probes before the commonest opcodes (inside call
/// sequences, loops, inline-asm scopes, before returns and branches; every granularity)
/// over the nvcc sm_90 fixtures and the hand-written ones, and ptxas accepts each output.
#[test]
fn instruction_sites_anywhere_pass_ptxas() {
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut apps: Vec<PathBuf> = files_with_ext(&repo_root().join("tests/inject/ptx"), "ptx")
        .into_iter()
        .filter(|p| p.to_string_lossy().contains(".sm90."))
        .collect();
    apps.extend(new_fixtures());
    assert!(apps.len() >= 10);
    for app in apps {
        let text = read(&app);
        let woven = run("insn_everywhere.bpf.o", &app, &Options::default());
        assert!(woven.sites.len() > 10, "{}", app.display());
        let mut out = woven.text;
        // ptxas 12.9 reads PTX 8.8; nvcc 13's fixtures say 9.x and use nothing newer.
        if let Some(v) = out.lines().find(|l| l.starts_with(".version 9.")) {
            out = out.replacen(&v.to_string(), ".version 8.8", 1);
        }
        let name = app.file_name().unwrap().to_string_lossy().into_owned();
        let src = tmp.path().join(&name);
        std::fs::write(&src, &out).unwrap();
        let o = Command::new(&ptxas)
            .arg(format!("-arch={}", target(&text)))
            .arg(&src)
            .arg("-o")
            .arg(src.with_extension("cubin"))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Damaged Hopper and Blackwell PTX never panics the operand reader or the weaver: each
/// fixture cut at many lengths and with bytes changed is instrumented or refused.
#[test]
fn damaged_new_fixtures_are_errors_not_panics() {
    let mut seed = 0x18_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let noise = [
        b'{', b'}', b';', b'[', b']', b'@', b'%', b'.', b',', b' ', b'x', b'0', b'_', b'-',
    ];
    let probes = repo_root().join("tests/inject/probes/attach_all.bpf.o");
    let mut outcomes = [0usize; 2];
    for f in new_fixtures() {
        let text = std::fs::read(&f).unwrap();
        for k in 0..60 {
            let mut bytes = text.clone();
            if k % 3 == 0 {
                bytes.truncate((next() as usize) % bytes.len());
            } else {
                for _ in 0..3 {
                    let at = (next() as usize) % bytes.len();
                    bytes[at] = noise[(next() as usize) % noise.len()];
                }
            }
            let Ok(app) = String::from_utf8(bytes) else {
                continue;
            };
            let r = inject::inject(&probes, &app, "damaged.ptx", &Options::default());
            outcomes[usize::from(r.is_ok())] += 1;
        }
    }
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}
