//! Calls and returns: `exit` from a subprogram or the program, helper calls checked
//! against the runtime catalogue's prototypes (maps, memory arguments, ringbuf references,
//! constant strings). BPF-to-BPF calls push their frame in `step`.

use super::diag::INIT_STACK;
use super::mem::spill_bytes;
use super::{same_on_every_path, Explorer, Step, MAX_STACK, R, RDONLY_PROG};
use crate::message::stack_offset;
use crate::scalar::Scalar;
use crate::state::{Reg, Region, Slot, State};
use crate::{Regions, Rule};
use bpf2ptx_compiler::program::MapOrigin;
use bpf2ptx_runtime::{Access, Arg, MapKind, Ret};

impl<'a> Explorer<'a> {
    pub(super) fn exit(&mut self, mut st: State, i: usize) -> R<Step> {
        if st.cur().callback {
            return self.callback_exit(st, i);
        }
        self.frame_end_checks(&st, i)?;
        // A subprogram may return with r0 unset (clang leaves it so when the result is
        // unused); the caller's r0 is then uninitialised. The program's own exit needs r0.
        let r0 = if st.frames.len() == 1 {
            self.read(&st, i, 0)?
        } else {
            st.cur().regs[0].clone()
        };
        if st.frames.len() == 1 {
            if r0.is_pointer() {
                return Err(self.diag(
                    Rule::PointerLeak,
                    i,
                    &st,
                    &[0],
                    "the program returns a pointer".into(),
                ));
            }
            if let Some(&(_, at)) = st.refs.first() {
                return Err(self.record_leak(&st, i, at, "the program returns"));
            }
            return Ok(Step::End);
        }
        if matches!(r0, Reg::Ptr(Region::Stack { frame }, _) if frame as usize == st.frames.len() - 1)
        {
            return Err(self.diag(
                Rule::PointerLeak,
                i,
                &st,
                &[0],
                "a function returns a pointer into its own stack".into(),
            ));
        }
        let callee = st.frames.pop().expect("more than one frame");
        // Nothing the callers keep may point into the frame that ends here (stores of such
        // pointers are rejected where they happen; this keeps the invariant explicit).
        let k = st.frames.len();
        let dangling =
            |r: &Reg| matches!(r, Reg::Ptr(Region::Stack { frame }, _) if *frame as usize >= k);
        if st.frames.iter().any(|f| {
            f.regs.iter().any(dangling)
                || f.stack
                    .iter()
                    .any(|s| matches!(s, Slot::Spill(r) if dangling(r)))
        }) {
            st.frames.push(callee);
            return Err(self.diag(
                Rule::PointerLeak,
                i,
                &st,
                &[],
                "a caller keeps a pointer into the stack of the function that returns here".into(),
            ));
        }
        let cur = st.cur_mut();
        cur.regs[0] = r0;
        for r in 1..=5 {
            cur.regs[r] = Reg::Uninit;
        }
        (0..=5).for_each(|r| cur.unlink(r));
        Ok(Step::Next(st, callee.ret_to))
    }

