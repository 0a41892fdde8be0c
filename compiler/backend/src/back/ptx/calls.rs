//! Calls: the helpers lowered inline (special registers, fences, thread and block ids), the
//! tables of helpers that go to the device runtime, calls into the runtime, and BPF-to-BPF
//! calls of a program's subprograms.

use super::frame::Fp;
use super::func::FuncWriter;
use super::fuse;
use super::symbols::func_symbol;
use crate::isa::table::Size;
use bpf2ptx_runtime::Lowering;
use std::fmt::Write as _;

/// The catalogue name of `bpf_map_lookup_elem`, whose calls may be inlined.
pub(super) const LOOKUP: &str = "map_lookup_elem";
/// The catalogue name of `bpf_map_update_elem`, whose calls may be inlined.
pub(super) const UPDATE: &str = "map_update_elem";

/// How helper `id` is lowered: its [`bpf2ptx_runtime::Lowering`] in the catalogue, the
/// one table of helper ids (None: not a helper bpf2ptx implements).
pub(super) fn lowering(id: i64) -> Option<Lowering> {
    bpf2ptx_runtime::helper(id).map(|h| h.lowering)
}

/// The helpers lowered inline, in catalogue order (what a `callx` of a helper id tries).
pub(super) fn inline_helpers() -> impl Iterator<Item = i64> {
    bpf2ptx_runtime::HELPERS
        .iter()
        .filter(|h| h.lowering == Lowering::Inline)
        .map(|h| i64::from(h.id))
}

/// The runtime functions helper calls lower to (map and ring functions).
pub(super) fn runtime_callees() -> impl Iterator<Item = &'static str> {
    bpf2ptx_runtime::HELPERS
        .iter()
        .filter_map(|h| match h.lowering {
            Lowering::Map { runtime, .. } | Lowering::Ring { runtime, .. } => Some(runtime),
            _ => None,
        })
}

