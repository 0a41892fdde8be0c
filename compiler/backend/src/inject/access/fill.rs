//! The context fill: the statements that put a site's context into the registers and the
//! `.local` copy its probe reads (`struct bpf2ptx_mem_ctx` from a
//! [`MemSite`](super::MemSite), `struct bpf2ptx_insn_ctx` from the opcode table), and the
//! bytes of it known when the kernel is built, which the verifier may take as known at
//! that site.
//!
//! Apart from the reading of operands (`mod.rs`) because it is the other half of a site:
//! reading decides what each field is (a constant or a register) from the ISA's operand
//! syntax and knows nothing of the kernel; filling decides how a value of each kind
//! reaches a 64-bit word, from the widths the kernel declares its registers with.

use super::{bad, mem_site, OperandError, Val, R};
use crate::inject::attach::{Field, INSN_CTX_SIZE, MEM_CTX_FIELDS, MEM_CTX_SIZE};
use crate::inject::opcodes::{self, OpRow};
use crate::inject::ptx::Instruction;
use crate::inject::weave::{InjectError, SiteContext};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The statements that put 64-bit context words into the site's `%bpf2ptx_c<k>`
/// registers and (when the probe reads its context through memory) the kernel's
/// `.local` copy, and the bytes of them known at build time.
struct Words<'r> {
    regs: &'r HashMap<String, u32>,
    text: String,
    bytes: [u8; MEM_CTX_SIZE as usize],
    known: u128,
    /// Whether the scratch registers are needed.
    scratch: bool,
}

/// Where a register's width is declared, for reading it: the bits of its `.reg`
/// declaration (1 for `.pred`).
fn reg_bits(regs: &HashMap<String, u32>, r: &str) -> Option<u32> {
    regs.get(r)
        .or_else(|| regs.get(r.trim_end_matches(|c: char| c.is_ascii_digit())))
        .copied()
}

