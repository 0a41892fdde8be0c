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

use std::fmt;

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

/// Everything that can go wrong while reading `.BTF` or `.BTF.ext`.
///
/// Each variant names the `section` (".BTF" or ".BTF.ext") and the byte `offset`
/// inside it where the problem was found, so that a report points at the bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BtfError {
    /// A read ran past the end of the section or of the region it belongs to.
    #[error("{section}+{offset:#x}: truncated: need {needed} bytes, {available} left")]
    Truncated {
        /// Section being read.
        section: &'static str,
        /// Where the read started.
        offset: usize,
        /// Bytes the read needed.
        needed: usize,
        /// Bytes left in the region.
        available: usize,
    },
    /// The magic is neither `0xeB9F` little- nor big-endian.
    #[error("{section}+{offset:#x}: bad magic {magic:#06x}, expected 0xeb9f")]
    BadMagic {
        /// Section being read.
        section: &'static str,
        /// Offset of the magic (0).
        offset: usize,
        /// The magic read as a little-endian `u16`.
        magic: u16,
    },
    /// The magic says the producer was big-endian; only little-endian is supported.
    #[error("{section}+{offset:#x}: big-endian BTF is not supported, only little-endian")]
    BigEndian {
        /// Section being read.
        section: &'static str,
        /// Offset of the magic (0).
        offset: usize,
    },
    /// The header's version is not 1.
    #[error("{section}+{offset:#x}: unsupported version {version}, expected 1")]
    UnsupportedVersion {
        /// Section being read.
        section: &'static str,
        /// Offset of the version byte.
        offset: usize,
        /// The version found.
        version: u8,
    },
    /// `hdr_len` is smaller than the fields this version of the format requires.
    #[error("{section}+{offset:#x}: header length {hdr_len} is smaller than {min}")]
    HeaderTooShort {
        /// Section being read.
        section: &'static str,
        /// Offset of the `hdr_len` field.
        offset: usize,
        /// The header length found.
        hdr_len: u32,
        /// The minimum accepted.
        min: u32,
    },
    /// A region named by the header does not lie inside the section.
    #[error(
        "{section}+{offset:#x}: {what} [{start:#x}, {start:#x}+{len:#x}) lies outside \
         the section ({size} bytes)"
    )]
    OutOfBounds {
        /// Section being read.
        section: &'static str,
        /// Offset of the header field that names the region.
        offset: usize,
        /// Which region ("type section", "string table", "func_info", ...).
        what: &'static str,
        /// Start of the region, from the start of the section.
        start: u64,
        /// Length of the region.
        len: u64,
        /// Size of the section.
        size: usize,
    },
    /// A region or record that must be 4-byte aligned is not.
    #[error("{section}+{offset:#x}: {what} ({value}) is not a multiple of 4")]
    Misaligned {
        /// Section being read.
        section: &'static str,
        /// Offset of the offending field.
        offset: usize,
        /// Which field.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// The string table is empty or does not start and end with a NUL byte.
    #[error("{section}+{offset:#x}: malformed string table: {reason}")]
    BadStringTable {
        /// Section being read.
        section: &'static str,
        /// Start of the string table.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A string offset points outside the string table or at non-UTF-8 bytes.
    #[error(
        "{section}+{offset:#x}: string offset {str_off} is not a valid string of the \
         .BTF string table ({str_len} bytes)"
    )]
    BadString {
        /// Section being read.
        section: &'static str,
        /// Offset of the field holding the string offset.
        offset: usize,
        /// The string offset.
        str_off: u32,
        /// Size of the string table.
        str_len: u32,
    },
    /// A type has a kind this parser does not know (0 or above 19).
    #[error("{section}+{offset:#x}: type [{type_id}] has unknown kind {kind}")]
    UnknownKind {
        /// Section being read.
        section: &'static str,
        /// Offset of the type.
        offset: usize,
        /// Id the type would have.
        type_id: u32,
        /// The kind found.
        kind: u8,
    },
    /// A type refers to a type id that does not exist.
    #[error("{section}+{offset:#x}: type [{type_id}] refers to type [{target}], but only {count} types exist")]
    BadTypeRef {
        /// Section being read.
        section: &'static str,
        /// Offset of the referring type.
        offset: usize,
        /// The referring type.
        type_id: u32,
        /// The missing type.
        target: u32,
        /// Number of types in the section.
        count: u32,
    },
    /// A type is well formed bytewise but breaks a rule of its kind.
    #[error("{section}+{offset:#x}: type [{type_id}] ({kind}): {reason}")]
    InvalidType {
        /// Section being read.
        section: &'static str,
        /// Offset of the type.
        offset: usize,
        /// The type.
        type_id: u32,
        /// Its kind.
        kind: &'static str,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// A type id given to an accessor does not exist (or is 0 where a type is needed).
    #[error("{section}: no type [{type_id}]")]
    NoSuchType {
        /// Section being read.
        section: &'static str,
        /// The id asked for.
        type_id: u32,
    },
    /// [`Btf::resolve_size`] reached a type without a size (void, func, fwd, ...).
    #[error("{section}+{offset:#x}: type [{type_id}] ({kind}) has no size")]
    Unsized {
        /// Section being read.
        section: &'static str,
        /// Offset of the unsized type (0 for void).
        offset: usize,
        /// The unsized type.
        type_id: u32,
        /// Its kind.
        kind: &'static str,
    },
    /// A chain of modifiers/typedefs/arrays is longer than the limit (likely a cycle).
    #[error("{section}+{offset:#x}: type chain from [{type_id}] is deeper than {limit} (cycle?)")]
    TooDeep {
        /// Section being read.
        section: &'static str,
        /// Offset of the type where resolution started.
        offset: usize,
        /// Where resolution started.
        type_id: u32,
        /// The depth limit.
        limit: usize,
    },
    /// The size of a type does not fit in `u32`.
    #[error("{section}+{offset:#x}: size of type [{type_id}] overflows u32")]
    SizeOverflow {
        /// Section being read.
        section: &'static str,
        /// Offset of the type.
        offset: usize,
        /// The type.
        type_id: u32,
    },
    /// A map variable's type is not a struct.
    #[error("{section}+{offset:#x}: map `{map}`: definition is a {kind}, expected a struct")]
    MapNotStruct {
        /// Section being read.
        section: &'static str,
        /// Offset of the map's type.
        offset: usize,
        /// Map name.
        map: String,
        /// Kind found instead of struct.
        kind: &'static str,
    },
    /// A map definition has a member libbpf conventions do not define.
    #[error("{section}+{offset:#x}: map `{map}`: unknown member `{member}`")]
    UnknownMapMember {
        /// Section being read.
        section: &'static str,
        /// Offset of the map's struct type.
        offset: usize,
        /// Map name.
        map: String,
        /// The member's name.
        member: String,
    },
    /// A map member does not have the shape its name requires.
    #[error("{section}+{offset:#x}: map `{map}`: member `{member}` must be {expected}")]
    BadMapMember {
        /// Section being read.
        section: &'static str,
        /// Offset of the map's struct type.
        offset: usize,
        /// Map name.
        map: String,
        /// The member's name.
        member: String,
        /// The shape expected, e.g. "`int (*name)[N]`".
        expected: &'static str,
    },
    /// `key_size`/`value_size` disagree with the size of the `key`/`value` type.
    #[error("{section}+{offset:#x}: map `{map}`: {field}_size is {declared} but the {field} type has {actual} bytes")]
    MapSizeMismatch {
        /// Section being read.
        section: &'static str,
        /// Offset of the map's struct type.
        offset: usize,
        /// Map name.
        map: String,
        /// "key" or "value".
        field: &'static str,
        /// The explicit size.
        declared: u32,
        /// The size of the type.
        actual: u32,
    },
    /// A map definition without a `type` member.
    #[error("{section}+{offset:#x}: map `{map}`: missing member `type`")]
    MissingMapType {
        /// Section being read.
        section: &'static str,
        /// Offset of the map's struct type.
        offset: usize,
        /// Map name.
        map: String,
    },
    /// A map uses a feature bpf2ptx does not support yet.
    #[error("{section}+{offset:#x}: map `{map}`: {feature} is not supported yet")]
    Unsupported {
        /// Section being read.
        section: &'static str,
        /// Offset of the map's struct type.
        offset: usize,
        /// Map name.
        map: String,
        /// What is unsupported.
        feature: &'static str,
    },
    /// A `.BTF.ext` record size is smaller than the record this parser knows.
    #[error("{section}+{offset:#x}: {what} record size {rec_size} is smaller than {min}")]
    RecordTooSmall {
        /// Section being read.
        section: &'static str,
        /// Offset of the record-size field.
        offset: usize,
        /// "func_info", "line_info" or "core_relo".
        what: &'static str,
        /// The size found.
        rec_size: u32,
        /// The minimum.
        min: u32,
    },
    /// A `.BTF.ext` func_info record names a type that is not a `FUNC`.
    #[error("{section}+{offset:#x}: func_info refers to type [{type_id}], which is not a func")]
    NotAFunc {
        /// Section being read.
        section: &'static str,
        /// Offset of the record.
        offset: usize,
        /// The type id in the record.
        type_id: u32,
    },
    /// A relocation points outside the section or its result does not fit 32 bits.
    #[error("{section}+{offset:#x}: cannot apply relocation: {reason}")]
    BadRelocation {
        /// Section being relocated.
        section: &'static str,
        /// Offset of the relocated field.
        offset: u64,
        /// What is wrong.
        reason: &'static str,
    },
}

