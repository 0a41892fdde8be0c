//! The PTX backend: one `.func` per BPF function with exact BPF semantics.
//!
//! Shape of the output (the ABI is normative in `specs/abi.md`):
//!
//! ```text
//! .version / .target / .address_size 64
//! global data maps      .visible .global .align 8 .b8 bpf2ptx_map_<name>[size] = {...}
//! declarations          every function, so call order does not matter
//! programs              .visible .func (.param .b64 ret) <program>(.param .b64 a1 .. a5)
//! subprograms           .func (same signature) <program>__<function>
//! runtime helpers       unaligned loads/stores, only where used
//! entry kernels         .visible .entry bpf2ptx_entry_<program>(mem, mem_len, result)  (--entry)
//! ```
//!
//! Lowering rules that keep BPF semantics where PTX differs:
//! - BPF registers are `.b64` PTX registers; 32-bit operations compute on the low halves
//!   and zero-extend, as BPF does.
//! - shift counts are masked (`& 31` / `& 63`) because PTX clamps large shifts instead;
//! - division by zero yields 0 and modulo by zero leaves dst unchanged (both undefined in
//!   PTX, so the divisor is tested); signed division by -1 is a negation and signed modulo
//!   by -1 is 0 (PTX leaves `INT_MIN / -1` undefined);
//! - r10 points to the top of a per-function `.local` frame sized from what the function
//!   uses. Accesses at constant offsets from r10 become `ld.local`/`st.local` at constant
//!   addresses, which ptxas can keep in registers; every other access is generic and, as
//!   BPF allows unaligned accesses the GPU would fault on, tests alignment at run time and
//!   takes a byte-wise path when needed;
//! - atomics are generic `atom`/`red` at `.gpu` scope, or `.sys` when a map of the module
//!   lives in host-pinned memory ([`Options::host`]): the host then reads it while the
//!   kernel runs, and the device must see the consumer positions the host writes.

use super::{Addend, PlainAdd};
use crate::isa::insn::Insn;
use crate::isa::table::{AluOp, AtomicOp, CallKind, Cond, Kind, Order, Pseudo, Size, Src, Width};
use crate::program::{MapOrigin, Object, Program};
use bpf2ptx_runtime::{desc, MapKind};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use thiserror::Error;

/// GPU targets and the lowest PTX ISA version each needs. The instructions the backend
/// uses are all older than every target here, so the target alone decides the version.
pub const TARGETS: &[(&str, (u32, u32))] = &[
    ("sm_70", (6, 0)),
    ("sm_75", (6, 3)),
    ("sm_80", (7, 0)),
    ("sm_86", (7, 1)),
    ("sm_89", (7, 8)),
    ("sm_90", (7, 8)),
    ("sm_100", (8, 6)),
    ("sm_120", (8, 7)),
];

/// The frame size a function gets when its stack use cannot be bounded statically (a
/// pointer into the frame escapes or moves by a non-constant amount): BPF's whole stack.
pub const MAX_STACK: u32 = 512;

/// Pseudo address tag of BPF function addresses (`ld_imm64` with `src` 4): `callx` on a
/// value `FUNC_TAG + k` calls function `k` of the program.
pub const FUNC_TAG: u64 = 0x4250_4600_0000_0000;

/// Backend options.
#[derive(Clone, Debug)]
pub struct Options {
    /// `sm_XX`, one of [`TARGETS`].
    pub target: String,
    /// Also emit a standalone `.entry` kernel per program (for `bpf2ptx run`).
    pub entry: bool,
    /// What the verifier proved, one entry per program (empty: assume nothing, which is
    /// always correct but slower).
    pub hints: Vec<Hints>,
    /// Which threads of the `.entry` kernels run the probe, for programs whose section
    /// names no granularity of its own (`gpu/entry.warp/K` does, as for injection).
    pub granularity: Granularity,
    /// Per map: shard its values into per-SM replicas (arrays only; the verifier proved
    /// the programs only add to them). Missing entries mean "no".
    pub sharded: Vec<bool>,
    /// Per map: its storage is in host-pinned memory mapped into the GPU (`--map
    /// NAME=host`), which the host reads, and drains for rings, while the kernel runs.
    /// When any map the module declares is host-placed, the module's atomics on memory
    /// (the program's `atom`/`red` and the runtime's map and ring functions) use `.sys`
    /// scope instead of `.gpu`: per module rather than per map, because a map value
    /// pointer does not say which map it came from. Missing entries mean "no".
    pub host: Vec<bool>,
    /// Per map: keep one copy even where the programs only add to it (`--map
    /// NAME=unsharded`; read by the CLI's compile step, which decides `sharded`).
    pub unsharded: Vec<bool>,
}

/// The scope of the module's atomics: `.sys` when some map it declares is host-placed.
pub fn atomic_scope(obj: &Object, opts: &Options) -> bpf2ptx_runtime::Scope {
    let host = obj.maps.iter().enumerate().any(|(k, m)| {
        m.origin != MapOrigin::GlobalData && opts.host.get(k).copied().unwrap_or(false)
    });
    if host {
        bpf2ptx_runtime::Scope::Sys
    } else {
        bpf2ptx_runtime::Scope::Gpu
    }
}

/// Replicas of a sharded array: SM `k` updates replica `k % SHARDS`, so any GPU works (SMs
/// beyond it share replicas, still atomically); the host sums them.
pub const SHARDS: u64 = 256;
/// Largest storage a sharded array may take; above it the array stays unsharded.
const MAX_SHARDED_BYTES: u64 = 64 << 20;

/// Whether map `k` of `obj` is sharded under `opts`.
pub fn is_sharded(obj: &Object, opts: &Options, k: usize) -> bool {
    let m = &obj.maps[k];
    opts.sharded.get(k).copied().unwrap_or(false)
        && m.is(MapKind::is_array_like)
        && bpf2ptx_runtime::maps::replica_bytes(m.max_entries, m.value_size) * SHARDS
            <= MAX_SHARDED_BYTES
}

impl Default for Options {
    fn default() -> Self {
        Options {
            target: "sm_70".into(),
            entry: false,
            hints: Vec::new(),
            granularity: Granularity::Thread,
            sharded: Vec::new(),
            host: Vec::new(),
            unsharded: Vec::new(),
        }
    }
}

/// Per-instruction facts from the verifier that let the backend drop run-time checks and
/// use specific state spaces. Each vector is indexed by instruction; a missing entry means
/// "not proven".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hints {
    /// The access touches only global memory (map values, the test input, ringbuf
    /// records): `ld.global`/`st.global`/`atom.global` instead of generic accesses.
    pub global: Vec<bool>,
    /// The regions an access may touch (the verifier's `Facts::regions`: bit 0 stack,
    /// 1 context, 2 test memory, 3 map values, 4 ringbuf records).
    pub regions: Vec<u8>,
    /// The access's address is a multiple of its size on every path: no run-time
    /// alignment test and no byte-wise fallback.
    pub aligned: Vec<bool>,
    /// The division or modulo's register divisor may be zero (only those get a zero test).
    pub divisor_may_be_zero: Vec<bool>,
    /// An atomic add without fetch whose operand is this constant on every path: the
    /// lanes of a warp that add to one address let one of them add the group's total
    /// (what ptxas does for a CUDA `atomicAdd` it can see through), so thousands of
    /// warps hitting one counter cost one atomic per warp instead of 32.
    pub add_const: Vec<Option<u64>>,
    /// A helper call whose map argument is this map on every path: an array lookup is
    /// then inlined with the map's constants (no runtime call, no dispatch on the type).
    pub call_map: Vec<Option<u32>>,
    /// A load from the context at this constant offset on every path: in a body inlined
    /// at an attach site ([`inline_body`]) it reads the site's context registers.
    pub ctx_offset: Vec<Option<i64>>,
    /// An atomic on the values of this map on every path.
    pub atomic_map: Vec<Option<u32>>,
    /// The constant an ALU operation or load leaves in its destination on every path: a
    /// `mov` instead (with an attach site's constant context fields, whole computations
    /// such as a histogram key fold away).
    pub const_value: Vec<Option<u64>>,
    /// A conditional jump that always goes one way: an unconditional branch, or nothing.
    pub branch_always: Vec<Option<bool>>,
    /// Some path reaches the instruction; unreached ones are not emitted (their other
    /// facts are empty, so lowering them would only add code, e.g. runtime calls).
    pub reached: Vec<bool>,
    /// An array lookup whose key is below `max_entries` on every path: with the map in
    /// the module's storage it cannot return NULL, so the null test after it goes too.
    pub lookup_in_range: Vec<Option<bool>>,
    /// A helper call whose memory argument's size is this constant on every path: a
    /// `ringbuf_output` of a known ring is then inlined with straight-line copies.
    pub call_size: Vec<Option<u64>>,
    /// A counter update written as plain code (`*v += x`) that may run as one atomic add
    /// without fetch (the verifier's `Facts::plain_add`): its load and add emit nothing,
    /// its store is the `red.add`, warp-aggregated like an atomic add of a constant. Run
    /// by many threads the load-add-store would lose almost every update.
    pub plain_add: Vec<Option<PlainAdd>>,
}

impl Hints {
    fn get(v: &[bool], i: usize) -> Option<bool> {
        v.get(i).copied()
    }
}

/// Why a program cannot be lowered.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum Error {
    /// The target is not in [`TARGETS`].
    #[error(
        "unknown target `{0}` (known: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)"
    )]
    UnknownTarget(String),
    /// A helper the device runtime does not provide.
    #[error("program {program}: insn {pc}: `{insn}`: helper {id} is not available on the GPU")]
    UnknownHelper {
        /// Program name.
        program: String,
        /// Slot index.
        pc: usize,
        /// The instruction.
        insn: String,
        /// Helper id.
        id: i64,
    },
    /// An instruction that has no GPU meaning (yet).
    #[error("program {program}: insn {pc}: `{insn}`: {why}")]
    Unsupported {
        /// Program name.
        program: String,
        /// Slot index.
        pc: usize,
        /// The instruction.
        insn: String,
        /// Why.
        why: &'static str,
    },
    /// Two names of the object, or a name and the device runtime, give one PTX symbol
    /// (specs/abi.md, "Programs and functions").
    #[error("PTX symbol `{symbol}` is both {first} and {second}")]
    SymbolClash {
        /// The symbol.
        symbol: String,
        /// What has it first (`program \`a\``, `map \`m\``, `the device runtime`, ...).
        first: String,
        /// What has it too.
        second: String,
    },
}

/// Helper ids the backend lowers inline: special registers and fences.
const INLINE_HELPERS: &[i64] = &[
    5, 8, 14, 502, 503, 504, 505, 506, 507, 508, 509, 510, 511, 600, 601, 602,
];

/// Helper ids lowered as calls into the device runtime's map functions, with their PTX
/// names and argument counts.
const MAP_HELPERS: &[(i64, &str, u8)] = &[
    (1, "bpf2ptx_map_lookup_elem", 2),
    (2, "bpf2ptx_map_update_elem", 4),
    (3, "bpf2ptx_map_delete_elem", 2),
];

/// Helper ids lowered as calls into the device runtime's ring functions, with their PTX
/// names and the BPF registers passed, in order.
const RING_HELPERS: &[(i64, &str, &[&str])] = &[
    (130, "bpf2ptx_ringbuf_output", &["%r1", "%r2", "%r3", "%r4"]),
    (131, "bpf2ptx_ringbuf_reserve", &["%r1", "%r2", "%r3"]),
    (132, "bpf2ptx_ringbuf_submit", &["%r1", "%r2"]),
    (133, "bpf2ptx_ringbuf_discard", &["%r1", "%r2"]),
    (134, "bpf2ptx_ringbuf_query", &["%r1", "%r2"]),
    // perf_event_output(ctx, map, flags, data, size): the map's GPU ring gets the record;
    // its flags (a CPU index) have no GPU meaning.
    (25, "bpf2ptx_ringbuf_output", &["%r2", "%r4", "%r5", "0"]),
];

/// Map types the device runtime implements: arrays ([`MapKind::is_array_like`]),
/// per-thread and per-warp arrays ([`MapKind::is_per_unit`]), hash maps
/// ([`MapKind::is_hash`]) and rings ([`MapKind::is_ring`]). Storage bytes the module
/// reserves for one, or `None` when the host sizes it from the launch (per-thread and
/// per-warp arrays).
///
/// Definitions Linux refuses at map creation are refused here too: an array of any kind
/// with keys other than 4 bytes, and an array or hash map with no entries or a 0-byte
/// value or key.
fn map_storage(m: &crate::program::Map) -> Result<Option<u64>, &'static str> {
    let stride = bpf2ptx_runtime::maps::round8(u64::from(m.value_size));
    let entries = u64::from(m.max_entries);
    let kind = m.kind();
    let array = m.is(MapKind::is_array);
    if array && m.key_size != 4 {
        return Err("an array map needs 4-byte keys (Linux refuses others at map creation)");
    }
    let hash = m.is(MapKind::is_hash);
    if (array || hash) && (m.key_size == 0 || m.value_size == 0 || m.max_entries == 0) {
        return Err("a map with no entries, or 0-byte keys or values (Linux refuses it)");
    }
    match kind {
        Some(k) if k.is_array_like() => Ok(Some(stride * entries)),
        Some(k) if k.is_per_unit() => Ok(None),
        _ if hash => Ok(Some(bpf2ptx_runtime::maps::hash_storage_size(
            m.map_type,
            m.key_size,
            m.value_size,
            m.max_entries,
        ))),
        Some(k) if k.is_ring() => Ok(Some(ring_bytes(m))),
        _ => Err("this map type has no GPU implementation"),
    }
}

