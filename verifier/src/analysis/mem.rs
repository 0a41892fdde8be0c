//! Memory: region sizes and bounds checks, the pointer behind a load or store, and the
//! stack's slots (spills, narrow spills, initialised bytes) as loads and stores see them.

use super::diag::INIT_STACK;
use super::{same_on_every_path, Explorer, MAX_STACK, R, RDONLY_PROG};
use crate::message::{bytes, entries, number, range, stack_offset, stack_range};
use crate::scalar::Scalar;
use crate::state::{Reg, Region, Slot, State};
use crate::Rule;
use bpf2ptx_compiler::isa::table::{AluOp, Kind, Size, Width};

/// The number a load of `n` bytes (sign-extending when `signed`) gets back from a narrow
/// spill of `v`: its low `n` bytes.
fn narrow_fill(v: &Scalar, n: u8, signed: bool) -> Scalar {
    if signed {
        return v.movsx(Width::W64, n * 8);
    }
    match n {
        4 => Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), v),
        _ => Scalar::alu(
            AluOp::And,
            Width::W64,
            v,
            &Scalar::constant((1u64 << (8 * u32::from(n))) - 1),
        ),
    }
}

/// The initialised-byte mask a slot keeps when part of it is overwritten: a spilled
/// number's bytes stay initialised; a spilled pointer's bytes become uninitialised, so
/// that no part of the pointer can be read back as a number.
pub(super) fn spill_bytes(s: &Slot) -> u8 {
    s.init_mask().unwrap_or(0)
}

impl<'a> Explorer<'a> {
    /// The size of a region, and whether its offsets count down from 0 (the stack).
    fn region_bounds(&self, r: Region) -> (i64, i64) {
        match r {
            Region::Stack { .. } => (-MAX_STACK, 0),
            Region::Ctx => (0, i64::from(self.entry.ctx_size())),
            Region::Mem => (0, i64::from(self.entry.ctx_size())),
            Region::MapValue { map } => (0, i64::from(self.obj.maps[map as usize].value_size)),
            Region::Record { size, .. } => (0, i64::from(size)),
            Region::IterValue { .. } => (0, 4),
        }
    }

    /// The first iterator slot (`Slot::Iter`) among the bytes `first..end` of frame `f`'s
    /// stack: no load, store or helper may touch one, so that nothing but the iterator
    /// kfuncs moves it (which is what bounds its loop).
    pub(super) fn iter_slot_in(
        &self,
        st: &State,
        i: usize,
        f: usize,
        first: i64,
        end: i64,
    ) -> R<()> {
        for b in first..end {
            let slot = (-(b + 1) / 8) as usize;
            if let Slot::Iter { at, .. } = st.frames[f].slot(slot) {
                return Err(self.diag(
                    Rule::Iterator,
                    i,
                    st,
                    &[],
                    format!("{} is part of the iterator made at insn {at}: only the bpf_iter_num kfuncs may use it", stack_offset(b)),
                ));
            }
        }
        Ok(())
    }

