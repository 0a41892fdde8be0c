//! The disassembler: the llvm-objdump / kernel syntax (`r0 = *(u32 *)(r1 + 4)`,
//! `if r1 s> 5 goto +3`, `r1 = 0 ll`).
//!
//! Every instruction prints as text that [`super::asm`] reads back into the same
//! instruction, so the text is a lossless view of the binary. Forms llvm-objdump has no
//! syntax for (the `ld_imm64` pseudo sources, kfunc calls) use `name(args)` forms that read
//! naturally and are just as exact.

use super::insn::Insn;
use super::table::{AluOp, AtomicOp, CallKind, Cond, Kind, Order, Pseudo, Size, Src, Width};
use std::fmt;

/// The register name for a width (`r1` or `w1`).
pub(crate) struct RegName(pub u8, pub Width);

impl fmt::Display for RegName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            Width::W64 => write!(f, "r{}", self.0),
            Width::W32 => write!(f, "w{}", self.0),
        }
    }
}

/// A memory operand `(rN + off)` / `(rN - off)`.
struct MemRef(u8, i16);

impl fmt::Display for MemRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.1 < 0 {
            write!(f, "(r{} - {})", self.0, -i32::from(self.1))
        } else {
            write!(f, "(r{} + {})", self.0, self.1)
        }
    }
}

/// A pc-relative target `+3` / `-3`.
struct Rel(i64);

impl fmt::Display for Rel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 < 0 {
            write!(f, "{}", self.0)
        } else {
            write!(f, "+{}", self.0)
        }
    }
}

pub(crate) fn size_name(s: Size, signed: bool) -> &'static str {
    match (s, signed) {
        (Size::B, false) => "u8",
        (Size::H, false) => "u16",
        (Size::W, false) => "u32",
        (Size::DW, false) => "u64",
        (Size::B, true) => "s8",
        (Size::H, true) => "s16",
        (Size::W, true) => "s32",
        (Size::DW, true) => "s64",
    }
}

pub(crate) fn alu_op_str(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+=",
        AluOp::Sub => "-=",
        AluOp::Mul => "*=",
        AluOp::Div => "/=",
        AluOp::SDiv => "s/=",
        AluOp::Or => "|=",
        AluOp::And => "&=",
        AluOp::Lsh => "<<=",
        AluOp::Rsh => ">>=",
        AluOp::Mod => "%=",
        AluOp::SMod => "s%=",
        AluOp::Xor => "^=",
        AluOp::Mov => "=",
        AluOp::Arsh => "s>>=",
    }
}

pub(crate) fn cond_str(c: Cond) -> &'static str {
    match c {
        Cond::Eq => "==",
        Cond::Gt => ">",
        Cond::Ge => ">=",
        Cond::Set => "&",
        Cond::Ne => "!=",
        Cond::Sgt => "s>",
        Cond::Sge => "s>=",
        Cond::Lt => "<",
        Cond::Le => "<=",
        Cond::Slt => "s<",
        Cond::Sle => "s<=",
    }
}

pub(crate) fn order_str(o: Order) -> &'static str {
    match o {
        Order::Le => "le",
        Order::Be => "be",
        Order::Swap => "bswap",
    }
}

pub(crate) fn atomic_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "add",
        AtomicOp::Or => "or",
        AtomicOp::And => "and",
        AtomicOp::Xor => "xor",
        AtomicOp::Xchg => "xchg",
        AtomicOp::Cmpxchg => "cmpxchg",
    }
}

pub(crate) fn pseudo_name(p: Pseudo) -> &'static str {
    match p {
        Pseudo::Imm64 => "",
        Pseudo::MapFd => "map_fd",
        Pseudo::MapValue => "map_value",
        Pseudo::BtfId => "btf_id",
        Pseudo::Func => "func",
        Pseudo::MapIdx => "map_idx",
        Pseudo::MapIdxValue => "map_idx_value",
    }
}

fn width_of(s: Size) -> Width {
    if s == Size::DW {
        Width::W64
    } else {
        Width::W32
    }
}

