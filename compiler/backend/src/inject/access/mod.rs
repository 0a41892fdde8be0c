//! Memory and instruction sites: what an instruction's attach site tells its probe, read
//! from the instruction's operands, and the code that fills the context.
//!
//! [`mem_site`] reads an instruction the opcode table ([`super::opcodes`]) says moves data
//! into a [`MemSite`]: its addresses, sizes, flags, qualifiers and (for tensor copies)
//! coordinates, each either a constant of the kernel's text or a register the site reads
//! when the probe runs. [`mem_ctx`] turns that into the statements that fill
//! `struct bpf2ptx_mem_ctx` and the bytes the verifier may take as known; [`insn_ctx`]
//! does the same for `struct bpf2ptx_insn_ctx`.
//!
//! Soundness: the statements only read the instruction's operands (`mov`, `cvt`, `selp`,
//! `%laneid`) into the site block's own registers; they never write a register, predicate
//! or memory location of the kernel, and they run only where the instruction would (after
//! its guard). An operand the reader does not understand is an error, never a guess.
//!
//! This file reads the operands; the fill ([`mem_ctx`], [`insn_ctx`]) is in
//! `access/fill.rs`.

use super::attach::{
    MEM_ASYNC, MEM_ATOMIC, MEM_HINT, MEM_LOAD, MEM_LOAD2, MEM_SPACE2_SHIFT, MEM_SPACE_SHIFT,
    MEM_STORE, MEM_STORE2, MEM_TENSOR,
};
use super::opcodes::{self, Mem};
use super::ptx::{Instruction, Operand};
use serde::Serialize;

mod fill;

pub use fill::{insn_ctx, mem_ctx};

/// A value a context field takes at a site.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Val {
    /// Known when the kernel is built.
    Const(u64),
    /// A register's value, zero-extended.
    Reg(String),
    /// An address operand: a register or symbol plus a byte offset, or an immediate
    /// address (`base` empty).
    Addr {
        /// The register or symbol; empty for an immediate address.
        base: String,
        /// The byte offset (the address itself when `base` is empty).
        offset: i64,
    },
    /// `cp.async`'s fourth operand, a register: `src-size` (its value) when the kernel
    /// declares it an integer, `ignore-src` (0 when true, else `bytes`) when a predicate.
    CpSource {
        /// The register.
        reg: String,
        /// cp-size, the bytes when `ignore-src` is false.
        bytes: u32,
    },
    /// `ldmatrix`/`stmatrix`: `bytes` for lanes below `lanes` (the lanes whose row address
    /// the instruction uses), 0 for the others.
    Lanes {
        /// Participating lanes.
        lanes: u32,
        /// Bytes of each one's row.
        bytes: u32,
    },
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Const(v) => write!(f, "{v}"),
            Val::Reg(r) => f.write_str(r),
            Val::Addr { base, offset } if base.is_empty() => write!(f, "[{offset}]"),
            Val::Addr { base, offset: 0 } => write!(f, "[{base}]"),
            Val::Addr { base, offset } => write!(f, "[{base}{offset:+}]"),
            Val::CpSource { reg, bytes } => {
                write!(f, "{reg} (src-size, or {bytes} unless ignore-src)")
            }
            Val::Lanes { lanes, bytes } => write!(f, "{bytes} for lanes < {lanes}"),
        }
    }
}

impl Val {
    fn known(&self) -> Option<u64> {
        match self {
            Val::Const(v) => Some(*v),
            Val::Lanes { lanes, bytes } if *lanes >= 32 => Some(u64::from(*bytes)),
            _ => None,
        }
    }
}

/// What a memory site's context holds (`struct bpf2ptx_mem_ctx`, specs/abi.md "Memory
/// contexts").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemSite {
    /// The opcode table's row.
    pub op: &'static str,
    /// `addr`.
    pub addr: Val,
    /// `size`.
    pub size: Val,
    /// `flags`: kind bits and the two spaces.
    pub flags: u32,
    /// `addr2`.
    pub addr2: Val,
    /// `policy`.
    pub policy: Val,
    /// `size2`.
    pub size2: Val,
    /// `qual` ([`QUAL_FIELDS`]).
    pub qual: u32,
    /// `count`.
    pub count: u32,
    /// `coord[..]`.
    pub coords: Vec<Val>,
    /// Row number (`op`).
    #[serde(skip)]
    pub op_id: u32,
}

/// Why an instruction's operands could not be read; the weaver reports it with the
/// kernel and line ([`InjectError::Operands`](super::weave::InjectError::Operands)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperandError(pub String);

type R<T> = Result<T, OperandError>;

fn bad<T>(msg: impl Into<String>) -> R<T> {
    Err(OperandError(msg.into()))
}

/// One field of `qual`: a few bits whose value is the index + 1 of the modifier the
/// instruction carries among `values` (0: none).
#[derive(Debug, Clone, Copy)]
pub struct QualField {
    /// C name (`BPF2PTX_QUAL_<NAME>`).
    pub name: &'static str,
    /// First bit.
    pub shift: u32,
    /// Width in bits.
    pub bits: u32,
    /// What it says.
    pub doc: &'static str,
    /// (C name, modifiers that give it); a later entry wins over an earlier one.
    pub values: &'static [(&'static str, &'static [&'static str])],
}

