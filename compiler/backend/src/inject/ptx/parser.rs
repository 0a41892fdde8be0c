//! The parser: groups tokens into items and statements and builds the structured view.
//!
//! Each item or statement is found by scanning ahead (brackets balanced, up to `;` or the
//! end of the line), its structure is read from that token slice, and then the tokens are
//! moved into it, so every token lands in exactly one place and in order: that is what
//! makes writing lossless.

use super::lexer::{lex, Tok, TokKind, Token};
use super::{
    is_linkage, is_space, Declaration, Directive, Function, FunctionKind, Guard, Instruction, Item,
    ItemKind, Module, Opcode, Operand, Param, ParseError, Statement, StatementKind, Var,
    MAX_NESTING,
};

/// Directives that end at the end of their line instead of at `;`.
const LINE_DIRECTIVES: &[&str] = &[".version", ".target", ".address_size", ".file", ".loc"];

/// Operand nesting (vectors in lists) beyond which operands stay [`Operand::Other`].
const OPERAND_DEPTH: usize = 8;

pub(crate) fn parse_module(text: &str) -> Result<Module, ParseError> {
    let (toks, trailing) = lex(text)?;
    let mut p = Parser { toks, pos: 0 };
    let mut items = Vec::new();
    while p.pos < p.toks.len() {
        items.push(p.item()?);
    }
    Ok(Module {
        items,
        trailing: trailing.to_string(),
    })
}

/// Parses body statements (for an edit): balanced blocks, no `}` closing the function.
pub(crate) fn parse_fragment(text: &str) -> Result<(Vec<Statement>, String), ParseError> {
    let (toks, trailing) = lex(text)?;
    let mut p = Parser { toks, pos: 0 };
    let mut depth = 0;
    let mut out = Vec::new();
    while let Some(t) = p.toks.get(p.pos) {
        if t.is("}") && depth == 0 {
            return Err(unbalanced(t, "anything"));
        }
        out.push(p.statement(&mut depth)?);
    }
    if depth > 0 {
        let open = out
            .iter()
            .rev()
            .find(|s| s.kind == StatementKind::BlockOpen);
        let (line, column) = open.map_or((1, 1), |s| (s.tokens.line, s.tokens.col));
        return Err(ParseError::UnexpectedEof {
            expected: "`}`",
            line,
            column,
        });
    }
    Ok((out, trailing.to_string()))
}

/// The cheap check of text to be inserted as text only ([`Function::insert_text_before`]):
/// it lexes, and its blocks balance and nest no deeper than a body may (the statements
/// themselves are not parsed). Errors are those [`parse_fragment`] gives for the same
/// faults.
///
/// [`Function::insert_text_before`]: super::Function::insert_text_before
pub(crate) fn check_fragment(text: &str) -> Result<(), ParseError> {
    if balances_plainly(text) {
        return Ok(());
    }
    // (line, column) of each open `{`; tokens are not kept.
    let mut open: Vec<(u32, u32)> = Vec::new();
    super::lexer::scan(text, |t| {
        if t.kind != TokKind::Punct {
            return Ok(());
        }
        match &text[t.start..t.end] {
            "{" if open.len() >= MAX_NESTING => Err(ParseError::TooDeep {
                line: t.line,
                column: t.col,
            }),
            "{" => {
                open.push((t.line, t.col));
                Ok(())
            }
            "}" if open.pop().is_none() => Err(ParseError::Unbalanced {
                found: "}".into(),
                open: "anything",
                line: t.line,
                column: t.col,
            }),
            _ => Ok(()),
        }
    })?;
    match open.last() {
        Some(&(line, column)) => Err(ParseError::UnexpectedEof {
            expected: "`}`",
            line,
            column,
        }),
        None => Ok(()),
    }
}

