//! The one table of PTX opcodes: for every PTX instruction, the number a probe sees for it
//! (`op` in `struct bpf2ptx_mem_ctx` and `struct bpf2ptx_insn_ctx`), its group, and what
//! it does to memory, which decides whether and how it is a `gpu/mem` attach point.
//!
//! Everything else reads this table: the memory sites ([`super::access`]), the opcode
//! prefixes `gpu/insn/K/OPCODE` accepts ([`Pattern`]), the `BPF2PTX_OP_*` and
//! `BPF2PTX_GROUP_*` constants of `runtime-ptx/include/bpf2ptx_helpers.h` and the coverage
//! table of specs/abi.md (both generated from it and checked by
//! `tests/tests/attach_points.rs`; `BLESS=1` rewrites them).
//!
//! A row names an opcode by its leading dot-separated components (`cp.async.bulk.tensor`);
//! an instruction belongs to the row with the longest such prefix of its opcode, so
//! `cp.async.bulk.tensor.2d.shared::cluster.global...` is `cp.async.bulk.tensor`, not
//! `cp.async`. Row numbers are stable: a compiled probe holds them as constants, so a row
//! keeps its number and new rows take new ones.

use super::ptx::Opcode;

/// A coarse class of instructions, for probes that count by kind
/// (`struct bpf2ptx_insn_ctx::group`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    /// Loads, stores and prefetches of one thread.
    Memory = 1,
    /// Read-modify-writes: `atom`, `red` and their asynchronous and multimem forms.
    Atomic = 2,
    /// Asynchronous copies: `cp.async`, the bulk and tensor (TMA) copies.
    AsyncCopy = 3,
    /// Warp-collective matrix loads and stores (`ldmatrix`, `stmatrix`, `wmma.load`).
    MatrixMemory = 4,
    /// Tensor-core matrix multiplies: `mma`, `wmma.mma`, `wgmma.mma_async`, `tcgen05.mma`.
    TensorCore = 5,
    /// Tensor memory (`tcgen05` other than its multiplies).
    TensorMemory = 6,
    /// Barriers, fences, memory barriers (`mbarrier`) and completion waits.
    Sync = 7,
    /// Warp-level data exchange and votes.
    Warp = 8,
    /// Branches, calls, returns and thread control.
    Control = 9,
    /// Integer, floating-point, logic and video arithmetic.
    Alu = 10,
    /// Moves, conversions and selects.
    Convert = 11,
    /// Textures and surfaces.
    Texture = 12,
    /// Address-space queries and conversions, stack, cache policies and the rest.
    Misc = 13,
}

impl Group {
    /// Every group, in number order.
    pub const ALL: [Group; 13] = [
        Group::Memory,
        Group::Atomic,
        Group::AsyncCopy,
        Group::MatrixMemory,
        Group::TensorCore,
        Group::TensorMemory,
        Group::Sync,
        Group::Warp,
        Group::Control,
        Group::Alu,
        Group::Convert,
        Group::Texture,
        Group::Misc,
    ];

    /// The number a probe sees (`BPF2PTX_GROUP_*`).
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The lower-case name (`tensor_core`), as in `BPF2PTX_GROUP_TENSOR_CORE`.
    pub fn name(self) -> &'static str {
        match self {
            Group::Memory => "memory",
            Group::Atomic => "atomic",
            Group::AsyncCopy => "async_copy",
            Group::MatrixMemory => "matrix_memory",
            Group::TensorCore => "tensor_core",
            Group::TensorMemory => "tensor_memory",
            Group::Sync => "sync",
            Group::Warp => "warp",
            Group::Control => "control",
            Group::Alu => "alu",
            Group::Convert => "convert",
            Group::Texture => "texture",
            Group::Misc => "misc",
        }
    }
}

