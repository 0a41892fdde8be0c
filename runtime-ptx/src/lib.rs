//! The bpf2ptx device runtime: the catalogue of helpers a probe may call.
//!
//! One table, [`HELPERS`], says for every helper its id, name, argument and return types
//! and its GPU meaning. The verifier checks calls against the prototypes (which memory a
//! helper reads or writes, how large, and what it returns); the backend lowers the helpers
//! it has bodies for and rejects the rest by name. Ids are the Linux ones where the meaning
//! carries over, and bpftime's (501-511) for the GPU helpers, so existing probes build
//! unchanged. `include/bpf2ptx_helpers.h` declares the GPU helpers for probe authors.
#![deny(missing_docs)]

pub mod desc;
mod flatten;
pub mod map_kind;
pub mod maps;
pub mod printk;
pub mod ringbuf;
pub mod snprintf;

pub use map_kind::MapKind;

/// The text of `include/bpf2ptx_helpers.h`, the header probe authors include: compiled
/// into whatever links this crate so that `bpf2ptx build` (and every command given a C
/// source) can hand clang the header that matches the helper ids and context layouts of
/// this very build, with no install step and no `-I` for the user to get right.
pub const HELPERS_H: &str = include_str!("../include/bpf2ptx_helpers.h");

use std::borrow::Cow;

/// The memory scope of the runtime's atomics and memory orderings.
///
/// The PTX texts of [`maps`] and [`ringbuf`] are written at `.gpu` scope: every party that
/// synchronises with them (other threads of the kernel, and the host after the kernel
/// ends) is covered. A map in host-pinned memory that the host reads *while* the kernel
/// runs needs `.sys` scope: [`maps::functions_at`] makes every atomic and ordered access
/// `.sys` (the fences that order GPU threads among themselves stay `.gpu`). A ring keeps its counters in device memory in both placements and only its
/// records in host memory, so [`ringbuf::functions_at`] makes only the record side `.sys`
/// (a record's release store then orders the probe's writes for a CPU reader too); see
/// "Placement" in [`ringbuf`]. The placement is known when the module is compiled, so the
/// scope is chosen then (specs/abi.md, "Maps (device runtime)").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Scope {
    /// `.gpu`: the device and, after the kernel, the host (the default).
    #[default]
    Gpu,
    /// `.sys`: also a host that reads mapped memory while the kernel runs.
    Sys,
}

impl Scope {
    /// The PTX scope qualifier, with its dot.
    pub fn qualifier(self) -> &'static str {
        match self {
            Scope::Gpu => ".gpu",
            Scope::Sys => ".sys",
        }
    }

    /// `text` (written at `.gpu` scope) at this scope: every `.gpu.` qualifier of an
    /// instruction (`atom.relaxed.gpu.cas`, `ld.acquire.gpu.u64`, ...) becomes `.sys.`.
    fn apply(self, text: &str) -> Cow<'_, str> {
        match self {
            Scope::Gpu => Cow::Borrowed(text),
            Scope::Sys => Cow::Owned(text.replace(".gpu.", ".sys.")),
        }
    }
}

/// The ABI facts the hand-written PTX (`src/ptx/*.ptx`) names rather than writes: each
/// `@DESC_*@` placeholder is a descriptor word's byte offset ([`desc`]), each `@MAP_*@` a
/// map type id ([`MapKind`], its variant's name in upper snake case). The templates hold
/// no literal offset or id of their own (a test checks it), so these constants are the
/// one home of both.
pub fn abi_placeholders() -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = [
        ("DESC_MAP_FLAGS", desc::MAP_FLAGS),
        ("DESC_KEY_SIZE", desc::KEY_SIZE),
        ("DESC_VALUE_SIZE", desc::VALUE_SIZE),
        ("DESC_MAX_ENTRIES", desc::MAX_ENTRIES),
        ("DESC_VALUE_STRIDE", desc::VALUE_STRIDE),
        ("DESC_DATA", desc::DATA),
        ("DESC_AUX", desc::AUX),
        ("DESC_AUX2", desc::AUX2),
        ("DESC_DROPS", desc::DROPS),
        ("DESC_BOUND", desc::BOUND),
    ]
    .iter()
    .map(|(n, o)| (n.to_string(), *o))
    .collect();
    for (kind, _) in MapKind::ALL {
        let camel = format!("{kind:?}");
        let mut name = String::from("MAP_");
        for (i, c) in camel.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                name.push('_');
            }
            name.push(c.to_ascii_uppercase());
        }
        v.push((name, u64::from(kind.id())));
    }
    v
}