impl Words<'_> {
    fn err(&self, register: &str) -> OperandError {
        OperandError(format!(
            "register `{register}` has no .pred, 16-, 32- or 64-bit declaration in the kernel"
        ))
    }

    /// `%bpf2ptx_t` = the 32-bit value `v` zero-extended to 64 bits.
    fn low32(&mut self, v: &Val) -> R<()> {
        self.scratch = true;
        match v {
            Val::Const(c) => {
                let _ = writeln!(self.text, "mov.u64 %bpf2ptx_t, {};", c & 0xffff_ffff);
            }
            Val::Reg(r) => match reg_bits(self.regs, r) {
                Some(64) => {
                    let _ = writeln!(self.text, "and.b64 %bpf2ptx_t, {r}, 4294967295;");
                }
                Some(32) => {
                    let _ = writeln!(self.text, "cvt.u64.u32 %bpf2ptx_t, {r};");
                }
                Some(16) => {
                    let _ = writeln!(self.text, "cvt.u64.u16 %bpf2ptx_t, {r};");
                }
                _ => return Err(self.err(r)),
            },
            Val::CpSource { reg, bytes } => match reg_bits(self.regs, reg) {
                Some(1) => {
                    let _ = writeln!(
                        self.text,
                        "selp.b32 %bpf2ptx_u, 0, {bytes}, {reg};\ncvt.u64.u32 %bpf2ptx_t, %bpf2ptx_u;"
                    );
                }
                // Not a predicate: the operand is src-size.
                Some(_) => return self.low32(&Val::Reg(reg.clone())),
                None => return Err(self.err(reg)),
            },
            Val::Lanes { lanes, bytes } => {
                let _ = writeln!(
                    self.text,
                    "mov.u32 %bpf2ptx_u, %laneid;\nsetp.lt.u32 %bpf2ptx_q, %bpf2ptx_u, {lanes};\n\
                     selp.b32 %bpf2ptx_u, {bytes}, 0, %bpf2ptx_q;\ncvt.u64.u32 %bpf2ptx_t, %bpf2ptx_u;"
                );
            }
            Val::Addr { .. } => return bad("an address where a 32-bit value belongs"),
        }
        Ok(())
    }

    /// Word `w` = `v` (a 64-bit value: an address, a policy).
    fn word64(&mut self, w: usize, v: &Val) -> R<()> {
        let c = format!("%bpf2ptx_c{w}");
        match v {
            Val::Const(k) => {
                self.set_known(w * 8, 8, *k);
                let _ = writeln!(self.text, "mov.u64 {c}, {k};");
            }
            Val::Addr { base, offset } => {
                if base.is_empty() {
                    let _ = writeln!(self.text, "mov.u64 {c}, {};", *offset as u64);
                } else {
                    match reg_bits(self.regs, base) {
                        Some(64) => {
                            let _ = writeln!(self.text, "mov.b64 {c}, {base};");
                        }
                        Some(32) => {
                            let _ = writeln!(self.text, "cvt.u64.u32 {c}, {base};");
                        }
                        Some(_) => return Err(self.err(base)),
                        // Not a register: a variable, whose address this is.
                        None if !base.starts_with('%') => {
                            let _ = writeln!(self.text, "mov.u64 {c}, {base};");
                        }
                        None => return Err(self.err(base)),
                    }
                    if *offset != 0 {
                        let _ = writeln!(self.text, "add.s64 {c}, {c}, {offset};");
                    }
                }
            }
            Val::Reg(r) => match reg_bits(self.regs, r) {
                Some(64) => {
                    let _ = writeln!(self.text, "mov.b64 {c}, {r};");
                }
                _ => {
                    self.low32(v)?;
                    let _ = writeln!(self.text, "mov.b64 {c}, %bpf2ptx_t;");
                }
            },
            other => {
                self.low32(other)?;
                let _ = writeln!(self.text, "mov.b64 {c}, %bpf2ptx_t;");
            }
        }
        self.store(w);
        Ok(())
    }

    /// Word `w` = `lo | hi << 32`, each a 32-bit value.
    fn word32x2(&mut self, w: usize, lo: &Val, hi: &Val) -> R<()> {
        let c = format!("%bpf2ptx_c{w}");
        let mut konst = 0u64;
        if let Some(v) = lo.known() {
            konst |= v & 0xffff_ffff;
            self.set_known(w * 8, 4, v & 0xffff_ffff);
        }
        if let Some(v) = hi.known() {
            konst |= (v & 0xffff_ffff) << 32;
            self.set_known(w * 8 + 4, 4, v & 0xffff_ffff);
        }
        let _ = writeln!(self.text, "mov.u64 {c}, {konst};");
        if lo.known().is_none() {
            self.low32(lo)?;
            let _ = writeln!(self.text, "or.b64 {c}, {c}, %bpf2ptx_t;");
        }
        if hi.known().is_none() {
            self.low32(hi)?;
            let _ = writeln!(
                self.text,
                "shl.b64 %bpf2ptx_t, %bpf2ptx_t, 32;\nor.b64 {c}, {c}, %bpf2ptx_t;"
            );
        }
        self.store(w);
        Ok(())
    }

    fn set_known(&mut self, at: usize, n: usize, v: u64) {
        for k in 0..n {
            self.bytes[at + k] = (v >> (8 * k)) as u8;
            self.known |= 1u128 << (at + k);
        }
    }

    /// The `.local` copy r1 points to (the weaver drops these lines when the probe reads
    /// every field from the registers).
    fn store(&mut self, w: usize) {
        let at = if w == 0 {
            String::new()
        } else {
            format!("+{}", w * 8)
        };
        let _ = writeln!(self.text, "st.local.u64 [bpf2ptx_ctx{at}], %bpf2ptx_c{w};");
    }
}

