//! `bpf_snprintf` (helper 165): the one home of its format language, shared by the
//! verifier (which rejects a bad format at load time, as Linux does), the backend (which
//! lowers each call to a sequence specialised for its constant format) and the reference
//! interpreter (which formats with [`Format::render`]).
//!
//! The language is what Linux's `bpf_bprintf_prepare` accepts, narrowed to what has a GPU
//! meaning: literal bytes (printable ASCII or white space), `%%`, and conversions
//! `%[flags][width]conv` with flags `0 + - space`, a width of decimal digits, and
//!
//! | conversion | argument | prints |
//! |---|---|---|
//! | `%d %i`, `%ld %li`, `%lld %lli` | low 32 bits sign-extended, or all 64 | signed decimal |
//! | `%u %x %X` (and `l`, `ll`) | low 32 bits, or all 64 | unsigned decimal, hex |
//! | `%c` | low 8 bits | one byte |
//! | `%s`, `%pks` | a pointer the verifier bounded | the string up to its NUL |
//! | `%px` | all 64 bits | 16 hex digits, zero-padded (Linux's raw pointer) |
//!
//! Linux's other pointer conversions are refused: `%p` and `%pK` print a hashed or
//! restricted kernel address, `%ps`, `%pS` and `%pB` a kernel symbol, `%pI4`/`%pi4`/
//! `%pI6`/`%pi6` an IP address read through a pointer Linux may fault on, `%pus` a string
//! in user memory. None of these has a meaning on the GPU.
//!
//! Numbers follow Linux's `number()`: a sign (`-`, or `+`/space for signed conversions
//! with those flags) counts towards the width; `0` pads between sign and digits; `-`
//! pads with spaces on the right and overrides `0`. Strings and characters pad with
//! spaces only.

use thiserror::Error;

/// The most arguments of one call: Linux's `MAX_BPRINTF_VARARGS`.
pub const MAX_ARGS: usize = crate::printk::MAX_ARGS;

/// The widest field Linux formats (`FIELD_WIDTH_MAX`); wider widths are clamped to it.
pub const MAX_WIDTH: u32 = (1 << 23) - 1;

/// `-EINVAL`: what Linux's `bpf_snprintf` returns for a data length that is not a
/// multiple of 8 or exceeds [`MAX_ARGS`] words, or a format it refuses (only a program
/// no verifier checked can get it).
pub const EINVAL: i64 = -22;

/// Why a format is refused. `offset` is the byte offset in the format of the `%` that
/// starts the conversion (or of the offending byte).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FormatError {
    /// No NUL ends the format within its bytes.
    #[error("the format has no terminating NUL")]
    Unterminated,
    /// A byte that is neither printable ASCII nor white space (Linux refuses it too).
    #[error("byte {byte:#04x} at offset {offset} is not printable ASCII")]
    NotPrintable {
        /// Offset of the byte.
        offset: usize,
        /// The byte.
        byte: u8,
    },
    /// More conversions than the data array has words.
    #[error("conversion `{spec}` at offset {offset} has no argument: the data holds {args} (data_len / 8)")]
    MissingArgument {
        /// Offset of the `%`.
        offset: usize,
        /// The conversion as written.
        spec: String,
        /// Words in the data array.
        args: usize,
    },
    /// A conversion Linux refuses.
    #[error("`{spec}` at offset {offset} is not a conversion bpf_snprintf accepts (d i u x X with l/ll, c, s, px, pks, %%)")]
    Invalid {
        /// Offset of the `%`.
        offset: usize,
        /// The conversion as written, up to the byte that makes it invalid.
        spec: String,
    },
    /// A conversion Linux accepts that has no meaning on the GPU.
    #[error("`{spec}` at offset {offset} has no GPU meaning: {why}")]
    NotOnGpu {
        /// Offset of the `%`.
        offset: usize,
        /// The conversion as written.
        spec: String,
        /// Why, and what to use instead.
        why: &'static str,
    },
}

