//! Binary instructions: decoding the 8-byte slots into [`Insn`]s and encoding them back.
//!
//! Decoding is strict. An opcode byte that no row of the table uses, a key field with a value
//! no row has, a reserved field that is not zero, a register above r10 and an `ld_imm64`
//! without a valid second slot are all errors that name the instruction, because every later
//! stage reads only operand fields and would otherwise silently run a different program.

use super::table::{self, Form, Key, Kind, OpId, OpInfo};
use thiserror::Error;

/// The size of one instruction slot in bytes.
pub const SLOT: usize = 8;

/// One instruction slot as it is laid out in memory (little endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RawInsn {
    /// Opcode byte.
    pub code: u8,
    /// Destination register (low nibble of byte 1).
    pub dst: u8,
    /// Source register (high nibble of byte 1).
    pub src: u8,
    /// Signed 16-bit offset.
    pub off: i16,
    /// Signed 32-bit immediate.
    pub imm: i32,
}

impl RawInsn {
    /// Reads a slot from 8 little-endian bytes.
    pub fn from_bytes(b: [u8; 8]) -> RawInsn {
        RawInsn {
            code: b[0],
            dst: b[1] & 0x0f,
            src: b[1] >> 4,
            off: i16::from_le_bytes([b[2], b[3]]),
            imm: i32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        }
    }

    /// Writes the slot as 8 little-endian bytes.
    pub fn to_bytes(self) -> [u8; 8] {
        let o = self.off.to_le_bytes();
        let i = self.imm.to_le_bytes();
        [
            self.code,
            (self.src << 4) | (self.dst & 0x0f),
            o[0],
            o[1],
            i[0],
            i[1],
            i[2],
            i[3],
        ]
    }

    /// The slot as one little-endian 64-bit word (the `-- raw` form of bpf_conformance).
    pub fn to_u64(self) -> u64 {
        u64::from_le_bytes(self.to_bytes())
    }
}

/// A decoded instruction: a row of the opcode table plus its operand fields.
///
/// Only the fields the row's [`Form`] names carry meaning; the others are zero. For an
/// `ld_imm64`, `imm` holds the whole 64-bit value (low word from the first slot, high word
/// from the second).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Insn {
    /// Row of [`table::OPCODES`].
    pub op: OpId,
    /// Destination register.
    pub dst: u8,
    /// Source register.
    pub src: u8,
    /// Offset.
    pub off: i16,
    /// Immediate (sign-extended 32-bit, or the 64-bit value of an `ld_imm64`).
    pub imm: i64,
}

impl Insn {
    /// The table row.
    pub fn info(&self) -> &'static OpInfo {
        table::info(self.op)
    }

    /// The meaning.
    pub fn kind(&self) -> Kind {
        self.info().kind
    }

    /// How many 8-byte slots the instruction occupies (2 for `ld_imm64`).
    pub fn slots(&self) -> usize {
        if matches!(self.kind(), Kind::LdImm64(_)) {
            2
        } else {
            1
        }
    }

    /// Builds an instruction of a given kind; fields outside the row's form are cleared.
    /// Returns `None` when the ISA has no such instruction.
    pub fn new(kind: Kind, dst: u8, src: u8, off: i16, imm: i64) -> Option<Insn> {
        let op = table::row_of_kind(kind)?;
        let f = table::info(op).form;
        Some(Insn {
            op,
            dst: if f.dst { dst } else { 0 },
            src: if f.src { src } else { 0 },
            off: if f.off { off } else { 0 },
            imm: if f.imm { imm } else { 0 },
        })
    }

    /// Encodes the instruction into its one or two slots.
    pub fn encode(&self) -> [Option<RawInsn>; 2] {
        let info = self.info();
        let mut raw = RawInsn {
            code: info.code,
            dst: self.dst,
            src: self.src,
            off: self.off,
            imm: 0,
        };
        match info.key {
            Key::None => {}
            Key::Off(v) => raw.off = v,
            Key::Imm(v) => raw.imm = v,
            Key::Src(v) => raw.src = v,
        }
        if info.form.imm {
            raw.imm = self.imm as i32;
        }
        if matches!(info.kind, Kind::LdImm64(_)) {
            let hi = RawInsn {
                imm: (self.imm as u64 >> 32) as u32 as i32,
                ..RawInsn::default()
            };
            [Some(raw), Some(hi)]
        } else {
            [Some(raw), None]
        }
    }

    /// Appends the encoded bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        for raw in self.encode().into_iter().flatten() {
            out.extend_from_slice(&raw.to_bytes());
        }
    }
}

