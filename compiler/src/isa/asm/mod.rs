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

use super::insn::Insn;
use super::table::{self, AluOp, AtomicOp, CallKind, Cond, Kind, Order, Pseudo, Size, Src, Width};
use indexmap::IndexMap;
use thiserror::Error;

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
            if matches!(s.kind, Kind::Ja | Kind::Jmp(..)) {
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
        || matches!(first, "if" | "goto" | "gotol" | "callx")
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

// ---------------------------------------------------------------------------------------
// Numbers and registers shared by both syntaxes.

fn parse_number(s: &str) -> R<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        body.parse::<u64>()
    }
    .map_err(|_| AsmErrorKind::Number(s.to_string()))?;
    Ok(if neg { -i128::from(v) } else { i128::from(v) })
}

fn is_hex(s: &str) -> bool {
    let b = s.trim_start_matches(['-', '+']);
    b.starts_with("0x") || b.starts_with("0X")
}

/// A 32-bit immediate: decimal values must fit `i32`; hex values may also be written as
/// the unsigned bit pattern (`0xffffffff`), as bpf_conformance does. The decimal rule is
/// what keeps `mov32 %r0, 2147483648` an error instead of a silent `-2147483648`.
fn imm32(v: i128, hex: bool) -> R<i64> {
    if let Ok(x) = i32::try_from(v) {
        return Ok(x.into());
    }
    if hex && (0..=i128::from(u32::MAX)).contains(&v) {
        return Ok(i64::from(v as u32 as i32));
    }
    Err(AsmErrorKind::ImmRange { value: v, bits: 32 })
}

fn imm64(v: i128) -> R<i64> {
    if let Ok(x) = i64::try_from(v) {
        Ok(x)
    } else if let Ok(x) = u64::try_from(v) {
        Ok(x as i64)
    } else {
        Err(AsmErrorKind::ImmRange { value: v, bits: 64 })
    }
}

fn off16(v: i128) -> R<i16> {
    i16::try_from(v).map_err(|_| AsmErrorKind::OffRange(v))
}

fn reg_number(digits: &str, full: &str) -> R<u8> {
    match digits.parse::<u8>() {
        Ok(n) if n <= 10 && !digits.is_empty() => Ok(n),
        _ => Err(AsmErrorKind::Register(full.to_string())),
    }
}

// ---------------------------------------------------------------------------------------
// The bpf_conformance syntax.

#[derive(Debug)]
enum COp {
    Reg(u8),
    Num(i128, String),
    Mem(u8, i16),
    Label(String),
}

fn conf_operand(s: &str) -> R<COp> {
    let s = s.trim();
    if let Some(r) = s.strip_prefix("%r") {
        return Ok(COp::Reg(reg_number(r, s)?));
    }
    if let Some(inner) = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')) {
        let inner = inner.trim();
        let split = inner.find(['+', '-']).unwrap_or(inner.len());
        let reg = inner[..split].trim();
        let r = reg
            .strip_prefix("%r")
            .ok_or_else(|| AsmErrorKind::Register(reg.to_string()))?;
        let r = reg_number(r, reg)?;
        let off = if split == inner.len() {
            0
        } else {
            let t: String = inner[split..]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            off16(parse_number(&t)?)?
        };
        return Ok(COp::Mem(r, off));
    }
    if s.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') {
        return Ok(COp::Num(parse_number(s)?, s.to_string()));
    }
    if !s.is_empty() && s.chars().all(is_ident_char) {
        return Ok(COp::Label(s.to_string()));
    }
    Err(AsmErrorKind::Number(s.to_string()))
}

