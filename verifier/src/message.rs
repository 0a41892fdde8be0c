//! How a rejection speaks to a probe author: in the names and numbers of the source, not
//! in the verifier's.
//!
//! The abstract state is exact but written for the verifier (`map_value(map#0)`,
//! `umax=0xfffffffffffffff8`, a tnum); a probe author wrote `counts[i]` against a
//! `__u64 counts[256]`. This module is the one place that translates:
//!
//! - [`number`] and [`range`] write numbers in decimal (a value near a power of two
//!   as `2^64-8`), a range `lo..hi` with both ends included, and [`scalar_range`] picks
//!   the view of a [`Scalar`] that reads best;
//! - [`Speaker`] names maps by their own names, and global data by the variable at the
//!   offset (BTF's `DATASEC`, [`bpf2ptx_compiler::program::Field`]), one name per map in
//!   every message, and describes a register's value in those terms;
//! - [`condense`] folds a path that goes around a loop into one step per run;
//! - [`Render`] prints a [`Diagnostic`] as rustc and clang print theirs: the rule and
//!   the message, the source line with a caret under the expression (BTF's column), the
//!   notes, and a `help:` line where the fix is mechanical; the raw state only when asked.

use crate::scalar::Scalar;
use crate::state::{Reg, Region};
use crate::{Decision, Diagnostic, PathStep};
use bpf2ptx_compiler::program::{LineRef, Map, MapOrigin, Object, Program};
use std::fmt::Write as _;

/// A number as a message writes it: decimal, except a value of at least 2^32 that lies
/// within 65,536 of a power of two, which reads better as `2^64-8` than as
/// 18446744073709551608.
pub fn number(v: i128) -> String {
    let a = v.unsigned_abs();
    if a >= 1 << 32 {
        for p in 32..=64u32 {
            let d = a as i128 - (1i128 << p);
            if d.unsigned_abs() < 1 << 16 {
                let sign = if v < 0 { "-" } else { "" };
                // -(2^p + d): the offset flips sign with the value.
                let d = if v < 0 { -d } else { d };
                return match d {
                    0 => format!("{sign}2^{p}"),
                    d if d > 0 => format!("{sign}2^{p}+{d}"),
                    d => format!("{sign}2^{p}{d}"),
                };
            }
        }
    }
    v.to_string()
}

/// The values `lo..hi`, both included (`0..256` holds 256): one number when they are
/// equal. The one way every message writes a range.
pub fn range(lo: i128, hi: i128) -> String {
    if lo == hi {
        number(lo)
    } else {
        format!("{}..{}", number(lo), number(hi))
    }
}

/// The values a scalar may hold, as a [`range`]: the unsigned range, or the signed one
/// where it is narrower (a value that may be negative); `any value` when neither bounds
/// anything.
pub fn scalar_range(s: &Scalar) -> String {
    let (ulo, uhi) = (i128::from(s.umin), i128::from(s.umax));
    let (slo, shi) = (i128::from(s.smin), i128::from(s.smax));
    if ulo == 0 && uhi == i128::from(u64::MAX) && slo == i128::from(i64::MIN) {
        return "any value".into();
    }
    if shi - slo < uhi - ulo {
        range(slo, shi)
    } else {
        range(ulo, uhi)
    }
}

/// `1 byte`, `8 bytes`.
pub fn bytes(n: i64) -> String {
    if n == 1 {
        "1 byte".into()
    } else {
        format!("{} bytes", number(n.into()))
    }
}

/// `1 entry`, `256 entries`.
pub fn entries(n: i64) -> String {
    if n == 1 {
        "1 entry".into()
    } else {
        format!("{} entries", number(n.into()))
    }
}

/// A stack offset from the frame pointer: `r10-8`, `r10`, `r10+8`.
pub fn stack_offset(off: i64) -> String {
    match off {
        0 => "r10".into(),
        o if o < 0 => format!("r10-{}", number(-i128::from(o))),
        o => format!("r10+{}", number(o.into())),
    }
}

