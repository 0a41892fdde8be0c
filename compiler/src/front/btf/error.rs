//! [`BtfError`], everything that can go wrong while reading `.BTF` or `.BTF.ext`.
//!
//! Every variant names the section and the byte offset inside it; `btf_ext` raises
//! the same enum for `.BTF.ext`.

#[cfg(doc)]
use super::Btf;

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
