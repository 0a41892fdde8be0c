//! The forwarded lookup's shortcut ([`FwSkip`]): where a body looks a slot up only to read
//! back what this thread stored there, and the forward already holds that value, the body
//! can start right after the lookup's null test.
//!
//! Why it is exact. Let J be the null test `if p == 0` (or `!= 0`) of a lookup of map M
//! with key K (a constant, or the thread's id or warp), and P the instruction the test
//! falls to when `p` is not NULL. When the flag of a forwarded slot S of M and K is set,
//! this thread's entry probe stored through a lookup of the same map and key, so that
//! lookup did not miss; an array lookup's result depends on the key alone, so `p` is not
//! NULL either and every run of the body goes from its start straight to P (the code up to
//! J is straight-line: no other jump is taken, nothing exits). Jumping to P instead skips
//! that code, so the two runs differ at P only in what the skipped code wrote: registers,
//! and frame bytes at known offsets (it may write nothing else: no store outside the frame,
//! no atomic, no call with effects). [`fw_skip`] follows those "stale" registers and
//! bytes forward from P and accepts only when nothing reads them before it overwrites them,
//! except a forwarded load of S through the stale pointer, which with the flag set reads
//! the register, never its base. Every other instruction computes the same thing on both
//! runs, so the maps and the outputs are those of the full body.
//!
//! Stale frame bytes are followed conservatively: a read whose bytes the pass cannot place
//! (a load through a pointer it lost, a helper other than the map helpers whose key and
//! value it can place, any call) refuses the shortcut while any stale byte remains.

use super::{lookup, Found, FwSkip, FwSlot, Key, KeyForm, Tid, Val, PURE_HELPERS, XYZ_HELPERS};
use crate::isa::insn::Insn;
use crate::isa::table::{CallKind, Cond, Kind, Size, Src, Width};
use crate::program::Object;
use bpf2ptx_verifier::{Facts, Regions};
use std::collections::BTreeMap;

use crate::isa::effect::Regs;

/// What may differ at an instruction between the run that skipped and the one that did
/// not: registers, and frame bytes (offsets from r10, sorted, no repeats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Stale {
    regs: Regs,
    bytes: Vec<i64>,
}

impl Stale {
    fn join(&mut self, o: &Stale) {
        self.regs |= o.regs;
        self.bytes.extend_from_slice(&o.bytes);
        self.bytes.sort_unstable();
        self.bytes.dedup();
    }

    fn mark(&mut self, at: i64, n: u32) {
        self.bytes.extend(at..at + i64::from(n));
        self.bytes.sort_unstable();
        self.bytes.dedup();
    }

    fn clear(&mut self, at: i64, n: u32) {
        self.bytes.retain(|&b| b < at || at + i64::from(n) <= b);
    }

    fn overlaps(&self, at: i64, n: u32) -> bool {
        self.bytes.iter().any(|&b| at <= b && b < at + i64::from(n))
    }
}

/// The registers instruction `ins` reads: a helper's prototype arguments, r1-r5 for any
/// other call, the operands of the rest (as the verifier's own liveness counts them).
fn reads(ins: &Insn) -> Regs {
    let e = ins.regs();
    if ins.kind() == Kind::Call(CallKind::Helper) {
        if let Some(h) = bpf2ptx_runtime::helper(ins.imm) {
            return (1..=h.args.len()).fold(e.reads, |m, k| m | (1 << k));
        }
    }
    e.reads | e.args
}

fn writes(ins: &Insn) -> Regs {
    let e = ins.regs();
    e.writes | e.clobbers
}

/// The key form of a value pointer's key, as a forwarded slot names it.
fn key_form(key: Key) -> Option<KeyForm> {
    match key {
        Key::Const(c) => Some(KeyForm::Const(c)),
        Key::Tid(Tid::Low32) => Some(KeyForm::Thread),
        Key::Tid(Tid::Shr5Low32) => Some(KeyForm::WarpOfThread),
        _ => None,
    }
}

