//! The ELF frontend: a clang-built BPF object under libbpf conventions → [`Object`].
//!
//! What it reads and how it follows libbpf:
//! - programs are the global `FUNC` symbols of executable sections other than `.text`;
//!   `.text` holds subprograms, each appended once to every program that reaches it
//!   (through a call or a function address), as libbpf does;
//! - `R_BPF_64_64` on an `ld_imm64` names a map (a symbol in `.maps` or `maps`) or a
//!   global-data address (a symbol in `.data`/`.rodata`/`.bss`/`.rodata.*`, offset =
//!   symbol value + the addend clang left in `imm`); `R_BPF_64_32` on a call names the
//!   callee (slot = symbol value / 8 + imm + 1); calls without a relocation are
//!   pc-relative inside their section;
//! - maps come in libbpf's order: legacy `maps`, BTF-defined `.maps`, then one array map
//!   per global-data section in section order;
//! - source lines come from `.BTF.ext`, or from the DWARF line tables where it is
//!   missing.
//!
//! Everything is checked on the way in — the machine and class, every section range,
//! every symbol and relocation index, every instruction — so a malformed object ends in
//! a [`LoadError`] that names the section and offset, never in a panic.
//!
//! # Parts
//!
//! - `mod.rs` (this file): [`load`], in order: the header check, the sections classified,
//!   the symbols checked, BTF relocated and parsed, the maps, the code sections decoded
//!   and their relocations resolved, the functions, the source lines, then one linked
//!   program per global function outside `.text`; and the types those steps share
//!   (decoded code sections, their relocations, function ranges).
//! - `header.rs`: the ELF header and section header table checked against the file, by
//!   section index, before goblin parses it.
//! - `maps.rs`: the maps (legacy `maps`, BTF-defined `.maps`, global data) in libbpf's
//!   order, and where relocations find them.
//! - `lines.rs`: source lines by section and byte offset, from `.BTF.ext` or DWARF.
//! - `link.rs`: one program linked: its entry function and every function it reaches,
//!   laid out and their calls and relocations patched.
//!
//! # Invariants
//!
//! - Nothing indexes the file or a section before it is checked: the header and section
//!   table in `header.rs`, a section's data through `load`'s bounds-checked reader, a
//!   symbol or relocation index against its table; every error is a [`LoadError`] naming
//!   the section and offset.
//! - Map indices are fixed once `maps.rs` returns: relocations and the linked programs
//!   name maps by their index in [`Object::maps`].
//! - `link.rs` sees only checked input: every function covers whole instructions of its
//!   section and every relocation sits at an instruction's start.

use super::{btf, LoadError};
use crate::isa::insn::{self, Insn, SLOT};
use crate::isa::table::{CallKind, Kind, Pseudo};
use crate::program::{Extern, ExternKind, Object, Section, SectionKind, SourceKind};
use goblin::elf::{section_header as sh, sym, Elf};
use std::collections::HashMap;

mod externs;
mod header;
mod lines;
mod link;
pub(crate) mod maps;

use header::check_header;
use lines::source_lines;
use link::link;

/// `R_BPF_64_64`: a 64-bit immediate load of a map or data address.
const R_BPF_64_64: u32 = 1;
/// `R_BPF_64_32`: a bpf-to-bpf call.
const R_BPF_64_32: u32 = 10;

/// One executable section, decoded.
struct CodeSec {
    name: String,
    insns: Vec<Insn>,
    /// Slot index of each instruction, plus the end.
    pcs: Vec<usize>,
    /// Slot index → instruction index (only at instruction starts).
    idx_of_pc: HashMap<usize, usize>,
    /// Relocations by instruction index.
    relocs: HashMap<usize, SecReloc>,
}

