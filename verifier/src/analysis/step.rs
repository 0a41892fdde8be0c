//! One instruction: reading registers, the dispatch by instruction class (ALU, ld_imm64,
//! jumps, calls, loads, stores, atomics) and, after it, the links between registers and
//! the per-instruction constants.

use super::{same_on_every_path, Explorer, Step, MAX_CALL_DEPTH, R, RDONLY_PROG};
use crate::scalar::Scalar;
use crate::state::{Frame, Reg, Region, State};
use crate::Rule;
use bpf2ptx_compiler::isa::table::{AluOp, AtomicOp, CallKind, Kind, Pseudo, Size, Src, Width};
use bpf2ptx_compiler::isa::Insn;
use bpf2ptx_compiler::program::MapOrigin;
use bpf2ptx_runtime::MapKind;

fn width_of(s: Size) -> Width {
    if s == Size::DW {
        Width::W64
    } else {
        Width::W32
    }
}

impl<'a> Explorer<'a> {
    /// The instruction jump or branch `i` goes to.
    pub(super) fn target(&self, i: usize) -> usize {
        match self.cfg.jump(&self.prog.insns, i) {
            Some(Ok(t)) => t,
            _ => unreachable!("the structural pass checked every jump target"),
        }
    }

    pub(super) fn fresh_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn read(&self, st: &State, i: usize, r: u8) -> R<Reg> {
        let v = st.cur().regs[r as usize].clone();
        if v == Reg::Uninit {
            return Err(self.diag(
                Rule::UninitRegister,
                i,
                st,
                &[r],
                format!("r{r} is read before it is written on this path"),
            ));
        }
        Ok(v)
    }

    fn scalar(&self, st: &State, i: usize, r: u8, what: &str) -> R<Scalar> {
        match self.read(st, i, r)? {
            Reg::Scalar(s) => Ok(s),
            other => Err(self.diag(
                Rule::PointerArith,
                i,
                st,
                &[r],
                format!(
                    "r{r} is a pointer ({}); {what} needs a number",
                    self.speaker().value(&other)
                ),
            )),
        }
    }

    /// Executes instruction `i` on `st`: the successor states, or why it is unsafe.
    pub(super) fn step(&mut self, st: State, i: usize) -> R<Step> {
        self.note_upper_zero(&st, i);
        self.note_jump_rhs(&st, i);
        let step = self.step_inner(st, i)?;
        let ins = self.prog.insns[i];
        if let (
            Kind::Alu(..) | Kind::Neg(_) | Kind::Endian(..) | Kind::Movsx(..) | Kind::Ldx(..),
            Step::Next(s, n),
        ) = (ins.kind(), &step)
        {
            let d = ins.dst;
            let c = match s.cur().regs[d as usize] {
                Reg::Scalar(ref x) => x.as_const(),
                _ => None,
            };
            // Only a register that is relevant afterwards: pruning compares those, so
            // no merged path can disagree with the value.
            let relevant = self.relevant.get(*n).is_some_and(|r| r & (1 << d) != 0);
            same_on_every_path(
                &mut self.seen_const[i],
                &mut self.facts.const_value[i],
                c.filter(|_| relevant),
            );
        }
        let fix = |st: &mut State| {
            let f = st.cur_mut();
            let (d, s) = (ins.dst, ins.src);
            match ins.kind() {
                Kind::Alu(AluOp::Mov, Width::W64, Src::X)
                    if matches!(f.regs[d as usize], Reg::Scalar(_)) =>
                {
                    f.link_copy(d, s)
                }
                Kind::Alu(op @ (AluOp::Add | AluOp::Sub), Width::W64, Src::K)
                    if matches!(f.regs[d as usize], Reg::Scalar(_)) =>
                {
                    let k = ins.imm as u64;
                    f.link_add(
                        d,
                        if op == AluOp::Add {
                            k
                        } else {
                            k.wrapping_neg()
                        },
                    )
                }
                Kind::Alu(..)
                | Kind::Neg(_)
                | Kind::Endian(..)
                | Kind::Movsx(..)
                | Kind::LdImm64(_)
                | Kind::Ldx(..) => f.unlink(d),
                Kind::Atomic(_, op, true) => f.unlink(if op == AtomicOp::Cmpxchg { 0 } else { s }),
                Kind::Call(CallKind::Helper) | Kind::Callx | Kind::LdAbs(_) | Kind::LdInd(_) => {
                    (0..=5).for_each(|r| f.unlink(r))
                }
                // A return defines the caller's r0-r5 (done in `exit`); a call starts a
                // frame without links; jumps refine (done in `branch`).
                _ => {}
            }
        };
        Ok(match step {
            Step::Next(mut s, n) => {
                fix(&mut s);
                Step::Next(s, n)
            }
            Step::Branch((mut a, na), (mut b, nb)) => {
                fix(&mut a);
                fix(&mut b);
                Step::Branch((a, na), (b, nb))
            }
            Step::Loop {
                body: (mut a, na),
                exit: (mut b, nb),
            } => {
                fix(&mut a);
                fix(&mut b);
                Step::Loop {
                    body: (a, na),
                    exit: (b, nb),
                }
            }
            Step::End => Step::End,
        })
    }