/// Bytes of a ring: a ringbuf's `max_entries` (its size, rounded up to a power of two of at
/// least 4096); a perf event array becomes one GPU ring of 4096 bytes per entry (at least
/// 64 KiB), since the GPU has no per-CPU buffers.
fn ring_bytes(m: &crate::program::Map) -> u64 {
    match m.kind() {
        Some(MapKind::PerfEventArray) => (u64::from(m.max_entries.max(1)) * 4096)
            .max(65536)
            .next_power_of_two(),
        _ => u64::from(m.max_entries).max(4096).next_power_of_two(),
    }
}

/// Largest record size (bytes of data) whose `ringbuf_output` is inlined: the copy is
/// straight-line code, one load and store per 8 bytes.
const INLINE_RECORD_MAX: u64 = 256;

/// [`FuncWriter::inline_ring_output`]'s code, `@NAME@` filled in: `DESC` the ring's
/// descriptor, `SIZE` the record's data bytes, `T` its bytes in the ring, `MAGIC`
/// ceil(2^32 / T), `RS` the scope of the record side, `COPY` the stores of the data from
/// the frame to `[%rbd6+8..]`, and four labels; the descriptor's words are `@DESC_*@`
/// (`bpf2ptx_runtime::fill_abi`).
/// Registers: %rbd0 data, %rbd1 aux, %rbd2 counters, %rbd3 aux - 1, %rbd4 consumer + aux;
/// %rb0 active mask, %rb2 rank, %rb3 lanes, %rb4 leader lane; %rb5 records taken and
/// %rbd5 their first position, broadcast by the leader.
///
/// In order: an unbound or malformed ring gives -EINVAL (the runtime's test), a size
/// above aux / 2 a counted drop; the leader reads the consumer (acquire: a reader zeroed
/// what it consumed before moving it) and the bound (word 7: the producer plus the claims
/// in flight), and `k0 = min(lanes, room / T)` with `room = consumer + aux - bound`; when
/// `k0 = 0` it claims nothing (a full ring costs two loads); else it claims `k0` records
/// on the bound with one relaxed `atom.add`, keeps `k = min(k0, (consumer + aux - old) /
/// T)` of them (`old`, what the add returned, counts every byte taken or claimed before,
/// once), gives back the `k0 - k` it does not keep, takes `k` records with one acq_rel
/// `atom.add` on the producer and counts the other lanes as drops: the runtime's protocol
/// (`bpf2ptx_runtime::ringbuf`, module doc, "Reserving never blocks") for a group whose
/// lanes all write `T` bytes. Lanes of rank below `k` write their record at `p + rank *
/// T` and publish it with one release store of the header `{SIZE, 0}`; a record that
/// would cross the ring's end becomes two DISCARD padding records and is reserved again
/// through the runtime.
const INLINE_RING_OUTPUT: &str = "\t{
	.reg .b32 %rb<8>;
	.reg .b64 %rbd<11>;
	.reg .pred %rbp<3>;
	ld.global.nc.u64 %rbd0, [@DESC@+@DESC_DATA@];
	ld.global.nc.u64 %rbd1, [@DESC@+@DESC_AUX@];
	ld.global.nc.u64 %rbd2, [@DESC@+@DESC_AUX2@];
	cvta.to.global.u64 %rbd0, %rbd0;
	cvta.to.global.u64 %rbd2, %rbd2;
	setp.eq.u64 %rbp0, %rbd0, 0;
	setp.eq.u64 %rbp1, %rbd2, 0;
	or.pred %rbp0, %rbp0, %rbp1;
	setp.lt.u64 %rbp1, %rbd1, 4096;
	or.pred %rbp0, %rbp0, %rbp1;
	setp.gt.u64 %rbp1, %rbd1, 0x100000000;
	or.pred %rbp0, %rbp0, %rbp1;
	add.s64 %rbd3, %rbd1, -1;
	and.b64 %rbd4, %rbd3, %rbd1;
	setp.ne.u64 %rbp1, %rbd4, 0;
	or.pred %rbp0, %rbp0, %rbp1;
	mov.u64 %r0, @EINVAL@;
	@%rbp0 bra @DONE@;
	mov.u64 %r0, @EAGAIN@;
	shr.u64 %rbd4, %rbd1, 1;
	setp.lt.u64 %rbp0, %rbd4, @SIZE@;
	@%rbp0 bra @DROP@;
	activemask.b32 %rb0;
	mov.u32 %rb1, %lanemask_lt;
	and.b32 %rb1, %rb1, %rb0;
	popc.b32 %rb2, %rb1;
	popc.b32 %rb3, %rb0;
	brev.b32 %rb4, %rb0;
	clz.b32 %rb4, %rb4;
	setp.eq.u32 %rbp1, %rb1, 0;
	mov.u32 %rb5, 0;
	mov.u64 %rbd5, 0;
	@!%rbp1 bra @WRITE@_b;
	ld.acquire.gpu.global.u64 %rbd8, [%rbd2+8];
	ld.relaxed.gpu.global.u64 %rbd9, [@DESC@+@DESC_BOUND@];
	add.u64 %rbd4, %rbd8, %rbd1;
	sub.u64 %rbd10, %rbd4, %rbd9;
	setp.le.u64 %rbp0, %rbd9, %rbd4;
	setp.le.u64 %rbp2, %rbd8, %rbd9;
	and.pred %rbp0, %rbp0, %rbp2;
	mul.wide.u32 %rbd6, %rb3, @T@;
	min.u64 %rbd10, %rbd10, %rbd6;
	cvt.u32.u64 %rb5, %rbd10;
	mul.hi.u32 %rb5, %rb5, @MAGIC@;
	selp.u32 %rb5, %rb5, 0, %rbp0;
	setp.eq.u32 %rbp0, %rb5, 0;
	@%rbp0 bra @WRITE@_d;
	mul.wide.u32 %rbd6, %rb5, @T@;
	atom.relaxed.gpu.global.add.u64 %rbd7, [@DESC@+@DESC_BOUND@], %rbd6;
	sub.u64 %rbd10, %rbd4, %rbd7;
	setp.le.u64 %rbp0, %rbd7, %rbd4;
	setp.le.u64 %rbp2, %rbd8, %rbd7;
	and.pred %rbp0, %rbp0, %rbp2;
	min.u64 %rbd10, %rbd10, %rbd6;
	cvt.u32.u64 %rb6, %rbd10;
	mul.hi.u32 %rb6, %rb6, @MAGIC@;
	selp.u32 %rb6, %rb6, 0, %rbp0;
	sub.u32 %rb7, %rb6, %rb5;
	setp.ne.u32 %rbp0, %rb7, 0;
	mul.wide.s32 %rbd10, %rb7, @T@;
	@%rbp0 red.relaxed.gpu.global.add.u64 [@DESC@+@DESC_BOUND@], %rbd10;
	mov.u32 %rb5, %rb6;
	setp.ne.u32 %rbp0, %rb5, 0;
	mul.wide.u32 %rbd10, %rb5, @T@;
	@%rbp0 atom.acq_rel.gpu.global.add.u64 %rbd5, [%rbd2], %rbd10;
@WRITE@_d:
	sub.u32 %rb6, %rb3, %rb5;
	setp.ne.u32 %rbp0, %rb6, 0;
	cvt.u64.u32 %rbd6, %rb6;
	@%rbp0 red.relaxed.gpu.global.add.u64 [@DESC@+@DESC_DROPS@], %rbd6;
@WRITE@_b:
	shfl.sync.idx.b32 %rb5, %rb5, %rb4, 0x1f, %rb0;
	mov.b64 {%rb6, %rb7}, %rbd5;
	shfl.sync.idx.b32 %rb6, %rb6, %rb4, 0x1f, %rb0;
	shfl.sync.idx.b32 %rb7, %rb7, %rb4, 0x1f, %rb0;
	mov.b64 %rbd5, {%rb6, %rb7};
	setp.ge.u32 %rbp0, %rb2, %rb5;
	@%rbp0 bra @DONE@;
	mul.wide.u32 %rbd6, %rb2, @T@;
	add.u64 %rbd6, %rbd6, %rbd5;
	and.b64 %rbd6, %rbd6, %rbd3;
	and.b64 %rbd6, %rbd6, -8;
	add.u64 %rbd7, %rbd6, @T@;
	setp.gt.u64 %rbp0, %rbd7, %rbd1;
	add.u64 %rbd6, %rbd0, %rbd6;
	@%rbp0 bra @PAD@;
@WRITE@:
@COPY@	st.release.@RS@.global.b64 [%rbd6], @SIZE@;
	mov.u64 %r0, 0;
	bra.uni @DONE@;
@PAD@:
	sub.u64 %rbd8, %rbd1, %rbd6;
	add.u64 %rbd8, %rbd8, %rbd0;
	add.u64 %rbd9, %rbd8, -8;
	or.b64 %rbd9, %rbd9, 0x4000000000000000;
	st.relaxed.@RS@.global.b64 [%rbd6], %rbd9;
	sub.u64 %rbd9, @T@, %rbd8;
	add.u64 %rbd9, %rbd9, -8;
	or.b64 %rbd9, %rbd9, 0x4000000000000000;
	st.relaxed.@RS@.global.b64 [%rbd0], %rbd9;
	{
	.param .b64 bpf_ra;
	.param .b64 bpf_rs;
	.param .b64 bpf_rf;
	.param .b64 bpf_rr;
	mov.u64 %rbd9, @DESC@;
	cvta.global.u64 %rbd9, %rbd9;
	st.param.b64 [bpf_ra], %rbd9;
	st.param.b64 [bpf_rs], @SIZE@;
	st.param.b64 [bpf_rf], 0;
	call (bpf_rr), bpf2ptx_ringbuf_reserve, (bpf_ra, bpf_rs, bpf_rf);
	ld.param.b64 %rbd6, [bpf_rr];
	}
	setp.eq.u64 %rbp0, %rbd6, 0;
	@%rbp0 bra @DONE@;
	add.u64 %rbd6, %rbd6, -8;
	bra.uni @WRITE@;
@DROP@:
	red.relaxed.gpu.global.add.u64 [@DESC@+@DESC_DROPS@], 1;
@DONE@:
	}
";

/// Bytes of the module's `trace_printk`/`puts` ring.
const PRINTK_RING: u64 = 65536;
/// The descriptor symbol of the `trace_printk`/`puts` ring.
pub const PRINTK_DESC: &str = "bpf2ptx_printk";
/// Bytes of one printk record: kind (0 trace_printk, 1 puts), format or string address,
/// format size, three arguments.
pub const PRINTK_RECORD: u64 = 48;

/// The storage symbol of a runtime map whose size the compiler knows.
pub fn map_data_symbol(name: &str) -> String {
    format!("bpf2ptx_mapdata_{}", map_part(name))
}

/// The symbol of a ring's `[producer, consumer]` counters.
pub fn map_counter_symbol(name: &str) -> String {
    format!("bpf2ptx_mapctr_{}", map_part(name))
}

/// The symbol of a hash map's counts block (its count of keys and its counters of
/// refused, timed-out and evicted operations).
pub fn map_counts_symbol(name: &str) -> String {
    format!("bpf2ptx_mapcnt_{}", map_part(name))
}

/// The descriptor symbol of a runtime map.
pub fn map_desc_symbol(name: &str) -> String {
    format!("bpf2ptx_map_{}", map_part(name))
}

/// Prefix of a `need` entry `{SPEC_NEED}{base}:{map index}`: hash function `base`
/// specialised for one map (`maps::specialized_function`).
const SPEC_NEED: &str = "spec:";

/// Prototype and definition of each specialised hash function the module's calls need.
fn specialised_functions(
    obj: &Object,
    need: &BTreeSet<String>,
    scope: bpf2ptx_runtime::Scope,
) -> Vec<(String, String)> {
    need.iter()
        .filter_map(|n| n.strip_prefix(SPEC_NEED))
        .filter_map(|n| {
            let (base, m) = n.rsplit_once(':')?;
            let map = obj.maps.get(m.parse::<usize>().ok()?)?;
            let name = bpf2ptx_runtime::maps::specialized_name(base, &map_desc_symbol(&map.name));
            let geometry = bpf2ptx_runtime::maps::Geometry {
                map_type: map.map_type,
                flags: map.flags,
                key_size: map.key_size,
                value_size: map.value_size,
                max_entries: map.max_entries,
            };
            let body = bpf2ptx_runtime::maps::specialized_function(base, &name, geometry, scope)?;
            let proto = body.lines().next()?.to_string() + ";\n";
            Some((proto, body))
        })
        .collect()
}

