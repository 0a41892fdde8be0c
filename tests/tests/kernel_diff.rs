//! Tier 4, the kernel differential: programs the Linux kernel can run through
//! `BPF_PROG_TEST_RUN` give the same r0 there and in the reference interpreter.
//!
//! Each program is encoded back to raw instructions and handed to `tests/kernel/testrun.c`
//! (built here with `gcc -O2 testrun.c -lbpf`), which loads it as a sleepable
//! `BPF_PROG_TYPE_SYSCALL` program, the one type whose `r1` is the input memory (the kernel's
//! copy of `ctx_in`), runs it once and prints the low 32 bits of r0 (`retval` is a `u32`).
//! The interpreter runs the same program on the same memory; `r0 as u32` and the memory
//! afterwards must match.
//!
//! The programs: every test of the vendored bpf_conformance suite, and every program of
//! `tests/corpus/obj` that uses only standard Linux helpers (ids < 500) and no map. A map
//! or global-data reference is an `ld_imm64` with `src` 5/6 (map index), which the kernel
//! only resolves through an `fd_array` of live maps, so such programs are skipped with that
//! reason.
//!
//! Where the kernel rejects a program only because its calling convention differs from
//! bpf_conformance's, the program is retried once, adapted: with `r2 = len` prepended
//! (the kernel does not pass the length in r2), or as an XDP program whose prologue points
//! r1 at the packet (a syscall ctx allows only aligned accesses through an unmoved r1).
//!
//! Outcomes: `agree`; `agree (adapted)`; `kernel-rejected` (the verifier refused the program or test_run refused
//! the input: recorded with the verifier's last log line, not a failure, because the kernel
//! is stricter than bpf_conformance's model; see tests/kernel/README.md); `DIFFER` (a
//! failure); `interp-error` (a failure, unless the kernel rejected the program too);
//! `skipped` (not sent to the kernel, with the reason).
//!
//! Never fails for an environment reason: without gcc, the libbpf headers or a usable
//! bpf(2) it prints why and passes. With `BLESS=1` it writes the summary to
//! tests/kernel/results.md, the record of one machine's run.

use bpf2ptx_compiler::interp::{self, Options};
use bpf2ptx_compiler::isa::table::{CallKind, Kind, Pseudo};
use bpf2ptx_compiler::isa::{self, Insn};
use bpf2ptx_compiler::program::{Object, Program};
use bpf2ptx_tests::kernel::{asm, build_testrun, release as kernel_release};
use bpf2ptx_tests::{conformance_dir, files_with_ext, repo_root};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Helper ids from here on are bpftime's GPU helpers, which Linux does not have.
const FIRST_GPU_HELPER: i64 = 500;

/// Input memory for corpus programs: a zeroed `struct pt_regs` (x86-64), since they are
/// kprobes and read their context.
const PT_REGS_SIZE: usize = 168;

/// What the kernel made of a program.
#[derive(Debug)]
enum Kernel {
    /// It ran; the low 32 bits of r0 and the memory as the program left it.
    Ran(u32, Vec<u8>),
    /// The verifier refused it, or test_run refused the input.
    Rejected(String),
}

/// The outcome of one program.
#[derive(Debug)]
enum Outcome {
    Agree,
    /// Agrees once adapted to the kernel's calling convention (the note says how), after
    /// the kernel refused the program as it is.
    AgreeAdapted(String),
    KernelRejected(String),
    Differ(String),
    InterpError(String),
    Skipped(String),
}

impl Outcome {
    fn label(&self) -> &'static str {
        match self {
            Outcome::Agree => "agree",
            Outcome::AgreeAdapted(_) => "agree (adapted)",
            Outcome::KernelRejected(_) => "kernel-rejected",
            Outcome::Differ { .. } => "DIFFER",
            Outcome::InterpError(_) => "interp-error",
            Outcome::Skipped(_) => "skipped",
        }
    }
}

/// One program to compare.
struct Case {
    /// `conformance/<file>` or `corpus/<object>/<program>`.
    name: String,
    obj: Object,
    prog: usize,
    mem: Vec<u8>,
}

