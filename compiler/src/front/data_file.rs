//! The bpf_conformance test format (`.data` files).
//!
//! A file is a sequence of sections, each opened by a `-- name` line: `asm` (assembly in
//! the bpf_conformance syntax), `raw` (the same program as 64-bit words or as 8 bytes per
//! line), `mem` (hex bytes passed to the program in r1, their length in r2), `result` (the
//! expected r0), `error` (the expected failure text), `c` (the C source the test came from)
//! and `no register offset` (a note for runtimes). Lines starting with `#` are comments.
//! Anything else is an error, because a section we do not understand could change what the
//! test means.

use crate::isa::{self, asm::AsmError, insn::RawInsn, DecodeError, Insn};
use thiserror::Error;

/// A parsed `.data` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataFile {
    /// The program.
    pub insns: Vec<Insn>,
    /// Labels of the `asm` section: name → instruction index.
    pub labels: Vec<(String, usize)>,
    /// The 1-based file line of each instruction.
    pub lines: Vec<usize>,
    /// The `mem` bytes.
    pub mem: Vec<u8>,
    /// The expected r0.
    pub result: Option<u64>,
    /// The expected error text, if the test expects a failure.
    pub error: Option<String>,
    /// Whether the file had a `raw` section (and it matched `asm` where both are present).
    pub has_raw: bool,
    /// The notes of `no register offset` sections.
    pub notes: Vec<String>,
}

/// Why a `.data` file does not load. Lines are 1-based lines of the file.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DataError {
    /// A `-- name` line names no known section.
    #[error("line {line}: unknown section `-- {name}`")]
    UnknownSection {
        /// Line of the section header.
        line: usize,
        /// The name.
        name: String,
    },
    /// Text outside any section.
    #[error("line {line}: text outside a section")]
    Stray {
        /// The line.
        line: usize,
    },
    /// Neither `asm` nor `raw`.
    #[error("no `-- asm` or `-- raw` section: the file holds no program")]
    NoProgram,
    /// The program has no instructions.
    #[error("line {line}: the program section is empty")]
    EmptyProgram {
        /// Line of the section header.
        line: usize,
    },
    /// The assembly does not assemble.
    #[error("section asm, {0}")]
    Asm(AsmError),
    /// A `raw` line is not a word or 8 bytes.
    #[error("section raw, line {line}: `{text}` is neither a 64-bit word nor 8 hex bytes")]
    RawSyntax {
        /// The line.
        line: usize,
        /// Its text.
        text: String,
    },
    /// The `raw` words do not decode.
    #[error("section raw, {0}")]
    Decode(DecodeError),
    /// `asm` and `raw` disagree.
    #[error("section raw: instruction {index} differs from the asm section")]
    RawMismatch {
        /// Instruction index.
        index: usize,
    },
    /// A `mem` token is not a hex byte.
    #[error("section mem, line {line}: `{text}` is not a hex byte")]
    MemSyntax {
        /// The line.
        line: usize,
        /// The token.
        text: String,
    },
    /// The `result` is not a number.
    #[error("section result, line {line}: `{text}` is not a 64-bit number")]
    ResultSyntax {
        /// The line.
        line: usize,
        /// Its text.
        text: String,
    },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sec {
    Asm,
    Raw,
    Mem,
    Result,
    Error,
    C,
    Note,
}

/// Whether a text looks like a bpf_conformance file (used to detect the input kind).
pub fn looks_like(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_end();
        l == "-- asm" || l == "-- raw" || l == "-- result" || l == "-- mem"
    })
}