    pub(super) fn helper(&mut self, mut st: State, i: usize, id: i64) -> R<Step> {
        let Some(h) = bpf2ptx_runtime::helper(id) else {
            return Err(self.diag(
                Rule::HelperUnknown,
                i,
                &st,
                &[],
                format!("helper {id} is not in the device runtime"),
            ));
        };
        // bpf_loop is a loop's head (`Explorer::bpf_loop`), reached only by `call 181`:
        // through callx its callback could not be pinned.
        if h.lowering == bpf2ptx_runtime::Lowering::Loop {
            return Err(self.diag(
                Rule::HelperArg,
                i,
                &st,
                &[],
                format!(
                    "{}: bpf_loop must be called directly (call {id}), not through callx",
                    h.name
                ),
            ));
        }
        // bpf_snprintf's format and %s pointers, checked before the prototype's generic
        // checks so that the data array's read below may see pointers in the %s words.
        let str_words = if h.lowering == bpf2ptx_runtime::Lowering::Snprintf {
            self.snprintf(&st, i)?
        } else {
            Vec::new()
        };
        let mut map_arg: Option<u32> = None;
        let mut record: Option<(u32, u32)> = None;
        for (k, arg) in h.args.iter().enumerate() {
            let r = (k + 1) as u8;
            // An argument the helper may not use can be unset (clang's `bpf_printk` passes
            // only as many as its format names).
            if *arg == Arg::Optional {
                continue;
            }
            let v = self.read(&st, i, r)?;
            let bad = |me: &Self, what: &str| {
                me.diag(
                    Rule::HelperArg,
                    i,
                    &st,
                    &[r],
                    format!(
                        "{}: argument {} (r{r}) must be {what}, is {}",
                        h.name,
                        k + 1,
                        me.speaker().value(&v)
                    ),
                )
            };
            match *arg {
                Arg::Optional => {}
                Arg::Anything => {}
                Arg::Map(class) => match v {
                    Reg::Map(m) => {
                        same_on_every_path(&mut self.seen[i], &mut self.facts.call_map[i], Some(m));
                        // Anything but a lookup reads or changes values whole.
                        if !bpf2ptx_runtime::is_helper(id, "map_lookup_elem") {
                            self.facts.map_only_adds[m as usize] = false;
                            self.facts.map_written[m as usize] = true;
                        }
                        // The map kinds the catalogue's column says the helper takes.
                        let map = &self.obj.maps[m as usize];
                        if !map.is(class.predicate()) {
                            let takes: Vec<&str> = MapKind::ALL
                                .iter()
                                .filter(|(k, _)| class.predicate()(*k))
                                .map(|(_, n)| *n)
                                .collect();
                            let takes = takes.join(", ");
                            return Err(self
                                .diag(
                                    Rule::HelperArg,
                                    i,
                                    &st,
                                    &[r],
                                    format!(
                                        "{}: argument {} (r{r}) must be a map of a type this helper takes, not {}",
                                        h.name,
                                        k + 1,
                                        self.speaker().map_with_kind(m)
                                    ),
                                )
                                .with_help(format!(
                                "{} takes {takes} maps: pass one of those, or declare `{}` with one of those types",
                                h.name, map.name
                            )));
                        }
                        if (bpf2ptx_runtime::is_helper(id, "map_update_elem")
                            || bpf2ptx_runtime::is_helper(id, "map_delete_elem"))
                            && map.flags & RDONLY_PROG != 0
                        {
                            return Err(self.read_only(
                                i,
                                &st,
                                r,
                                m,
                                None,
                                &format!("{} would change", h.name),
                            ));
                        }
                        map_arg = Some(m)
                    }
                    _ => return Err(bad(self, "a map")),
                },
                Arg::MapKey | Arg::MapValue => {
                    let m = map_arg.ok_or_else(|| bad(self, "preceded by a map"))?;
                    let map = &self.obj.maps[m as usize];
                    if *arg == Arg::MapKey && bpf2ptx_runtime::is_helper(id, "map_lookup_elem") {
                        // An array index below max_entries on every path: the lookup
                        // cannot miss (`Facts::lookup_in_range`).
                        let hit = map.is(MapKind::is_array_like)
                            && self
                                .stack_u32(&st, r)
                                .is_some_and(|k| k.umax < u64::from(map.max_entries));
                        same_on_every_path(
                            &mut self.seen_const[i],
                            &mut self.facts.lookup_in_range[i],
                            Some(hit),
                        );
                    }
                    let map = &self.obj.maps[m as usize];
                    let n = if *arg == Arg::MapKey {
                        map.key_size
                    } else {
                        map.value_size
                    };
                    self.helper_mem(&mut st, i, r, n.into(), n.into(), Access::Read, h.name)?;
                }
                Arg::Mem { size_arg, access } => {
                    let sr = size_arg + 1;
                    let size = match self.read(&st, i, sr)? {
                        Reg::Scalar(x) => x,
                        _ => {
                            return Err(self.diag(
                                Rule::HelperArg,
                                i,
                                &st,
                                &[sr],
                                format!("{}: the size (r{sr}) must be a number", h.name),
                            ))
                        }
                    };
                    // `Facts::call_size` is the first memory argument's size (the data of
                    // a ring output; trace_vprintk's second, its array, is not recorded).
                    let first = !h.args[..k].iter().any(|a| matches!(a, Arg::Mem { .. }));
                    if first {
                        same_on_every_path(
                            &mut self.seen_const[i],
                            &mut self.facts.call_size[i],
                            (size.umin == size.umax).then_some(size.umin),
                        );
                    }
                    if size.umax > MAX_STACK as u64 * 128 {
                        return Err(self.diag(
                            Rule::HelperArg,
                            i,
                            &st,
                            &[sr],
                            format!("{}: the size (r{sr}) has no upper bound", h.name),
                        ));
                    }
                    if str_words.is_empty() || access != Access::Read {
                        self.helper_mem(
                            &mut st,
                            i,
                            r,
                            size.umin as i64,
                            size.umax as i64,
                            access,
                            h.name,
                        )?;
                    } else {
                        // snprintf's data: the %s words hold the pointers `snprintf`
                        // bounded; every other word must be initialised bytes (a pointer
                        // printed as a number would leak it).
                        let mut view = st.clone();
                        self.mask_pointer_words(&mut view, r, &str_words);
                        self.helper_mem(
                            &mut view,
                            i,
                            r,
                            size.umin as i64,
                            size.umax as i64,
                            access,
                            h.name,
                        )?;
                    }
                }
                Arg::Size { zero_ok } => {
                    if let Reg::Scalar(x) = &v {
                        if !zero_ok && x.umin == 0 {
                            return Err(bad(self, "a size that cannot be 0"));
                        }
                    } else {
                        return Err(bad(self, "a size"));
                    }
                }
                Arg::WordsSize { max_words } => {
                    if words_size(&v, max_words).is_none() {
                        return Err(bad(self, &words_size_rule(max_words)));
                    }
                }
                Arg::FixedMem { size, access } => {
                    self.helper_mem(&mut st, i, r, size.into(), size.into(), access, h.name)?
                }
                Arg::Ctx => {
                    if !matches!(v, Reg::Ptr(Region::Ctx, ref o) if o.as_const() == Some(0)) {
                        return Err(bad(self, "the context pointer"));
                    }
                }
                // The lowering never reads it: the context or any number (NULL).
                Arg::CtxOrScalar => {
                    if !matches!(v, Reg::Scalar(_))
                        && !matches!(v, Reg::Ptr(Region::Ctx, ref o) if o.as_const() == Some(0))
                    {
                        return Err(bad(self, "the context pointer or a number (NULL)"));
                    }
                }
                Arg::RingbufRecord => match v {
                    Reg::Ptr(Region::Record { id, .. }, ref o) if o.as_const() == Some(0) => {
                        record = Some((id, 0))
                    }
                    _ => {
                        return Err(bad(
                            self,
                            "a reserved ringbuf record (checked against NULL)",
                        ))
                    }
                },
                Arg::ConstStr => self.const_str(&st, i, r, &v, h.name)?,
                // bpf_loop's own arguments: checked by `bpf_loop` (the loop's head), which
                // handles the call before this generic path.
                Arg::LoopCount | Arg::Callback | Arg::CallbackCtx | Arg::ZeroFlags => {
                    unreachable!("bpf_loop calls are handled by Explorer::bpf_loop")
                }
            }
        }
        if let Some((id, _)) = record {
            // Releasing the record invalidates every copy of the pointer.
            st.refs.retain(|(x, _)| *x != id);
            let released =
                |r: &Reg| matches!(r, Reg::Ptr(Region::Record { id: x, .. }, _) if *x == id);
            for f in &mut st.frames {
                for reg in f.regs.iter_mut() {
                    if released(reg) {
                        *reg = Reg::Uninit;
                    }
                }
                // Spilled copies too: a fill after the release would otherwise bring
                // back a pointer into a record the host may already be reading.
                for slot in f.stack.iter_mut() {
                    if matches!(slot, Slot::Spill(r) if released(r)) {
                        *slot = Slot::Bytes(0);
                    }
                }
            }
        }
        let r0 = match h.ret {
            Ret::Integer => Reg::Scalar(Scalar::unknown()),
            Ret::Log2 => Reg::Scalar(match &st.cur().regs[1] {
                Reg::Scalar(x) => match x.as_const() {
                    Some(c) => Scalar::constant(bpf2ptx_runtime::log2(c)),
                    None => Scalar::range_u64(0, 63),
                },
                _ => Scalar::range_u64(0, 63),
            }),
            Ret::Void => Reg::Uninit,
            Ret::MapValueOrNull => Reg::MapValueOrNull {
                map: map_arg.expect("lookup takes a map"),
                id: self.fresh_id(),
            },
            Ret::RingbufRecordOrNull => {
                let size = match &st.cur().regs[2] {
                    Reg::Scalar(x) if x.as_const().is_some_and(|c| c <= u64::from(u32::MAX)) => {
                        x.as_const().expect("const") as u32
                    }
                    _ => {
                        return Err(self.diag(
                            Rule::HelperArg,
                            i,
                            &st,
                            &[2],
                            format!("{}: the size must be a known constant below 2^32", h.name),
                        ))
                    }
                };
                let id = self.fresh_id();
                st.refs.push((id, self.cfg.pc(i)));
                Reg::RecordOrNull { size, id }
            }
            Ret::NoReturn => {
                if let Some(&(_, at)) = st.refs.first() {
                    return Err(self.record_leak(
                        &st,
                        i,
                        at,
                        &format!("{} ends the program", h.name),
                    ));
                }
                return Ok(Step::End);
            }
        };
        let cur = st.cur_mut();
        cur.regs[0] = r0;
        for r in 1..=5 {
            cur.regs[r] = Reg::Uninit;
        }
        Ok(Step::Next(st, i + 1))
    }

