//! The PTX reader and writer (`bpf2ptx_backend::inject::ptx`) over the fixtures in
//! `tests/inject/`: nvcc and clang output (`ptx/`, rebuilt by `tests/inject/build.sh`) and
//! hand-written PTX (`hand/`).
//!
//! - every fixture, and its CRLF twin, writes back byte for byte;
//! - the structured view of each fixture matches its snapshot in `tests/inject/out/`
//!   (`BLESS=1` rewrites them), and a few facts are asserted by hand;
//! - malformed texts give the expected error, and truncations and byte changes of every
//!   fixture never panic (and whatever still parses still writes back byte for byte);
//! - inserting a line before the first `ret`/`exit` of every function changes the text by
//!   exactly that line.

use bpf2ptx_backend::inject::ptx::{
    self, AccessKind, FunctionKind, ItemKind, Module, Operand, ParseError, Space, StatementKind,
};
use bpf2ptx_tests::{check_snapshot, files_with_ext, repo_root};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// Every fixture: (file name, text).
fn fixtures() -> Vec<(String, String)> {
    let dir = repo_root().join("tests/inject");
    let mut files: Vec<PathBuf> = files_with_ext(&dir.join("ptx"), "ptx");
    files.extend(files_with_ext(&dir.join("hand"), "ptx"));
    assert!(files.len() >= 30, "fixtures missing in {}", dir.display());
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect()
}

