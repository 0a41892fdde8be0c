//! Source lines by section and byte offset: from `.BTF.ext` where the object has it,
//! else from the DWARF line tables (relocated first).

use super::err;
use crate::front::{btf, btf_ext, dwarf, LoadError};
use crate::program::LineRef;
use goblin::elf::{sym, Elf};
use std::collections::HashMap;

/// Source lines by (section index, byte offset).
pub(super) type Lines = HashMap<usize, Vec<(u64, LineRef)>>;
/// The source lines of the object's code sections: `.BTF.ext` line info when there is a
/// `.BTF.ext` (and BTF), else the DWARF line tables of `debug_secs`, one row per
/// instruction.
#[allow(clippy::too_many_arguments)]
pub(super) fn source_lines<'a>(
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