/// A relocation of an instruction, resolved against the object but not yet to a program.
#[derive(Clone)]
enum SecReloc {
    Map {
        map: usize,
        symbol: String,
    },
    MapValue {
        map: usize,
        offset: u32,
        symbol: String,
    },
    /// A call of a runtime kfunc through an undefined (`__ksym`) symbol: clang writes
    /// `call -1` with `src` 1; the linked program gets `src` 2 and the BTF id.
    Kfunc {
        btf_id: u32,
        symbol: String,
    },
    /// A call or function address whose target is `(section index, slot)`.
    Code {
        sec: usize,
        pc: usize,
        symbol: String,
        call: bool,
    },
    /// A kfunc call or the address of a `__ksym` variable: extern `ext`, whose `VAR` or
    /// `FUNC` has id `btf_id` in the object's BTF.
    Extern {
        ext: usize,
        btf_id: u32,
        symbol: String,
    },
}

/// A function: a `FUNC` symbol's range in a code section.
struct FuncDef {
    name: String,
    sec: usize,
    start: usize,
    end: usize,
    global: bool,
}

fn err(file: &str, section: &str, offset: Option<u64>, what: impl Into<String>) -> LoadError {
    LoadError::Elf {
        file: file.to_string(),
        section: section.to_string(),
        offset,
        what: what.into(),
    }
}