/// Lowers every program of an object to one PTX module.
pub fn write_string(obj: &Object, opts: &Options) -> Result<String, Error> {
    let version = TARGETS
        .iter()
        .find(|(t, _)| *t == opts.target)
        .map(|(_, v)| *v)
        .ok_or_else(|| Error::UnknownTarget(opts.target.clone()))?;
    check_symbols(obj, opts)?;
    let mut bodies = String::new();
    let mut decls = String::new();
    let mut need = BTreeSet::new();
    let mut needs_62 = false;
    let scope = atomic_scope(obj, opts);
    for prog in &obj.programs {
        for k in 0..prog.funcs.len().max(1) {
            let pi = obj
                .programs
                .iter()
                .position(|p| std::ptr::eq(p, prog))
                .unwrap_or(0);
            let mut f = FuncWriter::configured(obj, opts, pi, k);
            let head = func_head(prog, k, f.lanes);
            let _ = writeln!(decls, "{head};");
            f.lower()?;
            need.extend(f.need.iter().cloned());
            needs_62 |= f.ptx_62;
            let _ = writeln!(bodies, "{head}\n{{\n{}}}\n", f.out);
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//\n// Generated by bpf2ptx {} from {}\n//\n",
        env!("CARGO_PKG_VERSION"),
        obj.file
    );
    // The lowest version the target and the instructions used allow.
    let warp_entry = opts.entry
        && obj
            .programs
            .iter()
            .any(|p| entry_granularity(p, opts) == Granularity::Warp);
    let version = if needs_62 || warp_entry {
        version.max((6, 2))
    } else {
        version
    };
    // The ring functions aggregate reservations per warp (activemask, match.any); the map
    // functions back off with nanosleep on a busy hash slot.
    let version = if need.contains("ringbuf") {
        version.max(bpf2ptx_runtime::ringbuf::MIN_PTX)
    } else {
        version
    };
    let version = if need.contains("maps") {
        version.max(bpf2ptx_runtime::maps::MIN_PTX)
    } else {
        version
    };
    let _ = writeln!(
        out,
        ".version {}.{}\n.target {}\n.address_size 64\n",
        version.0, version.1, opts.target
    );
    for m in obj
        .maps
        .iter()
        .filter(|m| m.origin == MapOrigin::GlobalData)
    {
        let sym = map_symbol(&m.name);
        match &m.init {
            Some(bytes) if bytes.iter().any(|&b| b != 0) => {
                let list: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
                let _ = writeln!(
                    out,
                    ".visible .global .align 8 .b8 {sym}[{}] = {{{}}};",
                    m.value_size,
                    list.join(", ")
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    ".visible .global .align 8 .b8 {sym}[{}];",
                    m.value_size.max(1)
                );
            }
        }
    }
    for (k, m) in obj
        .maps
        .iter()
        .enumerate()
        .filter(|(_, m)| m.origin != MapOrigin::GlobalData)
    {
        let shards = if is_sharded(obj, opts, k) { SHARDS } else { 0 };
        // Only maps the runtime implements get a descriptor; a program that uses another
        // is rejected where it loads the map.
        let Ok(storage) = map_storage(m) else {
            continue;
        };
        let desc = map_desc_symbol(&m.name);
        let stride = u64::from(m.value_size).div_ceil(8) * 8;
        let w0 = u64::from(m.map_type) | (u64::from(m.flags) << 32);
        let w1 = u64::from(m.key_size) | (u64::from(m.value_size) << 32);
        let w2 = u64::from(m.max_entries) | (stride << 32);
        let aux = match m.kind() {
            Some(k) if k.is_array_like() => shards,
            Some(k) if k.is_hash() => bpf2ptx_runtime::maps::hash_slots(m.max_entries),
            Some(k) if k.is_ring() => ring_bytes(m),
            _ => 0,
        };
        let aux2 = if shards > 0 {
            bpf2ptx_runtime::maps::replica_bytes(m.max_entries, m.value_size).to_string()
        } else if m.is(MapKind::is_ring) {
            let counters = map_counter_symbol(&m.name);
            let _ = writeln!(out, ".visible .global .align 8 .u64 {counters}[2];");
            format!("generic({counters})")
        } else if m.is(MapKind::is_hash) {
            // The count and the sharded counters, on lines of their own, in device
            // memory whatever the placement (specs/abi.md, "Hash maps").
            let counts = map_counts_symbol(&m.name);
            let _ = writeln!(
                out,
                ".visible .global .align 128 .b8 {counts}[{}];",
                bpf2ptx_runtime::maps::COUNTS_BYTES
            );
            format!("generic({counts})")
        } else {
            "0".to_string()
        };
        let data = match storage {
            Some(bytes) => {
                let store = map_data_symbol(&m.name);
                // Sharded: line-aligned replicas of whole 128-byte lines.
                let (bytes, align) = if shards > 0 {
                    let r = bpf2ptx_runtime::maps::replica_bytes(m.max_entries, m.value_size);
                    (r * shards, 128)
                } else {
                    (bytes, 8)
                };
                let _ = writeln!(
                    out,
                    ".visible .global .align {align} .b8 {store}[{}];",
                    bytes.max(8)
                );
                format!("generic({store})")
            }
            None => "0".to_string(),
        };
        // The words in order (runtime desc): type and flags, sizes, entries and stride,
        // data, aux, aux2, drops, bound.
        const _: () = assert!(desc::WORDS == 8 && desc::word(desc::AUX2) == 5);
        let _ = writeln!(out, ".visible .global .align 8 .u64 {desc}[{}] = {{{w0}, {w1}, {w2}, {data}, {aux}, {aux2}, 0, 0}};", desc::WORDS);
    }
    if need.contains("printk") {
        let _ = writeln!(
            out,
            ".visible .global .align 8 .b8 bpf2ptx_printk_data[{PRINTK_RING}];"
        );
        let _ = writeln!(out, ".visible .global .align 8 .u64 bpf2ptx_printk_ctr[2];");
        // The printk ring is a GPU ringbuf: its descriptor's word 0 is that map type id.
        let gpu_ringbuf = MapKind::GpuRingbuf.id();
        let _ = writeln!(out, ".visible .global .align 8 .u64 {PRINTK_DESC}[8] = {{{gpu_ringbuf}, 0, 0, generic(bpf2ptx_printk_data), {PRINTK_RING}, generic(bpf2ptx_printk_ctr), 0, 0}};");
    }
    out.push('\n');
    out.push_str(&decls);
    for n in need.iter().filter(|n| n.starts_with("bpf2ptx_")) {
        let _ = writeln!(out, "{}", runtime_decl(n));
    }
    if need.contains("maps") {
        out.push_str(bpf2ptx_runtime::maps::declarations());
    }
    let specialised = specialised_functions(obj, &need, scope);
    for (proto, _) in &specialised {
        out.push_str(proto);
    }
    if need.contains("ringbuf") {
        out.push_str(bpf2ptx_runtime::ringbuf::declarations());
    }
    out.push('\n');
    out.push_str(&bodies);
    for n in need.iter().filter(|n| n.starts_with("bpf2ptx_")) {
        out.push_str(&runtime_body(n));
    }
    if need.contains("maps") || need.contains("ringbuf") {
        out.push_str(bpf2ptx_runtime::COPY_FUNCTION);
    }
    if need.contains("maps") {
        out.push_str(&bpf2ptx_runtime::maps::functions_at(scope));
    }
    for (_, body) in &specialised {
        out.push_str(body);
    }
    if need.contains("ringbuf") {
        out.push_str(&bpf2ptx_runtime::ringbuf::functions_at(scope));
    }
    if opts.entry {
        for (pi, prog) in obj.programs.iter().enumerate() {
            // The program's body inlined into its kernel: no call, no ABI parameters.
            let mut f = FuncWriter::configured(obj, opts, pi, 0);
            f.inline = true;
            f.lower()?;
            out.push_str(&entry_kernel(prog, entry_granularity(prog, opts), &f.out));
        }
    }
    Ok(out)
}

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

/// The stack layout of every function of a program, as [`write_string`] emits it.
pub fn frame_layouts(prog: &Program) -> Vec<FrameLayout> {
    let pcs = prog.pcs();
    (0..prog.funcs.len().max(1))
        .map(|k| {
            let frame = analyse_frame(prog, k, &pcs);
            FrameLayout {
                symbol: func_symbol(prog, k),
                bytes: frame.size,
                // Without the verifier's facts: no lookup is known to be inlined.
                in_registers: frame.size > 0
                    && !needs_frame_address(prog, k, &frame, &|_, _| false),
            }
        })
        .collect()
}

/// An immediate divisor as the unsigned value an unsigned division uses: the
/// sign-extended 64-bit value, or its low 32 bits for a 32-bit operation.
fn unsigned_divisor(k: i64, bits: &str) -> u64 {
    if bits == "32" {
        u64::from(k as u32)
    } else {
        k as u64
    }
}

/// The PTX name of a program's entry function (specs/abi.md, "Programs and functions"):
/// the name itself when it is a PTX identifier of its own that the module does not use
/// otherwise, else `bpf2ptx_p_` and the escaped name.
pub fn program_symbol(prog: &Program) -> String {
    program_name_symbol(&prog.name)
}

fn program_name_symbol(name: &str) -> String {
    let e = escape(name);
    if is_ptx_identifier(&e) && !e.starts_with(RESERVED_PREFIX) && !is_local_name(&e) {
        e
    } else {
        format!("{PROGRAM_PREFIX}{e}")
    }
}

/// The name of the `.entry` kernel emitted for a program with [`Options::entry`].
pub fn entry_symbol(prog: &Program) -> String {
    format!("bpf2ptx_entry_{}", escape(&prog.name))
}

/// The `.func` line of function `k` of `prog`: r1..r5 in, r0 out; the program itself is
/// `.visible` (the probe ABI), its subprograms are module-local and, when the program
/// passes the lanes word down ([`FuncWriter::lanes`]), take it as a sixth parameter.
fn func_head(prog: &Program, k: usize, lanes: bool) -> String {
    let vis = if k == 0 { ".visible " } else { "" };
    let extra = if lanes && k > 0 {
        ", .param .b32 bpf_lanes"
    } else {
        ""
    };
    format!(
        "{vis}.func (.param .b64 bpf_ret) {}(.param .b64 bpf_a1, .param .b64 bpf_a2, \
         .param .b64 bpf_a3, .param .b64 bpf_a4, .param .b64 bpf_a5{extra})",
        func_symbol(prog, k)
    )
}

fn func_symbol(prog: &Program, k: usize) -> String {
    if k == 0 {
        program_symbol(prog)
    } else {
        format!("{}__{}", program_symbol(prog), escape(&prog.funcs[k].name))
    }
}

/// The PTX symbol of a global-data map: its section name less the leading `.`, under
/// `bpf2ptx_map_` as other maps.
pub fn map_symbol(name: &str) -> String {
    map_desc_symbol(name.strip_prefix('.').unwrap_or(name))
}

/// The prefix of every symbol the backend and the device runtime define for themselves.
const RESERVED_PREFIX: &str = "bpf2ptx_";
/// The prefix of a program symbol whose name is not a PTX identifier of its own.
const PROGRAM_PREFIX: &str = "bpf2ptx_p_";

/// A BPF name as PTX identifier characters: `[A-Za-z0-9_]` stay, every other byte of the
/// name's UTF-8 (`$` included) becomes `$` and its two lower-case hex digits, so two
/// names never escape alike.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            o.push(char::from(b));
        } else {
            let _ = write!(o, "${b:02x}");
        }
    }
    o
}

/// PTX's identifiers: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`.
fn is_ptx_identifier(s: &str) -> bool {
    let ok = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    match s.as_bytes() {
        [c, rest @ ..] if c.is_ascii_alphabetic() => rest.iter().all(|&c| ok(c)),
        [b'_' | b'$' | b'%', rest @ ..] => !rest.is_empty() && rest.iter().all(|&c| ok(c)),
        _ => false,
    }
}

/// Names PTX predefines, and the parameter and local names the backend declares in a
/// function (ptxas crashes on a function named like its own parameter).
fn is_local_name(s: &str) -> bool {
    const NAMES: &[&str] = &[
        "WARP_SZ",
        "bpf_ret",
        "bpf_lanes",
        "bpf_stack",
        "bpf_hr",
        "bpf_pa",
        "bpf_pd",
        "bpf_pf",
        "bpf_pg",
        "bpf_pl",
        "bpf_pr",
        "bpf_ps",
        "bpf_ra",
        "bpf_rf",
        "bpf_rr",
        "bpf_rs",
        "bpf_rv",
        "bpf_ua",
        "bpf_uv",
    ];
    // bpf_a1..bpf_a5 and the call sites' bpf_h<k> and bpf_p<r>.
    NAMES.contains(&s)
        || ["bpf_a", "bpf_h", "bpf_p"].iter().any(|p| {
            s.strip_prefix(p)
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
        })
}

/// The part of a map's symbols after their kind's prefix: the escaped name, with its
/// first byte escaped too where `bpf2ptx_map_` and the plain escape would be one of the
/// device runtime's functions (a map named `lookup_elem`: `bpf2ptx_map_$6cookup_elem`).
fn map_part(name: &str) -> String {
    let e = escape(name);
    let first = name.bytes().next();
    if let Some(b) = first.filter(|_| runtime_symbols().contains(&format!("bpf2ptx_map_{e}"))) {
        format!("${b:02x}{}", escape(&name[1..]))
    } else {
        e
    }
}

/// Every `bpf2ptx_...` name the device runtime's text (any part, any scope) and the
/// backend's own module-level symbols use.
fn runtime_symbols() -> &'static BTreeSet<String> {
    static SET: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut texts: Vec<String> = vec![
            bpf2ptx_runtime::maps::declarations().to_string(),
            bpf2ptx_runtime::ringbuf::declarations().to_string(),
            bpf2ptx_runtime::COPY_FUNCTION.to_string(),
        ];
        for scope in [bpf2ptx_runtime::Scope::Gpu, bpf2ptx_runtime::Scope::Sys] {
            texts.push(bpf2ptx_runtime::maps::functions_at(scope));
            texts.push(bpf2ptx_runtime::ringbuf::functions_at(scope).into_owned());
        }
        let mut set: BTreeSet<String> = [PRINTK_DESC, "bpf2ptx_printk_data", "bpf2ptx_printk_ctr"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        set.extend(MAP_HELPERS.iter().map(|(_, n, _)| n.to_string()));
        set.extend(RING_HELPERS.iter().map(|(_, n, _)| n.to_string()));
        for t in &texts {
            let b = t.as_bytes();
            let mut i = 0;
            while let Some(k) = t[i..].find(RESERVED_PREFIX) {
                let at = i + k;
                let mut end = at + RESERVED_PREFIX.len();
                while end < b.len()
                    && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b'$')
                {
                    end += 1;
                }
                let starts = at == 0
                    || !(b[at - 1].is_ascii_alphanumeric()
                        || b[at - 1] == b'_'
                        || b[at - 1] == b'$');
                if starts {
                    set.insert(t[at..end].to_string());
                }
                i = end;
            }
        }
        set
    })
}

