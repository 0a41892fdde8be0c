//! The text assembler. It reads two syntaxes, line by line, in the same file:
//!
//! * the llvm-objdump / kernel syntax the disassembler prints (`r0 = *(u32 *)(r1 + 4)`,
//!   `if r1 s> 5 goto +3`, `lock *(u64 *)(r1 + 0) += r2`, `call pc+4`, `r1 = 7 ll`), and
//! * the bpf_conformance syntax (`ldxw %r0, [%r1+4]`, `jne %r0, 15, fail`,
//!   `lock fetch add [%r10-8], %r1`, `call local f`, `lddw %r0, 0x1122334455667788`).
//!
//! Labels (`name:`) may stand on their own line or before an instruction and can be used
//! wherever a jump or call target goes; an undefined `exit` names the program's final
//! `exit` instruction, as bpf_conformance files expect. Comments start with `#`, `;` or `//`. Every
//! instruction is looked up in the one opcode table ([`super::table`]), so both syntaxes
//! accept exactly the ISA, and an error names the line and what was wrong with it.
//!
//! # Parts
//!
//! - `mod.rs` (this file): the public [`Assembly`] and errors ([`AsmError`],
//!   [`AsmErrorKind`], [`clip`]) and [`assemble`]: lines, comments and labels, each
//!   statement sent to the parser of its syntax, then the labels resolved to pc-relative
//!   fields and every statement encoded as an [`Insn`].
//! - `number.rs`: numbers, immediates, offsets and register numbers, shared by both syntaxes.
//! - `conformance.rs`: the bpf_conformance syntax, one statement.
//! - `kernel.rs`: the llvm-objdump / kernel syntax, one statement (its tokenizer too).
//!
//! # Invariants
//!
//! - A syntax parser reads one statement (no label, no comment) into a `Stmt` whose kind
//!   is one of the table's; a jump or call target it cannot know yet is left in
//!   `Stmt::target`, which [`assemble`] alone resolves (into `off` for jumps, `imm`
//!   otherwise), counting an `lddw` as two slots.
//! - A parser's errors are [`AsmErrorKind`]s; [`assemble`] adds the line and clips what
//!   they repeat of the input to [`MAX_ECHO`] bytes.

use super::insn::Insn;
use super::table::Kind;
use indexmap::IndexMap;
use thiserror::Error;

mod conformance;
mod kernel;
mod number;

use conformance::parse_conformance;
use kernel::parse_kernel;

/// An assembled text: the instructions, where the labels point, and the source line of
/// each instruction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assembly {
    /// The instructions.
    pub insns: Vec<Insn>,
    /// Label name → index of the instruction it precedes (may equal `insns.len()`).
    pub labels: IndexMap<String, usize>,
    /// 1-based source line of each instruction.
    pub lines: Vec<usize>,
    /// Kfunc calls written by name (`call kfunc(bpf_iter_num_new)`): instruction index
    /// and name. The text has no BTF, so the call's `imm` is 0; the loader records the
    /// name as the call's relocation, as the ELF loader does for a `__ksym` symbol.
    pub kfuncs: Vec<(usize, String)>,
}

/// What is wrong with a line of assembly.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum AsmErrorKind {
    /// The mnemonic or statement shape is not an instruction.
    #[error("unknown instruction `{0}`")]
    Unknown(String),
    /// A mnemonic got the wrong number of operands.
    #[error("invalid number of operands for {mnemonic}: expected {expected}, got {got}")]
    OperandCount {
        /// The mnemonic.
        mnemonic: String,
        /// How many it takes.
        expected: usize,
        /// How many were given.
        got: usize,
    },
    /// An operand has the wrong shape.
    #[error("operand {index} of {mnemonic}: expected {expected}, got `{got}`")]
    Operand {
        /// The mnemonic.
        mnemonic: String,
        /// 1-based operand position.
        index: usize,
        /// What shape it takes.
        expected: &'static str,
        /// What was written.
        got: String,
    },
    /// A register name above r10 or malformed.
    #[error("invalid register `{0}`")]
    Register(String),
    /// An immediate does not fit its field.
    #[error("immediate {value} out of range for a {bits}-bit field")]
    ImmRange {
        /// The value written.
        value: i128,
        /// The width of the field.
        bits: u32,
    },
    /// An offset does not fit the signed 16-bit field.
    #[error("offset {0} out of range for a 16-bit field")]
    OffRange(i128),
    /// A target label is not defined.
    #[error("undefined label `{0}`")]
    UndefinedLabel(String),
    /// A label is defined twice.
    #[error("duplicate label `{0}`")]
    DuplicateLabel(String),
    /// 32-bit and 64-bit register names are mixed in one instruction.
    #[error("mixed w and r registers")]
    MixedWidth,
    /// A number does not parse.
    #[error("invalid number `{0}`")]
    Number(String),
}

