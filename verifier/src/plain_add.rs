//! Counters written as plain code: the load, add and store of `*v += x` that the backend
//! may lower as one atomic add without fetch ([`crate::Facts::plain_add`]).
//!
//! Most published GPU probes count with `*v += 1` on a map value every thread shares. Run
//! by thousands of threads at once, the load-add-store races and loses almost every
//! update; one atomic add gives a result the racy program could also give (the one where
//! no two threads' updates overlap), so it is a sound refinement (specs/verifier.md,
//! "Plain counter updates").
//!
//! Two halves decide it. This module finds the triples from the code alone: the shape
//! (a 4- or 8-byte load, an add of a constant or of a register the loaded value does not
//! feed, a store of the sum through the same register at the same offset), straight-line
//! code in between that touches no memory, calls nothing and writes none of the registers
//! involved, and that neither the loaded value nor the sum is read anywhere else
//! ([`live_in`]: a may-analysis over every path). The exploration then adds what only the
//! paths show: on every path the memory is a map value threads share (not a per-thread
//! array's) and both accesses are aligned (`Explorer::finish_plain_adds`).

use crate::analysis::{func_bounds, successors};
use crate::structure::{uses_defs, Regs, ARGS};
use bpf2ptx_compiler::isa::table::{AluOp, CallKind, Kind, Pseudo, Size, Src, Width};
use bpf2ptx_compiler::program::Program;
use serde::Serialize;

/// An instruction's part in a counter update written as plain code (`*v += x`: a load, an
/// add, a store of the sum to the same bytes) that may run as one atomic add without fetch.
///
/// The verifier proves where this holds ([`crate::Facts::plain_add`], conditions and
/// soundness argument in specs/verifier.md); a backend lowers the store as the atomic add
/// and emits nothing for the load and the add (bpf2ptx-backend reads these facts as they
/// are, from the [`crate::Verified`] it lowers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlainAdd {
    /// The load of the old value: only the add reads it, so it is dropped.
    Load,
    /// The add: only the store reads the sum, so it is dropped.
    Add,
    /// The store of the sum: one atomic add of `addend` to the store's address.
    Store {
        /// What to add.
        addend: Addend,
        /// The map whose value the store writes, when it is the same map on every path
        /// (a backend may pick the cheaper lowering for arrays).
        map: Option<u32>,
    },
}

/// What a [`PlainAdd::Store`] adds, in the width of the access (the low 32 bits for a
/// 32-bit counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Addend {
    /// A constant from the add's immediate (negated for a subtraction).
    Const(u64),
    /// The register that held the other operand at the add. Nothing between the add and
    /// the store writes it, so with the add dropped it still holds that value at the store.
    Reg(u8),
}

/// A load, an add and a store with the shape of a counter update on one address, as far
/// as the code shows (the region and the alignment are the exploration's to prove).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Triple {
    /// The load `rX = *(uN *)(rP + off)`.
    pub(crate) load: usize,
    /// The add `rX += x` (or `rZ += rX`).
    pub(crate) add: usize,
    /// The store `*(uN *)(rP + off) = sum`.
    pub(crate) store: usize,
    /// The access size: 4 or 8 bytes, the sizes of BPF's atomic add.
    pub(crate) size: Size,
    /// What the add adds, in the width of the access.
    pub(crate) addend: Addend,
}

fn bit(r: u8) -> Regs {
    1 << r
}

/// The registers an instruction reads, including the arguments a call may read: those
/// of a helper's prototype (which are all the backend passes it), r1-r5 for any other.
fn reads(prog: &Program, i: usize) -> Regs {
    let ins = &prog.insns[i];
    let (uses, _, _) = uses_defs(ins);
    match ins.kind() {
        Kind::Call(CallKind::Helper) => match bpf2ptx_runtime::helper(ins.imm) {
            Some(h) => (1..=h.args.len()).fold(uses, |m, k| m | bit(k as u8)),
            None => uses | ARGS,
        },
        Kind::Call(_) | Kind::Callx => uses | ARGS,
        _ => uses,
    }
}

/// The registers an instruction writes or leaves undefined.
fn writes(prog: &Program, i: usize) -> Regs {
    let (_, defs, kills) = uses_defs(&prog.insns[i]);
    defs | kills
}