/// The common case of [`check_fragment`] without the lexer: `true` when `text` has no
/// string, no `/*` comment, no `@@` and outside `//` comments only bytes that are
/// whitespace or start or continue a token (so it lexes, and every `{` `}` byte outside
/// `//` comments is a punctuation token), and those braces balance, nesting no deeper
/// than [`MAX_NESTING`]. `false` says nothing: the lexer decides (and gives the error).
fn balances_plainly(text: &str) -> bool {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        i += 1;
        if PLAIN[c as usize] {
            continue;
        }
        match c {
            b'{' if depth >= MAX_NESTING => return false,
            b'{' => depth += 1,
            b'}' if depth == 0 => return false,
            b'}' => depth -= 1,
            b'/' if b.get(i) == Some(&b'*') => return false,
            b'/' if b.get(i) == Some(&b'/') => {
                // Up to the line break, as the lexer's trivia does.
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'/' => {}
            b'@' if b.get(i) == Some(&b'@') => return false,
            b'@' => {}
            // A string, or a byte that starts no token.
            _ => return false,
        }
    }
    depth == 0
}

/// The bytes [`balances_plainly`] passes over: whitespace and the bytes that start or
/// continue a token, but for `{ } / @` (looked at) and `"` (refused).
const PLAIN: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'_' | b'$'
                    | b'%'
                    | b'.'
                    | b' '
                    | b'\t'
                    | b'\r'
                    | b'\n'
                    | 0x0b
                    | 0x0c
                    | b','
                    | b';'
                    | b':'
                    | b'['
                    | b']'
                    | b'('
                    | b')'
                    | b'+'
                    | b'-'
                    | b'='
                    | b'<'
                    | b'>'
                    | b'!'
                    | b'|'
                    | b'*'
                    | b'&'
                    | b'^'
                    | b'~'
                    | b'?'
            );
        c += 1;
    }
    t
};

struct Parser<'a> {
    toks: Vec<Tok<'a>>,
    pos: usize,
}

fn unexpected(t: &Tok, expected: &'static str) -> ParseError {
    ParseError::Unexpected {
        found: t.text.to_string(),
        expected,
        line: t.line,
        column: t.col,
    }
}

fn unbalanced(t: &Tok, open: &'static str) -> ParseError {
    ParseError::Unbalanced {
        found: t.text.to_string(),
        open,
        line: t.line,
        column: t.col,
    }
}

fn closer_of(t: &Tok) -> Option<&'static str> {
    if t.kind != TokKind::Punct {
        return None;
    }
    match t.text {
        "(" => Some(")"),
        "[" => Some("]"),
        "{" => Some("}"),
        _ => None,
    }
}

fn is_closer(t: &Tok) -> bool {
    t.kind == TokKind::Punct && matches!(t.text, ")" | "]" | "}")
}

fn describe(closer: &str) -> &'static str {
    match closer {
        ")" => "`(`",
        "]" => "`[`",
        _ => "`{`",
    }
}

