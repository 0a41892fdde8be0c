//! The PTX texts of fusion: what a fused site body emits around a forwarded store and
//! before a forwarded load, the addend of an accumulated add, and, for the weaver, the
//! kernel's fusion registers and the flush that adds the accumulators to their map words.
//!
//! Apart from the plan (`fuse/mod.rs`) because the plan is an analysis of BPF (which
//! instructions of a body fusion may change, on the verifier's facts) and these are PTX
//! written for a plan already made: the warp-level reduction of the flush and the
//! launch-shape check of a forwarded store are about the GPU, not about the program.

use super::{AccSlot, FwSlot, KeyForm, SitePlan};
use crate::back::ptx::{self, is_sharded, Options};
use crate::program::{MapOrigin, Object};
use bpf2ptx_verifier::{Addend, PlainAdd};
use std::fmt::Write as _;

/// Whether a forwarded slot is the thread's own only for some launch shapes (plain arrays
/// keyed by the thread's id; per-unit arrays' slots are the unit's own for any launch).
fn needs_shape_check(obj: &Object, slot: &FwSlot) -> bool {
    obj.maps
        .get(slot.map as usize)
        .and_then(|m| m.kind())
        .is_some_and(|k| !k.is_per_unit())
}

/// The launch shape under which every thread-keyed slot a body forwards is its thread's
/// own: at most `limit` threads (a key of the global thread id is its low 32 bits, so at
/// most 2^32; `gtid >> 5`, 2^37) and, with `whole_warps`, threads per block a multiple of
/// 32 (so `gtid >> 5` names one warp). One test for the whole body, the strictest of its
/// slots': a slot with a looser rule is then forwarded for fewer launches, never wrongly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::back::ptx) struct ShapeTest {
    limit: u64,
    whole_warps: bool,
}

/// The predicate register of an inlined body that holds [`ShapeTest`]'s answer for the
/// launch, set by every `get_global_thread_id` of the body (`shape_test_lines`).
pub(in crate::back::ptx) const SHAPE_PRED: &str = "%p4";

/// The shape test the forwarded stores of `plan` need, if any: a store's flag says the
/// slot is the thread's own for this launch ([`forwarded_store`]), so a later load, or a
/// body that skips its lookup ([`super::FwSkip`]), needs to test the flag alone. A store's
/// key comes from a `get_global_thread_id` of its own body (the plan's keys are derived
/// from one on every path), whose launch-shape reads the test shares.
pub(in crate::back::ptx) fn shape_test(obj: &Object, plan: &SitePlan) -> Option<ShapeTest> {
    let slots: Vec<&FwSlot> = plan
        .fw_store
        .values()
        .filter(|s| needs_shape_check(obj, s))
        .collect();
    if slots.is_empty() {
        return None;
    }
    let warps = |s: &&FwSlot| s.key == KeyForm::WarpOfThread;
    Some(ShapeTest {
        limit: if slots.iter().all(warps) {
            1 << 37
        } else {
            1 << 32
        },
        whole_warps: slots.iter().any(warps),
    })
}

/// The lines that set [`SHAPE_PRED`] to `test`'s answer, inside `get_global_thread_id`'s
/// lowering after its result is written: `one_d` on its 1-D path (`ntid.y`, `ntid.z`,
/// `nctaid.y`, `nctaid.z` all 1, so threads = `nctaid.x * ntid.x`, below 2^41: five
/// instructions), else for any launch. Uses `%w0`-`%w2`, `%t2`, `%t3`.
pub(in crate::back::ptx) fn shape_test_lines(test: ShapeTest, one_d: bool) -> Vec<String> {
    let p = SHAPE_PRED;
    let mut l: Vec<String> = if one_d {
        [
            "mov.u32 %w0, %ntid.x;",
            "mov.u32 %w1, %nctaid.x;",
            "mul.wide.u32 %t3, %w0, %w1;",
        ]
        .map(String::from)
        .to_vec()
    } else {
        [
            "mov.u32 %w0, %ntid.x;",
            "mov.u32 %w1, %ntid.y;",
            "mul.lo.u32 %w0, %w0, %w1;",
            "mov.u32 %w1, %ntid.z;",
            "mul.lo.u32 %w0, %w0, %w1;",
            "mov.u32 %w1, %nctaid.x;",
            "mov.u32 %w2, %nctaid.y;",
            "mul.wide.u32 %t2, %w1, %w2;",
            "mov.u32 %w1, %nctaid.z;",
            "cvt.u64.u32 %t3, %w1;",
            "mul.lo.u64 %t2, %t2, %t3;",
        ]
        .map(String::from)
        .to_vec()
    };
    if one_d {
        l.push(format!("setp.le.u64 {p}, %t3, {};", test.limit));
    } else {
        // Blocks below 2^32, so blocks x threads per block (at most 1024) fits 64 bits.
        l.push(format!("setp.lt.u64 {p}, %t2, 4294967296;"));
        l.push("cvt.u64.u32 %t3, %w0;".into());
        l.push("mul.lo.u64 %t2, %t2, %t3;".into());
        l.push(format!("setp.le.and.u64 {p}, %t2, {}, {p};", test.limit));
    }
    if test.whole_warps {
        l.push("and.b32 %w1, %w0, 31;".into());
        l.push(format!("setp.eq.and.u32 {p}, %w1, 0, {p};"));
    }
    l
}

