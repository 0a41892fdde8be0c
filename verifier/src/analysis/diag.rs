//! Diagnostics: building one at an instruction (its function, source line, the registers
//! involved with map names, the last branch decisions) and reporting it once per
//! instruction and rule.

use super::Explorer;
use crate::message::{condense, range, scalar_range, Speaker};
use crate::state::{Reg, State};
use crate::{Diagnostic, Rule};
use bpf2ptx_compiler::isa::table::{AluOp, Kind, Src, Width};
use bpf2ptx_compiler::program::{LineRef, MapOrigin};
use std::fmt::Write as _;

/// The help of every NULL check a program misses: the fix is the same everywhere.
pub(super) const CHECK_NULL: &str =
    "check the pointer against NULL first: `if (!p) return 0;` before using it";

/// The help of every read of stack bytes the program never wrote.
pub(super) const INIT_STACK: &str =
    "initialise the variable before it is read: `= {}` at its declaration (which also clears a struct's padding), or write every byte first";

impl<'a> Explorer<'a> {
    fn func_of(&self, i: usize) -> usize {
        self.prog
            .funcs
            .iter()
            .rposition(|f| f.start <= i)
            .unwrap_or(0)
    }

    /// The source line of instruction `i`: the last line entry at or before it in its
    /// function.
    pub(super) fn line_at(&self, i: usize) -> Option<&LineRef> {
        let f = self.func_of(i);
        self.prog
            .lines
            .iter()
            .rev()
            .find(|(j, _)| *j <= i && self.func_of(*j) == f)
            .map(|(_, l)| l)
    }

