//! The PTX code-quality table: what ptxas makes of the backend's output.
//!
//!     cargo run --release -p bpf2ptx-benches --example code-quality -- -o benches/results/code-quality.md
//!
//! For every corpus object (`tests/corpus/obj/*.o`) and every bpf_conformance program
//! (`tests/conformance/tests/*.data`) that verifies and lowers, the PTX the CLI emits
//! (`--target sm_70`, no `--entry`) goes through `ptxas -c -v -arch=sm_90` (relocatable:
//! every `.func` is compiled standalone, as a probe is before it is linked into a kernel).
//! Per function: registers (EIATTR_REGCOUNT of the cubin's `.nv.info`; ptxas -v prints no
//! register count for a non-entry function), stack frame bytes and spill stores/loads
//! (ptxas -v), joined with the backend's `frame_layouts` (BPF stack bytes, in_registers)
//! and the PTX calls each function makes. A second build with `--entry`, without `-c`
//! (whole program: ptxas may inline the program into its `.entry` kernel), gives the
//! registers of the kernel, the figure closest to a probe inlined into an application.
//!
//! ptxas: `$PTXAS`, else the project's `.venv`, else `PATH` (`bpf2ptx_tests::ptxas`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use bpf2ptx::compile;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::isa::table::{AluOp, Src, Width};
use bpf2ptx_compiler::isa::Kind;
use bpf2ptx_compiler::program::Program;
use bpf2ptx_tests::{conformance_dir, files_with_ext, ptxas, repo_root};

const ARCH: &str = "sm_90";

/// ptxas's figures for one function.
#[derive(Clone, Debug, Default)]
struct Ptxas {
    regs: Option<u32>,
    frame: u32,
    spill_st: u32,
    spill_ld: u32,
}

/// One function of a lowered program.
#[derive(Clone, Debug)]
struct FuncRow {
    symbol: String,
    insns: usize,
    stack: u32,
    in_registers: bool,
    /// Functions it calls in the PTX (`call`/`call.uni`).
    calls: BTreeSet<String>,
    /// The PTX has a 64-bit `div`/`rem`, which ptxas implements with a subroutine call.
    div64: bool,
    ptxas: Ptxas,
    /// Heuristic: the first instruction that uses a frame pointer other than as the base of
    /// a constant-offset load/store (only looked for when the frame is not in registers).
    escape: Option<String>,
}

/// One lowered program.
#[derive(Clone, Debug)]
struct ProgRow {
    file: String,
    funcs: Vec<FuncRow>,
    /// Registers of the program's `.entry` kernel in a whole-program build.
    entry_regs: Option<u32>,
    entry_frame: Option<u32>,
}

/// Everything measured over one input file.
struct FileResult {
    progs: Vec<ProgRow>,
    /// Runtime helpers in the module (name → figures).
    helpers: BTreeMap<String, Ptxas>,
}

fn main() {
    let mut out_path: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" => out_path = Some(args.next().expect("-o needs a path").into()),
            _ => panic!("usage: code-quality [-o OUT.md]"),
        }
    }
    let ptxas = ptxas().expect("ptxas not found: run `bash .ci/run` once or set PTXAS");
    let version = Command::new(&ptxas)
        .arg("--version")
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains("release"))
                .collect::<String>()
        })
        .unwrap_or_default();
    // The code measured: `$BPF2PTX_CODE` (for a run from an exported tree), else the
    // commit and whether the tree had changes, where git works.
    let code = std::env::var("BPF2PTX_CODE").ok().or_else(|| {
        Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .current_dir(repo_root())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    });
    let version = match code {
        Some(c) => format!("{version}; code: `{c}`"),
        None => version,
    };
    let tmp = tempfile::tempdir().expect("temp dir");

    let mut corpus = Vec::new();
    let mut corpus_failed = Vec::new();
    let mut helpers = BTreeMap::new();
    for f in files_with_ext(&repo_root().join("tests/corpus/obj"), "o") {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        match measure(&ptxas, tmp.path(), &f) {
            Ok(r) => {
                helpers.extend(r.helpers);
                corpus.extend(r.progs);
            }
            Err(e) => corpus_failed.push((name, e)),
        }
    }
    let conf = conformance_dir().expect("vendored conformance suite");
    let conf_files = files_with_ext(&conf.join("tests"), "data");
    let mut confs = Vec::new();
    let mut conf_failed = Vec::new();
    for f in &conf_files {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        match measure(&ptxas, tmp.path(), f) {
            Ok(r) => {
                helpers.extend(r.helpers);
                confs.extend(r.progs.into_iter().map(|mut p| {
                    p.file = name.clone();
                    p
                }));
            }
            Err(e) => conf_failed.push((name, e)),
        }
    }

    let md = report(
        &version,
        &corpus,
        &corpus_failed,
        conf_files.len(),
        &confs,
        &conf_failed,
        &helpers,
    );
    match out_path {
        Some(p) => std::fs::write(&p, md).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
        None => print!("{md}"),
    }
}