/// Per instruction: the registers whose value on entry may be read on some path before it
/// is written (a call reads its arguments and defines r0-r5, `exit` reads r0; each
/// function on its own, since a callee cannot see its caller's registers).
pub(crate) fn live_in(prog: &Program, pcs: &[usize], idx_of_pc: &[Option<usize>]) -> Vec<Regs> {
    let mut live = vec![0; prog.insns.len()];
    for f in func_bounds(prog) {
        let (a, b) = f;
        let succs: Vec<Vec<usize>> = (a..b)
            .map(|i| successors(prog, pcs, idx_of_pc, i, f))
            .collect();
        // Round robin to the fixed point: sets only grow, so it ends.
        let mut changed = true;
        while changed {
            changed = false;
            for i in (a..b).rev() {
                let out = succs[i - a].iter().fold(0, |acc, &t| acc | live[t]);
                let inn = reads(prog, i) | (out & !writes(prog, i));
                if inn != live[i] {
                    live[i] = inn;
                    changed = true;
                }
            }
        }
    }
    live
}

/// Straight-line code that can sit inside a triple: it computes on registers only (no
/// memory access, call, jump or exit).
fn computes_only(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Alu(..)
            | Kind::Neg(_)
            | Kind::Endian(..)
            | Kind::Movsx(..)
            | Kind::LdImm64(Pseudo::Imm64 | Pseudo::MapIdx | Pseudo::MapIdxValue)
    )
}

/// The first instruction from `from` (before `end`) that reads `r`, when every instruction
/// before it only computes and writes none of `keep`, and no other path joins in up to and
/// including it (`joins`).
fn next_reader(
    prog: &Program,
    joins: &[bool],
    from: usize,
    end: usize,
    r: u8,
    keep: Regs,
) -> Option<usize> {
    for (t, &join) in joins.iter().enumerate().take(end).skip(from) {
        if join {
            return None;
        }
        if reads(prog, t) & bit(r) != 0 {
            return Some(t);
        }
        if !computes_only(prog.insns[t].kind()) || writes(prog, t) & keep != 0 {
            return None;
        }
    }
    None
}

/// Every triple of the program, by the code alone.
pub(crate) fn triples(prog: &Program, pcs: &[usize], idx_of_pc: &[Option<usize>]) -> Vec<Triple> {
    let n = prog.insns.len();
    let live = live_in(prog, pcs, idx_of_pc);
    // Where another path can come in: function starts and a jump's successors.
    let mut joins = vec![false; n];
    let bounds = func_bounds(prog);
    for &f in &bounds {
        if f.0 < n {
            joins[f.0] = true;
        }
        for i in f.0..f.1 {
            if matches!(
                prog.insns[i].kind(),
                Kind::Ja | Kind::Gotol | Kind::Jmp(..) | Kind::MayGoto
            ) {
                for t in successors(prog, pcs, idx_of_pc, i, f) {
                    joins[t] = true;
                }
            }
        }
    }
    let mut out = Vec::new();
    for &(a, b) in &bounds {
        for i in a..b {
            if let Some(t) = triple_at(prog, &joins, &live, i, b) {
                out.push(t);
            }
        }
    }
    out
}

