//! The verifier differential: bpf2ptx's verdict on a program against the Linux verifier's.
//!
//! Programs: every text case of `tests/verifier`, every program of `tests/corpus/obj`, and
//! every bpf_conformance test of `tests/conformance/tests`, as long as it calls only standard
//! Linux helpers (ids below 500) and declares only map types Linux has (below 1500). Each
//! is encoded back to raw instructions and loaded by `tests/kernel/testrun.c --load-only`
//! (built here with gcc, as `kernel_diff.rs` does) with the maps it declares created first
//! (`--map`: their fds form the load's `fd_array`, which resolves `ld_imm64` src 5/6).
//!
//! Entry conventions: a GPU probe (the default of a text case, and every corpus program)
//! loads as a `BPF_PROG_TYPE_KPROBE` program, whose context is a read-only `struct
//! pt_regs` (bpf2ptx gives probes an empty read-only context, so it rejects every context
//! read the kernel allows). A conformance-style program (`# entry: mem N`, or a `.data`
//! test) loads as a sleepable `BPF_PROG_TYPE_SYSCALL` program, whose context is the
//! caller's `ctx_in` of N bytes, with `r2 = N` prepended (the kernel passes no length in
//! r2). A syscall context only allows constant, size-aligned offsets from an unmoved r1
//! and no atomics; where the kernel refuses a program for that alone, it is loaded again
//! with a prologue that points r1 at the N-byte value of an array map created for it
//! (`adapted`): a map value allows what bpf2ptx's input memory allows.
//!
//! Outcomes: `agree-accept`, `agree-reject`, `we-reject` (bpf2ptx is stricter: listed with
//! our rule), `we-accept` (the kernel rejects what bpf2ptx accepts: a failure unless
//! [`ALLOWED`] lists the program with the reason), `skipped` (with why).
//!
//! Never fails for an environment reason: without root, gcc, libbpf or a usable bpf(2) it
//! prints why and passes. With `BLESS=1` it writes the agreement table into
//! specs/verifier.md (between the `kernel-agreement` markers).

use bpf2ptx_compiler::isa::table::{CallKind, Kind};
use bpf2ptx_compiler::isa::{self, Insn};
use bpf2ptx_compiler::program::Object;
use bpf2ptx_tests::kernel::{asm, build_testrun, release as kernel_release};
use bpf2ptx_tests::{conformance_dir, files_with_ext, repo_root};
use bpf2ptx_verifier::{verify_with, Entry, Options};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Helper ids from here on are bpftime's GPU helpers, which Linux does not have.
const FIRST_GPU_HELPER: i64 = 500;
/// Map type ids from here on are bpftime's GPU maps.
const FIRST_GPU_MAP: u32 = 1500;

/// Programs bpf2ptx accepts and the kernel rejects, each with the kernel's reason (a
/// substring of its last log line) and why that is not a hole in bpf2ptx: the program
/// (or glob: a trailing `*`), the reason, the explanation.
const ALLOWED: &[(&str, &str, &str)] = &[
    (
        "verifier/*",
        "missing btf func_info",
        "a text case has no BTF, and Linux needs BTF func_info for a program whose function \
         address is taken (a bpf_loop callback): a limit of the harness, not a safety verdict",
    ),
    (
        "verifier/loop_iter_*",
        "R0 !read_ok",
        "a text case has no BTF, so its kfunc calls carry no BTF id (call kfunc(NAME) has imm \
         0) and Linux cannot resolve bpf_iter_num_*: a limit of the harness, not a safety \
         verdict",
    ),
    (
        "conformance/*",
        "invalid shift",
        "bpf_conformance defines shifts by an immediate >= the width (masked); Linux refuses them",
    ),
    (
        "conformance/*",
        "unknown opcode 8d",
        "callx (a helper id in a register) is bpf_conformance's; Linux has no such opcode",
    ),
    (
        "verifier/pointer_callee_returns_caller_stack_ok.s",
        "cannot return stack pointer to the caller",
        "Linux refuses every stack pointer as a subprogram's result; bpf2ptx refuses only one \
         into the returning function's own frame (a pointer into a caller's frame stays valid)",
    ),
    (
        "verifier/pointer_caller_frame_into_caller_ok.s",
        "cannot spill pointers to stack into stack frame of the caller",
        "Linux refuses every stack pointer spilled into a caller's frame; bpf2ptx refuses only \
         one into a frame that ends before the slot's (which would dangle)",
    ),
    (
        "clang/*",
        "jumps is too complex",
        "a limit of the Linux verifier's jump history (8192 jumps between checkpoints), not a \
         safety verdict: loops over map lookups whose counters live on the stack",
    ),
    (
        "verifier/ctx_variable_move_unused_ok.s",
        "math between ctx pointer and register with unbounded min value",
        "Linux refuses the arithmetic itself; bpf2ptx refuses a context pointer moved by a \
         variable amount where it is used (an access or a helper argument), and this one is not",
    ),
    (
        "verifier/helper_perf_event_output_null_ctx_ok.s",
        "expected=ctx",
        "perf_event_output's context has no GPU meaning: the GPU lowering never reads r1, so \
         bpf2ptx takes NULL (or any number) there, as bpftime's probes pass it; Linux needs the \
         context for the CPU's perf buffer",
    ),
];