impl FuncWriter<'_> {
    /// The PTX of helper `id`, one lowered [`Lowering::Inline`], chosen by its catalogue
    /// name (the catalogue is the one home of the ids).
    pub(super) fn helper(&mut self, id: i64) {
        let name = bpf2ptx_runtime::helper(id).map_or("", |h| h.name);
        match name {
            // ktime_get_ns / get_globaltimer: the GPU's global nanosecond timer.
            "ktime_get_ns" | "get_globaltimer" => self.l("mov.u64 %r0, %globaltimer;"),
            // get_smp_processor_id / get_sm_id: the SM the thread runs on.
            "get_smp_processor_id" | "get_sm_id" => {
                self.l("mov.u32 %w0, %smid;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            // get_current_pid_tgid: (linear block index << 32) | linear thread index.
            "get_current_pid_tgid" => {
                self.linear_block("%t1");
                self.linear_thread("%t2");
                self.l("shl.b64 %t1, %t1, 32;");
                self.l("or.b64 %r0, %t1, %t2;");
            }
            // get_block_idx / get_block_dim / get_thread_idx / get_grid_dim: x, y, z as
            // u64 through the pointers in r1, r2, r3.
            "get_block_idx" | "get_block_dim" | "get_thread_idx" | "get_grid_dim" => {
                let reg = match name {
                    "get_block_idx" => "%ctaid",
                    "get_block_dim" => "%ntid",
                    "get_thread_idx" => "%tid",
                    _ => "%nctaid",
                };
                for (k, c) in ["x", "y", "z"].iter().enumerate() {
                    self.l(format!("mov.u32 %w0, {reg}.{c};"));
                    self.l("cvt.u64.u32 %t3, %w0;");
                    // The pointer's alignment is not known: the checked store path.
                    let saved = std::mem::replace(&mut self.cur, usize::MAX);
                    self.store(Size::DW, k as u8 + 1, 0, &[Fp::Any; 11], 0, "%t3");
                    self.cur = saved;
                }
                self.l("mov.u64 %r0, 0;");
            }
            // gpu_membar: order this thread's writes for every observer.
            "gpu_membar" => {
                self.l("membar.sys;");
                self.l("mov.u64 %r0, 0;");
            }
            // gpu_exit: the thread ends here (bpftime's meaning).
            "gpu_exit" => self.l("exit;"),
            // get_warp_id: the warp's index in its block.
            "get_warp_id" => {
                self.linear_thread("%t2");
                self.l("shr.u64 %r0, %t2, 5;");
            }
            // get_global_thread_id: linear block index * threads per block + thread index.
            "get_global_thread_id" => self.global_thread_id("%r0"),
            // get_active_mask: in a per-warp program the lanes its leader stands for,
            // else `activemask` (PTX 6.2, which the module then declares).
            "get_active_mask" if self.lanes => self.l("cvt.u64.u32 %r0, %lanes;"),
            "get_active_mask" => {
                self.ptx_62 = true;
                self.l("activemask.b32 %w0;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            // clock64: the SM's cycle counter.
            "clock64" => self.l("mov.u64 %r0, %clock64;"),
            // log2: bfind gives the highest set bit's index, 0xffffffff (-1) for 0, which
            // the signed max takes to 0. On a constant r1 ptxas folds both.
            "log2" => {
                self.l("bfind.u64 %w0, %r1;");
                self.l("max.s32 %w0, %w0, 0;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            // get_lane_id.
            "get_lane_id" => {
                self.l("mov.u32 %w0, %laneid;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            _ => unreachable!("only helpers lowered inline reach here"),
        }
    }

    /// A call into the runtime with the given operands (BPF registers or constants) as
    /// arguments; r0 gets the result where the function returns one.
    pub(super) fn call_runtime(&mut self, name: &str, args: &[&str], returns: bool) {
        self.l("{");
        let mut params = Vec::new();
        for (k, a) in args.iter().enumerate() {
            self.l(format!(".param .b64 bpf_h{k};"));
            self.l(format!("st.param.b64 [bpf_h{k}], {a};"));
            params.push(format!("bpf_h{k}"));
        }
        if returns {
            self.l(".param .b64 bpf_hr;");
            self.l(format!(
                "call.uni (bpf_hr), {name}, ({});",
                params.join(", ")
            ));
            self.l("ld.param.b64 %r0, [bpf_hr];");
        } else {
            self.l(format!("call.uni {name}, ({});", params.join(", ")));
        }
        self.l("}");
    }

    pub(super) fn call_local(&mut self, k: usize) {
        let callee = func_symbol(self.prog, k);
        self.l("{");
        for r in 1..=5 {
            self.l(format!(".param .b64 bpf_p{r};"));
            self.l(format!("st.param.b64 [bpf_p{r}], %r{r};"));
        }
        let lanes = if self.lanes && k > 0 {
            self.l(".param .b32 bpf_pl;");
            self.l("st.param.b32 [bpf_pl], %lanes;");
            ", bpf_pl"
        } else {
            ""
        };
        self.l(".param .b64 bpf_rv;");
        self.l(format!(
            "call.uni (bpf_rv), {callee}, (bpf_p1, bpf_p2, bpf_p3, bpf_p4, bpf_p5{lanes});"
        ));
        self.l("ld.param.b64 %r0, [bpf_rv];");
        self.l("}");
    }

    /// `dst` = tid.x + tid.y * ntid.x + tid.z * ntid.x * ntid.y (u64).
    fn linear_thread(&mut self, dst: &str) {
        self.linear(dst, "%tid", "%ntid");
    }

    /// `dst` (u64) = linear block index x threads per block + linear thread index in the
    /// block (uses %t1-%t3, %w0-%w2 and %p3).
    ///
    /// A 1-D launch (`ntid.y`, `ntid.z`, `nctaid.y`, `nctaid.z` all 1, the common case)
    /// takes a short path, `ctaid.x * ntid.x + tid.x`: the test reads launch constants,
    /// which ptxas keeps in uniform registers, and skips the `tid.y`/`tid.z`/`ctaid.y`/
    /// `ctaid.z` reads whose latency otherwise sits at the start of every probe that
    /// numbers threads (a per-warp counter costs 1.2x its 1-D CUDA twin without it).
    ///
    /// In a fused body whose forwarded stores need the launch's shape
    /// ([`FuncWriter::fuse_shape`]), each path also answers it in `fuse::SHAPE_PRED`: the
    /// 1-D path in five instructions from the launch constants it already read.
    fn global_thread_id(&mut self, dst: &str) {
        self.global_id_then(dst, false, |w, one_d| {
            if let Some(test) = w.fuse_shape() {
                for line in fuse::shape_test_lines(test, one_d) {
                    w.l(line);
                }
            }
        });
    }

    /// [`FuncWriter::global_thread_id`], or with `warp` the global warp id: linear block
    /// index x warps per block (threads per block rounded up to 32, as the hardware forms
    /// warps from the linear thread index) + linear thread index / 32.
    pub(super) fn global_id(&mut self, dst: &str, warp: bool) {
        self.global_id_then(dst, warp, |_, _| {});
    }

    /// [`FuncWriter::global_id`], with `tail(self, one_d)` written at the end of each of
    /// its two paths (`one_d`: the 1-D one), after `dst`.
    fn global_id_then(&mut self, dst: &str, warp: bool, tail: impl Fn(&mut Self, bool)) {
        let (general, done) = (self.fresh_label(), self.fresh_label());
        self.l("mov.u32 %w0, %ntid.y;");
        for r in ["%ntid.z", "%nctaid.y", "%nctaid.z"] {
            self.l(format!("mov.u32 %w1, {r};"));
            self.l("or.b32 %w0, %w0, %w1;");
        }
        self.l("setp.ne.u32 %p3, %w0, 1;");
        self.l(format!("@%p3 bra {general};"));
        self.l("mov.u32 %w0, %ctaid.x;");
        self.l("mov.u32 %w1, %ntid.x;");
        self.l("mov.u32 %w2, %tid.x;");
        if warp {
            self.warps_per_block("%w1");
            self.l("shr.u32 %w2, %w2, 5;");
        }
        self.l("mul.wide.u32 %t3, %w0, %w1;");
        self.l("cvt.u64.u32 %t2, %w2;");
        self.l(format!("add.u64 {dst}, %t3, %t2;"));
        tail(self, true);
        self.l(format!("bra.uni {done};"));
        let _ = writeln!(self.out, "{general}:");
        self.linear_block("%t1");
        self.linear_thread("%t2");
        self.l("mov.u32 %w0, %ntid.x;");
        self.l("mov.u32 %w1, %ntid.y;");
        self.l("mul.lo.u32 %w0, %w0, %w1;");
        self.l("mov.u32 %w1, %ntid.z;");
        self.l("mul.lo.u32 %w0, %w0, %w1;");
        if warp {
            self.warps_per_block("%w0");
            self.l("shr.u64 %t2, %t2, 5;");
        }
        self.l("cvt.u64.u32 %t3, %w0;");
        self.l(format!("mad.lo.u64 {dst}, %t1, %t3, %t2;"));
        tail(self, false);
        let _ = writeln!(self.out, "{done}:");
    }

    /// `threads` (a .u32 register holding threads per block) becomes warps per block.
    fn warps_per_block(&mut self, threads: &str) {
        self.l(format!("add.u32 {threads}, {threads}, 31;"));
        self.l(format!("shr.u32 {threads}, {threads}, 5;"));
    }

    /// `dst` = ctaid.x + ctaid.y * nctaid.x + ctaid.z * nctaid.x * nctaid.y (u64).
    fn linear_block(&mut self, dst: &str) {
        self.linear(dst, "%ctaid", "%nctaid");
    }

    /// `dst` = idx.x + idx.y * dim.x + idx.z * dim.x * dim.y, in 32-bit arithmetic: exact
    /// for threads (a block has at most 1024) and for grids below 2^32 blocks.
    fn linear(&mut self, dst: &str, idx: &str, dim: &str) {
        self.l(format!("mov.u32 %w0, {idx}.z;"));
        self.l(format!("mov.u32 %w1, {dim}.y;"));
        self.l(format!("mov.u32 %w2, {idx}.y;"));
        self.l("mad.lo.u32 %w0, %w0, %w1, %w2;");
        self.l(format!("mov.u32 %w1, {dim}.x;"));
        self.l(format!("mov.u32 %w2, {idx}.x;"));
        self.l("mad.lo.u32 %w0, %w0, %w1, %w2;");
        self.l(format!("cvt.u64.u32 {dst}, %w0;"));
    }
}