/// Stack offsets `lo..hi` from the frame pointer, as [`range`] writes ranges.
pub fn stack_range(lo: i64, hi: i64) -> String {
    if lo == hi {
        stack_offset(lo)
    } else {
        format!("{}..{}", stack_offset(lo), stack_offset(hi))
    }
}

/// Names and values in the user's terms for one program of an object.
pub struct Speaker<'a> {
    /// The object (its maps and their BTF fields).
    pub obj: &'a Object,
    /// The program (its functions, for function addresses).
    pub prog: &'a Program,
}

/// Where a byte of a map value is, in the user's terms: the variable or member holding
/// it, or the whole value.
pub struct Place<'a> {
    /// How messages name it: `` `counts` ``, `` `hist`'s `slots` ``, `` a value of `vals` ``.
    pub name: String,
    /// Its first byte in the map's value.
    pub base: i64,
    /// Its bytes.
    pub size: i64,
    /// Its elements, when it is an array.
    pub array: Option<bpf2ptx_compiler::program::ArrayShape>,
    /// The map.
    pub map: &'a Map,
}

impl<'a> Speaker<'a> {
    /// The map's name in messages: its own, in backquotes. Global data has no name the
    /// user wrote; [`Speaker::place`] names its variables instead, and this is the
    /// fallback (`` global data `.bss` ``).
    pub fn map(&self, m: u32) -> String {
        match self.obj.maps.get(m as usize) {
            Some(map) if map.origin == MapOrigin::GlobalData => {
                format!("global data `{}`", map.name)
            }
            Some(map) => format!("`{}`", map.name),
            None => format!("map {m}"),
        }
    }

    /// The map's name and kind: `` `times` (array) ``.
    pub fn map_with_kind(&self, m: u32) -> String {
        let kind = self
            .obj
            .maps
            .get(m as usize)
            .and_then(|map| bpf2ptx_compiler::program::map_type_name(map.map_type))
            .unwrap_or("unknown type");
        format!("{} ({kind})", self.map(m))
    }

