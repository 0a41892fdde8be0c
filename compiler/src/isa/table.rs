//! The one opcode table of the BPF ISA (RFC 9669 plus the cpu v4 additions).
//!
//! Every other view of an instruction — decoding, encoding, the disassembler, both text
//! assemblers, the verifier's visitor and the PTX lowering — is derived from [`OPCODES`]. A
//! row says which opcode byte it uses, which extra field (if any) tells it apart from the
//! other rows with the same byte ([`Key`]), which fields are operands ([`Form`]), what the
//! instruction means ([`Kind`]), the first `-mcpu` version that has it, and its mnemonic in
//! the bpf_conformance assembly syntax. Fields that are neither the key nor an operand are
//! reserved and must be zero: the decoder enforces that, so no later stage sees garbage in a
//! field it ignores.

/// Instruction classes (the low three bits of the opcode).
pub mod class {
    /// Non-standard loads: ld_imm64 and the legacy packet loads.
    pub const LD: u8 = 0x00;
    /// Loads from memory into a register.
    pub const LDX: u8 = 0x01;
    /// Stores of an immediate.
    pub const ST: u8 = 0x02;
    /// Stores of a register, and atomics.
    pub const STX: u8 = 0x03;
    /// 32-bit arithmetic.
    pub const ALU: u8 = 0x04;
    /// 64-bit jumps, calls and exit.
    pub const JMP: u8 = 0x05;
    /// 32-bit jumps and `gotol`.
    pub const JMP32: u8 = 0x06;
    /// 64-bit arithmetic.
    pub const ALU64: u8 = 0x07;
}

/// Operand width of an ALU operation or a jump comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// 32-bit: operands are the low halves, results are zero-extended.
    W32,
    /// 64-bit.
    W64,
}

/// Whether the second operand is the immediate (`K`) or the source register (`X`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    /// `imm`.
    K,
    /// `src` register.
    X,
}

/// Binary ALU operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Div,
    SDiv,
    Or,
    And,
    Lsh,
    Rsh,
    Mod,
    SMod,
    Xor,
    Mov,
    Arsh,
}

/// Byte-order operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    /// To little endian (a truncation on a little-endian machine).
    Le,
    /// To big endian.
    Be,
    /// Unconditional byte swap (cpu v4, `ALU64 | END`).
    Swap,
}

/// Jump conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Cond {
    Eq,
    Gt,
    Ge,
    Set,
    Ne,
    Sgt,
    Sge,
    Lt,
    Le,
    Slt,
    Sle,
}

/// Memory access sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Size {
    /// 1 byte.
    B,
    /// 2 bytes.
    H,
    /// 4 bytes.
    W,
    /// 8 bytes.
    DW,
}

impl Size {
    /// The access size in bytes.
    pub const fn bytes(self) -> u32 {
        match self {
            Size::B => 1,
            Size::H => 2,
            Size::W => 4,
            Size::DW => 8,
        }
    }
}

/// Atomic read-modify-write operations (`imm` of an atomic instruction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    /// `*p += src`.
    Add,
    /// `*p |= src`.
    Or,
    /// `*p &= src`.
    And,
    /// `*p ^= src`.
    Xor,
    /// Exchange: `src = xchg(*p, src)` (always fetches).
    Xchg,
    /// `r0 = cmpxchg(*p, r0, src)` (always fetches).
    Cmpxchg,
}

/// What the two immediates of an `ld_imm64` mean (its `src` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pseudo {
    /// src 0: a 64-bit constant.
    Imm64,
    /// src 1: a map, by file descriptor.
    MapFd,
    /// src 2: the address of a map value, by map fd and offset.
    MapValue,
    /// src 3: the address of a kernel variable, by BTF id.
    BtfId,
    /// src 4: the address of a BPF function, pc-relative.
    Func,
    /// src 5: a map, by index into the program's map array.
    MapIdx,
    /// src 6: the address of a map value, by map index and offset.
    MapIdxValue,
}