fn parse_ok(name: &str, text: &str) -> Module {
    ptx::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn fixture(name: &str) -> Module {
    let path = repo_root().join("tests/inject").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    parse_ok(name, &text)
}

#[test]
fn fixtures_round_trip_byte_for_byte() {
    for (name, text) in fixtures() {
        let m = parse_ok(&name, &text);
        assert!(
            m.write() == text,
            "{name}: write(parse(text)) differs from text"
        );
        assert_eq!(m.to_string(), text, "{name}: Display");
        let crlf = text.replace('\n', "\r\n");
        let m2 = parse_ok(&name, &crlf);
        assert!(m2.write() == crlf, "{name} (CRLF): differs");
        assert_eq!(
            summary(&m),
            summary(&m2),
            "{name}: CRLF changes the structure"
        );
    }
}

/// The structured view, one line per item and statement kind count, plus every memory
/// access (kind, space, width) and every guard.
fn summary(m: &Module) -> String {
    let mut s = String::new();
    let target = m.target().map(|t| t.join(",")).unwrap_or_default();
    let _ = writeln!(
        s,
        "version {:?} target {target} address_size {:?}",
        m.version(),
        m.address_size()
    );
    for item in m.items() {
        match item.kind() {
            ItemKind::Directive(d) => {
                let _ = writeln!(
                    s,
                    "{}: directive {} ({} args)",
                    item.line(),
                    d.name,
                    d.args.len()
                );
            }
            ItemKind::Declaration(d) => {
                let vars: Vec<String> = d.vars.iter().map(|v| format!("{v:?}")).collect();
                let _ = writeln!(
                    s,
                    "{}: {} {} {}",
                    item.line(),
                    d.space,
                    d.attributes.join(" "),
                    vars.join(", ")
                );
            }
            ItemKind::Function(f) => {
                let p = |ps: &[ptx::Param]| -> String {
                    ps.iter()
                        .map(|p| format!("{} {}", p.ty().unwrap_or("?"), p.var.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let _ = writeln!(
                    s,
                    "{}: {:?} {} {:?} returns ({}) params ({}) attrs {:?} body {}",
                    f.line(),
                    f.kind(),
                    f.name(),
                    f.linkage(),
                    p(f.returns()),
                    p(f.params()),
                    f.attributes(),
                    f.has_body()
                );
                let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
                for st in f.body() {
                    let k = match st.kind() {
                        StatementKind::Instruction(i) => format!("insn {}", i.opcode.base),
                        StatementKind::Label(_) => "label".into(),
                        StatementKind::Declaration(d) => format!("decl {}", d.space),
                        StatementKind::Directive(d) => format!("directive {}", d.name),
                        StatementKind::BlockOpen => "{".into(),
                        StatementKind::BlockClose => "}".into(),
                    };
                    *kinds.entry(k).or_default() += 1;
                }
                let _ = writeln!(s, "  statements {kinds:?}");
                for (_, i) in f.instructions() {
                    let guard = i
                        .guard
                        .as_ref()
                        .map(|g| format!("@{}{} ", if g.negated { "!" } else { "" }, g.register));
                    if let Some(a) = i.memory_access() {
                        let _ = writeln!(
                            s,
                            "  {}: {}{} {:?} {:?} v{:?} addr {:?}",
                            i.line,
                            guard.unwrap_or_default(),
                            i.opcode,
                            a.kind,
                            a.space,
                            a.vector,
                            i.operands.get(a.address)
                        );
                    } else if let Some(g) = guard {
                        let _ = writeln!(s, "  {}: {g}{}", i.line, i.opcode);
                    }
                }
            }
        }
    }
    s
}

#[test]
fn structure_matches_snapshots() {
    for (name, text) in fixtures() {
        let m = parse_ok(&name, &text);
        let path = repo_root()
            .join("tests/inject/out")
            .join(format!("{name}.summary"));
        check_snapshot(&path, &summary(&m));
    }
}

#[test]
fn vecadd_structure() {
    for (file, target) in [
        ("ptx/vecadd.sm90.nvcc.ptx", "sm_90"),
        ("ptx/vecadd.sm75.nvcc.ptx", "sm_75"),
        ("ptx/vecadd.sm70.clang.ptx", "sm_70"),
    ] {
        let m = fixture(file);
        assert_eq!(
            m.target().and_then(|t| t.first()).map(String::as_str),
            Some(target),
            "{file}"
        );
        assert_eq!(m.address_size(), Some(64), "{file}");
        assert!(m.version().is_some(), "{file}");
        let fs: Vec<_> = m.functions().collect();
        assert_eq!(fs.len(), 1, "{file}");
        let f = fs[0];
        assert_eq!(
            (f.kind(), f.name()),
            (FunctionKind::Entry, "vecadd"),
            "{file}"
        );
        assert_eq!(f.params().len(), 4, "{file}");
        assert_eq!(f.params()[0].ty(), Some(".u64"), "{file}");
        let count = |base: &str, space: Space| {
            f.instructions()
                .filter(|(_, i)| {
                    i.opcode.base == base && i.memory_access().is_some_and(|a| a.space == space)
                })
                .count()
        };
        assert_eq!(count("ld", Space::Global), 2, "{file}: ld.global");
        assert_eq!(count("st", Space::Global), 1, "{file}: st.global");
        assert!(
            f.instructions().any(|(_, i)| i.opcode.base == "ret"),
            "{file}: ret"
        );
        assert!(
            f.instructions().any(|(_, i)| i.guard.is_some()),
            "{file}: a guarded branch"
        );
    }
}

#[test]
fn nvcc_call_sequence_and_shared_memory() {
    let m = fixture("ptx/calls.sm90.nvcc.ptx");
    let names: Vec<_> = m
        .functions()
        .map(|f| (f.kind(), f.name().to_string()))
        .collect();
    assert_eq!(
        names,
        [
            (FunctionKind::Func, "_Z3mixfi".to_string()),
            (FunctionKind::Entry, "calls".to_string())
        ]
    );
    let mix = m.functions().next().unwrap();
    assert_eq!(mix.returns().len(), 1);
    assert_eq!(mix.returns()[0].var.name, "func_retval0");
    let calls = m.functions().nth(1).unwrap();
    let call = calls
        .instructions()
        .find(|(_, i)| i.opcode.base == "call")
        .expect("a call")
        .1;
    assert_eq!(call.opcode.modifiers, ["uni"]);
    assert_eq!(
        call.operands[0],
        Operand::List(vec![Operand::Symbol("retval0".into())])
    );
    assert_eq!(call.operands[1], Operand::Symbol("_Z3mixfi".into()));
    assert!(matches!(&call.operands[2], Operand::List(v) if v.len() == 2));
    let opens = calls
        .body()
        .iter()
        .filter(|s| *s.kind() == StatementKind::BlockOpen)
        .count();
    let closes = calls
        .body()
        .iter()
        .filter(|s| *s.kind() == StatementKind::BlockClose)
        .count();
    assert_eq!((opens, closes), (1, 1));
    let atoms = calls
        .instructions()
        .filter_map(|(_, i)| i.memory_access())
        .filter(|a| a.kind == AccessKind::Atomic);
    assert_eq!(atoms.count(), 2);

    let mm = fixture("ptx/matmul.sm90.nvcc.ptx");
    let f = mm.functions().next().unwrap();
    let shared_decls = f
        .body()
        .iter()
        .filter(|s| matches!(s.kind(), StatementKind::Declaration(d) if d.space == ".shared"))
        .count();
    assert_eq!(shared_decls, 2);
    assert!(f
        .instructions()
        .any(|(_, i)| i.memory_access().is_some_and(|a| a.space == Space::Shared)));
}

#[test]
fn kitchen_sink_structure() {
    let m = fixture("hand/kitchen_sink.ptx");
    assert_eq!(m.version(), Some("8.0"));
    assert_eq!(m.target(), Some(&["sm_90a".to_string()][..]));
    let fs: Vec<_> = m.functions().collect();
    assert_eq!(fs.len(), 3);
    assert!(!fs[0].has_body(), "the .extern prototype");
    assert_eq!(fs[1].linkage(), [".weak"]);
    let k = fs[2];
    assert_eq!(k.name(), "kern");
    let attrs: Vec<_> = k
        .attributes()
        .iter()
        .map(|d| (d.name.as_str(), d.args.join(" ")))
        .collect();
    assert_eq!(
        attrs,
        [
            (".maxntid", "256 1 1".into()),
            (".reqntid", "256".into()),
            (".minnctapersm", "2".into())
        ]
    );
    assert_eq!(k.params()[1].var.dims, [Some(16)]);
    let insn = |op: &str| {
        k.instructions()
            .find(|(_, i)| i.opcode.to_string() == op)
            .unwrap_or_else(|| panic!("{op}"))
            .1
    };
    let bra = insn("bra");
    assert_eq!(
        bra.guard.as_ref().map(|g| (g.negated, g.register.as_str())),
        Some((true, "%p1"))
    );
    let v4 = insn("ld.global.nc.v4.f32");
    let regs = |n: &str| Operand::Register(n.into());
    assert_eq!(
        v4.operands[0],
        Operand::Vector(vec![regs("%f1"), regs("%f2"), regs("%f3"), regs("%f4")])
    );
    assert_eq!(
        v4.operands[1],
        Operand::Address {
            base: "%rd1".into(),
            offset: 16
        }
    );
    let a = v4.memory_access().unwrap();
    assert_eq!(
        (a.kind, a.space, a.vector, a.address),
        (AccessKind::Load, Space::Global, Some(4), 1)
    );
    assert_eq!(
        insn("ld.global.v2.f32").operands[1],
        Operand::Address {
            base: "%rd1".into(),
            offset: -8
        }
    );
    let st = insn("st.shared::cta.v2.f32").memory_access().unwrap();
    assert_eq!(
        (st.kind, st.space, st.address),
        (AccessKind::Store, Space::Shared, 0)
    );
    assert_eq!(
        insn("ld.u32").memory_access().unwrap().space,
        Space::Generic
    );
    assert_eq!(
        insn("red.global.add.f32").operands[0],
        Operand::Address {
            base: "%rd1".into(),
            offset: 16
        }
    );
    assert_eq!(
        insn("setp.lt.u32").operands[0],
        Operand::Other("%p1|%p2".into())
    );
    assert_eq!(insn("add.s32").operands[2], Operand::Immediate("-1".into()));
    let labels: Vec<_> = k
        .body()
        .iter()
        .filter_map(|s| match s.kind() {
            StatementKind::Label(l) => Some(l.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(labels, ["$L__loop", "$L__done"]);
    // `mov` and `setp` share a line; each is its own statement with its own text.
    let setp = k
        .body()
        .iter()
        .find(|s| s.as_instruction().is_some_and(|i| i.opcode.base == "setp"))
        .unwrap();
    assert_eq!(setp.text(), "setp.lt.u32 %p1|%p2, %r2, 32;");
    assert_eq!(setp.line(), insn("mov.u32").line);
}

/// Malformed texts and a substring of the message each must give.
const MALFORMED: &[(&str, &str)] = &[
    (
        ".version 8.0\n.target sm_90\n.entry k(\n",
        "line 3, column 9: unexpected end of input",
    ),
    (
        ".entry k()\n{\n\tret;\n",
        "line 1, column 1: unexpected end of input, expected `}` closing the function body",
    ),
    (
        ".entry k()\n{\n\tret;\n}\n}\n",
        "line 5, column 1: expected a directive, declaration or function, found `}`",
    ),
    (
        ".entry k()\n{\n\t{\n\tret;\n}\n",
        "expected `}` closing the function body",
    ),
    (
        ".entry k()\n{\n\tadd.s32 %r1, %r2, %r3\n}\n",
        "line 4, column 1: expected `;`, found `}`",
    ),
    (
        ".entry k()\n{\n\tld.u32 %r1, [%rd1;\n}\n",
        "line 4, column 1: `}` does not close `[`",
    ),
    (
        ".entry k()\n{\n\tld.u32 %r1, [%rd1));\n}\n",
        "line 3, column 19: `)` does not close `[`",
    ),
    (
        ".entry k()\n{\n\tadd.s32 %r1, , %r3;\n}\n",
        "line 3, column 15: expected an operand before `,`",
    ),
    (
        ".entry k()\n{\n\tadd.s32 %r1, %r2,;\n}\n",
        "expected an operand after `,`",
    ),
    (".entry k()\n{\n\t@ ;\n}\n", "expected a predicate register"),
    (
        ".entry k()\n{\n\t.reg .b32 %r<x>;\n}\n",
        "register declaration",
    ),
    (
        ".entry k()\n{\n\t.reg .b32 ;\n}\n",
        "expected a variable name",
    ),
    (
        ".entry k()\n{\n\t# ret;\n}\n",
        "line 3, column 2: unexpected character '#'",
    ),
    (
        ".entry k()\n{\n\tret; /* open\n}\n",
        "line 3, column 7: unterminated /* comment",
    ),
    (".file 1 \"a.cu\n", "line 1, column 9: unterminated string"),
    (
        "hello world;\n",
        "line 1, column 1: expected a directive, declaration or function, found `hello`",
    ),
    (".entry (\n", "expected a function name"),
    (".entry k() ) {}\n", "expected a performance directive"),
    (".global .u32 x", "unexpected end of input, expected `;`"),
    (".entry k() { ret; é }", "unexpected character 'é'"),
    ("\u{0}", "unexpected character"),
];

#[test]
fn malformed_inputs_give_located_errors() {
    for (text, want) in MALFORMED {
        match ptx::parse(text) {
            Ok(m) => panic!("{text:?} parsed: {m:?}"),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(want), "{text:?}: {msg:?} lacks {want:?}");
            }
        }
    }
    let deep = format!(".entry k() {{ mov.u32 %r1, {}; }}", "{".repeat(100_000));
    assert!(matches!(ptx::parse(&deep), Err(ParseError::TooDeep { .. })));
    let deep_blocks = format!(".entry k() {{ {} }}", "{".repeat(100_000));
    assert!(matches!(
        ptx::parse(&deep_blocks),
        Err(ParseError::TooDeep { .. })
    ));
    assert!(ptx::parse("").is_ok_and(|m| m.write().is_empty()));
    assert!(ptx::parse("  // only a comment\n").is_ok_and(|m| m.write() == "  // only a comment\n"));
}

/// Parses `text`; on success writes it back and edits the first function with a body.
/// `Err` carries the panic message.
fn run_target(text: &str) -> Result<bool, String> {
    catch_unwind(AssertUnwindSafe(|| match ptx::parse(text) {
        Ok(mut m) => {
            assert!(m.write() == text, "accepted input does not write back");
            for f in m.functions_mut() {
                let n = f.body().len();
                let _ = f.insert_before(n / 2, "// probe");
                let _ = f.insert_after(n / 3, "mov.u32 %r1, %r1;");
            }
            let _ = m.write();
            true
        }
        Err(e) => {
            let _ = e.to_string();
            false
        }
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "non-string panic".into())
    })
}

#[test]
fn mutations_never_panic() {
    const TRUNCATIONS: usize = 61;
    const FLIPS: usize = 61;
    /// Bytes that change the structure: brackets, separators, comment and string starts.
    const PATTERNS: &[u8] = b"{}[]();,:@!/*\"\n.%-x\x00";
    let mut failures = Vec::new();
    let mut accepted_truncations = 0;
    for (name, text) in fixtures() {
        let bytes = text.as_bytes();
        let step = (bytes.len() / TRUNCATIONS).max(1);
        for len in (0..bytes.len()).step_by(step) {
            let Ok(cut) = std::str::from_utf8(&bytes[..len]) else {
                continue;
            };
            match run_target(cut) {
                Err(p) => failures.push(format!("{name} truncated to {len}: {p}")),
                Ok(true) => accepted_truncations += 1,
                Ok(false) => {}
            }
        }
        let step = (bytes.len() / FLIPS).max(1);
        for (k, at) in (0..bytes.len()).step_by(step).enumerate() {
            let mut b = bytes.to_vec();
            b[at] = PATTERNS[k % PATTERNS.len()];
            let Ok(s) = String::from_utf8(b) else {
                continue;
            };
            if let Err(p) = run_target(&s) {
                failures.push(format!(
                    "{name} byte {at} -> {:?}: {p}",
                    PATTERNS[k % PATTERNS.len()] as char
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} panics:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // Truncations at item boundaries are valid modules; most others are not.
    assert!(accepted_truncations > 0);
}

#[test]
fn insert_before_first_return_adds_exactly_one_line() {
    for (name, text) in fixtures() {
        let mut m = parse_ok(&name, &text);
        let mut expected: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
        let mut inserted_at = Vec::new();
        for f in m.functions_mut() {
            let Some((idx, line)) = f
                .instructions()
                .find(|(_, i)| i.opcode.base == "ret" || i.opcode.base == "exit")
                .map(|(idx, i)| (idx, i.line))
            else {
                continue;
            };
            let orig = &text.split_inclusive('\n').nth(line as usize - 1).unwrap();
            let indent: String = orig
                .chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect();
            assert_eq!(f.insert_before(idx, "// probe: exit"), Ok(0), "{name}");
            assert!(matches!(
                f.body()[idx].kind(),
                StatementKind::Instruction(_)
            ));
            inserted_at.push((line as usize - 1, format!("{indent}// probe: exit\n")));
        }
        for (at, l) in inserted_at.into_iter().rev() {
            expected.insert(at, l);
        }
        let expected = expected.concat();
        pretty_assertions::assert_eq!(m.write(), expected, "{name}");
        // The edited text parses to the same structure plus nothing (the line is a comment).
        assert_eq!(
            summary(&parse_ok(&name, &expected)).lines().count(),
            summary(&m).lines().count()
        );
    }
}

#[test]
fn inserted_instructions_join_the_structure() {
    let text =
        ".entry k()\r\n{\r\n\t.reg .b32 %r<3>;\r\n\tmov.u32 %r1, 1; // one\r\n\t{ ret; }\r\n}\r\n";
    let mut m = parse_ok("inline", text);
    let f = m.function_mut("k").unwrap();
    assert_eq!(
        f.insert_after(1, "add.s32 %r2, %r1, 1;\n@%p1 st.global.u32 [%rd1+4], %r2;"),
        Ok(2)
    );
    assert_eq!(f.insert_before(0, "// entry probe"), Ok(0));
    let n = f.body().len();
    assert_eq!(f.insert_before(n, "{\n\tbar.sync 0;\n}"), Ok(3));
    // `ret` inside `{ ret; }` has no line break before it: the inserted line ends with one.
    let ret = f
        .instructions()
        .find(|(_, i)| i.opcode.base == "ret")
        .unwrap()
        .0;
    assert_eq!(f.insert_before(ret, "exit;"), Ok(1));
    let st = f
        .instructions()
        .find(|(_, i)| i.opcode.base == "st")
        .unwrap()
        .1;
    assert_eq!(st.line, 0);
    assert_eq!(st.memory_access().map(|a| a.space), Some(Space::Global));
    let want = ".entry k()\r\n{\r\n\t// entry probe\r\n\t.reg .b32 %r<3>;\r\n\tmov.u32 %r1, 1; // one\r\n\tadd.s32 %r2, %r1, 1;\r\n\t@%p1 st.global.u32 [%rd1+4], %r2;\r\n\t{ exit;\r\nret; }\r\n{\r\n\tbar.sync 0;\r\n}\r\n}\r\n";
    pretty_assertions::assert_eq!(m.write(), want);
    assert_eq!(m.write(), parse_ok("edited", want).write());

    let f = m.function_mut("k").unwrap();
    let n = f.body().len();
    assert!(matches!(
        f.insert_before(n + 1, "ret;"),
        Err(ptx::EditError::OutOfRange { .. })
    ));
    assert!(matches!(
        f.insert_before(0, "}"),
        Err(ptx::EditError::Fragment { .. })
    ));
    assert!(matches!(
        f.insert_before(0, "{"),
        Err(ptx::EditError::Fragment { .. })
    ));
    assert!(matches!(
        f.insert_before(0, "add.s32 %r1"),
        Err(ptx::EditError::Fragment { .. })
    ));
    assert_eq!(m.write(), want, "refused edits change nothing");

    let mut proto = parse_ok("proto", ".extern .func f(.param .b32 a);\n");
    let f = proto.functions_mut().next().unwrap();
    assert!(matches!(
        f.insert_before(0, "ret;"),
        Err(ptx::EditError::NoBody { .. })
    ));
}

/// Edited fixtures still assemble: a `membar.cta` before every `ret`/`exit` and a comment
/// before every global memory access, through ptxas (the project's, PTX ISA up to 8.8: the
/// clang fixtures; nvcc 13's output is ISA 9.x). ptxas as in `ptxas.rs`: `$PTXAS`, the
/// venv or `PATH`; `BPF2PTX_SKIP_PTXAS=1` skips on purpose.
#[test]
fn edited_fixtures_assemble() {
    let Some(ptxas) = bpf2ptx_tests::require_ptxas() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut assembled = 0;
    for (name, text) in fixtures() {
        let mut m = parse_ok(&name, &text);
        let Some(target) = m.target().and_then(|t| t.first()).cloned() else {
            continue;
        };
        let version: Vec<u32> = m
            .version()
            .unwrap_or("0")
            .split('.')
            .filter_map(|v| v.parse().ok())
            .collect();
        if version > vec![8, 8] || !name.ends_with(".clang.ptx") {
            continue;
        }
        let mut inserted = 0;
        for f in m.functions_mut().filter(|f| f.has_body()) {
            let sites: Vec<(usize, bool)> = f
                .instructions()
                .filter_map(|(idx, i)| {
                    let exit = matches!(i.opcode.base.as_str(), "ret" | "exit");
                    let global = i.memory_access().is_some_and(|a| a.space == Space::Global);
                    (exit || global).then_some((idx, exit))
                })
                .collect();
            for (idx, exit) in sites.into_iter().rev() {
                let line = if exit {
                    "membar.cta;"
                } else {
                    "// probe: global access"
                };
                f.insert_before(idx, line)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                inserted += 1;
            }
        }
        assert!(inserted > 0, "{name}: nothing to instrument");
        let out = m.write();
        assert_eq!(
            out.lines().count(),
            text.lines().count() + inserted,
            "{name}"
        );
        let path = dir.path().join(&name);
        std::fs::write(&path, &out).unwrap();
        let o = std::process::Command::new(&ptxas)
            .args(["-arch", &target, "-o"])
            .arg(dir.path().join("out.cubin"))
            .arg(&path)
            .output()
            .expect("run ptxas");
        assert!(
            o.status.success(),
            "{name}: ptxas: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assembled += 1;
    }
    assert!(assembled >= 8, "only {assembled} fixtures assembled");
}