/// How an opcode's instructions touch memory, which says how [`super::access`] reads
/// their operands for a `gpu/mem` site; `No` rows are not memory attach points (their
/// instructions are still `gpu/insn` sites).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mem {
    /// Not a memory attach point, and why.
    No(&'static str),
    /// `ld`, `ldu`: `d, [a]{, cache-policy}`.
    Load,
    /// `st`: `[a], b{, cache-policy}`.
    Store,
    /// `atom`: `d, [a], b{, c}{, cache-policy}`.
    Atom,
    /// `red`: `[a], b{, cache-policy}`.
    Red,
    /// `prefetch`, `prefetchu`: `[a]`; no data reaches the thread.
    Prefetch,
    /// `cp.async`: `[dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}`.
    CpAsync,
    /// `cp.async.bulk`, `cp.reduce.async.bulk`: `[dst], [src], size{, [mbar]}...`.
    Bulk,
    /// `cp.async.bulk.prefetch`: `[src], size{, cache-policy}`.
    BulkPrefetch,
    /// `cp.async.bulk.tensor`, `cp.reduce.async.bulk.tensor`: `[dst], [tensorMap,
    /// coords], [mbar]...` (to shared) or `[tensorMap, coords], [src]...` (to global).
    Tensor,
    /// `cp.async.bulk.prefetch.tensor`: `[tensorMap, coords]...`.
    TensorPrefetch,
    /// `ldmatrix`: `r, [p]`, one matrix row per participating lane.
    LdMatrix,
    /// `stmatrix`: `[p], r`.
    StMatrix,
    /// `wmma.load`: `r, [p]{, stride}`, a warp's fragment of one matrix.
    WmmaLoad,
    /// `wmma.store`: `[p], r{, stride}`.
    WmmaStore,
    /// `multimem.ld_reduce`: `d, [a]`.
    MultimemLoad,
    /// `multimem.st`: `[a], b`.
    MultimemStore,
    /// `multimem.red`: `[a], b`.
    MultimemRed,
    /// `red.async`: `[a], b{, [mbar]}`.
    RedAsync,
    /// `st.async`: `[a], b{, [mbar]}`.
    StAsync,
    /// `st.bulk`: `[a], size, initval` (zeroes `size` bytes).
    StBulk,
    /// `mbarrier.*` with an address: the 8-byte barrier object, and a transaction count
    /// where the form has one.
    Mbarrier,
    /// `tensormap.cp_fenceproxy`: `[dst], [src], size`.
    TensormapCopy,
}

/// One opcode of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpRow {
    /// The number a probe sees (`BPF2PTX_OP_*`); stable, never reused, never 0.
    pub id: u32,
    /// The opcode's leading components (`cp.async.bulk.tensor`).
    pub opcode: &'static str,
    /// Its group.
    pub group: Group,
    /// Its memory behaviour.
    pub mem: Mem,
}

impl OpRow {
    /// Whether the row's instructions are `gpu/mem` attach points.
    pub fn is_mem(&self) -> bool {
        !matches!(self.mem, Mem::No(_))
    }

    /// The C constant's name: `BPF2PTX_OP_CP_ASYNC_BULK_TENSOR`.
    pub fn constant(&self) -> String {
        format!(
            "BPF2PTX_OP_{}",
            self.opcode
                .replace("::", "_")
                .replace('.', "_")
                .to_ascii_uppercase()
        )
    }
}

const fn row(id: u32, opcode: &'static str, group: Group, mem: Mem) -> OpRow {
    OpRow {
        id,
        opcode,
        group,
        mem,
    }
}

use Group as G;

const ADDR_MATH: Mem = Mem::No("address arithmetic: no memory is accessed");
const REGS: Mem = Mem::No("registers only");
const NO_DATA: Mem = Mem::No("moves no data");
const TEX: Mem = Mem::No(
    "texture/surface access through a handle and coordinates, not an address (count it with gpu/insn)",
);
const TMEM: Mem = Mem::No("tensor memory (sm_100a): not an address space a probe can read");