/// The fields of `qual`, read from the opcode's modifiers: the one table of them (the C
/// header's `BPF2PTX_QUAL_*` are generated from it).
pub const QUAL_FIELDS: &[QualField] = &[
    QualField {
        name: "CACHE",
        shift: 0,
        bits: 3,
        doc: "cache operator",
        values: &[
            ("CA", &["ca"]),
            ("CG", &["cg"]),
            ("CS", &["cs"]),
            ("LU", &["lu"]),
            ("CV", &["cv"]),
            ("WB", &["wb"]),
            ("WT", &["wt"]),
        ],
    },
    QualField {
        name: "NC",
        shift: 3,
        bits: 1,
        doc: "non-coherent (read-only) path",
        values: &[("YES", &["nc"])],
    },
    QualField {
        name: "L1",
        shift: 4,
        bits: 3,
        doc: "L1 eviction priority",
        values: &[
            ("EVICT_NORMAL", &["L1::evict_normal"]),
            ("EVICT_UNCHANGED", &["L1::evict_unchanged"]),
            ("EVICT_FIRST", &["L1::evict_first"]),
            ("EVICT_LAST", &["L1::evict_last"]),
            ("NO_ALLOCATE", &["L1::no_allocate"]),
        ],
    },
    QualField {
        name: "L2",
        shift: 7,
        bits: 2,
        doc: "L2 eviction priority",
        values: &[
            ("EVICT_NORMAL", &["L2::evict_normal"]),
            ("EVICT_FIRST", &["L2::evict_first"]),
            ("EVICT_LAST", &["L2::evict_last"]),
        ],
    },
    QualField {
        name: "PREFETCH",
        shift: 9,
        bits: 2,
        doc: "L2 prefetch size",
        values: &[
            ("64B", &["L2::64B"]),
            ("128B", &["L2::128B"]),
            ("256B", &["L2::256B"]),
        ],
    },
    QualField {
        name: "SEM",
        shift: 11,
        bits: 3,
        doc: "memory-ordering semantics",
        values: &[
            ("WEAK", &["weak"]),
            ("VOLATILE", &["volatile"]),
            ("RELAXED", &["relaxed"]),
            ("ACQUIRE", &["acquire"]),
            ("RELEASE", &["release"]),
            ("ACQ_REL", &["acq_rel"]),
            ("MMIO", &["mmio"]),
        ],
    },
    QualField {
        name: "SCOPE",
        shift: 14,
        bits: 3,
        doc: "scope",
        values: &[
            ("CTA", &["cta"]),
            ("CLUSTER", &["cluster"]),
            ("GPU", &["gpu"]),
            ("SYS", &["sys"]),
        ],
    },
    QualField {
        name: "SHAPE",
        shift: 17,
        bits: 3,
        doc: "ldmatrix/stmatrix shape",
        values: &[
            ("M8N8", &["m8n8"]),
            ("M16N16", &["m16n16"]),
            ("M8N16", &["m8n16"]),
            ("M16N8", &["m16n8"]),
        ],
    },
    QualField {
        name: "TRANS",
        shift: 20,
        bits: 1,
        doc: "ldmatrix/stmatrix .trans",
        values: &[("YES", &["trans"])],
    },
    QualField {
        name: "MODE",
        shift: 21,
        bits: 3,
        doc: "tensor copy load mode",
        values: &[
            ("TILE", &["tile"]),
            ("IM2COL", &["im2col"]),
            ("GATHER4", &["tile::gather4"]),
            ("SCATTER4", &["tile::scatter4"]),
            ("IM2COL_W", &["im2col::w"]),
            ("IM2COL_W_128", &["im2col::w::128"]),
            ("IM2COL_NO_OFFS", &["im2col_no_offs"]),
        ],
    },
    QualField {
        name: "MULTICAST",
        shift: 24,
        bits: 1,
        doc: "multicast to the CTAs of ctaMask",
        values: &[("YES", &["multicast::cluster"])],
    },
    QualField {
        name: "LEVEL",
        shift: 25,
        bits: 2,
        doc: "prefetch cache level",
        values: &[("L1", &["L1"]), ("L2", &["L2"])],
    },
    QualField {
        name: "MATRIX",
        shift: 27,
        bits: 3,
        doc: "wmma.load/store matrix",
        values: &[("A", &["a"]), ("B", &["b"]), ("C", &["c"]), ("D", &["d"])],
    },
];

/// `qual` of an opcode's modifiers.
pub fn qual(modifiers: &[String]) -> u32 {
    let mut q = 0;
    for f in QUAL_FIELDS {
        let mut v = 0;
        for (i, (_, mods)) in f.values.iter().enumerate() {
            if modifiers.iter().any(|m| mods.contains(&m.as_str())) {
                v = i as u32 + 1;
            }
        }
        q |= v << f.shift;
    }
    q
}

/// A state space modifier's code (`BPF2PTX_SPACE_*`), or `None` for a modifier that
/// names none.
fn space_of(m: &str) -> Option<u32> {
    Some(match m {
        "global" => 1,
        "shared" | "shared::cta" => 2,
        "local" => 3,
        "shared::cluster" => 4,
        "const" => 5,
        "param" | "param::entry" | "param::func" => 6,
        _ => return None,
    })
}

/// The state spaces an opcode names, in order (`cp.async.bulk.shared::cluster.global`:
/// destination, then source).
fn spaces(modifiers: &[String]) -> Vec<u32> {
    modifiers.iter().filter_map(|m| space_of(m)).collect()
}

/// Bits of one element of the type modifier (the last one that names a type).
fn type_bits(modifiers: &[String]) -> Option<u32> {
    modifiers.iter().rev().find_map(|m| {
        Some(match m.as_str() {
            "b1" => 1,
            "s4" | "u4" => 4,
            "b8" | "u8" | "s8" | "e4m3" | "e5m2" => 8,
            "b16" | "u16" | "s16" | "f16" | "bf16" | "e4m3x2" | "e5m2x2" => 16,
            "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" | "tf32" | "e4m3x4" | "e5m2x4" => 32,
            "b64" | "u64" | "s64" | "f64" => 64,
            "b128" => 128,
            _ => return None,
        })
    })
}