impl Pseudo {
    /// The value of the `src` field.
    pub const fn src(self) -> u8 {
        match self {
            Pseudo::Imm64 => 0,
            Pseudo::MapFd => 1,
            Pseudo::MapValue => 2,
            Pseudo::BtfId => 3,
            Pseudo::Func => 4,
            Pseudo::MapIdx => 5,
            Pseudo::MapIdxValue => 6,
        }
    }

    /// Whether the second slot's `imm` is an operand (otherwise it must be zero).
    pub const fn uses_high_imm(self) -> bool {
        matches!(
            self,
            Pseudo::Imm64 | Pseudo::MapValue | Pseudo::MapIdxValue | Pseudo::BtfId
        )
    }
}

/// What a call instruction calls (its `src` field).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// src 0: a helper by its static id.
    Helper,
    /// src 1: a BPF function of the same program, `imm` is pc-relative.
    Local,
    /// src 2: a kernel function by BTF id.
    Kfunc,
}

/// The meaning of a table row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `dst = dst op src|imm`.
    Alu(AluOp, Width, Src),
    /// `dst = -dst`.
    Neg(Width),
    /// `dst = (sN) src`: sign-extending move from `bits` bits.
    Movsx(Width, u8),
    /// Byte-order conversion of `bits` bits.
    Endian(Order, u8),
    /// Conditional jump by `off`.
    Jmp(Cond, Width, Src),
    /// Unconditional jump by `off`.
    Ja,
    /// Unconditional jump by the 32-bit `imm` (cpu v4).
    Gotol,
    /// `may_goto` (`BPF_JMP | BPF_JCOND`, 0xe5, `src` 0; Linux 6.9): jump by `off` when
    /// the function invocation's loop budget is spent, otherwise spend one unit of it and
    /// fall through (specs/isa.md, specs/verifier.md "Loops").
    MayGoto,
    /// Call by immediate.
    Call(CallKind),
    /// Indirect call through the `dst` register.
    Callx,
    /// Return from the function with r0.
    Exit,
    /// 64-bit immediate load; occupies two instruction slots.
    LdImm64(Pseudo),
    /// Legacy packet load `r0 = *(size *)skb[imm]`.
    LdAbs(Size),
    /// Legacy packet load `r0 = *(size *)skb[src + imm]`.
    LdInd(Size),
    /// `dst = *(size *)(src + off)`, zero- or sign-extended.
    Ldx(Size, bool),
    /// `*(size *)(dst + off) = imm`.
    St(Size),
    /// `*(size *)(dst + off) = src`.
    Stx(Size),
    /// Atomic operation on `*(size *)(dst + off)` with `src`; the flag says it fetches.
    Atomic(Size, AtomicOp, bool),
}

/// The field that distinguishes rows sharing an opcode byte; it must hold exactly this value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// The opcode alone identifies the row.
    None,
    /// `off` holds this value.
    Off(i16),
    /// `imm` holds this value.
    Imm(i32),
    /// `src` holds this value.
    Src(u8),
}

/// Which fields of a row are operands. A field that is neither an operand nor the key is
/// reserved and must be zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Form {
    /// `dst` is an operand.
    pub dst: bool,
    /// `src` is an operand.
    pub src: bool,
    /// `off` is an operand.
    pub off: bool,
    /// `imm` is an operand.
    pub imm: bool,
}

const fn form(dst: bool, src: bool, off: bool, imm: bool) -> Form {
    Form { dst, src, off, imm }
}

/// One row of the opcode table.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    /// The opcode byte.
    pub code: u8,
    /// The extra field that selects this row.
    pub key: Key,
    /// The operand fields.
    pub form: Form,
    /// The meaning.
    pub kind: Kind,
    /// The first `-mcpu` version that has the instruction (1..=4).
    pub cpu: u8,
    /// Mnemonic in the bpf_conformance assembly syntax (`add32`, `ldxw`, `lock fetch add`).
    pub conf: &'static str,
}