/// An assembly error with the line it is on.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("line {line}: {kind}: `{text}`")]
pub struct AsmError {
    /// 1-based line number.
    pub line: usize,
    /// The line's text (trimmed, without its comment).
    pub text: String,
    /// What is wrong.
    pub kind: AsmErrorKind,
}

/// Longest piece of the input an error message repeats; longer ones are cut, with their
/// length, so a 1 MB identifier gives a one-line message.
pub const MAX_ECHO: usize = 80;

/// `s` as an error message repeats it: whole up to [`MAX_ECHO`] bytes, else its start
/// (cut at a character boundary) and its length.
pub fn clip(s: &str) -> String {
    if s.len() <= MAX_ECHO {
        return s.to_string();
    }
    let mut end = MAX_ECHO - 20;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes)", &s[..end], s.len())
}

impl AsmErrorKind {
    /// The same error with every piece of input it repeats [`clip`]ped.
    fn clipped(self) -> AsmErrorKind {
        use AsmErrorKind::*;
        match self {
            Unknown(t) => Unknown(clip(&t)),
            OperandCount {
                mnemonic,
                expected,
                got,
            } => OperandCount {
                mnemonic: clip(&mnemonic),
                expected,
                got,
            },
            Operand {
                mnemonic,
                index,
                expected,
                got,
            } => Operand {
                mnemonic: clip(&mnemonic),
                index,
                expected,
                got: clip(&got),
            },
            Register(t) => Register(clip(&t)),
            UndefinedLabel(t) => UndefinedLabel(clip(&t)),
            DuplicateLabel(t) => DuplicateLabel(clip(&t)),
            Number(t) => Number(clip(&t)),
            other => other,
        }
    }
}

impl AsmError {
    /// An error on `line`, whose text is `text`: what the input says is [`clip`]ped.
    fn new(line: usize, text: &str, kind: AsmErrorKind) -> AsmError {
        AsmError {
            line,
            text: clip(text),
            kind: kind.clipped(),
        }
    }
}

/// A target written as a number (pc-relative) or a label.
#[derive(Clone, Debug)]
enum Target {
    Rel(i64),
    Label(String),
}

/// A parsed statement before labels are resolved.
#[derive(Clone, Debug)]
struct Stmt {
    kind: Kind,
    dst: u8,
    src: u8,
    off: i16,
    imm: i64,
    /// A pc-relative field still to resolve: goes into `off` for jumps, `imm` otherwise.
    target: Option<Target>,
    /// The name of a kfunc called by name.
    kfunc: Option<String>,
}

impl Stmt {
    fn new(kind: Kind) -> Stmt {
        Stmt {
            kind,
            dst: 0,
            src: 0,
            off: 0,
            imm: 0,
            target: None,
            kfunc: None,
        }
    }
}

type R<T> = Result<T, AsmErrorKind>;