    /// Narrows `Facts::upper_zero[i]` to the registers relevant on entry to `i` that hold,
    /// in `st`, numbers below 2^32. The fact is the intersection over every visit; a path
    /// pruned before `i` agrees with it because pruning compared exactly the relevant
    /// registers (their values on the pruned path are among those of the paths explored).
    /// `Facts::jump_rhs_const` at `i`, a conditional jump on two registers: rS's value on
    /// this path when it is a constant and rS is relevant at `i`, kept only while every
    /// path agrees.
    fn note_jump_rhs(&mut self, st: &State, i: usize) {
        let ins = self.prog.insns[i];
        if !matches!(ins.kind(), Kind::Jmp(_, _, Src::X)) {
            return;
        }
        let s = ins.src;
        let c = match st.cur().regs.get(s as usize) {
            Some(Reg::Scalar(x)) => x.as_const(),
            _ => None,
        };
        let relevant = self.relevant.get(i).is_some_and(|r| r & (1 << s) != 0);
        same_on_every_path(
            &mut self.seen_jump_rhs[i],
            &mut self.facts.jump_rhs_const[i],
            c.filter(|_| relevant),
        );
    }

    fn note_upper_zero(&mut self, st: &State, i: usize) {
        let relevant = self.relevant.get(i).copied().unwrap_or(0);
        let mut mask = 0u16;
        for (r, reg) in st.cur().regs.iter().enumerate() {
            if relevant & (1 << r) != 0
                && matches!(reg, Reg::Scalar(x) if x.umax <= u64::from(u32::MAX))
            {
                mask |= 1 << r;
            }
        }
        if self.seen_upper[i] {
            self.facts.upper_zero[i] &= mask;
        } else {
            self.seen_upper[i] = true;
            self.facts.upper_zero[i] = mask;
        }
    }