/// Loads, verifies and lowers `path`, then runs ptxas on the PTX twice (relocatable and
/// whole program with entries). The error is the CLI's message, on one line.
fn measure(ptxas: &Path, dir: &Path, path: &Path) -> Result<FileResult, String> {
    let root = format!("{}/", repo_root().display());
    let one_line = |s: String| s.replace(&root, "").lines().collect::<Vec<_>>().join(" / ");
    let obj = bpf2ptx::load_path(path).map_err(|e| one_line(e.to_string()))?;
    let opts = |entry| ptx::Options {
        target: "sm_70".into(),
        entry,
        ..Default::default()
    };
    // `compile` verifies and lowers with the verifier's facts, as the CLI does.
    let text = compile::compile(&obj, &opts(false)).map_err(|e| one_line(e.to_string()))?;
    let with_entry = compile::compile(&obj, &opts(true)).map_err(|e| one_line(e.to_string()))?;
    let stem = path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(['.', '-'], "_");

    let (props, cubin) = run_ptxas(ptxas, dir, &format!("{stem}_rel"), &text, true)?;
    let regs = cubin_regcounts(&cubin)?;
    let (entry_props, entry_cubin) =
        run_ptxas(ptxas, dir, &format!("{stem}_whole"), &with_entry, false)?;
    let entry_regs = cubin_regcounts(&entry_cubin)?;
    let ptx_funcs = ptx_functions(&text);

    let figures = |sym: &str| Ptxas {
        regs: regs.get(sym).copied(),
        ..props.get(sym).cloned().unwrap_or_default()
    };
    let mut progs = Vec::new();
    let mut defined = BTreeSet::new();
    for prog in &obj.programs {
        let layouts = ptx::frame_layouts(prog);
        let mut funcs = Vec::new();
        for (k, l) in layouts.iter().enumerate() {
            defined.insert(l.symbol.clone());
            let (a, b) = func_range(prog, k);
            funcs.push(FuncRow {
                symbol: l.symbol.clone(),
                insns: b - a,
                stack: l.bytes,
                in_registers: l.in_registers,
                calls: ptx_funcs
                    .get(&l.symbol)
                    .map(|f| f.calls.clone())
                    .unwrap_or_default(),
                div64: ptx_funcs.get(&l.symbol).is_some_and(|f| f.div64),
                ptxas: figures(&l.symbol),
                escape: (l.bytes > 0 && !l.in_registers)
                    .then(|| first_escape(prog, a, b))
                    .flatten(),
            });
        }
        let entry = ptx::entry_symbol(prog);
        progs.push(ProgRow {
            file: obj.file.rsplit('/').next().unwrap_or(&obj.file).to_string(),
            funcs,
            entry_regs: entry_regs.get(&entry).copied(),
            entry_frame: entry_props.get(&entry).map(|p| p.frame),
        });
    }
    let helpers = ptx_funcs
        .keys()
        .filter(|s| !defined.contains(*s))
        .map(|s| (s.clone(), figures(s)))
        .collect();
    Ok(FileResult { progs, helpers })
}

