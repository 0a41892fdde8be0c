//! Frontends: everything that turns an input file into an [`Object`].
//!
//! Three formats, told apart by content, not by file name: an ELF object (the `\x7fELF`
//! magic), a bpf_conformance test (a `-- asm`/`-- raw`/`-- result`/`-- mem` section line)
//! and otherwise a text assembly file in either syntax [`crate::isa::asm`] reads.

pub mod btf;
pub mod btf_ext;
pub mod data_file;
pub mod dwarf;
pub mod elf;
pub mod kconfig;

use crate::isa::{self, insn, AsmError, DecodeError, Insn};
use crate::program::{
    Func, LineRef, Map, MapOrigin, Object, Program, Reloc, RelocTarget, SourceKind, TestCase,
};
use std::path::Path;
use thiserror::Error;

/// Why an input does not load. Every variant names the file; ELF errors name the section
/// and byte offset, instruction errors the instruction. All map to exit code 2.
#[derive(Debug, Error)]
pub enum LoadError {
    /// The file cannot be read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A structural problem in an ELF object.
    #[error("{file}: {}{what}", location(section, *offset))]
    Elf {
        /// The file.
        file: String,
        /// The section it is in ("" for the ELF header or the file as a whole).
        section: String,
        /// Byte offset within the section (or the file, for the header).
        offset: Option<u64>,
        /// What is wrong.
        what: String,
    },
    /// An instruction of an ELF code section does not decode.
    #[error("{file}: section {section}+0x{offset:x}: {source}")]
    Decode {
        /// The file.
        file: String,
        /// The code section.
        section: String,
        /// Byte offset of the instruction.
        offset: u64,
        /// The decoding error (its `insn N` counts slots from the section start).
        source: Box<DecodeError>,
    },
    /// `.BTF` or `.BTF.ext` is malformed.
    #[error("{file}: section {source}")]
    Btf {
        /// The file.
        file: String,
        /// The BTF error (names the section and offset).
        source: Box<btf::BtfError>,
    },
    /// DWARF line tables are malformed.
    #[error("{file}: section {source}")]
    Dwarf {
        /// The file.
        file: String,
        /// The DWARF error (names the section and offset).
        source: Box<dwarf::DwarfError>,
    },
    /// A map has a type id bpf2ptx does not know.
    #[error("{file}: section {section}: map `{map}` has unknown map type {map_type}")]
    UnknownMapType {
        /// The file.
        file: String,
        /// The section the map is defined in.
        section: String,
        /// The map.
        map: String,
        /// The type id.
        map_type: u32,
    },
    /// A bpf_conformance file is malformed.
    #[error("{file}: {source}")]
    Data {
        /// The file.
        file: String,
        /// The error (names the line).
        source: Box<data_file::DataError>,
    },
    /// A text assembly file does not assemble.
    #[error("{file}: {source}")]
    Asm {
        /// The file.
        file: String,
        /// The error (names the line).
        source: Box<AsmError>,
    },
    /// A text program is malformed beyond single instructions.
    #[error("{file}: {what}")]
    Program {
        /// The file.
        file: String,
        /// What is wrong.
        what: String,
    },
}

fn location(section: &str, offset: Option<u64>) -> String {
    match (section.is_empty(), offset) {
        (true, None) => String::new(),
        (true, Some(o)) => format!("offset 0x{o:x}: "),
        (false, None) => format!("section {section}: "),
        (false, Some(o)) => format!("section {section}+0x{o:x}: "),
    }
}

/// Loads a file of any supported format.
pub fn load_path(path: &Path) -> Result<Object, LoadError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        file: file.clone(),
        source,
    })?;
    load_bytes(&file, &bytes)
}