/// The kernel's complaints about memory accesses a syscall program's context does not
/// allow but a packet does: unaligned ones and ones through a moved pointer.
const CTX_ONLY: &[&str] = &[
    "invalid bpf_context access",
    "dereference of modified ctx ptr",
    "variable ctx access",
    "BPF_ATOMIC stores into R1 ctx is not allowed",
    "math between ctx pointer and register",
];

/// How a program's r1 is set up, on both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conv {
    /// A GPU probe (empty context for bpf2ptx, pt_regs for a kprobe).
    Probe,
    /// N bytes of read-write memory in r1 and N in r2.
    Mem(usize),
}

struct Case {
    /// `verifier/<file>`, `corpus/<object>/<program>` or `conformance/<file>`.
    name: String,
    obj: Object,
    prog: usize,
    conv: Conv,
    opts: Options,
}

/// One side's verdict.
#[derive(Clone, Debug)]
enum Verdict {
    Accept,
    /// Why: our rules, or the kernel's last log line.
    Reject(String),
}

#[derive(Debug)]
enum Outcome {
    AgreeAccept,
    /// Both reject: our rules, the kernel's reason.
    AgreeReject(String, String),
    /// bpf2ptx rejects (its rules), the kernel accepts.
    WeReject(String),
    /// bpf2ptx accepts, the kernel rejects (its reason); the allowance, when listed.
    WeAccept(String, Option<&'static str>),
    Skipped(String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Outcome::AgreeAccept => "agree-accept",
            Outcome::AgreeReject(..) => "agree-reject",
            Outcome::WeReject(_) => "we-reject",
            Outcome::WeAccept(_, Some(_)) => "we-accept (allowed)",
            Outcome::WeAccept(_, None) => "WE-ACCEPT",
            Outcome::Skipped(_) => "skipped",
        }
    }
}

/// The `--map` for the memory of a conformance-style program when it goes in as a map
/// value: an array of one `len`-byte value.
fn mem_map(len: usize) -> String {
    format!("2:4:{len}:1:0x0")
}

/// A prologue that points r1 at the first value of map `map` (a `len`-byte array value,
/// [`mem_map`]) and sets r2 = `len`: a map value allows what bpf2ptx's input memory allows
/// (reads, writes and atomics at variable offsets, checked against its size). Jumps and
/// calls are pc-relative, so prepending code keeps them right.
fn map_value_prologue(map: usize, len: usize) -> Vec<Insn> {
    asm(&format!("r1 = map_idx_value({map}, 0) ll\nr2 = {len}"))
}

/// `--map` arguments for the maps of `obj`.
fn map_args(obj: &Object) -> Vec<String> {
    obj.maps
        .iter()
        .map(|m| {
            let init: String = m
                .init
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            let mut spec = format!(
                "{}:{}:{}:{}:{:#x}",
                m.map_type, m.key_size, m.value_size, m.max_entries, m.flags
            );
            if !init.is_empty() {
                spec.push(':');
                spec.push_str(&init);
            }
            spec
        })
        .collect()
}