    /// Names and values in the user's terms ([`Speaker`]).
    pub(super) fn speaker(&self) -> Speaker<'a> {
        Speaker {
            obj: self.obj,
            prog: self.prog,
        }
    }

    /// Builds a diagnostic at instruction `i` naming the registers involved.
    pub(super) fn diag(
        &self,
        rule: Rule,
        i: usize,
        st: &State,
        regs: &[u8],
        message: String,
    ) -> Box<Diagnostic> {
        let ins = self.prog.insns[i];
        let speaker = self.speaker();
        let mut seen = Vec::new();
        let regs = regs
            .iter()
            .filter(|r| {
                let fresh = !seen.contains(*r);
                seen.push(**r);
                fresh
            })
            .map(|&r| {
                let v = &st.cur().regs[r as usize];
                crate::RegState {
                    reg: r,
                    value: speaker.raw(v),
                    shown: speaker.value(v),
                }
            })
            .collect();
        let path = self
            .history
            .iter()
            .rev()
            .take(12)
            .rev()
            .map(|&(pc, taken)| crate::Decision { pc, taken })
            .collect();
        Box::new(Diagnostic {
            rule,
            pc: self.cfg.pc(i),
            insn: ins.to_string(),
            func: self
                .prog
                .funcs
                .get(self.func_of(i))
                .map_or_else(|| self.prog.name.clone(), |f| f.name.clone()),
            line: self.line_at(i).cloned(),
            message,
            regs,
            path,
            notes: Vec::new(),
            // Filled by `report`, for the one diagnostic of many paths that is kept.
            trail: Vec::new(),
            help: None,
        })
    }

    /// The `rodata-write` diagnostic: `what` (`write into`, `map_update_elem would
    /// change`) changes byte `at` (or anything, `None`) of a value of read-only map `map`. It
    /// names the variable (a `const` global) or the map, and says how to make it
    /// writable.
    pub(super) fn read_only(
        &self,
        i: usize,
        st: &State,
        reg: u8,
        map: u32,
        at: Option<i64>,
        what: &str,
    ) -> Box<Diagnostic> {
        let speaker = self.speaker();
        let m = &self.obj.maps[map as usize];
        let (name, help) = match (m.origin, at.and_then(|o| speaker.place(map, o))) {
            (MapOrigin::GlobalData, _) if m.name == ".kconfig" => (
                "a kconfig extern".to_string(),
                "kconfig externs are read-only: copy the value into a writable variable first".to_string(),
            ),
            (MapOrigin::GlobalData, Some(p)) if !p.map.fields.is_empty() => (
                format!("{}, a `const` global", p.name),
                format!("{} is declared `const`, so it lives in read-only {}: drop `const` to make it writable", p.name, m.name),
            ),
            (MapOrigin::GlobalData, _) => (
                format!("read-only global data `{}`", m.name),
                "string literals and `const` globals are read-only: copy into a writable variable first".to_string(),
            ),
            _ => (
                format!("`{}`, a read-only map (BPF_F_RDONLY_PROG)", m.name),
                format!("drop BPF_F_RDONLY_PROG from `{}`'s map_flags to make it writable by the program", m.name),
            ),
        };
        self.diag(Rule::RodataWrite, i, st, &[reg], format!("{what} {name}"))
            .with_help(help)
    }

    /// The `null-deref` diagnostic: register `reg` holds `v`, a lookup or reservation
    /// result not yet checked against NULL, and is `what` (`used as a pointer`, `passed
    /// to map_update_elem`).
    pub(super) fn maybe_null(
        &self,
        st: &State,
        i: usize,
        reg: u8,
        v: &Reg,
        what: &str,
    ) -> Box<Diagnostic> {
        let why = match v {
            Reg::MapValueOrNull { map, .. } => format!(
                "bpf_map_lookup_elem on `{}` returns NULL for a key the map does not hold",
                self.obj
                    .maps
                    .get(*map as usize)
                    .map_or("?", |m| m.name.as_str())
            ),
            _ => "bpf_ringbuf_reserve returns NULL when the ring has no room".to_string(),
        };
        self.diag(
            Rule::NullDeref,
            i,
            st,
            &[reg],
            format!("r{reg} may be NULL where it is {what}: {why}"),
        )
        .with_help(CHECK_NULL)
    }

    /// The `ringbuf-leak` diagnostic at instruction `i`: the record reserved at slot `at`
    /// is still held where `what` (`the program returns`, ...). It names the line and the
    /// ring of the reservation, and the two ways to release a record.
    pub(super) fn record_leak(
        &self,
        st: &State,
        i: usize,
        at: usize,
        what: &str,
    ) -> Box<Diagnostic> {
        let k = self.cfg.at(at as i64);
        let line = k
            .and_then(|k| self.line_at(k))
            .map_or_else(String::new, |l| format!("line {}, ", l.line));
        let ring = k
            .and_then(|k| self.facts.call_map[k])
            .map_or_else(String::new, |m| format!(" in {}", self.speaker().map(m)));
        self.diag(
            Rule::RingbufLeak,
            i,
            st,
            &[],
            format!("the ringbuf record reserved{ring} at {line}insn {at}, is still held where {what}: it is neither submitted nor discarded on this path"),
        )
        .with_help("release the record on every path: bpf_ringbuf_submit(p, 0) to send it, bpf_ringbuf_discard(p, 0) to drop it")
    }

    /// Where register `r` got its value before instruction `at`, when every path within
    /// the function gets it from one load of one map's values (following plain copies
    /// `rX = rY`): that load's instruction and the map. A static walk back over the
    /// function's control flow; `None` where it finds anything else (a parameter, two
    /// loads, arithmetic).
    fn origin(&self, at: usize, r: u8) -> Option<(usize, u32)> {
        let f = self.func_of(at);
        let start = self.prog.funcs.get(f).map_or(0, |x| x.start);
        let end = self
            .prog
            .funcs
            .get(f + 1)
            .map_or(self.prog.insns.len(), |x| x.start);
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); end - start];
        for j in start..end {
            for s in self.cfg.successors(&self.prog.insns, j) {
                if (start..end).contains(&s) {
                    preds[s - start].push(j);
                }
            }
        }
        let (mut at, mut r) = (at, r);
        // Each copy followed moves the question to another register.
        for _ in 0..4 {
            let mut defs: Vec<usize> = Vec::new();
            let mut seen = vec![false; end - start];
            let mut work: Vec<usize> = preds[at - start].clone();
            while let Some(j) = work.pop() {
                if std::mem::replace(&mut seen[j - start], true) {
                    continue;
                }
                let e = self.prog.insns[j].regs();
                if (e.writes | e.clobbers) & (1 << r) != 0 {
                    defs.push(j);
                } else if j == start {
                    return None; // reaches the function's entry: a parameter
                } else {
                    work.extend(&preds[j - start]);
                }
            }
            let [d] = defs[..] else { return None };
            let ins = self.prog.insns[d];
            match ins.kind() {
                Kind::Ldx(..) => return self.load_map[d].flatten().map(|m| (d, m)),
                Kind::Alu(AluOp::Mov, Width::W64, Src::X) => (at, r) = (d, ins.src),
                _ => return None,
            }
        }
        None
    }

    /// The `loop-bound` diagnostic at backward jump `hot`, the loop the exploration went
    /// around most: how often, what its test compared on the latest trip (in decimal, the
    /// width the test compares), where a bound it read from a map came from, and the
    /// two fixes.
    pub(super) fn loop_bound(&self, st: &State, hot: usize) -> Box<Diagnostic> {
        let line = self
            .line_at(hot)
            .map_or_else(String::new, |l| format!(" at line {}", l.line));
        let mut d = self.diag(
            Rule::LoopBound,
            hot,
            st,
            &[],
            format!(
                "no bound proven for this loop{line}: the verifier went around it {} times and stopped after {} instructions",
                self.visits[hot], self.limit
            ),
        );
        let ins = self.prog.insns[hot];
        if let (Kind::Jmp(_, w, _), Some((dst, src))) = (ins.kind(), &self.last_test[hot]) {
            let speaker = self.speaker();
            let show = |v: &Reg| match v {
                Reg::Scalar(x) if w == Width::W32 => range(x.u32min.into(), x.u32max.into()),
                Reg::Scalar(x) => scalar_range(x),
                v => speaker.value(v),
            };
            let prefix = if w == Width::W32 { "w" } else { "r" };
            let mut test = format!("{prefix}{} = {}", ins.dst, show(dst));
            if let Some(src) = src {
                let _ = write!(test, " and {prefix}{} = {}", ins.src, show(src));
            }
            d = d.with_note(format!(
                "its test `{ins}` compared {test} on the latest trip"
            ));
            for r in std::iter::once(ins.dst).chain(src.as_ref().map(|_| ins.src)) {
                if let Some((k, m)) = self.origin(hot, r) {
                    let at = self
                        .line_at(k)
                        .map_or_else(String::new, |l| format!(" at line {}", l.line));
                    d = d.with_note(format!(
                        "{prefix}{r} is read from {} (insn {}{at}): nothing bounds what the map holds",
                        speaker.map(m),
                        self.cfg.pc(k)
                    ));
                }
            }
        }
        d.with_help("bound the loop by a constant as well (`i < n && i < 1024`), or use bpf_loop(n, callback, ctx, 0), which the verifier checks once for any n")
    }

    // Diagnostics travel boxed through `R<T>` (they are large); unboxing here would copy.
    #[allow(clippy::boxed_local)]
    pub(super) fn report(&mut self, mut e: Box<Diagnostic>) {
        // One report per instruction and rule: another path reaching the same error adds
        // nothing the user can act on.
        if !self.errors.iter().any(|x| x.pc == e.pc && x.rule == e.rule) {
            e.trail = self.trail();
            self.errors.push(*e);
        }
    }

    /// The current path condensed ([`condense`]): the diagnostic's `trail`. Computed
    /// only for a diagnostic that is kept, since the path may be long (a loop's every
    /// iteration) and many paths may reach one error.
    pub(super) fn trail(&self) -> Vec<crate::PathStep> {
        let line_of = |pc: usize| {
            let i = self.cfg.at(pc as i64)?;
            self.line_at(i).map(|l| l.line)
        };
        let backward = |pc: usize| {
            self.cfg
                .at(pc as i64)
                .and_then(|i| self.prog.insns[i].jump_rel())
                .is_some_and(|r| r < 0)
        };
        condense(&self.history, &line_of, &backward)
    }
}