    /// What holds byte `off` of a value of map `m`: the field BTF names there (the
    /// global variable, the struct member, the array value), else the whole value.
    /// Offsets outside the value name the field nearest to them (the first or the last),
    /// which is the one an index ran out of.
    pub fn place(&self, m: u32, off: i64) -> Option<Place<'a>> {
        let whole = self.whole(m)?;
        let map = whole.map;
        let clamped = off.clamp(0, (whole.size - 1).max(0));
        let Some(f) = map.field_at(clamped) else {
            return Some(whole);
        };
        let name = match (map.origin, f.name.is_empty()) {
            (MapOrigin::GlobalData, _) => format!("`{}`", f.name),
            (_, true) => format!("a value of `{}`", map.name),
            (_, false) => format!("`{}` in a value of `{}`", f.name, map.name),
        };
        Some(Place {
            name,
            base: i64::from(f.offset),
            size: i64::from(f.size),
            array: f.array,
            map,
        })
    }

    /// A whole value of map `m` (global data: the section) as a [`Place`].
    fn whole(&self, m: u32) -> Option<Place<'a>> {
        let map = self.obj.maps.get(m as usize)?;
        let name = match map.origin {
            MapOrigin::GlobalData => self.map(m),
            _ => format!("a value of `{}`", map.name),
        };
        Some(Place {
            name,
            base: 0,
            size: i64::from(map.value_size),
            array: None,
            map,
        })
    }

    /// What a pointer with offsets `lo..=hi` into a value of map `m` points into: the
    /// field at `lo` when no other field starts in `lo+1..=hi` (an index into
    /// `counts`, even one that runs past its end), else the whole value (`a value of
    /// `hist` + 0..128` rather than `total` + 0..128 when the offsets cross into `slots`).
    fn pointer_place(&self, m: u32, lo: i64, hi: i64) -> Option<Place<'a>> {
        let p = self.place(m, lo)?;
        let crosses = p.map.fields.iter().any(|f| {
            let at = i64::from(f.offset);
            at > p.base && at > lo && at <= hi
        });
        if crosses {
            self.whole(m)
        } else {
            Some(p)
        }
    }

    /// The pointer offset `+ 8`, `- 4`, `+ 0..2048`; empty for 0.
    fn offset(off: &Scalar) -> String {
        match off.as_const().map(|c| c as i64) {
            Some(0) => String::new(),
            Some(c) if c < 0 => format!(" - {}", number(-i128::from(c))),
            Some(c) => format!(" + {}", number(c.into())),
            None if *off == Scalar::unknown() => " + an unknown offset".into(),
            None => format!(" + {}", scalar_range(off)),
        }
    }

    /// A register's value in the user's terms: decimal ranges, maps and variables by
    /// name (`a pointer to `counts` + 0..2048`, `a value of `hist`, or NULL`).
    pub fn value(&self, r: &Reg) -> String {
        match r {
            Reg::Uninit => "not set".into(),
            Reg::Scalar(s) => match s.as_const() {
                Some(_) => format!("the number {}", scalar_range(s)),
                None if *s == Scalar::unknown() => "any number".into(),
                None => format!("a number, {}", scalar_range(s)),
            },
            Reg::Ptr(region, off) => match region {
                Region::Stack { frame } => {
                    let at = stack_range(off.smin, off.smax);
                    if *frame == 0 {
                        format!("a pointer to the stack at {at}")
                    } else {
                        format!("a pointer to the stack of frame {frame} at {at}")
                    }
                }
                Region::MapValue { map } => {
                    match self.pointer_place(*map, off.smin, off.smax) {
                        // Relative to the variable or member: the user's `&counts[i]`.
                        Some(p) => {
                            let rel = Scalar::alu(
                                bpf2ptx_compiler::isa::table::AluOp::Sub,
                                bpf2ptx_compiler::isa::table::Width::W64,
                                off,
                                &Scalar::constant(p.base as u64),
                            );
                            format!("a pointer to {}{}", p.name, Self::offset(&rel))
                        }
                        None => format!("a pointer to {}{}", self.map(*map), Self::offset(off)),
                    }
                }
                Region::Ctx => format!("the context{}", Self::offset(off)),
                Region::Mem => format!("the input memory{}", Self::offset(off)),
                Region::Record { size, .. } => {
                    format!("a ringbuf record of {size} bytes{}", Self::offset(off))
                }
                Region::IterValue { lo, hi } => format!(
                    "a pointer to the iterator's value, {}",
                    range((*lo).into(), (*hi).into())
                ),
            },
            Reg::MapValueOrNull { map, .. } => {
                let name = self
                    .obj
                    .maps
                    .get(*map as usize)
                    .map_or_else(|| self.map(*map), |m| format!("`{}`", m.name));
                format!("a value of {name}, or NULL")
            }
            Reg::RecordOrNull { size, .. } => format!("a ringbuf record of {size} bytes, or NULL"),
            Reg::Map(m) => match self.obj.maps.get(*m as usize) {
                Some(map) if map.origin == MapOrigin::GlobalData => self.map(*m),
                _ => format!("the map {}", self.map_with_kind(*m)),
            },
            Reg::Func(k) => match self.prog.funcs.get(*k) {
                Some(f) => format!("the address of function {}", f.name),
                None => format!("the address of function {k}"),
            },
        }
    }

    /// The state of a register as the verifier knows it (`--verbose`), with each map
    /// called by its own name (`map_value(counts)` rather than `map_value(map#0)`).
    pub fn raw(&self, r: &Reg) -> String {
        let mut value = r.to_string();
        for (k, m) in self.obj.maps.iter().enumerate().rev() {
            value = value.replace(&format!("map#{k})"), &format!("{})", m.name));
        }
        value
    }
}

