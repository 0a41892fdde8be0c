//! Attach points: which program runs where in an application kernel, read from the
//! program's ELF section name, and the context each attach point gives the program.
//!
//! | section | point | kernels |
//! |---|---|---|
//! | `gpu/entry/K`, `kprobe/K` (bpftime) | first instruction | K |
//! | `gpu/exit/K`, `kretprobe/K` (bpftime) | before every `ret` and `exit` | K |
//! | `gpu/mem/K` | before every instruction that moves data ([`super::access`]: `ld`, `st`, atomics, `cp.async` and the bulk and tensor copies, `ldmatrix`, `prefetch`, ...) on global, shared, local or generic memory | K |
//! | `gpu/insn/K/OPCODE` | before every instruction whose opcode starts with OPCODE's components ([`Pattern`]) | K |
//! | `kprobe/__memcapture` (bpftime) | same as `gpu/mem/*` | all |
//!
//! `K` is a kernel's PTX name (`_Z6vecAddPKfS0_Pfi`), the C++ name it mangles (`vecAdd`),
//! or `*`. Our points take a granularity suffix (`gpu/entry.warp/K`, `gpu/mem.block/K`,
//! `gpu/insn.warp/K/wgmma`); bpftime's names use the command line's `--granularity`.
//!
//! The context structs are described here field by field ([`MEM_CTX_FIELDS`],
//! [`INSN_CTX_FIELDS`]) together with their flag and space constants; the C header
//! `runtime-ptx/include/bpf2ptx_helpers.h` carries them as a generated block
//! ([`header_block`]) that `tests/tests/attach_points.rs` keeps equal to this file.

use super::opcodes::{Group, Pattern, OPCODES};
use crate::back::ptx::Granularity;
use crate::isa::table::{CallKind, Kind};
use crate::program::Program;
use serde::Serialize;

/// Where in a kernel a probe runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Point {
    /// The kernel's first instruction, once per thread (or warp, or block).
    Entry,
    /// Before every `ret` and `exit` of the kernel, predicated ones under their predicate.
    Exit,
    /// Before every memory access of the kernel.
    Mem,
    /// Before every instruction whose opcode the probe's [`Attach::opcode`] names.
    Insn,
}

impl Point {
    /// Bytes of the context r1 points to: `struct bpf2ptx_kernel_ctx` (entry, exit),
    /// `struct bpf2ptx_mem_ctx` (memory) or `struct bpf2ptx_insn_ctx` (instructions), in
    /// runtime-ptx/include/bpf2ptx_helpers.h.
    pub fn ctx_size(self) -> u32 {
        match self {
            Point::Entry | Point::Exit => KERNEL_CTX_SIZE,
            Point::Mem => MEM_CTX_SIZE,
            Point::Insn => INSN_CTX_SIZE,
        }
    }
}

/// One field of a context struct, for the C header and the docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// C type (`__u64`, `__s32 [5]` is written `__s32` with `count` 5).
    pub ty: &'static str,
    /// Name.
    pub name: &'static str,
    /// Array length (1 for a scalar).
    pub count: u32,
    /// Byte offset.
    pub offset: u32,
    /// What it holds.
    pub doc: &'static str,
}

const fn field(ty: &'static str, name: &'static str, offset: u32, doc: &'static str) -> Field {
    Field {
        ty,
        name,
        count: 1,
        offset,
        doc,
    }
}

/// `struct bpf2ptx_kernel_ctx { u32 kernel; u32 site; }`.
pub const KERNEL_CTX_SIZE: u32 = 8;
/// `struct bpf2ptx_mem_ctx` ([`MEM_CTX_FIELDS`]). Its first 24 bytes are the context of
/// the first release (address, size, flags, kernel, site), so probes built against it
/// read the same fields at the same offsets; issue 18 appended the rest.
pub const MEM_CTX_SIZE: u32 = 80;
/// `struct bpf2ptx_insn_ctx` ([`INSN_CTX_FIELDS`]): the kernel context and the opcode.
pub const INSN_CTX_SIZE: u32 = 16;

/// The fields of `struct bpf2ptx_kernel_ctx` (entry and exit probes).
pub const KERNEL_CTX_FIELDS: &[Field] = &[
    field(
        "__u32",
        "kernel",
        0,
        "index of the kernel among the input's .entry functions",
    ),
    field(
        "__u32",
        "site",
        4,
        "1-based line of the attach point in the input PTX",
    ),
];

