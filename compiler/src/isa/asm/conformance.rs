//! The bpf_conformance syntax (`ldxw %r0, [%r1+4]`, `jne %r0, 15, fail`,
//! `lock fetch add [%r10-8], %r1`, `call local f`): one statement into a [`Stmt`].

use super::number::{imm32, imm64, is_hex, off16, parse_number, reg_number};
use super::{is_ident_char, AsmErrorKind, Stmt, Target, R};
use crate::isa::table::{self, CallKind, Kind, Src};

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

pub(super) fn parse_conformance(s: &str) -> R<Stmt> {
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
        Kind::Ja | Kind::Gotol | Kind::MayGoto => {
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