    /// A helper's access to between `n_min` and `n` bytes at the pointer in `reg`: every
    /// byte it may touch must be in bounds (and, read, initialised); written, only the
    /// bytes it writes for every offset and size become initialised.
    #[allow(clippy::too_many_arguments)]
    fn helper_mem(
        &mut self,
        st: &mut State,
        i: usize,
        reg: u8,
        n_min: i64,
        n: i64,
        access: Access,
        name: &str,
    ) -> R<()> {
        let (r, o) = self.pointer_of(st, i, reg)?;
        if r == Region::Ctx {
            // The helper reads the context's bytes in memory (a key or value pointing into
            // it): the backend must store the context there (`Facts::regions`).
            self.facts.regions[i].insert(Regions::CTX);
        }
        if let Region::MapValue { map } = r {
            // A helper reads or writes the value as bytes: no sharding.
            self.facts.map_only_adds[map as usize] = false;
            if access == Access::Write {
                self.facts.map_written[map as usize] = true;
            }
        }
        if n == 0 {
            return Ok(());
        }
        let (first, last) = self.bounds(st, i, reg, r, &o, 0, n)?;
        match r {
            Region::Stack { .. } => {
                let f = self.stack_frame(st, r);
                self.iter_slot_in(st, i, f, first, last + n)?;
                let func = st.frames[f].func;
                self.depth[func] = self.depth[func].max(-first);
                for b in first..last + n {
                    let slot = (-(b + 1) / 8) as usize;
                    let bit = 1u8 << (7 - (-(b + 1) % 8) as u8);
                    let cur = st.frames[f].slot_mut(slot);
                    match access {
                        Access::Read => {
                            let ok = cur.init_mask().is_some_and(|m| m & bit != 0);
                            if !ok {
                                return Err(self
                                    .diag(
                                        Rule::StackUninit,
                                        i,
                                        st,
                                        &[reg],
                                        format!(
                                            "{name} reads uninitialised (or pointer) stack at {}",
                                            stack_offset(b)
                                        ),
                                    )
                                    .with_help(INIT_STACK));
                            }
                        }
                        Access::Write => {
                            let m = spill_bytes(cur);
                            let certain = b >= last && b < first + n_min;
                            *cur = Slot::Bytes(if certain { m | bit } else { m });
                        }
                    }
                }
                Ok(())
            }
            Region::MapValue { map }
                if access == Access::Write
                    && self.obj.maps[map as usize].flags & RDONLY_PROG != 0 =>
            {
                Err(self.read_only(
                    i,
                    st,
                    reg,
                    map,
                    Some(o.smin),
                    &format!("{name} would write into"),
                ))
            }
            Region::IterValue { .. } if access == Access::Write => Err(self.diag(
                Rule::Iterator,
                i,
                st,
                &[reg],
                format!("{name} would write the iterator's read-only value"),
            )),
            Region::Ctx if access == Access::Write && !self.entry.ctx_writable() => Err(self.diag(
                Rule::CtxAccess,
                i,
                st,
                &[reg],
                "the context is read-only".into(),
            )),
            _ => Ok(()),
        }
    }