impl<'a> Parser<'a> {
    fn tok(&self, i: usize) -> Option<&Tok<'a>> {
        self.toks.get(i)
    }

    fn eof(&self, start: usize, expected: &'static str) -> ParseError {
        let (line, column) = self.tok(start).map_or((1, 1), |t| (t.line, t.col));
        ParseError::UnexpectedEof {
            expected,
            line,
            column,
        }
    }

    /// The tokens `pos..end`, as kept ([`Token::join`]), and `pos` moved past them.
    fn take(&mut self, end: usize) -> Token {
        let end = end.min(self.toks.len());
        let start = self.pos.min(end);
        self.pos = end;
        Token::join(&self.toks[start..end])
    }

    /// Index after the `;` that ends the statement starting at `start` (brackets balanced).
    fn scan_semicolon(&self, start: usize) -> Result<usize, ParseError> {
        self.scan(start, true)
    }

    /// Index after the bracket that closes the one at `start`.
    fn scan_balanced(&self, start: usize) -> Result<usize, ParseError> {
        self.scan(start, false)
    }

    fn scan(&self, start: usize, to_semicolon: bool) -> Result<usize, ParseError> {
        let mut stack: Vec<&'static str> = Vec::new();
        let mut i = start;
        while let Some(t) = self.tok(i) {
            if let Some(c) = closer_of(t) {
                if stack.len() >= MAX_NESTING {
                    return Err(ParseError::TooDeep {
                        line: t.line,
                        column: t.col,
                    });
                }
                stack.push(c);
            } else if is_closer(t) {
                match stack.last() {
                    Some(&c) if c == t.text => {
                        stack.pop();
                        if !to_semicolon && stack.is_empty() {
                            return Ok(i + 1);
                        }
                    }
                    Some(&c) => return Err(unbalanced(t, describe(c))),
                    None if to_semicolon => return Err(unexpected(t, "`;`")),
                    None => return Err(unbalanced(t, "anything")),
                }
            } else if to_semicolon && stack.is_empty() && t.is(";") {
                return Ok(i + 1);
            } else if t.kind == TokKind::Opaque && stack.is_empty() {
                return Err(unexpected(t, "`;`"));
            }
            i += 1;
        }
        Err(self.eof(
            start,
            if to_semicolon {
                "`;`"
            } else {
                "a closing bracket"
            },
        ))
    }

    /// Index after the last token on the line of the token at `start`.
    fn scan_line(&self, start: usize) -> usize {
        let line = self.tok(start).map_or(0, |t| t.line);
        let mut i = start + 1;
        while self.tok(i).is_some_and(|t| t.line == line) {
            i += 1;
        }
        i
    }

    fn item(&mut self) -> Result<Item, ParseError> {
        let start = self.pos;
        let Some(t) = self.tok(start) else {
            return Err(self.eof(start, "an item"));
        };
        let (end, kind) = if t.kind == TokKind::Opaque {
            (
                start + 1,
                ItemKind::Directive(Directive {
                    name: t.text.to_string(),
                    args: vec![],
                }),
            )
        } else if !t.is_dot_word() {
            return Err(unexpected(t, "a directive, declaration or function"));
        } else if LINE_DIRECTIVES.contains(&t.text) {
            let end = self.scan_line(start);
            (end, ItemKind::Directive(directive(&self.toks[start..end])))
        } else if t.text == ".section" {
            let mut end = self.scan_line(start);
            if self.tok(end).is_some_and(|t| t.is("{")) {
                end = self.scan_balanced(end)?;
            }
            (end, ItemKind::Directive(directive(&self.toks[start..end])))
        } else {
            let mut j = start;
            while self.tok(j).is_some_and(|t| is_linkage(t.text)) {
                j += 1;
            }
            if self
                .tok(j)
                .is_some_and(|t| t.text == ".entry" || t.text == ".func")
            {
                return self.function(start);
            }
            let end = self.scan_semicolon(start)?;
            let toks = &self.toks[start..end];
            let kind = if self.tok(j).is_some_and(|t| is_space(t.text)) {
                ItemKind::Declaration(declaration(toks)?)
            } else {
                ItemKind::Directive(directive(toks))
            };
            (end, kind)
        };
        Ok(Item {
            tokens: self.take(end),
            kind,
        })
    }

    fn function(&mut self, start: usize) -> Result<Item, ParseError> {
        let mut i = start;
        let mut linkage = Vec::new();
        while let Some(t) = self.tok(i).filter(|t| is_linkage(t.text)) {
            linkage.push(t.text.to_string());
            i += 1;
        }
        let kind = match self.tok(i).map(|t| t.text) {
            Some(".entry") => FunctionKind::Entry,
            _ => FunctionKind::Func,
        };
        i += 1;
        let mut returns = Vec::new();
        if kind == FunctionKind::Func && self.tok(i).is_some_and(|t| t.is("(")) {
            let end = self.scan_balanced(i)?;
            returns = params(&self.toks[i + 1..end - 1], &self.toks[end - 1])?;
            i = end;
        }
        let name = match self.tok(i) {
            Some(t) if t.kind == TokKind::Word && !t.is_dot_word() => t.text.to_string(),
            Some(t) => return Err(unexpected(t, "a function name")),
            None => return Err(self.eof(start, "a function name")),
        };
        i += 1;
        let mut ps = Vec::new();
        if self.tok(i).is_some_and(|t| t.is("(")) {
            let end = self.scan_balanced(i)?;
            ps = params(&self.toks[i + 1..end - 1], &self.toks[end - 1])?;
            i = end;
        }
        // Performance directives up to the body's `{` (or the prototype's `;`).
        let mut attributes: Vec<Directive> = Vec::new();
        let has_body = loop {
            let Some(t) = self.tok(i) else {
                return Err(self.eof(start, "`{` or `;` after the function header"));
            };
            if t.is("{") {
                break true;
            } else if t.is(";") {
                break false;
            } else if t.is_dot_word() {
                attributes.push(Directive {
                    name: t.text.to_string(),
                    args: vec![],
                });
            } else if let (Some(d), TokKind::Word | TokKind::Number) =
                (attributes.last_mut(), t.kind)
            {
                d.args.push(t.text.to_string());
            } else if !t.is(",") || attributes.is_empty() {
                return Err(unexpected(t, "a performance directive, `{` or `;`"));
            }
            i += 1;
        };
        let (line, column) = self.tok(start).map_or((0, 0), |t| (t.line, t.col));
        let tokens = self.take(i + 1);
        let mut body = Vec::new();
        let mut close = None;
        if has_body {
            let mut depth = 0;
            loop {
                match self.tok(self.pos) {
                    None => {
                        let expected = "`}` closing the function body";
                        return Err(ParseError::UnexpectedEof {
                            expected,
                            line,
                            column,
                        });
                    }
                    Some(t) if t.is("}") && depth == 0 => {
                        let end = self.pos + 1;
                        close = Some(self.take(end));
                        break;
                    }
                    Some(_) => body.push(self.statement(&mut depth)?),
                }
            }
        }
        let f = Function {
            kind,
            linkage,
            name,
            returns,
            params: ps,
            attributes,
            body,
            close,
            line,
        };
        Ok(Item {
            tokens,
            kind: ItemKind::Function(f),
        })
    }

    fn statement(&mut self, depth: &mut usize) -> Result<Statement, ParseError> {
        let i = self.pos;
        let Some(t) = self.tok(i) else {
            return Err(self.eof(i, "a statement"));
        };
        let (end, kind) = if t.kind == TokKind::Opaque {
            (
                i + 1,
                StatementKind::Directive(Directive {
                    name: t.text.to_string(),
                    args: vec![],
                }),
            )
        } else if t.is("{") {
            if *depth >= MAX_NESTING {
                return Err(ParseError::TooDeep {
                    line: t.line,
                    column: t.col,
                });
            }
            *depth += 1;
            (i + 1, StatementKind::BlockOpen)
        } else if t.is("}") {
            if *depth == 0 {
                return Err(unbalanced(t, "anything"));
            }
            *depth -= 1;
            (i + 1, StatementKind::BlockClose)
        } else if t.kind == TokKind::Word
            && !t.is_dot_word()
            && !t.text.starts_with('%')
            && self.tok(i + 1).is_some_and(|n| n.is(":"))
        {
            (i + 2, StatementKind::Label(t.text.to_string()))
        } else if t.is_dot_word() {
            if LINE_DIRECTIVES.contains(&t.text) {
                let end = self.scan_line(i);
                (end, StatementKind::Directive(directive(&self.toks[i..end])))
            } else {
                let end = self.scan_semicolon(i)?;
                let mut j = i;
                while self.tok(j).is_some_and(|t| is_linkage(t.text)) {
                    j += 1;
                }
                let toks = &self.toks[i..end];
                let kind = if self.tok(j).is_some_and(|t| is_space(t.text)) {
                    StatementKind::Declaration(declaration(toks)?)
                } else {
                    StatementKind::Directive(directive(toks))
                };
                (end, kind)
            }
        } else if t.is("@") || t.kind == TokKind::Word {
            let end = self.scan_semicolon(i)?;
            (
                end,
                StatementKind::Instruction(instruction(&self.toks[i..end])?),
            )
        } else {
            return Err(unexpected(t, "a statement"));
        };
        Ok(Statement {
            tokens: self.take(end),
            kind,
        })
    }
}