/// Folds a path (branch decisions, oldest first) into steps: a block of up to
/// [`MAX_LOOP_BLOCK`] decisions that repeats back to back becomes one [`PathStep::Loop`]
/// ("around the loop at line 12, 12 times") instead of twelve copies; every other
/// decision stays a [`PathStep::Branch`]. `line_of` gives a decision's source line and
/// `backward` whether its jump goes backward (the one that closes a loop names it).
pub fn condense(
    history: &[(usize, bool)],
    line_of: &dyn Fn(usize) -> Option<u32>,
    backward: &dyn Fn(usize) -> bool,
) -> Vec<PathStep> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < history.len() {
        // The block length whose repetitions cover the most decisions from here (the
        // shortest on a tie): a loop body with one branch is a block of 1, one with an
        // inner `if` a block of 2, ...
        let mut best: Option<(usize, usize)> = None;
        for p in 1..=MAX_LOOP_BLOCK.min((history.len() - i) / 2) {
            let block = &history[i..i + p];
            let mut reps = 1;
            while history
                .get(i + reps * p..i + (reps + 1) * p)
                .is_some_and(|b| b == block)
            {
                reps += 1;
            }
            if reps >= 2 && best.is_none_or(|(bp, br)| p * reps > bp * br) {
                best = Some((p, reps));
            }
        }
        match best {
            Some((p, reps)) => {
                let block = &history[i..i + p];
                // The loop is named by the jump that goes back to its head; a loop closed
                // by an unconditional jump has none among the decisions: its first.
                let &(pc, taken) = block
                    .iter()
                    .find(|&&(pc, taken)| taken && backward(pc))
                    .unwrap_or(&block[0]);
                out.push(PathStep::Loop {
                    pc,
                    taken,
                    line: line_of(pc),
                    times: reps as u64,
                });
                i += p * reps;
            }
            None => {
                let (pc, taken) = history[i];
                out.push(PathStep::Branch {
                    pc,
                    taken,
                    line: line_of(pc),
                });
                i += 1;
            }
        }
    }
    out
}

/// The most decisions one iteration of a loop may make for [`condense`] to fold it.
pub const MAX_LOOP_BLOCK: usize = 16;

/// The most path steps the text shows (the latest); JSON has them all.
pub const SHOWN_STEPS: usize = 8;

/// Reads line `line` (1-based) of the source file at `path`, where that file exists.
pub type SourceLines<'a> = dyn Fn(&str, u32) -> Option<String> + 'a;

/// How to print a [`Diagnostic`]: `Display` is `Render::default()`.
#[derive(Default)]
pub struct Render<'a> {
    /// Also print the raw abstract state of the registers (`umax=...`, tnums, map
    /// indices) and the last branch decisions one by one (`--verbose`).
    pub verbose: bool,
    /// Reads line `line` (1-based) of the source file at `path`, where that file exists
    /// (the CLI reads it from disk). Without it, or when the file's line differs from
    /// the text BTF recorded at compile time (the file changed since), the recorded
    /// text is shown.
    pub source: Option<&'a SourceLines<'a>>,
}

/// Tabs in a shown source line become this many spaces (as rustc shows them), the caret
/// moving with them.
const TAB: usize = 4;