/// Parses a `.data` file.
pub fn parse(text: &str) -> Result<DataFile, DataError> {
    // (section, header line, its lines with their numbers)
    type Lines<'t> = Vec<(usize, &'t str)>;
    let mut sections: Vec<(Sec, usize, Lines)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        if let Some(name) = line.strip_prefix("-- ") {
            let sec = match name.trim() {
                "asm" => Sec::Asm,
                "raw" => Sec::Raw,
                "mem" => Sec::Mem,
                "result" => Sec::Result,
                "error" => Sec::Error,
                "c" => Sec::C,
                "no register offset" => Sec::Note,
                other => {
                    return Err(DataError::UnknownSection {
                        line: line_no,
                        name: other.to_string(),
                    })
                }
            };
            sections.push((sec, line_no, Vec::new()));
            continue;
        }
        match sections.last_mut() {
            Some((_, _, lines)) => lines.push((line_no, line)),
            None if line.trim().is_empty() || line.trim_start().starts_with('#') => {}
            None => return Err(DataError::Stray { line: line_no }),
        }
    }
    let mut out = DataFile::default();
    let mut raw: Option<(usize, Vec<Insn>)> = None;
    let mut asm: Option<(usize, Vec<Insn>)> = None;
    for (sec, header, lines) in sections {
        let content = || {
            lines
                .iter()
                .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        };
        match sec {
            Sec::Asm => {
                // Keep file line numbers: pad with empty lines up to the section.
                let mut text = "\n".repeat(header);
                for (_, l) in &lines {
                    text.push_str(l);
                    text.push('\n');
                }
                let a = isa::assemble(&text).map_err(DataError::Asm)?;
                out.labels = a.labels.into_iter().collect();
                out.lines = a.lines;
                asm = Some((header, a.insns));
            }
            Sec::Raw => {
                let mut slots = Vec::new();
                for (line, l) in content() {
                    let l = l.split('#').next().unwrap_or("").trim();
                    let bad = || DataError::RawSyntax {
                        line: *line,
                        text: l.to_string(),
                    };
                    let toks: Vec<&str> = l.split_whitespace().collect();
                    let word = match toks.as_slice() {
                        [w] => {
                            let h = w
                                .strip_prefix("0x")
                                .or_else(|| w.strip_prefix("0X"))
                                .ok_or_else(bad)?;
                            u64::from_str_radix(h, 16).map_err(|_| bad())?
                        }
                        bytes if bytes.len() == 8 => {
                            let mut b = [0u8; 8];
                            for (i, t) in bytes.iter().enumerate() {
                                b[i] = u8::from_str_radix(t, 16).map_err(|_| bad())?;
                            }
                            u64::from_le_bytes(b)
                        }
                        _ => return Err(bad()),
                    };
                    slots.push(RawInsn::from_bytes(word.to_le_bytes()));
                }
                let insns = isa::insn::decode_slots(&slots).map_err(DataError::Decode)?;
                raw = Some((header, insns));
            }
            Sec::Mem => {
                for (line, l) in content() {
                    for t in l.split_whitespace() {
                        let b = u8::from_str_radix(t, 16).map_err(|_| DataError::MemSyntax {
                            line: *line,
                            text: t.to_string(),
                        })?;
                        out.mem.push(b);
                    }
                }
            }
            Sec::Result => {
                for (line, l) in content() {
                    let t = l.trim();
                    let bad = || DataError::ResultSyntax {
                        line: *line,
                        text: t.to_string(),
                    };
                    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                        Some(h) => u64::from_str_radix(h, 16).map_err(|_| bad())?,
                        None => t
                            .parse::<i64>()
                            .map(|v| v as u64)
                            .or_else(|_| t.parse::<u64>())
                            .map_err(|_| bad())?,
                    };
                    out.result = Some(v);
                }
            }
            Sec::Error => {
                let text: Vec<&str> = content().map(|(_, l)| l.trim()).collect();
                out.error = Some(text.join("\n"));
            }
            Sec::C => {}
            Sec::Note => out
                .notes
                .extend(content().map(|(_, l)| l.trim().to_string())),
        }
    }
    let (header, insns) = match (asm, raw) {
        (Some(a), Some(r)) => {
            if let Some(index) = (0..a.1.len().max(r.1.len())).find(|&i| a.1.get(i) != r.1.get(i)) {
                return Err(DataError::RawMismatch { index });
            }
            out.has_raw = true;
            a
        }
        (Some(a), None) => a,
        (None, Some(r)) => {
            out.has_raw = true;
            r
        }
        (None, None) => return Err(DataError::NoProgram),
    };
    if insns.is_empty() {
        return Err(DataError::EmptyProgram { line: header });
    }
    out.insns = insns;
    Ok(out)
}
