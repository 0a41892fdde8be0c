//! The function writer: [`FuncWriter`]'s state, its construction from the options, and
//! the lowering loop that walks one BPF function and lowers each instruction, handing ALU
//! operations, memory accesses, atomics, calls, map helpers and ring output to the
//! methods of the sibling files.

use super::calls::{inline_helpers, lowering, LOOKUP, UPDATE};
use super::entry::{entry_granularity, reads_active_mask, Granularity};
use super::frame::{analyse_frame, needs_frame_address, Fp};
use super::fuse::{self, SitePlan};
use super::loops::LoopRegs;
use super::module::{map_storage, INLINE_END};
use super::symbols::{map_desc_symbol, map_ref_symbol, map_symbol};
use super::{atomic_scope, has_map_ref, is_sharded, Error, Options, FUNC_TAG};
use crate::back::PlainAdd;
use crate::cfg::Cfg;
use crate::isa::table::{AluOp, CallKind, Cond, Kind, Order, Pseudo, Src, Width};
use crate::program::{MapOrigin, Object, Program};
use bpf2ptx_runtime::{is_helper, Lowering};
use bpf2ptx_verifier::{Facts, Verified};
use std::collections::BTreeSet;
use std::fmt::Write as _;

pub(super) struct FuncWriter<'a> {
    pub(super) obj: &'a Object,
    pub(super) prog: &'a Program,
    k: usize,
    pub(super) out: String,
    pub(super) need: BTreeSet<String>,
    labels: usize,
    /// The frame lives in registers `%s<n>` instead of `.local` memory.
    pub(super) promote: bool,
    /// An instruction needs PTX ISA 6.2 (`activemask`).
    pub(super) ptx_62: bool,
    /// The verifier's facts about this program.
    pub(super) facts: &'a Facts,
    /// The instruction being lowered.
    pub(super) cur: usize,
    /// Atomics at `.sys` scope (a map of the module is in host memory).
    pub(super) sys: bool,
    /// Per map: sharded into [`SHARDS`](super::SHARDS) per-SM replicas ([`is_sharded`]).
    pub(super) sharded: Vec<bool>,
    /// The body is inlined (an attach site, [`inline_body`](super::inline_body), or an
    /// entry kernel), not a `.func`.
    pub(super) inline: bool,
    /// Context loads at constant offsets read the site's `%bpf2ptx_c` registers.
    pub(super) ctx_regs: bool,
    /// Per map: placed in host memory ([`Options::host`]).
    pub(super) host: Vec<bool>,
    /// The host may bind every map elsewhere ([`Options::rebind_maps`]): storage from
    /// descriptor word 3, rings and writable global data through their reference words.
    pub(super) rebind: bool,
    /// Per map: it has an address word ([`super::has_map_addr`]), which its inlined
    /// lookups read instead of descriptor word 3.
    pub(super) addr_word: Vec<bool>,
    /// r0 holds a value pointer that cannot be NULL (an inlined lookup that cannot miss),
    /// until the next instruction.
    pub(super) nonnull_r0: bool,
    /// The register that holds an inlined array lookup's result which may be NULL, and
    /// is NULL exactly when `%lknull` holds (set by the lookup, moved by a plain copy),
    /// until any other instruction: the program's null test branches on the predicate,
    /// not on a 64-bit compare of the address (`selp` of NULL or the address, then
    /// `setp.eq.u64`, which ptxas cannot fold: it does not know a symbol's address is
    /// not 0).
    pub(super) null_pred: Option<u8>,
    /// The function declares `%lknull` (it has an inlined array lookup).
    pub(super) null_pred_reg: bool,
    /// The program runs once per warp and calls `get_active_mask`: the lanes that reached
    /// the site with the leader come in as r5 at the program's entry (BPF leaves r3..r5
    /// undefined there and the verifier refuses to read them, so no program can tell),
    /// are kept in `%lanes` and handed to every subprogram as a sixth parameter;
    /// `get_active_mask` returns them (specs/abi.md, "Execution granularity").
    pub(super) lanes: bool,
    /// The function inlines a hash map lookup or update ([`FuncWriter::hash_inline`]) and
    /// declares the miss memo (`maps::MEMO_REGS`), which every other call clears.
    memo: bool,
    /// What fusion changes in an inlined site body (empty elsewhere): adds that go to the
    /// kernel's accumulators, stores and loads forwarded through its registers.
    pub(super) fuse: SitePlan,
}