/// Loads a BPF ELF object from its bytes. `file` names it in errors.
pub fn load(file: &str, bytes: &[u8]) -> Result<Object, LoadError> {
    check_header(file, bytes)?;
    let elf = Elf::parse(bytes).map_err(|e| err(file, "", None, format!("malformed ELF: {e}")))?;
    let sec_name = |i: usize| -> String {
        elf.section_headers
            .get(i)
            .and_then(|s| elf.shdr_strtab.get_at(s.sh_name))
            .unwrap_or("")
            .to_string()
    };
    let sec_data = |i: usize| -> Result<&[u8], LoadError> {
        let s = &elf.section_headers[i];
        if s.sh_type == sh::SHT_NOBITS {
            return Ok(&[]);
        }
        let start = usize::try_from(s.sh_offset).ok();
        let end = start.and_then(|a| a.checked_add(usize::try_from(s.sh_size).ok()?));
        match (start, end) {
            (Some(a), Some(b)) if b <= bytes.len() => Ok(&bytes[a..b]),
            _ => Err(err(
                file,
                &sec_name(i),
                None,
                format!(
                    "truncated: the section's {} bytes at file offset 0x{:x} extend past the end of the file ({} bytes)",
                    s.sh_size,
                    s.sh_offset,
                    bytes.len()
                ),
            )),
        }
    };

    // Classify sections.
    let mut sections = Vec::new();
    let mut code_secs: Vec<usize> = Vec::new();
    let mut data_secs: Vec<usize> = Vec::new();
    let (mut btf_sec, mut btf_ext_sec, mut maps_sec, mut legacy_sec, mut license) =
        (None, None, None, None, None);
    let mut debug_secs: Vec<usize> = Vec::new();
    let mut rel_of: HashMap<usize, usize> = HashMap::new();
    for (i, s) in elf.section_headers.iter().enumerate().skip(1) {
        let name = sec_name(i);
        let is_data_name = |base: &str| name == base || name.starts_with(&format!("{base}."));
        let kind = if s.sh_type == sh::SHT_REL || s.sh_type == sh::SHT_RELA {
            let target = s.sh_info as usize;
            if target == 0 || target >= elf.section_headers.len() {
                return Err(err(
                    file,
                    &name,
                    None,
                    format!("relocation section targets section {target}, which does not exist"),
                ));
            }
            rel_of.insert(target, i);
            SectionKind::Rel
        } else if s.sh_type == sh::SHT_PROGBITS && s.sh_flags & u64::from(sh::SHF_EXECINSTR) != 0 {
            code_secs.push(i);
            if name == ".text" {
                SectionKind::Text
            } else {
                SectionKind::Program
            }
        } else if name == ".maps" {
            maps_sec = Some(i);
            SectionKind::Maps
        } else if name == "maps" {
            legacy_sec = Some(i);
            SectionKind::LegacyMaps
        } else if (is_data_name(".data") || is_data_name(".rodata") || is_data_name(".bss"))
            && (s.sh_type == sh::SHT_PROGBITS || s.sh_type == sh::SHT_NOBITS)
        {
            data_secs.push(i);
            SectionKind::Data
        } else if name == "license" {
            let d = sec_data(i)?;
            let text = d.split(|&b| b == 0).next().unwrap_or(&[]);
            license = Some(String::from_utf8_lossy(text).into_owned());
            SectionKind::License
        } else if name == ".BTF" {
            btf_sec = Some(i);
            SectionKind::Btf
        } else if name == ".BTF.ext" {
            btf_ext_sec = Some(i);
            SectionKind::BtfExt
        } else if name.starts_with(".debug_") {
            debug_secs.push(i);
            SectionKind::Debug
        } else {
            SectionKind::Other
        };
        sections.push(Section {
            index: i,
            name,
            kind,
            size: s.sh_size,
        });
    }

    // Symbols, bounds-checked: a name must lie inside .strtab (an empty name from a bad
    // offset would reach the backend as a symbol ptxas rejects).
    let syms: Vec<sym::Sym> = elf.syms.iter().collect();
    for (k, s) in syms.iter().enumerate() {
        if s.st_type() != sym::STT_SECTION
            && s.st_name != 0
            && elf.strtab.get_at(s.st_name).is_none()
        {
            return Err(err(
                file,
                ".symtab",
                Some(k as u64 * 24),
                format!(
                    "symbol #{k}: its name is at offset {} of .strtab, which has {} bytes",
                    s.st_name,
                    elf.strtab.len()
                ),
            ));
        }
    }
    let sym_name = |s: &sym::Sym| -> String {
        if s.st_type() == sym::STT_SECTION {
            return sec_name(s.st_shndx);
        }
        elf.strtab.get_at(s.st_name).unwrap_or("").to_string()
    };
    let relocs_of = |target: usize| -> Vec<goblin::elf::Reloc> {
        rel_of
            .get(&target)
            .and_then(|r| elf.shdr_relocs.iter().find(|(i, _)| i == r))
            .map(|(_, rs)| rs.iter().collect())
            .unwrap_or_default()
    };
    let get_sym = |section: &str, offset: u64, idx: usize| -> Result<&sym::Sym, LoadError> {
        syms.get(idx).ok_or_else(|| {
            err(
                file,
                section,
                Some(offset),
                format!(
                    "relocation against missing symbol #{idx} ({} symbols)",
                    syms.len()
                ),
            )
        })
    };

    // BTF, relocated first so DATASEC offsets are right.
    let btf = match btf_sec {
        None => None,
        Some(i) => {
            let mut data = sec_data(i)?.to_vec();
            let mut relocs = Vec::new();
            for r in relocs_of(i) {
                let s = get_sym(".BTF", r.r_offset, r.r_sym)?;
                relocs.push(btf::BtfReloc {
                    offset: r.r_offset,
                    symbol_value: s.st_value,
                });
            }
            btf::apply_relocations(btf::BTF_SECTION, &mut data, &relocs).map_err(|e| {
                LoadError::Btf {
                    file: file.to_string(),
                    source: Box::new(e),
                }
            })?;
            Some(btf::parse(&data).map_err(|e| LoadError::Btf {
                file: file.to_string(),
                source: Box::new(e),
            })?)
        }
    };

    // Externs (`__kconfig`, `__ksym`), before the maps: kconfig externs make a map.
    let mut externs = externs::collect(file, btf.as_ref(), &syms, &sym_name, 0)?;

    // Maps: legacy, BTF-defined, global data, .kconfig.
    let maps_relocs = maps_sec.map(&relocs_of).unwrap_or_default();
    let (maps, index) = maps::read_maps(
        file,
        &elf,
        btf.as_ref(),
        legacy_sec,
        maps_sec,
        &data_secs,
        &syms,
        &sec_name,
        &sec_data,
        &sym_name,
        &maps_relocs,
        externs.kconfig_size,
    )?;
    let (map_by_sym, data_map) = (index.by_sym, index.by_data_sec);
    if externs.kconfig_size.is_some() {
        let kcfg = maps.len() - 1;
        for e in &mut externs.list {
            if let ExternKind::Kconfig { map, .. } = &mut e.kind {
                *map = kcfg;
            }
        }
    }

    // Decode code sections and resolve their relocations.
    let mut code: HashMap<usize, CodeSec> = HashMap::new();
    for &ci in &code_secs {
        let name = sec_name(ci);
        let data = sec_data(ci)?;
        let decode_err = |e: insn::DecodeError| match e.pc() {
            Some(pc) => LoadError::Decode {
                file: file.to_string(),
                section: name.clone(),
                offset: (pc * SLOT) as u64,
                source: Box::new(e),
            },
            None => err(file, &name, None, e.to_string()),
        };
        let insns = insn::decode(data).map_err(decode_err)?;
        let pcs = insn::pcs(&insns);
        let idx_of_pc = pcs
            .iter()
            .take(insns.len())
            .enumerate()
            .map(|(i, &pc)| (pc, i))
            .collect::<HashMap<_, _>>();
        code.insert(
            ci,
            CodeSec {
                name,
                insns,
                pcs,
                idx_of_pc,
                relocs: HashMap::new(),
            },
        );
    }
    for &ci in &code_secs {
        let name = code[&ci].name.clone();
        for r in relocs_of(ci) {
            let at = |what: String| err(file, &name, Some(r.r_offset), what);
            let sec = &code[&ci];
            let idx = (r.r_offset % SLOT as u64 == 0)
                .then(|| sec.idx_of_pc.get(&((r.r_offset / SLOT as u64) as usize)))
                .flatten()
                .copied()
                .ok_or_else(|| at("relocation is not at the start of an instruction".into()))?;
            let ins = sec.insns[idx];
            let s = get_sym(&name, r.r_offset, r.r_sym)?;
            let symbol = sym_name(s);
            let target = s.st_shndx;
            // A call of a kfunc the runtime has, through an undefined symbol (`extern ...
            // __ksym`): resolved by name to its BTF `FUNC` (libbpf's kfunc relocation).
            if target == 0
                && r.r_type == R_BPF_64_32
                && ins.kind() == Kind::Call(CallKind::Local)
                && bpf2ptx_runtime::Kfunc::by_name(&symbol).is_some()
            {
                let btf_id = btf
                    .as_ref()
                    .and_then(|b| {
                        (1..=b.types().len() as u32).find(|&id| b.func_name(id) == Some(&symbol))
                    })
                    .unwrap_or(0);
                code.get_mut(&ci)
                    .expect("decoded")
                    .relocs
                    .insert(idx, SecReloc::Kfunc { btf_id, symbol });
                continue;
            }
            if target == 0 && externs::is_extern(s) {
                let reloc = extern_reloc(&externs.list, &externs.by_name, &symbol, r.r_type, ins)
                    .map_err(at)?;
                code.get_mut(&ci)
                    .expect("decoded")
                    .relocs
                    .insert(idx, reloc);
                continue;
            }
            if target == 0 || s.st_shndx >= elf.section_headers.len() {
                return Err(at(format!("relocation against `{symbol}`, which is not defined in this object (and is no extern that BTF lists in .kconfig or .ksyms)")));
            }
            let reloc = match (r.r_type, ins.kind()) {
                (R_BPF_64_64, Kind::LdImm64(Pseudo::Imm64)) => {
                    let addend = ins.imm as u32 as u64;
                    if let Some(&m) = map_by_sym.get(&(target, s.st_value)) {
                        SecReloc::Map { map: m, symbol }
                    } else if let Some(&m) = data_map.get(&target) {
                        let offset = s.st_value + addend;
                        if offset > u64::from(maps[m].value_size) {
                            return Err(at(format!(
                                "reference to `{symbol}`+{addend} is outside section {}",
                                maps[m].section
                            )));
                        }
                        SecReloc::MapValue {
                            map: m,
                            offset: offset as u32,
                            symbol,
                        }
                    } else if code.contains_key(&target) {
                        let off = s.st_value + addend;
                        SecReloc::Code {
                            sec: target,
                            pc: (off / SLOT as u64) as usize,
                            symbol,
                            call: false,
                        }
                    } else {
                        return Err(at(format!("ld_imm64 relocation against `{symbol}` in section {}, which is neither a map nor global data", sec_name(target))));
                    }
                }
                (R_BPF_64_32, Kind::Call(CallKind::Local)) => {
                    if !code.contains_key(&target) {
                        return Err(at(format!(
                            "call relocation against `{symbol}` in non-code section {}",
                            sec_name(target)
                        )));
                    }
                    let slot = (s.st_value / SLOT as u64) as i64 + ins.imm + 1;
                    let pc = usize::try_from(slot)
                        .map_err(|_| at(format!("call to `{symbol}` lands before its section")))?;
                    SecReloc::Code {
                        sec: target,
                        pc,
                        symbol,
                        call: true,
                    }
                }
                (t @ (R_BPF_64_64 | R_BPF_64_32), _) => {
                    return Err(at(format!("relocation type {t} does not apply to `{ins}`")));
                }
                (t, _) => {
                    return Err(at(format!(
                        "unsupported relocation type {t} against `{symbol}`"
                    )))
                }
            };
            code.get_mut(&ci)
                .expect("decoded")
                .relocs
                .insert(idx, reloc);
        }
    }
    for (&di, &ri) in &rel_of {
        let k = sections.iter().find(|s| s.index == di).map(|s| s.kind);
        // `.maps` relocations are map-of-maps entries, read with the maps.
        if matches!(k, Some(SectionKind::Data)) && !relocs_of(di).is_empty() {
            return Err(err(
                file,
                &sec_name(ri),
                None,
                format!("relocations in {} are not supported", sec_name(di)),
            ));
        }
    }

    // Functions. A section without function symbols (older clang, hand-written
    // assembly) is one function from its start, plus one per local call or function
    // address that lands inside it; outside `.text` the first is a program named after
    // the section, as PREVAIL and iproute2 read such sections.
    let mut funcs: Vec<FuncDef> = Vec::new();
    let mut unnamed_secs: Vec<usize> = Vec::new();
    for &ci in &code_secs {
        let sec = &code[&ci];
        let end_pc = *sec.pcs.last().expect("pcs has an end");
        let mut here: Vec<&sym::Sym> = syms
            .iter()
            .filter(|s| s.st_shndx == ci && s.st_type() == sym::STT_FUNC)
            .collect();
        here.sort_by_key(|s| s.st_value);
        if here.is_empty() {
            if end_pc > 0 {
                funcs.extend(unnamed_funcs(ci, sec, &code));
                unnamed_secs.push(ci);
            }
            continue;
        }
        for (k, s) in here.iter().enumerate() {
            let name = sym_name(s);
            let start = s.st_value / SLOT as u64;
            let next = here
                .get(k + 1)
                .map_or(end_pc as u64, |n| n.st_value / SLOT as u64);
            let end = if s.st_size > 0 {
                start + s.st_size / SLOT as u64
            } else {
                next
            };
            let ok = s.st_value % SLOT as u64 == 0
                && end <= end_pc as u64
                && start < end
                && sec.idx_of_pc.contains_key(&(start as usize))
                && (end as usize == end_pc || sec.idx_of_pc.contains_key(&(end as usize)));
            if !ok {
                return Err(err(
                    file,
                    &sec.name,
                    Some(s.st_value),
                    format!("function `{name}` does not cover whole instructions of the section"),
                ));
            }
            funcs.push(FuncDef {
                name,
                sec: ci,
                start: start as usize,
                end: end as usize,
                global: s.st_bind() != sym::STB_LOCAL,
            });
        }
    }

    // Source lines.
    let lines = source_lines(
        file,
        &elf,
        btf.as_ref(),
        btf_ext_sec,
        &debug_secs,
        &sec_name,
        &sec_data,
        &relocs_of,
        &syms,
    )?;

    // Programs.
    let mut programs = Vec::new();
    for (fi, f) in funcs.iter().enumerate() {
        let is_text = sec_name(f.sec) == ".text";
        if is_text || (!f.global && unnamed_secs.contains(&f.sec)) {
            continue;
        }
        if !f.global {
            return Err(err(
                file,
                &sec_name(f.sec),
                Some((f.start * SLOT) as u64),
                format!(
                    "program `{}` is static; programs must be global functions",
                    f.name
                ),
            ));
        }
        programs.push(link(file, fi, &funcs, &code, &lines)?);
    }
    Ok(Object {
        file: file.to_string(),
        kind: SourceKind::Elf,
        license,
        sections,
        maps,
        programs,
        externs: externs.list,
        test: None,
    })
}

