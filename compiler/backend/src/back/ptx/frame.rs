//! The frame analysis: which registers point into the BPF stack at which offset, how many
//! bytes of frame each function needs, which accesses fold to constant slots, and whether
//! the frame's address is ever taken (when not, the frame lives in registers). A dataflow
//! pass over each function's control-flow graph (the object model's [`Cfg`]), run before
//! any lowering.
//!
//! It is the backend's lowering plan, not a verifier fact: which accesses fold to
//! constant `.local` slots follows the backend's rules, and whether the frame's address
//! is needed depends on which lookups and ring outputs the backend inlines
//! ([`needs_frame_address`]'s callback). The verifier proves the stack safe with its
//! own, path-sensitive tracking and never needs this.

use super::symbols::func_symbol;
use super::MAX_STACK;
use crate::cfg::Cfg;
use crate::isa::insn::Insn;
use crate::isa::table::{AluOp, Kind, Size, Src, Width};
use crate::program::Program;

/// How the backend lays out one function's BPF stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    /// The function's PTX symbol.
    pub symbol: String,
    /// Bytes of BPF stack the function uses (0 when it never touches r10).
    pub bytes: u32,
    /// Every access is at a constant offset from r10 and no pointer into the frame escapes,
    /// so the frame lives in registers instead of `.local` memory.
    pub in_registers: bool,
}

/// The stack layout of every function of a program, as
/// [`write_string`](super::write_string) emits it.
pub fn frame_layouts(prog: &Program) -> Vec<FrameLayout> {
    let cfg = Cfg::new(prog);
    (0..prog.funcs.len().max(1))
        .map(|k| {
            let frame = analyse_frame(prog, k, &cfg);
            FrameLayout {
                symbol: func_symbol(prog, k),
                bytes: frame.size,
                // Without the verifier's facts: no lookup is known to be inlined.
                in_registers: frame.size > 0
                    && !needs_frame_address(prog, k, &cfg, &frame, &|_, _| false),
            }
        })
        .collect()
}

/// What the frame analysis knows about a register: not a frame pointer, a frame pointer
/// at a known offset from r10, or a frame pointer at an unknown offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fp {
    No,
    At(i64),
    Any,
}

impl Fp {
    fn join(self, o: Fp) -> Fp {
        match (self, o) {
            (a, b) if a == b => a,
            (Fp::No, Fp::No) => Fp::No,
            _ => Fp::Any,
        }
    }
}

/// Frame-pointer facts per instruction of one function, and the frame size.
pub(super) struct Frame {
    /// Register facts before each instruction (None: unreachable).
    pub(super) before: Vec<Option<[Fp; 11]>>,
    /// Bytes of `.local` frame the function needs (a multiple of 8).
    pub(super) size: u32,
}

/// The frame of function `k`.
pub(super) fn analyse_frame(prog: &Program, k: usize, cfg: &Cfg) -> Frame {
    let (a, b) = (cfg.funcs()[k].start, cfg.funcs()[k].end);
    let insns = &prog.insns;
    let mut before: Vec<Option<[Fp; 11]>> = vec![None; insns.len()];
    let mut init = [Fp::No; 11];
    init[10] = Fp::At(0);
    before[a] = Some(init);
    let mut work = vec![a];
    while let Some(i) = work.pop() {
        let Some(s) = before[i] else { continue };
        let out = transfer(&insns[i], s);
        for t in cfg.successors(insns, i) {
            let new = match before[t] {
                None => out,
                Some(old) => std::array::from_fn(|r| old[r].join(out[r])),
            };
            if before[t] != Some(new) {
                before[t] = Some(new);
                work.push(t);
            }
        }
    }
    // The lowest byte below r10 that an access or an escaping pointer reaches.
    let mut low: i64 = 0;
    let mut unbounded = false;
    for i in a..b {
        // Borrowed: a copy of the facts per instruction costs more than this loop's tests.
        let Some(s) = &before[i] else { continue };
        let ins = &insns[i];
        let mut base = |r: u8, off: i64, unbounded: &mut bool| match s[r as usize] {
            Fp::At(k) => low = low.min(k + off),
            Fp::Any => *unbounded = true,
            Fp::No => {}
        };
        if let Some(access) = ins.access() {
            base(access.base, access.off.into(), &mut unbounded);
        }
        // A call's arguments may point into the frame; the callee may use them at any
        // offset it proves in bounds, so only the pointer itself is known.
        // Only calls pass arguments: visit the set bits, not r1-r5 for every instruction.
        let mut args = ins.regs().args;
        while args != 0 {
            base(args.trailing_zeros() as u8, 0, &mut unbounded);
            args &= args - 1;
        }
        // A frame pointer stored to memory could come back from anywhere.
        if matches!(ins.kind(), Kind::Stx(_) | Kind::Atomic(..)) && s[ins.src as usize] != Fp::No {
            unbounded = true;
        }
        // ... and one passed back to the caller could be used at any offset.
        if matches!(ins.kind(), Kind::Exit) && s[0] != Fp::No {
            unbounded = true;
        }
    }
    let size = if unbounded {
        MAX_STACK
    } else {
        ((-low + 7) / 8 * 8).clamp(0, i64::from(MAX_STACK)) as u32
    };
    Frame { before, size }
}