fn cmp_name(c: Cond) -> (&'static str, bool) {
    match c {
        Cond::Eq => ("eq", false),
        Cond::Ne => ("ne", false),
        Cond::Gt => ("gt", false),
        Cond::Ge => ("ge", false),
        Cond::Lt => ("lt", false),
        Cond::Le => ("le", false),
        Cond::Sgt => ("gt", true),
        Cond::Sge => ("ge", true),
        Cond::Slt => ("lt", true),
        Cond::Sle => ("le", true),
        Cond::Set => ("ne", false),
    }
}

/// For an unsigned 64-bit jump `x c k`, the bound `h` such that `x c k` is `hi(x) c h` on
/// the high 32 bits of `x` alone, when there is one: `k = h * 2^32` for `<` and `>=` (x is
/// below `h * 2^32` exactly when its high half is below `h`), `k = h * 2^32 + (2^32 - 1)`
/// for `>` and `<=` (x is above it exactly when its high half is above `h`).
fn high_half_bound(c: Cond, k: u64) -> Option<u32> {
    let (h, low) = ((k >> 32) as u32, k as u32);
    match c {
        Cond::Lt | Cond::Ge if low == 0 => Some(h),
        Cond::Gt | Cond::Le if low == u32::MAX => Some(h),
        _ => None,
    }
}

impl<'a> FuncWriter<'a> {
    /// A writer for function `k` of program `pi` with the module-wide settings.
    pub(super) fn configured(v: &'a Verified<'_>, opts: &'a Options, pi: usize, k: usize) -> Self {
        let obj = v.object();
        let mut f = FuncWriter::new(obj, &obj.programs[pi], k, v.facts(pi));
        f.sharded = (0..obj.maps.len())
            .map(|m| is_sharded(obj, opts, m))
            .collect();
        f.sys = atomic_scope(obj, opts) == bpf2ptx_runtime::Scope::Sys;
        f.host = opts.host.clone();
        f.rebind = opts.rebind_maps;
        f.addr_word = (0..obj.maps.len())
            .map(|m| super::has_map_addr(obj, opts, m))
            .collect();
        let prog = &obj.programs[pi];
        f.lanes = entry_granularity(prog, opts) == Granularity::Warp && reads_active_mask(prog);
        f
    }

    fn new(obj: &'a Object, prog: &'a Program, k: usize, facts: &'a Facts) -> Self {
        FuncWriter {
            obj,
            prog,
            k,
            out: String::new(),
            need: BTreeSet::new(),
            labels: 0,
            promote: false,
            ptx_62: false,
            facts,
            cur: 0,
            sys: false,
            sharded: Vec::new(),
            inline: false,
            ctx_regs: false,
            host: Vec::new(),
            rebind: false,
            addr_word: Vec::new(),
            nonnull_r0: false,
            null_pred: None,
            null_pred_reg: false,
            lanes: false,
            memo: false,
            fuse: SitePlan::default(),
        }
    }

    /// A label no BPF instruction uses (those are `$L<pc>`).
    pub(super) fn fresh_label(&mut self) -> String {
        self.labels += 1;
        format!("$Lx{}", self.labels)
    }

    /// A label line of the writer's own (not a BPF instruction's `$L<pc>`).
    pub(super) fn raw_label(&mut self, label: &str) {
        let _ = writeln!(self.out, "{label}:");
    }

    pub(super) fn l(&mut self, s: impl AsRef<str>) {
        self.out.push('\t');
        self.out.push_str(s.as_ref());
        self.out.push('\n');
    }

    fn unsupported(&self, i: usize, pcs: &[usize], why: &'static str) -> Error {
        Error::Unsupported {
            program: self.prog.name.clone(),
            pc: pcs[i],
            insn: self.prog.insns[i].to_string(),
            why,
        }
    }

    /// The index of the function instruction `i` (a call or a function address) names;
    /// else the `why` error naming the instruction.
    fn callee(&self, cfg: &Cfg, i: usize, why: &'static str) -> Result<usize, Error> {
        match cfg.callee(&self.prog.insns, i) {
            Some(Ok(k)) => Ok(k),
            Some(Err(_)) | None => Err(self.unsupported(i, cfg.pcs(), why)),
        }
    }