/// What a relocation against extern `symbol` becomes: a kconfig extern's `ld_imm64` an
/// address in `.kconfig` (at its offset plus the addend clang left in `imm`), a ksym
/// variable's `ld_imm64` and a kfunc's call [`SecReloc::Extern`]. The error says why not.
fn extern_reloc(
    externs: &[Extern],
    by_name: &HashMap<String, usize>,
    symbol: &str,
    r_type: u32,
    ins: Insn,
) -> Result<SecReloc, String> {
    let Some(&ext) = by_name.get(symbol) else {
        return Err(format!("relocation against `{symbol}`, which is not defined in this object (and is no extern that BTF lists in .kconfig or .ksyms)"));
    };
    let e = &externs[ext];
    let what = match e.kind {
        ExternKind::Kconfig { .. } => "a kconfig extern",
        ExternKind::KsymVar { .. } => "a ksym variable",
        ExternKind::Kfunc => "a kfunc",
    };
    match (&e.kind, r_type, ins.kind()) {
        (
            ExternKind::Kconfig {
                offset, size, map, ..
            },
            R_BPF_64_64,
            Kind::LdImm64(Pseudo::Imm64),
        ) => {
            let addend = ins.imm as u32;
            if addend >= *size {
                return Err(format!(
                    "reference to `{symbol}`+{addend} is outside the extern ({size} bytes)"
                ));
            }
            Ok(SecReloc::MapValue {
                map: *map,
                offset: offset + addend,
                symbol: symbol.to_string(),
            })
        }
        (ExternKind::KsymVar { .. }, R_BPF_64_64, Kind::LdImm64(Pseudo::Imm64))
        | (ExternKind::Kfunc, R_BPF_64_32, Kind::Call(CallKind::Local)) => Ok(SecReloc::Extern {
            ext,
            btf_id: e.btf_id,
            symbol: symbol.to_string(),
        }),
        _ => Err(format!(
            "relocation type {r_type} on `{ins}` does not fit `{symbol}`, {what}"
        )),
    }
}

