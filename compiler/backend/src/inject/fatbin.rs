//! PTX out of what nvcc builds: fatbins, and the ELF executables, shared libraries and
//! objects that carry them.
//!
//! # Supported containers
//!
//! | input | where the device code is |
//! |---|---|
//! | fatbin (`nvcc -fatbin`, `fatbinary --create`) | the file itself: magic `0xBA55ED50` |
//! | ELF executable / shared library (`nvcc`, `nvcc -shared`) | section `.nv_fatbin`: one fatbin per linked object, 8-byte aligned |
//! | ELF object (`nvcc -c`) | `.nv_fatbin` (whole-program mode) |
//! | ELF object (`nvcc -c -rdc=true`) | `__nv_relfatbin`; its `.nv_fatbin` is empty or holds the device-linked SASS |
//!
//! `.nvFatBinSegment` only holds 24-byte wrappers (magic `0x466243B1`) whose pointers into
//! those sections are filled in by relocations; the sections themselves are self-delimiting,
//! so they are walked directly and the wrappers are not needed.
//!
//! PTX entries may be stored plain or compressed. The entry header's flags say how:
//! `0x2000` is an LZ4 block (`--compress-mode=speed` with CUDA 13; toolkits before 12.8
//! used LZ4 for every compressed entry), `0x8000` a zstd frame
//! (`--compress-mode=default|size|balance` and `-Xfatbin -compress-all` with CUDA 13).
//! `--concat` packs several images of one kind into a single compressed entry (kind
//! `0x100`) whose header lists the members; those are unpacked too. The CUDA 13.5 layouts
//! are checked against fixtures (`tests/inject/fatbin/`); the pre-12.8 LZ4 entries share
//! the speed mode's layout as far as is publicly known, but no older fixture is kept.
//!
//! Not read: a bare cubin (SASS; reported as [`FatbinError::NoPtx`]), LTO-IR and other
//! entry kinds (skipped), clang's `--offload-new-driver` `.llvm.offloading` sections,
//! Mach-O and PE files, and ELF files stripped of their section headers.
//!
//! fatbinary minifies the PTX it stores: comments are removed and indentation and runs of
//! blanks collapse to one space, but every line stays on its own line, so the text differs
//! from `nvcc -ptx` output while line numbers (and ptxas's reading of it) do not.
//!
//! # When there is no PTX
//!
//! nvcc keeps PTX only for a `-gencode ... code=compute_XX`. A build with only
//! `code=sm_XX` holds SASS alone, which bpf2ptx cannot rewrite; [`FatbinError::NoPtx`] then
//! lists the SASS architectures found and says how to rebuild.
//!
//! Every length and offset read from a header is checked against the input before use,
//! and decompressed sizes are capped, so a damaged or hostile file gives an error, never a
//! panic or a huge allocation.

use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use goblin::container::{Container, Ctx, Endian};
use goblin::elf::section_header::{SectionHeader, SHT_NOBITS};
use goblin::elf::Elf;
use goblin::strtab::Strtab;
use thiserror::Error;

/// The first four bytes of a fatbin (`0xBA55ED50`, little endian).
const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();
const ELF_MAGIC: [u8; 4] = *b"\x7fELF";
/// `e_machine` of a cubin (a bare SASS ELF).
const EM_CUDA: u16 = 190;

/// Fatbin header: magic u32, version u16, header size u16, size of the entries u64.
const FATBIN_HEADER_MIN: usize = 16;
/// Entry header fields up to the decompressed size; a PTX entry's header is longer (ptxas
/// options, identifier) and says so in its own size field.
const ENTRY_HEADER_MIN: usize = 0x40;

const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
/// `--concat`: one compressed payload holding several images of one kind.
const KIND_CONCAT: u16 = 0x100;

const FLAG_LZ4: u64 = 0x2000;
const FLAG_ZSTD: u64 = 0x8000;

/// Sections of an ELF file that hold fatbins, in the order they are read.
const ELF_SECTIONS: [&str; 2] = [".nv_fatbin", "__nv_relfatbin"];

/// Largest PTX text (decompressed) accepted from one entry. Real PTX is kilobytes to tens
/// of megabytes; the cap only stops a header from asking for gigabytes.
pub const MAX_PTX_BYTES: u64 = 256 << 20;