/// Index of a row of [`OPCODES`]; what a decoded instruction carries.
pub type OpId = u16;

const fn alu_code(op: u8, w: Width, s: Src) -> u8 {
    op | (match s {
        Src::K => 0x00,
        Src::X => 0x08,
    }) | (match w {
        Width::W32 => class::ALU,
        Width::W64 => class::ALU64,
    })
}

const fn size_bits(s: Size) -> u8 {
    match s {
        Size::W => 0x00,
        Size::H => 0x08,
        Size::B => 0x10,
        Size::DW => 0x18,
    }
}

macro_rules! rows {
    ($($code:expr, $key:expr, $form:expr, $kind:expr, $cpu:expr, $conf:expr;)*) => {
        &[$(OpInfo { code: $code, key: $key, form: $form, kind: $kind, cpu: $cpu, conf: $conf },)*]
    };
}

macro_rules! alu_rows {
    ($($op:expr, $aop:ident, $key:expr, $cpu:expr, $c64:expr, $c32:expr;)*) => {
        rows! { $(
            alu_code($op, Width::W64, Src::K), $key, form(true, false, false, true), Kind::Alu(AluOp::$aop, Width::W64, Src::K), $cpu, $c64;
            alu_code($op, Width::W64, Src::X), $key, form(true, true, false, false), Kind::Alu(AluOp::$aop, Width::W64, Src::X), $cpu, $c64;
            alu_code($op, Width::W32, Src::K), $key, form(true, false, false, true), Kind::Alu(AluOp::$aop, Width::W32, Src::K), $cpu, $c32;
            alu_code($op, Width::W32, Src::X), $key, form(true, true, false, false), Kind::Alu(AluOp::$aop, Width::W32, Src::X), $cpu, $c32;
        )* }
    };
}

macro_rules! jmp_rows {
    ($($op:expr, $cond:ident, $c64:expr, $c32:expr;)*) => {
        rows! { $(
            $op | class::JMP, Key::None, form(true, false, true, true), Kind::Jmp(Cond::$cond, Width::W64, Src::K), 1, $c64;
            $op | class::JMP | 0x08, Key::None, form(true, true, true, false), Kind::Jmp(Cond::$cond, Width::W64, Src::X), 1, $c64;
            $op | class::JMP32, Key::None, form(true, false, true, true), Kind::Jmp(Cond::$cond, Width::W32, Src::K), 3, $c32;
            $op | class::JMP32 | 0x08, Key::None, form(true, true, true, false), Kind::Jmp(Cond::$cond, Width::W32, Src::X), 3, $c32;
        )* }
    };
}

macro_rules! mem_rows {
    ($($size:ident, $ldx:expr, $st:expr, $stx:expr;)*) => {
        rows! { $(
            class::LDX | 0x60 | size_bits(Size::$size), Key::None, form(true, true, true, false), Kind::Ldx(Size::$size, false), 1, $ldx;
            class::ST | 0x60 | size_bits(Size::$size), Key::None, form(true, false, true, true), Kind::St(Size::$size), 1, $st;
            class::STX | 0x60 | size_bits(Size::$size), Key::None, form(true, true, true, false), Kind::Stx(Size::$size), 1, $stx;
        )* }
    };
}

macro_rules! atomic_rows {
    ($($imm:expr, $aop:ident, $fetch:expr, $c64:expr, $c32:expr;)*) => {
        rows! { $(
            class::STX | 0xc0 | size_bits(Size::DW), Key::Imm($imm), form(true, true, true, false), Kind::Atomic(Size::DW, AtomicOp::$aop, $fetch), if $imm == 0 { 1 } else { 3 }, $c64;
            class::STX | 0xc0 | size_bits(Size::W), Key::Imm($imm), form(true, true, true, false), Kind::Atomic(Size::W, AtomicOp::$aop, $fetch), if $imm == 0 { 1 } else { 3 }, $c32;
        )* }
    };
}

