//! The program model every frontend produces and every later stage reads.
//!
//! An [`Object`] is what one input file holds: its programs, each already linked with the
//! subprograms it calls (the way libbpf appends `.text` functions to each program), its maps
//! (BTF-defined, legacy and global data, in libbpf's order, so a map index means the same
//! here as in a libbpf loader) and, for a bpf_conformance file, the test's expectations.
//! After loading, every map reference in the code is an `ld_imm64` with `src` 5
//! (`map_idx`) or 6 (`map_idx_value`) and every local call is pc-relative within the
//! linked program, so the code is self-contained and the relocations are kept only to
//! explain where each reference came from.

use crate::isa::Insn;
use bpf2ptx_runtime::MapKind;
use serde::Serialize;

/// What kind of file an object was loaded from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A clang-built BPF ELF object.
    Elf,
    /// A bpf_conformance `.data` file.
    Conformance,
    /// A text assembly file.
    Assembly,
}

/// One input file, loaded.
#[derive(Clone, Debug, Serialize)]
pub struct Object {
    /// The file name as the user gave it.
    pub file: String,
    /// The input format.
    pub kind: SourceKind,
    /// The license string of an ELF object's `license` section.
    pub license: Option<String>,
    /// The ELF sections (empty for text inputs).
    pub sections: Vec<Section>,
    /// The maps, in map-index order.
    pub maps: Vec<Map>,
    /// The programs.
    pub programs: Vec<Program>,
    /// The extern symbols an ELF object declares (`__kconfig`, `__ksym`), in symbol-table
    /// order; relocations name them by index ([`RelocTarget::Extern`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub externs: Vec<Extern>,
    /// The expectations of a bpf_conformance test.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test: Option<TestCase>,
}

/// What a bpf_conformance file expects.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TestCase {
    /// The memory passed in r1 (length in r2).
    pub mem: Vec<u8>,
    /// The expected r0.
    pub result: Option<u64>,
    /// The expected error text.
    pub error: Option<String>,
}

/// The role of an ELF section for bpf2ptx.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionKind {
    /// Code of one or more programs.
    Program,
    /// `.text`: subprograms.
    Text,
    /// `.maps`: BTF-defined maps.
    Maps,
    /// `maps`: legacy map definitions.
    LegacyMaps,
    /// `.data`, `.rodata`, `.bss` and their `.name` variants.
    Data,
    /// `license`.
    License,
    /// `.BTF`.
    Btf,
    /// `.BTF.ext`.
    BtfExt,
    /// Relocations for another section.
    Rel,
    /// DWARF debug information.
    Debug,
    /// Symbol and string tables and anything else.
    Other,
}

/// An ELF section.
#[derive(Clone, Debug, Serialize)]
pub struct Section {
    /// Index in the section header table.
    pub index: usize,
    /// Name.
    pub name: String,
    /// Role.
    pub kind: SectionKind,
    /// Size in bytes.
    pub size: u64,
}

/// Where a map definition came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MapOrigin {
    /// A BTF-defined map in `.maps`.
    Btf,
    /// A `struct bpf_map_def` in the legacy `maps` section.
    Legacy,
    /// A global data section, as a one-element array map (also `.kconfig`, the map
    /// libbpf makes for `__kconfig` externs).
    GlobalData,
}

/// The fields of iproute2's `struct bpf_elf_map` after `flags` (a legacy `maps` entry
/// longer than libbpf's 20-byte `struct bpf_map_def`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ElfMapFields {
    /// `id`: a number other maps name this one by (`inner_id`); 0 for none.
    pub id: u32,
    /// `pinning`: `PIN_NONE` 0, `PIN_OBJECT_NS` 1, `PIN_GLOBAL_NS` 2, or a custom id.
    pub pinning: u32,
    /// `inner_id`: for a map of maps, the `id` of the map that is its inner map.
    pub inner_id: u32,
    /// `inner_idx`: the slot of every map of maps naming this map's `id` by `inner_id`
    /// that this map is put in (`u32::MAX`: none).
    pub inner_idx: u32,
}

