//! The BPF instruction set: one opcode table ([`table`]) and everything derived from it —
//! binary decoding and encoding ([`insn`]), each instruction's control flow, register and
//! memory effects ([`effect`]), the disassembler ([`disasm`]) and the text assembler
//! ([`asm`]).

pub mod asm;
pub mod disasm;
pub mod effect;
pub mod insn;
pub mod table;

pub use asm::{assemble, AsmError, AsmErrorKind, Assembly};
pub use effect::{Flow, RegEffect};
pub use insn::{decode, encode, DecodeError, Insn, RawInsn};
pub use table::{Kind, OpInfo, OPCODES};