/// The `.BTF` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BtfHeader {
    /// Format version (always 1).
    pub version: u8,
    /// Header flags (0 in every producer so far; kept, not interpreted).
    pub flags: u8,
    /// Header length; the type and string sections are relative to its end.
    pub hdr_len: u32,
    /// Offset of the type section after the header.
    pub type_off: u32,
    /// Length of the type section.
    pub type_len: u32,
    /// Offset of the string table after the header.
    pub str_off: u32,
    /// Length of the string table.
    pub str_len: u32,
}

/// Linkage of a `FUNC` (encoded in its vlen) or a `VAR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BtfLinkage {
    /// `static`: local to the object.
    Static,
    /// Global and defined here (`BTF_FUNC_GLOBAL` / `BTF_VAR_GLOBAL_ALLOCATED`).
    Global,
    /// Declared `extern`, defined elsewhere (kconfig, ksyms, other objects).
    Extern,
}

impl BtfLinkage {
    fn from_raw(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Static),
            1 => Some(Self::Global),
            2 => Some(Self::Extern),
            _ => None,
        }
    }
}

/// A member of a `STRUCT` or `UNION`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtfMember {
    /// Name offset in the string table (0 for anonymous members).
    pub name_off: u32,
    /// Type of the member.
    pub type_id: u32,
    /// Offset from the start of the struct, in bits.
    pub bit_offset: u32,
    /// Bitfield width in bits, 0 for a plain member (only encoded when the struct's
    /// kind_flag is set).
    pub bitfield_size: u8,
}

/// A named value of an `ENUM` or `ENUM64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtfEnumValue {
    /// Name offset in the string table.
    pub name_off: u32,
    /// The value's bits; a signed 32-bit `ENUM` value is sign-extended.
    pub value: u64,
}

/// A parameter of a `FUNC_PROTO`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtfParam {
    /// Name offset in the string table (0 in prototypes without names).
    pub name_off: u32,
    /// Type of the parameter; 0 for the trailing `...` of a variadic prototype.
    pub type_id: u32,
}

/// A `FUNC_PROTO`: return type and parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtfFuncProto {
    /// Return type (0 for void).
    pub ret_type_id: u32,
    /// Parameters, in order.
    pub params: Vec<BtfParam>,
}

/// One entry of a `DATASEC`: a variable and where it lives in the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BtfVarSecInfo {
    /// Id of the `VAR` (or `FUNC` for `.ksyms`).
    pub type_id: u32,
    /// Offset in the ELF section (0 for globals until `.rel.BTF` is applied).
    pub offset: u32,
    /// Size of the variable.
    pub size: u32,
}

/// A `DATASEC`: the variables of one ELF section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtfDatasec {
    /// Section size; clang writes 0 here, use the ELF section header instead.
    pub size: u32,
    /// The variables, in file order.
    pub vars: Vec<BtfVarSecInfo>,
}

/// One BTF kind with its trailing data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BtfKind {
    /// `BTF_KIND_INT` (1).
    Int {
        /// Size in bytes.
        size: u32,
        /// `BTF_INT_SIGNED` (1) | `BTF_INT_CHAR` (2) | `BTF_INT_BOOL` (4).
        encoding: u8,
        /// Bit offset of the value inside the storage.
        bit_offset: u8,
        /// Number of value bits.
        bits: u8,
    },
    /// `BTF_KIND_PTR` (2).
    Ptr {
        /// Pointee type.
        type_id: u32,
    },
    /// `BTF_KIND_ARRAY` (3).
    Array {
        /// Element type.
        elem_type_id: u32,
        /// Index type.
        index_type_id: u32,
        /// Number of elements.
        nelems: u32,
    },
    /// `BTF_KIND_STRUCT` (4).
    Struct {
        /// Size in bytes.
        size: u32,
        /// Members in order.
        members: Vec<BtfMember>,
    },
    /// `BTF_KIND_UNION` (5).
    Union {
        /// Size in bytes.
        size: u32,
        /// Members in order.
        members: Vec<BtfMember>,
    },
    /// `BTF_KIND_ENUM` (6), 32-bit values.
    Enum {
        /// Size in bytes.
        size: u32,
        /// Whether the values are signed (kind_flag).
        signed: bool,
        /// The values.
        values: Vec<BtfEnumValue>,
    },
    /// `BTF_KIND_FWD` (7).
    Fwd {
        /// Forward declaration of a union rather than a struct.
        is_union: bool,
    },
    /// `BTF_KIND_TYPEDEF` (8).
    Typedef {
        /// Aliased type.
        type_id: u32,
    },
    /// `BTF_KIND_VOLATILE` (9).
    Volatile {
        /// Qualified type.
        type_id: u32,
    },
    /// `BTF_KIND_CONST` (10).
    Const {
        /// Qualified type.
        type_id: u32,
    },
    /// `BTF_KIND_RESTRICT` (11).
    Restrict {
        /// Qualified type.
        type_id: u32,
    },
    /// `BTF_KIND_FUNC` (12).
    Func {
        /// The `FUNC_PROTO`.
        proto_type_id: u32,
        /// Linkage (vlen of the type).
        linkage: BtfLinkage,
    },
    /// `BTF_KIND_FUNC_PROTO` (13).
    FuncProto(BtfFuncProto),
    /// `BTF_KIND_VAR` (14).
    Var {
        /// Type of the variable.
        type_id: u32,
        /// Linkage.
        linkage: BtfLinkage,
    },
    /// `BTF_KIND_DATASEC` (15).
    Datasec(BtfDatasec),
    /// `BTF_KIND_FLOAT` (16).
    Float {
        /// Size in bytes.
        size: u32,
    },
    /// `BTF_KIND_DECL_TAG` (17).
    DeclTag {
        /// Tagged type.
        type_id: u32,
        /// Member/parameter index, or -1 for the type itself.
        component_idx: i32,
    },
    /// `BTF_KIND_TYPE_TAG` (18).
    TypeTag {
        /// Tagged type.
        type_id: u32,
    },
    /// `BTF_KIND_ENUM64` (19).
    Enum64 {
        /// Size in bytes.
        size: u32,
        /// Whether the values are signed (kind_flag).
        signed: bool,
        /// The values.
        values: Vec<BtfEnumValue>,
    },
}

impl BtfKind {
    /// The kind's name as bpftool prints it, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Int { .. } => "int",
            Self::Ptr { .. } => "ptr",
            Self::Array { .. } => "array",
            Self::Struct { .. } => "struct",
            Self::Union { .. } => "union",
            Self::Enum { .. } => "enum",
            Self::Fwd { .. } => "fwd",
            Self::Typedef { .. } => "typedef",
            Self::Volatile { .. } => "volatile",
            Self::Const { .. } => "const",
            Self::Restrict { .. } => "restrict",
            Self::Func { .. } => "func",
            Self::FuncProto(_) => "func_proto",
            Self::Var { .. } => "var",
            Self::Datasec(_) => "datasec",
            Self::Float { .. } => "float",
            Self::DeclTag { .. } => "decl_tag",
            Self::TypeTag { .. } => "type_tag",
            Self::Enum64 { .. } => "enum64",
        }
    }

    /// Calls `f` on every type id this kind refers to (including 0 = void), so that
    /// validation and future walkers share one list.
    fn for_each_ref(&self, mut f: impl FnMut(u32)) {
        match self {
            Self::Int { .. }
            | Self::Fwd { .. }
            | Self::Float { .. }
            | Self::Enum { .. }
            | Self::Enum64 { .. } => {}
            Self::Ptr { type_id }
            | Self::Typedef { type_id }
            | Self::Volatile { type_id }
            | Self::Const { type_id }
            | Self::Restrict { type_id }
            | Self::Var { type_id, .. }
            | Self::DeclTag { type_id, .. }
            | Self::TypeTag { type_id } => f(*type_id),
            Self::Array {
                elem_type_id,
                index_type_id,
                ..
            } => {
                f(*elem_type_id);
                f(*index_type_id);
            }
            Self::Struct { members, .. } | Self::Union { members, .. } => {
                members.iter().for_each(|m| f(m.type_id))
            }
            Self::Func { proto_type_id, .. } => f(*proto_type_id),
            Self::FuncProto(p) => {
                f(p.ret_type_id);
                p.params.iter().for_each(|p| f(p.type_id));
            }
            Self::Datasec(d) => d.vars.iter().for_each(|v| f(v.type_id)),
        }
    }

    /// Calls `f` on every string offset inside the trailing data (member, parameter
    /// and enumerator names), with the byte offset of the field relative to the start
    /// of the type record.
    fn for_each_inner_name(&self, mut f: impl FnMut(u32, usize)) {
        let base = BTF_TYPE_LEN;
        match self {
            Self::Struct { members, .. } | Self::Union { members, .. } => {
                for (i, m) in members.iter().enumerate() {
                    f(m.name_off, base + i * 12);
                }
            }
            Self::Enum { values, .. } => {
                for (i, v) in values.iter().enumerate() {
                    f(v.name_off, base + i * 8);
                }
            }
            Self::Enum64 { values, .. } => {
                for (i, v) in values.iter().enumerate() {
                    f(v.name_off, base + i * 12);
                }
            }
            Self::FuncProto(p) => {
                for (i, p) in p.params.iter().enumerate() {
                    f(p.name_off, base + i * 8);
                }
            }
            _ => {}
        }
    }
}

