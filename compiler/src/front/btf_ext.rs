//! The `.BTF.ext` section: per-section function and line information.
//!
//! clang writes, for every program section (and `.text`), which instruction starts
//! which function (`func_info`) and the source line of instructions (`line_info`).
//! The loader uses the first to split sections into functions and name them, the
//! second for diagnostics (`file.c:LINE`) and PTX `.loc` lines.
//!
//! Layout (little-endian only, like `.BTF`):
//!
//! ```text
//! header: magic u16, version u8, flags u8, hdr_len u32,
//!         func_info_off u32, func_info_len u32, line_info_off u32, line_info_len u32,
//!         [core_relo_off u32, core_relo_len u32]   (present when hdr_len >= 32)
//! each info block (offsets count from the end of the header):
//!         rec_size u32, then repeated { sec_name_off u32, num_info u32, num_info records }
//! ```
//!
//! Records may be larger than the ones this parser knows (newer producers append
//! fields); they are stepped over by `rec_size`. A smaller `rec_size` is an error.
//! `insn_off` values are kept in **bytes** from the start of the ELF section, as in the
//! file (divide by 8 for an instruction index).
//!
//! CO-RE relocations (`core_relo`) are only counted per section: bpf2ptx has no
//! kernel BTF to relocate against, so the loader only needs to know that a section
//! has some (and refuse it).
//!
//! `.rel.BTF.ext` holds `R_BPF_64_NODYLD32` relocations of every `insn_off` against
//! the section symbol of the program section (value 0), so the file already holds the
//! right byte offsets; applying them with [`super::btf::apply_relocations`] is a
//! no-op and optional.

use super::btf::{parse_preamble, Btf, BtfError, BtfKind, Reader, BTF_EXT_SECTION};

/// Minimum header: up to and including `line_info_len`.
const MIN_HDR_LEN: u32 = 24;
/// Header that also has `core_relo_off`/`core_relo_len`.
const CORE_HDR_LEN: u32 = 32;
/// `struct bpf_func_info`: insn_off, type_id.
const FUNC_INFO_LEN: u32 = 8;
/// `struct bpf_line_info`: insn_off, file_name_off, line_off, line_col.
const LINE_INFO_LEN: u32 = 16;
/// `struct bpf_core_relo`: insn_off, type_id, access_str_off, kind.
const CORE_RELO_LEN: u32 = 16;

/// One `func_info` record: a function starts at `insn_off`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuncInfo {
    /// Byte offset of the function's first instruction in the ELF section.
    pub insn_off: u32,
    /// The function's `FUNC` type in `.BTF`.
    pub type_id: u32,
    /// The function's name (from the `FUNC` type).
    pub name: String,
}

/// The `func_info` records of one ELF section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionFuncInfo {
    /// ELF section name ("kprobe/foo", ".text", ...).
    pub section: String,
    /// Records in file order (ascending `insn_off` from clang).
    pub records: Vec<FuncInfo>,
}

/// One `line_info` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineInfo {
    /// Byte offset of the instruction in the ELF section, as in the file.
    pub insn_off: u32,
    /// Source file path.
    pub file: String,
    /// 1-based line (`line_col >> 10`).
    pub line: u32,
    /// 1-based column, 0 if unknown (`line_col & 0x3ff`).
    pub col: u32,
    /// Source text of the line (may be empty).
    pub text: String,
}

/// The `line_info` records of one ELF section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionLineInfo {
    /// ELF section name.
    pub section: String,
    /// Records in file order (ascending `insn_off` from clang).
    pub records: Vec<LineInfo>,
}

/// How many CO-RE relocations one ELF section has (they are not decoded further).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionCoreRelos {
    /// ELF section name.
    pub section: String,
    /// Number of `bpf_core_relo` records.
    pub count: u32,
}

/// A parsed `.BTF.ext` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BtfExt {
    /// Function starts per section.
    pub func_info: Vec<SectionFuncInfo>,
    /// Source lines per section.
    pub line_info: Vec<SectionLineInfo>,
    /// CO-RE relocation counts per section (empty when the header has no core_relo).
    pub core_relos: Vec<SectionCoreRelos>,
}

impl BtfExt {
    /// The func info of ELF section `name`, if any.
    pub fn func_info_for(&self, name: &str) -> Option<&SectionFuncInfo> {
        self.func_info.iter().find(|s| s.section == name)
    }

    /// The line info of ELF section `name`, if any.
    pub fn line_info_for(&self, name: &str) -> Option<&SectionLineInfo> {
        self.line_info.iter().find(|s| s.section == name)
    }
}