/// The offset of a field of [`MEM_CTX_FIELDS`] (the words below follow them).
fn offset(name: &str) -> usize {
    MEM_CTX_FIELDS
        .iter()
        .find(|f: &&Field| f.name == name)
        .map_or(usize::MAX, |f| f.offset as usize)
}

/// The context of a memory site: the statements that fill `struct bpf2ptx_mem_ctx`
/// (registers `%bpf2ptx_c0..9`, each stored to the kernel's `.local` copy) and the bytes
/// known when the kernel is built. `regs` are the bit widths of the kernel's registers
/// (1 for predicates).
pub fn mem_ctx(
    insn: &Instruction,
    regs: &HashMap<String, u32>,
    kernel: &str,
    kernel_index: u32,
    site: u32,
) -> Result<(String, SiteContext), InjectError> {
    let fail = |e: OperandError| InjectError::Operands {
        kernel: kernel.into(),
        line: site,
        instruction: insn.opcode.to_string(),
        reason: e.0,
    };
    let s = match mem_site(insn) {
        Ok(Some(s)) => s,
        Ok(None) => return Err(fail(OperandError("not a memory access".into()))),
        Err(e) => return Err(fail(e)),
    };
    let mut w = Words {
        regs,
        text: String::new(),
        bytes: [0; MEM_CTX_SIZE as usize],
        known: 0,
        scratch: false,
    };
    let k = |v: u32| Val::Const(u64::from(v));
    let coord = |i: usize| s.coords.get(i).cloned().unwrap_or(Val::Const(0));
    debug_assert_eq!(offset("coord"), 56);
    (|| -> R<()> {
        w.word64(0, &s.addr)?;
        w.word32x2(1, &s.size, &k(s.flags))?;
        w.word32x2(2, &k(kernel_index), &k(site))?;
        w.word64(3, &s.addr2)?;
        w.word64(4, &s.policy)?;
        w.word32x2(5, &k(s.op_id), &s.size2)?;
        w.word32x2(6, &k(s.qual), &k(s.count))?;
        w.word32x2(7, &coord(0), &coord(1))?;
        w.word32x2(8, &coord(2), &coord(3))?;
        w.word32x2(9, &coord(4), &k(0))
    })()
    .map_err(fail)?;
    let text = if w.scratch {
        format!(
            "{{\n.reg .b64 %bpf2ptx_t;\n.reg .b32 %bpf2ptx_u;\n.reg .pred %bpf2ptx_q;\n{}}}\n",
            w.text
        )
    } else {
        w.text
    };
    Ok((
        text,
        SiteContext {
            bytes: w.bytes,
            known: w.known,
            size: MEM_CTX_SIZE,
        },
    ))
}

/// The context of an instruction site: `{ kernel, site, op, group }`, two constant
/// words; `op` and `group` are 0 for an opcode the table does not know.
pub fn insn_ctx(insn: &Instruction, kernel_index: u32, site: u32) -> (String, SiteContext) {
    let row: Option<&OpRow> = opcodes::classify(&insn.opcode);
    let op = row.map_or(0, |r| r.id);
    let group = row.map_or(0, |r| r.group.id());
    let w0 = u64::from(kernel_index) | u64::from(site) << 32;
    let w1 = u64::from(op) | u64::from(group) << 32;
    let mut ctx = SiteContext {
        bytes: [0; MEM_CTX_SIZE as usize],
        known: (1u128 << INSN_CTX_SIZE) - 1,
        size: INSN_CTX_SIZE,
    };
    ctx.bytes[..8].copy_from_slice(&w0.to_le_bytes());
    ctx.bytes[8..16].copy_from_slice(&w1.to_le_bytes());
    (
        format!(
            "mov.u64 %bpf2ptx_c0, {w0};\nst.local.u64 [bpf2ptx_ctx], %bpf2ptx_c0;\n\
             mov.u64 %bpf2ptx_c1, {w1};\nst.local.u64 [bpf2ptx_ctx+8], %bpf2ptx_c1;\n"
        ),
        ctx,
    )
}