impl ElfMapFields {
    /// The name iproute2 gives a pinning value, where it has one.
    pub fn pinning_name(&self) -> Option<&'static str> {
        match self.pinning {
            0 => Some("none"),
            1 => Some("object_ns"),
            2 => Some("global_ns"),
            _ => None,
        }
    }
}

/// One initial entry of a map of maps: the map in slot `slot` (BTF `.values = { [k] =
/// &m }`, or an iproute2 inner map's `inner_idx`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct MapSlot {
    /// The key (slot index).
    pub slot: u32,
    /// The map in it (index into [`Object::maps`]).
    pub map: usize,
}

/// A map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Map {
    /// The map's name: the variable name, or the section name for global data.
    pub name: String,
    /// Where the definition came from.
    pub origin: MapOrigin,
    /// The section the definition (or data) is in.
    pub section: String,
    /// The map type id (see [`map_type_name`] and [`Map::kind`]).
    pub map_type: u32,
    /// Key size in bytes (0 where the type has no key, e.g. ringbuf).
    pub key_size: u32,
    /// Value size in bytes (0 where the type has no value).
    pub value_size: u32,
    /// Maximum number of entries (bytes for a ringbuf).
    pub max_entries: u32,
    /// `BPF_F_*` flags.
    pub flags: u32,
    /// BTF type id of the key, where BTF gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btf_key_type: Option<u32>,
    /// BTF type id of the value, where BTF gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub btf_value_type: Option<u32>,
    /// Initial contents of a `.data`/`.rodata` map (`None` for `.bss` and other maps).
    #[serde(skip)]
    pub init: Option<Vec<u8>>,
    /// iproute2's extra fields, for a `struct bpf_elf_map` in the legacy `maps` section.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iproute2: Option<ElfMapFields>,
    /// For a map of maps (array of maps 12, hash of maps 13): the inner map's definition
    /// (BTF `__array(values, struct {...})`, named `OUTER.inner` as libbpf names it; or
    /// iproute2's map whose `id` is the `inner_id`, under its own name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inner: Option<Box<Map>>,
    /// For a map of maps: its initial entries, in slot order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub slots: Vec<MapSlot>,
    /// The named parts of a value, where BTF describes them ([`Field`]): what messages
    /// call the bytes of a value (`counts[3]`, not "offset 24 of .bss"). Empty without
    /// BTF.
    #[serde(skip)]
    pub fields: Vec<Field>,
}

/// A named part of a map's value, from BTF: a variable of a global-data section (a
/// `VAR` of its `DATASEC`), a member of a struct value, or the whole value when it is an
/// array (then the name is empty and the map's name stands for it). The user wrote
/// `counts[i]` against a `__u64 counts[256]`; the verifier sees byte offsets into `.bss`.
/// A field turns them back into the variable and the index the user wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Field {
    /// The variable's or member's name; empty for a whole array value.
    pub name: String,
    /// Byte offset in the value.
    pub offset: u32,
    /// Bytes.
    pub size: u32,
    /// When the field is an array: its elements' size and how many there are.
    pub array: Option<ArrayShape>,
}

/// The shape of an array field: `len` elements of `elem_size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ArrayShape {
    /// Bytes per element (at least 1).
    pub elem_size: u32,
    /// Elements.
    pub len: u32,
}

/// `BPF_F_RDONLY_PROG`: the programs never write the map (libbpf sets it on `.rodata`
/// and `.kconfig`; the verifier refuses writes).
pub const BPF_F_RDONLY_PROG: u32 = 0x80;

impl Map {
    /// Whether the programs may not write the map ([`BPF_F_RDONLY_PROG`]).
    pub fn read_only(&self) -> bool {
        self.flags & BPF_F_RDONLY_PROG != 0
    }