const ALU: &[OpInfo] = alu_rows! {
    0x00, Add, Key::None, 1, "add", "add32";
    0x10, Sub, Key::None, 1, "sub", "sub32";
    0x20, Mul, Key::None, 1, "mul", "mul32";
    0x30, Div, Key::Off(0), 1, "div", "div32";
    0x30, SDiv, Key::Off(1), 4, "sdiv", "sdiv32";
    0x40, Or, Key::None, 1, "or", "or32";
    0x50, And, Key::None, 1, "and", "and32";
    0x60, Lsh, Key::None, 1, "lsh", "lsh32";
    0x70, Rsh, Key::None, 1, "rsh", "rsh32";
    0x90, Mod, Key::Off(0), 1, "mod", "mod32";
    0x90, SMod, Key::Off(1), 4, "smod", "smod32";
    0xa0, Xor, Key::None, 1, "xor", "xor32";
    0xb0, Mov, Key::Off(0), 1, "mov", "mov32";
    0xc0, Arsh, Key::None, 1, "arsh", "arsh32";
};

const OTHER_ALU: &[OpInfo] = rows! {
    0x87, Key::None, form(true, false, false, false), Kind::Neg(Width::W64), 1, "neg";
    0x84, Key::None, form(true, false, false, false), Kind::Neg(Width::W32), 1, "neg32";
    0xbf, Key::Off(8), form(true, true, false, false), Kind::Movsx(Width::W64, 8), 4, "movsx864";
    0xbf, Key::Off(16), form(true, true, false, false), Kind::Movsx(Width::W64, 16), 4, "movsx1664";
    0xbf, Key::Off(32), form(true, true, false, false), Kind::Movsx(Width::W64, 32), 4, "movsx3264";
    0xbc, Key::Off(8), form(true, true, false, false), Kind::Movsx(Width::W32, 8), 4, "movsx832";
    0xbc, Key::Off(16), form(true, true, false, false), Kind::Movsx(Width::W32, 16), 4, "movsx1632";
    0xd4, Key::Imm(16), form(true, false, false, false), Kind::Endian(Order::Le, 16), 1, "le16";
    0xd4, Key::Imm(32), form(true, false, false, false), Kind::Endian(Order::Le, 32), 1, "le32";
    0xd4, Key::Imm(64), form(true, false, false, false), Kind::Endian(Order::Le, 64), 1, "le64";
    0xdc, Key::Imm(16), form(true, false, false, false), Kind::Endian(Order::Be, 16), 1, "be16";
    0xdc, Key::Imm(32), form(true, false, false, false), Kind::Endian(Order::Be, 32), 1, "be32";
    0xdc, Key::Imm(64), form(true, false, false, false), Kind::Endian(Order::Be, 64), 1, "be64";
    0xd7, Key::Imm(16), form(true, false, false, false), Kind::Endian(Order::Swap, 16), 4, "bswap16";
    0xd7, Key::Imm(32), form(true, false, false, false), Kind::Endian(Order::Swap, 32), 4, "bswap32";
    0xd7, Key::Imm(64), form(true, false, false, false), Kind::Endian(Order::Swap, 64), 4, "bswap64";
};

const JMP: &[OpInfo] = jmp_rows! {
    0x10, Eq, "jeq", "jeq32";
    0x20, Gt, "jgt", "jgt32";
    0x30, Ge, "jge", "jge32";
    0x40, Set, "jset", "jset32";
    0x50, Ne, "jne", "jne32";
    0x60, Sgt, "jsgt", "jsgt32";
    0x70, Sge, "jsge", "jsge32";
    0xa0, Lt, "jlt", "jlt32";
    0xb0, Le, "jle", "jle32";
    0xc0, Slt, "jslt", "jslt32";
    0xd0, Sle, "jsle", "jsle32";
};