/// Flags of a conversion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// `-`: pad on the right.
    pub left: bool,
    /// `+`: a `+` before non-negative signed numbers.
    pub plus: bool,
    /// space: a space before non-negative signed numbers (unless `+`).
    pub space: bool,
    /// `0`: pad numbers with zeros after the sign (unless `-`).
    pub zero: bool,
}

/// What a conversion prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An integer in base 10 or 16.
    Int {
        /// Base 16 (`x`, `X`, `px`) rather than 10.
        hex: bool,
        /// Upper-case hex digits (`X`).
        upper: bool,
        /// Signed (`d`, `i`).
        signed: bool,
        /// All 64 bits (`l`, `ll`, `px`) rather than the low 32.
        long: bool,
    },
    /// One byte, the argument's low 8 bits (`c`).
    Char,
    /// The NUL-terminated string the argument points to (`s`, `pks`).
    Str,
}

/// One conversion: its argument is word `arg` of the data array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv {
    /// Index of its argument in the data array.
    pub arg: usize,
    /// Flags.
    pub flags: Flags,
    /// Minimum field width (0: none).
    pub width: u32,
    /// What it prints.
    pub kind: Kind,
}

/// A piece of a parsed format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Bytes printed as they are (`%%` already made `%`).
    Literal(Vec<u8>),
    /// A conversion.
    Conv(Conv),
}

/// A format accepted for a data array of a given number of words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pieces: Vec<Piece>,
}

/// Bits of the spec word the runtime's formatting functions take ([`Conv::spec_word`];
/// specs/abi.md, "bpf_snprintf").
pub mod spec {
    /// Base 16.
    pub const HEX: u32 = 1;
    /// Upper-case hex digits.
    pub const UPPER: u32 = 2;
    /// Signed: the argument is a sign-extended two's-complement number.
    pub const SIGNED: u32 = 4;
    /// `-`.
    pub const LEFT: u32 = 8;
    /// `+`.
    pub const PLUS: u32 = 16;
    /// space.
    pub const SPACE: u32 = 32;
    /// `0`.
    pub const ZERO: u32 = 64;
    /// The width is the word shifted right by this.
    pub const WIDTH_SHIFT: u32 = 8;
}

impl Conv {
    /// The conversion as one 32-bit word for the runtime's functions: the [`spec`] bits,
    /// and the width in the bits from [`spec::WIDTH_SHIFT`] ([`MAX_WIDTH`] fits).
    pub fn spec_word(&self) -> u32 {
        let mut w = self.width << spec::WIDTH_SHIFT;
        let f = self.flags;
        for (on, bit) in [
            (f.left, spec::LEFT),
            (f.plus, spec::PLUS),
            (f.space, spec::SPACE),
            (f.zero, spec::ZERO),
        ] {
            if on {
                w |= bit;
            }
        }
        if let Kind::Int {
            hex, upper, signed, ..
        } = self.kind
        {
            for (on, bit) in [
                (hex, spec::HEX),
                (upper, spec::UPPER),
                (signed, spec::SIGNED),
            ] {
                if on {
                    w |= bit;
                }
            }
        }
        w
    }

    /// The argument as the runtime's integer function takes it: the low 32 bits
    /// sign- or zero-extended for an `int` conversion, all 64 otherwise.
    pub fn int_value(&self, arg: u64) -> u64 {
        match self.kind {
            Kind::Int {
                long: false,
                signed: true,
                ..
            } => arg as u32 as i32 as i64 as u64,
            Kind::Int { long: false, .. } => u64::from(arg as u32),
            _ => arg,
        }
    }
}

/// Whether Linux's `isspace` holds (space, `\t \n \v \f \r`).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t'..=b'\r')
}