    /// The map's kind; `None` for a type id bpf2ptx does not know (which the front end
    /// refuses, so only a hand-built [`Object`] has one).
    pub fn kind(&self) -> Option<MapKind> {
        MapKind::from_id(self.map_type)
    }

    /// Whether the map's kind is known and has property `p` (a [`MapKind`] predicate,
    /// e.g. `m.is(MapKind::is_array_like)`).
    pub fn is(&self, p: fn(MapKind) -> bool) -> bool {
        self.kind().is_some_and(p)
    }

    /// The field holding byte `off` of a value, where BTF describes one.
    pub fn field_at(&self, off: i64) -> Option<&Field> {
        self.fields
            .iter()
            .find(|f| off >= i64::from(f.offset) && off < i64::from(f.offset) + i64::from(f.size))
    }
}

/// A function within a linked program.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Func {
    /// Symbol name.
    pub name: String,
    /// Index of its first instruction in [`Program::insns`].
    pub start: usize,
    /// Section it was defined in.
    pub section: String,
    /// Byte offset of its first instruction in that section.
    pub section_offset: u64,
}

/// What a relocated instruction refers to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum RelocTarget {
    /// A map (the `ld_imm64` is now `map_idx`).
    Map {
        /// Map index.
        map: usize,
    },
    /// An address inside a map's value (the `ld_imm64` is now `map_idx_value`).
    MapValue {
        /// Map index.
        map: usize,
        /// Byte offset in the value.
        offset: u32,
    },
    /// A bpf-to-bpf call.
    Call {
        /// Function index in [`Program::funcs`].
        func: usize,
    },
    /// The address of a function (an `ld_imm64` with `src` 4, for callbacks).
    FuncAddr {
        /// Function index in [`Program::funcs`].
        func: usize,
    },
    /// A kernel function the device runtime implements ([`bpf2ptx_runtime::Kfunc`]): the
    /// call is now `src` 2 (`BPF_PSEUDO_KFUNC_CALL`) with `imm` the BTF id of its `FUNC`
    /// in the object's BTF (the relocation's symbol is the kfunc's name, which is what
    /// later stages go by: [`Program::kfunc`]).
    Kfunc {
        /// BTF id of the kfunc's `FUNC` (0 for a text input, which has no BTF).
        btf_id: u32,
    },
    /// An extern that is not `__kconfig` (those become [`RelocTarget::MapValue`] into the
    /// `.kconfig` map): a kfunc call (now `call kfunc`, `src` 2, `imm` the FUNC's id in
    /// the object's BTF) or the address of a `__ksym` variable (now `ld_imm64` with `src`
    /// 3, `imm` the VAR's id in the object's BTF).
    Extern {
        /// Index into [`Object::externs`].
        ext: usize,
    },
}

/// An extern symbol of an ELF object, described by its `VAR` or `FUNC` in BTF and the
/// `DATASEC` (`.kconfig`, `.ksyms`) that lists it, as libbpf classifies them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Extern {
    /// The symbol name.
    pub name: String,
    /// Declared `__weak`: an unresolved weak extern is 0 (kconfig) or absent (ksym).
    pub weak: bool,
    /// The `VAR` or `FUNC` type id in the object's BTF.
    pub btf_id: u32,
    /// What it is.
    #[serde(flatten)]
    pub kind: ExternKind,
}

/// The kinds of [`Extern`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ExternKind {
    /// `extern T NAME __kconfig`: a value in the `.kconfig` map, laid out as libbpf lays
    /// it out (by alignment, then size, then name).
    Kconfig {
        /// How the value is typed.
        #[serde(rename = "type")]
        ty: KconfigType,
        /// Byte offset in the `.kconfig` map's value.
        offset: u32,
        /// Size in bytes.
        size: u32,
        /// The `.kconfig` map (index into [`Object::maps`]).
        map: usize,
    },
    /// `extern T NAME __ksym`: a kernel variable (`typeless` for `const void`).
    KsymVar {
        /// Declared `const void`: only its address means anything.
        typeless: bool,
    },
    /// `extern RET NAME(ARGS) __ksym`: a kernel function (kfunc).
    Kfunc,
}