    pub(super) fn const_str(&self, st: &State, i: usize, reg: u8, v: &Reg, name: &str) -> R<()> {
        let bad = |why: &str| {
            self.diag(
                Rule::HelperArg,
                i,
                st,
                &[reg],
                format!(
                    "{name}: r{reg} must point to a NUL-terminated string in read-only data: {why}"
                ),
            )
        };
        let Reg::Ptr(Region::MapValue { map }, off) = v else {
            return Err(bad("not a map value"));
        };
        let m = &self.obj.maps[*map as usize];
        if m.origin != MapOrigin::GlobalData || m.flags & RDONLY_PROG == 0 {
            return Err(bad("the map is not read-only global data"));
        }
        let Some(off) = off.as_const() else {
            return Err(bad("the offset is not constant"));
        };
        let data = m.init.as_deref().unwrap_or(&[]);
        match data.get(off as usize..) {
            Some(rest) if rest.contains(&0) => Ok(()),
            _ => Err(bad("no NUL before the end of the data")),
        }
    }
}

/// The byte count of an [`Arg::WordsSize`] argument holding `v`: a known constant, a
/// multiple of 8, at most `8 * max_words`.
pub(super) fn words_size(v: &Reg, max_words: u8) -> Option<u64> {
    match v {
        Reg::Scalar(x) => x
            .as_const()
            .filter(|c| c % 8 == 0 && *c <= 8 * u64::from(max_words)),
        _ => None,
    }
}

/// What [`words_size`] asks for, for diagnostics.
pub(super) fn words_size_rule(max_words: u8) -> String {
    format!(
        "a known constant multiple of 8, at most {}",
        8 * u64::from(max_words)
    )
}
