//! `bpf_snprintf` (165): the checks beyond its prototype. The prototype (runtime
//! catalogue) already proved `str` writable for `str_size` bytes, `fmt` a NUL-terminated
//! string in read-only global data and `data` readable for `data_len`, a constant
//! multiple of 8 of at most 96 bytes. Here, as Linux's `check_bpf_snprintf_call` does, the
//! format is parsed at load time with the data's word count ([`snprintf::parse`], the
//! parser the backend and the interpreter use too), and, because the GPU has no
//! `copy_from_kernel_nofault`, each `%s` argument must be a pointer the verifier can
//! bound: a word of a stack array holding a spilled pointer into read-only data, a map
//! value, a ringbuf record or the stack, read at most up to the end of what is readable
//! there (specs/verifier.md, "bpf_snprintf").

use super::call::{words_size, words_size_rule};
use super::{Explorer, R, RDONLY_PROG};
use crate::state::{Reg, Region, Slot, State};
use crate::{Rule, SnprintfCall};
use bpf2ptx_compiler::program::MapOrigin;
use bpf2ptx_runtime::snprintf::{self, Kind};

impl Explorer<'_> {
    /// Checks call `i` of `bpf_snprintf` in `st`, before the prototype's generic checks,
    /// records its [`SnprintfCall`] fact and returns the data words that hold `%s`
    /// pointers (the generic read of the data array lets those be pointers).
    pub(super) fn snprintf(&mut self, st: &State, i: usize) -> R<Vec<usize>> {
        let bad = |me: &Self, reg: u8, why: String| {
            me.diag(Rule::HelperArg, i, st, &[reg], format!("snprintf: {why}"))
        };
        let fmt = self.read(st, i, 3)?;
        self.const_str(st, i, 3, &fmt, "snprintf")?;
        let (map, off) = match &fmt {
            Reg::Ptr(Region::MapValue { map }, o) => (*map, o.as_const().unwrap_or(0)),
            _ => unreachable!("const_str accepts only map values"),
        };
        let len = self.read(st, i, 5)?;
        let max_words = snprintf::MAX_ARGS as u8;
        let Some(len) = words_size(&len, max_words) else {
            return Err(bad(
                self,
                5,
                format!(
                    "argument 5 (r5) must be {}, is {len}",
                    words_size_rule(max_words)
                ),
            ));
        };
        let words = (len / 8) as usize;
        let init = self.obj.maps[map as usize].init.as_deref().unwrap_or(&[]);
        let format = snprintf::parse(init.get(off as usize..).unwrap_or(&[]), words)
            .map_err(|e| bad(self, 3, format!("invalid format: {e}")))?;
        let mut str_max = Vec::new();
        for c in format.convs().filter(|c| c.kind == Kind::Str) {
            let n = self.string_bound(st, c.arg).map_err(|why| {
                bad(
                    self,
                    4,
                    format!("the %s argument (data word {}) must be {why}", c.arg),
                )
            })?;
            str_max.push((c.arg, n));
        }
        let str_words = str_max.iter().map(|&(w, _)| w).collect();
        let call = SnprintfCall {
            fmt_map: map,
            fmt_offset: off as u32,
            str_max,
        };
        match &mut self.facts.snprintf[i] {
            Some(seen) if (seen.fmt_map, seen.fmt_offset) != (call.fmt_map, call.fmt_offset) => {
                return Err(bad(
                    self,
                    3,
                    "the format must be the same on every path (the call is specialised for it)"
                        .into(),
                ))
            }
            // Another path: each %s may be read only as far as every path allows.
            Some(seen) => {
                for ((_, a), (_, b)) in seen.str_max.iter_mut().zip(&call.str_max) {
                    *a = (*a).min(*b);
                }
            }
            none => *none = Some(call),
        }
        Ok(str_words)
    }

    /// `st` with the 8-byte stack words `words` of the array at register `reg` made plain
    /// initialised bytes, so that a generic read of the array accepts the pointers
    /// [`Self::snprintf`] checked there.
    pub(super) fn mask_pointer_words(&self, st: &mut State, reg: u8, words: &[usize]) {
        let Reg::Ptr(r @ Region::Stack { .. }, o) = &st.cur().regs[reg as usize] else {
            return;
        };
        let (f, Some(o)) = (self.stack_frame(st, *r), o.as_const()) else {
            return;
        };
        for &w in words {
            let at = o as i64 + 8 * w as i64;
            if at % 8 == 0 && (-512..0).contains(&at) {
                *st.frames[f].slot_mut((-(at + 1) / 8) as usize) = Slot::Bytes(0xff);
            }
        }
    }

    /// The most bytes a `%s` may read from the pointer in word `arg` of the data array
    /// (r4), or why it cannot be bounded.
    fn string_bound(&self, st: &State, arg: usize) -> Result<u32, &'static str> {
        const WHERE: &str = "a pointer spilled into an 8-aligned stack array \
                             (read-only data, a map value, a ringbuf record or the stack)";
        let Reg::Ptr(r @ Region::Stack { .. }, o) = &st.cur().regs[4] else {
            return Err(WHERE);
        };
        let word = o
            .as_const()
            .map(|o| o as i64 + 8 * arg as i64)
            .filter(|w| w % 8 == 0 && (-512..0).contains(w))
            .ok_or(WHERE)?;
        let frame = &st.frames[self.stack_frame(st, *r)];
        let Slot::Spill(Reg::Ptr(region, off)) = frame.slot((-(word + 1) / 8) as usize) else {
            return Err(WHERE);
        };
        // Bytes from the lowest offset the pointer may have to the region's end, for a
        // region of `size` bytes whose offsets must lie in 0..size.
        let rest = |size: u32| -> Result<u32, &'static str> {
            let lo = off.smin;
            let hi = off.umax;
            if lo < 0 || hi >= u64::from(size) {
                return Err("a pointer inside its region on every path");
            }
            Ok(size - hi as u32)
        };
        match *region {
            Region::MapValue { map } => {
                let m = &self.obj.maps[map as usize];
                let frozen = m.origin == MapOrigin::GlobalData && m.flags & RDONLY_PROG != 0;
                match (frozen, off.as_const()) {
                    // Read-only data is known: the string ends at its NUL.
                    (true, Some(o)) => {
                        let init = m.init.as_deref().unwrap_or(&[]);
                        let s = init.get(o as usize..).ok_or("inside its map value")?;
                        let n = s.iter().position(|&b| b == 0).unwrap_or(s.len());
                        Ok(n as u32)
                    }
                    _ => rest(m.value_size),
                }
            }
            Region::Record { size, .. } => rest(size),
            // The stack: a constant offset, and only the initialised bytes from it up.
            Region::Stack { .. } => {
                let o = off
                    .as_const()
                    .map(|o| o as i64)
                    .filter(|o| (-512..0).contains(o))
                    .ok_or("a stack pointer with a constant offset")?;
                let f = &st.frames[self.stack_frame(st, *region)];
                let mut n = 0;
                for b in o..0 {
                    let bit = 1u8 << (7 - (-(b + 1) % 8) as u8);
                    let init = f.slot((-(b + 1) / 8) as usize).init_mask();
                    if init.is_none_or(|m| m & bit == 0) {
                        break;
                    }
                    n += 1;
                }
                Ok(n)
            }
            _ => Err(WHERE),
        }
    }
}