/// `text` with every ABI placeholder ([`abi_placeholders`]) replaced by its value: for
/// hand-written PTX outside this crate too (the backend's inlined ring output).
pub fn fill_abi(text: &str) -> String {
    abi_placeholders()
        .iter()
        .fold(text.to_string(), |t, (name, value)| {
            t.replace(&format!("@{name}@"), &value.to_string())
        })
}

/// PTX definition of `bpf2ptx_copy(dst, src, len)`, the one memory copy of the runtime: the
/// map functions copy keys and values with it and the ring functions records. A module that
/// includes [`maps::functions`] or [`ringbuf::functions`] includes this text once, before
/// them. It has no atomics or orderings, so it is the same at every [`Scope`].
pub const COPY_FUNCTION: &str = include_str!("ptx/copy.ptx");

/// How a helper accesses memory it is given a pointer to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The helper reads the bytes: they must be initialised.
    Read,
    /// The helper writes the bytes: they may be uninitialised before, are initialised after.
    Write,
}

/// The map kinds a helper's map argument takes ([`Arg::Map`]), each a [`MapKind`]
/// predicate: the column of [`HELPERS`] the verifier checks a map argument against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapClass {
    /// Maps with keys and values: lookup, update, delete ([`MapKind::is_key_value`]).
    KeyValue,
    /// What `perf_event_output` writes to ([`MapKind::takes_perf_event_output`]).
    PerfEventOutput,
    /// Rings: the ringbuf helpers ([`MapKind::takes_ringbuf_helpers`]).
    Ringbuf,
}

impl MapClass {
    /// The predicate: whether a map of kind `k` is in the class.
    pub fn predicate(self) -> fn(MapKind) -> bool {
        match self {
            MapClass::KeyValue => MapKind::is_key_value,
            MapClass::PerfEventOutput => MapKind::takes_perf_event_output,
            MapClass::Ringbuf => MapKind::takes_ringbuf_helpers,
        }
    }
}