/// The format at the start of `bytes` (read-only data from the format's offset to the end
/// of its map), ending at the first NUL, for a data array of `args` words. Refuses what
/// Linux's `bpf_bprintf_prepare` refuses and the conversions without a GPU meaning.
pub fn parse(bytes: &[u8], args: usize) -> Result<Format, FormatError> {
    let end = bytes
        .iter()
        .position(|&b| b == 0)
        .ok_or(FormatError::Unterminated)?;
    let fmt = &bytes[..end];
    // Reads past the end see the NUL, as Linux's parser does.
    let at = |i: usize| fmt.get(i).copied().unwrap_or(0);
    if let Some(offset) = fmt
        .iter()
        .position(|&b| !b.is_ascii() || !(b.is_ascii_graphic() || b == b' ' || is_space(b)))
    {
        return Err(FormatError::NotPrintable {
            offset,
            byte: fmt[offset],
        });
    }
    let mut pieces = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    let mut arg = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            lit.push(fmt[i]);
            i += 1;
            continue;
        }
        if at(i + 1) == b'%' {
            lit.push(b'%');
            i += 2;
            continue;
        }
        let start = i;
        let spec_to =
            |j: usize| String::from_utf8_lossy(&fmt[start..(j + 1).min(fmt.len())]).into_owned();
        if arg >= args {
            // The conversion as far as its letter, for the message.
            let mut j = start + 1;
            while j < fmt.len() && !fmt[j].is_ascii_alphabetic() {
                j += 1;
            }
            return Err(FormatError::MissingArgument {
                offset: start,
                spec: spec_to(j),
                args,
            });
        }
        i += 1;
        let mut flags = Flags::default();
        loop {
            match at(i) {
                b'0' => flags.zero = true,
                b'+' => flags.plus = true,
                b'-' => flags.left = true,
                b' ' => flags.space = true,
                _ => break,
            }
            i += 1;
        }
        let mut width: Option<u32> = None;
        if (b'1'..=b'9').contains(&at(i)) {
            let mut w: u32 = 0;
            while at(i).is_ascii_digit() {
                w = w.saturating_mul(10).saturating_add(u32::from(at(i) - b'0'));
                i += 1;
            }
            width = Some(w.min(MAX_WIDTH));
        }
        let invalid = |j: usize| FormatError::Invalid {
            offset: start,
            spec: spec_to(j),
        };
        let kind = match at(i) {
            b'p' => match (at(i + 1), at(i + 2)) {
                (b'k', b's') => {
                    i += 2;
                    Kind::Str
                }
                (b'x', _) => {
                    i += 1;
                    // Linux prints a raw pointer as 16 zero-padded hex digits unless the
                    // conversion gives a width.
                    if width.is_none() {
                        width = Some(16);
                        flags.zero = true;
                    }
                    Kind::Int {
                        hex: true,
                        upper: false,
                        signed: false,
                        long: true,
                    }
                }
                (n, m) => {
                    let (len, why) = match (n, m) {
                        (b'u', b's') => (3, "a string in user memory (use %s)"),
                        (b'K', _) => (2, "a restricted kernel address (use %px)"),
                        (b's' | b'S' | b'B', _) => (2, "a kernel symbol"),
                        (b'i' | b'I', b'4' | b'6') => (3, "an IP address read through a pointer"),
                        (0, _) => (1, "a hashed kernel address (use %px)"),
                        (c, _) if is_space(c) || c.is_ascii_punctuation() => {
                            (1, "a hashed kernel address (use %px)")
                        }
                        _ => return Err(invalid(i + 1)),
                    };
                    return Err(FormatError::NotOnGpu {
                        offset: start,
                        spec: spec_to(i + len - 1),
                        why,
                    });
                }
            },
            b's' => Kind::Str,
            b'c' => Kind::Char,
            _ => {
                // `l` or `ll`: both mean 64 bits (a third `l` is refused below).
                let mut long = false;
                for _ in 0..2 {
                    if at(i) == b'l' {
                        long = true;
                        i += 1;
                    }
                }
                let (hex, upper, signed) = match at(i) {
                    b'd' | b'i' => (false, false, true),
                    b'u' => (false, false, false),
                    b'x' => (true, false, false),
                    b'X' => (true, true, false),
                    _ => return Err(invalid(i)),
                };
                Kind::Int {
                    hex,
                    upper,
                    signed,
                    long,
                }
            }
        };
        // A string conversion must end there (Linux: NUL, white space or punctuation).
        if kind == Kind::Str {
            let next = at(i + 1);
            if next != 0 && !is_space(next) && !next.is_ascii_punctuation() {
                return Err(invalid(i + 1));
            }
        }
        if flags.left {
            flags.zero = false;
        }
        if !lit.is_empty() {
            pieces.push(Piece::Literal(std::mem::take(&mut lit)));
        }
        pieces.push(Piece::Conv(Conv {
            arg,
            flags,
            width: width.unwrap_or(0),
            kind,
        }));
        arg += 1;
        i += 1;
    }
    if !lit.is_empty() {
        pieces.push(Piece::Literal(lit));
    }
    Ok(Format { pieces })
}