/// What a text that cannot be BPF assembly or a bpf_conformance file looks like, said
/// before the assembler tries it (so a PTX file given as a probe is "PTX", not "invalid
/// number `9.0`"): empty, binary data, or PTX. `None` for anything else.
fn not_bpf_text(text: &str) -> Option<String> {
    const READS: &str = "bpf2ptx reads clang-built BPF ELF objects, bpf_conformance .data \
                         files and BPF assembly text";
    if text.trim().is_empty() {
        return Some(format!(
            "the file is empty (nothing but white space); {READS}"
        ));
    }
    // C0 control characters other than white space (NUL, ...): binary data. (DEL, 0x7f,
    // stands in bpf_conformance files.)
    if let Some(at) = text.find(|c: char| c < ' ' && !matches!(c, '\n' | '\r' | '\t' | '\x0c')) {
        let byte = text.as_bytes()[at];
        return Some(format!(
            "binary data (byte 0x{byte:02x} at offset {at}), neither an ELF object nor text; {READS}"
        ));
    }
    let directive = |name: &str| {
        text.lines()
            .take(200)
            .position(|l| l.trim_start().starts_with(name))
    };
    if let (Some(v), Some(_)) = (directive(".version"), directive(".target")) {
        return Some(format!(
            "this is PTX (`.version` on line {}), not a BPF program; {READS} (PTX is what \
             `bpf2ptx inject --into` takes)",
            v + 1
        ));
    }
    None
}

/// Loads the bytes of a file of any supported format; `file` names it in errors.
pub fn load_bytes(file: &str, bytes: &[u8]) -> Result<Object, LoadError> {
    if bytes.starts_with(b"\x7fELF") {
        return elf::load(file, bytes);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| LoadError::Program {
        file: file.to_string(),
        what: format!(
            "neither an ELF object nor text (invalid UTF-8 at byte {})",
            e.valid_up_to()
        ),
    })?;
    if let Some(what) = not_bpf_text(text) {
        return Err(LoadError::Program {
            file: file.to_string(),
            what,
        });
    }
    let stem = Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("prog")
        .to_string();
    if data_file::looks_like(text) {
        let d = data_file::parse(text).map_err(|source| LoadError::Data {
            file: file.to_string(),
            source: Box::new(source),
        })?;
        let lines = d.lines.iter().map(|&l| (file, l)).collect::<Vec<_>>();
        let prog = text_program(file, &stem, d.insns, &d.labels, &lines)?;
        let test = TestCase {
            mem: d.mem,
            result: d.result,
            error: d.error,
        };
        return Ok(Object {
            file: file.to_string(),
            kind: SourceKind::Conformance,
            license: None,
            sections: vec![],
            maps: vec![],
            programs: vec![prog],
            externs: vec![],
            test: Some(test),
        });
    }
    let (maps, code) = map_directives(file, text)?;
    let a = isa::assemble(&code).map_err(|source| LoadError::Asm {
        file: file.to_string(),
        source: Box::new(source),
    })?;
    if a.insns.is_empty() {
        return Err(LoadError::Program {
            file: file.to_string(),
            what: "no instructions".into(),
        });
    }
    let labels: Vec<(String, usize)> = a.labels.into_iter().collect();
    let lines = a.lines.iter().map(|&l| (file, l)).collect::<Vec<_>>();
    let mut prog = text_program(file, &stem, a.insns, &labels, &lines)?;
    prog.relocs = a
        .kfuncs
        .into_iter()
        .map(|(insn, symbol)| Reloc {
            insn,
            symbol,
            elf_type: "kfunc".into(),
            target: RelocTarget::Kfunc { btf_id: 0 },
        })
        .collect();
    Ok(Object {
        file: file.to_string(),
        kind: SourceKind::Assembly,
        license: None,
        sections: vec![],
        maps,
        programs: vec![prog],
        externs: vec![],
        test: None,
    })
}