/// The fields of `struct bpf2ptx_mem_ctx` (memory probes), in order. What each holds for
/// each kind of instruction is specs/abi.md's "Memory contexts" table.
pub const MEM_CTX_FIELDS: &[Field] = &[
    field("__u64", "addr", 0, "the address the instruction computes, in its space (a copy's source; a tensor copy's tensor map)"),
    field("__u32", "size", 8, "bytes this thread's instruction reads or writes at addr (0: none, or not known: BPF2PTX_MEM_TENSOR)"),
    field("__u32", "flags", 12, "BPF2PTX_MEM_* bits | space << 8 | space2 << 16"),
    field("__u32", "kernel", 16, "as in bpf2ptx_kernel_ctx"),
    field("__u32", "site", 20, "1-based line of the instruction in the input PTX"),
    field("__u64", "addr2", 24, "the second address: a copy's destination, a tensor copy's shared memory, the mbarrier of red.async/st.async; 0 when none"),
    field("__u64", "policy", 32, "the .L2::cache_hint cache-policy operand (BPF2PTX_MEM_HINT); 0 when none"),
    field("__u32", "op", 40, "BPF2PTX_OP_*: the instruction"),
    field("__u32", "size2", 44, "bytes at addr2 (a copy's destination), or an mbarrier's transaction bytes"),
    field("__u32", "qual", 48, "BPF2PTX_QUAL_* fields: cache operator, eviction, semantics, scope, shape, ..."),
    field("__u32", "count", 52, "vector width (1: scalar), matrices (.x1/.x2/.x4), or tensor dimensions"),
    Field {
        ty: "__s32",
        name: "coord",
        count: 5,
        offset: 56,
        doc: "a tensor copy's coordinates (count of them); 0 after",
    },
    field("__u32", "reserved", 76, "0"),
];

/// The fields of `struct bpf2ptx_insn_ctx` (instruction probes). The first 8 bytes are
/// `struct bpf2ptx_kernel_ctx`, so an entry probe's reading of them works here too.
pub const INSN_CTX_FIELDS: &[Field] = &[
    field("__u32", "kernel", 0, "as in bpf2ptx_kernel_ctx"),
    field(
        "__u32",
        "site",
        4,
        "1-based line of the instruction in the input PTX",
    ),
    field(
        "__u32",
        "op",
        8,
        "BPF2PTX_OP_*: the instruction (0: an opcode the table does not know)",
    ),
    field("__u32", "group", 12, "BPF2PTX_GROUP_*: its group"),
];

/// `flags` bit: the access reads memory at `addr` (`ld`, `ldu`, `atom`, a copy's source).
pub const MEM_LOAD: u32 = 1;
/// `flags` bit: the access writes memory at `addr` (`st`, `atom`, `red`, a tensor store).
pub const MEM_STORE: u32 = 2;
/// `flags` bit: the write is a read-modify-write (`atom`, `red`, reductions).
pub const MEM_ATOMIC: u32 = 4;
/// `flags` bit: the access reads memory at `addr2` (a tensor store's shared source).
pub const MEM_LOAD2: u32 = 8;
/// `flags` bit: the access writes memory at `addr2` (a copy's destination).
pub const MEM_STORE2: u32 = 16;
/// `flags` bit: the access completes asynchronously, after the instruction (the probe runs
/// when it is issued).
pub const MEM_ASYNC: u32 = 32;
/// `flags` bit: `addr` is a tensor map and the bytes moved are its box's, which the
/// instruction does not say (`size` is 0).
pub const MEM_TENSOR: u32 = 64;
/// `flags` bit: `policy` holds the instruction's L2 cache policy.
pub const MEM_HINT: u32 = 128;
/// `flags >> MEM_SPACE_SHIFT & 0xff` is the state space of `addr` ([`SPACES`]).
pub const MEM_SPACE_SHIFT: u32 = 8;
/// `flags >> MEM_SPACE2_SHIFT & 0xff` is the state space of `addr2`.
pub const MEM_SPACE2_SHIFT: u32 = 16;

/// The `flags` bits by name, for the C header (`BPF2PTX_MEM_<NAME>`).
pub const MEM_FLAGS: &[(&str, u32, &str)] = &[
    ("LOAD", MEM_LOAD, "reads memory at addr"),
    ("STORE", MEM_STORE, "writes memory at addr"),
    ("ATOMIC", MEM_ATOMIC, "the write is a read-modify-write"),
    ("LOAD2", MEM_LOAD2, "reads memory at addr2"),
    ("STORE2", MEM_STORE2, "writes memory at addr2"),
    ("ASYNC", MEM_ASYNC, "completes after the instruction"),
    (
        "TENSOR",
        MEM_TENSOR,
        "addr is a tensor map; the bytes are its box's",
    ),
    ("HINT", MEM_HINT, "policy holds an L2 cache policy"),
];