    /// Checks that `[off + extra, off + extra + size)` lies in the region; returns the
    /// access's lowest and highest start offsets.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bounds(
        &self,
        st: &State,
        i: usize,
        reg: u8,
        r: Region,
        off: &Scalar,
        extra: i64,
        size: i64,
    ) -> R<(i64, i64)> {
        if r == Region::Ctx && off.as_const().is_none() {
            return Err(self.diag(
                Rule::CtxAccess,
                i,
                st,
                &[reg],
                "the context pointer may only move by constants: this one moved by a variable amount".into(),
            ));
        }
        let (lo, hi) = self.region_bounds(r);
        let (smin, smax) = (off.smin, off.smax);
        let first = smin.checked_add(extra);
        let last = smax.checked_add(extra).and_then(|x| x.checked_add(size));
        match (first, last) {
            (Some(f), Some(l)) if f >= lo && l <= hi => Ok((f, l - size)),
            _ => Err(self.out_of_bounds(
                st,
                i,
                reg,
                r,
                smin.saturating_add(extra),
                smax.saturating_add(extra),
                size,
                hi,
            )),
        }
    }

    /// What an instruction does to memory, for messages: `read`, `write`, `atomic
    /// update`, or the helper's access.
    fn access_verb(&self, i: usize) -> String {
        match self.prog.insns[i].kind() {
            Kind::Ldx(..) => "read".into(),
            Kind::St(_) | Kind::Stx(_) => "write".into(),
            Kind::Atomic(..) => "atomic update".into(),
            Kind::Call(_) => match bpf2ptx_runtime::helper(self.prog.insns[i].imm) {
                Some(h) => format!("{}'s access", h.name),
                None => "helper access".into(),
            },
            _ => "access".into(),
        }
    }

    /// The `mem-bounds` diagnostic of an access of `size` bytes starting anywhere in
    /// `first..=last` (bytes from the region's start; from r10 on the stack) of a region
    /// of `end` bytes: in the names the user wrote (the variable, the array and its
    /// entries where BTF gives them), with the fix where it is mechanical: `<` for `<=`
    /// when the index reaches exactly the length, a bound or a mask when it goes further,
    /// the frame's or the context's size.
    #[allow(clippy::too_many_arguments)]
    fn out_of_bounds(
        &self,
        st: &State,
        i: usize,
        reg: u8,
        r: Region,
        first: i64,
        last: i64,
        size: i64,
        end: i64,
    ) -> Box<crate::Diagnostic> {
        let verb = self.access_verb(i);
        let at = |base: i64| {
            let (lo, hi) = (first.saturating_sub(base), last.saturating_sub(base));
            if lo == hi {
                format!("offset {}", number(lo.into()))
            } else {
                format!("offsets {}", range(lo.into(), hi.into()))
            }
        };
        let what = format!("{verb} of {}", bytes(size));
        match r {
            Region::MapValue { map } => {
                let speaker = self.speaker();
                let Some(p) = speaker.place(map, first) else {
                    return self.diag(Rule::MemBounds, i, st, &[reg], format!("{what} at {} is outside the value of map {map}", at(0)));
                };
                let (lo, hi) = (first.saturating_sub(p.base), last.saturating_sub(p.base));
                let whole = format!("{what} at {} of {} ({})", at(p.base), p.name, bytes(p.size));
                if let Some(a) = p.array {
                    let e = i64::from(a.elem_size);
                    let n = i64::from(a.len);
                    let (ilo, ihi) = (lo.div_euclid(e), hi.div_euclid(e));
                    if ilo < 0 || ihi >= n {
                        let d = self.diag(
                            Rule::MemBounds,
                            i,
                            st,
                            &[reg],
                            format!(
                                "index may be {} but {} has {}{}",
                                range(ilo.into(), ihi.into()),
                                p.name,
                                entries(n),
                                if n > 0 { format!(" (0..{})", n - 1) } else { String::new() }
                            ),
                        )
                        .with_note(format!("{whole}, entries of {}", bytes(e)));
                        let help = if ilo < 0 {
                            "the index may be negative: give it an unsigned type, or check it against 0 as well".to_string()
                        } else if ihi == n {
                            format!("the check lets index {n} through: compare with `<` instead of `<=` (index < {n})")
                        } else if n > 0 && (n & (n - 1)) == 0 {
                            format!("check the index before using it (`if (index < {n})`), or mask it (`index & {}`)", n - 1)
                        } else {
                            format!("check the index before using it (`if (index < {n})`)")
                        };
                        return d.with_help(help);
                    }
                }
                let d = self.diag(
                    Rule::MemBounds,
                    i,
                    st,
                    &[reg],
                    format!("{what} at {} is outside {} ({})", at(p.base), p.name, bytes(p.size)),
                );
                // An access exactly one element (its own size) past the end: a `<=`
                // where `<` was meant, as far as bytes can tell.
                if lo >= 0 && hi == p.size && lo != hi {
                    d.with_help(format!("the largest offset is {}, the size itself: if a `<=` bound allows it, compare with `<`", p.size))
                } else {
                    d
                }
            }
            Region::Stack { .. } => {
                let d = self.diag(
                    Rule::MemBounds,
                    i,
                    st,
                    &[reg],
                    format!(
                        "{what} at {} is outside the stack frame ({}..{})",
                        stack_range(first, last),
                        stack_offset(-MAX_STACK),
                        stack_offset(-1)
                    ),
                );
                let frame = format!("the stack frame is {MAX_STACK} bytes, {}..{}", stack_offset(-MAX_STACK), stack_offset(-1));
                if (-MAX_STACK..0).contains(&first) && last.saturating_add(size) > 0 && last > first {
                    // Over the top: from the lowest start, this many accesses of this size
                    // fit below r10; an index counting them must stay below it.
                    let fit = -first / size;
                    d.with_help(format!(
                        "{frame}: from {}, {} of {} fit, so bound the index below {fit}",
                        stack_offset(first),
                        entries(fit),
                        bytes(size)
                    ))
                } else {
                    d.with_help(format!("{frame}: keep every access inside it"))
                }
            }
            Region::Ctx => self
                .diag(
                    Rule::MemBounds,
                    i,
                    st,
                    &[reg],
                    format!("{what} at {} is outside the context ({end} bytes)", at(0)),
                )
                .with_help(if end == 0 {
                    "this program has no context (0 bytes): only programs in attach-point sections get one (gpu/entry/K, gpu/exit/K, gpu/mem/K, kprobe/K, kretprobe/K; specs/abi.md)".to_string()
                } else {
                    format!("this program's context is {end} bytes (offsets 0..{}): read only fields inside it", end - 1)
                }),
            Region::Mem => self.diag(
                Rule::MemBounds,
                i,
                st,
                &[reg],
                format!("{what} at {} is outside the input memory ({end} bytes)", at(0)),
            ),
            Region::Record { size: rs, .. } => self.diag(
                Rule::MemBounds,
                i,
                st,
                &[reg],
                format!("{what} at {} is outside the ringbuf record ({rs} bytes)", at(0)),
            ),
            Region::IterValue { .. } => self.diag(
                Rule::MemBounds,
                i,
                st,
                &[reg],
                format!("{what} at {} is outside the iterator's value (4 bytes)", at(0)),
            ),
        }
    }

    pub(super) fn pointer_of(&self, st: &State, i: usize, reg: u8) -> R<(Region, Scalar)> {
        match self.read(st, i, reg)? {
            Reg::Ptr(r, off) => Ok((r, off)),
            v @ (Reg::MapValueOrNull { .. } | Reg::RecordOrNull { .. }) => {
                Err(self.maybe_null(st, i, reg, &v, "used as a pointer"))
            }
            v => Err(self.diag(
                Rule::MemScalar,
                i,
                st,
                &[reg],
                format!(
                    "r{reg} is not a pointer: it is {}",
                    self.speaker().value(&v)
                ),
            )),
        }
    }

    /// The u32 that register `reg` points to on the stack, when it is a 4-byte spill
    /// (how clang passes an array key).
    pub(super) fn stack_u32(&self, st: &State, reg: u8) -> Option<Scalar> {
        let Reg::Ptr(r @ Region::Stack { .. }, ref o) = st.cur().regs[reg as usize] else {
            return None;
        };
        let first = o.as_const()? as i64;
        if first >= 0 {
            return None;
        }
        let slot = usize::try_from(-(first + 1) / 8).ok()?;
        let at = first + 8 * (slot as i64 + 1);
        match st.frames[self.stack_frame(st, r)].slot(slot) {
            Slot::Narrow {
                at: a,
                size: 4,
                value,
                ..
            } if i64::from(*a) == at => Some(narrow_fill(value, 4, false)),
            Slot::Spill(Reg::Scalar(x)) if at == 0 => {
                Some(Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), x))
            }
            _ => None,
        }
    }

    pub(super) fn stack_frame(&self, st: &State, r: Region) -> usize {
        match r {
            Region::Stack { frame } => frame as usize,
            _ => st.frames.len() - 1,
        }
    }

    pub(super) fn load(
        &mut self,
        st: &mut State,
        i: usize,
        base: u8,
        off: i16,
        size: Size,
        signed: bool,
    ) -> R<Reg> {
        let (r, o) = self.pointer_of(st, i, base)?;
        let n = i64::from(size.bytes());
        let (first, last) = self.bounds(st, i, base, r, &o, off.into(), n)?;
        self.note_region(i, r);
        self.note_alignment(i, &o, off.into(), size.bytes());
        let map = match r {
            Region::MapValue { map } => Some(map),
            _ => None,
        };
        self.load_map[i] = match self.load_map[i] {
            Some(m) if m != map => Some(None),
            _ => Some(map),
        };
        let at = (r == Region::Ctx && first == last).then_some(first);
        same_on_every_path(&mut self.seen[i], &mut self.facts.ctx_offset[i], at);
        match r {
            Region::Stack { .. } => {
                let f = self.stack_frame(st, r);
                self.iter_slot_in(st, i, f, first, last + n)?;
                let func = st.frames[f].func;
                self.depth[func] = self.depth[func].max(-first);
                // Every byte that may be read must be initialised; a whole aligned spill
                // comes back exactly.
                if first == last && first % 8 == 0 && n == 8 {
                    let slot = (-first / 8 - 1) as usize;
                    match st.frames[f].slot(slot) {
                        Slot::Spill(v) => return Ok(v.clone()),
                        Slot::Bytes(0xff) | Slot::Narrow { mask: 0xff, .. } => {
                            return Ok(Reg::Scalar(Scalar::loaded(8, false)))
                        }
                        _ => {}
                    }
                }
                // A narrow spill filled back by a load of its size at its place.
                if first == last && n < 8 {
                    let slot = (-(first + 1) / 8) as usize;
                    let at = (first + 8 * (slot as i64 + 1)) as u8;
                    if let Slot::Narrow {
                        at: a,
                        size: sz,
                        value,
                        ..
                    } = st.frames[f].slot(slot)
                    {
                        if *a == at && i64::from(*sz) == n {
                            return Ok(Reg::Scalar(narrow_fill(value, n as u8, signed)));
                        }
                    }
                }
                for b in first..last + n {
                    let slot = (-(b + 1) / 8) as usize;
                    let byte = (-(b + 1) % 8) as u8;
                    let ok = match st.frames[f].slot(slot).init_mask() {
                        None => {
                            return Err(self.diag(
                                Rule::StackPointer,
                                i,
                                st,
                                &[base],
                                format!("partial read of a spilled pointer at {}", stack_offset(b)),
                            ));
                        }
                        Some(m) => m & (1 << (7 - byte)) != 0,
                    };
                    if !ok {
                        return Err(self
                            .diag(
                                Rule::StackUninit,
                                i,
                                st,
                                &[base],
                                format!("reads uninitialised stack at {}", stack_offset(b)),
                            )
                            .with_help(INIT_STACK));
                    }
                }
                Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed)))
            }
            Region::Ctx if first == last => match self.entry.known.value(first, size.bytes()) {
                Some(v) => {
                    let bits = 8 * size.bytes();
                    let v = if signed && bits < 64 {
                        ((v << (64 - bits)) as i64 >> (64 - bits)) as u64
                    } else {
                        v
                    };
                    Ok(Reg::Scalar(Scalar::constant(v)))
                }
                None => Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed))),
            },
            Region::Ctx | Region::Mem | Region::MapValue { .. } | Region::Record { .. } => {
                Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed)))
            }
            // The whole int: its range; any other read: bytes of it.
            Region::IterValue { lo, hi } if first == 0 && last == 0 && n == 4 => {
                let v = if lo >= 0 {
                    Scalar::range_u64(lo as u64, hi as u64)
                } else {
                    Scalar::loaded(4, false)
                };
                Ok(Reg::Scalar(if signed {
                    v.movsx(Width::W64, 32)
                } else {
                    v
                }))
            }
            Region::IterValue { .. } => Ok(Reg::Scalar(Scalar::loaded(size.bytes(), signed))),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn store(
        &mut self,
        st: &mut State,
        i: usize,
        base: u8,
        off: i16,
        size: Size,
        v: Reg,
        src: Option<u8>,
    ) -> R<()> {
        let (r, o) = self.pointer_of(st, i, base)?;
        let n = i64::from(size.bytes());
        let (first, last) = self.bounds(st, i, base, r, &o, off.into(), n)?;
        self.note_region(i, r);
        self.note_alignment(i, &o, off.into(), size.bytes());
        // Stores and atomics (which store what they computed) both come here.
        if let Region::MapValue { map } = r {
            self.facts.map_written[map as usize] = true;
        }
        if v.is_pointer() && !matches!(r, Region::Stack { .. }) {
            return Err(self.diag(
                Rule::PointerLeak,
                i,
                st,
                &[base, src.unwrap_or(base)],
                "storing a pointer outside the stack would leak it".into(),
            ));
        }
        match r {
            Region::Ctx if !self.entry.ctx_writable() => Err(self.diag(
                Rule::CtxAccess,
                i,
                st,
                &[base],
                "the context is read-only".into(),
            )),
            Region::MapValue { map } if self.obj.maps[map as usize].flags & RDONLY_PROG != 0 => {
                Err(self.read_only(i, st, base, map, Some(first), "write into"))
            }
            Region::IterValue { .. } => Err(self.diag(
                Rule::Iterator,
                i,
                st,
                &[base],
                "the iterator's value is read-only: only bpf_iter_num_next moves the iterator"
                    .into(),
            )),
            Region::Stack { .. } => {
                let f = self.stack_frame(st, r);
                self.iter_slot_in(st, i, f, first, last + n)?;
                if let Reg::Ptr(Region::Stack { frame }, _) = v {
                    if (frame as usize) > f {
                        return Err(self.diag(
                            Rule::PointerLeak,
                            i,
                            st,
                            &[base, src.unwrap_or(base)],
                            format!("storing a pointer into frame {frame}'s stack in the stack of frame {f}, a caller, would outlive the callee's frame"),
                        ));
                    }
                }
                let func = st.frames[f].func;
                self.depth[func] = self.depth[func].max(-first);
                if first == last && first % 8 == 0 && n == 8 {
                    let slot = (-first / 8 - 1) as usize;
                    *st.frames[f].slot_mut(slot) = Slot::Spill(v);
                    return Ok(());
                }
                if v.is_pointer() {
                    return Err(self.diag(
                        Rule::StackPointer,
                        i,
                        st,
                        &[base],
                        "a pointer may only be spilled by an aligned 8-byte store".into(),
                    ));
                }
                // A constant-offset store initialises its bytes; a variable one only the
                // bytes every possible offset covers ([last, first + n)). Spilled values
                // it may touch become plain initialised bytes.
                for b in first..last + n {
                    let slot = (-(b + 1) / 8) as usize;
                    let bit = 1u8 << (7 - (-(b + 1) % 8) as u8);
                    let cur = st.frames[f].slot_mut(slot);
                    let mask = spill_bytes(cur);
                    let certain = b >= last && b < first + n;
                    *cur = Slot::Bytes(if certain { mask | bit } else { mask });
                }
                // A number stored narrowly at a constant, naturally aligned offset is kept
                // (with its bounds) for a fill of the same size.
                if let (true, Reg::Scalar(value)) = (first == last && first % n == 0, &v) {
                    let slot = (-(first + 1) / 8) as usize;
                    let at = (first + 8 * (slot as i64 + 1)) as u8;
                    let cur = st.frames[f].slot_mut(slot);
                    *cur = Slot::Narrow {
                        mask: spill_bytes(cur),
                        at,
                        size: n as u8,
                        value: *value,
                    };
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