impl Format {
    /// The pieces in order.
    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    /// The conversions in order.
    pub fn convs(&self) -> impl Iterator<Item = &Conv> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Conv(c) => Some(c),
            Piece::Literal(_) => None,
        })
    }

    /// The whole formatted text, without a NUL and untruncated: `args` are the data
    /// array's words, `string(arg, ptr)` the bytes before the NUL of the string a `%s`
    /// argument points to (as far as the caller may read). The reference semantics the
    /// GPU lowering must match.
    pub fn render(&self, args: &[u64], string: &mut dyn FnMut(usize, u64) -> Vec<u8>) -> Vec<u8> {
        let mut out = Vec::new();
        for p in &self.pieces {
            match p {
                Piece::Literal(b) => out.extend_from_slice(b),
                Piece::Conv(c) => {
                    let a = args.get(c.arg).copied().unwrap_or(0);
                    match c.kind {
                        Kind::Int { .. } => render_int(&mut out, c, c.int_value(a)),
                        Kind::Char => pad_around(&mut out, c, &[a as u8]),
                        Kind::Str => pad_around(&mut out, c, &string(c.arg, a)),
                    }
                }
            }
        }
        out
    }
}

/// `body` padded with spaces to the conversion's width (on the right for `-`).
fn pad_around(out: &mut Vec<u8>, c: &Conv, body: &[u8]) {
    let pad = (c.width as usize).saturating_sub(body.len());
    if !c.flags.left {
        out.resize(out.len() + pad, b' ');
    }
    out.extend_from_slice(body);
    if c.flags.left {
        out.resize(out.len() + pad, b' ');
    }
}

/// An integer conversion of `v` (already narrowed by [`Conv::int_value`]).
fn render_int(out: &mut Vec<u8>, c: &Conv, v: u64) {
    let Kind::Int {
        hex, upper, signed, ..
    } = c.kind
    else {
        unreachable!("render_int is called for integer conversions");
    };
    let negative = signed && (v as i64) < 0;
    let sign = if negative {
        Some(b'-')
    } else if signed && c.flags.plus {
        Some(b'+')
    } else if signed && c.flags.space {
        Some(b' ')
    } else {
        None
    };
    let mut mag = if negative { v.wrapping_neg() } else { v };
    let base = if hex { 16 } else { 10 };
    let mut digits = Vec::new();
    loop {
        let d = (mag % base) as u8;
        digits.push(match d {
            0..=9 => b'0' + d,
            _ if upper => b'A' + d - 10,
            _ => b'a' + d - 10,
        });
        mag /= base;
        if mag == 0 {
            break;
        }
    }
    digits.reverse();
    let field = digits.len() + usize::from(sign.is_some());
    let pad = (c.width as usize).saturating_sub(field);
    if !c.flags.left && !c.flags.zero {
        out.resize(out.len() + pad, b' ');
    }
    out.extend(sign);
    if !c.flags.left && c.flags.zero {
        out.resize(out.len() + pad, b'0');
    }
    out.extend_from_slice(&digits);
    if c.flags.left {
        out.resize(out.len() + pad, b' ');
    }
}