/// State-space codes (`flags` bits 8-15 and 16-23), by name (`BPF2PTX_SPACE_<NAME>`).
pub const SPACES: &[(&str, u32)] = &[
    ("GENERIC", 0),
    ("GLOBAL", 1),
    ("SHARED", 2),
    ("LOCAL", 3),
    ("SHARED_CLUSTER", 4),
    ("CONST", 5),
    ("PARAM", 6),
];

/// A program's attach point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    /// Where.
    pub point: Point,
    /// The kernel pattern: a PTX name, a C++ base name, or `*`.
    pub kernel: String,
    /// The section's own granularity (`gpu/entry.warp/...`); `None`: the command line's.
    pub granularity: Option<Granularity>,
    /// The opcode prefix of a [`Point::Insn`] point (`wgmma` of `gpu/insn/K/wgmma`);
    /// `None` for the other points.
    pub opcode: Option<Pattern>,
}

impl Attach {
    /// The attach point a section names; `None` for sections that are not GPU attach
    /// points (host programs, `.text`, unknown names).
    pub fn from_section(section: &str) -> Option<Attach> {
        let any = |point| Attach {
            point,
            kernel: "*".into(),
            granularity: None,
            opcode: None,
        };
        if section == "kprobe/__memcapture" {
            return Some(any(Point::Mem));
        }
        if let Some(k) = section.strip_prefix("kprobe/") {
            return nonempty(k).map(|k| Attach {
                kernel: k.into(),
                ..any(Point::Entry)
            });
        }
        if let Some(k) = section.strip_prefix("kretprobe/") {
            return nonempty(k).map(|k| Attach {
                kernel: k.into(),
                ..any(Point::Exit)
            });
        }
        let rest = section.strip_prefix("gpu/")?;
        let (point, kernel) = rest.split_once('/')?;
        let (point, gran) = match point.split_once('.') {
            Some((p, g)) => (p, Some(granularity(g)?)),
            None => (point, None),
        };
        let (point, kernel, opcode) = match point {
            "entry" => (Point::Entry, kernel, None),
            "exit" => (Point::Exit, kernel, None),
            "mem" => (Point::Mem, kernel, None),
            // A kernel name has no `/`, so the last one ends it.
            "insn" => {
                let (k, op) = kernel.rsplit_once('/')?;
                (Point::Insn, k, Some(Pattern::parse(op)?))
            }
            _ => return None,
        };
        Some(Attach {
            point,
            kernel: nonempty(kernel)?.into(),
            granularity: gran,
            opcode,
        })
    }

    /// Whether the pattern names the kernel `ptx_name`: `*`, the name itself, or the
    /// C++ name an Itanium-mangled `_Z<len><name>...` carries.
    pub fn matches(&self, ptx_name: &str) -> bool {
        self.kernel == "*" || self.kernel == ptx_name || base_name(ptx_name) == Some(&self.kernel)
    }
}