/// An LZ4 block expands at most about 255 times (one length byte per 255 output bytes), so
/// a header claiming more than this ratio is damaged; checked before the output buffer,
/// which LZ4 needs whole, is allocated.
const LZ4_MAX_RATIO: u64 = 256;

/// How a stored image was compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Stored as is.
    None,
    /// LZ4 block format (flag `0x2000`).
    Lz4,
    /// Zstandard frame (flag `0x8000`).
    Zstd,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "uncompressed",
            Compression::Lz4 => "LZ4",
            Compression::Zstd => "zstd",
        })
    }
}

/// One PTX image found in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxEntry {
    /// Position among all images of the input (PTX and SASS, members of `--concat`
    /// entries counted one by one), in file order; tells entries apart in messages.
    pub index: usize,
    /// Offset in the input of the entry header (of the member header for `--concat`).
    pub offset: usize,
    /// Virtual architecture: 90 for `compute_90`.
    pub arch: u32,
    /// PTX ISA version from the entry header, (major, minor).
    pub isa_version: (u16, u16),
    /// The identifier fatbinary stored (`--ident`; nvcc puts the source path there for
    /// `-G` builds), if any.
    pub name: Option<String>,
    /// How the image was stored.
    pub compression: Compression,
    /// The PTX text, without the trailing NUL padding.
    pub ptx: String,
}

/// Why no PTX could be taken from the input.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FatbinError {
    /// Neither fatbin nor ELF magic.
    #[error(
        "not a fatbin or an ELF file (starts with {found:02x?}): expected PTX text, a fatbin \
         or an executable, shared library or object built by nvcc"
    )]
    NotAContainer {
        /// Up to four leading bytes.
        found: Vec<u8>,
    },
    /// The ELF headers do not parse.
    #[error("ELF file cannot be read: {message}")]
    Elf {
        /// goblin's description.
        message: String,
    },
    /// A section header points outside the file.
    #[error("ELF section {section} (offset {offset:#x}, size {size:#x}) lies outside the {file_len}-byte file")]
    SectionOutOfBounds {
        /// Section name.
        section: String,
        /// `sh_offset`.
        offset: u64,
        /// `sh_size`.
        size: u64,
        /// Length of the input.
        file_len: usize,
    },
    /// An ELF file without any fatbin section: host-only code.
    #[error("ELF file holds no CUDA device code (no .nv_fatbin or __nv_relfatbin section)")]
    NoDeviceCode,
    /// A header or payload runs past the end of its container.
    #[error("truncated {what} at offset {offset:#x}: needs {needed} bytes, {available} left")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Where it starts in the input.
        offset: usize,
        /// Bytes it needs.
        needed: u64,
        /// Bytes there are.
        available: usize,
    },
    /// Something other than a fatbin where one should start.
    #[error("expected a fatbin (magic 0xba55ed50) at offset {offset:#x}, found {found:#010x}")]
    BadMagic {
        /// Offset in the input.
        offset: usize,
        /// The four bytes there, little endian.
        found: u32,
    },
    /// A header field that cannot be right.
    #[error("bad {what} at offset {offset:#x}: {reason}")]
    BadHeader {
        /// Which header.
        what: &'static str,
        /// Offset of the header in the input.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// Compression flags this reader does not know.
    #[error("image {index} at offset {offset:#x}: compression flags {flags:#x} name neither LZ4 (0x2000) nor zstd (0x8000) alone")]
    UnknownCompression {
        /// Image index.
        index: usize,
        /// Entry header offset.
        offset: usize,
        /// The entry's flags.
        flags: u64,
    },
    /// The compressed data does not decode.
    #[error("image {index} at offset {offset:#x}: {codec} data does not decode: {message}")]
    Decompress {
        /// Image index.
        index: usize,
        /// Entry header offset.
        offset: usize,
        /// The codec the header named.
        codec: Compression,
        /// The decoder's message.
        message: String,
    },
    /// Decoded length differs from the header's.
    #[error("image {index} at offset {offset:#x}: decoded to {actual} bytes, the header says {expected}")]
    SizeMismatch {
        /// Image index.
        index: usize,
        /// Entry header offset.
        offset: usize,
        /// Size from the header.
        expected: u64,
        /// Size decoded (`expected + 1` when the data goes on past it).
        actual: u64,
    },
    /// A decompressed size beyond what this reader accepts.
    #[error("image {index} at offset {offset:#x}: {size} decompressed bytes from {compressed} compressed is more than accepted ({limit})")]
    TooLarge {
        /// Image index.
        index: usize,
        /// Entry header offset.
        offset: usize,
        /// Decompressed size from the header.
        size: u64,
        /// Compressed size from the header.
        compressed: u64,
        /// The bound it broke.
        limit: u64,
    },
    /// A PTX image that is not UTF-8 (PTX is ASCII).
    #[error("PTX image {index} at offset {offset:#x} is not text (invalid UTF-8 at byte {at})")]
    NotText {
        /// Image index.
        index: usize,
        /// Entry header offset.
        offset: usize,
        /// First bad byte in the decoded text.
        at: usize,
    },
    /// Device code, but no PTX: only SASS, which cannot be instrumented.
    #[error("{}", no_ptx_message(sass_archs))]
    NoPtx {
        /// The SASS architectures found (90 for `sm_90`), in file order, without repeats.
        sass_archs: Vec<u32>,
    },
}

