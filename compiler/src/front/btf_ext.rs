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
    /// 1-based line (`line_col >> 10`); 0 when clang attributes the instruction to
    /// no line (compiler-generated code, as in DWARF).
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
    for_each_block(
        &r,
        btf,
        func,
        8,
        "func_info",
        FUNC_INFO_LEN,
        |section, pos, count, rec_size| {
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
        },
    )?;

    let line = r.region("line_info", 16, base, r.u32(16, len)?, r.u32(20, len)?)?;
    for_each_block(
        &r,
        btf,
        line,
        16,
        "line_info",
        LINE_INFO_LEN,
        |section, pos, count, rec_size| {
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
        },
    )?;

    if hdr_len >= CORE_HDR_LEN {
        let core = r.region("core_relo", 24, base, r.u32(24, len)?, r.u32(28, len)?)?;
        for_each_block(
            &r,
            btf,
            core,
            24,
            "core_relo",
            CORE_RELO_LEN,
            |section, _, count, _| {
                ext.core_relos.push(SectionCoreRelos {
                    section,
                    count: count as u32,
                });
                Ok(())
            },
        )?;
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
    if start & 3 != 0 {
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
    if rec_size & 3 != 0 {
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
        let total = count.saturating_mul(rec_size);
        r.bytes(records, total, end)?;
        f(section, records, count, rec_size)?;
        pos = records + total;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::btf::test_elf::*;
    use super::super::btf::{self, BTF_MAGIC};
    use super::*;

    fn load(obj: &[u8]) -> (Btf, Vec<u8>) {
        let btf = btf::parse(section(obj, ".BTF").unwrap()).unwrap();
        (btf, section(obj, ".BTF.ext").unwrap().to_vec())
    }

    fn u32_at(d: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(d[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn func_info_matches_symbols() {
        for obj in [MULTI14, MULTI19, MULTI19_DWARF4, MAPS19] {
            let (btf, data) = load(obj);
            let ext = parse(&data, &btf).unwrap();
            let funcs: Vec<_> = symbols(obj).into_iter().filter(|s| s.4).collect();
            let records: usize = ext.func_info.iter().map(|s| s.records.len()).sum();
            assert_eq!(records, funcs.len());
            for (name, sec, value, _, _) in funcs {
                let info = ext.func_info_for(&sec).unwrap();
                assert!(
                    info.records
                        .iter()
                        .any(|r| r.name == name && u64::from(r.insn_off) == value),
                    "{name} at {sec}+{value:#x} not in {info:?}"
                );
            }
        }
        let (btf, data) = load(MULTI19);
        let ext = parse(&data, &btf).unwrap();
        let text: Vec<_> = ext
            .func_info_for(".text")
            .unwrap()
            .records
            .iter()
            .map(|r| (r.name.as_str(), r.insn_off))
            .collect();
        assert_eq!(text, [("global_helper", 0), ("add_counter", 0x78)]);
        let sections: Vec<_> = ext.func_info.iter().map(|s| s.section.as_str()).collect();
        assert_eq!(
            sections,
            [".text", "kprobe/first", "kretprobe/second", "xdp"]
        );
    }

    #[test]
    fn line_info_matches_source() {
        let lines: Vec<_> = MULTI_SRC.lines().collect();
        for obj in [MULTI14, MULTI19, MULTI19_DWARF4] {
            let (btf, data) = load(obj);
            let ext = parse(&data, &btf).unwrap();
            let mut checked = 0;
            for sec in &ext.line_info {
                let size = section(obj, &sec.section).unwrap().len() as u32;
                let mut last = 0;
                for r in &sec.records {
                    assert!(r.insn_off & 7 == 0 && r.insn_off < size, "{r:?}");
                    assert!(r.insn_off >= last, "records are sorted");
                    last = r.insn_off;
                    // clang emits line 0 (no text) for compiler-made code.
                    assert!(r.line > 0 || r.text.is_empty(), "{r:?}");
                    if r.file.ends_with("multi.bpf.c") && r.line > 0 {
                        assert_eq!(lines[r.line as usize - 1], r.text, "{}: {r:?}", sec.section);
                        assert!(r.col as usize <= r.text.len() + 1, "{r:?}");
                        checked += 1;
                    }
                }
            }
            assert!(checked > 30, "{checked}");
            let first = &ext.line_info_for("kprobe/first").unwrap().records[0];
            assert_eq!(
                (first.insn_off, first.text.as_str()),
                (0, "int prog_first(void *ctx)")
            );
        }
    }

    #[test]
    fn core_relos_are_counted() {
        let (btf, data) = load(MAPS19);
        let ext = parse(&data, &btf).unwrap();
        assert_eq!(
            ext.core_relos,
            [SectionCoreRelos {
                section: "xdp".into(),
                count: 2
            }]
        );
        let (btf, data) = load(MULTI19);
        assert!(parse(&data, &btf).unwrap().core_relos.is_empty());
    }

    /// Re-encodes every info block with `extra` bytes of zeros after each record,
    /// as a newer producer with longer records would.
    fn widen(data: &[u8], extra: u32) -> Vec<u8> {
        let hdr_len = u32_at(data, 4) as usize;
        let mut blocks = Vec::new();
        for field in [8, 16, 24] {
            if field + 8 > hdr_len {
                break;
            }
            let (off, len) = (
                u32_at(data, field) as usize,
                u32_at(data, field + 4) as usize,
            );
            let block = &data[hdr_len + off..hdr_len + off + len];
            let mut out = Vec::new();
            if !block.is_empty() {
                let rec = u32_at(block, 0) as usize;
                out.extend_from_slice(&(rec as u32 + extra).to_le_bytes());
                let mut pos = 4;
                while pos < block.len() {
                    let n = u32_at(block, pos + 4) as usize;
                    out.extend_from_slice(&block[pos..pos + 8]);
                    for i in 0..n {
                        let r = pos + 8 + i * rec;
                        out.extend_from_slice(&block[r..r + rec]);
                        out.extend(std::iter::repeat_n(0xa5, extra as usize));
                    }
                    pos += 8 + n * rec;
                }
            }
            blocks.push(out);
        }
        let mut out = data[..hdr_len].to_vec();
        let mut off = 0u32;
        for (i, b) in blocks.iter().enumerate() {
            out[8 + i * 8..12 + i * 8].copy_from_slice(&off.to_le_bytes());
            out[12 + i * 8..16 + i * 8].copy_from_slice(&(b.len() as u32).to_le_bytes());
            off += b.len() as u32;
        }
        blocks.iter().for_each(|b| out.extend_from_slice(b));
        out
    }

    #[test]
    fn larger_records_are_skipped() {
        for obj in [MULTI19, MAPS19] {
            let (btf, data) = load(obj);
            let plain = parse(&data, &btf).unwrap();
            assert_eq!(parse(&widen(&data, 0), &btf).unwrap(), plain);
            assert_eq!(parse(&widen(&data, 8), &btf).unwrap(), plain);
            let err = parse(&widen(&data, 2), &btf).unwrap_err();
            assert!(
                matches!(
                    err,
                    BtfError::Misaligned {
                        what: "record size",
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn smaller_records_are_an_error() {
        let (btf, mut data) = load(MULTI19);
        let hdr_len = u32_at(&data, 4) as usize;
        let func_rec = hdr_len + u32_at(&data, 8) as usize;
        data[func_rec..func_rec + 4].copy_from_slice(&4u32.to_le_bytes());
        assert_eq!(
            parse(&data, &btf).unwrap_err(),
            BtfError::RecordTooSmall {
                section: ".BTF.ext",
                offset: func_rec,
                what: "func_info",
                rec_size: 4,
                min: 8
            }
        );
        let (btf, mut data) = load(MULTI19);
        let line_rec = hdr_len + u32_at(&data, 16) as usize;
        data[line_rec..line_rec + 4].copy_from_slice(&12u32.to_le_bytes());
        let err = parse(&data, &btf).unwrap_err();
        assert!(
            matches!(
                err,
                BtfError::RecordTooSmall {
                    what: "line_info",
                    rec_size: 12,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().starts_with(".BTF.ext+0x"), "{err}");
    }

    #[test]
    fn func_info_must_name_a_func() {
        let (btf, mut data) = load(MULTI19);
        let hdr_len = u32_at(&data, 4) as usize;
        // First record's type_id: rec_size, sec_name_off, num_info, insn_off, type_id.
        let at = hdr_len + u32_at(&data, 8) as usize + 16;
        data[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            parse(&data, &btf).unwrap_err(),
            BtfError::NotAFunc {
                section: ".BTF.ext",
                offset: at,
                type_id: 1
            }
        );
    }

    #[test]
    fn big_endian_and_bad_magic() {
        let data = section(MULTI19_BPFEB, ".BTF.ext").unwrap();
        let (btf, _) = load(MULTI19);
        assert_eq!(
            parse(data, &btf).unwrap_err(),
            BtfError::BigEndian {
                section: ".BTF.ext",
                offset: 0
            }
        );
        let (btf, mut data) = load(MULTI19);
        data[0] ^= 1;
        assert!(matches!(
            parse(&data, &btf).unwrap_err(),
            BtfError::BadMagic {
                section: ".BTF.ext",
                ..
            }
        ));
        data[..2].copy_from_slice(&BTF_MAGIC.to_le_bytes());
        assert!(parse(&data, &btf).is_ok());
    }

    #[test]
    fn every_prefix_is_an_error() {
        for obj in [MULTI14, MAPS19] {
            let (btf, data) = load(obj);
            for len in 0..data.len() {
                let err = parse(&data[..len], &btf).unwrap_err();
                assert!(err.to_string().starts_with(".BTF.ext"), "{err}");
            }
        }
    }

    #[test]
    fn random_corruption_never_panics() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for obj in [MULTI14, MULTI19, MAPS19] {
            let (btf, clean) = load(obj);
            let mut ok = 0;
            for _ in 0..5000 {
                let mut data = clean.clone();
                for _ in 0..1 + rng.below(3) {
                    let i = rng.below(data.len());
                    data[i] ^= 1 << rng.below(8);
                }
                if rng.below(4) == 0 {
                    let i = rng.below(data.len() - 4);
                    data[i..i + 4].copy_from_slice(&(rng.next() as u32).to_le_bytes());
                }
                ok += usize::from(parse(&data, &btf).is_ok());
            }
            // Most flips land in insn_off/line fields and still parse.
            assert!(ok > 100, "{ok}");
        }
    }
}