/// Which field of an instruction an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// The destination register.
    Dst,
    /// The source register.
    Src,
    /// The offset.
    Off,
    /// The immediate.
    Imm,
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Field::Dst => "dst",
            Field::Src => "src",
            Field::Off => "off",
            Field::Imm => "imm",
        })
    }
}

/// Why a slot does not decode. `pc` is the slot index within the decoded code.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The byte length is not a multiple of 8.
    #[error("code size {len} is not a multiple of 8 bytes")]
    BadLength {
        /// Length in bytes.
        len: usize,
    },
    /// No row uses the opcode byte.
    #[error("insn {pc}: unknown opcode 0x{code:02x}")]
    UnknownOpcode {
        /// Slot index.
        pc: usize,
        /// Opcode byte.
        code: u8,
    },
    /// The opcode is known but the key field selects no row.
    #[error("insn {pc}: opcode 0x{code:02x} with {field} = {value} is not an instruction")]
    UnknownVariant {
        /// Slot index.
        pc: usize,
        /// Opcode byte.
        code: u8,
        /// The key field.
        field: Field,
        /// Its value.
        value: i64,
    },
    /// A reserved field is not zero.
    #[error("insn {pc}: reserved field {field} of opcode 0x{code:02x} is {value}, must be 0")]
    Reserved {
        /// Slot index.
        pc: usize,
        /// Opcode byte.
        code: u8,
        /// The field.
        field: Field,
        /// Its value.
        value: i64,
    },
    /// A register field names a register above r10.
    #[error("insn {pc}: invalid register r{reg} in {field}")]
    BadRegister {
        /// Slot index.
        pc: usize,
        /// The field.
        field: Field,
        /// The register number.
        reg: u8,
    },
    /// An `ld_imm64` is the last slot.
    #[error("insn {pc}: ld_imm64 is missing its second slot")]
    TruncatedLdImm64 {
        /// Slot index.
        pc: usize,
    },
    /// The second slot of an `ld_imm64` is not all zero except `imm`.
    #[error("insn {pc}: second slot of ld_imm64 must be zero except imm")]
    BadLdImm64Tail {
        /// Slot index of the first slot.
        pc: usize,
    },
}

impl DecodeError {
    /// The slot index the error is about, if it is about one.
    pub fn pc(&self) -> Option<usize> {
        match *self {
            DecodeError::BadLength { .. } => None,
            DecodeError::UnknownOpcode { pc, .. }
            | DecodeError::UnknownVariant { pc, .. }
            | DecodeError::Reserved { pc, .. }
            | DecodeError::BadRegister { pc, .. }
            | DecodeError::TruncatedLdImm64 { pc }
            | DecodeError::BadLdImm64Tail { pc } => Some(pc),
        }
    }
}

fn key_matches(key: Key, raw: &RawInsn) -> bool {
    match key {
        Key::None => true,
        Key::Off(v) => raw.off == v,
        Key::Imm(v) => raw.imm == v,
        Key::Src(v) => raw.src == v,
    }
}

fn check_fields(pc: usize, raw: &RawInsn, form: Form, key: Key) -> Result<(), DecodeError> {
    let reserved = |field, value: i64| DecodeError::Reserved {
        pc,
        code: raw.code,
        field,
        value,
    };
    if !form.dst && raw.dst != 0 {
        return Err(reserved(Field::Dst, raw.dst.into()));
    }
    if !form.src && !matches!(key, Key::Src(_)) && raw.src != 0 {
        return Err(reserved(Field::Src, raw.src.into()));
    }
    if !form.off && !matches!(key, Key::Off(_)) && raw.off != 0 {
        return Err(reserved(Field::Off, raw.off.into()));
    }
    if !form.imm && !matches!(key, Key::Imm(_)) && raw.imm != 0 {
        return Err(reserved(Field::Imm, raw.imm.into()));
    }
    for (field, reg, used) in [
        (Field::Dst, raw.dst, form.dst),
        (Field::Src, raw.src, form.src),
    ] {
        if used && reg > 10 {
            return Err(DecodeError::BadRegister { pc, field, reg });
        }
    }
    Ok(())
}