/// A directive's name and argument texts (`,` and `;` dropped).
fn directive(toks: &[Tok]) -> Directive {
    let name = toks.first().map(|t| t.text.to_string()).unwrap_or_default();
    let args = toks
        .iter()
        .skip(1)
        .filter(|t| !t.is(",") && !t.is(";"))
        .map(|t| t.text.to_string())
        .collect();
    Directive { name, args }
}

/// Splits at the commas outside brackets. `after` is the token after `toks` (for the
/// location of a trailing comma). No tokens: no groups.
fn split_commas<'a, 't>(
    toks: &'a [Tok<'t>],
    after: &Tok<'t>,
) -> Result<Vec<&'a [Tok<'t>]>, ParseError> {
    let mut groups = Vec::new();
    if toks.is_empty() {
        return Ok(groups);
    }
    let mut depth = 0usize;
    let mut gstart = 0;
    for (i, t) in toks.iter().enumerate() {
        if closer_of(t).is_some() {
            depth += 1;
        } else if is_closer(t) {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && t.is(",") {
            if i == gstart {
                return Err(unexpected(t, "an operand before `,`"));
            }
            groups.push(&toks[gstart..i]);
            gstart = i + 1;
        }
    }
    if gstart == toks.len() {
        return Err(unexpected(after, "an operand after `,`"));
    }
    groups.push(&toks[gstart..]);
    Ok(groups)
}

/// The text of `toks` as written, without the first token's trivia.
fn text_of(toks: &[Tok]) -> String {
    let mut s = String::new();
    for (i, t) in toks.iter().enumerate() {
        if i > 0 {
            s.push_str(t.trivia);
        }
        s.push_str(t.text);
    }
    s
}

/// A decimal or `0x` integer, with an optional `U` suffix.
fn parse_int(text: &str) -> Option<i64> {
    let t = text.strip_suffix(['U', 'u']).unwrap_or(text);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        t.parse().ok()
    }
}