/// Every PTX opcode, by longest matching prefix. Row numbers are stable (see the module
/// doc); the order is the documents' order.
pub const OPCODES: &[OpRow] = &[
    // Memory.
    row(1, "ld", G::Memory, Mem::Load),
    row(2, "ldu", G::Memory, Mem::Load),
    row(3, "st", G::Memory, Mem::Store),
    row(4, "st.async", G::Memory, Mem::StAsync),
    row(5, "st.bulk", G::Memory, Mem::StBulk),
    row(6, "prefetch", G::Memory, Mem::Prefetch),
    row(7, "prefetchu", G::Memory, Mem::Prefetch),
    row(8, "multimem.ld_reduce", G::Memory, Mem::MultimemLoad),
    row(9, "multimem.st", G::Memory, Mem::MultimemStore),
    row(
        10,
        "multimem.cp",
        G::AsyncCopy,
        Mem::No("multimem bulk copies (PTX 9.0): not yet an attach point"),
    ),
    row(
        11,
        "discard",
        G::Memory,
        Mem::No("invalidates cache lines: moves no data"),
    ),
    row(
        12,
        "applypriority",
        G::Memory,
        Mem::No("changes a cache line's eviction priority: moves no data"),
    ),
    row(13, "createpolicy", G::Misc, REGS),
    // Atomics.
    row(20, "atom", G::Atomic, Mem::Atom),
    row(21, "red", G::Atomic, Mem::Red),
    row(22, "red.async", G::Atomic, Mem::RedAsync),
    row(23, "multimem.red", G::Atomic, Mem::MultimemRed),
    // Asynchronous copies.
    row(30, "cp.async", G::AsyncCopy, Mem::CpAsync),
    row(31, "cp.async.commit_group", G::Sync, NO_DATA),
    row(32, "cp.async.wait_group", G::Sync, NO_DATA),
    row(33, "cp.async.wait_all", G::Sync, NO_DATA),
    row(34, "cp.async.mbarrier.arrive", G::Sync, NO_DATA),
    row(35, "cp.async.bulk", G::AsyncCopy, Mem::Bulk),
    row(36, "cp.async.bulk.commit_group", G::Sync, NO_DATA),
    row(37, "cp.async.bulk.wait_group", G::Sync, NO_DATA),
    row(38, "cp.async.bulk.prefetch", G::AsyncCopy, Mem::BulkPrefetch),
    row(39, "cp.async.bulk.tensor", G::AsyncCopy, Mem::Tensor),
    row(
        40,
        "cp.async.bulk.prefetch.tensor",
        G::AsyncCopy,
        Mem::TensorPrefetch,
    ),
    row(41, "cp.reduce.async.bulk", G::AsyncCopy, Mem::Bulk),
    row(42, "cp.reduce.async.bulk.tensor", G::AsyncCopy, Mem::Tensor),
    row(43, "tensormap.cp_fenceproxy", G::AsyncCopy, Mem::TensormapCopy),
    row(
        44,
        "tensormap.replace",
        G::Misc,
        Mem::No("rewrites one field of a tensor map in place: not yet an attach point"),
    ),
    // Matrix loads and stores.
    row(50, "ldmatrix", G::MatrixMemory, Mem::LdMatrix),
    row(51, "stmatrix", G::MatrixMemory, Mem::StMatrix),
    row(52, "wmma.load", G::MatrixMemory, Mem::WmmaLoad),
    row(53, "wmma.store", G::MatrixMemory, Mem::WmmaStore),
    row(54, "movmatrix", G::Warp, REGS),
    // Tensor cores.
    row(60, "mma", G::TensorCore, REGS),
    row(61, "wmma.mma", G::TensorCore, REGS),
    row(
        62,
        "wgmma.mma_async",
        G::TensorCore,
        Mem::No("reads shared memory through matrix descriptors, not addresses (count it with gpu/insn)"),
    ),
    row(63, "wgmma.fence", G::Sync, NO_DATA),
    row(64, "wgmma.commit_group", G::Sync, NO_DATA),
    row(65, "wgmma.wait_group", G::Sync, NO_DATA),
    row(
        66,
        "tcgen05.mma",
        G::TensorCore,
        Mem::No("reads shared and tensor memory through descriptors (count it with gpu/insn)"),
    ),
    row(67, "tcgen05", G::TensorMemory, TMEM),
    // Synchronisation.
    row(70, "bar", G::Sync, NO_DATA),
    row(71, "barrier", G::Sync, NO_DATA),
    row(72, "membar", G::Sync, NO_DATA),
    row(73, "fence", G::Sync, NO_DATA),
    row(74, "mbarrier", G::Sync, Mem::Mbarrier),
    row(
        75,
        "mbarrier.pending_count",
        G::Sync,
        Mem::No("reads a barrier state held in a register"),
    ),
    row(76, "griddepcontrol", G::Sync, NO_DATA),
    // Warp.
    row(80, "shfl", G::Warp, REGS),
    row(81, "vote", G::Warp, REGS),
    row(82, "match", G::Warp, REGS),
    row(83, "redux", G::Warp, REGS),
    row(84, "activemask", G::Warp, REGS),
    row(85, "elect", G::Warp, REGS),
    // Control.
    row(90, "bra", G::Control, NO_DATA),
    row(91, "brx", G::Control, NO_DATA),
    row(
        92,
        "call",
        G::Control,
        Mem::No("the callee's own accesses are not instrumented (only kernels are)"),
    ),
    row(93, "ret", G::Control, NO_DATA),
    row(94, "exit", G::Control, NO_DATA),
    row(95, "trap", G::Control, NO_DATA),
    row(96, "brkpt", G::Control, NO_DATA),
    row(97, "nanosleep", G::Control, NO_DATA),
    row(98, "pmevent", G::Control, NO_DATA),
    row(99, "setmaxnreg", G::Misc, REGS),
    row(100, "clusterlaunchcontrol", G::Misc, NO_DATA),
    // Moves and conversions.
    row(110, "mov", G::Convert, REGS),
    row(111, "cvt", G::Convert, REGS),
    row(112, "selp", G::Convert, REGS),
    row(113, "slct", G::Convert, REGS),
    row(114, "prmt", G::Convert, REGS),
    row(115, "cvta", G::Convert, ADDR_MATH),
    row(116, "isspacep", G::Misc, ADDR_MATH),
    row(117, "mapa", G::Misc, ADDR_MATH),
    row(118, "getctarank", G::Misc, ADDR_MATH),
    row(
        119,
        "alloca",
        G::Misc,
        Mem::No("reserves stack: moves no data"),
    ),
    row(120, "stacksave", G::Misc, REGS),
    row(121, "stackrestore", G::Misc, REGS),
    row(122, "istypep", G::Misc, REGS),
    // Textures and surfaces.
    row(130, "tex", G::Texture, TEX),
    row(131, "tld4", G::Texture, TEX),
    row(132, "txq", G::Texture, TEX),
    row(133, "suld", G::Texture, TEX),
    row(134, "sust", G::Texture, TEX),
    row(135, "sured", G::Texture, TEX),
    row(136, "suq", G::Texture, TEX),
    // Arithmetic.
    row(140, "add", G::Alu, REGS),
    row(141, "sub", G::Alu, REGS),
    row(142, "mul", G::Alu, REGS),
    row(143, "mad", G::Alu, REGS),
    row(144, "mul24", G::Alu, REGS),
    row(145, "mad24", G::Alu, REGS),
    row(146, "addc", G::Alu, REGS),
    row(147, "subc", G::Alu, REGS),
    row(148, "madc", G::Alu, REGS),
    row(149, "sad", G::Alu, REGS),
    row(150, "div", G::Alu, REGS),
    row(151, "rem", G::Alu, REGS),
    row(152, "abs", G::Alu, REGS),
    row(153, "neg", G::Alu, REGS),
    row(154, "min", G::Alu, REGS),
    row(155, "max", G::Alu, REGS),
    row(156, "popc", G::Alu, REGS),
    row(157, "clz", G::Alu, REGS),
    row(158, "bfind", G::Alu, REGS),
    row(159, "fns", G::Alu, REGS),
    row(160, "brev", G::Alu, REGS),
    row(161, "bfe", G::Alu, REGS),
    row(162, "bfi", G::Alu, REGS),
    row(163, "bmsk", G::Alu, REGS),
    row(164, "szext", G::Alu, REGS),
    row(165, "dp4a", G::Alu, REGS),
    row(166, "dp2a", G::Alu, REGS),
    row(167, "fma", G::Alu, REGS),
    row(168, "rcp", G::Alu, REGS),
    row(169, "sqrt", G::Alu, REGS),
    row(170, "rsqrt", G::Alu, REGS),
    row(171, "sin", G::Alu, REGS),
    row(172, "cos", G::Alu, REGS),
    row(173, "lg2", G::Alu, REGS),
    row(174, "ex2", G::Alu, REGS),
    row(175, "tanh", G::Alu, REGS),
    row(176, "copysign", G::Alu, REGS),
    row(177, "testp", G::Alu, REGS),
    row(178, "set", G::Alu, REGS),
    row(179, "setp", G::Alu, REGS),
    row(180, "and", G::Alu, REGS),
    row(181, "or", G::Alu, REGS),
    row(182, "xor", G::Alu, REGS),
    row(183, "not", G::Alu, REGS),
    row(184, "cnot", G::Alu, REGS),
    row(185, "lop3", G::Alu, REGS),
    row(186, "shf", G::Alu, REGS),
    row(187, "shl", G::Alu, REGS),
    row(188, "shr", G::Alu, REGS),
    row(189, "vadd", G::Alu, REGS),
    row(190, "vsub", G::Alu, REGS),
    row(191, "vabsdiff", G::Alu, REGS),
    row(192, "vmin", G::Alu, REGS),
    row(193, "vmax", G::Alu, REGS),
    row(194, "vshl", G::Alu, REGS),
    row(195, "vshr", G::Alu, REGS),
    row(196, "vmad", G::Alu, REGS),
    row(197, "vset", G::Alu, REGS),
    row(198, "vadd2", G::Alu, REGS),
    row(199, "vsub2", G::Alu, REGS),
    row(200, "vavrg2", G::Alu, REGS),
    row(201, "vabsdiff2", G::Alu, REGS),
    row(202, "vmin2", G::Alu, REGS),
    row(203, "vmax2", G::Alu, REGS),
    row(204, "vset2", G::Alu, REGS),
    row(205, "vadd4", G::Alu, REGS),
    row(206, "vsub4", G::Alu, REGS),
    row(207, "vavrg4", G::Alu, REGS),
    row(208, "vabsdiff4", G::Alu, REGS),
    row(209, "vmin4", G::Alu, REGS),
    row(210, "vmax4", G::Alu, REGS),
    row(211, "vset4", G::Alu, REGS),
];