/// One type of the type section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BtfType {
    /// Name offset in the string table (0 = anonymous).
    pub name_off: u32,
    /// Byte offset of the type record in the `.BTF` section, for error messages.
    pub offset: usize,
    /// The kind and its data.
    pub kind: BtfKind,
}

/// A variable of a data section, as the global-data loader needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasecVar<'a> {
    /// Variable name.
    pub name: &'a str,
    /// Id of the `VAR` type.
    pub var_type_id: u32,
    /// Type of the variable (the `VAR`'s referenced type).
    pub type_id: u32,
    /// Offset in the ELF section.
    pub offset: u32,
    /// Size in bytes.
    pub size: u32,
    /// `static` or global (or extern, for `.kconfig`/`.ksyms`).
    pub linkage: BtfLinkage,
}

/// A BTF-defined map (`struct { __uint(type, ...); ... } name SEC(".maps")`),
/// decoded the way libbpf's `parse_btf_map_def` does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BtfMapDef {
    /// `type`: `BPF_MAP_TYPE_*`.
    pub map_type: u32,
    /// Key size from `key_size` or the size of the `key` type; `None` when neither
    /// is given (ringbuf, perf event array).
    pub key_size: Option<u32>,
    /// Value size from `value_size` or the size of the `value` type.
    pub value_size: Option<u32>,
    /// BTF id of the key type when given with `__type(key, T)`.
    pub key_type_id: Option<u32>,
    /// BTF id of the value type when given with `__type(value, T)`.
    pub value_type_id: Option<u32>,
    /// `max_entries` (0 when absent).
    pub max_entries: u32,
    /// `map_flags` (`BPF_F_*`).
    pub map_flags: u32,
    /// `numa_node`.
    pub numa_node: u32,
    /// `map_extra` (bloom filter hashes, arena address, ...).
    pub map_extra: u64,
    /// `pinning` (`LIBBPF_PIN_NONE` 0 / `LIBBPF_PIN_BY_NAME` 1).
    pub pinning: u32,
}

/// A parsed `.BTF` section. Owns its data, so it outlives the ELF buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Btf {
    header: BtfHeader,
    /// The string table (first and last byte are NUL).
    strings: Vec<u8>,
    /// Types in id order; `types[0]` is id 1.
    types: Vec<BtfType>,
}

/// A REL-style relocation of a 32-bit field in `.BTF` or `.BTF.ext`
/// (`R_BPF_64_ABS32` = 3 or `R_BPF_64_NODYLD32` = 4; both write `S + A` into 4 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BtfReloc {
    /// Offset of the 32-bit field in the section (`r_offset`).
    pub offset: u64,
    /// Value of the relocation's symbol (`st_value`: the variable's offset in its
    /// section, or 0 for a section symbol).
    pub symbol_value: u64,
}

/// Applies `.rel.BTF` or `.rel.BTF.ext` relocations to the raw section bytes.
///
/// REL objects keep the addend in the field, so each field becomes
/// `field + symbol_value`. For `.BTF` this fills in the `DATASEC` offsets of global
/// variables (clang leaves them 0); for `.BTF.ext` the relocations target section
/// symbols (value 0), so applying them changes nothing but is harmless. `section` is
/// the name used in errors ([`BTF_SECTION`] or [`BTF_EXT_SECTION`]).
pub fn apply_relocations(
    section: &'static str,
    data: &mut [u8],
    relocs: &[BtfReloc],
) -> Result<(), BtfError> {
    for r in relocs {
        let bad = |reason| BtfError::BadRelocation {
            section,
            offset: r.offset,
            reason,
        };
        let start = usize::try_from(r.offset).map_err(|_| bad("offset outside the section"))?;
        let field = start
            .checked_add(4)
            .and_then(|end| data.get_mut(start..end))
            .ok_or_else(|| bad("offset outside the section"))?;
        let old = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
        let new = u64::from(old)
            .checked_add(r.symbol_value)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| bad("result does not fit in 32 bits"))?;
        field.copy_from_slice(&new.to_le_bytes());
    }
    Ok(())
}