/// A declaration from its tokens (through the `;`).
fn declaration(toks: &[Tok]) -> Result<Declaration, ParseError> {
    let Some((semi, toks)) = toks.split_last() else {
        return Ok(Declaration {
            space: String::new(),
            attributes: vec![],
            vars: vec![],
        });
    };
    let mut space = String::new();
    let mut attributes = Vec::new();
    let mut i = 0;
    while let Some(t) = toks
        .get(i)
        .filter(|t| t.is_dot_word() || t.kind == TokKind::Number)
    {
        if space.is_empty() && is_space(t.text) {
            space = t.text.to_string();
        } else {
            attributes.push(t.text.to_string());
        }
        i += 1;
    }
    let groups = split_commas(&toks[i..], semi)?;
    if groups.is_empty() {
        return Err(unexpected(semi, "a variable name"));
    }
    let vars = groups
        .into_iter()
        .map(|g| var(g, semi))
        .collect::<Result<_, _>>()?;
    Ok(Declaration {
        space,
        attributes,
        vars,
    })
}

/// A variable: `name`, `name<N>`, `name[N][M]`, `name = init`. `after` is the token after
/// the group (for errors at its end).
fn var(g: &[Tok], after: &Tok) -> Result<Var, ParseError> {
    let at = |i: usize| g.get(i).unwrap_or(after);
    let name = match g.first() {
        Some(t) if t.kind == TokKind::Word && !t.is_dot_word() => t.text.to_string(),
        _ => return Err(unexpected(at(0), "a variable name")),
    };
    let mut v = Var {
        name,
        count: None,
        dims: vec![],
        initialized: false,
    };
    let mut i = 1;
    if at(i).is("<") {
        v.count = at(i + 1).text.parse().ok();
        if v.count.is_none() || !at(i + 2).is(">") {
            return Err(unexpected(at(i + 1), "`<count>` of a register declaration"));
        }
        i += 3;
    }
    while i < g.len() && at(i).is("[") {
        if at(i + 1).is("]") {
            v.dims.push(None);
            i += 2;
        } else if at(i + 1).kind == TokKind::Number && at(i + 2).is("]") {
            v.dims
                .push(parse_int(at(i + 1).text).and_then(|n| u64::try_from(n).ok()));
            i += 3;
        } else {
            return Err(unexpected(at(i + 1), "an array dimension"));
        }
    }
    if i < g.len() && at(i).is("=") {
        v.initialized = true;
        i = g.len();
    }
    if i < g.len() {
        return Err(unexpected(at(i), "`,`, `;` or `=`"));
    }
    Ok(v)
}