    /// Lowers function `k` into `out`. `cfg` is the program's control-flow graph, built
    /// once per program by the caller and shared by its functions (building it per
    /// function cost a tiny program's lowering about 5% in instructions).
    pub(super) fn lower(&mut self, cfg: &Cfg) -> Result<(), Error> {
        let prog = self.prog;
        let (a, b) = (cfg.funcs()[self.k].start, cfg.funcs()[self.k].end);
        let frame = analyse_frame(prog, self.k, cfg);
        // Jump targets need labels. By instruction of the function: one allocation, where a
        // set of targets cost a sort and a tree per function.
        let mut labelled = vec![false; b - a];
        for i in a..b {
            if let Some(Ok(t)) = cfg.jump(&prog.insns, i) {
                labelled[t - a] = true;
            }
        }
        let materialise = frame.size > 0
            && needs_frame_address(prog, self.k, cfg, &frame, &|i, fp| {
                self.lookup_map(i, fp, frame.size).is_some()
                    || self.ring_output_args(i, fp, frame.size).is_some()
                    || (is_helper(prog.insns[i].imm, LOOKUP)
                        && self.hash_inline(i, fp, frame.size).is_some())
            });
        // A frame whose address is never taken lives in registers: one .b64 per 8-byte
        // slot, sub-word accesses through bfe/bfi. ptxas does not promote .local arrays
        // itself, so without this every spill of a BPF program would go to local memory.
        self.promote = frame.size > 0 && !materialise;
        if self.promote {
            self.l(format!(".reg .b64 %s<{}>;", frame.size / 8));
        } else if frame.size > 0 {
            self.l(format!(".local .align 8 .b8 bpf_stack[{}];", frame.size));
        }
        // By reference: copying each instruction's register facts out of the frame costs
        // more than the test itself for all but the helper calls.
        self.memo = (a..b).any(|i| {
            frame.before[i]
                .as_ref()
                .is_some_and(|fp| self.hash_inline(i, fp, frame.size).is_some())
        });
        if self.memo {
            for line in bpf2ptx_runtime::maps::MEMO_REGS.lines() {
                self.l(line);
            }
            self.l(bpf2ptx_runtime::maps::MEMO_CLEAR.trim_end());
        }
        self.null_pred_reg = (a..b).any(|i| {
            frame.before[i]
                .as_ref()
                .is_some_and(|fp| self.inline_lookup_may_miss(i, fp, frame.size))
        });
        if self.null_pred_reg {
            self.l(".reg .pred %lknull;");
        }
        self.l(".reg .b64 %r<11>;");
        self.l(".reg .b64 %t<4>;");
        self.l(".reg .b32 %w<4>;");
        if self.fuse_shape().is_some() {
            // %p4: fuse::SHAPE_PRED, false until a get_global_thread_id answers it.
            self.l(".reg .pred %p<5>;");
            self.l(format!("setp.ne.u32 {}, 0, 0;", fuse::SHAPE_PRED));
        } else {
            self.l(".reg .pred %p<4>;");
        }
        for r in 1..=5 {
            if self.inline {
                self.l(format!("mov.u64 %r{r}, %bpf2ptx_a{r};"));
            } else {
                self.l(format!("ld.param.u64 %r{r}, [bpf_a{r}];"));
            }
        }
        let regs = LoopRegs {
            may_goto: prog.insns[a..b]
                .iter()
                .any(|x| matches!(x.kind(), Kind::MayGoto)),
            budget: self
                .facts
                .loop_budget
                .filter(|_| self.facts.budget_heads.iter().any(|&h| a <= h && h < b)),
            bpf_loop: (a..b).any(|i| self.facts.loop_callback.get(i).copied().flatten().is_some()),
        };
        self.loop_regs(&regs);
        if self.lanes {
            self.l(".reg .b32 %lanes;");
            if self.k == 0 {
                self.l("cvt.u32.u64 %lanes, %r5;");
            } else {
                self.l("ld.param.u32 %lanes, [bpf_lanes];");
            }
        }
        if materialise {
            self.l("mov.u64 %r10, bpf_stack;");
            self.l("cvta.local.u64 %r10, %r10;");
            self.l(format!("add.u64 %r10, %r10, {};", frame.size));
        } else {
            self.l("mov.u64 %r10, 0;");
        }
        // The forwarded lookup's shortcut (`fuse::FwSkip`): after everything above, which
        // every path needs, and before the body's first instruction.
        let skip = self
            .fuse
            .fw_skip
            .filter(|s| self.k == 0 && a < s.resume && s.resume < b)
            .map(|s| {
                let label = self.fresh_label();
                for line in fuse::fw_skip_head(&s.slot, &label) {
                    self.l(line);
                }
                (s.resume, label)
            });
        for i in a..b {
            if labelled[i - a] {
                let _ = writeln!(self.out, "$L{}:", cfg.pc(i));
                // Another path joins here: nothing is known about r0.
                self.nonnull_r0 = false;
                self.null_pred = None;
            }
            if let Some((_, label)) = skip.as_ref().filter(|s| s.0 == i) {
                let _ = writeln!(self.out, "{label}:");
                self.nonnull_r0 = false;
                self.null_pred = None;
            }
            if self.facts.budget_heads.binary_search(&i).is_ok()
                && self.facts.reached.get(i).is_some_and(|&r| r)
            {
                self.budget_head(cfg.pc(i));
            }
            let fp = frame.before[i].as_ref().unwrap_or(&[Fp::Any; 11]);
            self.insn(i, cfg, fp, frame.size)?;
        }
        Ok(())
    }