/// Writes `text` (a [`Format::render`] result) into `dst` as `bpf_snprintf` leaves it:
/// at most `dst.len() - 1` bytes of it, a NUL, and zeros to the end of `dst` (Linux leaves
/// the bytes after the NUL as they were; bpf2ptx zeroes them, so every byte the verifier
/// counts as written has a defined value). Nothing is written to an empty `dst`. Returns
/// the helper's result: the untruncated length plus one for the NUL.
pub fn write_truncated(dst: &mut [u8], text: &[u8]) -> u64 {
    if let Some(cap) = dst.len().checked_sub(1) {
        let n = text.len().min(cap);
        dst[..n].copy_from_slice(&text[..n]);
        dst[n..].fill(0);
    }
    text.len() as u64 + 1
}

/// PTX prototypes of the formatting functions ([`FUNCTIONS`]).
pub const DECLARATIONS: &str = "\
.func (.param .b64 ret) bpf2ptx_fmt_int(.param .b64 out, .param .b64 cap, .param .b64 len, \
.param .b64 value, .param .b32 spec);
.func (.param .b64 ret) bpf2ptx_fmt_char(.param .b64 out, .param .b64 cap, .param .b64 len, \
.param .b64 value, .param .b32 spec);
.func (.param .b64 ret) bpf2ptx_fmt_str(.param .b64 out, .param .b64 cap, .param .b64 len, \
.param .b64 src, .param .b64 max, .param .b32 spec);
.func bpf2ptx_fmt_end(.param .b64 out, .param .b64 size, .param .b64 len);
.func (.param .b64 ret) bpf2ptx_fmt_load(.param .b64 src);
";