/// The generated part of `runtime-ptx/include/bpf2ptx_helpers.h`: the context structs,
/// the `flags` bits and spaces, the qualifier fields, and the opcode and group numbers,
/// all from this module, [`super::access`] and [`super::opcodes`] (the header's one
/// source; `tests/tests/attach_points.rs` checks it and `BLESS=1` rewrites it).
pub fn header_block() -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let structs = [
        (
            "bpf2ptx_kernel_ctx",
            "Entry and exit probes",
            KERNEL_CTX_FIELDS,
            KERNEL_CTX_SIZE,
        ),
        (
            "bpf2ptx_mem_ctx",
            "Memory probes: the access the instrumented instruction makes",
            MEM_CTX_FIELDS,
            MEM_CTX_SIZE,
        ),
        (
            "bpf2ptx_insn_ctx",
            "Instruction probes (gpu/insn/KERNEL/OPCODE)",
            INSN_CTX_FIELDS,
            INSN_CTX_SIZE,
        ),
    ];
    for (name, what, fields, size) in structs {
        let _ = writeln!(s, "/* {what}: {size} bytes. */\nstruct {name} {{");
        for f in fields {
            let decl = if f.count > 1 {
                format!("{} {}[{}];", f.ty, f.name, f.count)
            } else {
                format!("{} {};", f.ty, f.name)
            };
            let _ = writeln!(s, "\t{decl:<20}/* {:>2}: {} */", f.offset, f.doc);
        }
        s.push_str("};\n\n");
    }
    let mut define = |name: String, value: String| {
        let _ = writeln!(s, "#define {name:<40} {value}");
    };
    for (name, bit, doc) in MEM_FLAGS {
        define(
            format!("BPF2PTX_MEM_{name}"),
            format!("{bit:<5} /* {doc} */"),
        );
    }
    define(
        "BPF2PTX_MEM_SPACE_SHIFT".into(),
        MEM_SPACE_SHIFT.to_string(),
    );
    define(
        "BPF2PTX_MEM_SPACE2_SHIFT".into(),
        MEM_SPACE2_SHIFT.to_string(),
    );
    define(
        "BPF2PTX_MEM_SPACE(flags)".into(),
        "(((flags) >> 8) & 0xff)".into(),
    );
    define(
        "BPF2PTX_MEM_SPACE2(flags)".into(),
        "(((flags) >> 16) & 0xff)".into(),
    );
    for (name, code) in SPACES {
        define(format!("BPF2PTX_SPACE_{name}"), code.to_string());
    }
    s.push('\n');
    for q in super::access::QUAL_FIELDS {
        let _ = writeln!(
            s,
            "/* qual bits {}-{}: {} */",
            q.shift,
            q.shift + q.bits - 1,
            q.doc
        );
        let _ = writeln!(
            s,
            "#define {:<40} (((qual) >> {}) & {:#x})",
            format!("BPF2PTX_QUAL_{}(qual)", q.name),
            q.shift,
            (1u32 << q.bits) - 1
        );
        for (i, v) in q.values.iter().enumerate() {
            let _ = writeln!(
                s,
                "#define {:<40} {}",
                format!("BPF2PTX_QUAL_{}_{}", q.name, v.0),
                i + 1
            );
        }
    }
    s.push('\n');
    for g in Group::ALL {
        let name = format!("BPF2PTX_GROUP_{}", g.name().to_ascii_uppercase());
        let _ = writeln!(s, "#define {name:<40} {}", g.id());
    }
    s.push('\n');
    for r in OPCODES {
        let _ = writeln!(s, "#define {:<40} {}", r.constant(), r.id);
    }
    s
}

fn nonempty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

fn granularity(g: &str) -> Option<Granularity> {
    Some(match g {
        "thread" => Granularity::Thread,
        "warp" => Granularity::Warp,
        "block" => Granularity::Block,
        _ => return None,
    })
}

/// The C++ name of a mangled kernel name: `vecAdd` of `_Z6vecAddPKfS0_Pfi`; the last
/// component of a nested name `_ZN2ns6kernelEv` (`kernel`). `None` when the name is not
/// mangled that way (extern "C" kernels keep their names and match exactly).
pub fn base_name(mangled: &str) -> Option<&str> {
    let rest = mangled.strip_prefix("_Z")?;
    let mut rest = rest.strip_prefix('N').unwrap_or(rest);
    let mut last = None;
    loop {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return last;
        }
        let len: usize = rest[..digits].parse().ok()?;
        let name = rest.get(digits..digits + len)?;
        last = Some(name);
        rest = &rest[digits + len..];
        if !mangled.starts_with("_ZN") {
            return last;
        }
    }
}

/// Whether running `prog` may end its thread: a call of `gpu_exit` (507), or a `callx`,
/// whose helper id the lowering only knows at run time. A per-warp site rejoins its lanes
/// with `bar.warp.sync` unless the probe may end its thread
/// ([`crate::back::ptx::granularity_rejoin`]).
pub fn may_end_thread(prog: &Program) -> bool {
    prog.insns.iter().any(|i| match i.kind() {
        Kind::Call(CallKind::Helper) => i.imm == 507,
        Kind::Callx => true,
        _ => false,
    })
}

/// Whether running `prog` may write a record a host reads while the kernel runs: a ring
/// output or reservation (`ringbuf_*`, `perf_event_output`), a `trace_printk`,
/// `trace_vprintk` or `puts`, or a `callx`, whose helper the lowering only knows at run
/// time. Fused accumulators are added to their maps before such a probe's site, so a host
/// that reads a record and then the maps sees every add made before it.
pub fn may_output(prog: &Program) -> bool {
    prog.insns.iter().any(|i| match i.kind() {
        Kind::Call(CallKind::Helper) => matches!(
            bpf2ptx_runtime::helper(i.imm).map(|h| h.lowering),
            Some(bpf2ptx_runtime::Lowering::Ring { .. } | bpf2ptx_runtime::Lowering::Printk { .. })
        ),
        Kind::Callx => true,
        _ => false,
    })
}