const CONTROL: &[OpInfo] = rows! {
    0x05, Key::None, form(false, false, true, false), Kind::Ja, 1, "ja";
    0x06, Key::None, form(false, false, false, true), Kind::Gotol, 4, "ja32";
    0xe5, Key::Src(0), form(false, false, true, false), Kind::MayGoto, 4, "may_goto";
    0x85, Key::Src(0), form(false, false, false, true), Kind::Call(CallKind::Helper), 1, "call";
    0x85, Key::Src(1), form(false, false, false, true), Kind::Call(CallKind::Local), 1, "call local";
    0x85, Key::Src(2), form(false, false, false, true), Kind::Call(CallKind::Kfunc), 1, "call kfunc";
    0x8d, Key::None, form(true, false, false, false), Kind::Callx, 1, "callx";
    0x95, Key::None, form(false, false, false, false), Kind::Exit, 1, "exit";
};

const LOADS: &[OpInfo] = rows! {
    0x18, Key::Src(0), form(true, false, false, true), Kind::LdImm64(Pseudo::Imm64), 1, "lddw";
    0x18, Key::Src(1), form(true, false, false, true), Kind::LdImm64(Pseudo::MapFd), 1, "lddw map_fd";
    0x18, Key::Src(2), form(true, false, false, true), Kind::LdImm64(Pseudo::MapValue), 1, "lddw map_value";
    0x18, Key::Src(3), form(true, false, false, true), Kind::LdImm64(Pseudo::BtfId), 1, "lddw btf_id";
    0x18, Key::Src(4), form(true, false, false, true), Kind::LdImm64(Pseudo::Func), 1, "lddw func";
    0x18, Key::Src(5), form(true, false, false, true), Kind::LdImm64(Pseudo::MapIdx), 1, "lddw map_idx";
    0x18, Key::Src(6), form(true, false, false, true), Kind::LdImm64(Pseudo::MapIdxValue), 1, "lddw map_idx_value";
    0x20, Key::None, form(false, false, false, true), Kind::LdAbs(Size::W), 1, "ldabsw";
    0x28, Key::None, form(false, false, false, true), Kind::LdAbs(Size::H), 1, "ldabsh";
    0x30, Key::None, form(false, false, false, true), Kind::LdAbs(Size::B), 1, "ldabsb";
    0x40, Key::None, form(false, true, false, true), Kind::LdInd(Size::W), 1, "ldindw";
    0x48, Key::None, form(false, true, false, true), Kind::LdInd(Size::H), 1, "ldindh";
    0x50, Key::None, form(false, true, false, true), Kind::LdInd(Size::B), 1, "ldindb";
    0x81, Key::None, form(true, true, true, false), Kind::Ldx(Size::W, true), 4, "ldxsw";
    0x89, Key::None, form(true, true, true, false), Kind::Ldx(Size::H, true), 4, "ldxsh";
    0x91, Key::None, form(true, true, true, false), Kind::Ldx(Size::B, true), 4, "ldxsb";
};

const MEM: &[OpInfo] = mem_rows! {
    B, "ldxb", "stb", "stxb";
    H, "ldxh", "sth", "stxh";
    W, "ldxw", "stw", "stxw";
    DW, "ldxdw", "stdw", "stxdw";
};

const ATOMIC: &[OpInfo] = atomic_rows! {
    0x00, Add, false, "lock add", "lock add32";
    0x40, Or, false, "lock or", "lock or32";
    0x50, And, false, "lock and", "lock and32";
    0xa0, Xor, false, "lock xor", "lock xor32";
    0x01, Add, true, "lock fetch add", "lock fetch add32";
    0x41, Or, true, "lock fetch or", "lock fetch or32";
    0x51, And, true, "lock fetch and", "lock fetch and32";
    0xa1, Xor, true, "lock fetch xor", "lock fetch xor32";
    0xe1, Xchg, true, "lock xchg", "lock xchg32";
    0xf1, Cmpxchg, true, "lock cmpxchg", "lock cmpxchg32";
};

