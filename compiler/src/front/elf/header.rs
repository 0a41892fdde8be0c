//! The ELF header and the section header table, checked against the file before goblin
//! parses it, so a bad one is reported by section index rather than as a bare "bad
//! offset".

use super::err;
use crate::front::LoadError;
use goblin::elf::{header, section_header as sh};

/// `EM_BPF`.
const EM_BPF: u16 = 247;
/// Bytes of an ELF64 section header (`e_shentsize` of every valid object).
const SHDR_SIZE: u64 = 64;

/// Checks the ELF header (class, byte order, machine, type) and that the section header
/// table and every section lie inside `bytes`.
pub(super) fn check_header(file: &str, bytes: &[u8]) -> Result<(), LoadError> {
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