/// Bounds-checked little-endian reads that report `section`+offset on failure.
/// `end` is the end of the region being read (type section, record, ...), which may
/// be shorter than the slice.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) section: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn bytes(&self, pos: usize, len: usize, end: usize) -> Result<&'a [u8], BtfError> {
        let end = end.min(self.data.len());
        match pos.checked_add(len) {
            Some(stop) if stop <= end => Ok(&self.data[pos..stop]),
            _ => Err(BtfError::Truncated {
                section: self.section,
                offset: pos,
                needed: len,
                available: end.saturating_sub(pos),
            }),
        }
    }

    pub(crate) fn u32(&self, pos: usize, end: usize) -> Result<u32, BtfError> {
        let b = self.bytes(pos, 4, end)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u16(&self, pos: usize, end: usize) -> Result<u16, BtfError> {
        let b = self.bytes(pos, 2, end)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u8(&self, pos: usize, end: usize) -> Result<u8, BtfError> {
        Ok(self.bytes(pos, 1, end)?[0])
    }

    /// Checks that `[base + off, base + off + len)` lies in the section and returns it
    /// as a `usize` range. `field` is the offset of the header field naming it.
    pub(crate) fn region(
        &self,
        what: &'static str,
        field: usize,
        base: u64,
        off: u32,
        len: u32,
    ) -> Result<(usize, usize), BtfError> {
        let start = base + u64::from(off);
        let stop = start + u64::from(len);
        if stop > self.data.len() as u64 {
            return Err(BtfError::OutOfBounds {
                section: self.section,
                offset: field,
                what,
                start,
                len: u64::from(len),
                size: self.data.len(),
            });
        }
        // Both fit in usize: they are at most data.len().
        Ok((start as usize, stop as usize))
    }
}

/// Reads the common `magic, version, flags, hdr_len` prefix of `.BTF` and `.BTF.ext`
/// and returns `(flags, hdr_len)`.
pub(crate) fn parse_preamble(r: &Reader<'_>, min_hdr_len: u32) -> Result<(u8, u8, u32), BtfError> {
    let len = r.data.len();
    let magic = r.u16(0, len)?;
    if magic == BTF_MAGIC.swap_bytes() {
        return Err(BtfError::BigEndian {
            section: r.section,
            offset: 0,
        });
    }
    if magic != BTF_MAGIC {
        return Err(BtfError::BadMagic {
            section: r.section,
            offset: 0,
            magic,
        });
    }
    let version = r.u8(2, len)?;
    if version != 1 {
        return Err(BtfError::UnsupportedVersion {
            section: r.section,
            offset: 2,
            version,
        });
    }
    let flags = r.u8(3, len)?;
    let hdr_len = r.u32(4, len)?;
    if hdr_len < min_hdr_len {
        return Err(BtfError::HeaderTooShort {
            section: r.section,
            offset: 4,
            hdr_len,
            min: min_hdr_len,
        });
    }
    if u64::from(hdr_len) > len as u64 {
        return Err(BtfError::OutOfBounds {
            section: r.section,
            offset: 4,
            what: "header",
            start: 0,
            len: u64::from(hdr_len),
            size: len,
        });
    }
    Ok((version, flags, hdr_len))
}

/// Parses a `.BTF` section (the raw bytes, after [`apply_relocations`] if the caller
/// wants `DATASEC` offsets of global variables).
pub fn parse(data: &[u8]) -> Result<Btf, BtfError> {
    let r = Reader {
        data,
        section: BTF_SECTION,
    };
    let (version, flags, hdr_len) = parse_preamble(&r, BTF_HEADER_LEN)?;
    let len = data.len();
    let header = BtfHeader {
        version,
        flags,
        hdr_len,
        type_off: r.u32(8, len)?,
        type_len: r.u32(12, len)?,
        str_off: r.u32(16, len)?,
        str_len: r.u32(20, len)?,
    };
    let base = u64::from(hdr_len);
    let (type_start, type_end) =
        r.region("type section", 8, base, header.type_off, header.type_len)?;
    let (str_start, str_end) =
        r.region("string table", 16, base, header.str_off, header.str_len)?;
    if header.type_off & 3 != 0 {
        return Err(BtfError::Misaligned {
            section: BTF_SECTION,
            offset: 8,
            what: "type_off",
            value: u64::from(header.type_off),
        });
    }
    if u64::from(header.type_off) + u64::from(header.type_len) > u64::from(header.str_off) {
        // libbpf requires the type section to precede the string table.
        return Err(BtfError::OutOfBounds {
            section: BTF_SECTION,
            offset: 8,
            what: "type section (must end before the string table)",
            start: base + u64::from(header.type_off),
            len: u64::from(header.type_len),
            size: str_start,
        });
    }
    let strings = &data[str_start..str_end];
    let bad_table = |reason| BtfError::BadStringTable {
        section: BTF_SECTION,
        offset: str_start,
        reason,
    };
    match (strings.first(), strings.last()) {
        (None, _) => return Err(bad_table("empty")),
        (Some(&first), _) if first != 0 => return Err(bad_table("does not start with a NUL byte")),
        (_, Some(&last)) if last != 0 => return Err(bad_table("does not end with a NUL byte")),
        _ => {}
    }

    let mut types = Vec::new();
    let mut pos = type_start;
    while pos < type_end {
        let type_id = u32::try_from(types.len() + 1).unwrap_or(u32::MAX);
        let (ty, next) = parse_type(&r, pos, type_end, type_id)?;
        types.push(ty);
        pos = next;
    }

    let btf = Btf {
        header,
        strings: strings.to_vec(),
        types,
    };
    btf.validate()?;
    Ok(btf)
}

/// Parses the type record at `pos` and returns it with the offset of the next one.
fn parse_type(
    r: &Reader<'_>,
    pos: usize,
    end: usize,
    type_id: u32,
) -> Result<(BtfType, usize), BtfError> {
    let name_off = r.u32(pos, end)?;
    let info = r.u32(pos + 4, end)?;
    let size_or_type = r.u32(pos + 8, end)?;
    let vlen = (info & 0xffff) as usize;
    let kind_raw = ((info >> 24) & 0x1f) as u8;
    let kflag = info >> 31 != 0;
    let data = pos + BTF_TYPE_LEN;
    // Trailing bytes per kind; checked in one piece before any allocation so a huge
    // vlen in a short section fails fast.
    let trailing = match kind_raw {
        1 | 14 | 17 => 4,
        3 => 12,
        4 | 5 | 19 => 12 * vlen,
        6 | 13 => 8 * vlen,
        15 => 12 * vlen,
        2 | 7..=12 | 16 | 18 => 0,
        _ => {
            return Err(BtfError::UnknownKind {
                section: r.section,
                offset: pos,
                type_id,
                kind: kind_raw,
            })
        }
    };
    r.bytes(data, trailing, end)?;
    let next = data + trailing;
    let invalid = |reason| BtfError::InvalidType {
        section: r.section,
        offset: pos,
        type_id,
        kind: kind_name(kind_raw),
        reason,
    };
    let kind = match kind_raw {
        1 => {
            let v = r.u32(data, end)?;
            let bits = v & 0xff;
            let bit_offset = (v >> 16) & 0xff;
            if bits > 128 {
                return Err(invalid("more than 128 bits"));
            }
            BtfKind::Int {
                size: size_or_type,
                encoding: ((v >> 24) & 0x0f) as u8,
                bit_offset: bit_offset as u8,
                bits: bits as u8,
            }
        }
        2 => BtfKind::Ptr {
            type_id: size_or_type,
        },
        3 => BtfKind::Array {
            elem_type_id: r.u32(data, end)?,
            index_type_id: r.u32(data + 4, end)?,
            nelems: r.u32(data + 8, end)?,
        },
        4 | 5 => {
            let mut members = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let m = data + i * 12;
                let raw_off = r.u32(m + 8, end)?;
                let (bit_offset, bitfield_size) = if kflag {
                    (raw_off & 0x00ff_ffff, (raw_off >> 24) as u8)
                } else {
                    (raw_off, 0)
                };
                members.push(BtfMember {
                    name_off: r.u32(m, end)?,
                    type_id: r.u32(m + 4, end)?,
                    bit_offset,
                    bitfield_size,
                });
            }
            if kind_raw == 4 {
                BtfKind::Struct {
                    size: size_or_type,
                    members,
                }
            } else {
                BtfKind::Union {
                    size: size_or_type,
                    members,
                }
            }
        }
        6 => {
            let mut values = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let e = data + i * 8;
                let raw = r.u32(e + 4, end)?;
                let value = if kflag {
                    raw as i32 as i64 as u64
                } else {
                    u64::from(raw)
                };
                values.push(BtfEnumValue {
                    name_off: r.u32(e, end)?,
                    value,
                });
            }
            BtfKind::Enum {
                size: size_or_type,
                signed: kflag,
                values,
            }
        }
        7 => BtfKind::Fwd { is_union: kflag },
        8 => BtfKind::Typedef {
            type_id: size_or_type,
        },
        9 => BtfKind::Volatile {
            type_id: size_or_type,
        },
        10 => BtfKind::Const {
            type_id: size_or_type,
        },
        11 => BtfKind::Restrict {
            type_id: size_or_type,
        },
        12 => BtfKind::Func {
            proto_type_id: size_or_type,
            linkage: BtfLinkage::from_raw(vlen as u32).ok_or_else(|| invalid("bad linkage"))?,
        },
        13 => {
            let mut params = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let p = data + i * 8;
                params.push(BtfParam {
                    name_off: r.u32(p, end)?,
                    type_id: r.u32(p + 4, end)?,
                });
            }
            BtfKind::FuncProto(BtfFuncProto {
                ret_type_id: size_or_type,
                params,
            })
        }
        14 => BtfKind::Var {
            type_id: size_or_type,
            linkage: BtfLinkage::from_raw(r.u32(data, end)?)
                .ok_or_else(|| invalid("bad linkage"))?,
        },
        15 => {
            let mut vars = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let v = data + i * 12;
                vars.push(BtfVarSecInfo {
                    type_id: r.u32(v, end)?,
                    offset: r.u32(v + 4, end)?,
                    size: r.u32(v + 8, end)?,
                });
            }
            BtfKind::Datasec(BtfDatasec {
                size: size_or_type,
                vars,
            })
        }
        16 => BtfKind::Float { size: size_or_type },
        17 => BtfKind::DeclTag {
            type_id: size_or_type,
            component_idx: r.u32(data, end)? as i32,
        },
        18 => BtfKind::TypeTag {
            type_id: size_or_type,
        },
        19 => {
            let mut values = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let e = data + i * 12;
                let lo = r.u32(e + 4, end)?;
                let hi = r.u32(e + 8, end)?;
                values.push(BtfEnumValue {
                    name_off: r.u32(e, end)?,
                    value: u64::from(hi) << 32 | u64::from(lo),
                });
            }
            BtfKind::Enum64 {
                size: size_or_type,
                signed: kflag,
                values,
            }
        }
        // Unreachable: unknown kinds returned above; keep an error rather than panic.
        _ => {
            return Err(BtfError::UnknownKind {
                section: r.section,
                offset: pos,
                type_id,
                kind: kind_raw,
            })
        }
    };
    Ok((
        BtfType {
            name_off,
            offset: pos,
            kind,
        },
        next,
    ))
}

/// Kind names by raw kind number, for errors raised before a [`BtfKind`] exists.
fn kind_name(kind: u8) -> &'static str {
    const NAMES: [&str; 20] = [
        "unknown",
        "int",
        "ptr",
        "array",
        "struct",
        "union",
        "enum",
        "fwd",
        "typedef",
        "volatile",
        "const",
        "restrict",
        "func",
        "func_proto",
        "var",
        "datasec",
        "float",
        "decl_tag",
        "type_tag",
        "enum64",
    ];
    NAMES.get(usize::from(kind)).copied().unwrap_or("unknown")
}