/// Parses a `.BTF.ext` section; strings (section names, files, source lines) are
/// resolved in the string table of `btf`, the `.BTF` of the same object.
pub fn parse(data: &[u8], btf: &Btf) -> Result<BtfExt, BtfError> {
    let r = Reader {
        data,
        section: BTF_EXT_SECTION,
    };
    let (_version, _flags, hdr_len) = parse_preamble(&r, MIN_HDR_LEN)?;
    let len = data.len();
    let base = u64::from(hdr_len);
    let mut ext = BtfExt::default();

    let func = r.region("func_info", 8, base, r.u32(8, len)?, r.u32(12, len)?)?;
    for_each_block(&r, btf, func, 8, "func_info", FUNC_INFO_LEN, |section, pos, count, rec_size| {
        let mut records = Vec::with_capacity(count);
        for i in 0..count {
            let rec = pos + i * rec_size;
            let insn_off = r.u32(rec, len)?;
            let type_id = r.u32(rec + 4, len)?;
            let name = match btf.type_by_id(type_id).map(|t| &t.kind) {
                Some(BtfKind::Func { .. }) => btf.name(type_id).unwrap_or("").to_string(),
                _ => {
                    return Err(BtfError::NotAFunc {
                        section: BTF_EXT_SECTION,
                        offset: rec + 4,
                        type_id,
                    })
                }
            };
            records.push(FuncInfo {
                insn_off,
                type_id,
                name,
            });
        }
        ext.func_info.push(SectionFuncInfo { section, records });
        Ok(())
    })?;

    let line = r.region("line_info", 16, base, r.u32(16, len)?, r.u32(20, len)?)?;
    for_each_block(&r, btf, line, 16, "line_info", LINE_INFO_LEN, |section, pos, count, rec_size| {
        let mut records = Vec::with_capacity(count);
        for i in 0..count {
            let rec = pos + i * rec_size;
            let line_col = r.u32(rec + 12, len)?;
            records.push(LineInfo {
                insn_off: r.u32(rec, len)?,
                file: string(btf, &r, rec + 4)?,
                text: string(btf, &r, rec + 8)?,
                line: line_col >> 10,
                col: line_col & 0x3ff,
            });
        }
        ext.line_info.push(SectionLineInfo { section, records });
        Ok(())
    })?;

    if hdr_len >= CORE_HDR_LEN {
        let core = r.region("core_relo", 24, base, r.u32(24, len)?, r.u32(28, len)?)?;
        for_each_block(&r, btf, core, 24, "core_relo", CORE_RELO_LEN, |section, _, count, _| {
            ext.core_relos.push(SectionCoreRelos {
                section,
                count: count as u32,
            });
            Ok(())
        })?;
    }
    Ok(ext)
}

/// Reads the string whose offset is the `u32` at `pos`.
fn string(btf: &Btf, r: &Reader<'_>, pos: usize) -> Result<String, BtfError> {
    let str_off = r.u32(pos, r.data.len())?;
    btf.string_at(str_off)
        .map(str::to_string)
        .ok_or(BtfError::BadString {
            section: BTF_EXT_SECTION,
            offset: pos,
            str_off,
            str_len: btf.header().str_len,
        })
}

/// Walks one info block (`func_info`, `line_info` or `core_relo`) occupying
/// `start..end` of the section and calls `f(section name, offset of the first record,
/// record count, record size)` per section. Every record of a call lies in bounds.
/// `field` is the offset of the header field naming the block.
#[allow(clippy::too_many_arguments)]
fn for_each_block(
    r: &Reader<'_>,
    btf: &Btf,
    (start, end): (usize, usize),
    field: usize,
    what: &'static str,
    min_rec: u32,
    mut f: impl FnMut(String, usize, usize, usize) -> Result<(), BtfError>,
) -> Result<(), BtfError> {
    if start == end {
        return Ok(());
    }
    if start % 4 != 0 {
        return Err(BtfError::Misaligned {
            section: r.section,
            offset: field,
            what,
            value: start as u64,
        });
    }
    let rec_size = r.u32(start, end)?;
    if rec_size < min_rec {
        return Err(BtfError::RecordTooSmall {
            section: r.section,
            offset: start,
            what,
            rec_size,
            min: min_rec,
        });
    }
    if rec_size % 4 != 0 {
        return Err(BtfError::Misaligned {
            section: r.section,
            offset: start,
            what: "record size",
            value: u64::from(rec_size),
        });
    }
    let rec_size = rec_size as usize;
    let mut pos = start + 4;
    while pos < end {
        let count = r.u32(pos + 4, end)? as usize;
        r.u32(pos, end)?;
        let section = string(btf, r, pos)?;
        let records = pos + 8;
        // Checked before `f` allocates anything: the records must fit in the block.
        let total = count.checked_mul(rec_size).unwrap_or(usize::MAX);
        r.bytes(records, total, end)?;
        f(section, records, count, rec_size)?;
        pos = records + total;
    }
    Ok(())
}