fn parse_conformance(s: &str) -> R<Stmt> {
    // The mnemonic is the leading words that are not operands: `lock fetch add`, `call local`.
    let mut words: Vec<&str> = Vec::new();
    let mut rest = s;
    loop {
        let t = rest.trim_start();
        let end = t.find(char::is_whitespace).unwrap_or(t.len());
        let w = &t[..end];
        let is_word = !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric());
        let joins = words.is_empty()
            || (words[0] == "lock" && is_word && !w.starts_with('%'))
            || (words == ["call"] && w == "local");
        if !joins || w.is_empty() {
            break;
        }
        words.push(w);
        rest = &t[end..];
    }
    let mnemonic = words.join(" ");
    let texts: Vec<&str> = if rest.trim().is_empty() {
        Vec::new()
    } else {
        rest.split(',').map(str::trim).collect()
    };
    let ops = texts
        .iter()
        .map(|o| conf_operand(o))
        .collect::<R<Vec<_>>>()?;
    let count = |n: usize| -> R<()> {
        if ops.len() == n {
            Ok(())
        } else {
            Err(AsmErrorKind::OperandCount {
                mnemonic: mnemonic.clone(),
                expected: n,
                got: ops.len(),
            })
        }
    };
    let bad = |index: usize, expected: &'static str| AsmErrorKind::Operand {
        mnemonic: mnemonic.clone(),
        index,
        expected,
        got: texts
            .get(index - 1)
            .map_or_else(String::new, |t| t.to_string()),
    };
    let name = match mnemonic.as_str() {
        "swap16" => "bswap16",
        "swap32" => "bswap32",
        "swap64" => "bswap64",
        "lock" => {
            return Err(AsmErrorKind::OperandCount {
                mnemonic,
                expected: 2,
                got: ops.len(),
            })
        }
        m => m,
    };
    // `call` forms.
    if name == "call" {
        count(1)?;
        return match &ops[0] {
            COp::Reg(r) => Ok(Stmt {
                dst: *r,
                ..Stmt::new(Kind::Callx)
            }),
            COp::Num(v, t) => Ok(Stmt {
                imm: imm32(*v, is_hex(t))?,
                ..Stmt::new(Kind::Call(CallKind::Helper))
            }),
            _ => Err(bad(1, "a helper id or register")),
        };
    }
    if name == "call local" {
        count(1)?;
        let target = match &ops[0] {
            COp::Label(l) => Target::Label(l.clone()),
            COp::Num(v, _) => Target::Rel(imm32(*v, false)?),
            _ => return Err(bad(1, "a label")),
        };
        return Ok(Stmt {
            target: Some(target),
            ..Stmt::new(Kind::Call(CallKind::Local))
        });
    }
    let rows: Vec<_> = table::rows_of_conf(name).collect();
    if rows.is_empty() {
        return Err(AsmErrorKind::Unknown(mnemonic));
    }
    // Pick the K or X row by the operand that decides it.
    let pick = |want_x: bool| -> R<Kind> {
        rows.iter()
            .map(|&r| table::info(r).kind)
            .find(|k| match k {
                Kind::Alu(_, _, src) | Kind::Jmp(_, _, src) => (*src == Src::X) == want_x,
                _ => true,
            })
            .ok_or_else(|| AsmErrorKind::Unknown(mnemonic.clone()))
    };
    let kind = table::info(rows[0]).kind;
    let reg = |i: usize| match ops.get(i) {
        Some(COp::Reg(r)) => Ok(*r),
        _ => Err(bad(i + 1, "a register")),
    };
    let mem = |i: usize| match ops.get(i) {
        Some(COp::Mem(r, o)) => Ok((*r, *o)),
        _ => Err(bad(i + 1, "a memory operand [%rN+off]")),
    };
    let target = |i: usize| match ops.get(i) {
        Some(COp::Label(l)) => Ok(Target::Label(l.clone())),
        Some(COp::Num(v, _)) => Ok(Target::Rel(*v as i64)),
        _ => Err(bad(i + 1, "a label or +offset")),
    };
    match kind {
        Kind::Alu(..) => {
            count(2)?;
            let dst = reg(0)?;
            match &ops[1] {
                COp::Reg(r) => Ok(Stmt {
                    dst,
                    src: *r,
                    ..Stmt::new(pick(true)?)
                }),
                COp::Num(v, t) => Ok(Stmt {
                    dst,
                    imm: imm32(*v, is_hex(t))?,
                    ..Stmt::new(pick(false)?)
                }),
                _ => Err(bad(2, "a register or immediate")),
            }
        }
        Kind::Movsx(..) => {
            count(2)?;
            Ok(Stmt {
                dst: reg(0)?,
                src: reg(1)?,
                ..Stmt::new(kind)
            })
        }
        Kind::Neg(_) | Kind::Endian(..) | Kind::Callx => {
            count(1)?;
            Ok(Stmt {
                dst: reg(0)?,
                ..Stmt::new(kind)
            })
        }
        Kind::Jmp(..) => {
            count(3)?;
            let dst = reg(0)?;
            let t = Some(target(2)?);
            match &ops[1] {
                COp::Reg(r) => Ok(Stmt {
                    dst,
                    src: *r,
                    target: t,
                    ..Stmt::new(pick(true)?)
                }),
                COp::Num(v, text) => Ok(Stmt {
                    dst,
                    imm: imm32(*v, is_hex(text))?,
                    target: t,
                    ..Stmt::new(pick(false)?)
                }),
                _ => Err(bad(2, "a register or immediate")),
            }
        }
        Kind::Ja | Kind::Gotol => {
            count(1)?;
            Ok(Stmt {
                target: Some(target(0)?),
                ..Stmt::new(kind)
            })
        }
        Kind::Exit => {
            count(0)?;
            Ok(Stmt::new(kind))
        }
        Kind::LdImm64(_) => {
            count(2)?;
            let dst = reg(0)?;
            match &ops[1] {
                COp::Num(v, _) => Ok(Stmt {
                    dst,
                    imm: imm64(*v)?,
                    ..Stmt::new(kind)
                }),
                _ => Err(bad(2, "an immediate")),
            }
        }
        Kind::LdAbs(_) => {
            count(1)?;
            match &ops[0] {
                COp::Num(v, t) => Ok(Stmt {
                    imm: imm32(*v, is_hex(t))?,
                    ..Stmt::new(kind)
                }),
                _ => Err(bad(1, "an immediate")),
            }
        }
        Kind::LdInd(_) => {
            count(2)?;
            match &ops[1] {
                COp::Num(v, t) => Ok(Stmt {
                    src: reg(0)?,
                    imm: imm32(*v, is_hex(t))?,
                    ..Stmt::new(kind)
                }),
                _ => Err(bad(2, "an immediate")),
            }
        }
        Kind::Ldx(..) => {
            count(2)?;
            let (src, off) = mem(1)?;
            Ok(Stmt {
                dst: reg(0)?,
                src,
                off,
                ..Stmt::new(kind)
            })
        }
        Kind::St(_) => {
            count(2)?;
            let (dst, off) = mem(0)?;
            match &ops[1] {
                COp::Num(v, t) => Ok(Stmt {
                    dst,
                    off,
                    imm: imm32(*v, is_hex(t))?,
                    ..Stmt::new(kind)
                }),
                _ => Err(bad(2, "an immediate")),
            }
        }
        Kind::Stx(_) | Kind::Atomic(..) => {
            count(2)?;
            let (dst, off) = mem(0)?;
            Ok(Stmt {
                dst,
                off,
                src: reg(1)?,
                ..Stmt::new(kind)
            })
        }
        Kind::Call(_) => Err(AsmErrorKind::Unknown(mnemonic)),
    }
}