/// The instruction range of function `k` of a program.
fn func_range(prog: &Program, k: usize) -> (usize, usize) {
    let a = prog.funcs.get(k).map_or(0, |f| f.start);
    let b = prog.funcs.get(k + 1).map_or(prog.insns.len(), |f| f.start);
    (a, b)
}

/// A linear scan (no control flow) for the first instruction that uses a register holding
/// r10 (+ constants) other than as the base of a load or store: what makes the backend
/// keep the frame in `.local` memory (its own analysis follows the CFG; this names a
/// likely culprit for the table).
fn first_escape(prog: &Program, a: usize, b: usize) -> Option<String> {
    let mut fp = [false; 11];
    fp[10] = true;
    for ins in &prog.insns[a..b] {
        let (d, s) = (ins.dst as usize % 11, ins.src as usize % 11);
        let escapes = match ins.kind() {
            Kind::Alu(AluOp::Mov, Width::W64, Src::X) => {
                fp[d] = fp[s];
                false
            }
            Kind::Alu(AluOp::Add | AluOp::Sub, Width::W64, Src::K) => false,
            Kind::Alu(_, _, src) => {
                let e = fp[d] || (src == Src::X && fp[s]);
                fp[d] = false;
                e
            }
            Kind::Neg(_) | Kind::Endian(..) => fp[d],
            Kind::Movsx(..) => {
                let e = fp[s];
                fp[d] = false;
                e
            }
            Kind::Jmp(_, _, src) => fp[d] || (src == Src::X && fp[s]),
            Kind::Call(_) | Kind::Callx => {
                let e = fp[1..=5].iter().any(|&f| f);
                fp[..=5].iter_mut().for_each(|f| *f = false);
                e
            }
            Kind::Exit => fp[0],
            Kind::Ldx(..) | Kind::LdImm64(_) => {
                fp[d] = false;
                false
            }
            Kind::Stx(_) | Kind::Atomic(..) => fp[s],
            Kind::LdAbs(_) | Kind::LdInd(_) => {
                let e = matches!(ins.kind(), Kind::LdInd(_)) && fp[s];
                fp[..=5].iter_mut().for_each(|f| *f = false);
                e
            }
            _ => false,
        };
        if escapes {
            return Some(ins.to_string());
        }
    }
    None
}

/// Runs `ptxas -v -arch=ARCH` (with `-c` when `reloc`) on `text`; returns the per-function
/// figures of its `-v` output and the cubin.
fn run_ptxas(
    ptxas: &Path,
    dir: &Path,
    stem: &str,
    text: &str,
    reloc: bool,
) -> Result<(BTreeMap<String, Ptxas>, Vec<u8>), String> {
    let src = dir.join(format!("{stem}.ptx"));
    let cubin = dir.join(format!("{stem}.cubin"));
    std::fs::write(&src, text).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(ptxas);
    if reloc {
        cmd.arg("-c");
    }
    let out = cmd
        .arg("-v")
        .arg(format!("-arch={ARCH}"))
        .arg(&src)
        .arg("-o")
        .arg(&cubin)
        .output()
        .map_err(|e| format!("running ptxas: {e}"))?;
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("ptxas failed: {}", log.trim()));
    }
    let mut props = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = Some(rest.trim().to_string());
        } else if let (Some(name), true) = (&current, line.contains("bytes stack frame")) {
            let nums: Vec<u32> = line
                .split(',')
                .filter_map(|p| p.split_whitespace().next()?.parse().ok())
                .collect();
            if let [frame, st, ld] = nums[..] {
                props.insert(
                    name.clone(),
                    Ptxas {
                        regs: None,
                        frame,
                        spill_st: st,
                        spill_ld: ld,
                    },
                );
            }
            current = None;
        }
    }
    let bytes = std::fs::read(&cubin).map_err(|e| e.to_string())?;
    Ok((props, bytes))
}