/// The triple whose load is instruction `i` (of a function ending before `end`), if any.
fn triple_at(
    prog: &Program,
    joins: &[bool],
    live: &[Regs],
    i: usize,
    end: usize,
) -> Option<Triple> {
    let load = prog.insns[i];
    let Kind::Ldx(size @ (Size::W | Size::DW), _) = load.kind() else {
        return None;
    };
    let (x, p) = (load.dst, load.src);
    if x == p {
        return None;
    }
    // The add is the first reader of the loaded value; nothing before it writes the value
    // or the pointer. Nothing between the load and the add reads the loaded value, so
    // nothing computed there (an operand of the add included) depends on it.
    let k = next_reader(prog, joins, i + 1, end, x, bit(x) | bit(p))?;
    let add = prog.insns[k];
    // A 32-bit add leaves the upper half 0: only right for a 32-bit counter.
    let fits = |w: Width| w == Width::W64 || size == Size::W;
    let narrow = |c: u64| if size == Size::W { c & 0xffff_ffff } else { c };
    let (sum, addend) = match add.kind() {
        Kind::Alu(op @ (AluOp::Add | AluOp::Sub), w, Src::K) if add.dst == x && fits(w) => {
            let imm = match w {
                Width::W64 => add.imm as u64,
                Width::W32 => u64::from(add.imm as u32),
            };
            let c = if op == AluOp::Sub {
                imm.wrapping_neg()
            } else {
                imm
            };
            (x, Addend::Const(narrow(c)))
        }
        Kind::Alu(AluOp::Add, w, Src::X) if fits(w) && add.dst != add.src => {
            if add.dst == x {
                (x, Addend::Reg(add.src))
            } else {
                // `rZ += rX`: the sum lands in the operand's register.
                (add.dst, Addend::Reg(add.dst))
            }
        }
        _ => return None,
    };
    // The store is the first reader of the sum; nothing before it writes the sum, the
    // pointer or the addend's register (the backend reads the addend there).
    let operand = match addend {
        Addend::Reg(z) => bit(z),
        Addend::Const(_) => 0,
    };
    let j = next_reader(prog, joins, k + 1, end, sum, bit(sum) | bit(p) | operand)?;
    let store = prog.insns[j];
    let same_bytes = store.kind() == Kind::Stx(size) && store.dst == p && store.off == load.off;
    if !same_bytes || store.src != sum || sum == p {
        return None;
    }
    // Neither value is read again, on any path: the loaded value after the add (when the
    // sum went elsewhere), the sum after the store.
    let live_after = |t: usize| live.get(t + 1).copied().filter(|_| t + 1 < end);
    if sum != x && live_after(k)? & bit(x) != 0 {
        return None;
    }
    if live_after(j)? & bit(sum) != 0 {
        return None;
    }
    Some(Triple {
        load: i,
        add: k,
        store: j,
        size,
        addend,
    })
}

#[cfg(test)]
mod tests {
    use crate::{verify, Entry, Facts};
    use crate::{Addend, PlainAdd};

    /// A program that takes a number the verifier does not know into r6, looks up slot 0
    /// of array `m` (16-byte values) into r0 and runs `body` when it is there (array `n`,
    /// the ring `r` and the per-thread array `t` are for the bodies to use).
    fn lookup(body: &str) -> String {
        format!(
            ".map m array 4 16 1\n.map n array 4 16 1\n.map r ringbuf 0 0 4096\n\
             .map t perthread_array 4 8 1\ncall 5\nr6 = r0\nr1 = 0\n*(u32 *)(r10 - 4) = r1\n\
             r2 = r10\nr2 += -4\nr1 = map_idx(0) ll\ncall 1\nif r0 == 0 goto out\n{body}out:\n\
             r0 = 0\nexit\n"
        )
    }