// ---------------------------------------------------------------------------------------
// The llvm-objdump / kernel syntax.

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Reg(u8, Width),
    Num(i128, bool),
    Ident(String),
    P(&'static str),
}

const PUNCT: &[&str] = &[
    "s>>=", "<<=", ">>=", "s/=", "s%=", "s>=", "s<=", "+=", "-=", "*=", "/=", "%=", "|=", "&=",
    "^=", "==", "!=", ">=", "<=", "s>", "s<", ">", "<", "=", "&", "(", ")", "[", "]", "*", "+",
    "-", ",",
];

fn tokenize(s: &str) -> R<Vec<Tok>> {
    let mut out: Vec<Tok> = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        // `s8`-style names start with `s` too; only `s` followed by an operator is one.
        if let Some(p) = PUNCT.iter().find(|p| s[i..].starts_with(**p)) {
            out.push(Tok::P(p));
            i += p.len();
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let text = &s[start..i];
            let mut v = parse_number(text)?;
            let hex = is_hex(text);
            // A sign right before a number belongs to it: the kernel syntax has no binary
            // `+`/`-` between two values, so `(r1 - 8)`, `goto -3` and `r1 += -5` all read
            // as a register or keyword followed by one signed number.
            if let Some(Tok::P(p @ ("+" | "-"))) = out.last() {
                if *p == "-" {
                    v = -v;
                }
                out.pop();
            }
            out.push(Tok::Num(v, hex));
            continue;
        }
        if is_ident_char(c) {
            let start = i;
            while i < b.len() && (is_ident_char(b[i] as char) || b[i] == b'#') {
                i += 1;
            }
            let w = &s[start..i];
            let reg = |p: &str| {
                w.strip_prefix(p)
                    .filter(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
            };
            if let Some(d) = reg("r") {
                out.push(Tok::Reg(reg_number(d, w)?, Width::W64));
            } else if let Some(d) = reg("w") {
                out.push(Tok::Reg(reg_number(d, w)?, Width::W32));
            } else {
                out.push(Tok::Ident(w.to_string()));
            }
            continue;
        }
        return Err(AsmErrorKind::Unknown(s.to_string()));
    }
    Ok(out)
}