impl Mem {
    /// What a `gpu/mem` site of this kind is (or why there is none), for the coverage
    /// table of specs/abi.md ([`coverage_table`]).
    pub fn summary(self) -> &'static str {
        match self {
            Mem::No(why) => why,
            Mem::Load => "load: `d, [a]`",
            Mem::Store => "store: `[a], b`",
            Mem::Atom => "atomic: `d, [a], b`",
            Mem::Red => "reduction: `[a], b`",
            Mem::Prefetch => "prefetch: `[a]`, size 0, no load/store bits",
            Mem::CpAsync => "copy global to shared: addr = src, addr2 = dst, size = src-size (0 when ignore-src), size2 = cp-size",
            Mem::Bulk => "bulk copy: addr = srcMem, addr2 = dstMem, size = size2 = size",
            Mem::BulkPrefetch => "bulk prefetch to L2: addr = srcMem, size",
            Mem::Tensor => "tensor copy: addr = tensor map, addr2 = shared memory, coordinates; size 0 (the box)",
            Mem::TensorPrefetch => "tensor prefetch to L2: addr = tensor map, coordinates",
            Mem::LdMatrix => "matrix load: addr = the lane's row, size 16 for lanes that supply a row",
            Mem::StMatrix => "matrix store: addr = the lane's row, size 16 for lanes that supply a row",
            Mem::WmmaLoad => "fragment load: addr = the matrix, size = its bytes / 32",
            Mem::WmmaStore => "fragment store: addr = the matrix, size = its bytes / 32",
            Mem::MultimemLoad => "multimem load-reduce: `d, [a]`",
            Mem::MultimemStore => "multimem store: `[a], b`",
            Mem::MultimemRed => "multimem reduction: `[a], b`",
            Mem::RedAsync => "asynchronous reduction: `[a], b`, addr2 = mbarrier",
            Mem::StAsync => "asynchronous store: `[a], b`, addr2 = mbarrier",
            Mem::StBulk => "bulk zeroing store: `[a], size`",
            Mem::Mbarrier => "the 8-byte barrier: size 8, size2 = transaction bytes",
            Mem::TensormapCopy => "tensor-map copy: addr = src, addr2 = dst, size",
        }
    }
}