/// A parameter list's inside; `close` is its `)`.
fn params(toks: &[Tok], close: &Tok) -> Result<Vec<Param>, ParseError> {
    let mut out = Vec::new();
    for g in split_commas(toks, close)? {
        let space = match g.first() {
            Some(t) if t.is_dot_word() => t.text.to_string(),
            Some(t) => return Err(unexpected(t, "`.param` or `.reg`")),
            None => return Err(unexpected(close, "a parameter")),
        };
        let mut i = 1;
        let mut attributes = Vec::new();
        while let Some(t) = g
            .get(i)
            .filter(|t| t.is_dot_word() || t.kind == TokKind::Number)
        {
            attributes.push(t.text.to_string());
            i += 1;
        }
        let var = var(&g[i.min(g.len())..], close)?;
        out.push(Param {
            space,
            attributes,
            var,
        });
    }
    Ok(out)
}

/// An instruction from its tokens (through the `;`).
fn instruction(toks: &[Tok]) -> Result<Instruction, ParseError> {
    let Some((semi, toks)) = toks.split_last() else {
        return Err(ParseError::UnexpectedEof {
            expected: "an instruction",
            line: 0,
            column: 0,
        });
    };
    let at = |i: usize| toks.get(i).unwrap_or(semi);
    let mut i = 0;
    let mut guard = None;
    if at(0).is("@") {
        let negated = at(1).is("!");
        i = 1 + usize::from(negated);
        let r = at(i);
        if r.kind != TokKind::Word || r.is_dot_word() {
            return Err(unexpected(r, "a predicate register"));
        }
        guard = Some(Guard {
            negated,
            register: r.text.to_string(),
        });
        i += 1;
    }
    let op = at(i);
    if op.kind != TokKind::Word || op.is_dot_word() || op.text.starts_with('%') {
        return Err(unexpected(op, "an opcode"));
    }
    let mut parts = op.text.split('.');
    let base = parts.next().unwrap_or_default().to_string();
    let modifiers = parts.map(str::to_string).collect();
    let rest = toks.get(i + 1..).unwrap_or_default();
    let operands = split_commas(rest, semi)?
        .into_iter()
        .map(|g| operand(g, 0))
        .collect();
    let line = toks.first().map_or(0, |t| t.line);
    Ok(Instruction {
        guard,
        opcode: Opcode { base, modifiers },
        operands,
        line,
    })
}

/// Whether `g` is one bracket group from its first token to its last.
fn is_group(g: &[Tok], open: &str) -> bool {
    if !g.first().is_some_and(|t| t.is(open)) {
        return false;
    }
    let mut depth = 0usize;
    for (i, t) in g.iter().enumerate() {
        if closer_of(t).is_some() {
            depth += 1;
        } else if is_closer(t) {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return i + 1 == g.len();
            }
        }
    }
    false
}