/// Whether `sym` is a runtime helper the backend emits per access size.
fn is_runtime_sized(sym: &str) -> bool {
    ["bpf2ptx_ldu", "bpf2ptx_stu"].iter().any(|p| {
        sym.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
    })
}

/// Every module-level symbol [`write_string`] defines for the object, with what it
/// stands for; a symbol given twice, or one the device runtime has, is a
/// [`Error::SymbolClash`].
fn check_symbols(obj: &Object, opts: &Options) -> Result<(), Error> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut add = |sym: String, what: String| -> Result<(), Error> {
        if runtime_symbols().contains(&sym) || is_runtime_sized(&sym) {
            return Err(Error::SymbolClash {
                symbol: sym,
                first: "the device runtime's".into(),
                second: what,
            });
        }
        if let Some(first) = seen.get(&sym) {
            return Err(Error::SymbolClash {
                symbol: sym,
                first: first.clone(),
                second: what,
            });
        }
        seen.insert(sym, what);
        Ok(())
    };
    for prog in &obj.programs {
        add(program_symbol(prog), format!("program `{}`", prog.name))?;
        for k in 1..prog.funcs.len() {
            add(
                func_symbol(prog, k),
                format!(
                    "function `{}` of program `{}`",
                    prog.funcs[k].name, prog.name
                ),
            )?;
        }
        if opts.entry {
            add(
                entry_symbol(prog),
                format!("the kernel of program `{}`", prog.name),
            )?;
        }
    }
    for m in &obj.maps {
        let what = |kind: &str| format!("{kind}map `{}`", m.name);
        if m.origin == MapOrigin::GlobalData {
            add(map_symbol(&m.name), what("global-data "))?;
            continue;
        }
        add(map_desc_symbol(&m.name), what("the descriptor of "))?;
        add(map_data_symbol(&m.name), what("the storage of "))?;
        add(map_counter_symbol(&m.name), what("the counters of "))?;
        add(map_counts_symbol(&m.name), what("the counts of "))?;
    }
    Ok(())
}

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

/// Whether `prog` may call `get_active_mask` (601): directly, or through `callx` with a
/// helper id in a register.
fn reads_active_mask(prog: &Program) -> bool {
    prog.insns.iter().any(|i| {
        i.kind() == Kind::Callx || (i.kind() == Kind::Call(CallKind::Helper) && i.imm == 601)
    })
}

/// Which threads of an `--entry` kernel run the program: the granularity its section names
/// (`gpu/entry.warp/K`, as for injection), else the options'.
fn entry_granularity(prog: &Program, opts: &Options) -> Granularity {
    crate::inject::attach::Attach::from_section(&prog.section)
        .and_then(|a| a.granularity)
        .unwrap_or(opts.granularity)
}

fn entry_kernel(prog: &Program, g: Granularity, body: &str) -> String {
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

/// Runtime helper functions the lowering calls: unaligned loads and stores.
fn runtime_decl(name: &str) -> String {
    if name.starts_with("bpf2ptx_ldu") {
        format!(".func (.param .b64 v) {name}(.param .b64 a);")
    } else {
        format!(".func {name}(.param .b64 a, .param .b64 v);")
    }
}

fn runtime_body(name: &str) -> String {
    // The access size is the name's trailing digits (`bpf2ptx_ldu4` → 4).
    let bytes: u32 = name
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|d| d.parse().ok())
        .expect("runtime helper names end in their size");
    let mut b = String::new();
    if name.starts_with("bpf2ptx_ldu") {
        let _ = writeln!(b, ".func (.param .b64 v) {name}(.param .b64 a)\n{{\n\t.reg .b64 %x<4>;\n\t.reg .b16 %h;\n\tld.param.u64 %x0, [a];\n\tmov.u64 %x1, 0;");
        for i in (0..bytes).rev() {
            let _ = writeln!(b, "\tld.u8 %h, [%x0+{i}];\n\tcvt.u64.u16 %x2, %h;\n\tshl.b64 %x1, %x1, 8;\n\tor.b64 %x1, %x1, %x2;");
        }
        let _ = writeln!(b, "\tst.param.b64 [v], %x1;\n\tret;\n}}\n");
    } else {
        let _ = writeln!(b, ".func {name}(.param .b64 a, .param .b64 v)\n{{\n\t.reg .b64 %x<4>;\n\t.reg .b16 %h;\n\tld.param.u64 %x0, [a];\n\tld.param.u64 %x1, [v];");
        for i in 0..bytes {
            let _ = writeln!(
                b,
                "\tcvt.u16.u64 %h, %x1;\n\tst.u8 [%x0+{i}], %h;\n\tshr.u64 %x1, %x1, 8;"
            );
        }
        let _ = writeln!(b, "\tret;\n}}\n");
    }
    b
}

/// What the frame analysis knows about a register: not a frame pointer, a frame pointer
/// at a known offset from r10, or a frame pointer at an unknown offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fp {
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
struct Frame {
    /// Register facts before each instruction (None: unreachable).
    before: Vec<Option<[Fp; 11]>>,
    /// Bytes of `.local` frame the function needs (a multiple of 8).
    size: u32,
}

/// Instruction index range `[a, b)` of function `k`.
fn func_range(prog: &Program, k: usize) -> (usize, usize) {
    let a = prog.funcs.get(k).map_or(0, |f| f.start);
    let b = prog.funcs.get(k + 1).map_or(prog.insns.len(), |f| f.start);
    (a, b)
}

fn successors(
    insns: &[Insn],
    pcs: &[usize],
    idx_of_pc: &dyn Fn(usize) -> Option<usize>,
    i: usize,
    end: usize,
) -> Vec<usize> {
    let ins = &insns[i];
    let mut v = Vec::new();
    let rel = match ins.kind() {
        Kind::Ja | Kind::Jmp(..) => Some(i64::from(ins.off)),
        Kind::Gotol => Some(ins.imm),
        _ => None,
    };
    if let Some(rel) = rel {
        if let Some(t) = usize::try_from(pcs[i] as i64 + 1 + rel)
            .ok()
            .and_then(idx_of_pc)
        {
            v.push(t);
        }
    }
    if !matches!(ins.kind(), Kind::Ja | Kind::Gotol | Kind::Exit) && i + 1 < end {
        v.push(i + 1);
    }
    v
}