/// The coverage table of specs/abi.md ("Attach points by instruction"): every opcode of
/// [`OPCODES`], its number and group, and whether it is a `gpu/mem` attach point (every
/// instruction is a `gpu/insn` one).
pub fn coverage_table() -> String {
    let mut s = String::from(
        "| opcode | op | group | gpu/mem | memory site, or why not |\n|---|---|---|---|---|\n",
    );
    for r in OPCODES {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            r.opcode,
            r.id,
            r.group.name(),
            if r.is_mem() { "yes" } else { "no" },
            r.mem.summary()
        ));
    }
    s
}

/// Whether `prefix`'s components are the first components of the opcode `base.m1.m2...`.
fn starts_with(opcode: &Opcode, prefix: &str) -> bool {
    let mut parts = prefix.split('.');
    if parts.next() != Some(opcode.base.as_str()) {
        return false;
    }
    let mut mods = opcode.modifiers.iter();
    parts.all(|p| mods.next().is_some_and(|m| m == p))
}

/// The row of an instruction's opcode: the one whose opcode is the longest prefix of it;
/// `None` for an opcode PTX does not have (the instruction is then nobody's site but a
/// `gpu/insn` pattern's that names it).
pub fn classify(opcode: &Opcode) -> Option<&'static OpRow> {
    OPCODES
        .iter()
        .filter(|r| starts_with(opcode, r.opcode))
        .max_by_key(|r| r.opcode.split('.').count())
}

