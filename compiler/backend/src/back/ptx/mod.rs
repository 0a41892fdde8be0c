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
//!
//! The verifier's facts (which accesses are global or aligned, constants, branches that
//! always go one way, which map a call names, plain counter updates) come in the
//! [`Verified`](bpf2ptx_verifier::Verified) that [`write_string`] and [`inline_body`]
//! take instead of an object: only the verifier makes one, so there is no way to lower a
//! program without them, or with facts of another program.
//!
//! The backend's code lives in files by responsibility: `module` (the module writer:
//! [`write_string`], [`inline_body`], map descriptors and storage), `func` (the function
//! writer and its lowering loop), `alu`, `mem` (loads, stores, frame slots), `atomics`,
//! `calls` (helpers, runtime and BPF-to-BPF calls), `maps` (inlined map lookups and
//! updates), `rings` (inlined ring output, printk), `frame` (the frame analysis),
//! `entry` (granularity and entry kernels) and `symbols` (PTX names).

mod alu;
mod atomics;
mod calls;
mod entry;
mod frame;
mod func;
pub mod fuse;
mod loops;
mod maps;
mod mem;
mod module;
mod rings;
mod snprintf;
mod symbols;
#[cfg(test)]
mod tests;

pub use entry::{granularity_rejoin, granularity_test, lanes_word, Granularity};
pub use frame::{frame_layouts, FrameLayout};
pub use module::{inline_body, write_string, InlineBody, INLINE_CTX_WORDS, INLINE_END};
pub use rings::{PRINTK_DESC, PRINTK_RECORD};
pub use symbols::{
    entry_symbol, loop_budget_symbol, map_addr_symbol, map_counter_symbol, map_counts_symbol,
    map_data_symbol, map_desc_symbol, map_ref_symbol, map_symbol, program_symbol,
};

use crate::program::{MapOrigin, Object};
use bpf2ptx_runtime::MapKind;
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
    /// `--loop-budget N`: verify with a budget of `N` iterations per invocation on the
    /// loops the verifier cannot bound otherwise (`bpf2ptx_verifier::Options::loop_budget`;
    /// the facts then name the loops, which the backend lowers with the budget).
    pub loop_budget: Option<u64>,
    /// Fuse probe bodies inlined at attach sites into their kernel ([`fuse`]): adds to
    /// maps only ever added to go into per-thread registers, added to the map at the
    /// thread's exits; a value an entry probe stores to its thread's own slot is forwarded
    /// to later loads of it. Only inlined site bodies use it (`bpf2ptx inject`, on unless
    /// `--no-fuse`); the module's own functions never change.
    pub fuse: bool,
    /// Per map: the host reads it while the kernel runs (`--map NAME=live`), so every
    /// update reaches the map where the program makes it: no fusion touches it. Missing
    /// entries mean "no".
    pub live: Vec<bool>,
    /// Every map may be bound by the host to storage outside the module, before the
    /// module's first launch (`bpf2ptx trace`, whose interposer binds the maps of every
    /// instrumented module to one instance per process and device; specs/abi.md,
    /// "Rebinding maps"). The code then finds every map's storage where the host can
    /// rebind it: an array's inlined lookup and a fusion flush read descriptor word 3
    /// instead of taking the module's storage as a constant address; a ring's descriptor
    /// (whose words 6 and 7 change with every reservation) and a writable global-data
    /// section are reached through a reference word the host may point elsewhere
    /// ([`map_ref_symbol`]). Off (`bpf2ptx inject`, `bpf2ptx run`), the module's own
    /// storage is used with no load on the probe's path.
    pub rebind_maps: bool,
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

/// Whether map `m` is reached through a reference word ([`map_ref_symbol`]) under
/// [`Options::rebind_maps`]: a ring, whose descriptor holds the ring's claim state
/// (drops and bound, words 6 and 7) that every module sharing the ring must share, and a
/// global-data section the programs may write (`.bss`, `.data`), which has no descriptor.
/// Read-only global data (`.rodata`) keeps its constant address: every module holds the
/// same bytes.
pub fn has_map_ref(m: &crate::program::Map) -> bool {
    if m.origin == MapOrigin::GlobalData {
        !m.read_only()
    } else {
        m.is(MapKind::is_ring)
    }
}

/// Whether map `k` of `obj` has address words ([`map_addr_symbol`]) under `opts`: an
/// array (one word: the storage) or a hash map (two: the storage and the counts block)
/// in device memory (not per-unit arrays: those grow and move, and their lookups read
/// words 3 and 4 together; not host-placed: the loader binds those after loading), when
/// the maps may be rebound.
pub fn has_map_addr(obj: &Object, opts: &Options, k: usize) -> bool {
    let Some(m) = obj.maps.get(k) else {
        return false;
    };
    opts.rebind_maps
        && m.origin != MapOrigin::GlobalData
        && (m.is(MapKind::is_array_like) || m.is(MapKind::is_hash))
        && !opts.host.get(k).copied().unwrap_or(false)
        && matches!(module::map_storage(m), Ok(Some(_)))
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
            granularity: Granularity::Thread,
            sharded: Vec::new(),
            host: Vec::new(),
            unsharded: Vec::new(),
            loop_budget: None,
            fuse: false,
            live: Vec::new(),
            rebind_maps: false,
        }
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