/// Runs `insns` on `mem` in the kernel through testrun, as a program of type `ty`
/// (`syscall` or `xdp`).
fn run_kernel(bin: &Path, dir: &Path, ty: &str, insns: &[Insn], mem: &[u8]) -> Kernel {
    let prog = dir.join("prog.bin");
    let mem_path = dir.join("mem.bin");
    std::fs::write(&prog, isa::encode(insns)).expect("write prog.bin");
    let mut cmd = Command::new(bin);
    cmd.args(["--type", ty]).arg(&prog);
    if !mem.is_empty() {
        std::fs::write(&mem_path, mem).expect("write mem.bin");
        cmd.arg(&mem_path);
    }
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
    if let Some(v) = field("retval") {
        let mem = field("mem").map_or_else(Vec::new, |h| {
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("mem is hex"))
                .collect()
        });
        return Kernel::Ran(v.parse().expect("retval is a u32"), mem);
    }
    match (field("verdict").as_deref(), field("reason")) {
        (Some("rejected"), Some(r)) => Kernel::Rejected(format!("verifier: {r}")),
        (Some("run-failed"), Some(r)) => Kernel::Rejected(r),
        _ => panic!("testrun printed neither retval nor a verdict: {stdout}"),
    }
}

/// Why a program cannot be sent to the kernel as raw instructions, if it cannot.
fn not_for_kernel(obj: &Object, prog: &Program) -> Option<String> {
    let mut why = Vec::new();
    let mut gpu: Vec<i64> = Vec::new();
    let mut maps: Vec<&str> = Vec::new();
    let mut kfunc = false;
    for i in &prog.insns {
        match i.kind() {
            Kind::Call(CallKind::Helper) if i.imm >= FIRST_GPU_HELPER => gpu.push(i.imm),
            Kind::Call(CallKind::Kfunc) => kfunc = true,
            Kind::LdImm64(Pseudo::MapIdx | Pseudo::MapIdxValue) => {
                let m = (i.imm & 0xffff_ffff) as usize;
                maps.push(obj.maps.get(m).map_or("?", |m| m.name.as_str()));
            }
            _ => {}
        }
    }
    gpu.sort_unstable();
    gpu.dedup();
    maps.sort_unstable();
    maps.dedup();
    if !gpu.is_empty() {
        let ids: Vec<String> = gpu.iter().map(i64::to_string).collect();
        why.push(format!("GPU helpers {}", ids.join(",")));
    }
    if kfunc {
        why.push("kfunc calls".into());
    }
    if !maps.is_empty() {
        why.push(format!(
            "map references {} (ld_imm64 src 5/6 needs an fd_array)",
            maps.join(",")
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The verifier's complaint about a program that reads r2 before writing it:
/// bpf_conformance passes the memory length in r2, the kernel passes nothing.
const R2_UNSET: &str = "verifier: R2 !read_ok";

/// The verifier's complaints about memory accesses a syscall program's ctx does not allow
/// but packet data does: unaligned ones and ones through a moved pointer.
const CTX_ONLY: &[&str] = &[
    "invalid bpf_context access",
    "dereference of modified ctx ptr",
];

/// What an XDP program whose packet is prepared by [`packet_prologue`] returns when the
/// packet is shorter than the memory (it never is).
const SHORT_PACKET: u32 = 0xbad;

/// A prologue that turns an XDP program into one that sees the packet the way a
/// bpf_conformance program sees its memory: r1 = the data, checked to be `len` bytes long
/// (the verifier then allows accesses below `len`), r2 = `len`, r3 = 0 as in the
/// interpreter. Jumps, calls and function addresses are pc-relative, so prepending code
/// keeps them right.
fn packet_prologue(len: usize) -> Vec<Insn> {
    let text = format!(
        "ldxw %r2, [%r1+4]\n\
         ldxw %r1, [%r1+0]\n\
         mov %r3, %r1\n\
         add %r3, {len}\n\
         jle %r3, %r2, +2\n\
         mov %r0, {SHORT_PACKET}\n\
         exit\n\
         mov %r2, {len}\n\
         mov %r3, 0\n"
    );
    asm(&text)
}

/// Checks the harness on two programs whose results are known, through both program types,
/// so that a broken testrun cannot pass as agreement.
fn self_check(bin: &Path, dir: &Path) {
    let syscall = asm("stw [%r1+0], 0x55667788\nmov %r0, 0x1234\nexit");
    match run_kernel(bin, dir, "syscall", &syscall, &[0; 4]) {
        Kernel::Ran(0x1234, m) if m == [0x88, 0x77, 0x66, 0x55] => {}
        k => panic!("self-check (syscall): {k:?}, expected retval 0x1234 and mem 88776655"),
    }
    let mut xdp = packet_prologue(5);
    xdp.extend(asm("ldxw %r0, [%r1+1]\nstb [%r1+0], 7\nexit"));
    match run_kernel(bin, dir, "xdp", &xdp, &[1, 2, 3, 4, 5]) {
        Kernel::Ran(0x0504_0302, m) if m == [7, 2, 3, 4, 5] => {}
        k => panic!("self-check (xdp): {k:?}, expected retval 0x05040302 and mem 0702030405"),
    }
}

fn compare(bin: &Path, dir: &Path, case: &Case) -> Outcome {
    let prog = &case.obj.programs[case.prog];
    if let Some(why) = not_for_kernel(&case.obj, prog) {
        return Outcome::Skipped(why);
    }
    let mut mem = case.mem.clone();
    let interp = interp::run(&case.obj, case.prog, &mut mem, &Options::default());
    let mut kernel = run_kernel(bin, dir, "syscall", &prog.insns, &case.mem);
    let mut adapted = None;
    let prepend = |pre: Vec<Insn>| -> Vec<Insn> {
        pre.into_iter().chain(prog.insns.iter().copied()).collect()
    };
    if let Kernel::Rejected(why) = &kernel {
        let len = case.mem.len();
        if why == R2_UNSET {
            // Give the kernel the interpreter's r2.
            let mov = asm(&format!("mov %r2, {len}"));
            adapted = Some(format!(
                "the kernel rejects it as it is ({why}: it does not pass the length in r2); \
                 with `r2 = {len}` prepended"
            ));
            kernel = run_kernel(bin, dir, "syscall", &prepend(mov), &case.mem);
        } else if CTX_ONLY.iter().any(|c| why.contains(c)) {
            adapted = Some(format!(
                "the kernel rejects it as a syscall program ({why}); as an XDP program \
                 on a {len}-byte packet"
            ));
            kernel = run_kernel(bin, dir, "xdp", &prepend(packet_prologue(len)), &case.mem);
        }
    }
    match (kernel, interp) {
        (Kernel::Ran(k, kmem), Ok(r0)) if k == r0 as u32 && (kmem.is_empty() || kmem == mem) => {
            match adapted {
                None => Outcome::Agree,
                Some(how) => Outcome::AgreeAdapted(format!("{how} both give {k:#x}")),
            }
        }
        (Kernel::Ran(k, kmem), Ok(r0)) => {
            let mut d = format!("kernel retval={k:#x}, interpreter r0={r0:#x}");
            if !kmem.is_empty() && kmem != mem {
                let at = kmem.iter().zip(&mem).position(|(a, b)| a != b).unwrap_or(0);
                write!(
                    d,
                    "; memory differs from byte {at}: kernel {:02x?}, interpreter {:02x?}",
                    &kmem[at..(at + 8).min(kmem.len())],
                    &mem[at..(at + 8).min(mem.len())]
                )
                .unwrap();
            }
            if let Some(how) = adapted {
                write!(d, " ({how})").unwrap();
            }
            Outcome::Differ(d)
        }
        (Kernel::Ran(k, _), Err(e)) => Outcome::InterpError(format!("kernel retval={k:#x}, {e}")),
        (Kernel::Rejected(r), Ok(_)) => Outcome::KernelRejected(r),
        (Kernel::Rejected(r), Err(e)) => {
            Outcome::KernelRejected(format!("{r} (the interpreter fails too: {e})"))
        }
    }
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let dir = conformance_dir().expect("the vendored bpf_conformance suite (tests/conformance)");
    for f in files_with_ext(&dir.join("tests"), "data") {
        let obj = bpf2ptx::load_path(&f).unwrap_or_else(|e| panic!("{e}"));
        let mem = obj.test.as_ref().expect("a conformance test").mem.clone();
        let name = format!("conformance/{}", f.file_name().unwrap().to_string_lossy());
        cases.push(Case {
            name,
            obj,
            prog: 0,
            mem,
        });
    }
    for f in files_with_ext(&repo_root().join("tests/corpus/obj"), "o") {
        let obj = bpf2ptx::load_path(&f).unwrap_or_else(|e| panic!("{e}"));
        let file = f.file_name().unwrap().to_string_lossy().into_owned();
        for (prog, p) in obj.programs.iter().enumerate() {
            cases.push(Case {
                name: format!("corpus/{file}/{}", p.name),
                obj: obj.clone(),
                prog,
                mem: vec![0; PT_REGS_SIZE],
            });
        }
    }
    cases
}

/// A reason with its numbers replaced by `N` (register names such as `R2` stay), to group
/// rejections by kind.
fn reason_class(reason: &str) -> String {
    reason
        .split(' ')
        .map(|word| {
            let (key, value) = word.rsplit_once('=').unwrap_or(("", word));
            let digits = value.strip_prefix('-').unwrap_or(value);
            if digits.starts_with(|c: char| c.is_ascii_digit()) {
                format!("{key}{}N", if key.is_empty() { "" } else { "=" })
            } else {
                word.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn summary(results: &[(String, Outcome)]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rejected: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (name, o) in results {
        *counts.entry(o.label()).or_default() += 1;
        if let Outcome::KernelRejected(r) = o {
            rejected.entry(reason_class(r)).or_default().push(name);
        }
    }
    let mut s = String::new();
    writeln!(s, "| outcome | programs |\n|---|---|").unwrap();
    for (label, n) in &counts {
        writeln!(s, "| {label} | {n} |").unwrap();
    }
    writeln!(s, "\nKernel rejections by reason:\n").unwrap();
    writeln!(s, "| reason | count |\n|---|---|").unwrap();
    let mut by_count: Vec<_> = rejected.iter().collect();
    by_count.sort_by_key(|(r, names)| (std::cmp::Reverse(names.len()), r.as_str()));
    for (reason, names) in &by_count {
        writeln!(s, "| {} | {} |", reason.replace('|', "\\|"), names.len()).unwrap();
    }
    writeln!(s, "\nEvery program that is not `agree`:\n").unwrap();
    writeln!(s, "| program | outcome | detail |\n|---|---|---|").unwrap();
    for (name, o) in results {
        let detail = match o {
            Outcome::Agree => continue,
            Outcome::AgreeAdapted(r)
            | Outcome::KernelRejected(r)
            | Outcome::Differ(r)
            | Outcome::InterpError(r)
            | Outcome::Skipped(r) => r.clone(),
        };
        let name = name.strip_prefix("conformance/").unwrap_or(name);
        writeln!(
            s,
            "| {name} | {} | {} |",
            o.label(),
            detail.replace('|', "\\|")
        )
        .unwrap();
    }
    s
}

#[test]
fn kernel_and_interpreter_agree() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let bin = match build_testrun(tmp.path()) {
        Ok(bin) => bin,
        Err(why) => {
            eprintln!("kernel_diff: skipped: {why}");
            return;
        }
    };
    self_check(&bin, tmp.path());
    let cases = cases();
    let results: Vec<(String, Outcome)> = cases
        .iter()
        .map(|c| (c.name.clone(), compare(&bin, tmp.path(), c)))
        .collect();
    let table = summary(&results);
    eprintln!("kernel {}\n{table}", kernel_release());
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        let head = format!(
            "# Kernel differential: results on this machine\n\n\
             kernel {}; `BLESS=1 cargo test -p bpf2ptx-tests --test kernel_diff -- --nocapture`\n\
             (tests/tests/kernel_diff.rs; tests/kernel/testrun.c loads each program as a\n\
             sleepable BPF_PROG_TYPE_SYSCALL program and runs it once through BPF_PROG_TEST_RUN;\n\
             r0 is compared as its low 32 bits). A record, not a snapshot: the test never reads\n\
             it. See tests/kernel/README.md for what the rejections mean.\n\n",
            kernel_release()
        );
        let path = repo_root().join("tests/kernel/results.md");
        std::fs::write(&path, head + &table).expect("write tests/kernel/results.md");
    }
    let failures: Vec<String> = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Differ(_) | Outcome::InterpError(_)))
        .map(|(n, o)| match o {
            Outcome::Differ(d) => format!("{n}: DIFFER {d}"),
            Outcome::InterpError(e) => format!("{n}: interp-error ({e})"),
            _ => unreachable!(),
        })
        .collect();
    let agree = results
        .iter()
        .filter(|(_, o)| matches!(o, Outcome::Agree | Outcome::AgreeAdapted(_)))
        .count();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The suite is mostly plain ALU/jump/memory code the kernel runs: guard against a
    // harness bug turning everything into rejections.
    assert!(agree >= 100, "only {agree} programs agree");
}