fn analyse_frame(prog: &Program, k: usize, pcs: &[usize]) -> Frame {
    let (a, b) = func_range(prog, k);
    let insns = &prog.insns;
    // `pcs` is sorted, so a binary search finds an instruction by its slot.
    let idx_of_pc = |pc: usize| pcs[a..b].binary_search(&pc).ok().map(|i| i + a);
    let mut before: Vec<Option<[Fp; 11]>> = vec![None; insns.len()];
    let mut init = [Fp::No; 11];
    init[10] = Fp::At(0);
    before[a] = Some(init);
    let mut work = vec![a];
    while let Some(i) = work.pop() {
        let Some(s) = before[i] else { continue };
        let out = transfer(&insns[i], s);
        for t in successors(insns, pcs, &idx_of_pc, i, b) {
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
        let Some(s) = before[i] else { continue };
        let ins = &insns[i];
        let mut base = |r: u8, off: i64, unbounded: &mut bool| match s[r as usize] {
            Fp::At(k) => low = low.min(k + off),
            Fp::Any => *unbounded = true,
            Fp::No => {}
        };
        match ins.kind() {
            Kind::Ldx(..) => base(ins.src, ins.off.into(), &mut unbounded),
            Kind::St(_) | Kind::Stx(_) | Kind::Atomic(..) => {
                base(ins.dst, ins.off.into(), &mut unbounded)
            }
            Kind::Call(_) | Kind::Callx => {
                for r in 1..=5 {
                    base(r, 0, &mut unbounded);
                }
            }
            _ => {}
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
fn folded(fp: &[Fp; 11], base: u8, off: i16, size: Size, frame: u32) -> Option<i64> {
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
fn needs_frame_address(
    prog: &Program,
    k: usize,
    frame: &Frame,
    inlined_lookup: &dyn Fn(usize, &[Fp; 11]) -> bool,
) -> bool {
    let (a, b) = func_range(prog, k);
    (a..b).any(|i| {
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
                (1..=5).any(is_fp) || (ins.kind() == Kind::Callx && is_fp(ins.dst))
            }
            Kind::Exit => is_fp(0),
            Kind::LdInd(_) => is_fp(ins.src),
            _ => false,
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
        Kind::Ldx(..) | Kind::LdImm64(_) => s[d] = Fp::No,
        Kind::Call(_) | Kind::Callx | Kind::LdAbs(_) | Kind::LdInd(_) => {
            for r in s.iter_mut().take(6) {
                *r = Fp::No;
            }
        }
        Kind::Atomic(_, op, fetch) => {
            if op == AtomicOp::Cmpxchg {
                s[0] = Fp::No;
            } else if fetch {
                s[ins.src as usize] = Fp::No;
            }
        }
        _ => {}
    }
    s
}

struct FuncWriter<'a> {
    obj: &'a Object,
    prog: &'a Program,
    k: usize,
    out: String,
    need: BTreeSet<String>,
    labels: usize,
    /// The frame lives in registers `%s<n>` instead of `.local` memory.
    promote: bool,
    /// An instruction needs PTX ISA 6.2 (`activemask`).
    ptx_62: bool,
    /// The verifier's facts about this program.
    hints: Option<&'a Hints>,
    /// The instruction being lowered.
    cur: usize,
    /// Atomics at `.sys` scope (a map of the module is in host memory).
    sys: bool,
    /// Per map: sharded into [`SHARDS`] per-SM replicas ([`is_sharded`]).
    sharded: Vec<bool>,
    /// The body is inlined (an attach site, [`inline_body`], or an entry kernel), not a
    /// `.func`.
    inline: bool,
    /// Context loads at constant offsets read the site's `%bpf2ptx_c` registers.
    ctx_regs: bool,
    /// Per map: placed in host memory ([`Options::host`]).
    host: Vec<bool>,
    /// r0 holds a value pointer that cannot be NULL (an inlined lookup that cannot miss),
    /// until the next instruction.
    nonnull_r0: bool,
    /// The program runs once per warp and calls `get_active_mask`: the lanes that reached
    /// the site with the leader come in as r5 at the program's entry (BPF leaves r3..r5
    /// undefined there and the verifier refuses to read them, so no program can tell),
    /// are kept in `%lanes` and handed to every subprogram as a sixth parameter;
    /// `get_active_mask` returns them (specs/abi.md, "Execution granularity").
    lanes: bool,
    /// The function inlines a hash map lookup or update ([`FuncWriter::hash_inline`]) and
    /// declares the miss memo (`maps::MEMO_REGS`), which every other call clears.
    memo: bool,
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

fn ty(size: Size) -> &'static str {
    match size {
        Size::B => "u8",
        Size::H => "u16",
        Size::W => "u32",
        Size::DW => "u64",
    }
}

/// An inlined body's `exit` copies r0 to `%bpf2ptx_ret` (declared by the enclosing
/// block) and branches to this label; the attach site defines it after the
/// body's block (labels are scoped by blocks, so every site can reuse the name).
pub const INLINE_END: &str = "$L__bpf2ptx_end";
/// 64-bit context registers `%bpf2ptx_c0..` an attach site sets for an inlined body.
pub const INLINE_CTX_WORDS: u32 = 3;

/// Program `pi`'s entry function as a block body to paste at an attach site: its own
/// `.reg`/`.local` declarations (which shadow the kernel's, PTX scoping), r1..r5 from
/// the site's `%bpf2ptx_a1..5`, context fields at constant offsets from
/// `%bpf2ptx_c0..2`, and `exit` as a branch to [`INLINE_END`]. Calls to its
/// subprograms and the runtime go to the functions of the module [`write_string`] writes
/// with the same options, which the caller links in.
pub fn inline_body(obj: &Object, opts: &Options, pi: usize) -> Result<InlineBody, Error> {
    let mut f = FuncWriter::configured(obj, opts, pi, 0);
    f.inline = true;
    f.ctx_regs = true;
    f.lower()?;
    // Context bytes are read from memory by any context access the body does not serve
    // from registers: one in a subprogram, or at an offset not known on every path.
    let prog = &obj.programs[pi];
    let (a, b) = func_range(prog, 0);
    let ctx_in_memory = match opts.hints.get(pi) {
        Some(h) => (0..prog.insns.len()).any(|i| {
            let ctx = h.regions.get(i).is_none_or(|r| r & 2 != 0);
            let served = (a..b).contains(&i) && h.ctx_offset.get(i).copied().flatten().is_some();
            ctx && matches!(
                prog.insns[i].kind(),
                Kind::Ldx(..) | Kind::St(_) | Kind::Stx(_) | Kind::Atomic(..)
            ) && !served
        }),
        None => true,
    };
    Ok(InlineBody {
        text: f.out,
        ctx_in_memory,
    })
}

/// A program's body for an attach site ([`inline_body`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineBody {
    /// The block's statements.
    pub text: String,
    /// Whether the body reads the context through r1 (the site must then store the
    /// context to the memory r1 points to); when false every field it reads comes from
    /// the site's registers.
    pub ctx_in_memory: bool,
}

impl<'a> FuncWriter<'a> {
    /// A writer for function `k` of program `pi` with the module-wide settings.
    fn configured(obj: &'a Object, opts: &'a Options, pi: usize, k: usize) -> Self {
        let mut f = FuncWriter::new(obj, &obj.programs[pi], k, opts.hints.get(pi));
        f.sharded = (0..obj.maps.len())
            .map(|m| is_sharded(obj, opts, m))
            .collect();
        f.sys = atomic_scope(obj, opts) == bpf2ptx_runtime::Scope::Sys;
        f.host = opts.host.clone();
        let prog = &obj.programs[pi];
        f.lanes = entry_granularity(prog, opts) == Granularity::Warp && reads_active_mask(prog);
        f
    }

    fn new(obj: &'a Object, prog: &'a Program, k: usize, hints: Option<&'a Hints>) -> Self {
        FuncWriter {
            obj,
            prog,
            k,
            out: String::new(),
            need: BTreeSet::new(),
            labels: 0,
            promote: false,
            ptx_62: false,
            hints,
            cur: 0,
            sys: false,
            sharded: Vec::new(),
            inline: false,
            ctx_regs: false,
            host: Vec::new(),
            nonnull_r0: false,
            lanes: false,
            memo: false,
        }
    }

    /// A label no BPF instruction uses (those are `$L<pc>`).
    fn fresh_label(&mut self) -> String {
        self.labels += 1;
        format!("$Lx{}", self.labels)
    }

    fn l(&mut self, s: impl AsRef<str>) {
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

    fn lower(&mut self) -> Result<(), Error> {
        let prog = self.prog;
        let pcs = prog.pcs();
        let (a, b) = func_range(prog, self.k);
        let frame = analyse_frame(prog, self.k, &pcs);
        // Jump targets need labels.
        // `pcs` is sorted, so a binary search finds an instruction by its slot.
        let idx_of_pc = |pc: usize| pcs[a..b].binary_search(&pc).ok().map(|i| i + a);
        let mut targets = BTreeSet::new();
        for (ins, &pc) in prog.insns[a..b].iter().zip(&pcs[a..b]) {
            let rel = match ins.kind() {
                Kind::Ja | Kind::Jmp(..) => i64::from(ins.off),
                Kind::Gotol => ins.imm,
                _ => continue,
            };
            if let Some(t) = usize::try_from(pc as i64 + 1 + rel)
                .ok()
                .and_then(idx_of_pc)
            {
                targets.insert(t);
            }
        }
        let materialise = frame.size > 0
            && needs_frame_address(prog, self.k, &frame, &|i, fp| {
                self.lookup_map(i, fp, frame.size).is_some()
                    || self.ring_output_args(i, fp, frame.size).is_some()
                    || (prog.insns[i].imm == 1 && self.hash_inline(i, fp, frame.size).is_some())
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
        self.memo = (a..b).any(|i| {
            frame.before[i].is_some_and(|fp| self.hash_inline(i, &fp, frame.size).is_some())
        });
        if self.memo {
            for line in bpf2ptx_runtime::maps::MEMO_REGS.lines() {
                self.l(line);
            }
            self.l(bpf2ptx_runtime::maps::MEMO_CLEAR.trim_end());
        }
        self.l(".reg .b64 %r<11>;");
        self.l(".reg .b64 %t<4>;");
        self.l(".reg .b32 %w<4>;");
        self.l(".reg .pred %p<4>;");
        for r in 1..=5 {
            if self.inline {
                self.l(format!("mov.u64 %r{r}, %bpf2ptx_a{r};"));
            } else {
                self.l(format!("ld.param.u64 %r{r}, [bpf_a{r}];"));
            }
        }
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
        for i in a..b {
            if targets.contains(&i) {
                let _ = writeln!(self.out, "$L{}:", pcs[i]);
                // Another path joins here: nothing is known about r0.
                self.nonnull_r0 = false;
            }
            let fp = frame.before[i].unwrap_or([Fp::Any; 11]);
            self.insn(i, &pcs, &fp, frame.size)?;
        }
        Ok(())
    }

    /// The operand for a 64-bit immediate (sign-extended from 32 bits).
    fn imm64(v: i64) -> String {
        format!("{}", v)
    }

    /// Whether the verifier proved `what` for the current instruction.
    fn proven(&self, what: fn(&Hints) -> &Vec<bool>) -> bool {
        self.hints
            .and_then(|h| Hints::get(what(h), self.cur))
            .unwrap_or(false)
    }

    fn insn(&mut self, i: usize, pcs: &[usize], fp: &[Fp; 11], frame: u32) -> Result<(), Error> {
        self.cur = i;
        let ins = self.prog.insns[i];
        let (d, s) = (ins.dst, ins.src);
        let label = |rel: i64| format!("$L{}", pcs[i] as i64 + 1 + rel);
        let constant = self
            .hints
            .and_then(|h| h.const_value.get(i).copied().flatten());
        let always = self
            .hints
            .and_then(|h| h.branch_always.get(i).copied().flatten());
        if self
            .hints
            .and_then(|h| h.reached.get(i).copied())
            .is_some_and(|r| !r)
        {
            return Ok(());
        }
        // `if r0 == 0` / `if r0 != 0` right after a lookup that cannot miss.
        let nonnull = std::mem::take(&mut self.nonnull_r0);
        if nonnull && ins.dst == 0 && ins.imm == 0 {
            match ins.kind() {
                Kind::Jmp(Cond::Eq, Width::W64, Src::K) => return Ok(()),
                Kind::Jmp(Cond::Ne, Width::W64, Src::K) => {
                    self.l(format!("bra {};", label(ins.off.into())));
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
        let plain = self
            .hints
            .and_then(|h| h.plain_add.get(i).copied().flatten());
        match (ins.kind(), plain) {
            (Kind::Ldx(..), Some(PlainAdd::Load)) | (Kind::Alu(..), Some(PlainAdd::Add)) => {
                return Ok(())
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
                self.l(format!("bra {};", label(ins.off.into())));
            }
            Kind::Jmp(..) if always == Some(false) => {}
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
                let t = label(ins.off.into());
                match w {
                    Width::W64 => {
                        let rhs = if src == Src::X {
                            format!("%r{s}")
                        } else {
                            Self::imm64(ins.imm)
                        };
                        if c == Cond::Set {
                            self.l(format!("and.b64 %t0, %r{d}, {rhs};"));
                            self.l("setp.ne.u64 %p0, %t0, 0;");
                        } else {
                            self.l(format!(
                                "setp.{cmp}.{} %p0, %r{d}, {rhs};",
                                if signed { "s64" } else { "u64" }
                            ));
                        }
                    }
                    Width::W32 => {
                        self.l(format!("cvt.u32.u64 %w0, %r{d};"));
                        let rhs = if src == Src::X {
                            self.l(format!("cvt.u32.u64 %w1, %r{s};"));
                            "%w1".to_string()
                        } else {
                            format!("{}", ins.imm as i32)
                        };
                        if c == Cond::Set {
                            self.l(format!("and.b32 %w0, %w0, {rhs};"));
                            self.l("setp.ne.u32 %p0, %w0, 0;");
                        } else {
                            self.l(format!(
                                "setp.{cmp}.{} %p0, %w0, {rhs};",
                                if signed { "s32" } else { "u32" }
                            ));
                        }
                    }
                }
                self.l(format!("@%p0 bra {t};"));
            }
            Kind::Ja => self.l(format!("bra {};", label(ins.off.into()))),
            Kind::Gotol => self.l(format!("bra {};", label(ins.imm))),
            Kind::Call(CallKind::Helper) if ins.imm == 1 && self.inline_lookup(fp, frame) => {}
            Kind::Call(CallKind::Helper) if ins.imm == 1 && self.inline_hash_lookup(fp, frame) => {}
            Kind::Call(CallKind::Helper) if ins.imm == 2 && self.inline_hash_update(fp, frame) => {}
            Kind::Call(CallKind::Helper) if MAP_HELPERS.iter().any(|h| h.0 == ins.imm) => {
                self.map_call(i);
            }
            Kind::Call(CallKind::Helper) if RING_HELPERS.iter().any(|h| h.0 == ins.imm) => {
                let &(id, name, regs) = RING_HELPERS
                    .iter()
                    .find(|h| h.0 == ins.imm)
                    .expect("checked");
                self.need.insert("ringbuf".into());
                if self.inline_ring_output(fp, frame) {
                    return Ok(());
                }
                let returns = !matches!(id, 132 | 133);
                self.call_runtime(name, regs, returns);
            }
            Kind::Call(CallKind::Helper) if matches!(ins.imm, 6 | 501) => {
                self.need.insert("ringbuf".into());
                self.need.insert("printk".into());
                self.printk(ins.imm == 501);
            }
            Kind::Call(CallKind::Helper) => {
                if !INLINE_HELPERS.contains(&ins.imm) {
                    return Err(Error::UnknownHelper {
                        program: self.prog.name.clone(),
                        pc: pcs[i],
                        insn: ins.to_string(),
                        id: ins.imm,
                    });
                }
                self.helper(ins.imm);
            }
            Kind::Call(CallKind::Local) => {
                let t = pcs[i] as i64 + 1 + ins.imm;
                let k = self
                    .prog
                    .funcs
                    .iter()
                    .position(|f| pcs[f.start] as i64 == t)
                    .ok_or_else(|| {
                        self.unsupported(i, pcs, "call target is not a function start")
                    })?;
                self.call_local(k);
            }
            Kind::Call(CallKind::Kfunc) => {
                return Err(self.unsupported(
                    i,
                    pcs,
                    "kernel functions (kfuncs) do not exist on the GPU",
                ))
            }
            Kind::Callx => {
                // The register holds a helper id (bpf_conformance's convention) or a
                // function address made by `ld_imm64 func`; anything else yields r0 = 0.
                self.l("mov.u64 %t1, 0;");
                self.l(format!("mov.u64 %t2, %r{d};"));
                for &h in INLINE_HELPERS {
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
                let t = pcs[i] as i64 + 1 + i64::from(ins.imm as i32);
                let k = self
                    .prog
                    .funcs
                    .iter()
                    .position(|f| pcs[f.start] as i64 == t)
                    .ok_or_else(|| {
                        self.unsupported(i, pcs, "function address is not a function start")
                    })?;
                self.l(format!("mov.u64 %r{d}, {};", FUNC_TAG + k as u64));
            }
            Kind::LdImm64(Pseudo::MapIdxValue) => {
                let (map, off) = (ins.imm as u32 as usize, (ins.imm as u64 >> 32) as u32);
                match self.obj.maps.get(map) {
                    Some(m) if m.origin == MapOrigin::GlobalData => {
                        self.l(format!("mov.u64 %r{d}, {};", map_symbol(&m.name)));
                        self.l(format!("cvta.global.u64 %r{d}, %r{d};"));
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
                self.l(format!("mov.u64 %r{d}, {};", map_desc_symbol(&m.name)));
                self.l(format!("cvta.global.u64 %r{d}, %r{d};"));
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
                self.load(size, signed, s, ins.off, fp, frame, &val);
            }
            Kind::St(size) => {
                self.l(format!("mov.u64 %t3, {};", ins.imm));
                self.store(size, d, ins.off, fp, frame, "%t3");
            }
            Kind::Stx(size) => {
                let v = format!("%r{s}");
                self.store(size, d, ins.off, fp, frame, &v);
            }
            Kind::Atomic(size, op, fetch) => self.atomic(size, op, fetch, d, s, ins.off, fp, frame),
        }
        Ok(())
    }

    fn helper(&mut self, id: i64) {
        match id {
            // ktime_get_ns / get_globaltimer: the GPU's global nanosecond timer.
            5 | 502 => self.l("mov.u64 %r0, %globaltimer;"),
            // get_smp_processor_id / get_sm_id: the SM the thread runs on.
            8 | 509 => {
                self.l("mov.u32 %w0, %smid;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            // get_current_pid_tgid: (linear block index << 32) | linear thread index.
            14 => {
                self.linear_block("%t1");
                self.linear_thread("%t2");
                self.l("shl.b64 %t1, %t1, 32;");
                self.l("or.b64 %r0, %t1, %t2;");
            }
            // get_block_idx / get_block_dim / get_thread_idx / get_grid_dim: x, y, z as
            // u64 through the pointers in r1, r2, r3.
            503 | 504 | 505 | 508 => {
                let reg = match id {
                    503 => "%ctaid",
                    504 => "%ntid",
                    505 => "%tid",
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
            506 => {
                self.l("membar.sys;");
                self.l("mov.u64 %r0, 0;");
            }
            // gpu_exit: the thread ends here (bpftime's meaning).
            507 => self.l("exit;"),
            // get_warp_id: the warp's index in its block.
            510 => {
                self.linear_thread("%t2");
                self.l("shr.u64 %r0, %t2, 5;");
            }
            // get_global_thread_id: linear block index * threads per block + thread index.
            600 => self.global_thread_id("%r0"),
            // get_active_mask: in a per-warp program the lanes its leader stands for,
            // else `activemask` (PTX 6.2, which the module then declares).
            601 if self.lanes => self.l("cvt.u64.u32 %r0, %lanes;"),
            601 => {
                self.ptx_62 = true;
                self.l("activemask.b32 %w0;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            // clock64: the SM's cycle counter.
            602 => self.l("mov.u64 %r0, %clock64;"),
            // get_lane_id.
            511 => {
                self.l("mov.u32 %w0, %laneid;");
                self.l("cvt.u64.u32 %r0, %w0;");
            }
            _ => unreachable!("only INLINE_HELPERS reach here"),
        }
    }

    /// In an inlined body, a context load at a constant offset reads the site's context
    /// registers `%bpf2ptx_c0..` (8 bytes each, little-endian like the struct), so the
    /// fields an attach site knows at build time are constants ptxas folds. Returns false
    /// when the load is not such a field.
    fn ctx_field(&mut self, d: u8, size: Size, signed: bool) -> bool {
        let Some(off) = self
            .hints
            .and_then(|h| h.ctx_offset.get(self.cur).copied().flatten())
        else {
            return false;
        };
        let bytes = i64::from(size.bytes());
        if off < 0 || off % 8 + bytes > 8 || off + bytes > i64::from(INLINE_CTX_WORDS) * 8 {
            return false;
        }
        let (w, shift) = (off / 8, (off % 8) * 8);
        if bytes == 8 {
            self.l(format!("mov.b64 %r{d}, %bpf2ptx_c{w};"));
        } else {
            let t = if signed { "s64" } else { "u64" };
            self.l(format!(
                "bfe.{t} %r{d}, %bpf2ptx_c{w}, {shift}, {};",
                bytes * 8
            ));
        }
        true
    }

    /// `red.add [addr], c` for every active lane, done as one `red.add` of `c` times the
    /// group size by the lowest lane of each group of lanes with the same address
    /// (`match.any.sync` over `activemask`). The sum in memory is the same; the atomics
    /// on one line drop from 32 per warp to one.
    fn aggregated_add(&mut self, space: &str, wide: bool, addr: &str, c: u64) {
        self.ptx_62 = true;
        self.l("{");
        self.l(".reg .b32 %ag<4>;");
        self.l(".reg .b64 %agd;");
        self.l(".reg .pred %agp;");
        self.l("activemask.b32 %ag0;");
        self.l(format!("match.any.sync.b64 %ag1, {addr}, %ag0;"));
        self.l("popc.b32 %ag2, %ag1;");
        self.l("mov.u32 %ag3, %lanemask_lt;");
        self.l("and.b32 %ag3, %ag3, %ag1;");
        self.l("setp.eq.u32 %agp, %ag3, 0;");
        if wide {
            self.l("cvt.u64.u32 %agd, %ag2;");
            self.l(format!("mul.lo.u64 %agd, %agd, {c};"));
            self.l(format!("@%agp red{space}.add.u64 [{addr}], %agd;"));
        } else {
            self.l(format!("mul.lo.u32 %ag2, %ag2, {};", c as u32));
            self.l(format!("@%agp red{space}.add.u32 [{addr}], %ag2;"));
        }
        self.l("}");
    }

    /// The runtime's hash function for map helper call `i` (1-3) when the verifier pinned
    /// the call to one hash map ([`MapKind::is_hash`]).
    fn pinned_hash_helper(&self, i: usize) -> Option<(u32, &'static str)> {
        let m = self.hints?.call_map.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        if !map.is(MapKind::is_hash) {
            return None;
        }
        bpf2ptx_runtime::maps::HASH_HELPERS
            .iter()
            .find(|(id, _)| i64::from(*id) == self.prog.insns[i].imm)
            .map(|(_, name)| (m, *name))
    }

    /// A call of map helper 1-3 (instruction `i`) into the runtime: when the verifier
    /// pinned the call to one hash map, that map's specialisation of the hash function
    /// (past the type dispatch, with the map's sizes and type as constants:
    /// `maps::specialized_function`; same checks, same results), else the generic helper.
    fn map_call(&mut self, i: usize) {
        let ins = self.prog.insns[i];
        let &(_, generic, argc) = MAP_HELPERS
            .iter()
            .find(|h| h.0 == ins.imm)
            .expect("a map helper");
        let name = match self.pinned_hash_helper(i) {
            Some((m, base)) => {
                self.need.insert(format!("{SPEC_NEED}{base}:{m}"));
                let desc = map_desc_symbol(&self.obj.maps[m as usize].name);
                bpf2ptx_runtime::maps::specialized_name(base, &desc)
            }
            None => generic.to_string(),
        };
        self.need.insert("maps".into());
        self.l("{");
        let mut params = Vec::new();
        for r in 1..=argc {
            self.l(format!(".param .b64 bpf_h{r};"));
            self.l(format!("st.param.b64 [bpf_h{r}], %r{r};"));
            params.push(format!("bpf_h{r}"));
        }
        self.l(".param .b64 bpf_hr;");
        self.l(format!(
            "call.uni (bpf_hr), {name}, ({});",
            params.join(", ")
        ));
        self.l("ld.param.b64 %r0, [bpf_hr];");
        self.l("}");
    }

    /// The hash map, key slot and key width of instruction `i` when it is a
    /// `map_lookup_elem` of a hash map ([`MapKind::is_hash`]) or a `map_update_elem` of a
    /// plain one (hash, GPU hash) that the verifier pinned to one map, whose key of 1, 2, 4
    /// or 8 bytes is one aligned slot of this frame: inlined
    /// ([`FuncWriter::inline_hash_lookup`], [`FuncWriter::inline_hash_update`]).
    fn hash_inline(&self, i: usize, fp: &[Fp; 11], frame: u32) -> Option<(u32, i64, Size)> {
        use bpf2ptx_runtime::maps;
        let ins = self.prog.insns.get(i)?;
        if ins.kind() != Kind::Call(CallKind::Helper) || !matches!(ins.imm, 1 | 2) {
            return None;
        }
        let m = self.hints?.call_map.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        let kind_ok = if ins.imm == 1 {
            map.is(MapKind::is_hash)
        } else {
            matches!(map.kind(), Some(MapKind::Hash | MapKind::GpuHash))
        };
        if !kind_ok || !maps::inlinable_key(map.key_size) {
            return None;
        }
        let size = match map.key_size {
            1 => Size::B,
            2 => Size::H,
            4 => Size::W,
            _ => Size::DW,
        };
        Some((m, folded(fp, 2, 0, size, frame)?, size))
    }

    /// The scope of the module's atomics, which inlined map code shares with the runtime.
    fn scope(&self) -> bpf2ptx_runtime::Scope {
        if self.sys {
            bpf2ptx_runtime::Scope::Sys
        } else {
            bpf2ptx_runtime::Scope::Gpu
        }
    }

    /// `map_lookup_elem` on a hash map, inlined ([`FuncWriter::hash_inline`],
    /// `maps::inline_hash_lookup`): the key word from its frame slot, then the runtime's
    /// find with the key and value sizes as constants. A miss fills the miss memo.
    fn inline_hash_lookup(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, slot, size)) = self.hash_inline(self.cur, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let (ks, vs, max) = (map.key_size, map.value_size, map.max_entries);
        let lru = map.kind() == Some(MapKind::LruHash);
        self.need.insert("maps".into());
        self.l("{");
        self.l(".reg .b64 %hkw;");
        self.local_load("%hkw", false, slot, size, false);
        let tag = self.fresh_label();
        let text = bpf2ptx_runtime::maps::inline_hash_lookup(
            "%r1",
            ks,
            vs,
            max,
            lru,
            "%hkw",
            "%r0",
            &tag,
            self.scope(),
        );
        for line in text.lines() {
            self.l(line);
        }
        self.l("}");
        true
    }

    /// `map_update_elem` on a plain hash map, with the refusal of a full map inlined
    /// before the runtime's update (`maps::inline_hash_update`): taken when the miss memo
    /// says this thread's last lookup of the key, with no call since, missed.
    fn inline_hash_update(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let i = self.cur;
        let Some((_, slot, size)) = self.hash_inline(i, fp, frame) else {
            return false;
        };
        self.need.insert("maps".into());
        self.l("{");
        self.l(".reg .b64 %hkw;");
        self.local_load("%hkw", false, slot, size, false);
        let tag = self.fresh_label();
        let (head, tail) = bpf2ptx_runtime::maps::inline_hash_update(
            "%r1",
            "%hkw",
            "%r4",
            "%r0",
            &tag,
            self.scope(),
        );
        for line in head.lines() {
            self.l(line);
        }
        self.map_call(i);
        for line in tail.lines() {
            self.l(line);
        }
        self.l("}");
        true
    }

    /// The map and key slot of instruction `i` when it is a `map_lookup_elem` that
    /// [`FuncWriter::inline_lookup`] inlines.
    fn lookup_map(&self, i: usize, fp: &[Fp; 11], frame: u32) -> Option<(u32, i64)> {
        let ins = self.prog.insns.get(i)?;
        if ins.kind() != Kind::Call(CallKind::Helper) || ins.imm != 1 {
            return None;
        }
        let m = self.hints?.call_map.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        if !map.is(MapKind::is_array) || map.key_size != 4 {
            return None;
        }
        Some((m, folded(fp, 2, 0, Size::W, frame)?))
    }

    /// `map_lookup_elem` on an array ([`MapKind::is_array`]) the verifier pinned to one map, with
    /// the key in a known stack slot: inline, with the map's entries, stride and sharding
    /// as constants. Returns false (nothing emitted) when the call does not qualify and
    /// goes to the runtime function instead.
    fn inline_lookup(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, slot)) = self.lookup_map(self.cur, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let entries = map.max_entries;
        let stride = bpf2ptx_runtime::maps::round8(u64::from(map.value_size));
        let desc = map_desc_symbol(&map.name);
        if map.is(MapKind::is_per_unit) {
            let warp = map.kind() == Some(MapKind::PerWarpArray);
            self.per_unit_lookup(slot, entries, stride, &desc, warp);
            return true;
        }
        let sharded = self.sharded.get(m as usize).copied().unwrap_or(false);
        self.l("{");
        self.l(".reg .b32 %lk<2>;");
        self.l(".reg .b64 %lkd<3>;");
        self.l(".reg .pred %lkp<2>;");
        self.local_load("%lk0", true, slot, Size::W, false);
        self.l(format!("setp.ge.u32 %lkp0, %lk0, {entries};"));
        if self.host.get(m as usize).copied().unwrap_or(false) {
            // Host placement: the loader binds word 3 to pinned memory before a launch.
            self.l(format!("ld.global.nc.u64 %lkd0, [{desc}+{}];", desc::DATA));
            self.l("setp.eq.u64 %lkp1, %lkd0, 0;");
            self.l("or.pred %lkp0, %lkp0, %lkp1;");
        } else {
            // Device placement: the module's own storage, which word 3 names too (a
            // constant address, no load on the probe's path; specs/abi.md).
            self.l(format!("mov.u64 %lkd0, {};", map_data_symbol(&map.name)));
            self.l("cvta.global.u64 %lkd0, %lkd0;");
        }
        self.l(format!("mul.wide.u32 %lkd1, %lk0, {stride};"));
        if sharded {
            self.l("mov.u32 %lk1, %smid;");
            self.l(format!("and.b32 %lk1, %lk1, {};", SHARDS - 1));
            self.l(format!(
                "mul.wide.u32 %lkd2, %lk1, {};",
                bpf2ptx_runtime::maps::replica_bytes(entries, map.value_size)
            ));
            self.l("add.u64 %lkd1, %lkd1, %lkd2;");
        }
        let hit = self
            .hints
            .and_then(|h| h.lookup_in_range.get(self.cur).copied().flatten())
            == Some(true);
        if hit && !self.host.get(m as usize).copied().unwrap_or(false) {
            self.l("add.u64 %r0, %lkd0, %lkd1;");
            self.nonnull_r0 = true;
        } else {
            self.l("add.u64 %lkd1, %lkd0, %lkd1;");
            self.l("selp.u64 %r0, 0, %lkd1, %lkp0;");
        }
        self.l("}");
        true
    }

    /// The ring, record size and frame slot of instruction `i` when it is a
    /// `ringbuf_output` (or `perf_event_output`) that [`FuncWriter::inline_ring_output`]
    /// inlines: the verifier pinned the map and the size, and the data is a whole range of
    /// this frame starting 8-aligned, so its words are copied from the frame's registers.
    fn ring_output_args(&self, i: usize, fp: &[Fp; 11], frame: u32) -> Option<(u32, u64, i64)> {
        let ins = self.prog.insns.get(i)?;
        let data = match (ins.kind(), ins.imm) {
            (Kind::Call(CallKind::Helper), 130) => 2,
            (Kind::Call(CallKind::Helper), 25) => 4,
            _ => return None,
        };
        let h = self.hints?;
        let m = h.call_map.get(i).copied().flatten()?;
        let size = h.call_size.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        let Fp::At(k) = fp[data] else {
            return None;
        };
        let slot = i64::from(frame) + k;
        (map.is(MapKind::is_ring)
            && (1..=INLINE_RECORD_MAX).contains(&size)
            && slot >= 0
            && slot % 8 == 0
            && slot + size as i64 <= i64::from(frame))
        .then_some((m, size, slot))
    }

    /// `ringbuf_output(ring, data, size, flags)` (or `perf_event_output`) inlined for a ring
    /// and a size the verifier pinned: the runtime's reservation protocol (specs/abi.md;
    /// `bpf2ptx_ringbuf_reserve`) with everything a call site knows folded in. Every active
    /// lane reserves the same size on the same ring, so the warp's leader reads the
    /// consumer and the bound, claims as many whole records as seem to fit on the bound,
    /// keeps those that fit below what the claim returned, gives the rest back and takes the
    /// kept ones with one `atom.add` on the producer; each taking lane
    /// writes its record from the frame's registers and publishes it with one release
    /// store of its header `{size, 0}` (a reader stops at a header that is all zeros, so no
    /// BUSY header is needed first). The lanes that did not fit are counted as drops by the
    /// leader. A record that would cross the ring's end becomes padding and that lane
    /// reserves again through the runtime (once per wrap). Returns false, emitting nothing,
    /// when the call does not qualify.
    fn inline_ring_output(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, size, slot)) = self.ring_output_args(self.cur, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let t = bpf2ptx_runtime::ringbuf::record_size(size);
        // Records are published for the reader of the ring's bytes: the host while the
        // kernel runs when it is placed there. The counters and the claim stay in device
        // memory (.gpu) either way.
        let rs = if self.host.get(m as usize).copied().unwrap_or(false) {
            "sys"
        } else {
            "gpu"
        };
        // The data's stores, written aside: straight from the frame's registers.
        let outer = std::mem::take(&mut self.out);
        let mut off = 0u64;
        while off < size {
            let n = match size - off {
                8.. => Size::DW,
                4..=7 => Size::W,
                2 | 3 => Size::H,
                _ => Size::B,
            };
            self.local_load("%rbd8", false, slot + off as i64, n, false);
            self.l(format!("st.global.{} [%rbd6+{}], %rbd8;", ty(n), 8 + off));
            off += u64::from(n.bytes());
        }
        let copy = std::mem::replace(&mut self.out, outer);
        let labels = [
            self.fresh_label(),
            self.fresh_label(),
            self.fresh_label(),
            self.fresh_label(),
        ];
        self.ptx_62 = true;
        let fields: [(&str, String); 12] = [
            ("DESC", map_desc_symbol(&map.name)),
            ("SIZE", size.to_string()),
            ("T", t.to_string()),
            // k = floor(x / t) for x <= 32 t as mul.hi by ceil(2^32 / t): exact while
            // 32 t^2 < 2^32 (t <= INLINE_RECORD_MAX + 8 keeps it so).
            ("MAGIC", (1u64 << 32).div_ceil(t).to_string()),
            ("RS", rs.to_string()),
            ("EINVAL", bpf2ptx_runtime::ringbuf::EINVAL.to_string()),
            ("EAGAIN", bpf2ptx_runtime::ringbuf::EAGAIN.to_string()),
            ("COPY", copy),
            ("DONE", labels[0].clone()),
            ("WRITE", labels[1].clone()),
            ("PAD", labels[2].clone()),
            ("DROP", labels[3].clone()),
        ];
        let mut text = bpf2ptx_runtime::fill_abi(INLINE_RING_OUTPUT);
        for (k, v) in &fields {
            text = text.replace(&format!("@{k}@"), v);
        }
        self.out.push_str(&text);
        true
    }

    /// Inlined `map_lookup_elem` on a per-thread array or a per-warp array ([`MapKind::is_per_unit`]):
    /// the calling thread's (warp's) slot of key `k`, `data + (k * aux + id) * stride`
    /// (words 3 and 4, which the host binds for the launch; id the global thread or warp
    /// id), or NULL when the map is unbound, the key is out of range or the id is beyond
    /// what the storage was sized for — the runtime's rules (`bpf2ptx_map_array_slot`),
    /// without the call.
    fn per_unit_lookup(&mut self, slot: i64, entries: u32, stride: u64, desc: &str, warp: bool) {
        self.l("{");
        self.l(".reg .b32 %lk<1>;");
        self.l(".reg .b64 %lkd<4>;");
        self.l(".reg .pred %lkp<2>;");
        self.local_load("%lk0", true, slot, Size::W, false);
        self.l(format!("ld.global.nc.u64 %lkd0, [{desc}+{}];", desc::DATA));
        self.l(format!("ld.global.nc.u64 %lkd1, [{desc}+{}];", desc::AUX));
        self.global_id("%lkd2", warp);
        self.l(format!("setp.ge.u32 %lkp0, %lk0, {entries};"));
        self.l("setp.ge.u64 %lkp1, %lkd2, %lkd1;");
        self.l("or.pred %lkp0, %lkp0, %lkp1;");
        self.l("setp.eq.u64 %lkp1, %lkd0, 0;");
        self.l("or.pred %lkp0, %lkp0, %lkp1;");
        self.l("cvt.u64.u32 %lkd3, %lk0;");
        self.l("mad.lo.u64 %lkd3, %lkd3, %lkd1, %lkd2;");
        self.l(format!("mad.lo.u64 %lkd3, %lkd3, {stride}, %lkd0;"));
        self.l("selp.u64 %r0, 0, %lkd3, %lkp0;");
        self.l("}");
    }

    /// A call into the runtime with the given operands (BPF registers or constants) as
    /// arguments; r0 gets the result where the function returns one.
    fn call_runtime(&mut self, name: &str, args: &[&str], returns: bool) {
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

    /// `trace_printk(fmt, size, a, b, c)` / `puts(str)`: a 48-byte record in the module's
    /// printk ring (kind, address, size, three arguments) that the host formats; a full
    /// ring drops the line. r0 = 0.
    fn printk(&mut self, puts: bool) {
        self.l("{");
        self.l(".param .b64 bpf_pd;");
        self.l(format!("mov.u64 %t0, {PRINTK_DESC};"));
        self.l("cvta.global.u64 %t0, %t0;");
        self.l("st.param.b64 [bpf_pd], %t0;");
        self.l(".param .b64 bpf_ps;");
        self.l(format!("st.param.b64 [bpf_ps], {PRINTK_RECORD};"));
        self.l(".param .b64 bpf_pf;");
        self.l("st.param.b64 [bpf_pf], 0;");
        self.l(".param .b64 bpf_pr;");
        self.l("call.uni (bpf_pr), bpf2ptx_ringbuf_reserve, (bpf_pd, bpf_ps, bpf_pf);");
        self.l("ld.param.b64 %t1, [bpf_pr];");
        self.l("}");
        let done = self.fresh_label();
        self.l("setp.eq.u64 %p1, %t1, 0;");
        self.l(format!("@%p1 bra {done};"));
        self.l(format!("st.u64 [%t1], {};", if puts { 1 } else { 0 }));
        self.l("st.u64 [%t1+8], %r1;");
        if puts {
            self.l("st.u64 [%t1+16], 0;");
            self.l("st.u64 [%t1+24], 0;");
            self.l("st.u64 [%t1+32], 0;");
            self.l("st.u64 [%t1+40], 0;");
        } else {
            self.l("st.u64 [%t1+16], %r2;");
            self.l("st.u64 [%t1+24], %r3;");
            self.l("st.u64 [%t1+32], %r4;");
            self.l("st.u64 [%t1+40], %r5;");
        }
        self.l("{");
        self.l(".param .b64 bpf_pa;");
        self.l("st.param.b64 [bpf_pa], %t1;");
        self.l(".param .b64 bpf_pg;");
        self.l("st.param.b64 [bpf_pg], 0;");
        self.l("call.uni bpf2ptx_ringbuf_submit, (bpf_pa, bpf_pg);");
        self.l("}");
        let _ = writeln!(self.out, "{done}:");
        self.l("mov.u64 %r0, 0;");
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
    fn global_thread_id(&mut self, dst: &str) {
        self.global_id(dst, false);
    }

    /// [`FuncWriter::global_thread_id`], or with `warp` the global warp id: linear block
    /// index x warps per block (threads per block rounded up to 32, as the hardware forms
    /// warps from the linear thread index) + linear thread index / 32.
    fn global_id(&mut self, dst: &str, warp: bool) {
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

    fn call_local(&mut self, k: usize) {
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

    fn alu64(&mut self, op: AluOp, d: u8, rhs: &str, src: Src, imm: i64) {
        let r = format!("%r{d}");
        let simple = |o: &str| format!("{o} {r}, {r}, {rhs};");
        match op {
            AluOp::Add => self.l(simple("add.u64")),
            AluOp::Sub => self.l(simple("sub.u64")),
            AluOp::Mul => self.l(simple("mul.lo.u64")),
            AluOp::Or => self.l(simple("or.b64")),
            AluOp::And => self.l(simple("and.b64")),
            AluOp::Xor => self.l(simple("xor.b64")),
            AluOp::Mov => self.l(format!("mov.u64 {r}, {rhs};")),
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
                let o = match op {
                    AluOp::Lsh => "shl.b64",
                    AluOp::Rsh => "shr.u64",
                    _ => "shr.s64",
                };
                if src == Src::K {
                    self.l(format!("{o} {r}, {r}, {};", imm & 63));
                } else {
                    self.l(format!("cvt.u32.u64 %w2, {rhs};"));
                    self.l("and.b32 %w2, %w2, 63;");
                    self.l(format!("{o} {r}, {r}, %w2;"));
                }
            }
            AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod => {
                self.divide(op, &r, rhs, src, imm, "64", "%t0")
            }
        }
    }

    fn alu32(&mut self, op: AluOp, rhs: &str, src: Src, imm: i32) {
        let simple = |o: &str| format!("{o} %w0, %w0, {rhs};");
        match op {
            AluOp::Add => self.l(simple("add.u32")),
            AluOp::Sub => self.l(simple("sub.u32")),
            AluOp::Mul => self.l(simple("mul.lo.u32")),
            AluOp::Or => self.l(simple("or.b32")),
            AluOp::And => self.l(simple("and.b32")),
            AluOp::Xor => self.l(simple("xor.b32")),
            AluOp::Mov => self.l(format!("mov.u32 %w0, {rhs};")),
            AluOp::Lsh | AluOp::Rsh | AluOp::Arsh => {
                let o = match op {
                    AluOp::Lsh => "shl.b32",
                    AluOp::Rsh => "shr.u32",
                    _ => "shr.s32",
                };
                if src == Src::K {
                    self.l(format!("{o} %w0, %w0, {};", imm & 31));
                } else {
                    self.l("and.b32 %w2, %w1, 31;");
                    self.l(format!("{o} %w0, %w0, %w2;"));
                }
            }
            AluOp::Div | AluOp::Mod | AluOp::SDiv | AluOp::SMod => {
                self.divide(op, "%w0", rhs, src, i64::from(imm), "32", "%w3")
            }
        }
    }

    /// Division and modulo with BPF's answers where PTX has none: x / 0 = 0, x % 0 = x,
    /// x s/ -1 = -x, x s% -1 = 0.
    #[allow(clippy::too_many_arguments)]
    fn divide(
        &mut self,
        op: AluOp,
        dst: &str,
        rhs: &str,
        src: Src,
        imm: i64,
        bits: &str,
        _tmp: &str,
    ) {
        let signed = matches!(op, AluOp::SDiv | AluOp::SMod);
        let is_div = matches!(op, AluOp::Div | AluOp::SDiv);
        let (u, s) = (format!("u{bits}"), format!("s{bits}"));
        let instr = if is_div { "div" } else { "rem" };
        let t = if signed { &s } else { &u };
        if src == Src::K {
            let k = if bits == "32" {
                i64::from(imm as i32)
            } else {
                imm
            };
            if k == 0 {
                if is_div {
                    self.l(format!("mov.{u} {dst}, 0;"));
                }
            } else if signed && k == -1 {
                if is_div {
                    self.l(format!("neg.{s} {dst}, {dst};"));
                } else {
                    self.l(format!("mov.{u} {dst}, 0;"));
                }
            } else if !signed && unsigned_divisor(k, bits).is_power_of_two() {
                // ptxas turns every 64-bit div/rem into a subroutine call; by a power of
                // two they are a shift and a mask.
                let d = unsigned_divisor(k, bits);
                if is_div {
                    self.l(format!("shr.b{bits} {dst}, {dst}, {};", d.trailing_zeros()));
                } else {
                    self.l(format!("and.b{bits} {dst}, {dst}, {};", d - 1));
                }
            } else {
                self.l(format!("{instr}.{t} {dst}, {dst}, {rhs};"));
            }
            return;
        }
        // Without a proof that the divisor is non-zero, test it: PTX leaves x / 0 undefined.
        let may_be_zero = self
            .hints
            .and_then(|h| Hints::get(&h.divisor_may_be_zero, self.cur))
            .unwrap_or(true);
        if !may_be_zero && !signed {
            self.l(format!("{instr}.{t} {dst}, {dst}, {rhs};"));
            return;
        }
        if may_be_zero {
            self.l(format!("setp.eq.{u} %p1, {rhs}, 0;"));
        } else {
            self.l("setp.ne.u32 %p1, 0, 0;");
        }
        if signed {
            self.l(format!("setp.eq.{s} %p2, {rhs}, -1;"));
            self.l("or.pred %p3, %p1, %p2;");
            if is_div {
                self.l(format!("@%p2 neg.{s} {dst}, {dst};"));
            } else {
                self.l(format!("@%p2 mov.{u} {dst}, 0;"));
            }
        } else {
            self.l("mov.pred %p3, %p1;");
        }
        if is_div {
            self.l(format!("@%p1 mov.{u} {dst}, 0;"));
        }
        self.l(format!("@!%p3 {instr}.{t} {dst}, {dst}, {rhs};"));
    }

    /// Reads `size` bytes of the frame at `slot` into `reg` (a .b64 register, or a .b32 one
    /// when `reg32`), zero- or sign-extended.
    fn local_load(&mut self, reg: &str, reg32: bool, slot: i64, size: Size, signed: bool) {
        if !self.promote {
            let t = match (reg32, signed) {
                (true, _) => "u32".to_string(),
                (false, true) => ty(size).replace('u', "s"),
                (false, false) => ty(size).to_string(),
            };
            self.l(format!("ld.local.{t} {reg}, [bpf_stack+{slot}];"));
            return;
        }
        let (s, bit, n) = (slot / 8, (slot % 8) * 8, size.bytes() * 8);
        let wide = if reg32 { "%t2" } else { reg };
        if n == 64 {
            self.l(format!("mov.b64 {wide}, %s{s};"));
        } else {
            self.l(format!(
                "bfe.{} {wide}, %s{s}, {bit}, {n};",
                if signed { "s64" } else { "u64" }
            ));
        }
        if reg32 {
            self.l(format!("cvt.u32.u64 {reg}, %t2;"));
        }
    }

    /// Writes the low `size` bytes of `val` (.b64, or .b32 when `val32`) to the frame.
    fn local_store(&mut self, slot: i64, size: Size, val: &str, val32: bool) {
        if !self.promote {
            let t = if val32 { "u32" } else { ty(size) };
            self.l(format!("st.local.{t} [bpf_stack+{slot}], {val};"));
            return;
        }
        let (s, bit, n) = (slot / 8, (slot % 8) * 8, size.bytes() * 8);
        let wide = if val32 {
            self.l(format!("cvt.u64.u32 %t2, {val};"));
            "%t2"
        } else {
            val
        };
        if n == 64 {
            self.l(format!("mov.b64 %s{s}, {wide};"));
        } else {
            self.l(format!("bfi.b64 %s{s}, {wide}, %s{s}, {bit}, {n};"));
        }
    }

    /// The state space and address register of an access through `base`: global memory
    /// (converted from the generic address) where the verifier proved it, else generic.
    /// The byte-wise fallback helpers take generic addresses, so they get `%r{base}`
    /// through `%t1` either way (a global address is a valid generic one on the GPU).
    fn address(&mut self, base: u8) -> (&'static str, String) {
        if self.proven(|h| &h.global) {
            self.l(format!("cvta.to.global.u64 %t0, %r{base};"));
            (".global", "%t0".to_string())
        } else {
            ("", format!("%r{base}"))
        }
    }

    /// A load into `val` (a .b64 register), zero- or sign-extended.
    #[allow(clippy::too_many_arguments)]
    fn load(
        &mut self,
        size: Size,
        signed: bool,
        base: u8,
        off: i16,
        fp: &[Fp; 11],
        frame: u32,
        val: &str,
    ) {
        let t = if signed {
            ty(size).replace('u', "s")
        } else {
            ty(size).to_string()
        };
        if let Some(slot) = folded(fp, base, off, size, frame) {
            self.local_load(val, false, slot, size, signed);
            return;
        }
        let (space, addr) = self.address(base);
        if size == Size::B || self.proven(|h| &h.aligned) {
            self.l(format!("ld{space}.{t} {val}, [{addr}+{off}];"));
            return;
        }
        let n = size.bytes();
        let done = self.alignment_test(
            base,
            off,
            n,
            &format!("ld{space}.{t} {val}, [{addr}+{off}]"),
        );
        let f = format!("bpf2ptx_ldu{n}");
        self.need.insert(f.clone());
        self.l("{");
        self.l(".param .b64 bpf_ua;");
        self.l("st.param.b64 [bpf_ua], %t1;");
        self.l(".param .b64 bpf_uv;");
        self.l(format!("call.uni (bpf_uv), {f}, (bpf_ua);"));
        self.l(format!("ld.param.b64 {val}, [bpf_uv];"));
        if signed {
            self.l(format!("bfe.s64 {val}, {val}, 0, {};", n * 8));
        }
        self.l("}");
        let _ = writeln!(self.out, "{done}:");
    }

    /// The run-time alignment test of an `n`-byte access at `%r{base} + off`: when aligned,
    /// `access` runs and control jumps to the returned label; otherwise the caller's
    /// byte-wise fallback (which finds the generic address in `%t1`) follows, then the label.
    fn alignment_test(&mut self, base: u8, off: i16, n: u32, access: &str) -> String {
        self.l(format!("add.u64 %t1, %r{base}, {off};"));
        self.l(format!("and.b64 %t2, %t1, {};", n - 1));
        self.l("setp.eq.u64 %p0, %t2, 0;");
        let done = self.fresh_label();
        self.l(format!("@%p0 {access};"));
        self.l(format!("@%p0 bra {done};"));
        done
    }

    fn store(&mut self, size: Size, base: u8, off: i16, fp: &[Fp; 11], frame: u32, val: &str) {
        let t = ty(size);
        if let Some(slot) = folded(fp, base, off, size, frame) {
            self.local_store(slot, size, val, false);
            return;
        }
        let (space, addr) = self.address(base);
        if size == Size::B || self.proven(|h| &h.aligned) {
            self.l(format!("st{space}.{t} [{addr}+{off}], {val};"));
            return;
        }
        let n = size.bytes();
        let done = self.alignment_test(
            base,
            off,
            n,
            &format!("st{space}.{t} [{addr}+{off}], {val}"),
        );
        let f = format!("bpf2ptx_stu{n}");
        self.need.insert(f.clone());
        self.l("{");
        self.l(".param .b64 bpf_ua;");
        self.l("st.param.b64 [bpf_ua], %t1;");
        self.l(".param .b64 bpf_uv;");
        self.l(format!("st.param.b64 [bpf_uv], {val};"));
        self.l(format!("call.uni {f}, (bpf_ua, bpf_uv);"));
        self.l("}");
        let _ = writeln!(self.out, "{done}:");
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic(
        &mut self,
        size: Size,
        op: AtomicOp,
        fetch: bool,
        base: u8,
        src: u8,
        off: i16,
        fp: &[Fp; 11],
        frame: u32,
    ) {
        // Atomics must be naturally aligned (BPF requires it too), so no byte-wise path.
        let slot = folded(fp, base, off, size, frame);
        let (space, addr) = match slot {
            None => (self.atomic_address(base, off), "%t1"),
            Some(_) => ("", ""),
        };
        let wide = size == Size::DW;
        // Operand registers: 64-bit use the BPF registers, 32-bit their low halves.
        let (v, old) = if wide {
            (format!("%r{src}"), "%t0".to_string())
        } else {
            self.l(format!("cvt.u32.u64 %w1, %r{src};"));
            ("%w1".to_string(), "%w0".to_string())
        };
        let (bt, ut) = if wide { ("b64", "u64") } else { ("b32", "u32") };
        let writeback = |w: &mut Self, reg: u8| {
            if wide {
                w.l(format!("mov.u64 %r{reg}, %t0;"));
            } else {
                w.l(format!("cvt.u64.u32 %r{reg}, %w0;"));
            }
        };
        // `.local` atomics do not exist in PTX; the frame is private to the thread, so a
        // plain read-modify-write is atomic there.
        if let Some(slot) = slot {
            self.local_load(&old, !wide, slot, size, false);
            let new = if wide { "%t3" } else { "%w2" };
            match op {
                AtomicOp::Add => self.l(format!("add.{ut} {new}, {old}, {v};")),
                AtomicOp::Or => self.l(format!("or.{bt} {new}, {old}, {v};")),
                AtomicOp::And => self.l(format!("and.{bt} {new}, {old}, {v};")),
                AtomicOp::Xor => self.l(format!("xor.{bt} {new}, {old}, {v};")),
                AtomicOp::Xchg => self.l(format!("mov.{bt} {new}, {v};")),
                AtomicOp::Cmpxchg => {
                    let r0 = if wide {
                        "%r0".to_string()
                    } else {
                        self.l("cvt.u32.u64 %w3, %r0;");
                        "%w3".to_string()
                    };
                    self.l(format!("setp.eq.{bt} %p1, {old}, {r0};"));
                    self.l(format!("selp.{bt} {new}, {v}, {old}, %p1;"));
                }
            }
            self.local_store(slot, size, new, !wide);
        } else {
            let (name, t) = match op {
                AtomicOp::Add => ("add", ut),
                AtomicOp::Or => ("or", bt),
                AtomicOp::And => ("and", bt),
                AtomicOp::Xor => ("xor", bt),
                AtomicOp::Xchg => ("exch", bt),
                AtomicOp::Cmpxchg => ("cas", bt),
            };
            if !fetch {
                if op == AtomicOp::Add {
                    let h = self.hints;
                    let c = h.and_then(|h| h.add_const.get(self.cur).copied().flatten());
                    let map = h.and_then(|h| h.atomic_map.get(self.cur).copied().flatten());
                    self.red_add(space, wide, &v, c, map);
                } else {
                    self.l(format!("red{space}.{name}.{t} [{addr}], {v};"));
                }
                return;
            }
            if op == AtomicOp::Cmpxchg {
                let r0 = if wide {
                    "%r0".to_string()
                } else {
                    self.l("cvt.u32.u64 %w3, %r0;");
                    "%w3".to_string()
                };
                self.l(format!("atom{space}.cas.{bt} {old}, [{addr}], {r0}, {v};"));
            } else {
                self.l(format!("atom{space}.{name}.{t} {old}, [{addr}], {v};"));
            }
        }
        if !fetch {
            return;
        }
        writeback(self, if op == AtomicOp::Cmpxchg { 0 } else { src });
    }

    /// Puts the address of an atomic on `%r{base} + off` outside the frame in `%t1`;
    /// returns the state space and scope the atomic takes (global where the verifier
    /// proved it, `.sys` when a map of the module is in host memory).
    fn atomic_address(&mut self, base: u8, off: i16) -> &'static str {
        let global = self.proven(|h| &h.global);
        if global {
            self.l(format!("cvta.to.global.u64 %t1, %r{base};"));
            self.l(format!("add.u64 %t1, %t1, {off};"));
        } else {
            self.l(format!("add.u64 %t1, %r{base}, {off};"));
        }
        match (self.sys, global) {
            (true, true) => ".sys.global",
            (true, false) => ".sys",
            (false, true) => ".global",
            (false, false) => "",
        }
    }

    /// `red.add [%t1], v` (64-bit when `wide`), v being the constant `c` on every path
    /// where that is known. Then the lanes that add to one address add once for the group
    /// ([`FuncWriter::aggregated_add`]), except into an array (`map`) whose lookups are
    /// inlined: ptxas sees that address and aggregates the warp's adds itself where it is
    /// uniform (cheaper than `match.any`); the address a runtime call returns (hash maps)
    /// it cannot.
    fn red_add(&mut self, space: &str, wide: bool, v: &str, c: Option<u64>, map: Option<u32>) {
        let array = map
            .and_then(|m| self.obj.maps.get(m as usize))
            .is_some_and(|m| m.is(MapKind::is_array_like) && m.key_size == 4);
        match c {
            Some(c) if !array => self.aggregated_add(space, wide, "%t1", c),
            _ => self.l(format!(
                "red{space}.add.{} [%t1], {v};",
                if wide { "u64" } else { "u32" }
            )),
        }
    }

    /// The store of a plain counter update the verifier fused ([`Hints::plain_add`]): one
    /// `red.add` of the addend at the store's address (map memory, aligned: no frame slot,
    /// no byte-wise path); its load and add emitted nothing. A register addend still holds
    /// its value here, as the add that would have overwritten it was dropped.
    fn plain_add(&mut self, size: Size, base: u8, off: i16, addend: Addend, map: Option<u32>) {
        let space = self.atomic_address(base, off);
        let wide = size == Size::DW;
        match addend {
            Addend::Const(c) => self.red_add(space, wide, &c.to_string(), Some(c), map),
            Addend::Reg(r) if wide => self.red_add(space, wide, &format!("%r{r}"), None, map),
            Addend::Reg(r) => {
                self.l(format!("cvt.u32.u64 %w1, %r{r};"));
                self.red_add(space, wide, "%w1", None, map);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{granularity_rejoin, Granularity, INLINE_RECORD_MAX, INLINE_RING_OUTPUT};
    use bpf2ptx_runtime::desc;

    /// The inlined ring output reads the descriptor only at the runtime's fields, by name:
    /// data, aux and aux2 (counters), drops and the bound, never at a literal offset.
    #[test]
    fn inline_ring_output_uses_the_descriptor_layout() {
        let mut seen = std::collections::BTreeSet::new();
        for part in INLINE_RING_OUTPUT.split("[@DESC@+").skip(1) {
            let off = &part[..part.find(']').expect("closing bracket")];
            let name = off
                .strip_prefix('@')
                .and_then(|o| o.strip_suffix('@'))
                .unwrap_or_else(|| panic!("literal descriptor offset {off}"));
            let filled = bpf2ptx_runtime::fill_abi(&format!("@{name}@"));
            let value: u64 = filled.parse().unwrap_or_else(|_| panic!("unknown {name}"));
            assert!(
                desc::FIELDS.iter().any(|f| f.0 == value),
                "{name} = {value}"
            );
            seen.insert(value);
        }
        let want = [desc::DATA, desc::AUX, desc::AUX2, desc::DROPS, desc::BOUND];
        assert_eq!(seen, want.into_iter().collect());
    }

    #[test]
    fn per_warp_sites_rejoin_with_a_warp_barrier_unless_the_leader_may_exit() {
        assert_eq!(
            granularity_rejoin(Granularity::Warp, "%w", false),
            "bar.warp.sync %w0;\n"
        );
        assert_eq!(
            granularity_rejoin(Granularity::Warp, "%w", true),
            "match.any.sync.b32 %w1, %w0, %w0;\n"
        );
        for g in [Granularity::Thread, Granularity::Block] {
            assert_eq!(granularity_rejoin(g, "%w", false), "");
        }
    }
    use bpf2ptx_runtime::ringbuf::record_size;

    /// The inlined ring output counts the records that fit as `mul.hi.u32(x, ceil(2^32 /
    /// t))` for a room `x <= 32 t` (at most 32 lanes): exact for every record size it is
    /// used with, every room up to 32 records.
    #[test]
    fn records_that_fit_by_multiplication_are_exact() {
        for size in 1..=INLINE_RECORD_MAX {
            let t = record_size(size);
            let magic = (1u64 << 32).div_ceil(t);
            assert!(magic <= u64::from(u32::MAX), "size {size}");
            for x in 0..=32 * t {
                assert_eq!((x * magic) >> 32, x / t, "size {size}, room {x}");
            }
        }
    }
}