impl Btf {
    /// Checks the invariants the accessors rely on (see the module doc).
    fn validate(&self) -> Result<(), BtfError> {
        let count = u32::try_from(self.types.len()).unwrap_or(u32::MAX);
        for (i, t) in self.types.iter().enumerate() {
            let type_id = i as u32 + 1;
            self.check_string(t.name_off, t.offset)?;
            let mut res = Ok(());
            t.kind.for_each_inner_name(|off, rel| {
                if res.is_ok() {
                    res = self.check_string(off, t.offset + rel);
                }
            });
            res?;
            let mut res = Ok(());
            t.kind.for_each_ref(|target| {
                if res.is_ok() && target > count {
                    res = Err(BtfError::BadTypeRef {
                        section: BTF_SECTION,
                        offset: t.offset,
                        type_id,
                        target,
                        count,
                    });
                }
            });
            res?;
        }
        Ok(())
    }

    fn check_string(&self, str_off: u32, offset: usize) -> Result<(), BtfError> {
        match self.string_at(str_off) {
            Some(_) => Ok(()),
            None => Err(BtfError::BadString {
                section: BTF_SECTION,
                offset,
                str_off,
                str_len: self.header.str_len,
            }),
        }
    }

    /// The header.
    pub fn header(&self) -> &BtfHeader {
        &self.header
    }

    /// All types; index `i` holds type id `i + 1`.
    pub fn types(&self) -> &[BtfType] {
        &self.types
    }

    /// The string at `offset` in the string table, or `None` if `offset` is outside
    /// the table or the bytes are not UTF-8. Offset 0 is the empty string.
    pub fn string_at(&self, offset: u32) -> Option<&str> {
        let rest = self.strings.get(usize::try_from(offset).ok()?..)?;
        let nul = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..nul]).ok()
    }

    /// The type with id `type_id`; `None` for 0 (void) and ids past the end.
    pub fn type_by_id(&self, type_id: u32) -> Option<&BtfType> {
        let index = usize::try_from(type_id).ok()?.checked_sub(1)?;
        self.types.get(index)
    }

    /// The name of type `type_id`; `None` if it is anonymous or does not exist.
    pub fn name(&self, type_id: u32) -> Option<&str> {
        let t = self.type_by_id(type_id)?;
        self.string_at(t.name_off).filter(|s| !s.is_empty())
    }

    fn get(&self, type_id: u32) -> Result<&BtfType, BtfError> {
        self.type_by_id(type_id).ok_or(BtfError::NoSuchType {
            section: BTF_SECTION,
            type_id,
        })
    }

    fn type_offset(&self, type_id: u32) -> usize {
        self.type_by_id(type_id).map_or(0, |t| t.offset)
    }

    /// Follows `typedef`, `const`, `volatile`, `restrict` and `type_tag` from
    /// `type_id` and returns the first other type id (possibly 0 = void), like
    /// libbpf's `skip_mods_and_typedefs`.
    pub fn skip_modifiers(&self, type_id: u32) -> Result<u32, BtfError> {
        let mut id = type_id;
        for _ in 0..MAX_RESOLVE_DEPTH {
            match self.type_by_id(id).map(|t| &t.kind) {
                Some(
                    BtfKind::Typedef { type_id }
                    | BtfKind::Const { type_id }
                    | BtfKind::Volatile { type_id }
                    | BtfKind::Restrict { type_id }
                    | BtfKind::TypeTag { type_id },
                ) => id = *type_id,
                _ => return Ok(id),
            }
        }
        Err(BtfError::TooDeep {
            section: BTF_SECTION,
            offset: self.type_offset(type_id),
            type_id,
            limit: MAX_RESOLVE_DEPTH,
        })
    }

    /// Size in bytes of a value of type `type_id`, like libbpf's `btf__resolve_size`:
    /// modifiers, typedefs, vars and tags are followed, pointers are 8 bytes, arrays
    /// are `nelems * element size`. Void, functions and forward declarations have no
    /// size ([`BtfError::Unsized`]); a chain deeper than 32 is reported as a cycle.
    pub fn resolve_size(&self, type_id: u32) -> Result<u32, BtfError> {
        let mut id = type_id;
        let mut nelems: u64 = 1;
        let overflow = || BtfError::SizeOverflow {
            section: BTF_SECTION,
            offset: self.type_offset(type_id),
            type_id,
        };
        for _ in 0..MAX_RESOLVE_DEPTH {
            let Some(t) = self.type_by_id(id) else {
                return Err(BtfError::Unsized {
                    section: BTF_SECTION,
                    offset: self.type_offset(type_id),
                    type_id: id,
                    kind: "void",
                });
            };
            let size = match &t.kind {
                BtfKind::Int { size, .. }
                | BtfKind::Struct { size, .. }
                | BtfKind::Union { size, .. }
                | BtfKind::Enum { size, .. }
                | BtfKind::Enum64 { size, .. }
                | BtfKind::Float { size }
                | BtfKind::Datasec(BtfDatasec { size, .. }) => *size,
                BtfKind::Ptr { .. } => PTR_SIZE,
                BtfKind::Typedef { type_id }
                | BtfKind::Const { type_id }
                | BtfKind::Volatile { type_id }
                | BtfKind::Restrict { type_id }
                | BtfKind::TypeTag { type_id }
                | BtfKind::DeclTag { type_id, .. }
                | BtfKind::Var { type_id, .. } => {
                    id = *type_id;
                    continue;
                }
                BtfKind::Array {
                    elem_type_id,
                    nelems: n,
                    ..
                } => {
                    nelems = nelems.checked_mul(u64::from(*n)).ok_or_else(overflow)?;
                    if nelems > u64::from(u32::MAX) {
                        return Err(overflow());
                    }
                    id = *elem_type_id;
                    continue;
                }
                kind @ (BtfKind::Fwd { .. } | BtfKind::Func { .. } | BtfKind::FuncProto(_)) => {
                    return Err(BtfError::Unsized {
                        section: BTF_SECTION,
                        offset: t.offset,
                        type_id: id,
                        kind: kind.name(),
                    })
                }
            };
            let total = nelems.checked_mul(u64::from(size)).ok_or_else(overflow)?;
            return u32::try_from(total).map_err(|_| overflow());
        }
        Err(BtfError::TooDeep {
            section: BTF_SECTION,
            offset: self.type_offset(type_id),
            type_id,
            limit: MAX_RESOLVE_DEPTH,
        })
    }

    /// The `DATASEC` named `name` (e.g. ".data", ".maps") with its type id.
    pub fn datasec(&self, name: &str) -> Option<(u32, &BtfDatasec)> {
        self.types
            .iter()
            .enumerate()
            .find_map(|(i, t)| match &t.kind {
                BtfKind::Datasec(d) if self.string_at(t.name_off) == Some(name) => {
                    Some((i as u32 + 1, d))
                }
                _ => None,
            })
    }

    /// The variables of data section `name` (".data", ".rodata", ".bss",
    /// ".rodata.str1.1", ".maps", ...) with name, offset, size and linkage; empty if
    /// the section has no `DATASEC`. Entries that are not `VAR`s (`.ksyms` functions)
    /// are an error, since data sections never hold them.
    pub fn datasec_vars(&self, name: &str) -> Result<Vec<DatasecVar<'_>>, BtfError> {
        let Some((ds_id, ds)) = self.datasec(name) else {
            return Ok(Vec::new());
        };
        let ds_offset = self.type_offset(ds_id);
        ds.vars
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let var = self.type_by_id(v.type_id);
                match var.map(|t| &t.kind) {
                    Some(BtfKind::Var { type_id, linkage }) => Ok(DatasecVar {
                        name: self.name(v.type_id).unwrap_or(""),
                        var_type_id: v.type_id,
                        type_id: *type_id,
                        offset: v.offset,
                        size: v.size,
                        linkage: *linkage,
                    }),
                    _ => Err(BtfError::InvalidType {
                        section: BTF_SECTION,
                        offset: ds_offset + BTF_TYPE_LEN + i * 12,
                        type_id: ds_id,
                        kind: "datasec",
                        reason: "entry is not a var",
                    }),
                }
            })
            .collect()
    }

    /// The name of `FUNC` type `type_id`; `None` if it is not a named `FUNC`.
    pub fn func_name(&self, type_id: u32) -> Option<&str> {
        match self.type_by_id(type_id)?.kind {
            BtfKind::Func { .. } => self.name(type_id),
            _ => None,
        }
    }

    /// The prototype and linkage of `FUNC` type `type_id`; `None` if it is not a
    /// `FUNC` or its type is not a `FUNC_PROTO`.
    pub fn func_proto(&self, type_id: u32) -> Option<(&BtfFuncProto, BtfLinkage)> {
        let BtfKind::Func {
            proto_type_id,
            linkage,
        } = self.type_by_id(type_id)?.kind
        else {
            return None;
        };
        match &self.type_by_id(proto_type_id)?.kind {
            BtfKind::FuncProto(p) => Some((p, linkage)),
            _ => None,
        }
    }

    /// Decodes the BTF-defined map whose `VAR` is `var_type_id` (an entry of the
    /// `.maps` `DATASEC`); the id of the map's struct type itself is accepted too.
    ///
    /// Integer attributes are `int (*name)[N]` (pointer to an array of N elements:
    /// the value is N), or an enum with one value for `__ulong(name, V)`; `key` and
    /// `value` are `T *name` and give both the size and the BTF id of `T`.
    /// `values` (map-in-map, prog-array initial values) is
    /// [`BtfError::Unsupported`]; an unknown member is [`BtfError::UnknownMapMember`].
    pub fn map_def(&self, var_type_id: u32) -> Result<BtfMapDef, BtfError> {
        let var = self.get(var_type_id)?;
        let (map, def_type) = match var.kind {
            BtfKind::Var { type_id, .. } => {
                (self.name(var_type_id).unwrap_or("").to_string(), type_id)
            }
            _ => (
                self.name(var_type_id)
                    .map_or_else(|| format!("<type {var_type_id}>"), str::to_string),
                var_type_id,
            ),
        };
        let struct_id = self.skip_modifiers(def_type)?;
        let (offset, members) = match self.type_by_id(struct_id) {
            Some(BtfType {
                offset,
                kind: BtfKind::Struct { members, .. },
                ..
            }) => (*offset, members),
            other => {
                return Err(BtfError::MapNotStruct {
                    section: BTF_SECTION,
                    offset: other.map_or(var.offset, |t| t.offset),
                    map,
                    kind: other.map_or("void", |t| t.kind.name()),
                })
            }
        };

        let mut def = BtfMapDef::default();
        let mut map_type = None;
        // Explicit sizes and type-derived sizes are kept apart so a mismatch can say
        // which is which, whatever the member order.
        let (mut key_size, mut value_size) = (None, None);
        let (mut key_type_size, mut value_type_size) = (None, None);
        for m in members {
            let member = self.string_at(m.name_off).unwrap_or("");
            let int = || self.map_int_member(m.type_id, &map, member, offset);
            let to_u32 = |v: u64| {
                u32::try_from(v).map_err(|_| BtfError::BadMapMember {
                    section: BTF_SECTION,
                    offset,
                    map: map.clone(),
                    member: member.to_string(),
                    expected: "a value that fits in 32 bits",
                })
            };
            match member {
                "type" => map_type = Some(to_u32(int()?)?),
                "max_entries" => def.max_entries = to_u32(int()?)?,
                "map_flags" => def.map_flags = to_u32(int()?)?,
                "numa_node" => def.numa_node = to_u32(int()?)?,
                "pinning" => def.pinning = to_u32(int()?)?,
                "map_extra" => def.map_extra = int()?,
                "key_size" => key_size = Some(to_u32(int()?)?),
                "value_size" => value_size = Some(to_u32(int()?)?),
                "key" => {
                    let target = self.map_ptr_member(m.type_id, &map, member, offset)?;
                    key_type_size = Some(self.resolve_size(target)?);
                    def.key_type_id = Some(target);
                }
                "value" => {
                    let target = self.map_ptr_member(m.type_id, &map, member, offset)?;
                    value_type_size = Some(self.resolve_size(target)?);
                    def.value_type_id = Some(target);
                }
                "values" => {
                    return Err(BtfError::Unsupported {
                        section: BTF_SECTION,
                        offset,
                        map,
                        feature: "map-in-map (a `values` member)",
                    })
                }
                _ => {
                    return Err(BtfError::UnknownMapMember {
                        section: BTF_SECTION,
                        offset,
                        map,
                        member: member.to_string(),
                    })
                }
            }
        }
        def.key_size = agree(key_size, key_type_size, &map, "key", offset)?;
        def.value_size = agree(value_size, value_type_size, &map, "value", offset)?;
        def.map_type = map_type.ok_or(BtfError::MissingMapType {
            section: BTF_SECTION,
            offset,
            map,
        })?;
        Ok(def)
    }

    /// Value of an integer map attribute: `int (*name)[N]` → N, or the single value
    /// of an enum (`__ulong`).
    fn map_int_member(
        &self,
        type_id: u32,
        map: &str,
        member: &str,
        offset: usize,
    ) -> Result<u64, BtfError> {
        let bad = || BtfError::BadMapMember {
            section: BTF_SECTION,
            offset,
            map: map.to_string(),
            member: member.to_string(),
            expected: "`int (*name)[N]` (`__uint(name, N)`)",
        };
        let id = self.skip_modifiers(type_id)?;
        match self.type_by_id(id).map(|t| &t.kind) {
            Some(BtfKind::Ptr { type_id }) => match self.type_by_id(*type_id).map(|t| &t.kind) {
                Some(BtfKind::Array { nelems, .. }) => Ok(u64::from(*nelems)),
                _ => Err(bad()),
            },
            Some(BtfKind::Enum { values, .. } | BtfKind::Enum64 { values, .. })
                if values.len() == 1 =>
            {
                Ok(values[0].value)
            }
            _ => Err(bad()),
        }
    }

    /// Target type of a `T *name` map attribute (`__type(name, T)`).
    fn map_ptr_member(
        &self,
        type_id: u32,
        map: &str,
        member: &str,
        offset: usize,
    ) -> Result<u32, BtfError> {
        let id = self.skip_modifiers(type_id)?;
        match self.type_by_id(id).map(|t| &t.kind) {
            Some(BtfKind::Ptr { type_id }) => Ok(*type_id),
            _ => Err(BtfError::BadMapMember {
                section: BTF_SECTION,
                offset,
                map: map.to_string(),
                member: member.to_string(),
                expected: "a pointer `T *name` (`__type(name, T)`)",
            }),
        }
    }
}

