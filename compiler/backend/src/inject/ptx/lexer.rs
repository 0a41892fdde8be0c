//! The tokenizer: splits PTX text into tokens, each carrying the trivia (whitespace and
//! comments) that precedes it, so that concatenating trivia and text gives back the input.

use super::ParseError;

/// What a token is; the parser looks at this and at the text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum TokKind {
    /// Identifiers, registers (`%r1`, `%tid.x`), opcodes (`ld.global.nc.v4.f32`),
    /// directives (`.reg`), labels (`$L__BB0_1`).
    #[default]
    Word,
    /// Numbers: `12`, `0x1F`, `0f3F800000`, `9.5`, `12U`.
    Number,
    /// A double-quoted string, with its quotes.
    Str,
    /// One punctuation character.
    Punct,
    /// A whole `@@DWARF ...` line (old nvcc debug output), kept as one opaque token.
    Opaque,
}

/// What an item or statement keeps of its tokens: their text as written, and where the
/// first one is. Only the first token's leading trivia (where edits insert) and position
/// are needed on their own; the rest is only written, so it is kept as one string, in one
/// allocation with the trivia.
#[derive(Clone, Debug, Default)]
pub(crate) struct Token {
    /// The whitespace and comments before the first token, then the tokens' exact text
    /// (with the trivia between them).
    buf: Box<str>,
    /// Bytes at the end of `buf` that are the tokens' text.
    text_len: usize,
    /// 1-based line of the first token's first byte (0 for tokens inserted by an edit).
    pub line: u32,
    /// 1-based byte column of the first token's first byte.
    pub col: u32,
}

impl Token {
    /// The tokens `toks` (consecutive in their source), as one.
    pub fn join(toks: &[Tok<'_>]) -> Token {
        let Some((first, rest)) = toks.split_first() else {
            return Token::default();
        };
        let text_len = first.text.len()
            + rest
                .iter()
                .map(|t| t.trivia.len() + t.text.len())
                .sum::<usize>();
        let mut b = String::with_capacity(first.trivia.len() + text_len);
        b.push_str(first.trivia);
        b.push_str(first.text);
        for t in rest {
            b.push_str(t.trivia);
            b.push_str(t.text);
        }
        Token {
            buf: b.into_boxed_str(),
            text_len,
            line: first.line,
            col: first.col,
        }
    }

    /// Whitespace and comments before the first token.
    pub fn trivia(&self) -> &str {
        &self.buf[..self.buf.len() - self.text_len]
    }

    /// The tokens' exact text, with the trivia between them.
    pub fn text(&self) -> &str {
        &self.buf[self.buf.len() - self.text_len..]
    }

    /// The trivia, then the text: what writing the token appends.
    pub fn as_written(&self) -> &str {
        &self.buf
    }

    /// Replaces the trivia.
    pub fn set_trivia(&mut self, trivia: &str) {
        let mut b = String::with_capacity(trivia.len() + self.text_len);
        b.push_str(trivia);
        b.push_str(self.text());
        self.buf = b.into_boxed_str();
    }

    /// Inserts `s` into the trivia at byte `at` (a character boundary of the trivia).
    pub fn insert_trivia(&mut self, at: usize, s: &str) {
        let mut b = String::with_capacity(self.buf.len() + s.len());
        b.push_str(&self.buf[..at]);
        b.push_str(s);
        b.push_str(&self.buf[at..]);
        self.buf = b.into_boxed_str();
    }
}

/// One token as the lexer finds it, borrowing its trivia and text from the source: what
/// the parser reads; only what an item keeps is copied ([`Tok::to_token`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tok<'a> {
    /// Whitespace and comments between the previous token and this one.
    pub trivia: &'a str,
    /// The token's exact text.
    pub text: &'a str,
    /// 1-based line of the token's first byte.
    pub line: u32,
    /// 1-based byte column of the token's first byte.
    pub col: u32,
    /// What the token is.
    pub kind: TokKind,
}

impl Tok<'_> {
    /// Whether this is the punctuation `p`.
    pub fn is(&self, p: &str) -> bool {
        self.kind == TokKind::Punct && self.text == p
    }

    /// Whether this is a word starting with `.` (a directive or a modifier).
    pub fn is_dot_word(&self) -> bool {
        self.kind == TokKind::Word && self.text.starts_with('.')
    }
}

/// Punctuation PTX uses (operators in initialisers and addresses, braces, guards, `|` in
/// `setp`'s two destinations).
const PUNCT: &[u8] = b",;:{}[]()+-=<>@!|*/&^~?";

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%' | b'.')
}

fn is_word_cont(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}