/// The vector width modifier (`.v2`, `.v4`, `.v8`).
fn vector(modifiers: &[String]) -> Option<u32> {
    modifiers.iter().find_map(|m| match m.as_str() {
        "v2" => Some(2),
        "v4" => Some(4),
        "v8" => Some(8),
        _ => None,
    })
}

/// Whether the instruction must be executed by its warp's lanes together (`.aligned`,
/// and `bar.sync`/`bar.arrive`/`bar.red`, which are `barrier.*.aligned`): a site before
/// it waits for the lanes that arrived together before the instruction runs
/// ([`rejoin_aligned`]).
pub fn is_aligned(insn: &Instruction) -> bool {
    let o = &insn.opcode;
    o.has("aligned")
        || (o.base == "bar"
            && !o.has("warp")
            && o.modifiers
                .iter()
                .any(|m| matches!(m.as_str(), "sync" | "arrive" | "red")))
}

/// The operands inside brackets, by index.
fn brackets(insn: &Instruction) -> Vec<usize> {
    insn.operands
        .iter()
        .enumerate()
        .filter(|(_, o)| match o {
            Operand::Address { .. } => true,
            Operand::Other(t) => t.trim_start().starts_with('['),
            _ => false,
        })
        .map(|(k, _)| k)
        .collect()
}

/// An address operand `[base]`, `[base+off]`, `[imm]`, or `[a].unified`.
fn addr_val(op: Option<&Operand>) -> R<Val> {
    match op {
        Some(Operand::Address { base, offset }) => Ok(Val::Addr {
            base: base.clone(),
            offset: *offset,
        }),
        Some(Operand::Other(t)) => {
            let t = t.trim();
            let t = t.strip_suffix(".unified").map(str::trim_end).unwrap_or(t);
            let inner = t
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .map(str::trim);
            match inner {
                Some(i) => inner_addr(i),
                None => bad(format!("`{t}` is not an address")),
            }
        }
        Some(o) => bad(format!("`{}` is not an address", operand_text(o))),
        None => bad("an address operand is missing"),
    }
}

/// The inside of `[ ]`: `base`, `base+N`, `base+-N`, `base-N`, `N`.
fn inner_addr(t: &str) -> R<Val> {
    if let Some(v) = parse_imm(t) {
        return Ok(Val::Addr {
            base: String::new(),
            offset: v,
        });
    }
    let (base, off) = match t.find(['+', '-']) {
        Some(k) => {
            let (b, rest) = t.split_at(k);
            let rest = rest.replace(' ', "");
            let off = match rest.strip_prefix('+') {
                Some(r) => parse_imm(r),
                None => parse_imm(&rest),
            };
            match off {
                Some(o) => (b.trim(), o),
                None => return bad(format!("`[{t}]` is not [reg+imm], [symbol+imm] or [imm]")),
            }
        }
        None => (t, 0),
    };
    if !is_name(base) {
        return bad(format!("`[{t}]` is not [reg+imm], [symbol+imm] or [imm]"));
    }
    Ok(Val::Addr {
        base: base.to_string(),
        offset: off,
    })
}

fn is_name(t: &str) -> bool {
    let mut b = t.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || matches!(c, b'_' | b'$' | b'%'))
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.'))
}

fn parse_imm(t: &str) -> Option<i64> {
    let t = t.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim()),
        None => (false, t),
    };
    let t = t.strip_suffix(['U', 'u']).unwrap_or(t);
    let v = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()? as i64,
        None => t.parse::<i64>().ok()?,
    };
    Some(if neg { v.checked_neg()? } else { v })
}