/// The type of one helper argument (r1..r5 in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// Any initialised value.
    Anything,
    /// An argument the helper uses only sometimes (a `trace_printk` argument beyond what
    /// its format names; Linux's ARG_DONTCARE): it may be unset, and is not checked.
    Optional,
    /// A map (an `ld_imm64` map reference) of a kind in the class.
    Map(MapClass),
    /// A pointer to the map's `key_size` initialised bytes (stack or map value).
    MapKey,
    /// A pointer to the map's `value_size` initialised bytes (stack or map value).
    MapValue,
    /// A pointer to memory whose size is the argument `size_arg` (0-based register index
    /// among the arguments, so 1 means r2).
    Mem {
        /// Which argument holds the size.
        size_arg: u8,
        /// Read or write.
        access: Access,
    },
    /// The size of a [`Arg::Mem`] argument: a scalar with a known upper bound; `zero_ok`
    /// says whether 0 is allowed.
    Size {
        /// Whether a size of 0 is legal.
        zero_ok: bool,
    },
    /// A pointer to `size` bytes the helper accesses.
    FixedMem {
        /// Bytes.
        size: u32,
        /// Read or write.
        access: Access,
    },
    /// The program's context pointer (r1 at entry).
    Ctx,
    /// A context argument the GPU lowering never reads (`perf_event_output`'s first): the
    /// context pointer, or any scalar (bpftime's probes pass NULL). No value of it can
    /// fault, since no instruction of the lowering touches it (specs/verifier.md).
    CtxOrScalar,
    /// The size of a [`Arg::Mem`] argument that holds u64 words (`trace_vprintk`'s data): a
    /// known constant, a multiple of 8, at most `8 * max_words` (0 allowed).
    WordsSize {
        /// The most words.
        max_words: u8,
    },
    /// A pointer returned by `ringbuf_reserve` (not yet submitted or discarded).
    RingbufRecord,
    /// A pointer to a NUL-terminated string in read-only data.
    ConstStr,
    /// `bpf_loop`'s `nr_loops`: a number (its low 32 bits count), which bounds the
    /// callback's index and the loop's cost, so the verifier must never merge paths that
    /// pass different counts.
    LoopCount,
    /// `bpf_loop`'s callback: a function address (`ld_imm64` with `src` 4, a
    /// `BPF_PSEUDO_FUNC`) naming a subprogram of the program, the same one on every path.
    Callback,
    /// `bpf_loop`'s callback context: passed to the callback as its r2 unchanged (a
    /// pointer into a caller's stack, or any number; never read by the loop itself).
    CallbackCtx,
    /// A flags argument that must be the constant 0 (Linux returns `-EINVAL` otherwise;
    /// bpf2ptx rejects the program instead, so the GPU never needs the error path).
    ZeroFlags,
}

/// What a helper returns in r0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ret {
    /// A scalar.
    Integer,
    /// Nothing useful: r0 is unknown and must not be read.
    Void,
    /// A pointer to the map's value (of the map in argument 1), or NULL.
    MapValueOrNull,
    /// A pointer to a ringbuf record of the size in argument 2 (a constant), or NULL.
    RingbufRecordOrNull,
    /// The helper does not return: the probe's thread stops there.
    NoReturn,
    /// floor(log2(r1)), 0 for r1 = 0: a scalar in 0..=63, the constant when r1 is one.
    /// The verifier knows it so that a log2 bucket of a site's constant (a memory
    /// access's size) stays a constant for the backend's fusion, as the shift cascade
    /// it replaces did.
    Log2,
}

/// One helper.
#[derive(Clone, Copy, Debug)]
pub struct Helper {
    /// The id in `call imm`.
    pub id: i32,
    /// The name (without `bpf_`).
    pub name: &'static str,
    /// Argument types, r1 first.
    pub args: &'static [Arg],
    /// Return type.
    pub ret: Ret,
    /// What the helper does on the GPU.
    pub gpu: &'static str,
    /// How the backend lowers a call of it.
    pub lowering: Lowering,
}

/// How the backend lowers a helper call: the column of [`HELPERS`] the backend dispatches
/// on, so that no list of helper ids lives anywhere else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lowering {
    /// PTX written at the call (special registers, fences, ids): no runtime call.
    Inline,
    /// A call of the map function `runtime` (`bpf2ptx_map_*`) with r1..r`args`.
    Map {
        /// The runtime's function.
        runtime: &'static str,
        /// How many of r1-r5 it takes.
        args: u8,
    },
    /// A call of the ring function `runtime` (`bpf2ptx_ringbuf_*`) with `regs` (BPF
    /// registers as PTX registers, or immediates), in order; `returns`: r0 gets its
    /// result.
    Ring {
        /// The runtime's function.
        runtime: &'static str,
        /// Its arguments, in order.
        regs: &'static [&'static str],
        /// Whether it returns a value into r0.
        returns: bool,
    },
    /// A formatted record in the printk ring (`puts`: the string alone; `vargs`: the
    /// arguments from an array, `trace_vprintk`).
    Printk {
        /// `bpf_puts` (501): no arguments after the string.
        puts: bool,
        /// `trace_vprintk` (177): up to [`printk::MAX_ARGS`] arguments copied from memory.
        vargs: bool,
    },
    /// `bpf_loop`: a PTX loop in the calling function that calls the callback's `.func`
    /// with (index, ctx) up to `nr_loops` times (specs/verifier.md, "Loops").
    Loop,
    /// `bpf_snprintf`: the constant format parsed at compile time ([`snprintf::parse`]),
    /// each piece a literal store or a call of a [`snprintf::FUNCTIONS`] routine.
    Snprintf,
}