    /// Whether fusion turns instruction `i`'s add into an add to a kernel accumulator.
    pub(super) fn accumulates(&self, i: usize) -> bool {
        self.fuse.accumulate.contains_key(&i)
    }

    /// Instruction `i`'s add of `addend` into its accumulator (fusion's plan), instead of
    /// the atomic: the kernel adds the register to the map word when the thread leaves
    /// (`fuse::flush_text`).
    pub(super) fn accumulate(&mut self, i: usize, addend: String) {
        let acc = self.fuse.accumulate[&i].register();
        self.l(format!("add.u64 {acc}, {acc}, {addend};"));
    }

    /// The launch-shape test this body's forwarded stores need (`fuse::shape_test`), which
    /// its `get_global_thread_id` calls answer in `fuse::SHAPE_PRED`.
    pub(super) fn fuse_shape(&self) -> Option<fuse::ShapeTest> {
        fuse::shape_test(self.obj, &self.fuse)
    }

    /// After store `i`: when fusion forwards it, the stored value (`value`) into the
    /// slot's kernel register and the flag that says this thread's store is there.
    fn forward_store(&mut self, i: usize, value: &str) {
        let Some(slot) = self.fuse.fw_store.get(&i).copied() else {
            return;
        };
        for line in fuse::forwarded_store(self.obj, &slot, value) {
            self.l(line);
        }
    }

    /// The operand for a 64-bit immediate (sign-extended from 32 bits).
    fn imm64(v: i64) -> String {
        format!("{}", v)
    }

    /// Whether the current instruction's access touches only global memory (map values,
    /// the test input, ringbuf records): `ld.global`/`st.global`/`atom.global` instead of
    /// generic accesses.
    pub(super) fn proven_global(&self) -> bool {
        self.facts
            .regions
            .get(self.cur)
            .is_some_and(|r| r.is_global())
    }

    /// Whether the current instruction's address is a multiple of its size on every path:
    /// no run-time alignment test and no byte-wise fallback.
    pub(super) fn proven_aligned(&self) -> bool {
        self.facts.aligned.get(self.cur).copied().unwrap_or(false)
    }