/// The shortcut of program `pi`'s body (`found`, the analysis of it under `facts`) for
/// its forwarded loads `fw_load`, when there is one (the module doc says when).
pub(super) fn fw_skip(
    obj: &Object,
    pi: usize,
    facts: &Facts,
    found: &Found,
    fw_load: &BTreeMap<usize, FwSlot>,
) -> Option<FwSkip> {
    if fw_load.is_empty() {
        return None;
    }
    let prog = obj.programs.get(pi)?;
    let insns = &prog.insns;
    let cfg = crate::cfg::Cfg::new(prog);
    let body = found.body.clone();
    let reached = |i: usize| facts.reached.get(i).copied().unwrap_or(false);
    let state = |i: usize| found.states.get(i).and_then(|s| s.as_ref());
    // The straight-line start, up to the null test of a lookup some forwarded load reads.
    let mut stale = Stale::default();
    let mut i = body.start;
    let (map, key, resume) = loop {
        if i >= body.end || !reached(i) {
            return None;
        }
        let st = state(i)?;
        let ins = insns[i];
        let d = ins.dst as usize;
        match ins.kind() {
            Kind::Jmp(c @ (Cond::Eq | Cond::Ne), Width::W64, Src::K) if ins.imm == 0 => {
                if let Val::Value { map, key, off: 0 } = st.regs[d] {
                    let form = key_form(key);
                    let read = fw_load
                        .values()
                        .any(|f| f.map == map && Some(f.key) == form);
                    let always = facts.branch_always.get(i).copied().flatten();
                    let target = cfg.jump(insns, i)?.ok()?;
                    // Where a value that is not NULL goes; a test the verifier decided
                    // the other way is not the one the forward makes moot.
                    let (resume, never) = match c {
                        Cond::Eq => (i + 1, Some(true)),
                        _ => (target, Some(false)),
                    };
                    if read && always != never && target > i {
                        break (map, form?, resume);
                    }
                }
                if facts.branch_always.get(i).copied().flatten() != Some(false) {
                    return None;
                }
            }
            Kind::Jmp(..) if facts.branch_always.get(i).copied().flatten() == Some(false) => {}
            Kind::Alu(..)
            | Kind::Neg(_)
            | Kind::Endian(..)
            | Kind::Movsx(..)
            | Kind::LdImm64(_)
            | Kind::Ldx(..) => {}
            Kind::St(size) | Kind::Stx(size) => match st.regs[d] {
                Val::Stack(k) => stale.mark(k + i64::from(ins.off), size.bytes()),
                _ => return None,
            },
            Kind::Call(CallKind::Helper) => {
                let name = bpf2ptx_runtime::helper(ins.imm).map_or("", |h| h.name);
                let pure = name == "get_global_thread_id" || PURE_HELPERS.contains(&name);
                let array_lookup =
                    name == "map_lookup_elem" && matches!(lookup(obj, st), Val::Value { .. });
                if !pure && !array_lookup {
                    return None;
                }
            }
            _ => return None,
        }
        stale.regs |= writes(&ins);
        i += 1;
    };
    if resume >= body.end || !reached(resume) {
        return None;
    }
    // From the resume point on: nothing reads what the skipped start left behind, but a
    // forwarded load of one slot of that lookup's map and key through the stale pointer.
    let mut slot: Option<FwSlot> = None;
    let mut at: Vec<Option<Stale>> = vec![None; body.end];
    at[resume] = Some(stale);
    for i in resume..body.end {
        let Some(mut st_in) = at[i].take() else {
            continue;
        };
        if !reached(i) {
            continue;
        }
        let st = state(i)?;
        let ins = insns[i];
        let (d, s) = (ins.dst as usize, ins.src as usize);
        let r = reads(&ins);
        if r & st_in.regs != 0 {
            let forwarded = match (ins.kind(), fw_load.get(&i)) {
                (Kind::Ldx(Size::DW, false), Some(f))
                    if r & st_in.regs == 1 << s && f.map == map && f.key == key =>
                {
                    Some(*f)
                }
                _ => None,
            };
            match (forwarded, slot) {
                (Some(f), None) => slot = Some(f),
                (Some(f), Some(g)) if f == g => {}
                _ => return None,
            }
        }
        // Frame bytes read, where the pass can place them.
        let stack_read = |base: Val, off: i16, n: u32| -> Option<bool> {
            match base {
                Val::Stack(k) => Some(st_in.overlaps(k + i64::from(off), n)),
                _ => {
                    let regions = facts.regions.get(i).copied().unwrap_or(Regions::NONE);
                    (!regions.touches(Regions::STACK) || st_in.bytes.is_empty()).then_some(false)
                }
            }
        };
        let access = match ins.kind() {
            Kind::Ldx(size, _) => Some((st.regs[s], size)),
            Kind::Atomic(size, ..) => Some((st.regs[d], size)),
            _ => None,
        };
        if let Some((base, size)) = access {
            if stack_read(base, ins.off, size.bytes())? {
                return None;
            }
        }
        match ins.kind() {
            Kind::St(size) | Kind::Stx(size) => {
                if let Val::Stack(k) = st.regs[d] {
                    st_in.clear(k + i64::from(ins.off), size.bytes());
                }
            }
            Kind::Call(CallKind::Helper) if !st_in.bytes.is_empty() => {
                let name = bpf2ptx_runtime::helper(ins.imm).map_or("", |h| h.name);
                let sizes = |m: Val| match m {
                    Val::Map(m) => obj.maps.get(m as usize).map(|m| (m.key_size, m.value_size)),
                    _ => None,
                };
                // (register, bytes) the helper reads through the frame.
                let args: Vec<(usize, u32)> = match name {
                    "get_global_thread_id" => vec![],
                    n if PURE_HELPERS.contains(&n) => vec![],
                    n if XYZ_HELPERS.contains(&n) => {
                        for r in 1..=3 {
                            if let Val::Stack(k) = st.regs[r] {
                                st_in.clear(k, 8);
                            }
                        }
                        vec![]
                    }
                    "map_lookup_elem" | "map_delete_elem" => vec![(2, sizes(st.regs[1])?.0)],
                    "map_update_elem" => {
                        let (k, v) = sizes(st.regs[1])?;
                        vec![(2, k), (3, v)]
                    }
                    _ => return None,
                };
                for (r, n) in args {
                    match st.regs[r] {
                        Val::Stack(k) if !st_in.overlaps(k, n) => {}
                        Val::Value { .. } => {}
                        _ => return None,
                    }
                }
            }
            Kind::Call(_) | Kind::Callx if !st_in.bytes.is_empty() => return None,
            _ => {}
        }
        st_in.regs &= !writes(&ins);
        for &t in cfg.successors(insns, i).iter() {
            if t <= i || t >= body.end {
                return None;
            }
            match &mut at[t] {
                Some(x) => x.join(&st_in),
                x => *x = Some(st_in.clone()),
            }
        }
    }
    slot.map(|slot| FwSkip { slot, resume })
}