    fn facts(text: &str) -> Facts {
        let obj = bpf2ptx_compiler::front::load_bytes("c.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        verify(&obj, 0, &Entry::probe()).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
    }

    /// The addend of the program's only fused store, or None when nothing is fused (then no
    /// instruction may carry the fact).
    fn fused(text: &str) -> Option<(Addend, Option<u32>)> {
        let f = facts(text);
        let stores: Vec<_> = f
            .plain_add
            .iter()
            .filter_map(|p| match p {
                Some(PlainAdd::Store { addend, map }) => Some((*addend, *map)),
                _ => None,
            })
            .collect();
        let marked = f.plain_add.iter().filter(|p| p.is_some()).count();
        assert!(stores.len() <= 1, "{text}");
        assert_eq!(marked, 3 * stores.len(), "load, add and store: {text}");
        stores.first().copied()
    }

    #[test]
    fn counters_as_users_write_them_are_fused() {
        let cases: &[(&str, &str, Addend)] = &[
            (
                "*v += 1",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\n",
                Addend::Const(1),
            ),
            (
                "*v = *v + x, x from elsewhere",
                "r1 = *(u64 *)(r0 + 8)\nr1 += r6\n*(u64 *)(r0 + 8) = r1\n",
                Addend::Reg(6),
            ),
            (
                "the sum in the operand's register",
                "r1 = *(u64 *)(r0 + 0)\nr6 += r1\n*(u64 *)(r0 + 0) = r6\n",
                Addend::Reg(6),
            ),
            (
                "*v -= 3 as clang writes it (32-bit)",
                "r1 = *(u32 *)(r0 + 4)\nw1 += -3\n*(u32 *)(r0 + 4) = r1\n",
                Addend::Const(0xffff_fffd),
            ),
            (
                "*v -= 3 as a subtraction",
                "r1 = *(u64 *)(r0 + 0)\nr1 -= 3\n*(u64 *)(r0 + 0) = r1\n",
                Addend::Const(3u64.wrapping_neg()),
            ),
            (
                "a 32-bit counter with a 64-bit add",
                "r1 = *(u32 *)(r0 + 0)\nr1 += r6\n*(u32 *)(r0 + 0) = r1\n",
                Addend::Reg(6),
            ),
            (
                "unrelated arithmetic in between, the operand computed there",
                "r1 = *(u64 *)(r0 + 0)\nr2 = r6\nr2 *= 3\nr1 += r2\nr3 = 1\n*(u64 *)(r0 + 0) = r1\n",
                Addend::Reg(2),
            ),
            (
                "a call after the store that takes none of the registers",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\ncall 509\n",
                Addend::Const(1),
            ),
            (
                "an aligned offset the code does not know",
                "r3 = r6\nr3 &= 8\nr0 += r3\nr1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\n",
                Addend::Const(1),
            ),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|(what, body, want)| {
                let got = fused(&lookup(body));
                (got != Some((*want, Some(0)))).then(|| format!("{what}: {got:?}\n{body}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn global_data_counters_are_fused() {
        let text = ".map .bss array 4 8 1\nr2 = map_idx_value(0, 0) ll\nr3 = *(u64 *)(r2 + 0)\n\
                    r3 += 1\n*(u64 *)(r2 + 0) = r3\nr0 = 0\nexit\n";
        assert_eq!(fused(text), Some((Addend::Const(1), Some(0))));
    }

    #[test]
    fn the_rewrite_does_not_apply_where_it_would_change_the_program() {
        let cases: &[(&str, &str)] = &[
            (
                "the loaded value is used elsewhere (x = *v; *v = x + 1; return x)",
                "r7 = *(u64 *)(r0 + 0)\nr1 = r7\nr1 += 1\n*(u64 *)(r0 + 0) = r1\nr0 = r7\nexit\n",
            ),
            (
                "the loaded value is read after the add",
                "r1 = *(u64 *)(r0 + 0)\nr6 += r1\n*(u64 *)(r0 + 0) = r6\nr0 = r1\nexit\n",
            ),
            (
                "the sum is read after the store",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\nr0 = r1\nexit\n",
            ),
            (
                "the sum is a helper's argument after the store",
                "r2 = *(u64 *)(r0 + 0)\nr2 += 1\n*(u64 *)(r0 + 0) = r2\nr1 = map_idx(2) ll\n\
                 call 134\n",
            ),
            (
                "the sum is read between the add and the store",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\nr2 = r1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "another offset",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 8) = r1\n",
            ),
            (
                "another pointer register",
                "r7 = r0\nr1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r7 + 0) = r1\n",
            ),
            (
                "the pointer moves in between",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\nr0 += 8\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "a store of another size",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u32 *)(r0 + 0) = r1\n",
            ),
            (
                "a store of a value not derived from the load",
                "r1 = *(u64 *)(r0 + 0)\nr2 = 5\n*(u64 *)(r0 + 0) = r2\n",
            ),
            (
                "an addend that depends on the loaded value",
                "r1 = *(u64 *)(r0 + 0)\nr2 = r1\nr2 <<= 1\nr1 += r2\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "twice the loaded value",
                "r1 = *(u64 *)(r0 + 0)\nr1 += r1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "the addend's register changes before the store",
                "r1 = *(u64 *)(r0 + 0)\nr1 += r6\nr6 = 0\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "a helper call in between",
                "r7 = r0\nr8 = *(u64 *)(r7 + 0)\nr8 += 1\ncall 5\n*(u64 *)(r7 + 0) = r8\n",
            ),
            (
                "a store to other memory in between",
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 8) = r6\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "a branch in between",
                "r1 = *(u64 *)(r0 + 0)\nif r6 > 3 goto +1\nr1 += 1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "another path enters between the load and the add",
                "r1 = 5\nif r6 > 3 goto +1\nr1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            ("a multiplication", "r1 = *(u64 *)(r0 + 0)\nr1 *= 3\n*(u64 *)(r0 + 0) = r1\n"),
            ("an or", "r1 = *(u64 *)(r0 + 0)\nr1 |= 1\n*(u64 *)(r0 + 0) = r1\n"),
            (
                "a subtraction of a register",
                "r1 = *(u64 *)(r0 + 0)\nr1 -= r6\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "a 32-bit add on a 64-bit counter",
                "r1 = *(u64 *)(r0 + 0)\nw1 += 1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "a 16-bit counter (BPF has no 16-bit atomic add)",
                "r1 = *(u16 *)(r0 + 0)\nr1 += 1\n*(u16 *)(r0 + 0) = r1\n",
            ),
            (
                "an unaligned counter",
                "r1 = *(u64 *)(r0 + 4)\nr1 += 1\n*(u64 *)(r0 + 4) = r1\n",
            ),
            (
                "an offset not known to be aligned",
                "r3 = r6\nr3 &= 4\nr0 += r3\nr1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "the stack (a frame is the thread's own)",
                "r1 = 0\n*(u64 *)(r10 - 16) = r1\nr1 = *(u64 *)(r10 - 16)\nr1 += 1\n\
                 *(u64 *)(r10 - 16) = r1\n",
            ),
            (
                "a per-thread array's value (the thread's own slot)",
                "r7 = r0\nr1 = 0\n*(u32 *)(r10 - 4) = r1\nr2 = r10\nr2 += -4\n\
                 r1 = map_idx(3) ll\ncall 1\nif r0 == 0 goto +3\nr1 = *(u64 *)(r0 + 0)\n\
                 r1 += 1\n*(u64 *)(r0 + 0) = r1\n",
            ),
            (
                "a map value on one path, the stack on the other",
                "r1 = 0\n*(u64 *)(r10 - 16) = r1\nr7 = r0\nif r6 > 3 goto +2\nr7 = r10\n\
                 r7 += -16\nr1 = *(u64 *)(r7 + 0)\nr1 += 1\n*(u64 *)(r7 + 0) = r1\n",
            ),
        ];
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|(what, body)| {
                let got = fused(&lookup(body));
                got.is_some().then(|| format!("{what}: {got:?}\n{body}"))
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// Paths that agree on everything but the map: still one atomic add (every result is
    /// still one the racy program can give), but no map to specialise for.
    #[test]
    fn a_counter_in_one_of_two_maps_is_fused_without_a_map() {
        let text = ".map a array 4 8 1\n.map b array 4 8 1\ncall 5\nr2 = map_idx_value(0, 0) ll\n\
                    if r0 > 3 goto +2\nr2 = map_idx_value(1, 0) ll\nr3 = *(u64 *)(r2 + 0)\n\
                    r3 += 1\n*(u64 *)(r2 + 0) = r3\nr0 = 0\nexit\n";
        assert_eq!(fused(text), Some((Addend::Const(1), None)));
    }

    /// A 64-bit plain counter keeps an array shardable as an atomic add does; a 32-bit one
    /// and a counter that is not fused do not.
    #[test]
    fn fused_64_bit_counters_keep_a_map_shardable() {
        for (body, shardable) in [
            (
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\n",
                true,
            ),
            (
                "r1 = *(u32 *)(r0 + 0)\nr1 += 1\n*(u32 *)(r0 + 0) = r1\n",
                false,
            ),
            (
                "r1 = *(u64 *)(r0 + 0)\nr1 *= 3\n*(u64 *)(r0 + 0) = r1\n",
                false,
            ),
            (
                "r1 = *(u64 *)(r0 + 0)\nr1 += 1\n*(u64 *)(r0 + 0) = r1\nr1 = *(u64 *)(r0 + 8)\n",
                false,
            ),
        ] {
            let f = facts(&lookup(body));
            assert_eq!(f.map_only_adds[..2], [shardable, true], "{body}");
        }
    }
}