fn operand(g: &[Tok], depth: usize) -> Operand {
    let other = || Operand::Other(text_of(g));
    match g {
        [t] => match t.kind {
            TokKind::Word if t.text.starts_with('%') => Operand::Register(t.text.to_string()),
            TokKind::Word if !t.is_dot_word() => Operand::Symbol(t.text.to_string()),
            TokKind::Number => Operand::Immediate(t.text.to_string()),
            _ => other(),
        },
        [m, t] if m.is("-") && t.kind == TokKind::Number => Operand::Immediate(text_of(g)),
        _ if g.len() < 2 || depth >= OPERAND_DEPTH => other(),
        _ if is_group(g, "{") || is_group(g, "(") => {
            let inner = &g[1..g.len() - 1];
            match split_commas(inner, &g[g.len() - 1]) {
                Ok(parts) => {
                    let ops = parts.into_iter().map(|p| operand(p, depth + 1)).collect();
                    if g[0].is("{") {
                        Operand::Vector(ops)
                    } else {
                        Operand::List(ops)
                    }
                }
                Err(_) => other(),
            }
        }
        _ if is_group(g, "[") => address(&g[1..g.len() - 1]).unwrap_or_else(other),
        _ => other(),
    }
}

/// `base`, `base+N`, `base+-N`, `base-N` inside `[ ]`.
fn address(inner: &[Tok]) -> Option<Operand> {
    let base = inner
        .first()
        .filter(|t| t.kind == TokKind::Word && !t.is_dot_word())?;
    let offset = match &inner[1..] {
        [] => 0,
        [p, n] if p.is("+") => parse_int(n.text)?,
        [p, m, n] if p.is("+") && m.is("-") => parse_int(n.text)?.checked_neg()?,
        [m, n] if m.is("-") => parse_int(n.text)?.checked_neg()?,
        _ => return None,
    };
    Some(Operand::Address {
        base: base.text.to_string(),
        offset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lexer's verdict alone (no plain fast path).
    fn lexed(text: &str) -> Result<(), ParseError> {
        let mut depth = 0usize;
        let mut ok = true;
        super::super::lexer::scan(text, |t| {
            match &text[t.start..t.end] {
                "{" if t.kind == TokKind::Punct => {
                    ok &= depth < MAX_NESTING;
                    depth += 1;
                }
                "}" if t.kind == TokKind::Punct => {
                    ok &= depth > 0;
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
            Ok(())
        })?;
        if ok && depth == 0 {
            Ok(())
        } else {
            Err(ParseError::TooDeep { line: 0, column: 0 })
        }
    }

    /// Whenever the fast path accepts a text, the lexer does too; on every text the check
    /// agrees with the lexer.
    #[test]
    fn plain_balance_agrees_with_the_lexer() {
        let parts = [
            "{",
            "}",
            "\n",
            " ",
            "\t",
            "\r\n",
            "// c { \n",
            "/* { */",
            "\"{\"",
            "@@DWARF {\n",
            "@",
            "ld.u32 %r1, [%rd2];",
            "/",
            "*",
            "é",
            "#",
            "$L_1:",
            "\u{b}",
            "::",
            "0x1F",
        ];
        // Every sequence of up to 4 parts.
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            let mut next = Vec::new();
            for t in &texts {
                for p in parts {
                    next.push(format!("{t}{p}"));
                }
            }
            texts.extend(next);
        }
        texts.push("{".repeat(MAX_NESTING) + &"}".repeat(MAX_NESTING));
        texts.push("{".repeat(MAX_NESTING + 1) + &"}".repeat(MAX_NESTING + 1));
        for t in &texts {
            let lexer = lexed(t).is_ok();
            if balances_plainly(t) {
                assert!(lexer, "fast path accepts {t:?}, the lexer does not");
            }
            assert_eq!(check_fragment(t).is_ok(), lexer, "{t:?}");
        }
    }
}