fn operand_text(o: &Operand) -> String {
    match o {
        Operand::Register(t) | Operand::Immediate(t) | Operand::Symbol(t) | Operand::Other(t) => {
            t.clone()
        }
        Operand::Address { base, offset } => format!("[{base}+{offset}]"),
        Operand::Vector(v) => format!(
            "{{{}}}",
            v.iter().map(operand_text).collect::<Vec<_>>().join(", ")
        ),
        Operand::List(v) => format!(
            "({})",
            v.iter().map(operand_text).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A scalar operand: an immediate (constant) or a register.
fn scalar(op: Option<&Operand>, what: &str) -> R<Val> {
    match op {
        Some(Operand::Immediate(t)) => match parse_imm(t) {
            Some(v) => Ok(Val::Const(v as u64)),
            None => bad(format!("{what} `{t}` is not a number")),
        },
        Some(Operand::Register(r)) | Some(Operand::Symbol(r)) => Ok(Val::Reg(r.clone())),
        Some(o) => bad(format!(
            "{what} `{}` is not a register or number",
            operand_text(o)
        )),
        None => bad(format!("{what} is missing")),
    }
}

/// A tensor operand `[tensorMap, {c0, c1, ...}]`: the map's address and the coordinates.
fn tensor_operand(op: Option<&Operand>) -> R<(Val, Vec<Val>)> {
    let Some(Operand::Other(t)) = op else {
        return bad("the [tensorMap, {coordinates}] operand is missing");
    };
    let inner = t
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .map(str::trim);
    let parsed = inner.and_then(|i| {
        let (map, coords) = i.split_once(',')?;
        let coords = coords.trim().strip_prefix('{')?.strip_suffix('}')?;
        Some((map.trim(), coords))
    });
    let Some((map, coords)) = parsed else {
        return bad(format!(
            "`{}` is not [tensorMap, {{coordinates}}]",
            t.trim()
        ));
    };
    let map = inner_addr(map)?;
    let mut out = Vec::new();
    for c in coords.split(',') {
        let c = c.trim();
        out.push(match parse_imm(c) {
            Some(v) => Val::Const(u64::from(v as i32 as u32)),
            None if is_name(c) => Val::Reg(c.to_string()),
            None => {
                return bad(format!(
                    "tensor coordinate `{c}` is not a register or number"
                ))
            }
        });
    }
    if out.is_empty() || out.len() > 5 {
        return bad(format!("{} tensor coordinates (1 to 5)", out.len()));
    }
    Ok((map, out))
}

/// Bytes of the elements of a data operand that the instruction moves: a vector's
/// elements other than the sink `_`, or one element.
fn data_bytes(elem_bits: u32, data: Option<&Operand>, width: u32) -> u32 {
    let live = match data {
        Some(Operand::Vector(v)) => v
            .iter()
            .filter(|o| !matches!(o, Operand::Symbol(s) if s == "_"))
            .count() as u32,
        _ => width,
    };
    elem_bits * live / 8
}

/// The cache-policy operand of an instruction with `.L2::cache_hint`: the last operand,
/// or the one before `byteMask` (`.cp_mask`).
fn policy(insn: &Instruction) -> R<Val> {
    if !insn.opcode.has("L2::cache_hint") {
        return Ok(Val::Const(0));
    }
    let back = if insn.opcode.has("cp_mask") { 2 } else { 1 };
    let k = insn.operands.len().checked_sub(back);
    match k.and_then(|k| insn.operands.get(k)) {
        Some(Operand::Register(r)) | Some(Operand::Symbol(r)) => Ok(Val::Reg(r.clone())),
        Some(Operand::Immediate(t)) => match parse_imm(t) {
            Some(v) => Ok(Val::Const(v as u64)),
            None => bad(format!("cache-policy `{t}` is not a number")),
        },
        _ => bad("the cache-policy operand of .L2::cache_hint is missing"),
    }
}

/// `(M, N, K)` of a `wmma` shape `mMnNkK`.
fn wmma_shape(modifiers: &[String]) -> Option<(u32, u32, u32)> {
    modifiers.iter().find_map(|m| {
        let r = m.strip_prefix('m')?;
        let (mm, r) = r.split_once('n')?;
        let (nn, kk) = r.split_once('k')?;
        Some((mm.parse().ok()?, nn.parse().ok()?, kk.parse().ok()?))
    })
}

/// The memory site of an instruction: `None` when it is not a `gpu/mem` attach point
/// (its opcode moves no data, or it reads `.const` or `.param` space, which holds no data
/// of the kernel's own), an error when its operands are not what the ISA says.
pub fn mem_site(insn: &Instruction) -> Result<Option<MemSite>, OperandError> {
    let Some(row) = opcodes::classify(&insn.opcode) else {
        return Ok(None);
    };
    if !row.is_mem() {
        return Ok(None);
    }
    let m = &insn.opcode.modifiers;
    let sp = spaces(m);
    // Spaces that hold no data of the kernel's own are not instrumented.
    if matches!(row.mem, Mem::Load | Mem::Store | Mem::Prefetch)
        && sp.iter().any(|s| matches!(s, 5 | 6))
    {
        return Ok(None);
    }
    let mut s = MemSite {
        op: row.opcode,
        op_id: row.id,
        addr: Val::Const(0),
        size: Val::Const(0),
        flags: 0,
        addr2: Val::Const(0),
        policy: policy(insn)?,
        size2: Val::Const(0),
        qual: qual(m),
        count: 1,
        coords: Vec::new(),
    };
    let br = brackets(insn);
    let first_space = sp.first().copied().unwrap_or(0);
    let elem = type_bits(m).unwrap_or(0);
    let width = vector(m).unwrap_or(1);
    let ops = &insn.operands;
    let mut space = first_space;
    let mut space2 = 0;
    let mut flags;
    match row.mem {
        Mem::No(_) => return Ok(None),
        Mem::Load | Mem::MultimemLoad => {
            let a = *br
                .first()
                .ok_or_else(|| OperandError("no address operand".into()))?;
            s.addr = addr_val(ops.get(a))?;
            s.size = Val::Const(u64::from(data_bytes(
                elem,
                a.checked_sub(1).and_then(|d| ops.get(d)),
                width,
            )));
            s.count = width;
            flags = MEM_LOAD;
        }
        Mem::Store
        | Mem::StAsync
        | Mem::MultimemStore
        | Mem::Red
        | Mem::RedAsync
        | Mem::MultimemRed
        | Mem::Atom => {
            let a = *br
                .first()
                .ok_or_else(|| OperandError("no address operand".into()))?;
            s.addr = addr_val(ops.get(a))?;
            s.size = Val::Const(u64::from(data_bytes(elem, ops.get(a + 1), width)));
            s.count = width;
            flags = match row.mem {
                Mem::Atom => MEM_LOAD | MEM_STORE | MEM_ATOMIC,
                Mem::Red | Mem::MultimemRed => MEM_STORE | MEM_ATOMIC,
                Mem::RedAsync => MEM_STORE | MEM_ATOMIC | MEM_ASYNC,
                Mem::StAsync => MEM_STORE | MEM_ASYNC,
                _ => MEM_STORE,
            };
            if matches!(row.mem, Mem::StAsync | Mem::RedAsync) {
                // The mbarrier that counts the bytes, when the form has one.
                if let Some(&mb) = br.get(1) {
                    s.addr2 = addr_val(ops.get(mb))?;
                    space2 = sp.first().copied().unwrap_or(0);
                }
            }
        }
        Mem::Prefetch => {
            let a = *br
                .first()
                .ok_or_else(|| OperandError("no address operand".into()))?;
            s.addr = addr_val(ops.get(a))?;
            flags = 0;
        }
        Mem::StBulk => {
            let a = *br
                .first()
                .ok_or_else(|| OperandError("no address operand".into()))?;
            s.addr = addr_val(ops.get(a))?;
            s.size = scalar(ops.get(a + 1), "size")?;
            flags = MEM_STORE;
        }
        Mem::CpAsync => {
            // [dst], [src], cp-size{, src-size | ignore-src}{, cache-policy}
            if br.len() != 2 || br[0] != 0 || br[1] != 1 {
                return bad("cp.async needs [dst], [src]");
            }
            s.addr2 = addr_val(ops.first())?;
            s.addr = addr_val(ops.get(1))?;
            let cp = match scalar(ops.get(2), "cp-size")? {
                Val::Const(v) if matches!(v, 4 | 8 | 16) => v as u32,
                other => return bad(format!("cp-size {other:?} is not 4, 8 or 16")),
            };
            let policy = usize::from(insn.opcode.has("L2::cache_hint"));
            s.size2 = Val::Const(u64::from(cp));
            s.size = match ops.len().checked_sub(policy) {
                Some(4) => match &ops[3] {
                    // ignore-src is a predicate, src-size a 32-bit integer; the kernel's
                    // declaration tells them apart when the context is filled.
                    Operand::Immediate(t) => match parse_imm(t) {
                        Some(v) => Val::Const(v as u64),
                        None => return bad(format!("src-size `{t}` is not a number")),
                    },
                    Operand::Register(r) | Operand::Symbol(r) => Val::CpSource {
                        reg: r.clone(),
                        bytes: cp,
                    },
                    o => {
                        return bad(format!(
                            "`{}` is not src-size or ignore-src",
                            operand_text(o)
                        ))
                    }
                },
                Some(3) => Val::Const(u64::from(cp)),
                _ => return bad("cp.async has 3 to 5 operands"),
            };
            space2 = space_of_or(sp.first(), 2);
            space = 1;
            flags = MEM_LOAD | MEM_STORE2 | MEM_ASYNC;
        }
        Mem::Bulk => {
            // [dstMem], [srcMem], size, ...: the spaces are `.dst.src`.
            if br.len() < 2 || br[0] != 0 || br[1] != 1 {
                return bad("a bulk copy needs [dstMem], [srcMem]");
            }
            s.addr2 = addr_val(ops.first())?;
            s.addr = addr_val(ops.get(1))?;
            s.size = scalar(ops.get(2), "size")?;
            s.size2 = s.size.clone();
            space2 = sp.first().copied().unwrap_or(0);
            space = sp.get(1).copied().unwrap_or(0);
            flags = MEM_LOAD | MEM_STORE2 | MEM_ASYNC;
            if insn.opcode.base == "cp" && insn.opcode.has("reduce") {
                flags |= MEM_ATOMIC;
            }
        }
        Mem::BulkPrefetch => {
            let a = *br
                .first()
                .ok_or_else(|| OperandError("no address operand".into()))?;
            s.addr = addr_val(ops.get(a))?;
            s.size = scalar(ops.get(a + 1), "size")?;
            flags = MEM_ASYNC;
            space = 1;
        }
        Mem::Tensor => {
            let dims = tensor_dims(m)?;
            // To shared: [dstMem], [tensorMap, coords], [mbar]...; to global (a store
            // or reduction): [tensorMap, coords], [srcMem]...
            let to_global = sp.first() == Some(&1);
            let (map_at, smem_at) = if to_global { (0, 1) } else { (1, 0) };
            let (map, coords) = tensor_operand(ops.get(map_at))?;
            if coords.len() != dims as usize {
                return bad(format!("{} coordinates for a {dims}d copy", coords.len()));
            }
            s.addr = map;
            s.addr2 = addr_val(ops.get(smem_at))?;
            s.coords = coords;
            s.count = dims;
            space = 1;
            space2 = if to_global {
                sp.get(1).copied().unwrap_or(2)
            } else {
                sp.first().copied().unwrap_or(2)
            };
            flags = MEM_ASYNC | MEM_TENSOR;
            flags |= if to_global {
                MEM_STORE | MEM_LOAD2
            } else {
                MEM_LOAD | MEM_STORE2
            };
            if insn.opcode.has("reduce") {
                flags |= MEM_ATOMIC;
            }
        }
        Mem::TensorPrefetch => {
            let dims = tensor_dims(m)?;
            let (map, coords) = tensor_operand(ops.first())?;
            if coords.len() != dims as usize {
                return bad(format!(
                    "{} coordinates for a {dims}d prefetch",
                    coords.len()
                ));
            }
            s.addr = map;
            s.coords = coords;
            s.count = dims;
            space = 1;
            flags = MEM_ASYNC | MEM_TENSOR;
        }
        Mem::LdMatrix | Mem::StMatrix => {
            let load = row.mem == Mem::LdMatrix;
            let a = if load { 1 } else { 0 };
            if br.first() != Some(&a) {
                return bad("the address operand is not where the ISA puts it");
            }
            s.addr = addr_val(ops.get(a))?;
            let num = m
                .iter()
                .find_map(|x| match x.as_str() {
                    "x1" => Some(1),
                    "x2" => Some(2),
                    "x4" => Some(4),
                    _ => None,
                })
                .ok_or_else(|| OperandError("no .x1, .x2 or .x4".into()))?;
            // Rows of 16 bytes per matrix, one row address per lane: 8 for m8n8, m8n16
            // and stmatrix's m16n8 (stored transposed: 8 rows of 16 bytes), 16 for
            // ldmatrix's m16n16.
            let rows = if m.iter().any(|x| x == "m16n16") {
                16
            } else {
                8
            };
            s.size = Val::Lanes {
                lanes: rows * num,
                bytes: 16,
            };
            s.count = num;
            flags = if load { MEM_LOAD } else { MEM_STORE };
        }
        Mem::WmmaLoad | Mem::WmmaStore => {
            let load = row.mem == Mem::WmmaLoad;
            let a = if load { 1 } else { 0 };
            if br.first() != Some(&a) {
                return bad("the address operand is not where the ISA puts it");
            }
            s.addr = addr_val(ops.get(a))?;
            let (mm, nn, kk) =
                wmma_shape(m).ok_or_else(|| OperandError("no .mMnNkK shape".into()))?;
            let (r, c) = match m.get(1).map(String::as_str) {
                Some("a") => (mm, kk),
                Some("b") => (kk, nn),
                _ => (mm, nn),
            };
            // The warp moves the whole matrix; each lane its 1/32.
            s.size = Val::Const(u64::from(r * c * elem / 8 / 32));
            flags = if load { MEM_LOAD } else { MEM_STORE };
        }
        Mem::Mbarrier => {
            let a = *br
                .first()
                .ok_or_else(|| OperandError("no address operand".into()))?;
            s.addr = addr_val(ops.get(a))?;
            s.size = Val::Const(8);
            let sub = m.first().map(String::as_str).unwrap_or("");
            flags = match sub {
                "init" | "inval" => MEM_STORE,
                "test_wait" | "try_wait" => MEM_LOAD,
                _ => MEM_LOAD | MEM_STORE | MEM_ATOMIC,
            };
            // The transaction bytes of the forms that have them.
            let tx = sub == "expect_tx"
                || sub == "complete_tx"
                || m.get(1).is_some_and(|x| x == "expect_tx");
            if tx {
                s.size2 = scalar(ops.get(a + 1), "txCount")?;
            }
        }
        Mem::TensormapCopy => {
            if br.len() < 2 || br[0] != 0 || br[1] != 1 {
                return bad("tensormap.cp_fenceproxy needs [dst], [src]");
            }
            s.addr2 = addr_val(ops.first())?;
            s.addr = addr_val(ops.get(1))?;
            s.size = scalar(ops.get(2), "size")?;
            s.size2 = s.size.clone();
            space2 = sp.first().copied().unwrap_or(0);
            space = sp.get(1).copied().unwrap_or(0);
            flags = MEM_LOAD | MEM_STORE2;
        }
    }
    if s.policy != Val::Const(0) || insn.opcode.has("L2::cache_hint") {
        flags |= MEM_HINT;
    }
    s.flags = flags | space << MEM_SPACE_SHIFT | space2 << MEM_SPACE2_SHIFT;
    Ok(Some(s))
}

fn space_of_or(s: Option<&u32>, default: u32) -> u32 {
    s.copied().unwrap_or(default)
}

fn tensor_dims(m: &[String]) -> R<u32> {
    m.iter()
        .find_map(|x| match x.as_str() {
            "1d" => Some(1),
            "2d" => Some(2),
            "3d" => Some(3),
            "4d" => Some(4),
            "5d" => Some(5),
            _ => None,
        })
        .ok_or_else(|| OperandError("no .1d ... .5d".into()))
}

/// Whether an instruction is a `gpu/mem` attach site: [`mem_site`] says so, or cannot
/// read it (the weaver then reports the error rather than skip an access).
pub fn is_mem_site(insn: &Instruction) -> bool {
    !matches!(mem_site(insn), Ok(None))
}

/// A site's blocks (`text`) before an instruction its warp must execute together
/// ([`is_aligned`]), wrapped so that the lanes that arrived together wait for each other
/// before it: the probes' own code may diverge (the map runtime's locks), block and
/// per-thread guards send lanes past the probe, and ptxas does not always reconverge such
/// code before the next instruction (seen on the H200, specs/abi.md "Execution
/// granularity"); an `.aligned` instruction run by part of a warp is undefined. For a
/// probe that may end its thread the wait is `match.any.sync`, which does not wait for
/// exited lanes. Other instructions get `text` unchanged.
pub fn rejoin_aligned(insn: &Instruction, may_end_thread: bool, text: String) -> String {
    if !is_aligned(insn) || text.is_empty() {
        return text;
    }
    let wait = if may_end_thread {
        "match.any.sync.b32 %bpf2ptx_jw, %bpf2ptx_j, %bpf2ptx_j;\n"
    } else {
        "bar.warp.sync %bpf2ptx_j;\n"
    };
    format!("{{\n.reg .b32 %bpf2ptx_j, %bpf2ptx_jw;\nactivemask.b32 %bpf2ptx_j;\n{text}{wait}}}\n")
}

/// Memory sites of a kernel body for the `--sites`-style snapshot of the tests: each
/// instruction's line and its [`MemSite`] (or the reason its operands were refused).
pub fn describe(body: &[super::ptx::Statement]) -> Vec<(u32, String, Result<MemSite, String>)> {
    body.iter()
        .filter_map(|s| {
            let i = s.as_instruction()?;
            match mem_site(i) {
                Ok(None) => None,
                Ok(Some(m)) => Some((s.line(), s.text(), Ok(m))),
                Err(e) => Some((s.line(), s.text(), Err(e.0))),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn insn(text: &str) -> Instruction {
        let src = format!(
            ".version 8.8\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{{\n{text}\n}}\n"
        );
        let m = super::super::ptx::parse(&src).expect("parses");
        let f = m.functions().next().expect("a kernel");
        let i = f.instructions().next().expect("an instruction").1.clone();
        i
    }

    fn site(text: &str) -> MemSite {
        mem_site(&insn(text))
            .expect("reads")
            .expect("a memory site")
    }

    fn space(flags: u32) -> (u32, u32) {
        (flags >> 8 & 0xff, flags >> 16 & 0xff)
    }

    #[test]
    fn loads_and_stores_keep_their_first_release_meaning() {
        let s = site("ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];");
        assert_eq!(s.size, Val::Const(16));
        assert_eq!(s.flags, MEM_LOAD | 1 << 8);
        assert_eq!(s.count, 4);
        assert_eq!(
            s.addr,
            Val::Addr {
                base: "%rd1".into(),
                offset: 16
            }
        );
        let s = site("st.shared::cta.v2.f32 [tile+4], {%f1, %f2};");
        assert_eq!(
            (s.size.clone(), s.flags),
            (Val::Const(8), MEM_STORE | 2 << 8)
        );
        let s = site("atom.global.add.u32 %r5, [%rd1], 1;");
        assert_eq!(s.flags, MEM_LOAD | MEM_STORE | MEM_ATOMIC | 1 << 8);
        let s = site("@%p2 red.global.add.f32 [%rd1+0x10], %f1;");
        assert_eq!(s.flags, MEM_STORE | MEM_ATOMIC | 1 << 8);
        assert_eq!(s.size, Val::Const(4));
        assert!(mem_site(&insn("ld.param.u64 %rd1, [p];"))
            .unwrap()
            .is_none());
        assert!(mem_site(&insn("ld.param::entry.b32 %r1, [p];"))
            .unwrap()
            .is_none());
        assert!(mem_site(&insn("ld.const.u32 %r1, [c];")).unwrap().is_none());
        assert!(mem_site(&insn("st.param::func.b64 [p], %rd1;"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn wide_vectors_sinks_and_hints() {
        let s =
            site("ld.global.L2::evict_last.v8.f32 {%f0, _, %f2, %f3, %f4, %f5, %f6, %f7}, [%rd1];");
        assert_eq!(s.size, Val::Const(28));
        assert_eq!(s.count, 8);
        assert_eq!(s.qual >> 7 & 3, 3);
        let s = site("ld.global.b128 %rq, [%rd1];");
        assert_eq!(s.size, Val::Const(16));
        let s = site("ld.global.L2::cache_hint.b64 %rd2, [%rd1], %rd9;");
        assert_eq!(s.policy, Val::Reg("%rd9".into()));
        assert!(s.flags & MEM_HINT != 0);
        let s = site("ld.b32 %r0, [%rd1].unified;");
        assert_eq!(
            s.addr,
            Val::Addr {
                base: "%rd1".into(),
                offset: 0
            }
        );
        let s = site("ld.global.relaxed.gpu.u32 %r0, [gbl];");
        assert_eq!((s.qual >> 11 & 7, s.qual >> 14 & 7), (3, 3));
    }

    #[test]
    fn async_copies() {
        let s = site("@%p1 cp.async.cg.shared.global [ %r26 + 0 ], [ %rd20 + 0 ], 0x10, %r27;");
        assert_eq!(
            s.addr,
            Val::Addr {
                base: "%rd20".into(),
                offset: 0
            }
        );
        assert_eq!(
            s.addr2,
            Val::Addr {
                base: "%r26".into(),
                offset: 0
            }
        );
        assert_eq!(
            s.size,
            Val::CpSource {
                reg: "%r27".into(),
                bytes: 16
            }
        );
        assert_eq!(s.size2, Val::Const(16));
        assert_eq!(s.flags & 0xff, MEM_LOAD | MEM_STORE2 | MEM_ASYNC);
        assert_eq!(space(s.flags), (1, 2));
        assert_eq!(s.qual & 7, 2);
        let s = site("cp.async.ca.shared.global.L2::cache_hint [%r2], [%rd1], 4, %rd7;");
        assert_eq!(
            (s.size.clone(), s.policy.clone()),
            (Val::Const(4), Val::Reg("%rd7".into()))
        );
        let s = site("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1], 4096, [%r2];");
        assert_eq!(space(s.flags), (1, 4));
        assert_eq!(
            (s.size.clone(), s.size2.clone()),
            (Val::Const(4096), Val::Const(4096))
        );
        let s = site("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint.cp_mask [%rd1], [%r1], %r3, %rd5, %rs1;");
        assert_eq!(space(s.flags), (2, 1));
        assert_eq!(s.size, Val::Reg("%r3".into()));
        assert_eq!(s.policy, Val::Reg("%rd5".into()));
        let s =
            site("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd1], [%r1], 256;");
        assert!(s.flags & MEM_ATOMIC != 0);
        let s = site("cp.async.bulk.prefetch.L2.global [%rd1], 512;");
        assert_eq!((s.size.clone(), s.flags & 3), (Val::Const(512), 0));
    }

    #[test]
    fn tensor_copies() {
        let s = site("@%p1 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];");
        assert_eq!(
            s.addr,
            Val::Addr {
                base: "%rd1".into(),
                offset: 0
            }
        );
        assert_eq!(
            s.addr2,
            Val::Addr {
                base: "%r1".into(),
                offset: 0
            }
        );
        assert_eq!(
            s.coords,
            vec![Val::Reg("%r2".into()), Val::Reg("%r3".into())]
        );
        assert_eq!(
            s.flags & 0xff,
            MEM_LOAD | MEM_STORE2 | MEM_ASYNC | MEM_TENSOR
        );
        assert_eq!(space(s.flags), (1, 4));
        let s = site("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%rd1, {%r2, -1, 7}], [%r1];");
        assert_eq!(
            s.flags & 0xff,
            MEM_STORE | MEM_LOAD2 | MEM_ASYNC | MEM_TENSOR
        );
        assert_eq!(s.coords[1], Val::Const(0xffff_ffff));
        assert_eq!(s.count, 3);
        assert!(mem_site(&insn(
            "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r2}], [%r1];"
        ))
        .is_err());
        let s = site("cp.async.bulk.prefetch.tensor.2d.L2.global [%rd1, {%r2, %r3}];");
        assert_eq!(s.count, 2);
    }

    #[test]
    fn matrices() {
        let s =
            site("ldmatrix.sync.aligned.m8n8.x4.shared.b16 { %r1, %r2, %r3, %r4 }, [ %r5 + 0 ];");
        assert_eq!(
            s.size,
            Val::Lanes {
                lanes: 32,
                bytes: 16
            }
        );
        assert_eq!(s.size.known(), Some(16));
        let s = site("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r1, %r2}, [%r5];");
        assert_eq!(
            s.size,
            Val::Lanes {
                lanes: 16,
                bytes: 16
            }
        );
        assert!(s.qual >> 20 & 1 == 1);
        let s = site("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%r5], {%r1};");
        assert_eq!(
            s.size,
            Val::Lanes {
                lanes: 8,
                bytes: 16
            }
        );
        let s = site("wmma.load.a.sync.aligned.row.m16n16k16.global.f16 {%r1, %r2, %r3, %r4, %r5, %r6, %r7, %r8}, [%rd1], 16;");
        assert_eq!(s.size, Val::Const(16));
        let s = site("wmma.store.d.sync.aligned.row.m16n16k16.global.f32 [%rd1], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, 16;");
        assert_eq!(s.size, Val::Const(32));
    }

    #[test]
    fn barriers_and_the_rest() {
        let s = site("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 16384;");
        assert_eq!(
            (s.size.clone(), s.size2.clone()),
            (Val::Const(8), Val::Const(16384))
        );
        let s = site("mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r1], %r2;");
        assert_eq!(s.flags & 7, MEM_LOAD);
        assert!(mem_site(&insn("mbarrier.pending_count.b64 %r1, %rd1;"))
            .unwrap()
            .is_none());
        let s = site("red.async.relaxed.cluster.shared::cluster.mbarrier::complete_tx::bytes.add.u32 [%r1], %r2, [%r3];");
        assert_eq!(
            s.addr2,
            Val::Addr {
                base: "%r3".into(),
                offset: 0
            }
        );
        let s =
            site("multimem.ld_reduce.relaxed.gpu.global.add.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];");
        assert_eq!(s.size, Val::Const(16));
        let s = site("prefetch.global.L2::evict_last [%rd1];");
        assert_eq!((s.flags & 7, s.size.clone()), (0, Val::Const(0)));
        assert!(mem_site(&insn("prefetch.param.tensormap [p];"))
            .unwrap()
            .is_none());
        assert!(mem_site(&insn("wgmma.fence.sync.aligned;"))
            .unwrap()
            .is_none());
        assert!(mem_site(&insn("add.s32 %r1, %r2, 1;")).unwrap().is_none());
        assert!(mem_site(&insn("cp.async.ca.shared.global [%r1], 4;")).is_err());
        assert!(mem_site(&insn("cp.async.ca.shared.global [%r1], [%rd1], 12;")).is_err());
    }

    #[test]
    fn fill_reads_operands_and_knows_the_constants() {
        let mut regs = HashMap::new();
        regs.insert("%r".to_string(), 32);
        regs.insert("%rd".to_string(), 64);
        regs.insert("%p".to_string(), 1);
        let i = insn("@%p1 cp.async.cg.shared.global [ %r26 + 0 ], [ %rd20 + 8 ], 0x10, %p2;");
        let (text, ctx) = mem_ctx(&i, &regs, "k", 3, 40).expect("fills");
        assert!(
            text.contains("mov.b64 %bpf2ptx_c0, %rd20;\nadd.s64 %bpf2ptx_c0, %bpf2ptx_c0, 8;"),
            "{text}"
        );
        assert!(text.contains("selp.b32 %bpf2ptx_u, 0, 16, %p2;"), "{text}");
        assert!(text.contains("cvt.u64.u32 %bpf2ptx_c3, %r26;"), "{text}");
        // addr and size unknown; flags, kernel and site known.
        assert_eq!(ctx.known & 0xff, 0);
        assert_eq!(ctx.known >> 8 & 0xf, 0);
        assert_eq!(ctx.known >> 12 & 0xfff, 0xfff);
        assert_eq!(u32::from_le_bytes(ctx.bytes[16..20].try_into().unwrap()), 3);
        assert_eq!(
            u32::from_le_bytes(ctx.bytes[40..44].try_into().unwrap()),
            30
        );
        // Stores only through `st.local.u64 [bpf2ptx_ctx...` lines, never to the kernel.
        for l in text.lines().filter(|l| l.starts_with("st")) {
            assert!(l.starts_with("st.local.u64 [bpf2ptx_ctx"), "{l}");
        }
        let e = mem_ctx(&insn("ld.global.u32 %x, [%q];"), &regs, "k", 0, 7).unwrap_err();
        assert!(e.to_string().contains("%q"), "{e}");
    }

    #[test]
    fn aligned_instructions_are_rejoined() {
        assert!(is_aligned(&insn("wgmma.fence.sync.aligned;")));
        assert!(is_aligned(&insn("bar.sync 0;")));
        assert!(!is_aligned(&insn("bar.warp.sync -1;")));
        assert!(!is_aligned(&insn("ld.global.u32 %r1, [%rd1];")));
        let t = rejoin_aligned(&insn("bar.sync 0;"), false, "X\n".into());
        assert!(
            t.starts_with("{\n.reg .b32 %bpf2ptx_j")
                && t.contains("X\nbar.warp.sync %bpf2ptx_j;\n}")
        );
        assert_eq!(
            rejoin_aligned(&insn("ld.u32 %r1, [%rd1];"), false, "X\n".into()),
            "X\n"
        );
    }
}
