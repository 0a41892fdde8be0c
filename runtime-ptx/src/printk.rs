//! The `trace_printk`/`trace_vprintk`/`puts` ring: where the compiled module writes what
//! the program prints, and the records the host decodes (specs/abi.md, "The printk
//! ring"). The backend writes these records and the host loader reads them; both take the
//! layout from here.
//!
//! A `trace_printk` or `puts` record is [`RECORD_BYTES`] long, its words [`Word`]. A
//! `trace_vprintk` record ([`KIND_TRACE_VPRINTK`]) has a variable size: the same first
//! three words, then [`VARGS_COUNT`] (where `trace_printk` has its first argument) the
//! number of arguments `n` (at most [`MAX_ARGS`]), then the `n` arguments, copied from the
//! program's array: [`vargs_record_bytes`]`(n)` bytes.

/// The ring's descriptor symbol in the module (a GPU ringbuf descriptor, 1527).
pub const DESC_SYMBOL: &str = "bpf2ptx_printk";
/// Bytes of the ring's data (a power of two, as every ring's).
pub const RING_BYTES: u64 = 65536;
/// Bytes of one record: six little-endian u64 words ([`Word`]).
pub const RECORD_BYTES: u64 = 8 * Word::COUNT as u64;

/// The words of a printk record, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Word {
    /// [`KIND_TRACE_PRINTK`], [`KIND_PUTS`] or [`KIND_TRACE_VPRINTK`].
    Kind = 0,
    /// The generic address of the format (trace_printk) or of the string (puts), in a
    /// read-only global-data map.
    Format = 1,
    /// The format's size in bytes (trace_printk; 0 for puts).
    FormatSize = 2,
    /// The three arguments (trace_printk; 0 for puts).
    Arg0 = 3,
    /// The second argument.
    Arg1 = 4,
    /// The third argument.
    Arg2 = 5,
}

impl Word {
    /// Words per record.
    pub const COUNT: usize = 6;

    /// Byte offset of the word in the record.
    pub const fn offset(self) -> u64 {
        8 * self as u64
    }
}

/// [`Word::Kind`] of a `trace_printk` record.
pub const KIND_TRACE_PRINTK: u64 = 0;
/// [`Word::Kind`] of a `puts` record.
pub const KIND_PUTS: u64 = 1;
/// [`Word::Kind`] of a `trace_vprintk` record.
pub const KIND_TRACE_VPRINTK: u64 = 2;

/// The most arguments of a `trace_vprintk` record: Linux's `MAX_BPRINTF_VARARGS`.
pub const MAX_ARGS: usize = 12;
/// The word of a `trace_vprintk` record that holds its argument count (the word of
/// `trace_printk`'s first argument).
pub const VARGS_COUNT: Word = Word::Arg0;
/// Words of a `trace_vprintk` record before its arguments.
pub const VARGS_HEADER_WORDS: usize = VARGS_COUNT as usize + 1;

/// Bytes of a `trace_vprintk` record with `n` arguments.
pub const fn vargs_record_bytes(n: usize) -> u64 {
    8 * (VARGS_HEADER_WORDS + n) as u64
}
