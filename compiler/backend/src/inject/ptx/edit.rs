//! Edits: inserting statements into a function body at a statement boundary.
//!
//! An insertion is a text edit first: the new lines go in at the start of a line (after
//! the last line break in the trivia before the anchor statement, or after the first one
//! in the trivia after it), indented like the anchor, with the anchor's line ending. The
//! inserted text is parsed as body statements, so the structured view stays in step with
//! the text, and everything else keeps its bytes.

use super::lexer::{scan, Token};
use super::parser::{check_fragment, parse_fragment};
use super::{Function, ParseError};

/// Why an edit was refused; the module is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The function is a prototype.
    #[error("function `{function}` has no body")]
    NoBody {
        /// The function.
        function: String,
    },
    /// The statement index is past the body.
    #[error("function `{function}`: statement {index} is out of range (body has {len})")]
    OutOfRange {
        /// The function.
        function: String,
        /// The index asked for.
        index: usize,
        /// The number of statements.
        len: usize,
    },
    /// The inserted text is not a sequence of body statements with balanced blocks
    /// (positions are in the text as inserted, indented).
    #[error("function `{function}`: inserted text does not parse: {source}")]
    Fragment {
        /// The function.
        function: String,
        /// What is wrong with the text.
        source: ParseError,
    },
}

/// Byte offsets just after each line break in `trivia` that is outside `/* */` comments.
fn line_breaks(trivia: &str) -> Vec<usize> {
    let b = trivia.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"/*") {
            i += 2;
            while i < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else {
            if b[i] == b'\n' {
                out.push(i + 1);
            }
            i += 1;
        }
    }
    out
}

/// The spaces and tabs at the start of the anchor's line, from the trivia before it.
fn indent_of(trivia: &str) -> &str {
    let from = line_breaks(trivia).last().copied().unwrap_or(trivia.len());
    let rest = trivia.get(from..).unwrap_or_default();
    let n = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    &rest[..n]
}

/// The line ending of the first line break in the trivia before any of the tokens `t`
/// keeps (outside comments), if there is one.
fn first_eol(t: &Token) -> Option<&'static str> {
    let trivia = t.trivia();
    if let Some(&p) = line_breaks(trivia).first() {
        return Some(eol_at(trivia, Some(p), "\n"));
    }
    // The trivia between the tokens: the text lexes as it did in its source.
    let text = t.text();
    let mut found = None;
    let _ = scan(text, |s| {
        let trivia = &text[s.trivia_start..s.start];
        if let Some(&p) = line_breaks(trivia).first() {
            found = Some(eol_at(trivia, Some(p), "\n"));
            // Stops the scan.
            return Err(ParseError::TooDeep { line: 0, column: 0 });
        }
        Ok(())
    });
    found
}