fn alu_op(p: &str) -> Option<AluOp> {
    Some(match p {
        "+=" => AluOp::Add,
        "-=" => AluOp::Sub,
        "*=" => AluOp::Mul,
        "/=" => AluOp::Div,
        "s/=" => AluOp::SDiv,
        "|=" => AluOp::Or,
        "&=" => AluOp::And,
        "<<=" => AluOp::Lsh,
        ">>=" => AluOp::Rsh,
        "%=" => AluOp::Mod,
        "s%=" => AluOp::SMod,
        "^=" => AluOp::Xor,
        "=" => AluOp::Mov,
        "s>>=" => AluOp::Arsh,
        _ => return None,
    })
}

fn cond(p: &str) -> Option<Cond> {
    Some(match p {
        "==" => Cond::Eq,
        ">" => Cond::Gt,
        ">=" => Cond::Ge,
        "&" => Cond::Set,
        "!=" => Cond::Ne,
        "s>" => Cond::Sgt,
        "s>=" => Cond::Sge,
        "<" => Cond::Lt,
        "<=" => Cond::Le,
        "s<" => Cond::Slt,
        "s<=" => Cond::Sle,
        _ => return None,
    })
}

fn size_of(name: &str) -> Option<(Size, bool)> {
    Some(match name {
        "u8" => (Size::B, false),
        "u16" => (Size::H, false),
        "u32" => (Size::W, false),
        "u64" => (Size::DW, false),
        "s8" => (Size::B, true),
        "s16" => (Size::H, true),
        "s32" => (Size::W, true),
        _ => return None,
    })
}

fn atomic_op(name: &str) -> Option<AtomicOp> {
    Some(match name {
        "add" => AtomicOp::Add,
        "or" => AtomicOp::Or,
        "and" => AtomicOp::And,
        "xor" => AtomicOp::Xor,
        _ => return None,
    })
}

fn same_width(a: Width, b: Width) -> R<()> {
    if a == b {
        Ok(())
    } else {
        Err(AsmErrorKind::MixedWidth)
    }
}

fn target_tok(t: &Tok) -> Option<Target> {
    match t {
        Tok::Num(v, _) => Some(Target::Rel(*v as i64)),
        Tok::Ident(l) => Some(Target::Label(l.clone())),
        _ => None,
    }
}

