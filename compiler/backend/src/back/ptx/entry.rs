//! Execution granularity (which threads of a launch run a probe) and the `.entry` kernels
//! of [`Options::entry`]: the guards and rejoins that entry kernels and injection sites
//! share, and the kernel around a program's inlined body. Apart because injection uses
//! the granularity texts without the rest of the writer.

use super::module::INLINE_END;
use super::symbols::entry_symbol;
use super::Options;
use crate::isa::table::{CallKind, Kind};
use crate::program::Program;
use bpf2ptx_runtime::is_helper;

/// Which threads of a launch run a probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Granularity {
    /// Every thread.
    #[default]
    Thread,
    /// Once per warp: the lowest lane of the warp's active mask.
    Warp,
    /// Once per block: the thread with tid (0, 0, 0).
    Block,
}

/// The test that lets only the threads of granularity `g` go on and sends the others to
/// `skip`: nothing for threads; for a block the thread with tid (0, 0, 0); for a warp one
/// lane, chosen by `edge`:
///
/// - `edge` (kernel entry and exit, which every thread passes exactly once): lane 0, which
///   every warp has (a warp's lanes are numbered from 0 up), so the probe runs exactly once
///   per warp even when the warp reaches the site in parts; it stands for the lanes that
///   arrived with it (`activemask`). Electing from `activemask` alone ran an exit probe
///   twice per warp, for 1 lane and for 31, whenever the code before it left the warp
///   split (seen on an H200 for some builds of the map runtime, whatever the rejoin);
/// - otherwise (a memory access, which some lanes may never reach): the lowest lane of
///   `activemask` (PTX 6.2), once per group of lanes that arrives together.
///
/// Uses three `.b32` registers `{w}0..{w}2` and the predicate `{p}`, which the caller
/// declares; `{w}0` is left holding `activemask`. Entry kernels and injection sites both
/// use it.
pub fn granularity_test(g: Granularity, w: &str, p: &str, skip: &str, edge: bool) -> String {
    match g {
        Granularity::Thread => String::new(),
        Granularity::Warp if edge => format!(
            "activemask.b32 {w}0;\nmov.u32 {w}1, %laneid;\nsetp.ne.u32 {p}, {w}1, 0;\n@{p} bra {skip};\n"
        ),
        Granularity::Warp => format!(
            "activemask.b32 {w}0;\nneg.s32 {w}1, {w}0;\nand.b32 {w}1, {w}1, {w}0;\n\
             mov.u32 {w}2, %lanemask_eq;\nsetp.ne.u32 {p}, {w}1, {w}2;\n@{p} bra {skip};\n"
        ),
        Granularity::Block => format!(
            "mov.u32 {w}0, %tid.x;\nmov.u32 {w}1, %tid.y;\nor.b32 {w}0, {w}0, {w}1;\n\
             mov.u32 {w}1, %tid.z;\nor.b32 {w}0, {w}0, {w}1;\n\
             setp.ne.u32 {p}, {w}0, 0;\n@{p} bra {skip};\n"
        ),
    }
}

/// What follows a site's skip label: for a warp, the lanes [`granularity_test`] left in
/// `{w}0` (those that arrived together: the leader, which ran the program, and the lanes
/// sent past it) wait for each other and go on together, so the next per-warp site elects
/// one leader for the whole warp again. Without it, a program whose code diverges (the map
/// runtime's locks and waits) can leave the leader apart from its lanes, and the next
/// per-warp site runs once for each part (seen on an H200: an exit probe ran twice per
/// warp, for 1 lane and for 31).
///
/// `bar.warp.sync` over the mask is the instruction CUDA documents for reconverging a
/// warp; a `match.any.sync` over it (the first fix) held for some builds and not for
/// others on the H200. `bar.warp.sync` must be reached by every lane of its mask, which a
/// leader whose program ends its thread (`gpu_exit`) does not: for such a program
/// (`may_end_thread`) the site keeps the `match.any.sync`, which is defined to wait only
/// for lanes that have not exited. Uses `{w}1`. Nothing for threads and blocks.
pub fn granularity_rejoin(g: Granularity, w: &str, may_end_thread: bool) -> String {
    match g {
        Granularity::Warp if may_end_thread => {
            format!("match.any.sync.b32 {w}1, {w}0, {w}0;\n")
        }
        Granularity::Warp => format!("bar.warp.sync {w}0;\n"),
        _ => String::new(),
    }
}