use Access::{Read, Write};
use Arg::*;

/// The helper catalogue.
pub static HELPERS: &[Helper] = &[
    Helper {
        id: 1,
        name: "map_lookup_elem",
        args: &[Map(MapClass::KeyValue), MapKey],
        ret: Ret::MapValueOrNull,
        gpu: "a pointer to the value for the key, or NULL; in device memory, no host round trip",
        lowering: Lowering::Map {
            runtime: "bpf2ptx_map_lookup_elem",
            args: 2,
        },
    },
    Helper {
        id: 2,
        name: "map_update_elem",
        args: &[Map(MapClass::KeyValue), MapKey, MapValue, Anything],
        ret: Ret::Integer,
        gpu: "insert or replace (flags BPF_ANY, BPF_NOEXIST, BPF_EXIST); 0 or a negative errno",
        lowering: Lowering::Map {
            runtime: "bpf2ptx_map_update_elem",
            args: 4,
        },
    },
    Helper {
        id: 3,
        name: "map_delete_elem",
        args: &[Map(MapClass::KeyValue), MapKey],
        ret: Ret::Integer,
        gpu: "delete the key; 0 or -ENOENT",
        lowering: Lowering::Map {
            runtime: "bpf2ptx_map_delete_elem",
            args: 2,
        },
    },
    Helper {
        id: 5,
        name: "ktime_get_ns",
        args: &[],
        ret: Ret::Integer,
        gpu: "%globaltimer: nanoseconds of the GPU's global timer",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 6,
        name: "trace_printk",
        args: &[
            Mem {
                size_arg: 1,
                access: Read,
            },
            Size { zero_ok: false },
            Optional,
            Optional,
            Optional,
        ],
        ret: Ret::Integer,
        gpu: "a ringbuf record (format address, up to 3 arguments) that the host formats",
        lowering: Lowering::Printk {
            puts: false,
            vargs: false,
        },
    },
    Helper {
        id: 8,
        name: "get_smp_processor_id",
        args: &[],
        ret: Ret::Integer,
        gpu: "%smid: the SM the thread runs on",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 14,
        name: "get_current_pid_tgid",
        args: &[],
        ret: Ret::Integer,
        gpu: "(block linear index << 32) | thread linear index within the block",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 25,
        name: "perf_event_output",
        args: &[
            CtxOrScalar,
            Map(MapClass::PerfEventOutput),
            Anything,
            Mem {
                size_arg: 4,
                access: Read,
            },
            Size { zero_ok: true },
        ],
        ret: Ret::Integer,
        gpu: "append a record to the map's GPU ring; a full ring drops and counts",
        // perf_event_output(ctx, map, flags, data, size): the map's GPU ring gets the
        // record; its flags (a CPU index) have no GPU meaning, nor has its context (r1 is
        // not among the regs, and the inlined form reads only the map and r4/r5).
        lowering: Lowering::Ring {
            runtime: "bpf2ptx_ringbuf_output",
            regs: &["%r2", "%r4", "%r5", "0"],
            returns: true,
        },
    },
    Helper {
        id: 130,
        name: "ringbuf_output",
        args: &[
            Map(MapClass::Ringbuf),
            Mem {
                size_arg: 2,
                access: Read,
            },
            Size { zero_ok: true },
            Anything,
        ],
        ret: Ret::Integer,
        gpu: "copy a record into the ringbuf; a full buffer drops and counts",
        lowering: Lowering::Ring {
            runtime: "bpf2ptx_ringbuf_output",
            regs: &["%r1", "%r2", "%r3", "%r4"],
            returns: true,
        },
    },
    Helper {
        id: 131,
        name: "ringbuf_reserve",
        args: &[Map(MapClass::Ringbuf), Size { zero_ok: false }, Anything],
        ret: Ret::RingbufRecordOrNull,
        gpu: "reserve a record of a constant size, or NULL when full",
        lowering: Lowering::Ring {
            runtime: "bpf2ptx_ringbuf_reserve",
            regs: &["%r1", "%r2", "%r3"],
            returns: true,
        },
    },
    Helper {
        id: 132,
        name: "ringbuf_submit",
        args: &[RingbufRecord, Anything],
        ret: Ret::Void,
        gpu: "publish a reserved record",
        lowering: Lowering::Ring {
            runtime: "bpf2ptx_ringbuf_submit",
            regs: &["%r1", "%r2"],
            returns: false,
        },
    },
    Helper {
        id: 133,
        name: "ringbuf_discard",
        args: &[RingbufRecord, Anything],
        ret: Ret::Void,
        gpu: "drop a reserved record",
        lowering: Lowering::Ring {
            runtime: "bpf2ptx_ringbuf_discard",
            regs: &["%r1", "%r2"],
            returns: false,
        },
    },
    Helper {
        id: 134,
        name: "ringbuf_query",
        args: &[Map(MapClass::Ringbuf), Anything],
        ret: Ret::Integer,
        gpu: "ringbuf statistics (available data, size, positions)",
        lowering: Lowering::Ring {
            runtime: "bpf2ptx_ringbuf_query",
            regs: &["%r1", "%r2"],
            returns: true,
        },
    },
    Helper {
        id: 165,
        name: "snprintf",
        args: &[
            Mem {
                size_arg: 1,
                access: Write,
            },
            Size { zero_ok: true },
            ConstStr,
            Mem {
                size_arg: 4,
                access: Read,
            },
            WordsSize {
                max_words: snprintf::MAX_ARGS as u8,
            },
        ],
        ret: Ret::Integer,
        gpu: "formats into str on the GPU, as Linux: truncated to str_size with a NUL; returns the \
              untruncated length plus 1 (the format is checked and specialised at compile time)",
        lowering: Lowering::Snprintf,
    },
    Helper {
        id: 177,
        name: "trace_vprintk",
        args: &[
            Mem {
                size_arg: 1,
                access: Read,
            },
            Size { zero_ok: false },
            Mem {
                size_arg: 3,
                access: Read,
            },
            WordsSize {
                max_words: printk::MAX_ARGS as u8,
            },
        ],
        ret: Ret::Integer,
        gpu: "a ringbuf record (format address, up to 12 arguments from an array) that the host formats",
        lowering: Lowering::Printk {
            puts: false,
            vargs: true,
        },
    },
    Helper {
        id: 501,
        name: "puts",
        args: &[ConstStr],
        ret: Ret::Integer,
        gpu: "a ringbuf record with the string, printed by the host",
        lowering: Lowering::Printk {
            puts: true,
            vargs: false,
        },
    },
    Helper {
        id: 502,
        name: "get_globaltimer",
        args: &[],
        ret: Ret::Integer,
        gpu: "%globaltimer",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 503,
        name: "get_block_idx",
        args: &[
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
        ],
        ret: Ret::Integer,
        gpu: "%ctaid.x/y/z into the three u64s",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 504,
        name: "get_block_dim",
        args: &[
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
        ],
        ret: Ret::Integer,
        gpu: "%ntid.x/y/z into the three u64s",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 505,
        name: "get_thread_idx",
        args: &[
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
        ],
        ret: Ret::Integer,
        gpu: "%tid.x/y/z into the three u64s",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 506,
        name: "gpu_membar",
        args: &[],
        ret: Ret::Integer,
        gpu:
            "membar.sys: order the thread's earlier writes before its later ones, for all observers",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 507,
        name: "gpu_exit",
        args: &[],
        ret: Ret::NoReturn,
        gpu: "end the probe's thread (exit)",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 508,
        name: "get_grid_dim",
        args: &[
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
            FixedMem {
                size: 8,
                access: Write,
            },
        ],
        ret: Ret::Integer,
        gpu: "%nctaid.x/y/z into the three u64s",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 509,
        name: "get_sm_id",
        args: &[],
        ret: Ret::Integer,
        gpu: "%smid",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 510,
        name: "get_warp_id",
        args: &[],
        ret: Ret::Integer,
        gpu: "the warp's index within its block (linear thread index / 32)",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 511,
        name: "get_lane_id",
        args: &[],
        ret: Ret::Integer,
        gpu: "%laneid",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 181,
        name: "loop",
        args: &[LoopCount, Callback, CallbackCtx, ZeroFlags],
        ret: Ret::Integer,
        gpu: "calls the callback (index, ctx) for index 0, 1, ... < nr_loops (u32) until it returns 1; \
              returns the number of calls, or -E2BIG (-7) when nr_loops > 2^23 (BPF_MAX_LOOPS), as Linux",
        lowering: Lowering::Loop,
    },
    Helper {
        id: 600,
        name: "get_global_thread_id",
        args: &[],
        ret: Ret::Integer,
        gpu: "linear block index * threads per block + linear thread index (a bpf2ptx helper)",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 601,
        name: "get_active_mask",
        args: &[],
        ret: Ret::Integer,
        gpu: "activemask: the warp's lanes executing the call together (a bpf2ptx helper)",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 602,
        name: "clock64",
        args: &[],
        ret: Ret::Integer,
        gpu: "%clock64: the SM's cycle counter (a bpf2ptx helper)",
        lowering: Lowering::Inline,
    },
    Helper {
        id: 603,
        name: "log2",
        args: &[Anything],
        ret: Ret::Log2,
        gpu: "floor(log2(v)) of the u64 in r1, 0 for v = 0: one bfind, where the shift \
              cascade probes write for their log2 histograms costs a dozen instructions \
              (a bpf2ptx helper)",
        lowering: Lowering::Inline,
    },
];