const fn concat_len(parts: &[&[OpInfo]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

const PARTS: &[&[OpInfo]] = &[ALU, OTHER_ALU, JMP, CONTROL, LOADS, MEM, ATOMIC];
const N_OPCODES: usize = concat_len(PARTS);

const fn concat() -> [OpInfo; N_OPCODES] {
    let mut out = [ALU[0]; N_OPCODES];
    let mut n = 0;
    let mut p = 0;
    while p < PARTS.len() {
        let mut i = 0;
        while i < PARTS[p].len() {
            out[n] = PARTS[p][i];
            n += 1;
            i += 1;
        }
        p += 1;
    }
    out
}

/// The opcode table: every instruction form of the ISA, one row each.
pub static OPCODES: [OpInfo; N_OPCODES] = concat();

/// Rows by opcode byte: `BY_CODE[code]` is the range of row indices into [`SORTED`].
struct Index {
    /// Row ids sorted by opcode byte.
    sorted: [OpId; N_OPCODES],
    /// For each opcode byte, the start and end into `sorted`.
    ranges: [(u16, u16); 256],
}

const fn build_index() -> Index {
    let mut sorted = [0 as OpId; N_OPCODES];
    let mut ranges = [(0u16, 0u16); 256];
    let mut n = 0usize;
    let mut code = 0usize;
    while code < 256 {
        let start = n;
        let mut i = 0;
        while i < N_OPCODES {
            if OPCODES[i].code as usize == code {
                sorted[n] = i as OpId;
                n += 1;
            }
            i += 1;
        }
        ranges[code] = (start as u16, n as u16);
        code += 1;
    }
    Index { sorted, ranges }
}

static INDEX: Index = build_index();

/// The rows that use opcode byte `code` (empty for an unknown opcode).
pub fn rows_for_code(code: u8) -> impl Iterator<Item = OpId> {
    let (a, b) = INDEX.ranges[code as usize];
    INDEX.sorted[a as usize..b as usize].iter().copied()
}

/// The row of a given meaning, if the ISA has one.
pub fn row_of_kind(kind: Kind) -> Option<OpId> {
    OPCODES
        .iter()
        .position(|r| r.kind == kind)
        .map(|i| i as OpId)
}

/// The row with a bpf_conformance mnemonic and operand source kind.
pub fn rows_of_conf(mnemonic: &str) -> impl Iterator<Item = OpId> + '_ {
    OPCODES
        .iter()
        .enumerate()
        .filter(move |(_, r)| r.conf == mnemonic)
        .map(|(i, _)| i as OpId)
}

/// The row by id.
pub fn info(id: OpId) -> &'static OpInfo {
    &OPCODES[id as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_unambiguous() {
        // No two rows may share an opcode byte and key, and a key kind must be the same
        // for all rows of one opcode byte; otherwise decoding would depend on row order.
        for (i, a) in OPCODES.iter().enumerate() {
            for b in &OPCODES[i + 1..] {
                assert!(!(a.code == b.code && a.key == b.key), "{a:?} / {b:?}");
                if a.code == b.code {
                    assert_eq!(
                        std::mem::discriminant(&a.key),
                        std::mem::discriminant(&b.key),
                        "{a:?} / {b:?}"
                    );
                }
            }
            assert_eq!(
                row_of_kind(a.kind),
                Some(i as OpId),
                "kind of {a:?} repeats"
            );
        }
    }

    #[test]
    fn key_field_is_not_an_operand() {
        for r in OPCODES.iter() {
            match r.key {
                Key::Off(_) => assert!(!r.form.off, "{r:?}"),
                Key::Imm(_) => assert!(!r.form.imm, "{r:?}"),
                Key::Src(_) => assert!(!r.form.src, "{r:?}"),
                Key::None => {}
            }
        }
    }
}