/// `\r\n` when the line break ending at `at` (an offset from [`line_breaks`]) is one;
/// `fallback` when there is none.
fn eol_at(trivia: &str, at: Option<usize>, fallback: &'static str) -> &'static str {
    match at {
        Some(p) if p >= 2 && trivia.as_bytes().get(p - 2) == Some(&b'\r') => "\r\n",
        Some(_) => "\n",
        None => fallback,
    }
}

impl Function {
    /// Inserts `text` (one or more lines of body statements or comments) on new lines
    /// before statement `index`; `index == body().len()` inserts before the closing `}`.
    /// Returns how many statements were inserted. Indices at and after `index` move by
    /// that many.
    pub fn insert_before(&mut self, index: usize, text: &str) -> Result<usize, EditError> {
        self.check(index, self.body.len())?;
        let trivia = self.anchor_trivia(index);
        let br = line_breaks(trivia).last().copied();
        let indent = indent_of(trivia).to_string();
        let eol = eol_at(trivia, br, self.eol_style());
        self.insert_at(index, br.unwrap_or(trivia.len()), "", &indent, eol, text)
    }

    /// The leading trivia of [`Function::anchor`]'s tokens ("" without a body).
    fn anchor_trivia(&self, index: usize) -> &str {
        self.body
            .get(index)
            .map(|s| &s.tokens)
            .or(self.close.as_ref())
            .map_or("", |t| t.trivia())
    }

    /// The tokens whose leading trivia text inserted before statement `index` goes into:
    /// that statement's, or the closing brace's when `index` is past the end.
    fn anchor(&mut self, index: usize) -> Result<&mut Token, EditError> {
        if let Some(t) = self.body.get_mut(index).map(|s| &mut s.tokens) {
            return Ok(t);
        }
        let name = &self.name;
        self.close.as_mut().ok_or_else(|| EditError::NoBody {
            function: name.clone(),
        })
    }

    /// Inserts `texts` (each as [`Function::insert_before`] would take it) on new lines
    /// before statement `index`, in the order given, as text only: the output is what
    /// inserting them one by one, last first, would write, but the statements are not kept
    /// in the structured view (each text is only lexed and its blocks checked to
    /// balance: the statements are not parsed), so statement indices do not move. For
    /// bulk edits (weaving) whose result is only written out. Returns `false`, changing
    /// nothing, when the anchor's line has no line break before it (use
    /// [`Function::insert_before`] then).
    pub fn insert_text_before(&mut self, index: usize, texts: &[&str]) -> Result<bool, EditError> {
        self.check(index, self.body.len())?;
        let trivia = self.anchor_trivia(index);
        let Some(br) = line_breaks(trivia).last().copied() else {
            return Ok(false);
        };
        let indent = indent_of(trivia).to_string();
        let eol = eol_at(trivia, Some(br), self.eol_style());
        let mut all = String::new();
        for text in texts.iter().filter(|t| !t.is_empty()) {
            let start = all.len();
            for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
                all.push_str(&indent);
                all.push_str(line.strip_suffix('\r').unwrap_or(line));
                all.push_str(eol);
            }
            check_fragment(&all[start..]).map_err(|source| EditError::Fragment {
                function: self.name.clone(),
                source,
            })?;
        }
        let anchor = self.anchor(index)?;
        let split = br.min(anchor.trivia().len());
        if anchor.trivia().is_char_boundary(split) {
            anchor.insert_trivia(split, &all);
        } else {
            anchor.insert_trivia(0, &all);
        }
        Ok(true)
    }

    /// Inserts `text` on new lines after statement `index` (after the rest of its line,
    /// so a trailing comment stays with it), indented like it. Returns how many statements
    /// were inserted.
    pub fn insert_after(&mut self, index: usize, text: &str) -> Result<usize, EditError> {
        self.check(index, self.body.len().saturating_sub(1))?;
        if self.body.is_empty() {
            return Err(EditError::OutOfRange {
                function: self.name.clone(),
                index,
                len: 0,
            });
        }
        let own = self.body.get(index).map(|s| &s.tokens);
        let indent = indent_of(own.map_or("", |t| t.trivia())).to_string();
        let next = self
            .body
            .get(index + 1)
            .map(|s| &s.tokens)
            .or(self.close.as_ref());
        let trivia = next.map_or("", |t| t.trivia());
        let br = line_breaks(trivia).first().copied();
        let eol = eol_at(trivia, br, self.eol_style());
        // No line break after the statement: start a new line for the inserted text.
        let (split, lead) = match br {
            Some(p) => (p, ""),
            None => (0, eol),
        };
        self.insert_at(index + 1, split, lead, &indent, eol, text)
    }

    /// The function's line ending (of the first line break in its body), for insertions
    /// into a line that has none of its own.
    fn eol_style(&self) -> &'static str {
        let runs = self
            .body
            .iter()
            .map(|s| &s.tokens)
            .chain(self.close.as_ref());
        for t in runs {
            if let Some(eol) = first_eol(t) {
                return eol;
            }
        }
        "\n"
    }

    fn check(&self, index: usize, max: usize) -> Result<(), EditError> {
        if self.close.is_none() {
            return Err(EditError::NoBody {
                function: self.name.clone(),
            });
        }
        if index > max {
            let len = self.body.len();
            return Err(EditError::OutOfRange {
                function: self.name.clone(),
                index,
                len,
            });
        }
        Ok(())
    }

    /// Splits the trivia before statement `index` (or the closing `}`) at byte `split`
    /// and puts `lead` and the lines of `text`, each indented and ended with `eol`, in
    /// between.
    fn insert_at(
        &mut self,
        index: usize,
        split: usize,
        lead: &str,
        indent: &str,
        eol: &str,
        text: &str,
    ) -> Result<usize, EditError> {
        if text.is_empty() {
            return Ok(0);
        }
        let mut fragment = lead.to_string();
        for line in text.strip_suffix('\n').unwrap_or(text).split('\n') {
            fragment.push_str(indent);
            fragment.push_str(line.strip_suffix('\r').unwrap_or(line));
            fragment.push_str(eol);
        }
        let (mut stmts, trailing) =
            parse_fragment(&fragment).map_err(|source| EditError::Fragment {
                function: self.name.clone(),
                source,
            })?;
        let anchor = self.anchor(index)?;
        let trivia = anchor.trivia();
        let split = split.min(trivia.len());
        let split = if trivia.is_char_boundary(split) {
            split
        } else {
            0
        };
        let (before, after) = trivia.split_at(split);
        let (before, after) = (before.to_string(), after.to_string());
        for s in &mut stmts {
            s.tokens.line = 0;
            if let super::StatementKind::Instruction(i) = &mut s.kind {
                i.line = 0;
            }
        }
        let n = stmts.len();
        match stmts.first_mut().map(|s| &mut s.tokens) {
            Some(first) => {
                first.insert_trivia(0, &before);
                anchor.set_trivia(&(trailing + &after));
            }
            None => anchor.set_trivia(&(before + &trailing + &after)),
        }
        self.body.splice(index..index, stmts);
        Ok(n)
    }
}