/// The lines after a forwarded store of `value` (a register or an immediate): the value
/// copied into the slot's register, and the flag set when the slot is the thread's own:
/// for a thread-keyed slot, when the launch's shape makes it so ([`SHAPE_PRED`], which
/// the body's `get_global_thread_id` set), else always.
///
/// The test is here, on the entry probe's path, rather than at each load, so that a load
/// (and a body that skips the lookup it reads through, [`super::FwSkip`]) tests one flag:
/// a skipping body has no `get_global_thread_id` left to answer the shape. On the 1-D
/// path the test is five instructions sharing the reads of the store's own thread id
/// ([`shape_test_lines`]); the general form, 22 instructions per warp on the path the
/// whole warp waits for, cost vecadd more than the load it saved (issue 19).
pub(in crate::back::ptx) fn forwarded_store(
    obj: &Object,
    slot: &FwSlot,
    value: &str,
) -> Vec<String> {
    let flag = if needs_shape_check(obj, slot) {
        format!("selp.u32 {}, 1, 0, {SHAPE_PRED};", slot.stored_register())
    } else {
        format!("mov.u32 {}, 1;", slot.stored_register())
    };
    vec![format!("mov.u64 {}, {value};", slot.register()), flag]
}

/// The kernel-scope declarations and zeroing the woven kernel needs for these
/// accumulators and forwarded slots: `(declarations, zeroing at kernel entry)`; the zeroing
/// is a block of its own, like every other text the weaver inserts into a kernel's code.
pub fn kernel_registers(acc: &[AccSlot], fw: &[FwSlot]) -> (String, String) {
    let mut decl = String::new();
    let mut init =
        String::from("{\n// bpf2ptx fusion: accumulators and forwarded slots start empty\n");
    for a in acc {
        let _ = writeln!(decl, ".reg .b64 {};", a.register());
        let _ = writeln!(init, "mov.u64 {}, 0;", a.register());
    }
    for f in fw {
        let _ = writeln!(decl, ".reg .b64 {};", f.register());
        let _ = writeln!(decl, ".reg .b32 {};", f.stored_register());
        let _ = writeln!(init, "mov.u64 {}, 0;", f.register());
        let _ = writeln!(init, "mov.u32 {}, 0;", f.stored_register());
    }
    init.push_str("}\n");
    (decl, init)
}