/// Combines a size given explicitly (`key_size`) with one derived from a type
/// (`key`); libbpf rejects a map where both are present and differ.
fn agree(
    explicit: Option<u32>,
    from_type: Option<u32>,
    map: &str,
    field: &'static str,
    offset: usize,
) -> Result<Option<u32>, BtfError> {
    match (explicit, from_type) {
        (Some(declared), Some(actual)) if declared != actual => Err(BtfError::MapSizeMismatch {
            section: BTF_SECTION,
            offset,
            map: map.to_string(),
            field,
            declared,
            actual,
        }),
        (e, t) => Ok(e.or(t)),
    }
}

impl fmt::Display for BtfLinkage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Static => "static",
            Self::Global => "global",
            Self::Extern => "extern",
        })
    }
}

/// Reading the committed clang objects in tests (goblin), shared by the `btf_ext`
/// and `dwarf` tests.
#[cfg(test)]
pub(crate) mod test_elf {
    use goblin::elf::Elf;

    /// `multi.bpf.c` built by clang 14 (DWARF 5).
    pub(crate) const MULTI14: &[u8] = include_bytes!("../../tests/fixtures/btf/multi.clang14.o");
    /// `multi.bpf.c` built by clang 19 (DWARF 5).
    pub(crate) const MULTI19: &[u8] = include_bytes!("../../tests/fixtures/btf/multi.clang19.o");
    /// `multi.bpf.c` built by clang 19 with `-gdwarf-4`.
    pub(crate) const MULTI19_DWARF4: &[u8] =
        include_bytes!("../../tests/fixtures/btf/multi.clang19.dwarf4.o");
    /// `multi.bpf.c` built by clang 19 for big-endian BPF (`-target bpfeb`).
    pub(crate) const MULTI19_BPFEB: &[u8] =
        include_bytes!("../../tests/fixtures/btf/multi.clang19.bpfeb.o");
    /// `maps.bpf.c` built by clang 19.
    pub(crate) const MAPS19: &[u8] = include_bytes!("../../tests/fixtures/btf/maps.clang19.o");
    /// Source of the multi fixtures.
    pub(crate) const MULTI_SRC: &str = include_str!("../../tests/fixtures/btf/multi.bpf.c");

    /// A relocation with its symbol resolved.
    #[derive(Debug, Clone)]
    pub(crate) struct Rel {
        pub(crate) offset: u64,
        pub(crate) r_type: u32,
        pub(crate) addend: Option<i64>,
        pub(crate) sym_value: u64,
        pub(crate) sym_section: String,
    }

