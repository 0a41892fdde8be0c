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

use super::{btf, btf_ext, dwarf, LoadError};
use crate::isa::insn::{self, Insn, SLOT};
use crate::isa::table::{CallKind, Kind, Pseudo};
use crate::program::{
    map_type_name, Func, LineRef, Map, MapOrigin, Object, Program, Reloc, RelocTarget, Section,
    SectionKind, SourceKind,
};
use bpf2ptx_runtime::MapKind;
use goblin::elf::{header, section_header as sh, sym, Elf};
use std::collections::HashMap;

/// `EM_BPF`.
const EM_BPF: u16 = 247;
/// Bytes of an ELF64 section header (`e_shentsize` of every valid object).
const SHDR_SIZE: u64 = 64;
/// `R_BPF_64_64`: a 64-bit immediate load of a map or data address.
const R_BPF_64_64: u32 = 1;
/// `R_BPF_64_32`: a bpf-to-bpf call.
const R_BPF_64_32: u32 = 10;
/// `BPF_F_RDONLY_PROG`: libbpf sets it on `.rodata` maps.
const BPF_F_RDONLY_PROG: u32 = 0x80;
/// `BPF_F_MMAPABLE`: libbpf sets it on global-data maps.
const BPF_F_MMAPABLE: u32 = 0x400;
/// Size of the legacy `struct bpf_map_def` fields bpf2ptx reads (5 × u32).
const LEGACY_MAP_DEF: usize = 20;

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
    /// A call or function address whose target is `(section index, slot)`.
    Code {
        sec: usize,
        pc: usize,
        symbol: String,
        call: bool,
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

    // Maps: legacy, BTF-defined, global data.
    let mut maps: Vec<Map> = Vec::new();
    let mut map_by_sym: HashMap<(usize, u64), usize> = HashMap::new();
    if let Some(li) = legacy_sec {
        let data = sec_data(li)?;
        let mut defs: Vec<&sym::Sym> = syms
            .iter()
            .filter(|s| s.st_shndx == li && s.st_type() != sym::STT_SECTION)
            .collect();
        defs.sort_by_key(|s| s.st_value);
        if defs.is_empty() && !data.is_empty() {
            return Err(err(
                file,
                "maps",
                None,
                "legacy maps section has no map symbols",
            ));
        }
        if !defs.is_empty() && data.len() % defs.len() != 0 {
            return Err(err(
                file,
                "maps",
                None,
                format!(
                    "section size {} is not a multiple of the {} map definitions",
                    data.len(),
                    defs.len()
                ),
            ));
        }
        let def_size = if defs.is_empty() {
            0
        } else {
            data.len() / defs.len()
        };
        for s in defs {
            let name = sym_name(s);
            let off = s.st_value as usize;
            let d = data.get(off..off.saturating_add(def_size)).filter(|_| def_size >= LEGACY_MAP_DEF).ok_or_else(|| {
                err(file, "maps", Some(s.st_value), format!("map `{name}`: definition of {def_size} bytes is outside the section or shorter than {LEGACY_MAP_DEF}"))
            })?;
            let f =
                |k: usize| u32::from_le_bytes([d[4 * k], d[4 * k + 1], d[4 * k + 2], d[4 * k + 3]]);
            if d[LEGACY_MAP_DEF..].iter().any(|&b| b != 0) {
                return Err(err(
                    file,
                    "maps",
                    Some(s.st_value),
                    format!("map `{name}`: unsupported non-zero fields after map_flags"),
                ));
            }
            map_by_sym.insert((li, s.st_value), maps.len());
            maps.push(Map {
                name,
                origin: MapOrigin::Legacy,
                section: "maps".into(),
                map_type: f(0),
                key_size: f(1),
                value_size: f(2),
                max_entries: f(3),
                flags: f(4),
                btf_key_type: None,
                btf_value_type: None,
                init: None,
            });
        }
    }
    if let Some(mi) = maps_sec {
        let btf = btf
            .as_ref()
            .ok_or_else(|| err(file, ".maps", None, "BTF-defined maps need a .BTF section"))?;
        let vars = btf.datasec_vars(".maps").map_err(|e| LoadError::Btf {
            file: file.to_string(),
            source: Box::new(e),
        })?;
        for v in vars {
            let def = btf.map_def(v.var_type_id).map_err(|e| LoadError::Btf {
                file: file.to_string(),
                source: Box::new(e),
            })?;
            let name = v.name.to_string();
            // The map's symbol gives its offset; libbpf matches them by name.
            let offset = syms
                .iter()
                .find(|s| {
                    s.st_shndx == mi && s.st_type() != sym::STT_SECTION && sym_name(s) == name
                })
                .map(|s| s.st_value)
                .unwrap_or(u64::from(v.offset));
            map_by_sym.insert((mi, offset), maps.len());
            // libbpf gives a perf event array 4-byte keys and values (cpu index → perf fd)
            // when the definition leaves them out.
            let default_size = if def.map_type == MapKind::PerfEventArray.id() {
                4
            } else {
                0
            };
            maps.push(Map {
                name,
                origin: MapOrigin::Btf,
                section: ".maps".into(),
                map_type: def.map_type,
                key_size: def.key_size.unwrap_or(default_size),
                value_size: def.value_size.unwrap_or(default_size),
                max_entries: def.max_entries,
                flags: def.map_flags,
                btf_key_type: def.key_type_id,
                btf_value_type: def.value_type_id,
                init: None,
            });
        }
    }
    let mut data_map: HashMap<usize, usize> = HashMap::new();
    for &di in &data_secs {
        let s = &elf.section_headers[di];
        if s.sh_size == 0 {
            continue;
        }
        let name = sec_name(di);
        let size = u32::try_from(s.sh_size)
            .map_err(|_| err(file, &name, None, "section larger than 4 GiB"))?;
        let rodata = name == ".rodata" || name.starts_with(".rodata.");
        let init = if s.sh_type == sh::SHT_NOBITS {
            None
        } else {
            Some(sec_data(di)?.to_vec())
        };
        // libbpf makes a global-data map mmapable only when BTF describes the section
        // (`.rodata.str1.1` has no DATASEC, so it stays read-only but not mmapable).
        let mmapable = if btf.as_ref().is_some_and(|b| b.datasec(&name).is_some()) {
            BPF_F_MMAPABLE
        } else {
            0
        };
        data_map.insert(di, maps.len());
        maps.push(Map {
            name: name.clone(),
            origin: MapOrigin::GlobalData,
            section: name,
            map_type: MapKind::Array.id(),
            key_size: 4,
            value_size: size,
            max_entries: 1,
            flags: mmapable | if rodata { BPF_F_RDONLY_PROG } else { 0 },
            btf_key_type: None,
            btf_value_type: None,
            init,
        });
    }
    for m in &maps {
        if map_type_name(m.map_type).is_none() {
            return Err(LoadError::UnknownMapType {
                file: file.to_string(),
                section: m.section.clone(),
                map: m.name.clone(),
                map_type: m.map_type,
            });
        }
        if m.is(MapKind::is_map_in_map) {
            return Err(err(
                file,
                &m.section,
                None,
                format!("map `{}`: map-in-map is not supported yet", m.name),
            ));
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
            if target == 0 || s.st_shndx >= elf.section_headers.len() {
                return Err(at(format!("relocation against `{symbol}`, which is not defined in this object (extern symbols are not supported)")));
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
        if matches!(k, Some(SectionKind::Data | SectionKind::Maps)) && !relocs_of(di).is_empty() {
            return Err(err(
                file,
                &sec_name(ri),
                None,
                format!("relocations in {} are not supported", sec_name(di)),
            ));
        }
    }

    // Functions.
    let mut funcs: Vec<FuncDef> = Vec::new();
    for &ci in &code_secs {
        let sec = &code[&ci];
        let end_pc = *sec.pcs.last().expect("pcs has an end");
        let mut here: Vec<&sym::Sym> = syms
            .iter()
            .filter(|s| s.st_shndx == ci && s.st_type() == sym::STT_FUNC)
            .collect();
        here.sort_by_key(|s| s.st_value);
        if here.is_empty() && end_pc > 0 {
            return Err(err(
                file,
                &sec.name,
                None,
                "code section has no function symbol",
            ));
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
        if is_text {
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
        test: None,
    })
}

fn check_header(file: &str, bytes: &[u8]) -> Result<(), LoadError> {
    let e = |what: String| err(file, "", Some(0), what);
    if bytes.len() < header::header64::SIZEOF_EHDR {
        return Err(e(format!("truncated ELF header: {} bytes", bytes.len())));
    }
    if bytes[header::EI_CLASS] != header::ELFCLASS64 {
        return Err(e("32-bit ELF; BPF objects are 64-bit".into()));
    }
    if bytes[header::EI_DATA] != header::ELFDATA2LSB {
        return Err(e(
            "big-endian ELF; only little-endian BPF objects (-target bpf or bpfel) are supported"
                .into(),
        ));
    }
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if machine != EM_BPF {
        return Err(e(format!(
            "e_machine is {machine} ({}), not EM_BPF (247)",
            header::machine_to_str(machine)
        )));
    }
    let ty = u16::from_le_bytes([bytes[16], bytes[17]]);
    if ty != header::ET_REL {
        return Err(e(format!(
            "ELF type {ty} is not a relocatable object (ET_REL)"
        )));
    }
    // The section header table and every section's data must lie inside the file; say so
    // here, by section index, before goblin reports a bare "bad offset".
    let u64_at = |o: usize| u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    let u16_at = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]);
    let (shoff, shentsize, shnum) = (
        u64_at(0x28),
        u64::from(u16_at(0x3a)),
        u64::from(u16_at(0x3c)),
    );
    let table_end = shentsize
        .checked_mul(shnum)
        .and_then(|n| n.checked_add(shoff));
    match table_end {
        Some(end) if end <= bytes.len() as u64 => {}
        _ => {
            return Err(err(file, "", Some(shoff), format!(
                "truncated: the section header table ({shnum} entries of {shentsize} bytes) extends past the end of the file ({} bytes)",
                bytes.len()
            )))
        }
    }
    if shnum > 0 && shentsize != SHDR_SIZE {
        return Err(e(format!(
            "e_shentsize is {shentsize}, not 64 (the size of an ELF64 section header)"
        )));
    }
    let shstrndx = u64::from(u16_at(0x3e));
    if shnum > 0 && shstrndx >= shnum {
        return Err(e(format!(
            "e_shstrndx is {shstrndx}, but the file has {shnum} sections (the section name table must be one of them)"
        )));
    }
    if shentsize >= 64 {
        let hdr = |k: u64| (shoff + k * shentsize) as usize;
        // Section names, where the name table itself is readable.
        let names: Option<&[u8]> = (shstrndx < shnum).then(|| hdr(shstrndx)).and_then(|h| {
            let (off, size) = (u64_at(h + 0x18) as usize, u64_at(h + 0x20) as usize);
            bytes.get(off..off.checked_add(size)?)
        });
        let name_of = |h: usize| -> String {
            let at = u32::from_le_bytes(bytes[h..h + 4].try_into().expect("4 bytes")) as usize;
            names
                .and_then(|n| n.get(at..))
                .and_then(|n| n.split(|&b| b == 0).next())
                .and_then(|n| std::str::from_utf8(n).ok())
                .filter(|n| !n.is_empty())
                .map_or_else(String::new, |n| format!("{n} "))
        };
        for k in 0..shnum {
            let h = hdr(k);
            let ty = u32::from_le_bytes(bytes[h + 4..h + 8].try_into().expect("4 bytes"));
            let (off, size) = (u64_at(h + 0x18), u64_at(h + 0x20));
            // A relocation section names its symbol table (sh_link) and the section it
            // relocates (sh_info): both must be sections of the file.
            if ty == sh::SHT_REL || ty == sh::SHT_RELA {
                let link = u64::from(u32::from_le_bytes(
                    bytes[h + 0x28..h + 0x2c].try_into().expect("4 bytes"),
                ));
                let info = u64::from(u32::from_le_bytes(
                    bytes[h + 0x2c..h + 0x30].try_into().expect("4 bytes"),
                ));
                for (field, v) in [
                    ("sh_link (its symbol table)", link),
                    ("sh_info (the section it relocates)", info),
                ] {
                    if v >= shnum {
                        return Err(err(file, "", Some(shoff + k * shentsize), format!(
                            "relocation section {}#{k}: {field} is {v}, but the file has {shnum} sections",
                            name_of(h)
                        )));
                    }
                }
            }
            if ty != sh::SHT_NOBITS
                && off
                    .checked_add(size)
                    .is_none_or(|end| end > bytes.len() as u64)
            {
                return Err(err(file, "", Some(off), format!(
                    "truncated: section {}#{k} ({size} bytes at file offset 0x{off:x}) extends past the end of the file ({} bytes)",
                    name_of(h),
                    bytes.len()
                )));
            }
        }
    }
    Ok(())
}

/// Source lines by (section index, byte offset).
type Lines = HashMap<usize, Vec<(u64, LineRef)>>;

#[allow(clippy::too_many_arguments)]
fn source_lines<'a>(
    file: &str,
    elf: &Elf<'a>,
    btf: Option<&btf::Btf>,
    btf_ext_sec: Option<usize>,
    debug_secs: &[usize],
    sec_name: &dyn Fn(usize) -> String,
    sec_data: &dyn Fn(usize) -> Result<&'a [u8], LoadError>,
    relocs_of: &dyn Fn(usize) -> Vec<goblin::elf::Reloc>,
    syms: &[sym::Sym],
) -> Result<Lines, LoadError> {
    let sec_index = |name: &str| (1..elf.section_headers.len()).find(|&i| sec_name(i) == name);
    let mut out: Lines = HashMap::new();
    if let (Some(ei), Some(btf)) = (btf_ext_sec, btf) {
        let ext = btf_ext::parse(sec_data(ei)?, btf).map_err(|e| LoadError::Btf {
            file: file.to_string(),
            source: Box::new(e),
        })?;
        for s in ext.line_info {
            let Some(si) = sec_index(&s.section) else {
                continue;
            };
            let v = out.entry(si).or_default();
            for r in s.records {
                v.push((
                    u64::from(r.insn_off),
                    LineRef {
                        file: r.file,
                        line: r.line,
                        col: r.col,
                        text: r.text,
                    },
                ));
            }
        }
        return Ok(out);
    }
    let mut ds = dwarf::DwarfSections::new();
    for &di in debug_secs {
        let name = sec_name(di);
        ds.add_section(&name, sec_data(di)?);
        for r in relocs_of(di) {
            let s = syms.get(r.r_sym).ok_or_else(|| {
                err(
                    file,
                    &name,
                    Some(r.r_offset),
                    format!("relocation against missing symbol #{}", r.r_sym),
                )
            })?;
            ds.add_relocation(
                &name,
                dwarf::DwarfReloc {
                    offset: r.r_offset,
                    target_section: sec_name(s.st_shndx),
                    symbol_value: s.st_value,
                    addend: r.r_addend,
                },
            );
        }
    }
    if !ds.has_line_info() {
        return Ok(out);
    }
    let rows = dwarf::line_table(&ds).map_err(|e| LoadError::Dwarf {
        file: file.to_string(),
        source: Box::new(e),
    })?;
    for r in rows {
        if r.line == 0 {
            continue;
        }
        let Some(si) = sec_index(&r.section) else {
            continue;
        };
        let v = out.entry(si).or_default();
        // Keep one row per instruction: the last one the table gives.
        if v.last().is_some_and(|(o, _)| *o == r.offset) {
            v.pop();
        }
        v.push((
            r.offset,
            LineRef {
                file: r.file,
                line: r.line,
                col: r.column,
                text: String::new(),
            },
        ));
    }
    Ok(out)
}

/// Links one program: its entry function, then every function it reaches, each once.
fn link(
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