/// Writes a 64-bit constant the way a reader wants to see it: small values in decimal,
/// large ones (addresses, bit patterns) in hex.
fn imm64(f: &mut fmt::Formatter<'_>, v: i64) -> fmt::Result {
    if (-65536..65536).contains(&v) {
        write!(f, "{v}")
    } else {
        write!(f, "0x{:x}", v as u64)
    }
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (d, s, off, imm) = (self.dst, self.src, self.off, self.imm);
        match self.kind() {
            Kind::Alu(op, w, Src::K) => write!(f, "{} {} {}", RegName(d, w), alu_op_str(op), imm),
            Kind::Alu(op, w, Src::X) => {
                write!(f, "{} {} {}", RegName(d, w), alu_op_str(op), RegName(s, w))
            }
            Kind::Neg(w) => write!(f, "{} = -{}", RegName(d, w), RegName(d, w)),
            Kind::Movsx(w, bits) => write!(f, "{} = (s{bits}){}", RegName(d, w), RegName(s, w)),
            Kind::Endian(o, bits) => write!(f, "r{d} = {}{bits} r{d}", order_str(o)),
            Kind::Jmp(c, w, Src::K) => {
                write!(
                    f,
                    "if {} {} {} goto {}",
                    RegName(d, w),
                    cond_str(c),
                    imm,
                    Rel(off.into())
                )
            }
            Kind::Jmp(c, w, Src::X) => write!(
                f,
                "if {} {} {} goto {}",
                RegName(d, w),
                cond_str(c),
                RegName(s, w),
                Rel(off.into())
            ),
            Kind::Ja => write!(f, "goto {}", Rel(off.into())),
            Kind::Gotol => write!(f, "gotol {}", Rel(imm)),
            Kind::MayGoto => write!(f, "may_goto {}", Rel(off.into())),
            Kind::Call(CallKind::Helper) => write!(f, "call {imm}"),
            Kind::Call(CallKind::Local) => write!(f, "call pc{}", Rel(imm)),
            Kind::Call(CallKind::Kfunc) => write!(f, "call kfunc({imm})"),
            Kind::Callx => write!(f, "callx r{d}"),
            Kind::Exit => f.write_str("exit"),
            Kind::LdImm64(Pseudo::Imm64) => {
                write!(f, "r{d} = ")?;
                imm64(f, imm)?;
                f.write_str(" ll")
            }
            Kind::LdImm64(p) => {
                let (lo, hi) = (imm as i32, (imm >> 32) as i32);
                write!(f, "r{d} = {}(", pseudo_name(p))?;
                match p {
                    Pseudo::Func => write!(f, "pc{}", Rel(lo.into()))?,
                    _ if p.uses_high_imm() => write!(f, "{lo}, {hi}")?,
                    _ => write!(f, "{lo}")?,
                }
                f.write_str(") ll")
            }
            Kind::LdAbs(sz) => write!(f, "r0 = *({} *)skb[{imm}]", size_name(sz, false)),
            Kind::LdInd(sz) => {
                if imm < 0 {
                    write!(f, "r0 = *({} *)skb[r{s} - {}]", size_name(sz, false), -imm)
                } else {
                    write!(f, "r0 = *({} *)skb[r{s} + {imm}]", size_name(sz, false))
                }
            }
            Kind::Ldx(sz, signed) => {
                write!(f, "r{d} = *({} *){}", size_name(sz, signed), MemRef(s, off))
            }
            Kind::St(sz) => write!(f, "*({} *){} = {imm}", size_name(sz, false), MemRef(d, off)),
            Kind::Stx(sz) => write!(f, "*({} *){} = r{s}", size_name(sz, false), MemRef(d, off)),
            Kind::Atomic(sz, op, fetch) => {
                let w = width_of(sz);
                let ty = size_name(sz, false);
                let m = MemRef(d, off);
                let src = RegName(s, w);
                match op {
                    AtomicOp::Xchg => {
                        let name = if w == Width::W64 {
                            "xchg_64"
                        } else {
                            "xchg32_32"
                        };
                        let m = MemRef(d, off).to_string();
                        write!(
                            f,
                            "{src} = {name}{m_inner}, {src})",
                            m_inner = &m[..m.len() - 1]
                        )
                    }
                    AtomicOp::Cmpxchg => {
                        let name = if w == Width::W64 {
                            "cmpxchg_64"
                        } else {
                            "cmpxchg32_32"
                        };
                        let m = MemRef(d, off).to_string();
                        let r0 = RegName(0, w);
                        write!(f, "{r0} = {name}{}, {r0}, {src})", &m[..m.len() - 1])
                    }
                    _ if fetch => write!(
                        f,
                        "{src} = atomic_fetch_{}(({ty} *){m}, {src})",
                        atomic_name(op)
                    ),
                    _ => {
                        let sym = match op {
                            AtomicOp::Add => "+=",
                            AtomicOp::Or => "|=",
                            AtomicOp::And => "&=",
                            _ => "^=",
                        };
                        write!(f, "lock *({ty} *){m} {sym} {src}")
                    }
                }
            }
        }
    }
}