/// The bytes of `text` the caret underlines, from 1-based byte column `col`: an
/// identifier with what follows it as one expression (`counts[sm]`, `ctx->size`, `e.x`),
/// else the one character there. Column 0 (unknown) underlines the whole line.
fn underline(text: &str, col: u32) -> (usize, usize) {
    let b = text.as_bytes();
    let first = text.len() - text.trim_start().len();
    let last = text.trim_end().len();
    let start = (col as usize).saturating_sub(1);
    if col == 0 || start >= last || start < first {
        return (first, last.max(first + 1).min(text.len().max(first + 1)));
    }
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut end = start;
    if let Some(lhs) = assigned(text, start) {
        return lhs;
    }
    if !ident(b[start]) {
        return (start, start + 1);
    }
    loop {
        while end < b.len() && ident(b[end]) {
            end += 1;
        }
        // A subscript `[...]` (balanced), a member `.x` or `->x`.
        match b.get(end) {
            Some(b'[') => {
                let mut depth = 0;
                let mut k = end;
                while k < b.len() {
                    match b[k] {
                        b'[' => depth += 1,
                        b']' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    k += 1;
                }
                if k >= b.len() {
                    return (start, end);
                }
                end = k + 1;
            }
            Some(b'.') if b.get(end + 1).is_some_and(|&c| ident(c)) => end += 1,
            Some(b'-')
                if b.get(end + 1) == Some(&b'>') && b.get(end + 2).is_some_and(|&c| ident(c)) =>
            {
                end += 2
            }
            _ => return (start, end),
        }
    }
}

/// Where byte `at` of `text` is an assignment's operator (`=`, `+=`, `<<=`, ...: clang's
/// column for a store), the bytes of what it assigns to (`seen[lane]`, `*n`): the
/// expression the store writes, from the statement's start (after the last `;` or `{`,
/// and a `for (`/`if (`/`while (`) to the operator.
fn assigned(text: &str, at: usize) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    // The operator's `=` and where the operator starts.
    let (eq, op) = {
        let mut op = at;
        while op < b.len() && b"+-*/%&|^<>".contains(&b[op]) {
            op += 1;
        }
        if b.get(op) != Some(&b'=') || b.get(op + 1) == Some(&b'=') {
            return None;
        }
        (op, at)
    };
    // `==`, `<=`, `>=`, `!=` are comparisons (`<<=` and `>>=` are not).
    if matches!(&b[op..eq], b"<" | b">") || (op == eq && eq > 0 && b"=!<>".contains(&b[eq - 1])) {
        return None;
    }
    let head = &text[..op];
    let mut start = head.rfind([';', '{']).map_or(0, |k| k + 1);
    let stmt = &text[start..op];
    start += stmt.len() - stmt.trim_start().len();
    for kw in ["for", "if", "while"] {
        let rest = &text[start..op];
        if let Some(r) = rest.strip_prefix(kw) {
            let r2 = r.trim_start();
            if let Some(r3) = r2.strip_prefix('(') {
                start = op - r3.trim_start().len();
            }
        }
    }
    let end = start + text[start..op].trim_end().len();
    (end > start).then_some((start, end))
}

/// The width `text` takes when shown, tabs as [`TAB`] spaces: where the caret goes.
fn shown_width(text: &str) -> usize {
    text.chars().map(|c| if c == '\t' { TAB } else { 1 }).sum()
}