/// The functions of a code section without function symbols: one at its start, and one
/// at every target of a local call or function address in the object that lands inside
/// it (pc-relative in the section itself, or through a relocation). Outside `.text`
/// the first is a global function named after the section (the program, as PREVAIL and
/// iproute2 name it); the rest are local, named `SECTION+0xOFFSET`.
fn unnamed_funcs(ci: usize, sec: &CodeSec, code: &HashMap<usize, CodeSec>) -> Vec<FuncDef> {
    let end_pc = *sec.pcs.last().expect("pcs has an end");
    let mut starts = vec![0usize];
    for (i, ins) in sec.insns.iter().enumerate() {
        if sec.relocs.contains_key(&i) {
            continue;
        }
        let rel = match ins.kind() {
            Kind::Call(CallKind::Local) => ins.imm,
            Kind::LdImm64(Pseudo::Func) => i64::from(ins.imm as i32),
            _ => continue,
        };
        let t = sec.pcs[i] as i64 + 1 + rel;
        if let Ok(t) = usize::try_from(t) {
            starts.push(t);
        }
    }
    for c in code.values() {
        for r in c.relocs.values() {
            if let SecReloc::Code { sec: s, pc, .. } = r {
                if *s == ci {
                    starts.push(*pc);
                }
            }
        }
    }
    starts.sort_unstable();
    starts.dedup();
    // A target outside the section or inside an instruction is left out here; linking
    // reports it where it is used ("not the start of a function").
    starts.retain(|&p| p < end_pc && sec.idx_of_pc.contains_key(&p));
    let text = sec.name == ".text";
    starts
        .iter()
        .enumerate()
        .map(|(k, &start)| FuncDef {
            name: if k == 0 && !text {
                sec.name.clone()
            } else {
                format!("{}+0x{:x}", sec.name, start * SLOT)
            },
            sec: ci,
            start,
            end: starts.get(k + 1).copied().unwrap_or(end_pc),
            global: k == 0 && !text,
        })
        .collect()
}
