//! The type model of a parsed `.BTF` section: the header, one [`BtfType`] per type
//! record with its [`BtfKind`] and trailing data (members, enum values, parameters,
//! `DATASEC` entries), linkage, and the [`DatasecVar`] view of a data-section variable.

use std::fmt;

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

impl fmt::Display for BtfLinkage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Static => "static",
            Self::Global => "global",
            Self::Extern => "extern",
        })
    }
}