fn pseudo_by_name(name: &str) -> Option<Pseudo> {
    [
        Pseudo::MapFd,
        Pseudo::MapValue,
        Pseudo::BtfId,
        Pseudo::Func,
        Pseudo::MapIdx,
        Pseudo::MapIdxValue,
    ]
    .into_iter()
    .find(|p| super::disasm::pseudo_name(*p) == name)
}

fn parse_kernel(s: &str) -> R<Stmt> {
    use Tok::{Ident as I, Num as N, Reg as Rg, P};
    let toks = tokenize(s)?;
    let unknown = || AsmErrorKind::Unknown(s.to_string());
    let id = |t: &str, w: &str| t == w;
    let st = Stmt::new;
    match toks.as_slice() {
        [I(e)] if id(e, "exit") => Ok(st(Kind::Exit)),
        [I(g), t] if id(g, "goto") => Ok(Stmt {
            target: Some(target_tok(t).ok_or_else(unknown)?),
            ..st(Kind::Ja)
        }),
        [I(g), t] if id(g, "gotol") => Ok(Stmt {
            target: Some(target_tok(t).ok_or_else(unknown)?),
            ..st(Kind::Gotol)
        }),
        [I(c), N(v, h)] if id(c, "call") => Ok(Stmt {
            imm: imm32(*v, *h)?,
            ..st(Kind::Call(CallKind::Helper))
        }),
        [I(c), I(pc), N(v, _)] if id(c, "call") && id(pc, "pc") => Ok(Stmt {
            target: Some(Target::Rel(*v as i64)),
            ..st(Kind::Call(CallKind::Local))
        }),
        [I(c), I(l)] if id(c, "call") => Ok(Stmt {
            target: Some(Target::Label(l.clone())),
            ..st(Kind::Call(CallKind::Local))
        }),
        [I(c), I(k), P("("), N(v, h), P(")")] if id(c, "call") && id(k, "kfunc") => Ok(Stmt {
            imm: imm32(*v, *h)?,
            ..st(Kind::Call(CallKind::Kfunc))
        }),
        [I(c), Rg(r, Width::W64)] if id(c, "callx") => Ok(Stmt {
            dst: *r,
            ..st(Kind::Callx)
        }),
        [I(i), Rg(a, wa), P(op), rhs, I(g), t] if id(i, "if") && id(g, "goto") => {
            let c = cond(op).ok_or_else(unknown)?;
            let target = Some(target_tok(t).ok_or_else(unknown)?);
            match rhs {
                Rg(b, wb) => {
                    same_width(*wa, *wb)?;
                    Ok(Stmt {
                        dst: *a,
                        src: *b,
                        target,
                        ..st(Kind::Jmp(c, *wa, Src::X))
                    })
                }
                N(v, h) => Ok(Stmt {
                    dst: *a,
                    imm: imm32(*v, *h)?,
                    target,
                    ..st(Kind::Jmp(c, *wa, Src::K))
                }),
                _ => Err(unknown()),
            }
        }
        // Stores and non-fetching atomics: `*(u32 *)(r1 + 4) = x`, `lock *(u64 *)(r1 + 0) += r2`.
        [lock @ .., P("*"), P("("), I(ty), P("*"), P(")"), P("("), Rg(d, Width::W64), N(off, _), P(")"), P(op), rhs]
            if lock.is_empty() || matches!(lock, [I(l)] if l == "lock") =>
        {
            let (size, false) = size_of(ty).ok_or_else(unknown)? else {
                return Err(unknown());
            };
            let off = off16(*off)?;
            if lock.is_empty() {
                if *op != "=" {
                    return Err(unknown());
                }
                return match rhs {
                    Rg(r, _) => Ok(Stmt {
                        dst: *d,
                        src: *r,
                        off,
                        ..st(Kind::Stx(size))
                    }),
                    N(v, h) => Ok(Stmt {
                        dst: *d,
                        off,
                        imm: imm32(*v, *h)?,
                        ..st(Kind::St(size))
                    }),
                    _ => Err(unknown()),
                };
            }
            let aop = match *op {
                "+=" => AtomicOp::Add,
                "|=" => AtomicOp::Or,
                "&=" => AtomicOp::And,
                "^=" => AtomicOp::Xor,
                _ => return Err(unknown()),
            };
            let Rg(r, _) = rhs else { return Err(unknown()) };
            Ok(Stmt {
                dst: *d,
                src: *r,
                off,
                ..st(Kind::Atomic(size, aop, false))
            })
        }
        [Rg(d, wd), P("="), rest @ ..] => parse_assign(*d, *wd, rest, s),
        [Rg(d, wd), P(op), rhs] => {
            let aop = alu_op(op).ok_or_else(unknown)?;
            match rhs {
                Rg(r, wr) => {
                    same_width(*wd, *wr)?;
                    Ok(Stmt {
                        dst: *d,
                        src: *r,
                        ..st(Kind::Alu(aop, *wd, Src::X))
                    })
                }
                N(v, h) => Ok(Stmt {
                    dst: *d,
                    imm: imm32(*v, *h)?,
                    ..st(Kind::Alu(aop, *wd, Src::K))
                }),
                _ => Err(unknown()),
            }
        }
        _ => Err(unknown()),
    }
}