/// The constant frame offset of an access at `base + off`, when the base is a frame pointer
/// at a known offset and the access lies inside the frame, naturally aligned: such an
/// access becomes `ld.local`/`st.local` at a constant address.
pub(super) fn folded(fp: &[Fp; 11], base: u8, off: i16, size: Size, frame: u32) -> Option<i64> {
    let Fp::At(k) = fp[base as usize] else {
        return None;
    };
    let slot = i64::from(frame) + k + i64::from(off);
    (slot >= 0
        && slot + i64::from(size.bytes()) <= i64::from(frame)
        && slot % i64::from(size.bytes()) == 0)
        .then_some(slot)
}

/// Whether the function needs r10 as a real generic address: some instruction uses a frame
/// pointer other than as the base of a folded access or in tracked pointer arithmetic.
/// When none does, r10 is never materialised and ptxas can keep the whole frame in
/// registers (a 0-byte stack frame).
pub(super) fn needs_frame_address(
    prog: &Program,
    k: usize,
    cfg: &Cfg,
    frame: &Frame,
    inlined_lookup: &dyn Fn(usize, &[Fp; 11]) -> bool,
) -> bool {
    cfg.funcs()[k].clone().any(|i| {
        let Some(s) = frame.before[i] else {
            return false;
        };
        let ins = &prog.insns[i];
        let is_fp = |r: u8| s[r as usize] != Fp::No;
        match ins.kind() {
            Kind::Ldx(size, _) => {
                is_fp(ins.src) && folded(&s, ins.src, ins.off, size, frame.size).is_none()
            }
            Kind::St(size) => {
                is_fp(ins.dst) && folded(&s, ins.dst, ins.off, size, frame.size).is_none()
            }
            Kind::Stx(size) | Kind::Atomic(size, ..) => {
                is_fp(ins.src)
                    || (is_fp(ins.dst) && folded(&s, ins.dst, ins.off, size, frame.size).is_none())
            }
            Kind::Alu(AluOp::Mov, Width::W64, Src::X) => false,
            Kind::Alu(AluOp::Add | AluOp::Sub, Width::W64, Src::K) => {
                matches!(s[ins.dst as usize], Fp::Any)
            }
            Kind::Alu(_, _, src) => is_fp(ins.dst) || (src == Src::X && is_fp(ins.src)),
            Kind::Neg(_) | Kind::Endian(..) => is_fp(ins.dst),
            Kind::Movsx(..) => is_fp(ins.src),
            Kind::Jmp(_, _, src) => is_fp(ins.dst) || (src == Src::X && is_fp(ins.src)),
            // An inlined array lookup reads its key from the slot directly.
            Kind::Call(_) if inlined_lookup(i, &s) => is_fp(1),
            Kind::Call(_) | Kind::Callx => {
                (1..=5).any(is_fp) || (matches!(ins.kind(), Kind::Callx) && is_fp(ins.dst))
            }
            Kind::Exit => is_fp(0),
            Kind::LdInd(_) => is_fp(ins.src),
            Kind::Ja | Kind::Gotol | Kind::MayGoto | Kind::LdImm64(_) | Kind::LdAbs(_) => false,
        }
    })
}

fn transfer(ins: &Insn, mut s: [Fp; 11]) -> [Fp; 11] {
    let d = ins.dst as usize;
    match ins.kind() {
        Kind::Alu(AluOp::Mov, Width::W64, Src::X) => s[d] = s[ins.src as usize],
        Kind::Alu(op @ (AluOp::Add | AluOp::Sub), Width::W64, Src::K) => {
            s[d] = match s[d] {
                Fp::At(k) => Fp::At(if op == AluOp::Add {
                    k + ins.imm
                } else {
                    k - ins.imm
                }),
                x => x,
            }
        }
        Kind::Alu(_, _, src) => {
            let other = if src == Src::X {
                s[ins.src as usize]
            } else {
                Fp::No
            };
            s[d] = if s[d] == Fp::No && other == Fp::No {
                Fp::No
            } else {
                Fp::Any
            };
        }
        Kind::Neg(_) | Kind::Endian(..) | Kind::Movsx(..) => {
            s[d] = if s[d] == Fp::No { Fp::No } else { Fp::Any }
        }
        // Anything else: a register it writes or leaves undefined holds no frame pointer
        // (a load's value, a call's result, an atomic's fetched value).
        Kind::Jmp(..)
        | Kind::Ja
        | Kind::Gotol
        | Kind::MayGoto
        | Kind::Call(_)
        | Kind::Callx
        | Kind::Exit
        | Kind::LdImm64(_)
        | Kind::LdAbs(_)
        | Kind::LdInd(_)
        | Kind::Ldx(..)
        | Kind::St(_)
        | Kind::Stx(_)
        | Kind::Atomic(..) => {
            let e = ins.regs();
            let gone = e.writes | e.clobbers;
            for (r, fp) in s.iter_mut().enumerate() {
                if gone & (1 << r) != 0 {
                    *fp = Fp::No;
                }
            }
        }
    }
    s
}