    fn step_inner(&mut self, mut st: State, i: usize) -> R<Step> {
        let ins: Insn = self.prog.insns[i];
        let (d, s) = (ins.dst, ins.src);
        let next = i + 1;
        match ins.kind() {
            Kind::Alu(op, w, src) => {
                let rhs = match src {
                    Src::K => Reg::Scalar(Scalar::constant(match w {
                        Width::W64 => ins.imm as u64,
                        Width::W32 => ins.imm as u32 as u64,
                    })),
                    Src::X => self.read(&st, i, s)?,
                };
                let v = if op == AluOp::Mov {
                    match (w, rhs) {
                        (Width::W64, r) => r,
                        (Width::W32, Reg::Scalar(x)) => {
                            Reg::Scalar(Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), &x))
                        }
                        (Width::W32, _) => {
                            return Err(self.diag(
                                Rule::PointerLeak,
                                i,
                                &st,
                                &[s],
                                "a 32-bit move of a pointer truncates it".into(),
                            ))
                        }
                    }
                } else {
                    let lhs = self.read(&st, i, d)?;
                    self.alu(&st, i, op, w, lhs, rhs)?
                };
                if let (AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod, Src::X) = (op, src) {
                    let may_zero = match &st.cur().regs[s as usize] {
                        Reg::Scalar(x) => match w {
                            Width::W64 => x.contains(0),
                            Width::W32 => x.u32min == 0,
                        },
                        _ => true,
                    };
                    self.facts.divisor_may_be_zero[i] |= may_zero;
                }
                st.cur_mut().regs[d as usize] = v;
                Ok(Step::Next(st, next))
            }
            Kind::Neg(w) => {
                let x = self.scalar(&st, i, d, "neg")?;
                st.cur_mut().regs[d as usize] = Reg::Scalar(x.neg(w));
                Ok(Step::Next(st, next))
            }
            Kind::Endian(o, bits) => {
                let x = self.scalar(&st, i, d, "a byte swap")?;
                st.cur_mut().regs[d as usize] = Reg::Scalar(x.endian(o, bits));
                Ok(Step::Next(st, next))
            }
            Kind::Movsx(w, bits) => {
                let x = self.scalar(&st, i, s, "a sign-extending move")?;
                st.cur_mut().regs[d as usize] = Reg::Scalar(x.movsx(w, bits));
                Ok(Step::Next(st, next))
            }
            Kind::LdImm64(p) => {
                let v = match p {
                    Pseudo::Imm64 => Reg::constant(ins.imm as u64),
                    Pseudo::MapIdx | Pseudo::MapIdxValue => {
                        let map = ins.imm as u32;
                        if (map as usize) >= self.obj.maps.len() {
                            return Err(self.diag(
                                Rule::HelperArg,
                                i,
                                &st,
                                &[],
                                format!("map index {map} does not exist"),
                            ));
                        }
                        let m = &self.obj.maps[map as usize];
                        if p == Pseudo::MapIdx {
                            Reg::Map(map)
                        } else if m.origin != MapOrigin::GlobalData
                            && !m.is(MapKind::has_direct_value)
                        {
                            return Err(self.diag(
                                Rule::HelperArg,
                                i,
                                &st,
                                &[],
                                format!(
                                    "map {} has no single value to point at: a value address (map_idx_value) needs global data or an array",
                                    m.name
                                ),
                            ));
                        } else {
                            Reg::Ptr(
                                Region::MapValue { map },
                                Scalar::constant(u64::from((ins.imm as u64 >> 32) as u32)),
                            )
                        }
                    }
                    Pseudo::Func => {
                        let k = match self.cfg.callee(&self.prog.insns, i) {
                            Some(Ok(k)) => k,
                            _ => unreachable!("the structural pass checked function addresses"),
                        };
                        Reg::Func(k)
                    }
                    Pseudo::MapFd | Pseudo::MapValue | Pseudo::BtfId => {
                        return Err(self.diag(
                            Rule::Unsupported,
                            i,
                            &st,
                            &[],
                            "this ld_imm64 form (map fd or BTF id) is not supported".into(),
                        ))
                    }
                };
                st.cur_mut().regs[d as usize] = v;
                Ok(Step::Next(st, next))
            }
            Kind::Ja | Kind::Gotol => Ok(Step::Next(st, self.target(i))),
            Kind::MayGoto => self.may_goto(st, i),
            Kind::Jmp(c, w, src) => self.branch(st, i, c, w, src),
            Kind::Exit => self.exit(st, i),
            Kind::Call(CallKind::Helper) if bpf2ptx_runtime::is_helper(ins.imm, "loop") => {
                self.bpf_loop(st, i)
            }
            Kind::Call(CallKind::Helper) => self.helper(st, i, ins.imm),
            Kind::Callx => {
                // bpf_conformance's callx calls the helper whose id is in the register; only
                // a register with a known constant can be checked.
                match self.read(&st, i, d)? {
                    Reg::Scalar(x) if x.as_const().is_some() => {
                        let id = x.as_const().expect("checked") as i64;
                        self.helper(st, i, id)
                    }
                    _ => Err(self.diag(
                        Rule::HelperArg,
                        i,
                        &st,
                        &[d],
                        "callx needs a register holding a known helper id".into(),
                    )),
                }
            }
            Kind::Call(CallKind::Local) => {
                if st.frames.len() >= MAX_CALL_DEPTH {
                    return Err(self.diag(
                        Rule::CallDepth,
                        i,
                        &st,
                        &[],
                        format!("call depth exceeds {MAX_CALL_DEPTH} frames"),
                    ));
                }
                let Some(Ok(func)) = self.cfg.callee(&self.prog.insns, i) else {
                    unreachable!("the structural pass checked call targets");
                };
                let t = self.cfg.funcs()[func].start;
                let mut f = Frame::new(st.frames.len() as u8, func, next);
                for r in 1..=5 {
                    f.regs[r] = st.cur().regs[r].clone();
                }
                st.frames.push(f);
                let chain: Vec<usize> = st.frames.iter().map(|f| f.func).collect();
                self.chains.entry(chain).or_insert(i);
                Ok(Step::Next(st, t))
            }
            Kind::Call(CallKind::Kfunc) => self.kfunc(st, i),
            Kind::LdAbs(_) | Kind::LdInd(_) => Err(self.diag(
                Rule::Unsupported,
                i,
                &st,
                &[],
                "legacy packet access (ld_abs/ld_ind) has no GPU meaning".into(),
            )),
            Kind::Ldx(size, signed) => {
                let v = self.load(&mut st, i, s, ins.off, size, signed)?;
                st.cur_mut().regs[d as usize] = v;
                Ok(Step::Next(st, next))
            }
            Kind::St(size) => {
                let v = Reg::constant(ins.imm as u64);
                self.store(&mut st, i, d, ins.off, size, v, None)?;
                Ok(Step::Next(st, next))
            }
            Kind::Stx(size) => {
                let v = self.read(&st, i, s)?;
                self.store(&mut st, i, d, ins.off, size, v, Some(s))?;
                Ok(Step::Next(st, next))
            }
            Kind::Atomic(size, op, fetch) => {
                let base = self.read(&st, i, d)?;
                if !matches!(
                    base,
                    Reg::Ptr(
                        Region::Stack { .. } | Region::MapValue { .. } | Region::Mem,
                        _
                    )
                ) {
                    return Err(self.diag(
                        Rule::AtomicRegion,
                        i,
                        &st,
                        &[d],
                        "atomics are allowed only on the stack and map values".into(),
                    ));
                }
                self.scalar(&st, i, s, "an atomic operand")?;
                if op == AtomicOp::Cmpxchg {
                    self.scalar(&st, i, 0, "cmpxchg's comparand (r0)")?;
                }
                if let Reg::Ptr(Region::MapValue { map }, ref o) = base {
                    if self.obj.maps[map as usize].flags & RDONLY_PROG != 0 {
                        let at = o.smin.saturating_add(ins.off.into());
                        return Err(self.read_only(i, &st, d, map, Some(at), "atomic update into"));
                    }
                }
                // The map whose values every path's atomic updates (any operation): the
                // backend takes `.gpu` scope for it when that map is in device memory; a
                // non-fetching add's constant operand, for warp aggregation. Both facts
                // of this instruction hold on every path or not at all.
                let map = match base {
                    Reg::Ptr(Region::MapValue { map }, _) => Some(map),
                    _ => None,
                };
                if op == AtomicOp::Add && !fetch {
                    let c = match st.cur().regs[s as usize] {
                        Reg::Scalar(x) => x.as_const(),
                        _ => None,
                    };
                    let mut seen = self.seen[i];
                    same_on_every_path(&mut seen, &mut self.facts.atomic_add_const[i], c);
                }
                same_on_every_path(&mut self.seen[i], &mut self.facts.atomic_map[i], map);
                // Read then write: both must be in bounds and (stack) initialised. A 64-bit
                // add that does not fetch keeps a map shardable.
                self.adding = op == AtomicOp::Add && !fetch && size == Size::DW;
                let old = self.load(&mut st, i, d, ins.off, size, false);
                let old = match old {
                    Ok(v) => v,
                    Err(e) => {
                        self.adding = false;
                        return Err(e);
                    }
                };
                if old.is_pointer() {
                    return Err(self.diag(
                        Rule::StackPointer,
                        i,
                        &st,
                        &[d],
                        format!(
                            "an atomic on a spilled pointer ({}) would turn it into a number",
                            self.speaker().value(&old)
                        ),
                    ));
                }
                let stored = self.store(
                    &mut st,
                    i,
                    d,
                    ins.off,
                    size,
                    Reg::Scalar(Scalar::unknown()),
                    None,
                );
                self.adding = false;
                stored?;
                if fetch {
                    let reg = if op == AtomicOp::Cmpxchg { 0 } else { s };
                    let v = match (old, width_of(size)) {
                        (Reg::Scalar(x), Width::W32) => {
                            Reg::Scalar(Scalar::alu(AluOp::Mov, Width::W32, &Scalar::unknown(), &x))
                        }
                        (Reg::Scalar(x), _) => Reg::Scalar(x),
                        _ => Reg::Scalar(Scalar::unknown()),
                    };
                    st.cur_mut().regs[reg as usize] = v;
                } else {
                    self.facts.atomic_no_fetch[i] = true;
                }
                Ok(Step::Next(st, next))
            }
        }
    }
}