/// Loads `insns` into the kernel as a program of type `ty`; the verdict.
fn kernel_load(bin: &Path, dir: &Path, ty: &str, insns: &[Insn], maps: &[String]) -> Verdict {
    let prog = dir.join("prog.bin");
    std::fs::write(&prog, isa::encode(insns)).expect("write prog.bin");
    let mut cmd = Command::new(bin);
    cmd.args(["--type", ty, "--load-only"]);
    for m in maps {
        cmd.args(["--map", m]);
    }
    cmd.arg(&prog);
    let out = cmd.output().expect("run testrun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "testrun failed ({}): {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_string)
    };
    match (field("verdict").as_deref(), field("reason")) {
        (Some("accepted"), _) => Verdict::Accept,
        (Some("rejected"), Some(r)) => Verdict::Reject(r),
        (Some("map-failed"), Some(r)) => Verdict::Reject(format!("(map) {r}")),
        _ => panic!("testrun printed no verdict: {stdout}"),
    }
}

/// Why a program cannot go to the kernel, if it cannot.
fn not_for_kernel(case: &Case) -> Option<String> {
    let prog = &case.obj.programs[case.prog];
    let mut gpu: Vec<i64> = prog
        .insns
        .iter()
        .filter(|i| i.kind() == Kind::Call(CallKind::Helper) && i.imm >= FIRST_GPU_HELPER)
        .map(|i| i.imm)
        .collect();
    gpu.sort_unstable();
    gpu.dedup();
    let maps: Vec<String> = case
        .obj
        .maps
        .iter()
        .filter(|m| m.map_type >= FIRST_GPU_MAP)
        .map(|m| format!("{} ({})", m.name, m.map_type))
        .collect();
    let mut why = Vec::new();
    if !gpu.is_empty() {
        let ids: Vec<String> = gpu.iter().map(i64::to_string).collect();
        why.push(format!("GPU helpers {}", ids.join(",")));
    }
    if !maps.is_empty() {
        why.push(format!("GPU maps {}", maps.join(", ")));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

fn kernel_verdict(bin: &Path, dir: &Path, case: &Case) -> (Verdict, Option<&'static str>) {
    let prog = &case.obj.programs[case.prog];
    let maps = map_args(&case.obj);
    match case.conv {
        Conv::Probe => (kernel_load(bin, dir, "kprobe", &prog.insns, &maps), None),
        Conv::Mem(len) => {
            let with = |pre: Vec<Insn>| -> Vec<Insn> {
                pre.into_iter().chain(prog.insns.iter().copied()).collect()
            };
            let first = kernel_load(
                bin,
                dir,
                "syscall",
                &with(asm(&format!("mov %r2, {len}"))),
                &maps,
            );
            match &first {
                Verdict::Reject(r) if len > 0 && CTX_ONLY.iter().any(|c| r.contains(c)) => {
                    let mut maps = maps.clone();
                    maps.push(mem_map(len));
                    let pre = map_value_prologue(case.obj.maps.len(), len);
                    (
                        kernel_load(bin, dir, "syscall", &with(pre), &maps),
                        Some("adapted: r1 = a map value"),
                    )
                }
                _ => (first, None),
            }
        }
    }
}

fn allowance(name: &str, reason: &str) -> Option<&'static str> {
    ALLOWED
        .iter()
        .find(|(n, r, _)| {
            let name_ok = match n.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == *n,
            };
            name_ok && reason.contains(r)
        })
        .map(|(_, _, why)| *why)
}

