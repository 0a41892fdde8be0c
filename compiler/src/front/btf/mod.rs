//! The `.BTF` section: types, strings, BTF-defined maps and global-data sections.
//!
//! clang emits one `.BTF` section per object. It holds every type the program
//! mentions, the string table that `.BTF.ext` also points into, the `VAR`/`DATASEC`
//! entries that describe `.maps`, `.data`, `.rodata` and `.bss`, and one `FUNC` per
//! function. The loader uses it for three things:
//!
//! - **BTF-defined maps** ([`Btf::map_def`]): libbpf encodes every map attribute in
//!   the *type* of the map variable, not in its bytes (`__uint(max_entries, 16)` is
//!   `int (*max_entries)[16]`), so the map definitions can only be read from here.
//! - **global data** ([`Btf::datasec_vars`]): names, offsets, sizes and linkage of the
//!   variables in each data section.
//! - **function names and prototypes** ([`Btf::func_name`], [`Btf::func_proto`]) for
//!   `.BTF.ext` func info.
//!
//! Layout (all little-endian; big-endian BTF is rejected with [`BtfError::BigEndian`]):
//!
//! ```text
//! header (hdr_len bytes) | type section (type_off, type_len) | strings (str_off, str_len)
//! ```
//!
//! `type_off`/`str_off` count from the end of the header. Types are numbered from 1 in
//! file order; id 0 is `void`.
//!
//! Invariants after [`parse`] succeeds, so that accessors need not re-check them:
//! every name offset points at a NUL-terminated UTF-8 string of the string table, and
//! every type id a type refers to is `0..=types.len()`.
//!
//! **Relocations.** In an unlinked object clang leaves the offsets of *global*
//! variables in `DATASEC` entries as 0 and records their real value as a relocation
//! (`R_BPF_64_NODYLD32`, or `R_BPF_64_ABS32` for `const` data, against the variable's
//! symbol) in `.rel.BTF`; `static` variables are relocated against the section symbol
//! with their offset already in the field (clang 14 and 19 alike). `DATASEC` sizes
//! are 0 as well. The caller must run
//! [`apply_relocations`] on the section bytes before [`parse`] (or patch the offsets
//! from the symbol table the way libbpf does) and take each data section's size from
//! the ELF section header, not from [`BtfDatasec::size`].
//!
//! Every error is a [`BtfError`] that names the section and the byte offset inside
//! it; no input, however malformed, makes this module panic.

mod error;
mod lookup;
mod maps;
mod parse;
mod reloc;
mod types;

pub use error::BtfError;
pub use maps::BtfMapDef;
pub use parse::parse;
pub(crate) use parse::{parse_preamble, Reader};
pub use reloc::{apply_relocations, BtfReloc};
pub use types::{
    BtfDatasec, BtfEnumValue, BtfFuncProto, BtfHeader, BtfKind, BtfLinkage, BtfMember, BtfParam,
    BtfType, BtfVarSecInfo, DatasecVar,
};

/// Name of the section this module parses, used in error messages.
pub const BTF_SECTION: &str = ".BTF";
/// Name of the `.BTF.ext` section, used in error messages of `btf_ext`.
pub const BTF_EXT_SECTION: &str = ".BTF.ext";

/// `0xeB9F` as stored by a little-endian producer.
pub const BTF_MAGIC: u16 = 0xeb9f;
/// Size of the fixed `.BTF` header (`struct btf_header`).
const BTF_HEADER_LEN: u32 = 24;
/// Size of `struct btf_type` (name_off, info, size/type).
const BTF_TYPE_LEN: usize = 12;
/// Same limit as libbpf's `MAX_RESOLVE_DEPTH`: longer modifier/typedef chains are
/// treated as cycles.
const MAX_RESOLVE_DEPTH: usize = 32;
/// Size of a pointer on BPF, used by [`Btf::resolve_size`].
const PTR_SIZE: u32 = 8;

/// A parsed `.BTF` section. Owns its data, so it outlives the ELF buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Btf {
    header: BtfHeader,
    /// The string table (first and last byte are NUL).
    strings: Vec<u8>,
    /// Types in id order; `types[0]` is id 1.
    types: Vec<BtfType>,
}

impl Btf {
    fn get(&self, type_id: u32) -> Result<&BtfType, BtfError> {
        self.type_by_id(type_id).ok_or(BtfError::NoSuchType {
            section: BTF_SECTION,
            type_id,
        })
    }

    fn type_offset(&self, type_id: u32) -> usize {
        self.type_by_id(type_id).map_or(0, |t| t.offset)
    }
}

/// Reading the committed clang objects in tests (goblin), shared by the `btf_ext`
/// and `dwarf` tests.
#[cfg(test)]
pub(crate) mod test_elf;

#[cfg(test)]
mod tests;
