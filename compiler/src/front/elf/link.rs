//! One program linked: its entry function, then every function it reaches (calls and
//! function addresses), each once; laid out in that order, then every call and function
//! address patched to its pc-relative target and every map reference rewritten to the
//! map's index.

use super::lines::Lines;
use super::{err, CodeSec, FuncDef, SecReloc};
use crate::front::LoadError;
use crate::isa::insn::{self, Insn, SLOT};
use crate::isa::table::{CallKind, Kind, Pseudo};
use crate::program::{Func, Program, Reloc, RelocTarget};
use std::collections::HashMap;

/// Links one program: its entry function, then every function it reaches, each once.
pub(super) fn link(
    file: &str,
    entry: usize,
    funcs: &[FuncDef],
    code: &HashMap<usize, CodeSec>,
    lines: &Lines,
) -> Result<Program, LoadError> {
    let func_at = |sec: usize, pc: usize| funcs.iter().position(|f| f.sec == sec && f.start == pc);
    let mut order = vec![entry];
    let mut pos: HashMap<usize, usize> = HashMap::from([(entry, 0)]);
    let mut k = 0;
    // Per linked function: (instruction index in its section → target function) edges.
    let mut edges: Vec<Vec<(usize, usize, Option<SecReloc>)>> = Vec::new();
    while k < order.len() {
        let f = &funcs[order[k]];
        let sec = &code[&f.sec];
        let (a, b) = (
            sec.idx_of_pc[&f.start],
            sec.idx_of_pc
                .get(&f.end)
                .copied()
                .unwrap_or(sec.insns.len()),
        );
        let mut e = Vec::new();
        for i in a..b {
            let ins = sec.insns[i];
            let target = match (sec.relocs.get(&i), ins.kind()) {
                (Some(r @ SecReloc::Code { sec: ts, pc, .. }), _) => {
                    Some((*ts, *pc, Some(r.clone())))
                }
                (None, Kind::Call(CallKind::Local) | Kind::LdImm64(Pseudo::Func)) => {
                    let rel = if let Kind::LdImm64(_) = ins.kind() {
                        i64::from(ins.imm as i32)
                    } else {
                        ins.imm
                    };
                    let t = sec.pcs[i] as i64 + 1 + rel;
                    let t = usize::try_from(t).map_err(|_| {
                        err(
                            file,
                            &sec.name,
                            Some((sec.pcs[i] * SLOT) as u64),
                            "call target before the section start",
                        )
                    })?;
                    Some((f.sec, t, None))
                }
                _ => None,
            };
            if let Some((ts, pc, r)) = target {
                let callee = func_at(ts, pc).ok_or_else(|| {
                    err(
                        file,
                        &sec.name,
                        Some((sec.pcs[i] * SLOT) as u64),
                        format!(
                            "`{ins}` targets {}+0x{:x}, which is not the start of a function",
                            code[&ts].name,
                            pc * SLOT
                        ),
                    )
                })?;
                if let std::collections::hash_map::Entry::Vacant(v) = pos.entry(callee) {
                    v.insert(order.len());
                    order.push(callee);
                }
                e.push((i, callee, r));
            }
        }
        edges.push(e);
        k += 1;
    }
    // Lay out, then patch.
    let mut prog = Program {
        name: funcs[entry].name.clone(),
        section: code[&funcs[entry].sec].name.clone(),
        insns: Vec::new(),
        funcs: Vec::new(),
        relocs: Vec::new(),
        lines: Vec::new(),
    };
    let mut base: Vec<usize> = Vec::new(); // new index of each linked function's first insn
    for &fi in &order {
        let f = &funcs[fi];
        let sec = &code[&f.sec];
        let (a, b) = (
            sec.idx_of_pc[&f.start],
            sec.idx_of_pc
                .get(&f.end)
                .copied()
                .unwrap_or(sec.insns.len()),
        );
        base.push(prog.insns.len());
        prog.funcs.push(Func {
            name: f.name.clone(),
            start: prog.insns.len(),
            section: sec.name.clone(),
            section_offset: (f.start * SLOT) as u64,
        });
        if let Some(ls) = lines.get(&f.sec) {
            let (lo, hi) = ((f.start * SLOT) as u64, (f.end * SLOT) as u64);
            for (off, l) in ls.iter().filter(|(o, _)| (lo..hi).contains(o)) {
                if let Some(&i) = sec.idx_of_pc.get(&((off / SLOT as u64) as usize)) {
                    prog.lines.push((prog.insns.len() + i - a, l.clone()));
                }
            }
        }
        for i in a..b {
            let new_i = prog.insns.len();
            let mut ins = sec.insns[i];
            match sec.relocs.get(&i) {
                Some(SecReloc::Map { map, symbol }) => {
                    ins = Insn::new(Kind::LdImm64(Pseudo::MapIdx), ins.dst, 0, 0, *map as i64)
                        .expect("row exists");
                    prog.relocs.push(Reloc {
                        insn: new_i,
                        symbol: symbol.clone(),
                        elf_type: "R_BPF_64_64".into(),
                        target: RelocTarget::Map { map: *map },
                    });
                }
                Some(SecReloc::MapValue {
                    map,
                    offset,
                    symbol,
                }) => {
                    let imm = (*map as u64 | (u64::from(*offset) << 32)) as i64;
                    ins = Insn::new(Kind::LdImm64(Pseudo::MapIdxValue), ins.dst, 0, 0, imm)
                        .expect("row exists");
                    prog.relocs.push(Reloc {
                        insn: new_i,
                        symbol: symbol.clone(),
                        elf_type: "R_BPF_64_64".into(),
                        target: RelocTarget::MapValue {
                            map: *map,
                            offset: *offset,
                        },
                    });
                }
                Some(SecReloc::Kfunc { btf_id, symbol }) => {
                    ins = Insn::new(Kind::Call(CallKind::Kfunc), 0, 0, 0, i64::from(*btf_id))
                        .expect("row exists");
                    prog.relocs.push(Reloc {
                        insn: new_i,
                        symbol: symbol.clone(),
                        elf_type: "R_BPF_64_32".into(),
                        target: RelocTarget::Kfunc { btf_id: *btf_id },
                    });
                }
                Some(SecReloc::Extern {
                    ext,
                    btf_id,
                    symbol,
                }) => {
                    let (kind, elf_type) = match ins.kind() {
                        Kind::Call(_) => (Kind::Call(CallKind::Kfunc), "R_BPF_64_32"),
                        _ => (Kind::LdImm64(Pseudo::BtfId), "R_BPF_64_64"),
                    };
                    ins = Insn::new(kind, ins.dst, 0, 0, i64::from(*btf_id as i32))
                        .expect("row exists");
                    prog.relocs.push(Reloc {
                        insn: new_i,
                        symbol: symbol.clone(),
                        elf_type: elf_type.into(),
                        target: RelocTarget::Extern { ext: *ext },
                    });
                }
                _ => {}
            }
            prog.insns.push(ins);
        }
    }
    let pcs = insn::pcs(&prog.insns);
    for (k, e) in edges.iter().enumerate() {
        let f = &funcs[order[k]];
        let a = code[&f.sec].idx_of_pc[&f.start];
        for (i, callee, r) in e {
            let new_i = base[k] + (i - a);
            let callee_pos = pos[callee];
            let rel = pcs[base[callee_pos]] as i64 - pcs[new_i] as i64 - 1;
            let old = prog.insns[new_i];
            let (kind, target) = match old.kind() {
                Kind::Call(_) => (
                    Kind::Call(CallKind::Local),
                    RelocTarget::Call { func: callee_pos },
                ),
                _ => (
                    Kind::LdImm64(Pseudo::Func),
                    RelocTarget::FuncAddr { func: callee_pos },
                ),
            };
            let imm = if let Kind::LdImm64(_) = kind {
                rel & 0xffff_ffff
            } else {
                rel
            };
            prog.insns[new_i] = Insn::new(kind, old.dst, 0, 0, imm).expect("row exists");
            let (symbol, elf_type) = match r {
                Some(SecReloc::Code { symbol, call, .. }) => (
                    symbol.clone(),
                    if *call { "R_BPF_64_32" } else { "R_BPF_64_64" },
                ),
                _ => (funcs[*callee].name.clone(), "pc-relative"),
            };
            prog.relocs.push(Reloc {
                insn: new_i,
                symbol,
                elf_type: elf_type.into(),
                target,
            });
        }
    }
    prog.relocs.sort_by_key(|r| r.insn);
    prog.lines.sort_by_key(|(i, _)| *i);
    Ok(prog)
}