/// Register count per function symbol: the EIATTR_REGCOUNT (0x2f) attributes of the
/// cubin's `.nv.info` section, each `(symbol index: u32, registers: u32)`.
fn cubin_regcounts(cubin: &[u8]) -> Result<BTreeMap<String, u32>, String> {
    const EIFMT_SVAL: u8 = 4;
    const EIATTR_REGCOUNT: u8 = 0x2f;
    let elf = goblin::elf::Elf::parse(cubin).map_err(|e| format!("cubin: {e}"))?;
    let mut regs = BTreeMap::new();
    for sh in &elf.section_headers {
        if elf.shdr_strtab.get_at(sh.sh_name) != Some(".nv.info") {
            continue;
        }
        let start = sh.sh_offset as usize;
        let data = &cubin[start..start + sh.sh_size as usize];
        let mut i = 0;
        while i + 4 <= data.len() {
            let (fmt, attr) = (data[i], data[i + 1]);
            let size = u16::from_le_bytes([data[i + 2], data[i + 3]]) as usize;
            if fmt != EIFMT_SVAL {
                i += 4;
                continue;
            }
            let val = &data[i + 4..i + 4 + size];
            if attr == EIATTR_REGCOUNT && size == 8 {
                let sym = u32::from_le_bytes(val[0..4].try_into().unwrap()) as usize;
                let n = u32::from_le_bytes(val[4..8].try_into().unwrap());
                if let Some(name) = elf.syms.get(sym).and_then(|s| elf.strtab.get_at(s.st_name)) {
                    regs.insert(name.to_string(), n);
                }
            }
            i += 4 + size;
        }
    }
    Ok(regs)
}

/// What the PTX body of one function does that matters to ptxas's frame.
#[derive(Default)]
struct PtxFunc {
    calls: BTreeSet<String>,
    div64: bool,
}

/// Every function defined in a PTX module, with the functions its body calls.
fn ptx_functions(text: &str) -> BTreeMap<String, PtxFunc> {
    let mut funcs = BTreeMap::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(head) = line
            .strip_prefix(".visible .func ")
            .or_else(|| line.strip_prefix(".func "))
        else {
            continue;
        };
        if line.trim_end().ends_with(';') || lines.peek().map(|l| l.trim()) != Some("{") {
            continue;
        }
        let mut head = head.trim_start();
        if head.starts_with('(') {
            head = head[head.find(')').map_or(0, |p| p + 1)..].trim_start();
        }
        let name = head[..head.find('(').unwrap_or(head.len())]
            .trim()
            .to_string();
        let mut f = PtxFunc::default();
        for body in lines.by_ref() {
            if body == "}" {
                break;
            }
            let t = body.trim_start();
            // The opcode, after an optional `@%p` guard.
            let mut words = t.split_whitespace();
            let op = match words.next() {
                Some(g) if g.starts_with('@') => words.next().unwrap_or(""),
                w => w.unwrap_or(""),
            };
            if ["div.s64", "div.u64", "rem.s64", "rem.u64"].contains(&op) {
                f.div64 = true;
            }
            let Some(rest) = t
                .strip_prefix("call.uni ")
                .or_else(|| t.strip_prefix("call "))
            else {
                continue;
            };
            let mut rest = rest.trim_start();
            if rest.starts_with('(') {
                rest = rest[rest.find(')').map_or(0, |p| p + 1)..].trim_start_matches([',', ' ']);
            }
            let callee: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            if !callee.is_empty() {
                f.calls.insert(callee);
            }
        }
        funcs.insert(name, f);
    }
    funcs
}