/// `rD = ...` forms.
fn parse_assign(d: u8, wd: Width, rest: &[Tok], s: &str) -> R<Stmt> {
    use Tok::{Ident as I, Num as N, Reg as Rg, P};
    let unknown = || AsmErrorKind::Unknown(s.to_string());
    let st = Stmt::new;
    let w64 = |w: Width| {
        if w == Width::W64 {
            Ok(())
        } else {
            Err(unknown())
        }
    };
    match rest {
        [N(v, _), I(ll)] if ll == "ll" => {
            w64(wd)?;
            Ok(Stmt {
                dst: d,
                imm: imm64(*v)?,
                ..st(Kind::LdImm64(Pseudo::Imm64))
            })
        }
        [I(name), P("("), args @ .., P(")"), I(ll)] if ll == "ll" => {
            w64(wd)?;
            let p = pseudo_by_name(name).ok_or_else(unknown)?;
            let mut stmt = Stmt {
                dst: d,
                ..st(Kind::LdImm64(p))
            };
            match (p, args) {
                (Pseudo::Func, [I(pc), N(v, _)]) if pc == "pc" => {
                    stmt.target = Some(Target::Rel(*v as i64))
                }
                (Pseudo::Func, [I(label)]) => stmt.target = Some(Target::Label(label.clone())),
                (_, [N(lo, h)]) if !p.uses_high_imm() && p != Pseudo::Func => {
                    stmt.imm = imm32(*lo, *h)? & 0xffff_ffff
                }
                (_, [N(lo, hl), P(","), N(hi, hh)]) if p.uses_high_imm() && p != Pseudo::Imm64 => {
                    let lo = imm32(*lo, *hl)? as u32 as u64;
                    let hi = imm32(*hi, *hh)? as u32 as u64;
                    stmt.imm = (lo | (hi << 32)) as i64;
                }
                _ => return Err(unknown()),
            }
            Ok(stmt)
        }
        // Loads: `r0 = *(u32 *)(r1 + 4)`, `r0 = *(u8 *)skb[4]`, `r0 = *(u8 *)skb[r1 + 4]`.
        [P("*"), P("("), I(ty), P("*"), P(")"), mem @ ..] => {
            let (size, signed) = size_of(ty)
                .or(if ty == "u64" {
                    Some((Size::DW, false))
                } else {
                    None
                })
                .ok_or_else(unknown)?;
            match mem {
                [P("("), Rg(r, Width::W64), N(off, _), P(")")] => Ok(Stmt {
                    dst: d,
                    src: *r,
                    off: off16(*off)?,
                    ..st(Kind::Ldx(size, signed))
                }),
                [I(skb), P("["), N(v, h), P("]")] if skb == "skb" && d == 0 && !signed => {
                    Ok(Stmt {
                        imm: imm32(*v, *h)?,
                        ..st(Kind::LdAbs(size))
                    })
                }
                [I(skb), P("["), Rg(r, Width::W64), N(v, h), P("]")]
                    if skb == "skb" && d == 0 && !signed =>
                {
                    Ok(Stmt {
                        src: *r,
                        imm: imm32(*v, *h)?,
                        ..st(Kind::LdInd(size))
                    })
                }
                _ => Err(unknown()),
            }
        }
        [P("-"), Rg(r, wr)] if *r == d && *wr == wd => Ok(Stmt {
            dst: d,
            ..st(Kind::Neg(wd))
        }),
        [P("("), I(ty), P(")"), Rg(r, wr)] => {
            same_width(wd, *wr)?;
            let bits = match ty.as_str() {
                "s8" => 8,
                "s16" => 16,
                "s32" => 32,
                _ => return Err(unknown()),
            };
            Ok(Stmt {
                dst: d,
                src: *r,
                ..st(Kind::Movsx(wd, bits))
            })
        }
        [I(name), Rg(r, Width::W64)] if *r == d && wd == Width::W64 => {
            let (order, bits) = [Order::Le, Order::Be, Order::Swap]
                .into_iter()
                .find_map(|o| {
                    let b = name.strip_prefix(super::disasm::order_str(o))?;
                    Some((o, b.parse::<u8>().ok()?))
                })
                .ok_or_else(unknown)?;
            Ok(Stmt {
                dst: d,
                ..st(Kind::Endian(order, bits))
            })
        }
        // `rS = atomic_fetch_add((u64 *)(rD + off), rS)`
        [I(name), P("("), P("("), I(ty), P("*"), P(")"), P("("), Rg(m, Width::W64), N(off, _), P(")"), P(","), Rg(r, wr), P(")")]
            if name.starts_with("atomic_fetch_") =>
        {
            let aop = atomic_op(&name["atomic_fetch_".len()..]).ok_or_else(unknown)?;
            let (size, false) = size_of(ty)
                .or(if ty == "u64" {
                    Some((Size::DW, false))
                } else {
                    None
                })
                .ok_or_else(unknown)?
            else {
                return Err(unknown());
            };
            if *r != d || *wr != wd {
                return Err(unknown());
            }
            Ok(Stmt {
                dst: *m,
                src: d,
                off: off16(*off)?,
                ..st(Kind::Atomic(size, aop, true))
            })
        }
        // `rS = xchg_64(rD + off, rS)`, `w0 = cmpxchg32_32(rD + off, w0, wS)`
        [I(name), P("("), Rg(m, Width::W64), N(off, _), P(","), args @ .., P(")")] => {
            let off = off16(*off)?;
            let (size, want) = match name.as_str() {
                "xchg_64" | "cmpxchg_64" => (Size::DW, Width::W64),
                "xchg32_32" | "cmpxchg32_32" => (Size::W, Width::W32),
                _ => return Err(unknown()),
            };
            same_width(wd, want)?;
            match (name.starts_with("cmpxchg"), args) {
                (false, [Rg(r, wr)]) if *r == d && *wr == wd => Ok(Stmt {
                    dst: *m,
                    src: d,
                    off,
                    ..st(Kind::Atomic(size, AtomicOp::Xchg, true))
                }),
                (true, [Rg(0, w0), P(","), Rg(r, wr)]) if d == 0 && *w0 == wd && *wr == wd => {
                    Ok(Stmt {
                        dst: *m,
                        src: *r,
                        off,
                        ..st(Kind::Atomic(size, AtomicOp::Cmpxchg, true))
                    })
                }
                _ => Err(unknown()),
            }
        }
        [Rg(r, wr)] => {
            same_width(wd, *wr)?;
            Ok(Stmt {
                dst: d,
                src: *r,
                ..st(Kind::Alu(AluOp::Mov, wd, Src::X))
            })
        }
        [N(v, h)] => Ok(Stmt {
            dst: d,
            imm: imm32(*v, *h)?,
            ..st(Kind::Alu(AluOp::Mov, wd, Src::K))
        }),
        _ => Err(unknown()),
    }
}