/// Whether running `prog` can change anything anyone observes: it calls a helper or a
/// function, writes memory other than through r10, or uses an atomic. A probe without
/// effects is not called at all (its return value is ignored), so an empty probe costs
/// nothing — the verifier has already proven it terminates and cannot fault.
pub fn has_effects(prog: &Program) -> bool {
    prog.insns.iter().any(|i| match i.kind() {
        Kind::Call(_) | Kind::Callx | Kind::Atomic(..) => true,
        Kind::St(_) | Kind::Stx(_) => i.dst != 10,
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections() {
        type Case = (
            &'static str,
            Option<(Point, &'static str, Option<Granularity>)>,
        );
        let cases: &[Case] = &[
            ("kprobe/vecAdd", Some((Point::Entry, "vecAdd", None))),
            ("kretprobe/_Z3fooi", Some((Point::Exit, "_Z3fooi", None))),
            ("kprobe/__memcapture", Some((Point::Mem, "*", None))),
            ("gpu/entry/*", Some((Point::Entry, "*", None))),
            (
                "gpu/exit.block/k",
                Some((Point::Exit, "k", Some(Granularity::Block))),
            ),
            (
                "gpu/mem.warp/matmul",
                Some((Point::Mem, "matmul", Some(Granularity::Warp))),
            ),
            ("gpu/insn/k/wgmma", Some((Point::Insn, "k", None))),
            (
                "gpu/insn.warp/*/mma.sync",
                Some((Point::Insn, "*", Some(Granularity::Warp))),
            ),
            ("gpu/insn/k/", None),
            ("gpu/insn/k", None),
            ("gpu/insn//wgmma", None),
            ("gpu/insn/k/wgmmma", None),
            ("gpu/mem.lane/k", None),
            ("gpu/start/k", None),
            ("gpu/entry/", None),
            ("kprobe/", None),
            ("uprobe/x", None),
            (".text", None),
        ];
        for (s, want) in cases {
            let got = Attach::from_section(s).map(|a| (a.point, a.kernel, a.granularity));
            let want = want.map(|(p, k, g)| (p, k.to_string(), g));
            assert_eq!(got, want, "{s}");
        }
    }

    #[test]
    fn insn_points_keep_their_opcode() {
        let a = Attach::from_section("gpu/insn/k/wgmma.mma_async").unwrap();
        assert_eq!(
            a.opcode.as_ref().map(Pattern::as_str),
            Some("wgmma.mma_async")
        );
        assert_eq!(a.point.ctx_size(), INSN_CTX_SIZE);
        assert_eq!(Attach::from_section("gpu/mem/k").unwrap().opcode, None);
    }

    /// The field tables describe structs without holes, of the sizes the weaver fills.
    #[test]
    fn context_fields_are_contiguous() {
        for (fields, size) in [
            (KERNEL_CTX_FIELDS, KERNEL_CTX_SIZE),
            (MEM_CTX_FIELDS, MEM_CTX_SIZE),
            (INSN_CTX_FIELDS, INSN_CTX_SIZE),
        ] {
            let mut at = 0;
            for f in fields {
                assert_eq!(f.offset, at, "{}", f.name);
                let bytes = if f.ty.ends_with("64") { 8 } else { 4 };
                at += bytes * f.count;
            }
            assert_eq!(at, size);
        }
        assert_eq!(
            &INSN_CTX_FIELDS[..2]
                .iter()
                .map(|f| f.offset)
                .collect::<Vec<_>>(),
            &[0, 4]
        );
    }

    #[test]
    fn kernel_names() {
        assert_eq!(base_name("_Z6vecAddPKfS0_Pfi"), Some("vecAdd"));
        assert_eq!(base_name("_ZN2ns6kernelEv"), Some("kernel"));
        assert_eq!(base_name("vecadd"), None);
        assert_eq!(base_name("_Z99x"), None);
        let a = Attach::from_section("gpu/entry/vecAdd").unwrap();
        assert!(a.matches("_Z6vecAddPKfS0_Pfi"));
        assert!(!a.matches("_Z7vecAdd2PKf"));
        assert!(Attach::from_section("gpu/entry/*").unwrap().matches("x"));
    }
}