/// How a kconfig extern is typed (libbpf's `kcfg_type`), which decides what values of
/// a Linux config file it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "is")]
pub enum KconfigType {
    /// `bool`: `y`, `n`, 0 or 1.
    Bool,
    /// `enum libbpf_tristate`: `y` 1, `n` 0, `m` 2.
    Tristate,
    /// `char`: `y`, `n`, `m` as characters, or a number.
    Char,
    /// An integer of 1, 2, 4 or 8 bytes: a number.
    Int {
        /// Signed.
        signed: bool,
    },
    /// `char NAME[N]`: a quoted string (cut to N - 1 bytes and a NUL).
    CharArray,
}

impl KconfigType {
    /// The C spelling, for messages and `dump`.
    pub fn describe(self, size: u32) -> String {
        match self {
            KconfigType::Bool => "bool".into(),
            KconfigType::Tristate => "tristate".into(),
            KconfigType::Char => "char".into(),
            KconfigType::Int { signed } => {
                format!("{}{}", if signed { "s" } else { "u" }, size * 8)
            }
            KconfigType::CharArray => format!("char[{size}]"),
        }
    }
}

/// A relocation applied while loading, kept to explain references.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reloc {
    /// Instruction index in [`Program::insns`].
    pub insn: usize,
    /// The ELF symbol the relocation named.
    pub symbol: String,
    /// The ELF relocation type name (`R_BPF_64_64`, `R_BPF_64_32`), or `pc-relative`.
    pub elf_type: String,
    /// What it resolved to.
    pub target: RelocTarget,
}

/// A source position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LineRef {
    /// Source file path.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column (0 when unknown).
    pub col: u32,
    /// The source text of the line, where BTF.ext carries it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// A program: an entry function plus the subprograms it reaches, linked into one code array.
#[derive(Clone, Debug, Serialize)]
pub struct Program {
    /// The entry function's name.
    pub name: String,
    /// The section it is in (for ELF: `kprobe/vec_add`, ...).
    pub section: String,
    /// Linked code; `funcs[0]` starts at 0.
    #[serde(skip)]
    pub insns: Vec<Insn>,
    /// The functions in code order.
    pub funcs: Vec<Func>,
    /// Relocations applied, in instruction order.
    pub relocs: Vec<Reloc>,
    /// Source lines where the line information starts a new line, by instruction index.
    #[serde(skip)]
    pub lines: Vec<(usize, LineRef)>,
}

impl Program {
    /// The slot index of each instruction (plus one past the end).
    pub fn pcs(&self) -> Vec<usize> {
        crate::isa::insn::pcs(&self.insns)
    }

    /// The runtime kfunc that the kfunc call at instruction `i` calls, resolved by name
    /// when the object was loaded (`None`: not a kfunc call, or one the runtime lacks).
    pub fn kfunc(&self, i: usize) -> Option<bpf2ptx_runtime::Kfunc> {
        self.relocs
            .iter()
            .find(|r| r.insn == i && matches!(r.target, RelocTarget::Kfunc { .. }))
            .and_then(|r| bpf2ptx_runtime::Kfunc::by_name(&r.symbol))
    }

    /// The function that contains instruction `i`.
    pub fn func_of(&self, i: usize) -> Option<&Func> {
        self.funcs.iter().rev().find(|f| f.start <= i)
    }
}

/// The name of a map type id, if bpf2ptx knows it. The ids bpf2ptx knows are those of
/// [`MapKind`] (the Linux ids and bpftime's GPU ids); loading a map of any other type is
/// an error, because nothing downstream could lay it out.
pub fn map_type_name(id: u32) -> Option<&'static str> {
    MapKind::from_id(id).map(MapKind::name)
}