fn yn(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn opt(n: Option<u32>) -> String {
    n.map_or("?".into(), |n| n.to_string())
}

/// Why a function has a nonzero ptxas frame.
fn frame_cause(f: &FuncRow) -> String {
    let mut why = Vec::new();
    if f.stack > 0 && !f.in_registers {
        why.push(format!(
            "BPF frame in .local ({} B){}",
            f.stack,
            f.escape.as_ref().map_or(String::new(), |e| format!(
                ", frame address escapes at `{e}`"
            ))
        ));
    }
    if !f.calls.is_empty() {
        let list: Vec<&str> = f.calls.iter().map(String::as_str).collect();
        why.push(format!("ABI calls to {}", list.join(", ")));
    }
    if f.div64 {
        why.push("64-bit div/rem (ptxas calls its division subroutine)".into());
    }
    if why.is_empty() {
        why.push("register spills".into());
    }
    why.join("; ")
}

fn histogram(values: impl Iterator<Item = Option<u32>>) -> String {
    let mut h: BTreeMap<u32, usize> = BTreeMap::new();
    let mut unknown = 0;
    for v in values {
        match v {
            Some(v) => *h.entry(v).or_default() += 1,
            None => unknown += 1,
        }
    }
    let mut parts: Vec<String> = h.iter().map(|(r, n)| format!("{r}: {n}")).collect();
    if unknown > 0 {
        parts.push(format!("unknown: {unknown}"));
    }
    parts.join(", ")
}

#[allow(clippy::too_many_arguments)]
fn report(
    version: &str,
    corpus: &[ProgRow],
    corpus_failed: &[(String, String)],
    conf_total: usize,
    confs: &[ProgRow],
    conf_failed: &[(String, String)],
    helpers: &BTreeMap<String, Ptxas>,
) -> String {
    let mut md = String::new();
    let w = &mut md;
    let _ = writeln!(w, "# PTX code quality (ptxas -v)\n");
    let _ = writeln!(w, "Generated by (from the workspace root):\n");
    let _ = writeln!(
        w,
        "    cargo run --release -p bpf2ptx-benches --example code-quality -- -o benches/results/code-quality.md\n"
    );
    let _ = writeln!(
        w,
        "which, for each input that verifies and lowers, writes the PTX `bpf2ptx FILE -o X.ptx` \
         writes (`--target sm_70`, no `--entry`) and runs `ptxas -c -v -arch={ARCH} X.ptx` \
         (relocatable: each `.func` compiled standalone, the probe form), and once more with \
         `--entry` and without `-c` (whole program, `ptxas -v -arch={ARCH}`). ptxas: {version}.\n"
    );
    let _ = writeln!(
        w,
        "- *regs*: registers of the function in the relocatable build (EIATTR_REGCOUNT of the \
         cubin; ptxas -v prints none for a non-entry function). *frame*, *spill st/ld*: ptxas -v, \
         bytes. *kernel regs*: the `.entry` kernel of the whole-program build (ptxas can inline \
         the program into it), the closest figure to a probe inlined into an application kernel.\n\
         - *BPF stack*, *in regs*: `back::ptx::frame_layouts` (the backend keeps a function's BPF \
         stack in PTX registers when every access is at a constant r10 offset and no frame \
         address escapes).\n\
         - *calls*: the functions the PTX body calls (`call.uni`): the runtime's unaligned-access \
         helpers `bpf2ptx_ldu*/stu*` and bpf-to-bpf calls. A call makes ptxas use the ABI, which \
         gives the caller a stack frame for callee-saved registers even when the BPF stack is in \
         registers.\n\
         - *64-bit div/rem*: ptxas implements `div`/`rem` `.u64`/`.s64` (even by a constant \
         power of two) with a call to an internal subroutine, which in a relocatable function \
         costs a stack frame like any call (8 B unsigned, 24-32 B signed).\n"
    );

    // Corpus table.
    let _ = writeln!(w, "## Corpus programs (tests/corpus/obj)\n");
    let _ = writeln!(
        w,
        "| object | function | BPF insns | BPF stack | in regs | calls | regs | frame | spill st | spill ld | kernel regs |"
    );
    let _ = writeln!(w, "|---|---|--:|--:|:-:|---|--:|--:|--:|--:|--:|");
    for p in corpus {
        for (k, f) in p.funcs.iter().enumerate() {
            let calls: Vec<&str> = f.calls.iter().map(String::as_str).collect();
            let _ = writeln!(
                w,
                "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                p.file,
                f.symbol,
                f.insns,
                f.stack,
                if f.stack == 0 {
                    "-"
                } else {
                    yn(f.in_registers)
                },
                if calls.is_empty() {
                    "-".to_string()
                } else {
                    calls.join(", ")
                },
                opt(f.ptxas.regs),
                f.ptxas.frame,
                f.ptxas.spill_st,
                f.ptxas.spill_ld,
                if k == 0 {
                    opt(p.entry_regs)
                } else {
                    String::new()
                },
            );
        }
    }
    let _ = writeln!(w);
    let nonzero: Vec<&FuncRow> = corpus
        .iter()
        .flat_map(|p| &p.funcs)
        .filter(|f| f.ptxas.frame > 0)
        .collect();
    if !nonzero.is_empty() {
        let _ = writeln!(w, "Nonzero frames in the corpus:\n");
        for f in nonzero {
            let _ = writeln!(
                w,
                "- `{}` ({} B): {}",
                f.symbol,
                f.ptxas.frame,
                frame_cause(f)
            );
        }
        let _ = writeln!(w);
    }
    let _ = writeln!(
        w,
        "Corpus objects that do not lower ({}):\n",
        corpus_failed.len()
    );
    for (name, why) in corpus_failed {
        let _ = writeln!(w, "- {name}: {why}");
    }
    let _ = writeln!(w);

    // Conformance summary.
    let funcs = || confs.iter().flat_map(|p| &p.funcs);
    let uses_stack = |p: &ProgRow| p.funcs.iter().any(|f| f.stack > 0);
    let all_in_regs = |p: &ProgRow| p.funcs.iter().all(|f| f.stack == 0 || f.in_registers);
    let has_calls = |p: &ProgRow| p.funcs.iter().any(|f| !f.calls.is_empty());
    let zero_frame = |p: &ProgRow| p.funcs.iter().all(|f| f.ptxas.frame == 0);
    let stack: Vec<&ProgRow> = confs.iter().filter(|p| uses_stack(p)).collect();
    let in_regs: Vec<&ProgRow> = stack.iter().copied().filter(|p| all_in_regs(p)).collect();
    let in_regs_zero = in_regs.iter().filter(|p| zero_frame(p)).count();
    let in_regs_calls: Vec<&&ProgRow> = in_regs.iter().filter(|p| has_calls(p)).collect();
    let in_regs_nocall = in_regs.len() - in_regs_calls.len();
    let in_regs_nocall_zero = in_regs
        .iter()
        .filter(|p| !has_calls(p) && zero_frame(p))
        .count();
    let _ = writeln!(w, "## bpf_conformance programs (tests/conformance/tests)\n");
    let _ = writeln!(
        w,
        "- programs: {conf_total}; verified and lowered: {}; functions: {}",
        confs.len(),
        funcs().count()
    );
    let _ = writeln!(
        w,
        "- ptxas stack frame 0 for every function: {} of {} programs",
        confs.iter().filter(|p| zero_frame(p)).count(),
        confs.len()
    );
    let _ = writeln!(w, "- use the BPF stack at all: {}", stack.len());
    let _ = writeln!(
        w,
        "  - every frame in registers (`in_registers`): {}; of those, ptxas stack frame 0: **{}**",
        in_regs.len(),
        in_regs_zero
    );
    let _ = writeln!(
        w,
        "  - of the in-register ones, without any PTX call: {in_regs_nocall}, frame 0: **{in_regs_nocall_zero}**; \
         with calls (ABI frame from the call, not the BPF stack): {}",
        in_regs_calls.len()
    );
    let _ = writeln!(
        w,
        "  - a frame in `.local` (frame address escapes or moves by a variable amount): {}",
        stack.len() - in_regs.len()
    );
    let _ = writeln!(
        w,
        "- programs with PTX calls: {} (unaligned-access helpers or bpf-to-bpf calls)",
        confs.iter().filter(|p| has_calls(p)).count()
    );
    let nonzero: Vec<&ProgRow> = confs.iter().filter(|p| !zero_frame(p)).collect();
    let count = |pred: &dyn Fn(&FuncRow) -> bool| {
        nonzero
            .iter()
            .filter(|p| p.funcs.iter().any(|f| f.ptxas.frame > 0 && pred(f)))
            .count()
    };
    let _ = writeln!(
        w,
        "- programs with a nonzero ptxas frame: {}; causes (a program can have several): \
         PTX calls (unaligned-access helpers, bpf-to-bpf) {}, 64-bit div/rem {}, \
         BPF frame in `.local` {}, none of these {}",
        nonzero.len(),
        count(&|f| !f.calls.is_empty()),
        count(&|f| f.div64),
        count(&|f| f.stack > 0 && !f.in_registers),
        count(&|f| f.calls.is_empty() && !f.div64 && (f.stack == 0 || f.in_registers)),
    );
    let spills = funcs()
        .filter(|f| f.ptxas.spill_st > 0 || f.ptxas.spill_ld > 0)
        .count();
    let _ = writeln!(w, "- functions with spill stores/loads: {spills}");
    let _ = writeln!(
        w,
        "- registers per function, relocatable (regs: functions): {}",
        histogram(funcs().map(|f| f.ptxas.regs))
    );
    let _ = writeln!(
        w,
        "- registers of the `.entry` kernel, whole program (regs: programs): {}",
        histogram(confs.iter().map(|p| p.entry_regs))
    );
    let kernel_frames = confs
        .iter()
        .filter(|p| p.entry_frame.is_some_and(|f| f > 0))
        .count();
    let _ = writeln!(
        w,
        "- `.entry` kernels with a nonzero stack frame, whole program: {kernel_frames}\n"
    );

    let _ = writeln!(
        w,
        "Conformance functions with a nonzero ptxas stack frame:\n"
    );
    let _ = writeln!(
        w,
        "| program | function | BPF insns | BPF stack | in regs | regs | frame | spill st | spill ld | kernel regs | cause |"
    );
    let _ = writeln!(w, "|---|---|--:|--:|:-:|--:|--:|--:|--:|--:|---|");
    for p in confs {
        for f in p.funcs.iter().filter(|f| f.ptxas.frame > 0) {
            let _ = writeln!(
                w,
                "| {} | `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                p.file,
                f.symbol,
                f.insns,
                f.stack,
                if f.stack == 0 {
                    "-"
                } else {
                    yn(f.in_registers)
                },
                opt(f.ptxas.regs),
                f.ptxas.frame,
                f.ptxas.spill_st,
                f.ptxas.spill_ld,
                opt(p.entry_regs),
                frame_cause(f)
            );
        }
    }
    let _ = writeln!(w);
    let _ = writeln!(
        w,
        "Conformance programs that use the stack with every frame in registers and ptxas frame 0:\n"
    );
    let names: Vec<&str> = in_regs
        .iter()
        .filter(|p| zero_frame(p))
        .map(|p| p.file.as_str())
        .collect();
    let _ = writeln!(w, "{}\n", names.join(", "));
    let _ = writeln!(
        w,
        "Conformance programs that do not lower ({}):\n",
        conf_failed.len()
    );
    for (name, why) in conf_failed {
        let _ = writeln!(w, "- {name}: {why}");
    }
    let _ = writeln!(w);

    let _ = writeln!(w, "## Runtime helpers (relocatable build)\n");
    let _ = writeln!(w, "| helper | regs | frame | spill st | spill ld |");
    let _ = writeln!(w, "|---|--:|--:|--:|--:|");
    for (name, h) in helpers {
        let _ = writeln!(
            w,
            "| `{name}` | {} | {} | {} | {} |",
            opt(h.regs),
            h.frame,
            h.spill_st,
            h.spill_ld
        );
    }
    md
}