/// Linux's `BPF_MAX_LOOPS` (8,388,608 = 2^23): the most iterations `bpf_loop` and a
/// numeric iterator run, and the loop budget `may_goto` starts each function invocation
/// with.
pub const BPF_MAX_LOOPS: u64 = 1 << 23;

/// `-E2BIG`, what `bpf_loop` and `bpf_iter_num_new` return for more than
/// [`BPF_MAX_LOOPS`] iterations.
pub const E2BIG: i64 = -7;

/// `-EINVAL`, what `bpf_iter_num_new` returns when `start > end`.
pub const EINVAL: i64 = -22;

/// A kernel function (kfunc) the device runtime implements. A kfunc call names its target
/// by the BTF id of the kfunc's `FUNC` in the object's BTF (`src` 2); the front end records
/// the name it resolved (`program::RelocTarget::Kfunc`), and everything after it goes by
/// that name, so no BTF id is fixed here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kfunc {
    /// `int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end)`: starts a
    /// numeric iterator over `[start, end)` in the 8-byte stack slot `it`; returns 0, or
    /// `-EINVAL` (`start > end`) / `-E2BIG` (more than [`BPF_MAX_LOOPS`]) with an empty
    /// iterator.
    IterNumNew,
    /// `int *bpf_iter_num_next(struct bpf_iter_num *it)`: a read-only pointer to the next
    /// value, or NULL once the iterator is drained (and from then on).
    IterNumNext,
    /// `void bpf_iter_num_destroy(struct bpf_iter_num *it)`: ends the iterator.
    IterNumDestroy,
}