fn no_ptx_message(archs: &[u32]) -> String {
    let example = archs.iter().copied().max().unwrap_or(90);
    let found = if archs.is_empty() {
        "no PTX and no SASS".to_string()
    } else {
        let list: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
        format!("no PTX, only SASS for {}", list.join(", "))
    };
    format!(
        "the input holds {found}; bpf2ptx instruments PTX, which nvcc embeds only for \
         code=compute_XX targets: rebuild with PTX, e.g. \
         `-gencode arch=compute_{example},code=compute_{example}` (or \
         `code=[sm_{example},compute_{example}]` to keep the SASS too)"
    )
}

/// True when `bytes` start like a binary container this module reads (a fatbin or an ELF
/// file) rather than PTX text; PTX never starts with either magic.
pub fn is_container(bytes: &[u8]) -> bool {
    bytes.starts_with(&FATBIN_MAGIC) || bytes.starts_with(&ELF_MAGIC)
}

/// Every PTX image in a fatbin or in an ELF file's fatbin sections, in file order.
///
/// Never returns an empty list: without PTX the error is [`FatbinError::NoPtx`].
pub fn extract_ptx(bytes: &[u8]) -> Result<Vec<PtxEntry>, FatbinError> {
    let mut walk = Walk::default();
    if bytes.starts_with(&FATBIN_MAGIC) {
        walk.fatbins(bytes, 0, bytes.len())?;
    } else if bytes.starts_with(&ELF_MAGIC) {
        walk.elf(bytes)?;
    } else {
        return Err(FatbinError::NotAContainer {
            found: bytes.iter().take(4).copied().collect(),
        });
    }
    if walk.ptx.is_empty() {
        return Err(FatbinError::NoPtx {
            sass_archs: walk.sass_archs,
        });
    }
    Ok(walk.ptx)
}

/// State of one pass over the input.
#[derive(Default)]
struct Walk {
    ptx: Vec<PtxEntry>,
    sass_archs: Vec<u32>,
    /// Images seen so far (the next one's index).
    images: usize,
}

/// `len` bytes at `off` of `bytes`, or `Truncated`.
fn slice<'a>(
    bytes: &'a [u8],
    off: usize,
    len: u64,
    what: &'static str,
) -> Result<&'a [u8], FatbinError> {
    let truncated = || FatbinError::Truncated {
        what,
        offset: off,
        needed: len,
        available: bytes.len().saturating_sub(off),
    };
    let len = usize::try_from(len).map_err(|_| truncated())?;
    let end = off.checked_add(len).ok_or_else(truncated)?;
    bytes.get(off..end).ok_or_else(truncated)
}