/// The OPCODE of a `gpu/insn/KERNEL/OPCODE` attach point: a PTX opcode prefix of one or
/// more dot-separated components (`wgmma`, `wgmma.mma_async`, `bar.sync`). It matches an
/// instruction whose opcode starts with the same components, so `mma` matches
/// `mma.sync.aligned.m16n8k16...` and `mma.sp...` but not `wgmma...`, and `bar` matches
/// `bar.sync` and `bar.warp.sync` but not `barrier.sync`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// The pattern of `text`, when its first component is a PTX opcode of the table and
    /// every component is a plain modifier (letters, digits, `_`, `::`); `None` otherwise,
    /// so a misspelt opcode is an error rather than a probe that silently never runs.
    pub fn parse(text: &str) -> Option<Pattern> {
        let ok = |c: &str| {
            !c.is_empty()
                && c.split("::").all(|p| {
                    !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                })
        };
        if !text.split('.').all(ok) {
            return None;
        }
        let base = text.split('.').next()?;
        OPCODES
            .iter()
            .any(|r| r.opcode.split('.').next() == Some(base))
            .then(|| Pattern(text.to_string()))
    }

    /// Whether the pattern names `opcode`'s instructions.
    pub fn matches(&self, opcode: &Opcode) -> bool {
        starts_with(opcode, &self.0)
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn op(text: &str) -> Opcode {
        let mut parts = text.split('.');
        Opcode {
            base: parts.next().unwrap().to_string(),
            modifiers: parts.map(str::to_string).collect(),
        }
    }

    #[test]
    fn rows_are_unique_and_nonzero() {
        let mut ids = HashSet::new();
        let mut names = HashSet::new();
        for r in OPCODES {
            assert!(r.id != 0, "{}", r.opcode);
            assert!(ids.insert(r.id), "id {} twice", r.id);
            assert!(names.insert(r.opcode), "{} twice", r.opcode);
            assert!(names.len() == ids.len());
        }
    }

    #[test]
    fn longest_prefix_wins() {
        let cases = [
            ("ld.global.nc.v4.f32", "ld"),
            ("cp.async.cg.shared.global", "cp.async"),
            ("cp.async.commit_group", "cp.async.commit_group"),
            (
                "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
                "cp.async.bulk.tensor",
            ),
            (
                "cp.async.bulk.prefetch.tensor.2d.L2.global",
                "cp.async.bulk.prefetch.tensor",
            ),
            ("cp.async.bulk.prefetch.L2.global", "cp.async.bulk.prefetch"),
            (
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                "cp.async.bulk",
            ),
            ("cp.async.bulk.wait_group.read", "cp.async.bulk.wait_group"),
            (
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16",
                "wgmma.mma_async",
            ),
            ("wgmma.fence.sync.aligned", "wgmma.fence"),
            ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma"),
            ("bar.warp.sync", "bar"),
            ("barrier.cluster.arrive", "barrier"),
            (
                "red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32",
                "red.async",
            ),
            ("red.global.add.f32", "red"),
            (
                "st.async.shared::cluster.mbarrier::complete_tx::bytes.b32",
                "st.async",
            ),
            ("mbarrier.try_wait.parity.shared::cta.b64", "mbarrier"),
            ("tcgen05.mma.cta_group::1.kind::f16", "tcgen05.mma"),
            ("tcgen05.ld.sync.aligned.32x32b.x1.b32", "tcgen05"),
        ];
        for (text, want) in cases {
            assert_eq!(classify(&op(text)).map(|r| r.opcode), Some(want), "{text}");
        }
        assert_eq!(classify(&op("frobnicate.u32")), None);
    }

    #[test]
    fn patterns() {
        let p = Pattern::parse("mma").unwrap();
        assert!(p.matches(&op("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")));
        assert!(!p.matches(&op("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16")));
        let p = Pattern::parse("wgmma.mma_async").unwrap();
        assert!(p.matches(&op("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16")));
        assert!(!p.matches(&op("wgmma.fence.sync.aligned")));
        assert!(Pattern::parse("bar").unwrap().matches(&op("bar.warp.sync")));
        assert!(!Pattern::parse("bar").unwrap().matches(&op("barrier.sync")));
        assert!(Pattern::parse("cp.async.bulk.shared::cluster").is_some());
        for bad in [
            "",
            "wgmmma",
            ".mma",
            "mma.",
            "mma..sync",
            "mma sync",
            "*",
            "ld.{x}",
            "a::",
        ] {
            assert_eq!(Pattern::parse(bad), None, "{bad:?}");
        }
    }
}