/// What a site passes a program as r5: for a per-warp program the lanes its leader stands
/// for, the `activemask` that [`granularity_test`] left in `{w}0` (the program's
/// `get_active_mask`, see `FuncWriter::lanes`); 0 otherwise. One statement setting `dst`.
pub fn lanes_word(g: Granularity, w: &str, dst: &str) -> String {
    match g {
        Granularity::Warp => format!("cvt.u64.u32 {dst}, {w}0;"),
        _ => format!("mov.u64 {dst}, 0;"),
    }
}

/// An entry kernel's guard: [`granularity_test`] with its own registers.
fn granularity_guard(g: Granularity) -> String {
    if g == Granularity::Thread {
        return String::new();
    }
    // An entry kernel's guard runs at its entry, which every thread passes once.
    let test = granularity_test(g, "%g", "%gp", "$Lbpf2ptx_skip", true);
    let mut s = String::from("\t.reg .b32 %g<3>;\n\t.reg .pred %gp;\n");
    for line in test.lines() {
        s.push('\t');
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// Whether `prog` may call `get_active_mask`: directly, or through `callx` with a helper
/// id in a register.
pub(super) fn reads_active_mask(prog: &Program) -> bool {
    prog.insns.iter().any(|i| {
        i.kind() == Kind::Callx
            || (i.kind() == Kind::Call(CallKind::Helper) && is_helper(i.imm, "get_active_mask"))
    })
}

/// Which threads of an `--entry` kernel run the program: the granularity its section names
/// (`gpu/entry.warp/K`, as for injection), else the options'.
pub(super) fn entry_granularity(prog: &Program, opts: &Options) -> Granularity {
    crate::inject::attach::Attach::from_section(&prog.section)
        .and_then(|a| a.granularity)
        .unwrap_or(opts.granularity)
}

pub(super) fn entry_kernel(prog: &Program, g: Granularity, body: &str) -> String {
    format!(
        "\n.visible .entry {}(.param .u64 bpf2ptx_mem, .param .u64 bpf2ptx_mem_len, .param .u64 bpf2ptx_result)\n{{\n\
         \t.reg .b64 %a<8>;\n\
         {}\
         \tld.param.u64 %a1, [bpf2ptx_mem];\n\
         \tld.param.u64 %a2, [bpf2ptx_mem_len];\n\
         \t{{\n\
         \t.reg .b64 %bpf2ptx_a<6>;\n\t.reg .b64 %bpf2ptx_ret;\n\
         \tmov.u64 %bpf2ptx_a1, %a1;\n\tmov.u64 %bpf2ptx_a2, %a2;\n\tmov.u64 %bpf2ptx_a3, 0;\n\
         \tmov.u64 %bpf2ptx_a4, 0;\n\t{}\n\
         \tmov.u64 %bpf2ptx_ret, 0;\n\
         \t{{\n{}\t}}\n\
         {INLINE_END}:\n\
         \tmov.u64 %a0, %bpf2ptx_ret;\n\
         \t}}\n\
         \tld.param.u64 %a4, [bpf2ptx_result];\n\
         \tcvta.to.global.u64 %a4, %a4;\n\
         \tst.global.u64 [%a4], %a0;\n\
         $Lbpf2ptx_skip:\n\
         \tret;\n}}\n",
        entry_symbol(prog),
        granularity_guard(g),
        lanes_word(g, "%g", "%bpf2ptx_a5"),
        body
    )
}