// Fixed-offset field reads from a slice already checked to be long enough.
fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The fixed part of an entry header (and of a `--concat` member header, where the
/// header-size field holds the member's offset in the unpacked payload instead).
struct EntryHeader {
    kind: u16,
    /// Header size (entry) or payload offset (member).
    size_or_offset: u32,
    payload_size: u64,
    compressed_size: u32,
    isa_version: (u16, u16),
    arch: u32,
    name_offset: u32,
    name_len: u32,
    flags: u64,
    decompressed_size: u64,
}

impl EntryHeader {
    /// Reads the fixed fields; `h` holds at least `ENTRY_HEADER_MIN` bytes.
    fn read(h: &[u8]) -> Self {
        EntryHeader {
            kind: le16(h, 0),
            size_or_offset: le32(h, 4),
            payload_size: le64(h, 8),
            compressed_size: le32(h, 0x10),
            isa_version: (le16(h, 0x1a), le16(h, 0x18)),
            arch: le32(h, 0x1c),
            name_offset: le32(h, 0x20),
            name_len: le32(h, 0x24),
            flags: le64(h, 0x28),
            decompressed_size: le64(h, 0x38),
        }
    }

    /// The identifier, when it lies inside `header` (the whole header, options included)
    /// and is text.
    fn name(&self, header: &[u8]) -> Option<String> {
        if self.name_len == 0 {
            return None;
        }
        let start = usize::try_from(self.name_offset).ok()?;
        let end = start.checked_add(usize::try_from(self.name_len).ok()?)?;
        let raw = header.get(start..end)?;
        let raw = raw.split(|&b| b == 0).next().unwrap_or(raw);
        std::str::from_utf8(raw)
            .ok()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }

    fn compression(&self, index: usize, offset: usize) -> Result<Compression, FatbinError> {
        match self.flags & (FLAG_LZ4 | FLAG_ZSTD) {
            0 => Ok(Compression::None),
            FLAG_LZ4 => Ok(Compression::Lz4),
            FLAG_ZSTD => Ok(Compression::Zstd),
            _ => Err(FatbinError::UnknownCompression {
                index,
                offset,
                flags: self.flags,
            }),
        }
    }
}

impl Walk {
    /// The fatbin sections of an ELF file. Only the ELF header and section headers are
    /// parsed: symbols, relocations and dynamic data play no part and may be stripped.
    fn elf(&mut self, bytes: &[u8]) -> Result<(), FatbinError> {
        let elf_err = |e: goblin::error::Error| FatbinError::Elf {
            message: e.to_string(),
        };
        let header = Elf::parse_header(bytes).map_err(elf_err)?;
        let container =
            if header.e_ident[goblin::elf::header::EI_CLASS] == goblin::elf::header::ELFCLASS64 {
                Container::Big
            } else {
                Container::Little
            };
        let endian =
            if header.e_ident[goblin::elf::header::EI_DATA] == goblin::elf::header::ELFDATA2MSB {
                Endian::Big
            } else {
                Endian::Little
            };
        if header.e_machine == EM_CUDA {
            // A bare cubin: SASS of one architecture. The arch sits in e_flags bits 8..16
            // since ELF ABI version 8 (CUDA 12.x+), in bits 0..8 before.
            let abi = header.e_ident[goblin::elf::header::EI_ABIVERSION];
            let arch = if abi >= 8 {
                (header.e_flags >> 8) & 0xff
            } else {
                header.e_flags & 0xff
            };
            return Err(FatbinError::NoPtx {
                sass_archs: if arch == 0 { vec![] } else { vec![arch] },
            });
        }
        let ctx = Ctx::new(container, endian);
        let shoff = usize::try_from(header.e_shoff).map_err(|_| FatbinError::Elf {
            message: format!("section header offset {:#x} out of range", header.e_shoff),
        })?;
        let shdrs = SectionHeader::parse(bytes, shoff, usize::from(header.e_shnum), ctx)
            .map_err(elf_err)?;
        let shstrndx = usize::from(header.e_shstrndx);
        let names = match shdrs.get(shstrndx) {
            Some(sh) => {
                let (off, size) = section_range(bytes, sh, "section name table")?;
                Strtab::parse(bytes, off, size, 0).map_err(elf_err)?
            }
            None => {
                return Err(FatbinError::Elf {
                    message: format!("no section name table (e_shstrndx {shstrndx})"),
                })
            }
        };
        let mut found = false;
        for wanted in ELF_SECTIONS {
            for sh in &shdrs {
                if names.get_at(sh.sh_name) != Some(wanted) || sh.sh_type == SHT_NOBITS {
                    continue;
                }
                found = true;
                let (off, size) = section_range(bytes, sh, wanted)?;
                self.fatbins(bytes, off, off + size)?;
            }
        }
        if found {
            Ok(())
        } else {
            Err(FatbinError::NoDeviceCode)
        }
    }

    /// The fatbins in `bytes[start..end]`: one after another, with zero padding between
    /// (the linker aligns each object's fatbin to 8 bytes).
    fn fatbins(&mut self, bytes: &[u8], start: usize, end: usize) -> Result<(), FatbinError> {
        let region = &bytes[..end];
        let mut pos = start;
        while pos < end {
            if region[pos] == 0 {
                pos += 1;
                continue;
            }
            // The magic first, so that garbage reads as garbage, not as a short header.
            let magic = slice(region, pos, 4, "fatbin header")?;
            if magic != FATBIN_MAGIC {
                return Err(FatbinError::BadMagic {
                    offset: pos,
                    found: le32(magic, 0),
                });
            }
            let head = slice(region, pos, FATBIN_HEADER_MIN as u64, "fatbin header")?;
            let header_size = usize::from(le16(head, 6));
            if header_size < FATBIN_HEADER_MIN {
                return Err(FatbinError::BadHeader {
                    what: "fatbin header",
                    offset: pos,
                    reason: format!("header size {header_size} is below {FATBIN_HEADER_MIN}"),
                });
            }
            let entries_size = le64(head, 8);
            let first = pos + header_size;
            let entries = slice(region, first, entries_size, "fatbin entries")?;
            self.entries(bytes, first, entries.len())?;
            pos = first + entries.len();
        }
        Ok(())
    }

    /// The entries of one fatbin: `len` bytes at `start`.
    fn entries(&mut self, bytes: &[u8], start: usize, len: usize) -> Result<(), FatbinError> {
        let region = &bytes[..start + len];
        let mut pos = start;
        while pos < start + len {
            let fixed = slice(region, pos, ENTRY_HEADER_MIN as u64, "entry header")?;
            let h = EntryHeader::read(fixed);
            let header_size = h.size_or_offset as usize;
            if header_size < ENTRY_HEADER_MIN {
                return Err(FatbinError::BadHeader {
                    what: "entry header",
                    offset: pos,
                    reason: format!("header size {header_size} is below {ENTRY_HEADER_MIN}"),
                });
            }
            let header = slice(region, pos, header_size as u64, "entry header")?;
            let payload_at = pos + header_size;
            let payload = slice(region, payload_at, h.payload_size, "entry payload")?;
            match h.kind {
                KIND_CONCAT => self.concat(&h, header, payload, pos)?,
                kind => {
                    let index = self.images;
                    self.images += 1;
                    let compression = h.compression(index, pos)?;
                    if kind == KIND_PTX {
                        let data = decode(&h, compression, payload, index, pos)?;
                        self.push_ptx(&h, h.name(header), compression, &data, index, pos)?;
                    } else if kind == KIND_ELF {
                        self.push_sass(h.arch);
                    }
                }
            }
            pos = payload_at + payload.len();
        }
        Ok(())
    }

    /// A `--concat` entry: after the fixed header, a member count (u32) and the size of
    /// the member table including these two words (u32), then the member headers, all of
    /// one size. The payload unpacks to the members' bytes back to back.
    fn concat(
        &mut self,
        h: &EntryHeader,
        header: &[u8],
        payload: &[u8],
        offset: usize,
    ) -> Result<(), FatbinError> {
        let bad = |reason: String| FatbinError::BadHeader {
            what: "concatenated entry header",
            offset,
            reason,
        };
        let table = slice(header, ENTRY_HEADER_MIN, 8, "concatenated member table")
            .map_err(|_| bad("no member table".into()))?;
        let count = le32(table, 0) as usize;
        let table_size = le32(table, 4) as usize;
        let members = header
            .get(ENTRY_HEADER_MIN + 8..)
            .and_then(|rest| rest.get(..table_size.checked_sub(8)?))
            .ok_or_else(|| bad(format!("member table of {table_size} bytes does not fit")))?;
        if count == 0 || members.len() % count != 0 || members.len() / count < ENTRY_HEADER_MIN {
            return Err(bad(format!(
                "{count} members do not divide a {}-byte table into headers",
                members.len()
            )));
        }
        let member_size = members.len() / count;
        let index = self.images;
        let compression = h.compression(index, offset)?;
        let blob = decode(h, compression, payload, index, offset)?;
        for (i, member) in members.chunks_exact(member_size).enumerate() {
            let m = EntryHeader::read(member);
            let member_at = offset + ENTRY_HEADER_MIN + 8 + i * member_size;
            let index = self.images;
            self.images += 1;
            if m.compression(index, member_at)? != Compression::None {
                return Err(FatbinError::BadHeader {
                    what: "concatenated member header",
                    offset: member_at,
                    reason: "a member is compressed again inside the packed payload".into(),
                });
            }
            let data = slice(
                &blob,
                m.size_or_offset as usize,
                m.payload_size,
                "concatenated member",
            )
            .map_err(|e| match e {
                FatbinError::Truncated {
                    needed, available, ..
                } => FatbinError::Truncated {
                    what: "concatenated member (offset in the unpacked payload)",
                    offset: m.size_or_offset as usize,
                    needed,
                    available,
                },
                other => other,
            })?;
            if m.kind == KIND_PTX {
                self.push_ptx(&m, m.name(member), compression, data, index, member_at)?;
            } else if m.kind == KIND_ELF {
                self.push_sass(m.arch);
            }
        }
        Ok(())
    }

    fn push_ptx(
        &mut self,
        h: &EntryHeader,
        name: Option<String>,
        compression: Compression,
        data: &[u8],
        index: usize,
        offset: usize,
    ) -> Result<(), FatbinError> {
        let text_len = data.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        let ptx = std::str::from_utf8(&data[..text_len])
            .map_err(|e| FatbinError::NotText {
                index,
                offset,
                at: e.valid_up_to(),
            })?
            .to_string();
        self.ptx.push(PtxEntry {
            index,
            offset,
            arch: h.arch,
            isa_version: h.isa_version,
            name,
            compression,
            ptx,
        });
        Ok(())
    }

    fn push_sass(&mut self, arch: u32) {
        if !self.sass_archs.contains(&arch) {
            self.sass_archs.push(arch);
        }
    }
}

/// `sh_offset` and `sh_size` of a section as a range inside `bytes`.
fn section_range(
    bytes: &[u8],
    sh: &SectionHeader,
    name: &str,
) -> Result<(usize, usize), FatbinError> {
    let out = || FatbinError::SectionOutOfBounds {
        section: name.to_string(),
        offset: sh.sh_offset,
        size: sh.sh_size,
        file_len: bytes.len(),
    };
    let off = usize::try_from(sh.sh_offset).map_err(|_| out())?;
    let size = usize::try_from(sh.sh_size).map_err(|_| out())?;
    match off.checked_add(size) {
        Some(end) if end <= bytes.len() => Ok((off, size)),
        _ => Err(out()),
    }
}

/// The stored bytes of an image: the payload itself, or what it decompresses to. The
/// compressed length must fit the payload (which is padded), and the decompressed length
/// must be what the header says and within [`MAX_PTX_BYTES`].
fn decode<'a>(
    h: &EntryHeader,
    compression: Compression,
    payload: &'a [u8],
    index: usize,
    offset: usize,
) -> Result<Cow<'a, [u8]>, FatbinError> {
    if compression == Compression::None {
        return Ok(Cow::Borrowed(payload));
    }
    let compressed = payload
        .get(..h.compressed_size as usize)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| FatbinError::BadHeader {
            what: "entry header",
            offset,
            reason: format!(
                "compressed size {} does not fit the {}-byte payload",
                h.compressed_size,
                payload.len()
            ),
        })?;
    let expected = h.decompressed_size;
    let too_large = |limit| FatbinError::TooLarge {
        index,
        offset,
        size: expected,
        compressed: compressed.len() as u64,
        limit,
    };
    if expected > MAX_PTX_BYTES {
        return Err(too_large(MAX_PTX_BYTES));
    }
    let decompress_err = |message: String| FatbinError::Decompress {
        index,
        offset,
        codec: compression,
        message,
    };
    let out = if compression == Compression::Lz4 {
        let ratio_limit = (compressed.len() as u64).saturating_mul(LZ4_MAX_RATIO);
        if expected > ratio_limit {
            return Err(too_large(ratio_limit));
        }
        // Bounded just above: at most MAX_PTX_BYTES and 256 times the input.
        let mut out = vec![0u8; expected as usize];
        let n = lz4_flex::block::decompress_into(compressed, &mut out)
            .map_err(|e| decompress_err(e.to_string()))?;
        out.truncate(n);
        out
    } else {
        let decoder = ruzstd::decoding::StreamingDecoder::new(compressed)
            .map_err(|e| decompress_err(e.to_string()))?;
        // Read one byte past the expected size so that overlong data shows.
        let mut out = Vec::new();
        decoder
            .take(expected + 1)
            .read_to_end(&mut out)
            .map_err(|e| decompress_err(e.to_string()))?;
        out
    };
    if out.len() as u64 != expected {
        return Err(FatbinError::SizeMismatch {
            index,
            offset,
            expected,
            actual: out.len() as u64,
        });
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-entry fatbin holding `ptx` uncompressed, as fatbinary lays it out.
    fn fatbin_with(kind: u16, arch: u32, payload: &[u8]) -> Vec<u8> {
        let mut entry = vec![0u8; 0x40];
        entry[0..2].copy_from_slice(&kind.to_le_bytes());
        entry[4..8].copy_from_slice(&0x40u32.to_le_bytes());
        entry[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        entry[0x1c..0x20].copy_from_slice(&arch.to_le_bytes());
        entry[0x28..0x30].copy_from_slice(&0x11u64.to_le_bytes());
        entry.extend_from_slice(payload);
        let mut out = FATBIN_MAGIC.to_vec();
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&(entry.len() as u64).to_le_bytes());
        out.extend_from_slice(&entry);
        out
    }

    #[test]
    fn plain_ptx_entry() {
        let bin = fatbin_with(KIND_PTX, 80, b".version 8.0\n\0\0\0");
        let got = extract_ptx(&bin).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].arch, 80);
        assert_eq!(got[0].ptx, ".version 8.0\n");
        assert_eq!(got[0].compression, Compression::None);
        assert_eq!(got[0].offset, 16);
    }

    #[test]
    fn sass_only_lists_archs() {
        let bin = fatbin_with(KIND_ELF, 90, b"\x7fELF");
        let err = extract_ptx(&bin).unwrap_err();
        assert_eq!(
            err,
            FatbinError::NoPtx {
                sass_archs: vec![90]
            }
        );
        let msg = err.to_string();
        assert!(msg.contains("sm_90"), "{msg}");
        assert!(msg.contains("code=compute_90"), "{msg}");
    }

    #[test]
    fn detection() {
        assert!(is_container(&FATBIN_MAGIC));
        assert!(is_container(b"\x7fELF\x02"));
        assert!(!is_container(b"//\n.version 8.0"));
        assert!(matches!(
            extract_ptx(b".version"),
            Err(FatbinError::NotAContainer { .. })
        ));
    }

    #[test]
    fn huge_claims_are_refused_before_allocating() {
        let mut bin = fatbin_with(KIND_PTX, 90, &[0x10, 0x41, 0, 0, 0, 0, 0, 0]);
        let entry = 16;
        let flags = 0x11 | FLAG_LZ4;
        bin[entry + 0x28..entry + 0x30].copy_from_slice(&flags.to_le_bytes());
        bin[entry + 0x10..entry + 0x14].copy_from_slice(&2u32.to_le_bytes());
        bin[entry + 0x38..entry + 0x40].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(matches!(
            extract_ptx(&bin),
            Err(FatbinError::TooLarge { .. })
        ));
        bin[entry + 0x38..entry + 0x40].copy_from_slice(&(10_000u64).to_le_bytes());
        assert!(matches!(
            extract_ptx(&bin),
            Err(FatbinError::TooLarge { limit: 512, .. })
        ));
    }
}