/// Assembles a text in either syntax.
pub fn assemble(text: &str) -> Result<Assembly, AsmError> {
    let mut stmts: Vec<(usize, String, Stmt)> = Vec::new();
    let mut labels: IndexMap<String, usize> = IndexMap::new();
    for (n, raw_line) in text.lines().enumerate() {
        let line = n + 1;
        let mut rest = strip_comment(raw_line).trim();
        let err = |kind, rest: &str| AsmError::new(line, rest, kind);
        // Leading labels.
        while let Some((name, after)) = split_label(rest) {
            if labels.insert(name.to_string(), stmts.len()).is_some() {
                return Err(err(AsmErrorKind::DuplicateLabel(name.to_string()), rest));
            }
            rest = after.trim();
        }
        if rest.is_empty() {
            continue;
        }
        let stmt = parse_stmt(rest).map_err(|k| err(k, rest))?;
        stmts.push((line, rest.to_string(), stmt));
    }
    // Slot index of each statement, then resolve targets.
    let mut pcs = Vec::with_capacity(stmts.len() + 1);
    let mut pc: i64 = 0;
    for (_, _, s) in &stmts {
        pcs.push(pc);
        pc += if matches!(s.kind, Kind::LdImm64(_)) {
            2
        } else {
            1
        };
    }
    pcs.push(pc);
    let out_labels = labels.clone();
    // bpf_conformance programs jump to `exit` without defining it, meaning their final
    // `exit` instruction; honour that only where the last instruction is one.
    if !labels.contains_key("exit") && stmts.last().is_some_and(|(_, _, s)| s.kind == Kind::Exit) {
        labels.insert("exit".to_string(), stmts.len() - 1);
    }
    let mut out = Assembly {
        labels: out_labels,
        ..Assembly::default()
    };
    for (i, (line, text, s)) in stmts.into_iter().enumerate() {
        let err = |kind| AsmError::new(line, &text, kind);
        let mut s = s;
        if let Some(t) = s.target.take() {
            let rel = match t {
                Target::Rel(r) => r,
                Target::Label(l) => {
                    let idx = *labels
                        .get(&l)
                        .ok_or_else(|| err(AsmErrorKind::UndefinedLabel(l)))?;
                    pcs[idx] - pcs[i] - 1
                }
            };
            if matches!(s.kind, Kind::Ja | Kind::Jmp(..) | Kind::MayGoto) {
                s.off = i16::try_from(rel).map_err(|_| err(AsmErrorKind::OffRange(rel.into())))?;
            } else {
                s.imm = i64::from(i32::try_from(rel).map_err(|_| {
                    err(AsmErrorKind::ImmRange {
                        value: rel.into(),
                        bits: 32,
                    })
                })?);
                if let Kind::LdImm64(_) = s.kind {
                    s.imm &= 0xffff_ffff;
                }
            }
        }
        let insn = Insn::new(s.kind, s.dst, s.src, s.off, s.imm)
            .ok_or_else(|| err(AsmErrorKind::Unknown(text.clone())))?;
        if let Some(name) = s.kfunc.take() {
            out.kfuncs.push((out.insns.len(), name));
        }
        out.insns.push(insn);
        out.lines.push(line);
    }
    Ok(out)
}

fn strip_comment(line: &str) -> &str {
    let mut end = line.len();
    for pat in ["#", ";", "//"] {
        if let Some(i) = line.find(pat) {
            end = end.min(i);
        }
    }
    &line[..end]
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn split_label(s: &str) -> Option<(&str, &str)> {
    let i = s.find(':')?;
    let name = s[..i].trim();
    (!name.is_empty()
        && name.chars().all(is_ident_char)
        && !name.starts_with(|c: char| c.is_ascii_digit()))
    .then(|| (name, &s[i + 1..]))
}

fn parse_stmt(s: &str) -> R<Stmt> {
    let mut words = s.split_whitespace();
    let first = words.next().unwrap_or("");
    let kernel = s.contains('=')
        || matches!(first, "if" | "goto" | "gotol" | "callx" | "may_goto")
        || (first == "call" && {
            // `call 5` reads the same in both; `call %r2` and `call local f` are
            // bpf_conformance; `call pc+3`, `call kfunc(7)` and `call f` are the kernel's.
            let rest = s[4..].trim_start();
            !(rest.starts_with(['%', '-', '+']) || rest.starts_with(|c: char| c.is_ascii_digit()))
                && words.next() != Some("local")
        });
    if kernel {
        parse_kernel(s)
    } else {
        parse_conformance(s)
    }
}