/// PTX definitions of the formatting functions `bpf2ptx_fmt_*` that a `bpf_snprintf`
/// call's lowering calls (specs/abi.md, "bpf_snprintf"): each takes the output `out`, its
/// capacity `cap` (`str_size - 1`, or 0) and the length `len` formatted so far, writes the
/// bytes of its conversion that fall below `cap`, and returns the new length, so the
/// untruncated length comes out at the end whatever the size. No atomics: the same text
/// at every scope.
pub const FUNCTIONS: &str = include_str!("ptx/snprintf.ptx");

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(s: &str, args: usize) -> Result<Format, FormatError> {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        parse(&b, args)
    }

    fn show(s: &str, args: &[u64]) -> String {
        let f = fmt(s, args.len()).unwrap_or_else(|e| panic!("{s}: {e}"));
        String::from_utf8(f.render(args, &mut |_, p| format!("<{p}>").into_bytes())).unwrap()
    }

    /// Outputs as Linux's `bpf_snprintf` gives them (checked against the kernel by
    /// tests/tests/snprintf.rs where bpf(2) is usable).
    #[test]
    fn renders_like_linux() {
        assert_eq!(
            show("%d|%i|%u", &[u64::MAX, 5, u64::MAX]),
            "-1|5|4294967295"
        );
        assert_eq!(
            show("%lld %llu", &[u64::MAX, u64::MAX]),
            "-1 18446744073709551615"
        );
        assert_eq!(
            show("%x %X %lx", &[0xabc, 0xabc, 1 << 40]),
            "abc ABC 10000000000"
        );
        assert_eq!(
            show("[%5d][%-5d][%05d]", &[42, 42, (-42i64) as u64]),
            "[   42][42   ][-0042]"
        );
        assert_eq!(
            show("[%+d][% d][%+u][%+x]", &[7, 7, 7, 7]),
            "[+7][ 7][7][7]"
        );
        assert_eq!(show("[%-05d]", &[3]), "[3    ]");
        assert_eq!(show("[%c][%3c][%-3c]", &[65, 66, 67]), "[A][  B][C  ]");
        assert_eq!(show("%px", &[0x1234]), "0000000000001234");
        assert_eq!(
            show("%4px|%-px|", &[0x1234, 0x12]),
            "1234|12              |"
        );
        assert_eq!(show("100%% [%6s]", &[9]), "100% [   <9>]");
        assert_eq!(show("%pks.", &[1]), "<1>.");
        assert_eq!(show("%lld", &[i64::MIN as u64]), "-9223372036854775808");
        assert_eq!(show("%d", &[0]), "0");
    }

    #[test]
    fn refuses_what_linux_refuses() {
        let invalid = |s: &str| matches!(fmt(s, 12), Err(FormatError::Invalid { .. }));
        for s in [
            "%", "%5%", "%hd", "%lllx", "%.3d", "%#x", "%sx", "%z", "%pz", "%lc", "%f",
        ] {
            assert!(invalid(s), "{s}: {:?}", fmt(s, 12));
        }
        for s in [
            "%d", "%lli", "%-08lX", "%s", "%s-", "%s ", "%c", "%px", "%pks",
        ] {
            assert!(fmt(s, 12).is_ok(), "{s}: {:?}", fmt(s, 12));
        }
        assert_eq!(
            fmt("a\x01", 0),
            Err(FormatError::NotPrintable { offset: 1, byte: 1 })
        );
        assert!(fmt("\t\n ok", 0).is_ok());
        assert_eq!(parse(b"no nul", 0), Err(FormatError::Unterminated));
        assert_eq!(
            fmt("%d %d", 1),
            Err(FormatError::MissingArgument {
                offset: 3,
                spec: "%d".into(),
                args: 1
            })
        );
        // Fewer conversions than words is fine (Linux too).
        assert!(fmt("%d", 12).is_ok());
    }

    #[test]
    fn refuses_pointer_conversions_without_gpu_meaning() {
        for (s, spec) in [
            ("%p", "%p"),
            ("%p ", "%p"),
            ("%pK", "%pK"),
            ("%pS", "%pS"),
            ("%ps", "%ps"),
            ("%pB", "%pB"),
            ("%pI4", "%pI4"),
            ("%pi6", "%pi6"),
            ("%pus", "%pus"),
        ] {
            match fmt(s, 1) {
                Err(FormatError::NotOnGpu { spec: got, .. }) => assert_eq!(got, spec, "{s}"),
                other => panic!("{s}: {other:?}"),
            }
        }
    }

    #[test]
    fn truncates_and_terminates() {
        let mut b = [0xffu8; 4];
        assert_eq!(write_truncated(&mut b, b"hello"), 6);
        assert_eq!(&b, b"hel\0");
        let mut b = [0xffu8; 8];
        assert_eq!(write_truncated(&mut b, b"hi"), 3);
        assert_eq!(&b, b"hi\0\0\0\0\0\0");
        assert_eq!(write_truncated(&mut [], b"hi"), 3);
    }

    #[test]
    fn spec_words_carry_flags_and_width() {
        let f = fmt("%-12lX", 1).unwrap();
        let c = f.convs().next().unwrap();
        assert_eq!(
            c.spec_word(),
            spec::LEFT | spec::HEX | spec::UPPER | (12 << spec::WIDTH_SHIFT)
        );
        assert_eq!(c.int_value(u64::MAX), u64::MAX);
        let d = *fmt("%d", 1).unwrap().convs().next().unwrap();
        assert_eq!(d.int_value(0xffff_ffff), u64::MAX);
        assert_eq!(d.int_value(0x1_0000_0005), 5);
    }

    /// Every function the PTX text defines is declared, and the other way round.
    #[test]
    fn declarations_match_definitions() {
        for decl in DECLARATIONS.split(";\n").filter(|d| !d.trim().is_empty()) {
            let name = decl
                .split_whitespace()
                .find_map(|w| w.strip_prefix("bpf2ptx_fmt_"))
                .and_then(|w| w.split('(').next())
                .unwrap_or_else(|| panic!("{decl}"));
            let name = format!("bpf2ptx_fmt_{name}");
            assert!(FUNCTIONS.contains(&format!(" {name}(")), "{name}");
        }
        assert_eq!(FUNCTIONS.matches("\n.func ").count(), 6);
    }
}