impl Render<'_> {
    /// The source line to show: the file's, where it exists and agrees with what BTF
    /// recorded; else the recorded text.
    fn line_text(&self, l: &LineRef) -> Option<String> {
        let recorded = (!l.text.is_empty()).then(|| l.text.clone());
        let file = self.source.and_then(|read| read(&l.file, l.line));
        match (file, recorded) {
            (Some(f), Some(r)) if f.trim() != r.trim() => Some(r),
            (Some(f), _) => Some(f),
            (None, r) => r,
        }
    }

    /// The diagnostic as text (see the module documentation for its form).
    pub fn render(&self, d: &Diagnostic) -> String {
        let mut out = String::new();
        let _ = write!(out, "error[{}]: {}", d.rule.name(), d.message);
        let gutter = d.line.as_ref().map_or(1, |l| l.line.to_string().len());
        let pad = " ".repeat(gutter);
        match &d.line {
            Some(l) => {
                let _ = write!(out, "\n{pad}--> {}:{}", l.file, l.line);
                if l.col != 0 {
                    let _ = write!(out, ":{}", l.col);
                }
                if let Some(text) = self.line_text(l) {
                    let text = text.trim_end_matches(['\n', '\r']);
                    let (s, e) = underline(text, l.col);
                    let lead = shown_width(text.get(..s).unwrap_or(""));
                    let width = shown_width(text.get(s..e).unwrap_or("")).max(1);
                    let shown = text.replace('\t', &" ".repeat(TAB));
                    let _ = write!(
                        out,
                        "\n{pad} |\n{} | {}\n{pad} | {}{}\n{pad} |",
                        l.line,
                        shown.trim_end(),
                        " ".repeat(lead),
                        "^".repeat(width)
                    );
                }
            }
            None => {
                let _ = write!(out, "\n{pad}--> {}", d.func);
            }
        }
        let mut note = |text: &str| {
            let _ = write!(out, "\n{pad} = {text}");
        };
        for n in &d.notes {
            note(&format!("note: {n}"));
        }
        note(&format!("note: in {}, insn {}: `{}`", d.func, d.pc, d.insn));
        for r in &d.regs {
            note(&format!("note: r{} = {}", r.reg, r.shown));
        }
        if !d.trail.is_empty() {
            let skip = d.trail.len().saturating_sub(SHOWN_STEPS);
            let mut steps: Vec<String> = Vec::new();
            if skip > 0 {
                steps.push(format!("({skip} earlier steps)"));
            }
            steps.extend(d.trail[skip..].iter().map(PathStep::to_string));
            note(&format!("path: {}", steps.join(", ")));
        }
        if self.verbose {
            for r in &d.regs {
                note(&format!("state: r{} = {}", r.reg, r.value));
            }
            if !d.path.is_empty() {
                let steps: Vec<String> = d.path.iter().map(Decision::to_string).collect();
                note(&format!("last decisions: {}", steps.join(", ")));
            }
        }
        if let Some(h) = &d.help {
            let _ = write!(out, "\nhelp: {h}");
        }
        out
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.taken { "taken" } else { "not taken" };
        write!(f, "insn {} {how}", self.pc)
    }
}