/// Every kfunc of the runtime with its name (the BTF `FUNC` name clang writes).
pub const KFUNCS: &[(Kfunc, &str)] = &[
    (Kfunc::IterNumNew, "bpf_iter_num_new"),
    (Kfunc::IterNumNext, "bpf_iter_num_next"),
    (Kfunc::IterNumDestroy, "bpf_iter_num_destroy"),
];

impl Kfunc {
    /// The kfunc named `name`, if the runtime has it.
    pub fn by_name(name: &str) -> Option<Kfunc> {
        KFUNCS.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    /// The kfunc's name.
    pub fn name(self) -> &'static str {
        KFUNCS
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .expect("every kfunc is in KFUNCS")
    }
}

/// What helper 603 (`bpf2ptx_log2`) returns for `v`: floor(log2(v)), 0 for 0, as the
/// GPU's `bfind` and `max` give it. The one definition the verifier (a constant's
/// result), fusion's analysis and the host interpreter all use.
pub fn log2(v: u64) -> u64 {
    v.checked_ilog2().map_or(0, u64::from)
}

/// The helper with id `id`, if the runtime has it.
pub fn helper(id: i64) -> Option<&'static Helper> {
    HELPERS.iter().find(|h| i64::from(h.id) == id)
}

/// Whether `id` is the id of the helper named `name` (without `bpf_`) in [`HELPERS`]: how
/// code outside the catalogue names a helper instead of writing its id.
pub fn is_helper(id: i64, name: &str) -> bool {
    helper(id).is_some_and(|h| h.name == name)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every `call` in `text` (the map or ring functions) targets a function `text`
    /// defines, or the shared copy ([`COPY_FUNCTION`]), which it must not define.
    pub(crate) fn assert_calls_resolve(text: &str) {
        for line in text.lines().filter(|l| l.trim_start().starts_with("call")) {
            let callee = line
                .split([',', ' ', '\t'])
                .rfind(|w| w.starts_with("bpf2ptx_"))
                .unwrap_or_else(|| panic!("{line}"));
            assert!(
                callee == "bpf2ptx_copy" || text.contains(&format!(" {callee}(")),
                "{line}"
            );
        }
        assert!(
            !text.contains(" bpf2ptx_copy("),
            "the copy is defined once, in lib.rs"
        );
        assert!(COPY_FUNCTION.contains(".func bpf2ptx_copy("));
    }

    #[test]
    fn every_lowering_names_a_runtime_function_it_declares() {
        for h in HELPERS {
            match h.lowering {
                Lowering::Map { runtime, args } => {
                    assert!(
                        maps::declarations().contains(&format!(" {runtime}(")),
                        "{}",
                        h.name
                    );
                    assert_eq!(usize::from(args), h.args.len(), "{}", h.name);
                }
                Lowering::Ring { runtime, regs, .. } => {
                    assert!(
                        ringbuf::declarations().contains(&format!(" {runtime}(")),
                        "{}",
                        h.name
                    );
                    assert!(!regs.is_empty(), "{}", h.name);
                }
                Lowering::Inline
                | Lowering::Printk { .. }
                | Lowering::Loop
                | Lowering::Snprintf => {}
            }
        }
    }

    #[test]
    fn ids_are_unique_and_sizes_point_at_size_args() {
        for (i, h) in HELPERS.iter().enumerate() {
            assert!(
                HELPERS[i + 1..].iter().all(|g| g.id != h.id),
                "duplicate id {}",
                h.id
            );
            assert!(h.args.len() <= 5, "{}: more than 5 arguments", h.name);
            for a in h.args {
                if let Mem { size_arg, .. } = a {
                    assert!(
                        matches!(
                            h.args.get(*size_arg as usize),
                            Some(Size { .. } | WordsSize { .. })
                        ),
                        "{}: size argument",
                        h.name
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod template_tests {
    /// The hand-written PTX files, as `include_str!` brings them in.
    const TEMPLATES: [(&str, &str); 3] = [
        ("ptx/maps.ptx", crate::maps::MAP_FUNCTIONS),
        ("ptx/ringbuf.ptx", crate::ringbuf::RINGBUF_FUNCTIONS),
        ("ptx/copy.ptx", crate::COPY_FUNCTION),
    ];

    /// Every `@NAME@` placeholder of the templates (a run of capitals, digits and `_`
    /// between two `@`; `@%p1` predicates are not placeholders).
    fn placeholders(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(at) = rest.find('@') {
            let tail = &rest[at + 1..];
            let len = tail
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(tail.len());
            if len > 0 && tail[len..].starts_with('@') {
                out.push(&tail[..len]);
                rest = &tail[len + 1..];
            } else {
                rest = tail;
            }
        }
        out
    }

    /// Each template's functions that take a descriptor (`ld.param.b64 %rd1, [desc];`).
    fn desc_functions(text: &str) -> Vec<&str> {
        text.split("\n.func ")
            .filter(|f| f.contains("\tld.param.b64 %rd1, [desc];"))
            .collect()
    }

    /// No template writes a descriptor offset or a map type id itself: a descriptor word
    /// other than word 0 is read at `[%rd1+@DESC_*@]`, and the type read from word 0 is
    /// compared with `@MAP_*@`; every placeholder is one the runtime fills
    /// (`abi_placeholders`, the tuning constants and record-side markers of maps.rs).
    #[test]
    fn templates_name_every_abi_fact() {
        let abi: Vec<String> = crate::abi_placeholders()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let tuning = [
            "WAIT",
            "UPDATE_ROUNDS",
            "LRU_SAMPLE",
            "LRU_TRIES",
            "SHARD_MASK",
            "FULL",
            "BUSY",
            "EVICTED",
        ];
        for (file, text) in TEMPLATES {
            for p in placeholders(text) {
                assert!(
                    abi.iter().any(|a| a == p) || tuning.contains(&p),
                    "{file}: unknown placeholder @{p}@"
                );
            }
            for f in desc_functions(text) {
                let name = f
                    .split('(')
                    .nth(1)
                    .unwrap_or(f)
                    .split_whitespace()
                    .last()
                    .unwrap_or("");
                for line in f.lines() {
                    let t = line.trim();
                    if t.starts_with("//") {
                        continue;
                    }
                    let literal_offset = t
                        .split("[%rd1+")
                        .skip(1)
                        .any(|r| r.starts_with(|c: char| c.is_ascii_digit()));
                    assert!(
                        !literal_offset,
                        "{file} {name}: literal descriptor offset: {t}"
                    );
                }
                // Registers holding the type word, and their comparisons.
                let types: Vec<&str> = f
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("ld.u32 "))
                    .filter_map(|l| l.strip_suffix(", [%rd1];"))
                    .collect();
                for line in f.lines() {
                    let t = line.trim();
                    let Some(cmp) = t
                        .strip_prefix("setp.eq.u32 ")
                        .or_else(|| t.strip_prefix("setp.ne.u32 "))
                    else {
                        continue;
                    };
                    let ops: Vec<&str> = cmp.trim_end_matches(';').split(", ").collect();
                    if ops.len() == 3 && types.contains(&ops[1]) {
                        assert!(
                            ops[2].starts_with("@MAP_"),
                            "{file}: literal map type in `{t}`"
                        );
                    }
                }
            }
        }
        // The ids behind the names are MapKind's.
        assert!(crate::abi_placeholders().contains(&("MAP_LRU_HASH".to_string(), 9)));
        assert!(crate::abi_placeholders().contains(&("MAP_GPU_RINGBUF".to_string(), 1527)));
        assert!(crate::abi_placeholders().contains(&("DESC_AUX2".to_string(), 40)));
    }

    /// Filling leaves no placeholder behind.
    #[test]
    fn filled_templates_have_no_placeholders() {
        for text in [
            crate::maps::functions_at(crate::Scope::Sys),
            crate::ringbuf::functions(),
        ] {
            assert!(placeholders(&text).is_empty(), "{:?}", placeholders(&text));
        }
    }
}