    fn insn(&mut self, i: usize, cfg: &Cfg, fp: &[Fp; 11], frame: u32) -> Result<(), Error> {
        self.cur = i;
        let ins = self.prog.insns[i];
        let (d, s) = (ins.dst, ins.src);
        let pcs = cfg.pcs();
        // The label of the jump's target (a jump's target is an instruction of its
        // function: the verifier's structural pass checked it).
        let target = || format!("$L{}", cfg.slot_after(i, ins.jump_rel().expect("a jump")));
        let constant = self.facts.const_value.get(i).copied().flatten();
        let always = self.facts.branch_always.get(i).copied().flatten();
        // Holds for this instruction only (a lookup sets it again).
        let null_pred = self.null_pred.take();
        if self.facts.reached.get(i).is_some_and(|r| !r) {
            return Ok(());
        }
        // `if rX == 0` / `if rX != 0` on a lookup's result that is NULL exactly when
        // `%lknull` holds (through plain copies): a branch on the predicate.
        if let Some(r) = null_pred {
            match ins.kind() {
                Kind::Jmp(c @ (Cond::Eq | Cond::Ne), Width::W64, Src::K)
                    if ins.dst == r && ins.imm == 0 && always.is_none() =>
                {
                    let neg = if c == Cond::Eq { "" } else { "!" };
                    self.l(format!("@{neg}%lknull bra {};", target()));
                    return Ok(());
                }
                Kind::Alu(AluOp::Mov, Width::W64, Src::X)
                    if ins.src == r && constant.is_none() && ins.dst != 10 =>
                {
                    self.l(format!("mov.u64 %r{d}, %r{s};"));
                    self.null_pred = Some(ins.dst);
                    return Ok(());
                }
                _ => {}
            }
        }
        // `if r0 == 0` / `if r0 != 0` right after a lookup that cannot miss.
        let nonnull = std::mem::take(&mut self.nonnull_r0);
        if nonnull && ins.dst == 0 && ins.imm == 0 {
            match ins.kind() {
                Kind::Jmp(Cond::Eq, Width::W64, Src::K) => return Ok(()),
                Kind::Jmp(Cond::Ne, Width::W64, Src::K) => {
                    self.l(format!("bra {};", target()));
                    return Ok(());
                }
                _ => {}
            }
        }
        // A call other than an inlined hash lookup or update may change any map: the
        // miss memo no longer holds.
        if self.memo
            && matches!(ins.kind(), Kind::Call(_))
            && self.hash_inline(i, fp, frame).is_none()
        {
            self.l(bpf2ptx_runtime::maps::MEMO_CLEAR.trim_end());
        }
        let plain = self.facts.plain_add.get(i).copied().flatten();
        match (ins.kind(), plain) {
            (Kind::Ldx(..), Some(PlainAdd::Load)) | (Kind::Alu(..), Some(PlainAdd::Add)) => {
                return Ok(())
            }
            (Kind::Stx(_), Some(p @ PlainAdd::Store { .. })) if self.accumulates(i) => {
                self.accumulate(i, fuse::addend_operand(s, Some(p)));
                return Ok(());
            }
            (Kind::Stx(size), Some(PlainAdd::Store { addend, map })) => {
                self.plain_add(size, d, ins.off, addend, map);
                return Ok(());
            }
            _ => {}
        }
        match ins.kind() {
            Kind::Alu(..) | Kind::Neg(_) | Kind::Endian(..) | Kind::Movsx(..) | Kind::Ldx(..)
                if constant.is_some() =>
            {
                let v = constant.expect("guarded");
                self.l(format!("mov.u64 %r{d}, {};", Self::imm64(v as i64)));
            }
            Kind::Jmp(..) if always == Some(true) => {
                self.l(format!("bra {};", target()));
            }
            Kind::Jmp(..) if always == Some(false) => {}
            Kind::Alu(op, Width::W64, src) if self.alu64_narrow(op, d, s, src, ins.imm) => {}
            Kind::Alu(op, Width::W64, src) => {
                let rhs = if src == Src::X {
                    format!("%r{s}")
                } else {
                    Self::imm64(ins.imm)
                };
                self.alu64(op, d, &rhs, src, ins.imm);
            }
            Kind::Alu(op, Width::W32, src) => {
                self.l(format!("cvt.u32.u64 %w0, %r{d};"));
                let rhs = if src == Src::X {
                    self.l(format!("cvt.u32.u64 %w1, %r{s};"));
                    "%w1".to_string()
                } else {
                    format!("{}", ins.imm as i32)
                };
                self.alu32(op, &rhs, src, ins.imm as i32);
                self.l(format!("cvt.u64.u32 %r{d}, %w0;"));
            }
            Kind::Neg(Width::W64) => self.l(format!("neg.s64 %r{d}, %r{d};")),
            Kind::Neg(Width::W32) => {
                self.l(format!("cvt.u32.u64 %w0, %r{d};"));
                self.l("neg.s32 %w0, %w0;");
                self.l(format!("cvt.u64.u32 %r{d}, %w0;"));
            }
            Kind::Movsx(Width::W64, bits) => self.l(format!("bfe.s64 %r{d}, %r{s}, 0, {bits};")),
            Kind::Movsx(Width::W32, bits) => {
                self.l(format!("cvt.u32.u64 %w0, %r{s};"));
                self.l(format!("bfe.s32 %w0, %w0, 0, {bits};"));
                self.l(format!("cvt.u64.u32 %r{d}, %w0;"));
            }
            Kind::Endian(Order::Le, 16) => self.l(format!("and.b64 %r{d}, %r{d}, 65535;")),
            Kind::Endian(Order::Le, 32) => self.l(format!("and.b64 %r{d}, %r{d}, 4294967295;")),
            Kind::Endian(Order::Le, _) => {}
            Kind::Endian(_, 16) => {
                self.l(format!("cvt.u32.u64 %w0, %r{d};"));
                self.l("prmt.b32 %w0, %w0, 0, 0x4401;");
                self.l(format!("cvt.u64.u32 %r{d}, %w0;"));
            }
            Kind::Endian(_, 32) => {
                self.l(format!("cvt.u32.u64 %w0, %r{d};"));
                self.l("prmt.b32 %w0, %w0, 0, 0x0123;");
                self.l(format!("cvt.u64.u32 %r{d}, %w0;"));
            }
            Kind::Endian(..) => {
                self.l(format!("mov.b64 {{%w0, %w1}}, %r{d};"));
                self.l("prmt.b32 %w0, %w0, 0, 0x0123;");
                self.l("prmt.b32 %w1, %w1, 0, 0x0123;");
                self.l(format!("mov.b64 %r{d}, {{%w1, %w0}};"));
            }
            Kind::Jmp(c, w, src) => {
                let (cmp, signed) = cmp_name(c);
                let t = target();
                // A 64-bit compare of numbers below 2^32 (`Facts::upper_zero`) is the
                // unsigned 32-bit compare of their low halves: for JSET when either is
                // (the `and` has no upper bits), for the others when both are (as
                // non-negative numbers, signed and unsigned order agree).
                let narrow = w == Width::W64 && {
                    let (dn, rn) = (self.upper_zero(d), self.rhs_upper_zero(src, s, ins.imm));
                    if c == Cond::Set {
                        dn || (src == Src::X && rn)
                    } else {
                        dn && rn
                    }
                };
                // A 64-bit unsigned compare against a constant whose low half is all zeros
                // (`<`, `>=`) or all ones (`>`, `<=`) is the same compare of the high
                // halves (`Facts::jump_rhs_const`; the first step of a log2 by halving,
                // `if v < 2^32`, is one).
                let high = (!narrow && w == Width::W64 && src == Src::X)
                    .then(|| self.facts.jump_rhs_const.get(self.cur).copied().flatten())
                    .flatten()
                    .and_then(|k| high_half_bound(c, k));
                if let Some(h) = high {
                    self.l(format!("mov.b64 {{%w0, %w1}}, %r{d};"));
                    self.l(format!("setp.{cmp}.u32 %p0, %w1, {h};"));
                    self.l(format!("@%p0 bra {t};"));
                    return Ok(());
                }
                let signed = signed && !narrow;
                let w = if narrow { Width::W32 } else { w };
                // The operands at the jump's width (32-bit ones as the low halves), and
                // where JSET's `and` goes.
                let (bits, lhs, rhs, tmp) = match w {
                    Width::W64 => {
                        let rhs = if src == Src::X {
                            format!("%r{s}")
                        } else {
                            Self::imm64(ins.imm)
                        };
                        (64, format!("%r{d}"), rhs, "%t0")
                    }
                    Width::W32 => {
                        self.l(format!("cvt.u32.u64 %w0, %r{d};"));
                        let rhs = if src == Src::X {
                            self.l(format!("cvt.u32.u64 %w1, %r{s};"));
                            "%w1".to_string()
                        } else {
                            format!("{}", ins.imm as i32)
                        };
                        (32, "%w0".to_string(), rhs, "%w0")
                    }
                };
                if c == Cond::Set {
                    self.l(format!("and.b{bits} {tmp}, {lhs}, {rhs};"));
                    self.l(format!("setp.ne.u{bits} %p0, {tmp}, 0;"));
                } else {
                    let sign = if signed { "s" } else { "u" };
                    self.l(format!("setp.{cmp}.{sign}{bits} %p0, {lhs}, {rhs};"));
                }
                self.l(format!("@%p0 bra {t};"));
            }
            Kind::Ja | Kind::Gotol => self.l(format!("bra {};", target())),
            Kind::MayGoto => self.may_goto(&target()),
            Kind::Call(CallKind::Helper)
                if is_helper(ins.imm, LOOKUP) && self.inline_lookup(fp, frame) => {}
            Kind::Call(CallKind::Helper)
                if is_helper(ins.imm, LOOKUP) && self.inline_hash_lookup(fp, frame) => {}
            Kind::Call(CallKind::Helper)
                if is_helper(ins.imm, UPDATE) && self.inline_hash_update(fp, frame) => {}
            Kind::Call(CallKind::Helper) => match lowering(ins.imm) {
                Some(Lowering::Map { .. }) => self.map_call(i),
                Some(Lowering::Ring {
                    runtime,
                    regs,
                    returns,
                }) => {
                    self.need.insert("ringbuf".into());
                    if self.inline_ring_output(fp, frame) {
                        return Ok(());
                    }
                    self.call_runtime(runtime, regs, returns);
                }
                Some(Lowering::Printk { puts, vargs }) => {
                    self.need.insert("ringbuf".into());
                    self.need.insert("printk".into());
                    if vargs {
                        self.vprintk();
                    } else {
                        self.printk(puts);
                    }
                }
                Some(Lowering::Inline) => self.helper(ins.imm),
                Some(Lowering::Snprintf) => self.snprintf(i, pcs[i])?,
                Some(Lowering::Loop) => match self.facts.loop_callback.get(i).copied().flatten() {
                    Some(k) => self.bpf_loop(pcs[i], k),
                    None => {
                        return Err(self.unsupported(
                            i,
                            pcs,
                            "bpf_loop whose callback the verifier did not pin to one function",
                        ))
                    }
                },
                None => {
                    return Err(Error::UnknownHelper {
                        program: self.prog.name.clone(),
                        pc: pcs[i],
                        insn: ins.to_string(),
                        id: ins.imm,
                    });
                }
            },
            Kind::Call(CallKind::Local) => {
                let k = self.callee(cfg, i, "call target is not a function start")?;
                self.call_local(k);
            }
            Kind::Call(CallKind::Kfunc) => match self.prog.kfunc(i) {
                Some(k) => self.iter_kfunc(pcs[i], k),
                None => return Err(self.unsupported(
                    i,
                    pcs,
                    "kernel functions (kfuncs) other than the runtime's do not exist on the GPU",
                )),
            },
            Kind::Callx => {
                // The register holds a helper id (bpf_conformance's convention) or a
                // function address made by `ld_imm64 func`; anything else yields r0 = 0.
                self.l("mov.u64 %t1, 0;");
                self.l(format!("mov.u64 %t2, %r{d};"));
                for h in inline_helpers() {
                    self.l(format!("setp.eq.u64 %p1, %t2, {h};"));
                    self.l(format!("@!%p1 bra $Lcx{}_{h};", pcs[i]));
                    self.helper(h);
                    self.l("mov.u64 %t1, %r0;");
                    let _ = writeln!(self.out, "$Lcx{}_{h}:", pcs[i]);
                }
                for k in 0..self.prog.funcs.len() {
                    self.l(format!("setp.eq.u64 %p1, %t2, {};", FUNC_TAG + k as u64));
                    self.l(format!("@!%p1 bra $Lcxf{}_{k};", pcs[i]));
                    self.call_local(k);
                    self.l("mov.u64 %t1, %r0;");
                    let _ = writeln!(self.out, "$Lcxf{}_{k}:", pcs[i]);
                }
                self.l("mov.u64 %r0, %t1;");
            }
            Kind::Exit if self.inline => {
                self.l("mov.u64 %bpf2ptx_ret, %r0;");
                self.l(format!("bra {INLINE_END};"));
            }
            Kind::Exit => {
                self.l("st.param.b64 [bpf_ret], %r0;");
                self.l("ret;");
            }
            Kind::LdImm64(Pseudo::Imm64) => self.l(format!("mov.u64 %r{d}, {};", ins.imm)),
            Kind::LdImm64(Pseudo::Func) => {
                let k = self.callee(cfg, i, "function address is not a function start")?;
                self.l(format!("mov.u64 %r{d}, {};", FUNC_TAG + k as u64));
            }
            Kind::LdImm64(Pseudo::MapIdxValue) => {
                let (map, off) = (ins.imm as u32 as usize, (ins.imm as u64 >> 32) as u32);
                match self.obj.maps.get(map) {
                    Some(m) if m.origin == MapOrigin::GlobalData => {
                        if self.rebind && has_map_ref(m) {
                            // The section's instance, wherever the host bound it.
                            self.l(format!(
                                "ld.global.nc.u64 %r{d}, [{}];",
                                map_ref_symbol(&m.name)
                            ));
                        } else {
                            self.l(format!("mov.u64 %r{d}, {};", map_symbol(&m.name)));
                            self.l(format!("cvta.global.u64 %r{d}, %r{d};"));
                        }
                        if off != 0 {
                            self.l(format!("add.u64 %r{d}, %r{d}, {off};"));
                        }
                    }
                    _ => {
                        return Err(self.unsupported(
                            i,
                            pcs,
                            "map values other than global data need the device runtime",
                        ))
                    }
                }
            }
            Kind::LdImm64(Pseudo::MapIdx) => {
                let m = self
                    .obj
                    .maps
                    .get(ins.imm as u32 as usize)
                    .ok_or_else(|| self.unsupported(i, pcs, "map index out of range"))?;
                if m.origin == MapOrigin::GlobalData {
                    return Err(self.unsupported(
                        i,
                        pcs,
                        "a global-data section used as a map (not its value)",
                    ));
                }
                if let Err(why) = map_storage(m) {
                    return Err(self.unsupported(i, pcs, why));
                }
                if self.rebind && has_map_ref(m) {
                    // A ring's descriptor, wherever the host bound it (its claim state
                    // is shared with every module that shares the ring).
                    self.l(format!(
                        "ld.global.nc.u64 %r{d}, [{}];",
                        map_ref_symbol(&m.name)
                    ));
                } else {
                    self.l(format!("mov.u64 %r{d}, {};", map_desc_symbol(&m.name)));
                    self.l(format!("cvta.global.u64 %r{d}, %r{d};"));
                }
            }
            Kind::LdImm64(_) => {
                return Err(self.unsupported(
                    i,
                    pcs,
                    "unresolved map or BTF reference (no relocation)",
                ))
            }
            Kind::LdAbs(_) | Kind::LdInd(_) => {
                return Err(self.unsupported(
                    i,
                    pcs,
                    "legacy packet access (ld_abs/ld_ind) has no GPU meaning",
                ))
            }
            Kind::Ldx(size, signed) if self.ctx_regs && self.ctx_field(d, size, signed) => {}
            Kind::Ldx(size, signed) => {
                let val = format!("%r{d}");
                let forwarded = self.fuse.fw_load.get(&i).copied().map(|slot| {
                    let done = self.fresh_label();
                    for line in fuse::forwarded_load_head(&slot, &val, d == s, &done) {
                        self.l(line);
                    }
                    done
                });
                self.load(size, signed, s, ins.off, fp, frame, &val);
                if let Some(done) = forwarded {
                    self.raw_label(&done);
                }
            }
            Kind::St(size) => {
                self.l(format!("mov.u64 %t3, {};", ins.imm));
                self.store(size, d, ins.off, fp, frame, "%t3");
                self.forward_store(i, &ins.imm.to_string());
            }
            Kind::Stx(size) => {
                let v = format!("%r{s}");
                self.store(size, d, ins.off, fp, frame, &v);
                self.forward_store(i, &v);
            }
            Kind::Atomic(size, op, fetch) => self.atomic(size, op, fetch, d, s, ins.off, fp, frame),
        }
        Ok(())
    }
}