/// Splits `src` into tokens and the trivia after the last token.
pub(crate) fn lex(src: &str) -> Result<(Vec<Tok<'_>>, &str), ParseError> {
    let mut tokens = Vec::new();
    let trailing = scan(src, |t| {
        tokens.push(Tok {
            trivia: &src[t.trivia_start..t.start],
            text: src.get(t.start..t.end).unwrap_or_default(),
            line: t.line,
            col: t.col,
            kind: t.kind,
        });
        Ok(())
    })?;
    Ok((tokens, &src[trailing..]))
}

/// One token as [`scan`] finds it: byte offsets into the source, no copies.
pub(crate) struct Span {
    /// Where the token's leading trivia starts.
    pub trivia_start: usize,
    /// Where the token starts.
    pub start: usize,
    /// Where it ends.
    pub end: usize,
    /// 1-based line of its first byte.
    pub line: u32,
    /// 1-based byte column of its first byte.
    pub col: u32,
    /// What it is.
    pub kind: TokKind,
}

/// The tokenizer without allocation: calls `each` with every token in order (stopping
/// at its first error) and returns where the trailing trivia starts. [`lex`] is this,
/// keeping the tokens.
pub(crate) fn scan(
    src: &str,
    mut each: impl FnMut(Span) -> Result<(), ParseError>,
) -> Result<usize, ParseError> {
    let b = src.as_bytes();
    let mut pos = 0usize;
    let mut line = 1u32;
    let mut line_start = 0usize;
    let col_of = |pos: usize, line_start: usize| (pos - line_start + 1) as u32;
    loop {
        let trivia_start = pos;
        // Trivia: whitespace, `//` comments (up to the line break), `/* */` comments.
        loop {
            match b.get(pos) {
                Some(b'\n') => {
                    pos += 1;
                    line += 1;
                    line_start = pos;
                }
                Some(b' ' | b'\t' | b'\r' | 0x0b | 0x0c) => pos += 1,
                Some(b'/') if b.get(pos + 1) == Some(&b'/') => {
                    while pos < b.len() && b[pos] != b'\n' {
                        pos += 1;
                    }
                }
                Some(b'/') if b.get(pos + 1) == Some(&b'*') => {
                    let (l, c) = (line, col_of(pos, line_start));
                    pos += 2;
                    loop {
                        match b.get(pos) {
                            None => {
                                return Err(ParseError::UnterminatedComment { line: l, column: c })
                            }
                            Some(b'*') if b.get(pos + 1) == Some(&b'/') => {
                                pos += 2;
                                break;
                            }
                            Some(b'\n') => {
                                pos += 1;
                                line += 1;
                                line_start = pos;
                            }
                            Some(_) => pos += 1,
                        }
                    }
                }
                _ => break,
            }
        }
        let Some(&c) = b.get(pos) else {
            return Ok(trivia_start);
        };
        let start = pos;
        let col = col_of(pos, line_start);
        let kind = if b[pos..].starts_with(b"@@DWARF") {
            while pos < b.len() && b[pos] != b'\n' {
                pos += 1;
            }
            // A CRLF line's `\r` is trivia, as on every other line.
            if pos > start && b[pos - 1] == b'\r' {
                pos -= 1;
            }
            TokKind::Opaque
        } else if is_word_start(c) {
            pos += 1;
            loop {
                if b.get(pos).is_some_and(|&c| is_word_cont(c)) {
                    pos += 1;
                } else if b[pos..].starts_with(b"::")
                    && b.get(pos + 2).is_some_and(|&c| is_word_cont(c))
                {
                    // `shared::cta`, `L2::128B`, `mbarrier::complete_tx::bytes`.
                    pos += 2;
                } else {
                    break;
                }
            }
            TokKind::Word
        } else if c.is_ascii_digit() {
            pos += 1;
            while b.get(pos).is_some_and(|&c| is_word_cont(c)) {
                pos += 1;
            }
            TokKind::Number
        } else if c == b'"' {
            pos += 1;
            loop {
                match b.get(pos) {
                    None | Some(b'\n') => {
                        return Err(ParseError::UnterminatedString { line, column: col })
                    }
                    Some(b'\\') if b.get(pos + 1).is_some_and(|&c| c != b'\n') => pos += 2,
                    Some(b'"') => {
                        pos += 1;
                        break;
                    }
                    Some(_) => pos += 1,
                }
            }
            TokKind::Str
        } else if PUNCT.contains(&c) {
            pos += 1;
            TokKind::Punct
        } else {
            let found = src[pos..].chars().next().unwrap_or('\u{fffd}');
            return Err(ParseError::UnexpectedChar {
                found,
                line,
                column: col,
            });
        };
        // A string escape may have stepped into a multi-byte character; the closing quote
        // is ASCII, so `pos` is on a character boundary here.
        each(Span {
            trivia_start,
            start,
            end: pos,
            line,
            col,
            kind,
        })?;
    }
}