/// A block that adds every accumulator in `acc` to its map word and zeroes it, for the
/// threads that reach it (the module of `obj` lowered with `opts` defines the maps' symbols
/// and says whether an array is sharded and at which scope atomics run).
///
/// A whole warp that arrives together (`activemask` all ones) adds once per word: it skips
/// everything when every lane's accumulators are all zero (`vote.sync.any`); on sm_80 and
/// later, when every lane's accumulators are below 2^27 (so 32 of them fit 32 bits),
/// `redux.sync.add.u32` sums each over the warp in one instruction; otherwise five
/// butterfly shuffles (64-bit, as two 32-bit halves) do. Lane 0 adds a non-zero sum.
/// A warp that arrives in part has each lane add its own non-zero accumulators. A sharded
/// array's word is taken in the replica of the SM the flush runs on: the host sums the
/// replicas, so any replica gives the same sum as the ones the unfused adds would have
/// used. `guard`: the statement's own guard (`@%p` of `@%p ret`), run under it.
pub fn flush_text(
    obj: &Object,
    opts: &Options,
    acc: &[AccSlot],
    guard: Option<(bool, &str)>,
) -> String {
    // Each map's own placement decides its adds' scope: `.sys` for a host-placed map, which
    // the host reads while the kernel runs, `.gpu` for one in device memory, also in a
    // module with a host-placed map (as the program's own atomics on a proven map,
    // specs/abi.md "Placement").
    let space = |m: u32| {
        if opts.host.get(m as usize).copied().unwrap_or(false) {
            ".sys.global"
        } else {
            ".global"
        }
    };
    let redux = crate::inject::weave::sm_number(&opts.target).is_some_and(|n| n >= 80);
    let sharded = |m: u32| {
        is_sharded(obj, opts, m as usize) && obj.maps[m as usize].origin != MapOrigin::GlobalData
    };
    let mut s = String::from(
        "{\n.reg .b32 %bpf2ptx_f<6>;\n.reg .b64 %bpf2ptx_fd<3>;\n.reg .pred %bpf2ptx_fp<3>;\n",
    );
    if let Some((negated, reg)) = guard {
        let neg = if negated { "" } else { "!" };
        let _ = writeln!(s, "@{neg}{reg} bra $L__bpf2ptx_flushed;");
    }
    s.push_str(
        "activemask.b32 %bpf2ptx_f0;\nsetp.eq.b32 %bpf2ptx_fp0, %bpf2ptx_f0, -1;\n\
         mov.u32 %bpf2ptx_f1, %laneid;\nsetp.eq.and.u32 %bpf2ptx_fp1, %bpf2ptx_f1, 0, %bpf2ptx_fp0;\n",
    );
    if acc.iter().any(|a| sharded(a.map)) {
        s.push_str("mov.u32 %bpf2ptx_f2, %smid;\nand.b32 %bpf2ptx_f2, %bpf2ptx_f2, 255;\n");
    }
    // The word's address into %bpf2ptx_fd2 (global state space).
    // Under `rebind_maps` the storage is where the host bound it: descriptor word 3, or
    // a global-data section's reference word (generic addresses, made global).
    let address = |s: &mut String, a: &AccSlot| {
        let m = &obj.maps[a.map as usize];
        let global = m.origin == MapOrigin::GlobalData;
        if ptx::has_map_addr(obj, opts, a.map as usize) {
            // The address word, in the constant bank.
            let _ = writeln!(
                s,
                "ld.const.u64 %bpf2ptx_fd2, [{}];\ncvta.to.global.u64 %bpf2ptx_fd2, %bpf2ptx_fd2;",
                ptx::map_addr_symbol(&m.name)
            );
        } else if opts.rebind_maps && (!global || ptx::has_map_ref(m)) {
            let word = if global {
                ptx::map_ref_symbol(&m.name)
            } else {
                format!(
                    "{}+{}",
                    ptx::map_desc_symbol(&m.name),
                    bpf2ptx_runtime::desc::DATA
                )
            };
            let _ = writeln!(
                s,
                "ld.global.nc.u64 %bpf2ptx_fd2, [{word}];\ncvta.to.global.u64 %bpf2ptx_fd2, %bpf2ptx_fd2;"
            );
        } else {
            let sym = if global {
                ptx::map_symbol(&m.name)
            } else {
                ptx::map_data_symbol(&m.name)
            };
            let _ = writeln!(s, "mov.u64 %bpf2ptx_fd2, {sym};");
        }
        if sharded(a.map) {
            let replica = bpf2ptx_runtime::maps::replica_bytes(m.max_entries, m.value_size);
            let _ = writeln!(s, "mul.wide.u32 %bpf2ptx_fd1, %bpf2ptx_f2, {replica};");
            s.push_str("add.u64 %bpf2ptx_fd2, %bpf2ptx_fd2, %bpf2ptx_fd1;\n");
        }
    };
    // A whole warp: every lane's accumulators or-ed together, for the two tests.
    s.push_str("@!%bpf2ptx_fp0 bra $L__bpf2ptx_flush_lanes;\n");
    let _ = writeln!(s, "mov.b64 %bpf2ptx_fd0, {};", acc[0].register());
    for a in &acc[1..] {
        let _ = writeln!(s, "or.b64 %bpf2ptx_fd0, %bpf2ptx_fd0, {};", a.register());
    }
    s.push_str(
        "setp.ne.u64 %bpf2ptx_fp2, %bpf2ptx_fd0, 0;\nvote.sync.any.pred %bpf2ptx_fp2, %bpf2ptx_fp2, -1;\n\
         @!%bpf2ptx_fp2 bra $L__bpf2ptx_flushed;\n",
    );
    if redux {
        s.push_str(
            "setp.lt.u64 %bpf2ptx_fp2, %bpf2ptx_fd0, 134217728;\n\
             vote.sync.all.pred %bpf2ptx_fp2, %bpf2ptx_fp2, -1;\n\
             @!%bpf2ptx_fp2 bra $L__bpf2ptx_flush_wide;\n",
        );
        for a in acc {
            let r = a.register();
            let _ = writeln!(s, "cvt.u32.u64 %bpf2ptx_f3, {r};");
            s.push_str(
                "redux.sync.add.u32 %bpf2ptx_f3, %bpf2ptx_f3, -1;\n\
                 setp.ne.and.u32 %bpf2ptx_fp2, %bpf2ptx_f3, 0, %bpf2ptx_fp1;\n\
                 cvt.u64.u32 %bpf2ptx_fd0, %bpf2ptx_f3;\n",
            );
            address(&mut s, a);
            let _ = writeln!(
                s,
                "@%bpf2ptx_fp2 red{}.add.u64 [%bpf2ptx_fd2+{}], %bpf2ptx_fd0;\nmov.u64 {r}, 0;",
                space(a.map),
                a.offset
            );
        }
        s.push_str("bra $L__bpf2ptx_flushed;\n$L__bpf2ptx_flush_wide:\n");
    }
    for a in acc {
        let r = a.register();
        let _ = writeln!(s, "mov.b64 %bpf2ptx_fd0, {r};");
        for d in [16, 8, 4, 2, 1] {
            let _ = write!(
                s,
                "mov.b64 {{%bpf2ptx_f3, %bpf2ptx_f4}}, %bpf2ptx_fd0;\n\
                 shfl.sync.bfly.b32 %bpf2ptx_f3, %bpf2ptx_f3, {d}, 31, -1;\n\
                 shfl.sync.bfly.b32 %bpf2ptx_f4, %bpf2ptx_f4, {d}, 31, -1;\n\
                 mov.b64 %bpf2ptx_fd1, {{%bpf2ptx_f3, %bpf2ptx_f4}};\n\
                 add.u64 %bpf2ptx_fd0, %bpf2ptx_fd0, %bpf2ptx_fd1;\n"
            );
        }
        s.push_str("setp.ne.and.u64 %bpf2ptx_fp2, %bpf2ptx_fd0, 0, %bpf2ptx_fp1;\n");
        address(&mut s, a);
        let _ = writeln!(
            s,
            "@%bpf2ptx_fp2 red{}.add.u64 [%bpf2ptx_fd2+{}], %bpf2ptx_fd0;\nmov.u64 {r}, 0;",
            space(a.map),
            a.offset
        );
    }
    s.push_str("bra $L__bpf2ptx_flushed;\n$L__bpf2ptx_flush_lanes:\n");
    for a in acc {
        let r = a.register();
        let _ = writeln!(s, "setp.ne.u64 %bpf2ptx_fp2, {r}, 0;");
        address(&mut s, a);
        let _ = writeln!(
            s,
            "@%bpf2ptx_fp2 red{}.add.u64 [%bpf2ptx_fd2+{}], {r};\nmov.u64 {r}, 0;",
            space(a.map),
            a.offset
        );
    }
    s.push_str("$L__bpf2ptx_flushed:\n}\n");
    s
}