/// Decodes the instruction starting at slot `pc`; returns it and its slot count.
pub fn decode_at(slots: &[RawInsn], pc: usize) -> Result<Insn, DecodeError> {
    let raw = slots[pc];
    let mut rows = table::rows_for_code(raw.code).peekable();
    let Some(&first) = rows.peek() else {
        return Err(DecodeError::UnknownOpcode { pc, code: raw.code });
    };
    let Some(op) = rows.find(|&id| key_matches(table::info(id).key, &raw)) else {
        let (field, value) = match table::info(first).key {
            Key::Off(_) => (Field::Off, raw.off.into()),
            Key::Imm(_) => (Field::Imm, raw.imm.into()),
            _ => (Field::Src, raw.src.into()),
        };
        return Err(DecodeError::UnknownVariant {
            pc,
            code: raw.code,
            field,
            value,
        });
    };
    let info = table::info(op);
    check_fields(pc, &raw, info.form, info.key)?;
    let mut imm = if info.form.imm { i64::from(raw.imm) } else { 0 };
    if let Kind::LdImm64(pseudo) = info.kind {
        let hi = *slots
            .get(pc + 1)
            .ok_or(DecodeError::TruncatedLdImm64 { pc })?;
        if hi.code != 0 || hi.dst != 0 || hi.src != 0 || hi.off != 0 {
            return Err(DecodeError::BadLdImm64Tail { pc });
        }
        if !pseudo.uses_high_imm() && hi.imm != 0 {
            return Err(DecodeError::Reserved {
                pc: pc + 1,
                code: 0,
                field: Field::Imm,
                value: hi.imm.into(),
            });
        }
        imm = (u64::from(raw.imm as u32) | (u64::from(hi.imm as u32) << 32)) as i64;
    }
    Ok(Insn {
        op,
        dst: if info.form.dst { raw.dst } else { 0 },
        src: if info.form.src { raw.src } else { 0 },
        off: if info.form.off { raw.off } else { 0 },
        imm,
    })
}

/// Splits bytes into slots.
pub fn slots(bytes: &[u8]) -> Result<Vec<RawInsn>, DecodeError> {
    if !bytes.len().is_multiple_of(SLOT) {
        return Err(DecodeError::BadLength { len: bytes.len() });
    }
    Ok(bytes
        .chunks_exact(SLOT)
        .map(|c| RawInsn::from_bytes(c.try_into().expect("chunk of 8")))
        .collect())
}

/// Decodes a whole code section. Returns the instructions in order; the slot index of
/// instruction `i` is the sum of the slot counts before it (see [`pcs`]).
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, DecodeError> {
    decode_slots(&slots(bytes)?)
}

/// Decodes slots (see [`decode`]).
pub fn decode_slots(slots: &[RawInsn]) -> Result<Vec<Insn>, DecodeError> {
    let mut out = Vec::with_capacity(slots.len());
    let mut pc = 0;
    while pc < slots.len() {
        let insn = decode_at(slots, pc)?;
        pc += insn.slots();
        out.push(insn);
    }
    Ok(out)
}

/// Encodes instructions into bytes.
pub fn encode(insns: &[Insn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(insns.len() * SLOT);
    for i in insns {
        i.encode_into(&mut out);
    }
    out
}

/// The slot index of each instruction, plus one past the end.
pub fn pcs(insns: &[Insn]) -> Vec<usize> {
    let mut out = Vec::with_capacity(insns.len() + 1);
    let mut pc = 0;
    for i in insns {
        out.push(pc);
        pc += i.slots();
    }
    out.push(pc);
    out
}