fn ours(case: &Case) -> Verdict {
    let entry = match case.conv {
        Conv::Probe => Entry::probe(),
        Conv::Mem(n) => Entry::conformance(n),
    };
    match verify_with(&case.obj, case.prog, &entry, &case.opts) {
        Ok(_) => Verdict::Accept,
        Err(diags) => {
            let mut rules: Vec<&str> = diags.iter().map(|d| d.rule.name()).collect();
            rules.dedup();
            Verdict::Reject(rules.join(", "))
        }
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for f in files_with_ext(&repo_root().join("tests/verifier"), "s") {
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(&f).unwrap();
        let obj = bpf2ptx::load_bytes(&file, src.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let mut conv = Conv::Probe;
        let mut opts = Options::default();
        for line in src.lines() {
            if let Some(n) = line.trim().strip_prefix("# entry: mem ") {
                conv = Conv::Mem(n.trim().parse().expect("entry size"));
            }
            if let Some(n) = line.trim().strip_prefix("# complexity: ") {
                opts.complexity_limit = n.trim().parse().expect("complexity");
            }
        }
        cases.push(Case {
            name: format!("verifier/{file}"),
            obj,
            prog: 0,
            conv,
            opts,
        });
    }
    for (dir, source) in [
        ("tests/verifier/clang", "clang"),
        ("tests/corpus/obj", "corpus"),
    ] {
        cases.extend(objects(dir, source));
    }
    if let Some(dir) = conformance_dir() {
        for f in files_with_ext(&dir.join("tests"), "data") {
            let obj = bpf2ptx::load_path(&f).unwrap_or_else(|e| panic!("{e}"));
            let len = obj.test.as_ref().map_or(0, |t| t.mem.len());
            cases.push(Case {
                name: format!("conformance/{}", f.file_name().unwrap().to_string_lossy()),
                obj,
                prog: 0,
                conv: Conv::Mem(len),
                opts: Options::default(),
            });
        }
    }
    cases
}

/// Every program of every object in `dir` (relative to the repository), as probes named
/// `<source>/<object>/<program>`.
fn objects(dir: &str, source: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for f in files_with_ext(&repo_root().join(dir), "o") {
        let obj = bpf2ptx::load_path(&f).unwrap_or_else(|e| panic!("{e}"));
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        for (prog, p) in obj.programs.iter().enumerate() {
            cases.push(Case {
                name: format!("{source}/{file}/{}", p.name),
                obj: obj.clone(),
                prog,
                conv: Conv::Probe,
                opts: Options::default(),
            });
        }
    }
    cases
}

fn compare(bin: &Path, dir: &Path, case: &Case) -> Outcome {
    if let Some(why) = not_for_kernel(case) {
        return Outcome::Skipped(why);
    }
    let us = ours(case);
    let (kernel, adapted) = kernel_verdict(bin, dir, case);
    let note = |s: String| match adapted {
        Some(how) => format!("{s} ({how})"),
        None => s,
    };
    match (us, kernel) {
        (Verdict::Accept, Verdict::Accept) => Outcome::AgreeAccept,
        (Verdict::Reject(ours), Verdict::Reject(r)) => Outcome::AgreeReject(ours, note(r)),
        (Verdict::Reject(rules), Verdict::Accept) => Outcome::WeReject(note(rules)),
        (Verdict::Accept, Verdict::Reject(r)) => {
            let allowed = allowance(&case.name, &r);
            Outcome::WeAccept(note(r), allowed)
        }
    }
}

/// The agreement table: counts per source and outcome, then every program that is not an
/// agreement or a skip.
fn table(results: &[(String, Outcome)]) -> String {
    const LABELS: &[&str] = &[
        "agree-accept",
        "agree-reject",
        "we-reject",
        "we-accept (allowed)",
        "WE-ACCEPT",
        "skipped",
    ];
    let source = |name: &str| name.split('/').next().unwrap_or("").to_string();
    let mut counts: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
    for (name, o) in results {
        *counts
            .entry(source(name))
            .or_default()
            .entry(o.label())
            .or_default() += 1;
        *counts
            .entry("all".into())
            .or_default()
            .entry(o.label())
            .or_default() += 1;
    }
    let mut s = String::new();
    writeln!(s, "| programs | {} |", LABELS.join(" | ")).unwrap();
    writeln!(s, "|---{}|", "|---:".repeat(LABELS.len())).unwrap();
    for src in ["verifier", "clang", "corpus", "conformance", "all"] {
        let Some(c) = counts.get(src) else { continue };
        let cells: Vec<String> = LABELS
            .iter()
            .map(|l| c.get(l).copied().unwrap_or(0).to_string())
            .collect();
        writeln!(s, "| {src} | {} |", cells.join(" | ")).unwrap();
    }
    let mut section = |title: &str, pick: &dyn Fn(&Outcome) -> Option<String>| {
        let rows: Vec<String> = results
            .iter()
            .filter_map(|(n, o)| pick(o).map(|d| format!("| {n} | {} |", d.replace('|', "\\|"))))
            .collect();
        if !rows.is_empty() {
            writeln!(s, "\n{title}\n\n| program | detail |\n|---|---|").unwrap();
            for r in rows {
                writeln!(s, "{r}").unwrap();
            }
        }
    };
    section(
        "bpf2ptx accepts, the kernel rejects (allowed, with why):",
        &|o| match o {
            Outcome::WeAccept(r, Some(why)) => Some(format!("kernel: {r}; {why}")),
            _ => None,
        },
    );
    section(
        "bpf2ptx accepts, the kernel rejects (NOT allowed: failures):",
        &|o| match o {
            Outcome::WeAccept(r, None) => Some(format!("kernel: {r}")),
            _ => None,
        },
    );
    section(
        "bpf2ptx rejects, the kernel accepts (bpf2ptx's rule):",
        &|o| match o {
            Outcome::WeReject(r) => Some(r.clone()),
            _ => None,
        },
    );
    if std::env::var_os("BPF2PTX_VERBOSE").is_some() {
        section(
            "Both reject (bpf2ptx's rules; the kernel's reason):",
            &|o| match o {
                Outcome::AgreeReject(us, k) => Some(format!("{us}; kernel: {k}")),
                _ => None,
            },
        );
    }
    section("Skipped:", &|o| match o {
        Outcome::Skipped(r) => Some(r.clone()),
        _ => None,
    });
    s
}

const BEGIN: &str = "<!-- kernel-agreement:begin -->";
const END: &str = "<!-- kernel-agreement:end -->";

fn bless(table: &str) {
    let path = repo_root().join("specs/verifier.md");
    let doc = std::fs::read_to_string(&path).expect("specs/verifier.md");
    let (Some(a), Some(b)) = (doc.find(BEGIN), doc.find(END)) else {
        panic!("specs/verifier.md lacks the {BEGIN} / {END} markers");
    };
    let body = format!(
        "{BEGIN}\nKernel {} (`BLESS=1 cargo test -p bpf2ptx-tests --test verifier_kernel -- \
         --nocapture`, as root):\n\n{table}{END}",
        kernel_release()
    );
    let new = format!("{}{body}{}", &doc[..a], &doc[b + END.len()..]);
    std::fs::write(&path, new).expect("write specs/verifier.md");
}

#[test]
fn verdicts_agree_with_the_kernel() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = match build_testrun(tmp.path()) {
        Ok(bin) => bin,
        Err(why) => {
            eprintln!("verifier_kernel: skipped: {why}");
            return;
        }
    };
    // The harness itself: one program each way, so a broken testrun cannot pass as
    // agreement.
    let ok = asm("mov %r0, 0\nexit");
    let bad = asm("mov %r0, 0\nja -1\nexit");
    assert!(matches!(
        kernel_load(&bin, tmp.path(), "kprobe", &ok, &[]),
        Verdict::Accept
    ));
    assert!(matches!(
        kernel_load(&bin, tmp.path(), "kprobe", &bad, &[]),
        Verdict::Reject(_)
    ));
    let results: Vec<(String, Outcome)> = cases()
        .iter()
        .map(|c| (c.name.clone(), compare(&bin, tmp.path(), c)))
        .collect();
    let t = table(&results);
    eprintln!("kernel {}\n{t}", kernel_release());
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        bless(&t);
    }
    let failures: Vec<String> = results
        .iter()
        .filter_map(|(n, o)| match o {
            Outcome::WeAccept(r, None) => Some(format!("{n}: the kernel rejects it: {r}")),
            _ => None,
        })
        .collect();
    assert!(
        failures.is_empty(),
        "bpf2ptx accepts {} program(s) the kernel rejects (fix the verifier, or list them in \
         ALLOWED with the reason):\n{}",
        failures.len(),
        failures.join("\n")
    );
    let agree = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::AgreeAccept | Outcome::AgreeReject(..)))
        .count();
    assert!(agree >= 100, "only {agree} programs agree: a harness bug?");
}

/// The clang-built objects of tests/verifier/clang are safe programs as clang -O2 emits
/// them (loops, spills of counters whose address is taken, subprograms, ringbuf, global
/// data): bpf2ptx must accept every one. No kernel needed.
#[test]
fn clang_objects_are_accepted() {
    let mut rejected = Vec::new();
    for c in objects("tests/verifier/clang", "clang") {
        if let Verdict::Reject(rules) = ours(&c) {
            let entry = Entry::probe();
            let diags = verify_with(&c.obj, c.prog, &entry, &c.opts).unwrap_err();
            let text: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
            rejected.push(format!("{} ({rules}):\n{}", c.name, text.join("\n")));
        }
    }
    assert!(rejected.is_empty(), "rejected:\n{}", rejected.join("\n\n"));
}