    pub(crate) fn elf(bytes: &[u8]) -> Elf<'_> {
        Elf::parse(bytes).expect("fixture is a valid ELF")
    }

    pub(crate) fn section_name<'a>(elf: &Elf<'a>, index: usize) -> String {
        elf.section_headers
            .get(index)
            .and_then(|sh| elf.shdr_strtab.get_at(sh.sh_name))
            .unwrap_or("")
            .to_string()
    }

    /// Bytes of section `name`.
    pub(crate) fn section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
        let elf = elf(bytes);
        let sh = elf
            .section_headers
            .iter()
            .find(|sh| elf.shdr_strtab.get_at(sh.sh_name) == Some(name))?;
        let start = sh.sh_offset as usize;
        bytes.get(start..start + sh.sh_size as usize)
    }

    /// Relocations that apply to section `name`.
    pub(crate) fn relocs(bytes: &[u8], name: &str) -> Vec<Rel> {
        let elf = elf(bytes);
        let mut out = Vec::new();
        for (shndx, rs) in &elf.shdr_relocs {
            let target = elf.section_headers[*shndx].sh_info as usize;
            if section_name(&elf, target) != name {
                continue;
            }
            for r in rs.iter() {
                let sym = elf.syms.get(r.r_sym).expect("symbol");
                out.push(Rel {
                    offset: r.r_offset,
                    r_type: r.r_type,
                    addend: r.r_addend,
                    sym_value: sym.st_value,
                    sym_section: section_name(&elf, sym.st_shndx),
                });
            }
        }
        out
    }

    /// `(name, section, value, size, is_func)` of every named symbol.
    pub(crate) fn symbols(bytes: &[u8]) -> Vec<(String, String, u64, u64, bool)> {
        let elf = elf(bytes);
        elf.syms
            .iter()
            .filter_map(|s| {
                let name = elf.strtab.get_at(s.st_name)?;
                (!name.is_empty() && s.st_type() != goblin::elf::sym::STT_SECTION).then(|| {
                    (
                        name.to_string(),
                        section_name(&elf, s.st_shndx),
                        s.st_value,
                        s.st_size,
                        s.st_type() == goblin::elf::sym::STT_FUNC,
                    )
                })
            })
            .collect()
    }

    /// Deterministic xorshift PRNG for corruption tests.
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        pub(crate) fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_elf::*;
    use super::*;

    /// The `.BTF` of `obj` with `.rel.BTF` applied, as the loader should do it.
    fn relocated_btf(obj: &[u8]) -> Vec<u8> {
        let mut data = section(obj, ".BTF").unwrap().to_vec();
        let relocs: Vec<_> = relocs(obj, ".BTF")
            .iter()
            .map(|r| BtfReloc {
                offset: r.offset,
                symbol_value: r.sym_value,
            })
            .collect();
        apply_relocations(BTF_SECTION, &mut data, &relocs).unwrap();
        data
    }

    fn btf(obj: &[u8]) -> Btf {
        parse(&relocated_btf(obj)).unwrap()
    }

    fn map(btf: &Btf, name: &str) -> Result<BtfMapDef, BtfError> {
        let var = btf
            .datasec_vars(".maps")
            .unwrap()
            .into_iter()
            .find(|v| v.name == name)
            .unwrap_or_else(|| panic!("no map {name}"));
        btf.map_def(var.var_type_id)
    }

    #[test]
    fn multi_maps() {
        for obj in [MULTI14, MULTI19, MULTI19_DWARF4] {
            let btf = btf(obj);
            let events = map(&btf, "events").unwrap();
            assert_eq!(events.map_type, 1);
            assert_eq!(events.max_entries, 1024);
            assert_eq!(events.map_flags, 1);
            assert_eq!(events.key_size, Some(4));
            assert_eq!(events.value_size, Some(32));
            assert_eq!(btf.name(events.key_type_id.unwrap()), Some("__u32"));
            assert_eq!(btf.name(events.value_type_id.unwrap()), Some("event"));

            let counters = map(&btf, "counters").unwrap();
            assert_eq!(
                counters,
                BtfMapDef {
                    map_type: 2,
                    key_size: Some(4),
                    value_size: Some(8),
                    max_entries: 4,
                    ..BtfMapDef::default()
                }
            );

            let rb = map(&btf, "rb").unwrap();
            assert_eq!(
                rb,
                BtfMapDef {
                    map_type: 27,
                    max_entries: 256 * 1024,
                    ..BtfMapDef::default()
                }
            );

            let pinned = map(&btf, "pinned").unwrap();
            assert_eq!((pinned.map_type, pinned.max_entries), (6, 1));
            assert_eq!((pinned.key_size, pinned.value_size), (Some(4), Some(8)));
            assert_eq!((pinned.pinning, pinned.numa_node), (1, 0));
            assert_eq!(btf.name(pinned.key_type_id.unwrap()), Some("int"));
        }
    }

    #[test]
    fn datasec_offsets_match_symbols_after_relocation() {
        for obj in [MULTI14, MULTI19, MULTI19_DWARF4, MAPS19] {
            let btf = btf(obj);
            let syms = symbols(obj);
            let mut seen = 0;
            for sec in [".data", ".rodata", ".bss", ".maps", "license"] {
                for v in btf.datasec_vars(sec).unwrap() {
                    let sym = syms.iter().find(|s| s.0 == v.name).unwrap();
                    assert_eq!(sym.1, sec, "{}", v.name);
                    assert_eq!(u64::from(v.offset), sym.2, "offset of {}", v.name);
                    assert_eq!(u64::from(v.size), sym.3, "size of {}", v.name);
                    // `outer`'s flexible `values[]` array is sized by its initializer.
                    if v.name != "outer" {
                        assert_eq!(
                            btf.resolve_size(v.var_type_id).unwrap(),
                            v.size,
                            "{}",
                            v.name
                        );
                    }
                    seen += 1;
                }
            }
            assert!(seen >= 7);
        }
    }

    #[test]
    fn multi_global_data() {
        let btf = btf(MULTI19);
        let data = btf.datasec_vars(".data").unwrap();
        let summary: Vec<_> = data
            .iter()
            .map(|v| (v.name, v.offset, v.size, v.linkage))
            .collect();
        assert_eq!(
            summary,
            [
                ("global_counter", 0, 4, BtfLinkage::Global),
                ("static_counter", 4, 4, BtfLinkage::Static),
            ]
        );
        let rodata = btf.datasec_vars(".rodata").unwrap();
        let summary: Vec<_> = rodata.iter().map(|v| (v.name, v.offset, v.size)).collect();
        assert_eq!(summary, [("threshold", 0, 8), ("msg", 8, 10)]);
        let threshold = &rodata[0];
        let int = btf.skip_modifiers(threshold.type_id).unwrap();
        assert_eq!(btf.name(int), Some("unsigned long long"));
        assert!(matches!(
            btf.type_by_id(threshold.type_id).unwrap().kind,
            BtfKind::Const { .. }
        ));
        let bss = btf.datasec_vars(".bss").unwrap();
        assert_eq!((bss[0].name, bss[0].size), ("zeroed", 32));
        assert!(btf.datasec_vars(".rodata.str1.1").unwrap().is_empty());
        assert!(btf.datasec(".nope").is_none());
        // Without .rel.BTF the global's offset is still clang's placeholder 0.
        let raw = parse(section(MULTI19, ".BTF").unwrap()).unwrap();
        let msg = raw.datasec_vars(".rodata").unwrap()[1];
        assert_eq!((msg.name, msg.offset), ("msg", 0));
    }

    #[test]
    fn multi_funcs() {
        let btf = btf(MULTI14);
        let funcs: Vec<_> = (1..=btf.types().len() as u32)
            .filter_map(|id| Some((btf.func_name(id)?, btf.func_proto(id)?)))
            .map(|(n, (p, l))| (n, p.params.len(), l))
            .collect();
        for f in [
            ("add_counter", 2, BtfLinkage::Static),
            ("global_helper", 1, BtfLinkage::Global),
            ("prog_first", 1, BtfLinkage::Global),
            ("prog_second", 1, BtfLinkage::Global),
            ("prog_third", 1, BtfLinkage::Global),
        ] {
            assert!(funcs.contains(&f), "{f:?} not in {funcs:?}");
        }
        let id = (1..=btf.types().len() as u32)
            .find(|&id| btf.func_name(id) == Some("add_counter"))
            .unwrap();
        let (proto, _) = btf.func_proto(id).unwrap();
        assert_eq!(btf.resolve_size(proto.ret_type_id).unwrap(), 8);
        let names: Vec<_> = proto
            .params
            .iter()
            .map(|p| btf.string_at(p.name_off).unwrap())
            .collect();
        assert_eq!(names, ["idx", "v"]);
        assert!(btf.resolve_size(id).is_err(), "a func has no size");
        assert_eq!(btf.func_name(proto.ret_type_id), None);
    }

    #[test]
    fn map_edge_cases() {
        let btf = btf(MAPS19);
        let inner = map(&btf, "inner0").unwrap();
        assert_eq!(
            (inner.map_type, inner.key_size, inner.value_size),
            (2, Some(4), Some(4))
        );

        let err = map(&btf, "outer").unwrap_err();
        assert!(
            matches!(&err, BtfError::Unsupported { map, .. } if map == "outer"),
            "{err}"
        );
        assert!(err.to_string().contains("map-in-map"), "{err}");

        let err = map(&btf, "mismatch").unwrap_err();
        assert!(
            matches!(&err, BtfError::MapSizeMismatch { map, field: "key", declared: 8, actual: 4, .. } if map == "mismatch"),
            "{err}"
        );

        let err = map(&btf, "unknown").unwrap_err();
        assert!(
            matches!(&err, BtfError::UnknownMapMember { member, .. } if member == "bogus"),
            "{err}"
        );
        assert!(err.to_string().starts_with(".BTF+0x"), "{err}");

        let bloom = map(&btf, "bloom").unwrap();
        assert_eq!(bloom.map_type, 30);
        assert_eq!(bloom.map_extra, 0x5_0000_0003);
        assert_eq!((bloom.key_size, bloom.value_size), (None, Some(4)));

        let typed = map(&btf, "typed").unwrap();
        assert_eq!((typed.map_type, typed.max_entries), (9, 16));
        assert_eq!((typed.key_size, typed.value_size), (Some(16), Some(48)));
        let key = btf.skip_modifiers(typed.key_type_id.unwrap()).unwrap();
        assert!(matches!(
            btf.type_by_id(key).unwrap().kind,
            BtfKind::Struct { size: 16, .. }
        ));

        // A var that is not a map struct.
        let license = btf.datasec_vars("license").unwrap()[0];
        let err = btf.map_def(license.var_type_id).unwrap_err();
        assert!(
            matches!(&err, BtfError::MapNotStruct { kind: "array", .. }),
            "{err}"
        );
    }

    #[test]
    fn big_endian_is_rejected() {
        let data = section(MULTI19_BPFEB, ".BTF").unwrap();
        assert_eq!(
            parse(data).unwrap_err(),
            BtfError::BigEndian {
                section: ".BTF",
                offset: 0
            }
        );
        let err = parse(&[0x12, 0x34, 1, 0]).unwrap_err();
        assert!(
            matches!(err, BtfError::BadMagic { magic: 0x3412, .. }),
            "{err}"
        );
    }

    #[test]
    fn every_prefix_is_an_error() {
        for obj in [MULTI14, MAPS19] {
            let data = relocated_btf(obj);
            for len in 0..data.len() {
                let err = parse(&data[..len]).unwrap_err();
                assert!(err.to_string().starts_with(".BTF"), "{err}");
            }
            assert!(parse(&data).is_ok());
        }
    }

    /// Exercises every accessor on a parsed (possibly corrupted) section.
    pub(crate) fn exercise(btf: &Btf) {
        for id in 0..=btf.types().len() as u32 + 1 {
            let _ = btf.resolve_size(id);
            let _ = btf.skip_modifiers(id);
            let _ = btf.name(id);
            let _ = btf.func_name(id);
            let _ = btf.func_proto(id);
            let _ = btf.map_def(id);
        }
        for sec in [".maps", ".data", ".rodata", ".bss"] {
            if let Ok(vars) = btf.datasec_vars(sec) {
                for v in vars {
                    let _ = btf.map_def(v.var_type_id);
                }
            }
        }
    }

    #[test]
    fn random_corruption_never_panics() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for obj in [MULTI14, MULTI19, MAPS19] {
            let clean = relocated_btf(obj);
            for _ in 0..3000 {
                let mut data = clean.clone();
                for _ in 0..1 + rng.below(4) {
                    let i = rng.below(data.len());
                    data[i] ^= 1 << rng.below(8);
                }
                // Occasionally smash a whole word to reach big values.
                if rng.below(4) == 0 {
                    let i = rng.below(data.len() - 4);
                    data[i..i + 4].copy_from_slice(&(rng.next() as u32).to_le_bytes());
                }
                if let Ok(btf) = parse(&data) {
                    exercise(&btf);
                }
            }
        }
    }

    /// Builds a `.BTF` section from raw type words and a string table.
    fn build(types: &[u32], strings: &[u8]) -> Vec<u8> {
        let type_len = types.len() as u32 * 4;
        let mut out = Vec::new();
        out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        out.extend_from_slice(&[1, 0]);
        for v in [24, 0, type_len, type_len, strings.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        types
            .iter()
            .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
        out.extend_from_slice(strings);
        out
    }

    const fn info(kind: u32, vlen: u32) -> u32 {
        kind << 24 | vlen
    }

    #[test]
    fn typedef_cycle_is_too_deep() {
        // [1] typedef a -> [2], [2] typedef b -> [1]
        let data = build(&[1, info(8, 0), 2, 3, info(8, 0), 1], b"\0a\0b\0");
        let btf = parse(&data).unwrap();
        assert!(matches!(
            btf.resolve_size(1),
            Err(BtfError::TooDeep { type_id: 1, .. })
        ));
        assert!(matches!(
            btf.skip_modifiers(2),
            Err(BtfError::TooDeep { type_id: 2, .. })
        ));
    }

    #[test]
    fn array_size_overflow() {
        // [1] int size 8, [2] array of [1] x 0x8000_0000
        let data = build(
            &[1, info(1, 0), 8, 64, 0, info(3, 0), 0, 1, 1, 0x8000_0000],
            b"\0long\0",
        );
        let btf = parse(&data).unwrap();
        assert!(matches!(
            btf.resolve_size(2),
            Err(BtfError::SizeOverflow { type_id: 2, .. })
        ));
        assert_eq!(btf.resolve_size(1), Ok(8));
        assert!(matches!(
            btf.resolve_size(0),
            Err(BtfError::Unsized { kind: "void", .. })
        ));
    }

    #[test]
    fn structural_errors_name_the_offset() {
        // Unknown kind 20 in the first type, at 24 + 0.
        let data = build(&[0, info(20, 0), 0], b"\0");
        assert_eq!(
            parse(&data).unwrap_err(),
            BtfError::UnknownKind {
                section: ".BTF",
                offset: 24,
                type_id: 1,
                kind: 20
            }
        );
        // A pointer to type 7 when only 1 type exists.
        let data = build(&[0, info(2, 0), 7], b"\0");
        assert!(matches!(
            parse(&data).unwrap_err(),
            BtfError::BadTypeRef {
                offset: 24,
                target: 7,
                ..
            }
        ));
        // A name offset past the string table.
        let data = build(&[40, info(2, 0), 0], b"\0");
        assert!(matches!(
            parse(&data).unwrap_err(),
            BtfError::BadString {
                offset: 24,
                str_off: 40,
                ..
            }
        ));
        // A struct whose vlen runs past the type section.
        let data = build(&[0, info(4, 1000), 8], b"\0");
        let err = parse(&data).unwrap_err();
        assert!(
            matches!(err, BtfError::Truncated { offset: 36, .. }),
            "{err}"
        );
        assert!(err.to_string().starts_with(".BTF+0x24: truncated"), "{err}");
        // A string table that does not end with NUL.
        let data = build(&[], b"\0ab");
        assert!(matches!(
            parse(&data).unwrap_err(),
            BtfError::BadStringTable { .. }
        ));
        // Version 2.
        let mut data = build(&[], b"\0");
        data[2] = 2;
        assert!(matches!(
            parse(&data).unwrap_err(),
            BtfError::UnsupportedVersion { version: 2, .. }
        ));
    }

    #[test]
    fn relocation_out_of_bounds() {
        let mut data = vec![0u8; 8];
        let err = apply_relocations(
            BTF_SECTION,
            &mut data,
            &[BtfReloc {
                offset: 6,
                symbol_value: 1,
            }],
        )
        .unwrap_err();
        assert!(matches!(err, BtfError::BadRelocation { offset: 6, .. }));
        let err = apply_relocations(
            BTF_SECTION,
            &mut data,
            &[BtfReloc {
                offset: 0,
                symbol_value: u64::from(u32::MAX) + 1,
            }],
        )
        .unwrap_err();
        assert!(matches!(err, BtfError::BadRelocation { offset: 0, .. }));
    }
}
