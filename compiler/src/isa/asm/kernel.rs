//! The llvm-objdump / kernel syntax the disassembler prints (`r0 = *(u32 *)(r1 + 4)`,
//! `if r1 s> 5 goto +3`, `lock *(u64 *)(r1 + 0) += r2`): one statement into a [`Stmt`].

use super::number::{imm32, imm64, is_hex, off16, parse_number, reg_number};
use super::{is_ident_char, AsmErrorKind, Stmt, Target, R};
use crate::isa::table::{AluOp, AtomicOp, CallKind, Cond, Kind, Order, Pseudo, Size, Src, Width};

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
    .find(|p| crate::isa::disasm::pseudo_name(*p) == name)
}

pub(super) fn parse_kernel(s: &str) -> R<Stmt> {
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
        [I(g), t] if id(g, "may_goto") => Ok(Stmt {
            target: Some(target_tok(t).ok_or_else(unknown)?),
            ..st(Kind::MayGoto)
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
        [I(c), I(k), P("("), I(name), P(")")] if id(c, "call") && id(k, "kfunc") => Ok(Stmt {
            kfunc: Some(name.clone()),
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
                    let b = name.strip_prefix(crate::isa::disasm::order_str(o))?;
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