/// Reads the `.map` directives of a text assembly file and returns the maps and the text
/// with those lines blanked (so line numbers stay right). A directive is
///
/// ```text
/// .map NAME TYPE KEY_SIZE VALUE_SIZE MAX_ENTRIES [FLAGS] [init=HEXBYTES]
/// ```
///
/// where TYPE is a map type name (`hash`, `array`, ...) or id; a NAME starting with `.` is
/// global data (`.rodata` with flags 0x80 is read-only). Maps are numbered in order, so
/// `r1 = map_idx(0) ll` names the first and `r1 = map_idx_value(1, 8) ll` points into the
/// second's value.
fn map_directives(file: &str, text: &str) -> Result<(Vec<Map>, String), LoadError> {
    let mut maps = Vec::new();
    let mut code = String::with_capacity(text.len());
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        let Some(rest) = t.strip_prefix(".map") else {
            code.push_str(line);
            code.push('\n');
            continue;
        };
        code.push('\n');
        let bad = |what: &str| LoadError::Program {
            file: file.to_string(),
            what: format!("line {}: {what}: `{}`", n + 1, crate::isa::asm::clip(t)),
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        if words.len() < 5 {
            return Err(bad(".map needs NAME TYPE KEY_SIZE VALUE_SIZE MAX_ENTRIES"));
        }
        let num = |w: &str| -> Result<u32, LoadError> {
            let v = match w.strip_prefix("0x") {
                Some(h) => u32::from_str_radix(h, 16),
                None => w.parse(),
            };
            v.map_err(|_| bad(&format!("`{}` is not a number", crate::isa::asm::clip(w))))
        };
        let map_type = match bpf2ptx_runtime::MapKind::from_name(words[1]) {
            Some(kind) => kind.id(),
            None => num(words[1])?,
        };
        if crate::program::map_type_name(map_type).is_none() {
            return Err(LoadError::UnknownMapType {
                file: file.to_string(),
                section: format!("line {}", n + 1),
                map: words[0].to_string(),
                map_type,
            });
        }
        let (mut flags, mut init) = (0, None);
        for w in &words[5..] {
            if let Some(h) = w.strip_prefix("init=") {
                let bytes: Result<Vec<u8>, _> = (0..h.len())
                    .step_by(2)
                    .map(|i| {
                        h.get(i..i + 2)
                            .map_or(Err(()), |b| u8::from_str_radix(b, 16).map_err(|_| ()))
                    })
                    .collect();
                init = Some(bytes.map_err(|_| bad("init= needs hex bytes"))?);
            } else {
                flags = num(w)?;
            }
        }
        let name = words[0].to_string();
        maps.push(Map {
            origin: if name.starts_with('.') {
                MapOrigin::GlobalData
            } else {
                MapOrigin::Btf
            },
            section: if name.starts_with('.') {
                name.clone()
            } else {
                ".maps".into()
            },
            name,
            map_type,
            key_size: num(words[2])?,
            value_size: num(words[3])?,
            max_entries: num(words[4])?,
            flags,
            btf_key_type: None,
            btf_value_type: None,
            init,
            iproute2: None,
            inner: None,
            slots: vec![],
            fields: vec![],
        });
    }
    Ok((maps, code))
}

/// Builds the one program of a text input: the entry function plus one function per
/// distinct local-call target, named by the label there.
fn text_program(
    file: &str,
    name: &str,
    insns: Vec<Insn>,
    labels: &[(String, usize)],
    lines: &[(&str, usize)],
) -> Result<Program, LoadError> {
    let pcs = insn::pcs(&insns);
    let mut starts = vec![0usize];
    for (i, ins) in insns.iter().enumerate() {
        let rel = match ins.kind() {
            isa::Kind::Call(isa::table::CallKind::Local) => ins.imm,
            isa::Kind::LdImm64(isa::table::Pseudo::Func) => i64::from(ins.imm as i32),
            _ => continue,
        };
        let target = pcs[i] as i64 + 1 + rel;
        let idx = pcs
            .iter()
            .take(insns.len())
            .position(|&p| p as i64 == target)
            .ok_or_else(|| LoadError::Program {
                file: file.to_string(),
                what: format!(
                    "insn {}: `{ins}` does not target the start of an instruction",
                    pcs[i]
                ),
            })?;
        starts.push(idx);
    }
    starts.sort_unstable();
    starts.dedup();
    let funcs = starts
        .iter()
        .map(|&s| Func {
            name: if s == 0 {
                name.to_string()
            } else {
                labels
                    .iter()
                    .find(|(_, i)| *i == s)
                    .map_or_else(|| format!("func_{}", pcs[s]), |(l, _)| l.clone())
            },
            start: s,
            section: String::new(),
            section_offset: (pcs[s] * insn::SLOT) as u64,
        })
        .collect();
    let lines = lines
        .iter()
        .enumerate()
        .map(|(i, (f, l))| {
            (
                i,
                LineRef {
                    file: f.to_string(),
                    line: *l as u32,
                    col: 0,
                    text: String::new(),
                },
            )
        })
        .collect();
    Ok(Program {
        name: name.to_string(),
        section: String::new(),
        insns,
        funcs,
        relocs: vec![],
        lines,
    })
}