impl std::fmt::Display for PathStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = |line: &Option<u32>| line.map_or_else(String::new, |l| format!(" (line {l})"));
        match self {
            PathStep::Branch { pc, taken, line } => {
                let how = if *taken { "taken" } else { "not taken" };
                write!(f, "insn {pc}{} {how}", at(line))
            }
            PathStep::Loop {
                pc,
                taken,
                line,
                times,
            } => {
                let how = if *taken { "taken" } else { "not taken" };
                let which = line.map_or_else(|| format!("insn {pc}"), |l| format!("line {l}"));
                write!(
                    f,
                    "around the loop at {which}, {times} times (insn {pc} {how})"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_decimal_and_near_powers_of_two_read_as_such() {
        assert_eq!(number(256), "256");
        assert_eq!(number(-8), "-8");
        assert_eq!(number(4_294_967_295), "4294967295");
        assert_eq!(number(0xffff_ffff_ffff_fff8), "2^64-8");
        assert_eq!(number(1 << 40), "2^40");
        assert_eq!(number((1 << 63) - 1), "2^63-1");
        assert_eq!(number(-(1 << 63)), "-2^63");
        assert_eq!(number(-((1 << 63) - 1)), "-2^63+1");
        assert_eq!(number(12_345_678_901), "12345678901");
    }

    #[test]
    fn ranges_include_both_ends_and_pick_the_narrower_view() {
        assert_eq!(range(0, 256), "0..256");
        assert_eq!(range(7, 7), "7");
        assert_eq!(scalar_range(&Scalar::unknown()), "any value");
        assert_eq!(scalar_range(&Scalar::constant(5)), "5");
        let mut s = Scalar {
            umin: 0,
            umax: 2048,
            ..Scalar::unknown()
        };
        assert!(s.normalize());
        assert_eq!(scalar_range(&s), "0..2048");
        // -256..248 as a signed range: its unsigned range is almost everything.
        let mut s = Scalar {
            smin: -256,
            smax: 248,
            ..Scalar::unknown()
        };
        assert!(s.normalize());
        assert_eq!(scalar_range(&s), "-256..248");
        assert_eq!(stack_range(-256, 248), "r10-256..r10+248");
        assert_eq!(stack_range(-8, -8), "r10-8");
        assert_eq!(stack_range(i64::MIN, i64::MAX), "r10-2^63..r10+2^63-1");
        assert_eq!(entries(1), "1 entry");
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(8), "8 bytes");
    }

    #[test]
    fn the_caret_underlines_the_expression_at_the_column() {
        let t = "\t\t__sync_fetch_and_add(&counts[sm], 1);";
        assert_eq!(&t[underline(t, 25).0..underline(t, 25).1], "counts[sm]");
        let t = "\t__u32 size = ctx->size;";
        assert_eq!(&t[underline(t, 15).0..underline(t, 15).1], "ctx->size");
        // Not an identifier: the character alone.
        let t = "\tf(*p);";
        assert_eq!(underline(t, 4), (3, 4));
        // An assignment's operator: what it assigns to.
        let t = "\t*n += 1;";
        assert_eq!(&t[underline(t, 5).0..underline(t, 5).1], "*n");
        let t = "\tseen[lane] = 1;";
        assert_eq!(&t[underline(t, 13).0..underline(t, 13).1], "seen[lane]");
        let t = "\tfor (i = 0; i < *n; i++) { x = 1; }";
        assert_eq!(&t[underline(t, 9).0..underline(t, 9).1], "i");
        assert_eq!(&t[underline(t, 31).0..underline(t, 31).1], "x");
        // A comparison is not an assignment.
        let t = "\tif (a <= b)";
        assert_eq!(underline(t, 8), (7, 8));
        // Unknown column: the line without its indentation.
        let t = "  r0 = 1";
        assert_eq!(underline(t, 0), (2, 8));
        // A column past the text or an unbalanced subscript never panics.
        assert_eq!(underline("x", 9), (0, 1));
        assert_eq!(underline("a[b", 1), (0, 1));
        assert_eq!(underline("", 0), (0, 1));
    }

    #[test]
    fn a_loop_folds_into_one_step() {
        let line = |pc: usize| Some(pc as u32 + 100);
        let backward = |pc: usize| pc == 19;
        let mut h = vec![(1, false)];
        h.extend(std::iter::repeat_n((19, true), 12));
        h.push((19, false));
        let steps = condense(&h, &line, &backward);
        assert_eq!(
            steps,
            [
                PathStep::Branch {
                    pc: 1,
                    taken: false,
                    line: Some(101)
                },
                PathStep::Loop {
                    pc: 19,
                    taken: true,
                    line: Some(119),
                    times: 12
                },
                PathStep::Branch {
                    pc: 19,
                    taken: false,
                    line: Some(119)
                },
            ]
        );
        assert_eq!(
            steps[1].to_string(),
            "around the loop at line 119, 12 times (insn 19 taken)"
        );
        // A body with an inner branch: a block of two decisions, named by the backward
        // jump.
        let h: Vec<(usize, bool)> = (0..5).flat_map(|_| [(15, false), (19, true)]).collect();
        let steps = condense(&h, &line, &backward);
        assert_eq!(
            steps,
            [PathStep::Loop {
                pc: 19,
                taken: true,
                line: Some(119),
                times: 5
            }]
        );
        // Nothing repeats: every decision stays.
        let h = [(1, true), (2, false), (3, true)];
        assert_eq!(condense(&h, &line, &backward).len(), 3);
        assert!(condense(&[], &line, &backward).is_empty());
    }
}