/// What a forwarded load of `slot` into `dst` emits before the ordinary load, and the label
/// the caller defines after it: the register when this thread stored to the slot as its
/// own (the flag, [`forwarded_store`]). `dst_is_base`: the load's address register is
/// `dst`.
///
/// Where the address is another register, the copy is unconditional (the load, when it
/// runs, overwrites it): a predicated copy keeps `dst`'s old value alive into the join,
/// and ptxas then computes that value on the forwarded path too (on warp_time's exit, the
/// context pointer `dst` held before: four instructions, and two selects at the join).
pub(in crate::back::ptx) fn forwarded_load_head(
    slot: &FwSlot,
    dst: &str,
    dst_is_base: bool,
    done: &str,
) -> Vec<String> {
    let guard = if dst_is_base { "@%p1 " } else { "" };
    vec![
        format!("setp.ne.u32 %p1, {}, 0;", slot.stored_register()),
        format!("{guard}mov.u64 {dst}, {};", slot.register()),
        format!("@%p1 bra {done};"),
    ]
}

/// The lines at the start of a body with a [`super::FwSkip`]: to `resume` (a label before
/// the instruction the body resumes at) when the slot's flag is set.
pub(in crate::back::ptx) fn fw_skip_head(slot: &FwSlot, resume: &str) -> Vec<String> {
    vec![
        format!("setp.ne.u32 %p1, {}, 0;", slot.stored_register()),
        format!("@%p1 bra {resume};"),
    ]
}

/// The addend of an accumulated add: a fused plain update's addend, else the atomic's
/// source register `src`.
pub(in crate::back::ptx) fn addend_operand(src: u8, plain: Option<PlainAdd>) -> String {
    match plain {
        Some(PlainAdd::Store {
            addend: Addend::Const(c),
            ..
        }) => c.to_string(),
        Some(PlainAdd::Store {
            addend: Addend::Reg(r),
            ..
        }) => format!("%r{r}"),
        _ => format!("%r{src}"),
    }
}
