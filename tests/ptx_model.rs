//! A PTX-level model of a launch: an interpreter of the PTX that nvcc writes for small
//! kernels and that `bpf2ptx inject` weaves into them (site blocks, inlined probe bodies,
//! fusion's accumulators, flushes and forwarded slots), for the CPU tier of the tests. It
//! runs a whole grid and lets the test read every map afterwards, so fused and unfused
//! lowerings of the same probes can be compared on the maps a host would see.
//!
//! What it models, and how:
//!
//! - **Threads and warps.** Blocks run one after the other; a block's threads are grouped
//!   into warps of 32 by linear thread index, as the hardware forms them. Each step picks a
//!   warp round robin and runs one instruction for the lanes of that warp that are at the
//!   smallest position (the call chain's program counters, lexicographically): the lanes
//!   that "arrived together". That is `activemask`; lanes that branch apart run in turns
//!   and reconverge when the ones behind catch up (the min-pc heuristic of SIMT machines).
//! - **Warp collectives** (`shfl.sync`, `match.any.sync`, `bar.warp.sync`): lanes wait
//!   until every live lane of the member mask is with them, then run together; a lane of
//!   the mask that exited is an error for `shfl.sync` (undefined on the GPU) and counts as
//!   arrived for the others. `bar.sync` waits for every live thread of the block.
//! - **Memory.** One sparse byte-addressed space: module globals and buffers the test
//!   allocates (global), the block's shared variables, each thread's local variables and
//!   call parameters, the kernel parameters, each in a range of its own, so a generic
//!   address is the state-space address (`cvta` is the identity) and a wrong address is
//!   caught: a global access outside every allocation is an error.
//! - **Special registers.** `%smid` is the block index mod [`SMS`] (so sharded maps have
//!   several replicas); `%globaltimer` and `%clock64` are deterministic per thread and
//!   read (the n-th read of a thread always gives the same value), so two lowerings that
//!   read the timer as often compare equal.
//! - **Not modelled**: floating point beyond f32 add/mul/fma/compare/convert, textures,
//!   atomics on floats other than add, `trap` ending more than its thread (on the GPU it
//!   ends the launch; here the thread stops, which is what the flush before it is for).
//!
//! Anything outside what it knows is an error naming the instruction, never a guess.

use bpf2ptx_backend::inject::ptx::{self as model, FunctionKind, ItemKind, Operand, StatementKind};
use std::collections::HashMap;

/// SMs the model pretends to have: `%smid` is the block's linear index modulo this.
pub const SMS: u32 = 3;

const PAGE: u64 = 4096;
/// Module globals and buffers.
const GLOBAL_BASE: u64 = 0x1_0000_0000;
/// The block's shared variables (below 2^32: nvcc addresses shared memory with 32 bits).
const SHARED_BASE: u64 = 0x1000_0000;
/// The kernel's parameters.
const KPARAM_BASE: u64 = 0x2000_0000;
/// Each thread's local variables: `LOCAL_BASE + thread * REGION`.
const LOCAL_BASE: u64 = 0x10_0000_0000;
/// Each thread's call parameters: `PARAM_BASE + thread * REGION`.
const PARAM_BASE: u64 = 0x80_0000_0000;
const REGION: u64 = 1 << 20;

/// A sparse little-endian memory.
#[derive(Default)]
struct Memory {
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
}

impl Memory {
    fn byte(&self, a: u64) -> u8 {
        self.pages
            .get(&(a / PAGE))
            .map_or(0, |p| p[(a % PAGE) as usize])
    }

    fn set_byte(&mut self, a: u64, v: u8) {
        self.pages
            .entry(a / PAGE)
            .or_insert_with(|| Box::new([0; PAGE as usize]))[(a % PAGE) as usize] = v;
    }

    fn read(&self, a: u64, n: u32) -> u64 {
        (0..n).fold(0u64, |v, k| {
            v | u64::from(self.byte(a + u64::from(k))) << (8 * k)
        })
    }

    fn write(&mut self, a: u64, n: u32, v: u64) {
        for k in 0..n {
            self.set_byte(a + u64::from(k), (v >> (8 * k)) as u8);
        }
    }
}

/// A scalar type of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ty {
    U(u32),
    S(u32),
    B(u32),
    F(u32),
    Pred,
}

impl Ty {
    fn bits(self) -> u32 {
        match self {
            Ty::U(b) | Ty::S(b) | Ty::B(b) | Ty::F(b) => b,
            Ty::Pred => 1,
        }
    }

    fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    fn parse(m: &str) -> Option<Ty> {
        let (k, b) = m.split_at(1.min(m.len()));
        let bits: u32 = b.parse().ok()?;
        Some(match k {
            "u" => Ty::U(bits),
            "s" => Ty::S(bits),
            "b" => Ty::B(bits),
            "f" => Ty::F(bits),
            _ => return None,
        })
        .filter(|_| matches!(bits, 8 | 16 | 32 | 64))
        .or_else(|| (m == "pred").then_some(Ty::Pred))
    }

    /// `v` cut to the type's width.
    fn mask(self, v: u64) -> u64 {
        match self.bits() {
            64 => v,
            1 => u64::from(v != 0),
            b => v & ((1u64 << b) - 1),
        }
    }

    /// `v` (of the type's width) as a signed 64-bit number.
    fn signed(self, v: u64) -> i64 {
        match self.bits() {
            64 => v as i64,
            b => ((v << (64 - b)) as i64) >> (64 - b),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Special {
    Tid(usize),
    Ntid(usize),
    Ctaid(usize),
    Nctaid(usize),
    LaneId,
    WarpId,
    SmId,
    NSmId,
    LaneMask(u8),
    GlobalTimer,
    Clock64,
    Clock,
}

/// A resolved operand.
#[derive(Clone, Debug)]
enum Opnd {
    Reg(usize),
    NotReg(usize),
    Imm(u64),
    Special(Special),
    /// A variable's address.
    Var(Var),
    /// `[base + off]`.
    Addr(Box<Opnd>, i64),
    /// `{a, b, ...}`.
    Vec(Vec<Opnd>),
    Label(usize),
    Func(usize),
    List(Vec<Opnd>),
    /// `d|p`: a value and a predicate written together (`shfl.sync`'s second output).
    Pair(usize, usize),
}

/// Where a variable lives.
#[derive(Clone, Copy, Debug)]
enum Var {
    Global(u64),
    Shared(u64),
    Local(u64),
    /// A call parameter or a function's parameter, in the thread's parameter region.
    Param(u64),
    KParam(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Mov,
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    MadLo,
    MadHi,
    MadWide,
    Div,
    Rem,
    Min,
    Max,
    Neg,
    Abs,
    Not,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Popc,
    Clz,
    /// `bfind`: the position of the most significant non-sign bit (0xffffffff: none).
    Bfind,
    /// `bfind.shiftamt`: the left shift that makes that bit the most significant one.
    BfindShift,
    Brev,
    Bfe,
    Bfi,
    Prmt,
    Selp,
    Setp,
    Cvt,
    Cvta,
    Fma,
    Ld,
    St,
    Atom,
    Red,
    Bra,
    Call,
    Ret,
    Exit,
    Trap,
    Activemask,
    Shfl,
    MatchAny,
    Vote,
    Redux,
    BarWarpSync,
    BarSync,
    Nop,
    /// What the model does not know: an error when it runs (so a module whose unused
    /// functions use it still loads).
    Unsupported,
}

struct Inst {
    guard: Option<(bool, usize)>,
    op: Op,
    /// Modifiers as written (comparison, atomic operation, shuffle mode, space, ...).
    mods: Vec<String>,
    /// The type modifiers in order (`cvt.u64.u32`: [u64, u32]).
    tys: Vec<Ty>,
    ops: Vec<Opnd>,
    text: String,
}

struct Func {
    name: String,
    insts: Vec<Inst>,
    nregs: usize,
    /// Formal parameters: (address offset in the thread's parameter region, bytes).
    params: Vec<(u64, u32)>,
    rets: Vec<(u64, u32)>,
    entry: bool,
    /// Kernel parameters: (offset in the kernel parameter region, bytes).
    kparams: Vec<(u64, u32)>,
}

/// A module loaded for [`Model::launch`].
pub struct Model {
    /// The flattened functions (shared, so an instruction can be read while the model's
    /// state changes).
    funcs: std::rc::Rc<Vec<Func>>,
    mem: Memory,
    globals: HashMap<String, (u64, u64)>,
    /// Allocated global ranges.
    allocs: Vec<(u64, u64)>,
    next_global: u64,
    /// Bytes of shared memory a block's variables take.
    shared_bytes: u64,
    /// Instructions executed by the last launch.
    pub executed: u64,
}

fn err<T>(s: impl Into<String>) -> Result<T, String> {
    Err(s.into())
}

fn parse_imm(t: &str) -> Option<u64> {
    let t = t.trim();
    if let Some(h) = t.strip_prefix("0f").or_else(|| t.strip_prefix("0F")) {
        return u64::from_str_radix(h, 16).ok();
    }
    if let Some(h) = t.strip_prefix("0d").or_else(|| t.strip_prefix("0D")) {
        return u64::from_str_radix(h, 16).ok();
    }
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let t = t.trim_end_matches(['U', 'u']);
    let v = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else {
        t.parse::<u64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

fn special(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, c)) = name.split_once('.') {
        let c = dim(c)?;
        return Some(match base {
            "%tid" => Special::Tid(c),
            "%ntid" => Special::Ntid(c),
            "%ctaid" => Special::Ctaid(c),
            "%nctaid" => Special::Nctaid(c),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%lanemask_eq" => Special::LaneMask(0),
        "%lanemask_lt" => Special::LaneMask(1),
        "%lanemask_le" => Special::LaneMask(2),
        "%lanemask_gt" => Special::LaneMask(3),
        "%lanemask_ge" => Special::LaneMask(4),
        "%globaltimer" => Special::GlobalTimer,
        "%clock64" => Special::Clock64,
        "%clock" => Special::Clock,
        _ => return None,
    })
}

/// Bytes a declaration's variable takes: its type's size times its dimensions.
fn var_bytes(attrs: &[String], dims: &[Option<u64>]) -> u64 {
    let ty = attrs
        .iter()
        .find_map(|a| Ty::parse(a.trim_start_matches('.')))
        .map_or(1, |t| u64::from(t.bytes()));
    dims.iter().fold(ty, |n, d| n * d.unwrap_or(1))
}

fn var_align(attrs: &[String]) -> u64 {
    attrs
        .iter()
        .position(|a| a == ".align")
        .and_then(|k| attrs.get(k + 1))
        .and_then(|a| a.parse().ok())
        .unwrap_or(8)
        .max(1)
}

/// The values of an initialiser `= {a, b, generic(sym), ...}` or `= v` in an item's text,
/// each as a number or a symbol to resolve.
fn initialiser(text: &str) -> Vec<Result<u64, String>> {
    let Some((_, rest)) = text.split_once('=') else {
        return Vec::new();
    };
    let rest = rest.trim().trim_end_matches(';').trim();
    let rest = rest.trim_start_matches('{').trim_end_matches('}');
    rest.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            let inner = s
                .strip_prefix("generic(")
                .and_then(|x| x.strip_suffix(')'))
                .unwrap_or(s);
            parse_imm(inner).ok_or_else(|| inner.to_string())
        })
        .collect()
}

/// A module variable's initialiser: its address, element size and values (numbers, or
/// symbols whose addresses they are).
type Init = (u64, u64, Vec<Result<u64, String>>);

/// A lexical scope while flattening a function.
#[derive(Default)]
struct Scope {
    parent: Option<usize>,
    regs: HashMap<String, usize>,
    labels: HashMap<String, usize>,
    vars: HashMap<String, Var>,
}

fn lookup<'a, T>(
    scopes: &'a [Scope],
    mut s: usize,
    f: impl Fn(&'a Scope) -> Option<T>,
) -> Option<T> {
    loop {
        if let Some(v) = f(&scopes[s]) {
            return Some(v);
        }
        s = scopes[s].parent?;
    }
}

impl Model {
    /// Loads `ptx`: every function flattened, every module variable allocated (and
    /// initialised where it has an initialiser of numbers and `generic(symbol)`s).
    pub fn new(ptx: &str) -> Result<Model, String> {
        let module = model::parse(ptx).map_err(|e| e.to_string())?;
        let mut m = Model {
            funcs: std::rc::Rc::new(Vec::new()),
            mem: Memory::default(),
            globals: HashMap::new(),
            allocs: Vec::new(),
            next_global: GLOBAL_BASE,
            shared_bytes: 0,
            executed: 0,
        };
        // Module variables first (functions refer to them), with their initialisers.
        let mut inits: Vec<Init> = Vec::new();
        let mut func_names: HashMap<String, usize> = HashMap::new();
        for item in module.items() {
            match item.kind() {
                ItemKind::Declaration(d) => {
                    for v in &d.vars {
                        let bytes = var_bytes(&d.attributes, &v.dims).max(1);
                        let align = var_align(&d.attributes);
                        match d.space.as_str() {
                            ".global" | ".const" => {
                                let at = m.alloc_aligned(bytes, align);
                                m.globals.insert(v.name.clone(), (at, bytes));
                                if v.initialized {
                                    let mut text = String::new();
                                    item.write_to(&mut text);
                                    let el = d
                                        .attributes
                                        .iter()
                                        .find_map(|a| Ty::parse(a.trim_start_matches('.')))
                                        .map_or(1, |t| u64::from(t.bytes()));
                                    inits.push((at, el, initialiser(&text)));
                                }
                            }
                            ".shared" => {
                                let at = m.shared_bytes.next_multiple_of(align);
                                m.shared_bytes = at + bytes;
                                m.globals.insert(v.name.clone(), (SHARED_BASE + at, bytes));
                            }
                            _ => {}
                        }
                    }
                }
                ItemKind::Function(f) => {
                    if !func_names.contains_key(f.name()) {
                        func_names.insert(f.name().to_string(), func_names.len());
                    }
                }
                ItemKind::Directive(_) => {}
            }
        }
        for (at, el, vals) in inits {
            for (k, v) in vals.into_iter().enumerate() {
                let v = match v {
                    Ok(v) => v,
                    Err(sym) => m
                        .globals
                        .get(&sym)
                        .map(|g| g.0)
                        .ok_or_else(|| format!("initialiser names unknown symbol `{sym}`"))?,
                };
                m.mem.write(at + k as u64 * el, el as u32, v);
            }
        }
        let mut funcs: Vec<Option<Func>> = (0..func_names.len()).map(|_| None).collect();
        let mut param_top = 0u64;
        let mut shared_top = m.shared_bytes;
        for item in module.items() {
            let ItemKind::Function(f) = item.kind() else {
                continue;
            };
            if !f.has_body() {
                continue;
            }
            let idx = func_names[f.name()];
            let func = m.flatten(f, &func_names, &mut param_top, &mut shared_top)?;
            funcs[idx] = Some(func);
        }
        m.shared_bytes = shared_top;
        m.funcs = std::rc::Rc::new(
            funcs
                .into_iter()
                .enumerate()
                .map(|(k, f)| {
                    f.unwrap_or(Func {
                        name: format!("prototype {k}"),
                        insts: Vec::new(),
                        nregs: 0,
                        params: Vec::new(),
                        rets: Vec::new(),
                        entry: false,
                        kparams: Vec::new(),
                    })
                })
                .collect(),
        );
        Ok(m)
    }

    fn alloc_aligned(&mut self, bytes: u64, align: u64) -> u64 {
        let at = self.next_global.next_multiple_of(align.max(8));
        self.next_global = at + bytes;
        self.allocs.push((at, at + bytes));
        at
    }

    /// A zeroed buffer of `bytes` in global memory; its address.
    pub fn alloc(&mut self, bytes: u64) -> u64 {
        let at = self.alloc_aligned(bytes.max(1), 256);
        // Keep buffers apart, so an access just past one is an error.
        self.next_global += 256;
        at
    }

    /// The address and size of a module variable.
    pub fn symbol(&self, name: &str) -> Option<(u64, u64)> {
        self.globals.get(name).copied()
    }

    /// `bytes` bytes at `addr`.
    pub fn read(&self, addr: u64, bytes: u64) -> Vec<u8> {
        (0..bytes).map(|k| self.mem.byte(addr + k)).collect()
    }

    /// Writes `data` at `addr`.
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        for (k, b) in data.iter().enumerate() {
            self.mem.set_byte(addr + k as u64, *b);
        }
    }

    fn flatten(
        &self,
        f: &model::Function,
        names: &HashMap<String, usize>,
        param_top: &mut u64,
        shared_top: &mut u64,
    ) -> Result<Func, String> {
        let entry = f.kind() == FunctionKind::Entry;
        let mut scopes = vec![Scope::default()];
        let mut nregs = 0usize;
        let mut local_top = 0u64;
        let mut params = Vec::new();
        let mut rets = Vec::new();
        let mut kparams = Vec::new();
        let mut kp_top = 0u64;
        for (list, out) in [(f.params(), &mut params), (f.returns(), &mut rets)] {
            for p in list {
                let bytes = var_bytes(&p.attributes, &p.var.dims).max(1);
                let align = var_align(&p.attributes).max(1);
                if entry {
                    let at = kp_top.next_multiple_of(align.min(8));
                    kp_top = at + bytes;
                    scopes[0].vars.insert(p.var.name.clone(), Var::KParam(at));
                    kparams.push((at, bytes as u32));
                } else {
                    let at = param_top.next_multiple_of(8);
                    *param_top = at + bytes;
                    scopes[0].vars.insert(p.var.name.clone(), Var::Param(at));
                    out.push((at, bytes as u32));
                }
            }
        }
        // Pass 1: scopes, declarations, labels; instructions with their scope.
        let mut stack = vec![0usize];
        let mut raw: Vec<(usize, model::Instruction)> = Vec::new();
        for st in f.body() {
            let cur = *stack.last().expect("a scope");
            match st.kind() {
                StatementKind::BlockOpen => {
                    scopes.push(Scope {
                        parent: Some(cur),
                        ..Scope::default()
                    });
                    stack.push(scopes.len() - 1);
                }
                StatementKind::BlockClose => {
                    stack.pop();
                    if stack.is_empty() {
                        return err(format!("{}: unbalanced blocks", f.name()));
                    }
                }
                StatementKind::Label(l) => {
                    scopes[cur].labels.insert(l.clone(), raw.len());
                }
                StatementKind::Declaration(d) => {
                    for v in &d.vars {
                        match d.space.as_str() {
                            ".reg" => match v.count {
                                Some(n) => {
                                    for k in 0..n {
                                        scopes[cur].regs.insert(format!("{}{k}", v.name), nregs);
                                        nregs += 1;
                                    }
                                }
                                None => {
                                    scopes[cur].regs.insert(v.name.clone(), nregs);
                                    nregs += 1;
                                }
                            },
                            sp @ (".local" | ".param" | ".shared") => {
                                let bytes = var_bytes(&d.attributes, &v.dims).max(1);
                                let align = var_align(&d.attributes);
                                let var = match sp {
                                    ".local" => {
                                        let at = local_top.next_multiple_of(align);
                                        local_top = at + bytes;
                                        Var::Local(at)
                                    }
                                    ".shared" => {
                                        let at = shared_top.next_multiple_of(align);
                                        *shared_top = at + bytes;
                                        Var::Shared(SHARED_BASE + at)
                                    }
                                    _ => {
                                        let at = param_top.next_multiple_of(align.max(8));
                                        *param_top = at + bytes;
                                        Var::Param(at)
                                    }
                                };
                                scopes[cur].vars.insert(v.name.clone(), var);
                            }
                            other => {
                                return err(format!(
                                    "{}: declaration in state space `{other}` not modelled",
                                    f.name()
                                ))
                            }
                        }
                    }
                }
                StatementKind::Directive(_) => {}
                StatementKind::Instruction(i) => raw.push((cur, i.clone())),
            }
        }
        if local_top > REGION || *param_top > REGION {
            return err("local or parameter variables exceed the model's region");
        }
        // Pass 2: operands resolved in their scopes.
        let mut insts = Vec::with_capacity(raw.len());
        for (scope, i) in &raw {
            let text = format!("line {}: {}", i.line, i.opcode);
            let reg = |name: &str| lookup(&scopes, *scope, |s| s.regs.get(name).copied());
            let resolve = |o: &Operand| -> Result<Opnd, String> {
                fn go(
                    o: &Operand,
                    reg: &dyn Fn(&str) -> Option<usize>,
                    sym: &dyn Fn(&str) -> Option<Opnd>,
                ) -> Result<Opnd, String> {
                    Ok(match o {
                        Operand::Register(r) => match reg(r) {
                            Some(k) => Opnd::Reg(k),
                            None => Opnd::Special(
                                special(r).ok_or_else(|| format!("unknown register `{r}`"))?,
                            ),
                        },
                        Operand::Immediate(t) => {
                            Opnd::Imm(parse_imm(t).ok_or_else(|| format!("immediate `{t}`"))?)
                        }
                        // A register declared without `%` (inline asm's `.reg .u32 r0;`).
                        Operand::Symbol(s) => match reg(s) {
                            Some(k) => Opnd::Reg(k),
                            None => sym(s).ok_or_else(|| format!("unknown symbol `{s}`"))?,
                        },
                        Operand::Vector(v) => Opnd::Vec(
                            v.iter()
                                .map(|x| go(x, reg, sym))
                                .collect::<Result<_, _>>()?,
                        ),
                        Operand::List(v) => Opnd::List(
                            v.iter()
                                .map(|x| go(x, reg, sym))
                                .collect::<Result<_, _>>()?,
                        ),
                        Operand::Address { base, offset } => {
                            let b = if base.starts_with('%') {
                                match reg(base) {
                                    Some(k) => Opnd::Reg(k),
                                    None => return Err(format!("unknown register `{base}`")),
                                }
                            } else {
                                sym(base).ok_or_else(|| format!("unknown symbol `{base}`"))?
                            };
                            Opnd::Addr(Box::new(b), *offset)
                        }
                        Operand::Other(t) => {
                            let t = t.trim();
                            if let Some(r) = t.strip_prefix('!') {
                                match reg(r.trim()) {
                                    Some(k) => Opnd::NotReg(k),
                                    None => return Err(format!("operand `{t}`")),
                                }
                            } else if let Some((d, q)) = t.split_once('|') {
                                match (reg(d.trim()), reg(q.trim())) {
                                    (Some(d), Some(q)) => Opnd::Pair(d, q),
                                    _ => return Err(format!("operand `{t}`")),
                                }
                            } else if let Some(v) =
                                t.strip_prefix('[').and_then(|x| x.strip_suffix(']'))
                            {
                                Opnd::Addr(
                                    Box::new(Opnd::Imm(
                                        parse_imm(v).ok_or_else(|| format!("operand `{t}`"))?,
                                    )),
                                    0,
                                )
                            } else {
                                return Err(format!("operand `{t}` not modelled"));
                            }
                        }
                    })
                }
                let sym = |s: &str| -> Option<Opnd> {
                    if let Some(v) = lookup(&scopes, *scope, |sc| sc.vars.get(s).copied()) {
                        return Some(Opnd::Var(v));
                    }
                    if let Some(t) = lookup(&scopes, *scope, |sc| sc.labels.get(s).copied()) {
                        return Some(Opnd::Label(t));
                    }
                    if let Some(&k) = names.get(s) {
                        return Some(Opnd::Func(k));
                    }
                    let (at, _) = self.globals.get(s)?;
                    Some(Opnd::Var(if *at >= GLOBAL_BASE {
                        Var::Global(*at)
                    } else {
                        Var::Shared(*at)
                    }))
                };
                go(o, &reg, &sym).map_err(|e| format!("{}: {text}: {e}", f.name()))
            };
            let unsupported = |why: String| Inst {
                guard: None,
                op: Op::Unsupported,
                mods: vec![why],
                tys: Vec::new(),
                ops: Vec::new(),
                text: text.clone(),
            };
            let guard = match &i.guard {
                Some(g) => match reg(&g.register) {
                    Some(r) => Some((g.negated, r)),
                    None => {
                        insts.push(unsupported(format!("guard {}", g.register)));
                        continue;
                    }
                },
                None => None,
            };
            let ops = match i
                .operands
                .iter()
                .map(resolve)
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(ops) => ops,
                Err(e) => {
                    insts.push(unsupported(e));
                    continue;
                }
            };
            let mods = i.opcode.modifiers.clone();
            let tys: Vec<Ty> = mods.iter().filter_map(|m| Ty::parse(m)).collect();
            let has = |m: &str| mods.iter().any(|x| x == m);
            let op = match i.opcode.base.as_str() {
                "mov" => Op::Mov,
                "add" => Op::Add,
                "sub" => Op::Sub,
                "mul" if has("hi") => Op::MulHi,
                "mul" if has("wide") => Op::MulWide,
                "mul" => Op::MulLo,
                "mad" if has("hi") => Op::MadHi,
                "mad" if has("wide") => Op::MadWide,
                "mad" => Op::MadLo,
                "div" => Op::Div,
                "rem" => Op::Rem,
                "min" => Op::Min,
                "max" => Op::Max,
                "neg" => Op::Neg,
                "abs" => Op::Abs,
                "not" => Op::Not,
                "and" => Op::And,
                "or" => Op::Or,
                "xor" => Op::Xor,
                "shl" => Op::Shl,
                "shr" => Op::Shr,
                "popc" => Op::Popc,
                "clz" => Op::Clz,
                "bfind" if has("shiftamt") => Op::BfindShift,
                "bfind" => Op::Bfind,
                "brev" => Op::Brev,
                "bfe" => Op::Bfe,
                "bfi" => Op::Bfi,
                "prmt" => Op::Prmt,
                "selp" => Op::Selp,
                "setp" => Op::Setp,
                "cvt" => Op::Cvt,
                "cvta" => Op::Cvta,
                "fma" => Op::Fma,
                "ld" | "ldu" => Op::Ld,
                "st" => Op::St,
                "atom" => Op::Atom,
                "red" => Op::Red,
                "bra" => Op::Bra,
                "call" => Op::Call,
                "ret" => Op::Ret,
                "exit" => Op::Exit,
                "trap" => Op::Trap,
                "activemask" => Op::Activemask,
                "shfl" => Op::Shfl,
                "match" if has("any") => Op::MatchAny,
                "vote" if has("sync") => Op::Vote,
                "redux" if has("sync") => Op::Redux,
                "bar" if has("warp") => Op::BarWarpSync,
                "bar" | "barrier" => Op::BarSync,
                "membar" | "fence" | "nanosleep" | "brkpt" | "pmevent" => Op::Nop,
                other => {
                    insts.push(unsupported(format!("`{other}` not modelled")));
                    continue;
                }
            };
            insts.push(Inst {
                guard,
                op,
                mods,
                tys,
                ops,
                text,
            });
        }
        Ok(Func {
            name: f.name().to_string(),
            insts,
            nregs,
            params,
            rets,
            entry,
            kparams,
        })
    }

    /// Runs kernel `name` over `grid` x `block` threads with the kernel parameters `args`
    /// (each parameter's bytes, little-endian, as many as it takes). Fails on anything the
    /// model does not know, a wrong address, a deadlock, or more than `budget`
    /// instructions.
    pub fn launch(
        &mut self,
        name: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &[u64],
        budget: u64,
    ) -> Result<(), String> {
        let k = self
            .funcs
            .iter()
            .position(|f| f.entry && f.name == name)
            .ok_or_else(|| format!("no kernel `{name}`"))?;
        if args.len() != self.funcs[k].kparams.len() {
            return err(format!(
                "kernel `{name}` takes {} parameters",
                self.funcs[k].kparams.len()
            ));
        }
        for (&(at, bytes), &v) in self.funcs[k].kparams.clone().iter().zip(args) {
            self.mem.write(KPARAM_BASE + at, bytes.min(8), v);
        }
        self.executed = 0;
        let per_block = (block[0] * block[1] * block[2]) as usize;
        let blocks = grid[0] * grid[1] * grid[2];
        for b in 0..blocks {
            let ctaid = [
                b % grid[0],
                (b / grid[0]) % grid[1],
                b / (grid[0] * grid[1]),
            ];
            // Shared memory starts as garbage on the GPU; zero here.
            for a in (0..self.shared_bytes).step_by(PAGE as usize) {
                self.mem.pages.remove(&((SHARED_BASE + a) / PAGE));
            }
            let mut threads: Vec<Thread> = (0..per_block)
                .map(|t| {
                    let t = t as u32;
                    let tid = [
                        t % block[0],
                        (t / block[0]) % block[1],
                        t / (block[0] * block[1]),
                    ];
                    let global = u64::from(b) * per_block as u64 + u64::from(t);
                    Thread {
                        frames: vec![Frame {
                            func: k,
                            pc: 0,
                            regs: vec![0; self.funcs[k].nregs],
                            ret: None,
                        }],
                        state: State::Run,
                        tid,
                        lane: t % 32,
                        warp: t / 32,
                        global,
                        timer_reads: 0,
                    }
                })
                .collect();
            let launch = Launch {
                ctaid,
                grid,
                block,
                smid: b % SMS,
            };
            self.run_block(&mut threads, &launch, budget)?;
        }
        Ok(())
    }

    fn run_block(&mut self, threads: &mut [Thread], l: &Launch, budget: u64) -> Result<(), String> {
        let n = threads.len();
        let warps = n.div_ceil(32);
        let mut w = 0usize;
        let (mut exited, mut at_barrier) = (0usize, 0usize);
        // Position of a lane: its call chain's program counters (+1, 0 past the chain),
        // compared lexicographically.
        let key = |t: &Thread| -> [usize; 8] {
            let mut k = [0; 8];
            for (d, f) in t.frames.iter().take(8).enumerate() {
                k[d] = f.pc + 1;
            }
            k
        };
        loop {
            if exited == n {
                return Ok(());
            }
            if at_barrier > 0 && at_barrier + exited == n {
                for t in threads.iter_mut().filter(|t| t.state == State::Barrier) {
                    t.state = State::Run;
                    t.top_mut().pc += 1;
                }
                at_barrier = 0;
                continue;
            }
            // The next warp with a lane that can run.
            let Some(warp) = (0..warps).map(|k| (w + k) % warps).find(|&k| {
                threads[k * 32..((k + 1) * 32).min(n)]
                    .iter()
                    .any(|t| t.state == State::Run)
            }) else {
                let stuck: Vec<String> = threads
                    .iter()
                    .filter(|t| t.state != State::Exited)
                    .take(4)
                    .map(|t| {
                        let f = t.top();
                        format!(
                            "thread {} {:?} at {}: {}",
                            t.global,
                            t.state,
                            self.funcs[f.func].name,
                            self.funcs[f.func]
                                .insts
                                .get(f.pc)
                                .map_or("end", |i| i.text.as_str())
                        )
                    })
                    .collect();
                return err(format!("deadlock: {}", stuck.join("; ")));
            };
            w = (warp + 1) % warps;
            let range = warp * 32..((warp + 1) * 32).min(n);
            let min = range
                .clone()
                .filter(|&t| threads[t].state == State::Run)
                .map(|t| key(&threads[t]))
                .min()
                .expect("a lane that can run");
            // The lanes there, and lanes of the warp waiting at a collective there.
            let group: Vec<usize> = range
                .filter(|&t| {
                    matches!(threads[t].state, State::Run | State::Waiting)
                        && key(&threads[t]) == min
                })
                .collect();
            for &t in &group {
                threads[t].state = State::Run;
            }
            self.executed += 1;
            if self.executed > budget {
                return err(format!("more than {budget} instructions"));
            }
            self.step(threads, &group, l)?;
            for &t in &group {
                match threads[t].state {
                    State::Exited => exited += 1,
                    State::Barrier => at_barrier += 1,
                    _ => {}
                }
            }
        }
    }

    /// Runs the instruction the lanes of `group` (one warp, one position) are at.
    fn step(&mut self, threads: &mut [Thread], group: &[usize], l: &Launch) -> Result<(), String> {
        let f0 = threads[group[0]].top().func;
        let pc = threads[group[0]].top().pc;
        let funcs = self.funcs.clone();
        let Some(inst) = funcs[f0].insts.get(pc) else {
            return err(format!("{}: ran off the end", funcs[f0].name));
        };
        let ctx = |e: String| format!("{}: {}: {e}", funcs[f0].name, inst.text);
        let mask: u32 = group.iter().fold(0, |m, &t| m | 1 << threads[t].lane);
        // Guards are per lane.
        let active: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&t| match inst.guard {
                None => true,
                Some((neg, r)) => (threads[t].top().regs[r] != 0) != neg,
            })
            .collect();
        let skipped: Vec<usize> = group
            .iter()
            .copied()
            .filter(|t| !active.contains(t))
            .collect();
        for &t in &skipped {
            threads[t].top_mut().pc += 1;
        }
        if active.is_empty() {
            return Ok(());
        }
        let op = inst.op;
        match op {
            Op::Shfl | Op::MatchAny | Op::Vote | Op::Redux | Op::BarWarpSync => {
                let members = match op {
                    Op::BarWarpSync => self.value(&threads[active[0]], &inst.ops[0])? as u32,
                    _ => self.value(&threads[active[0]], inst.ops.last().expect("mask"))? as u32,
                };
                let base = active[0] / 32 * 32;
                let mut here: u32 = 0;
                let mut exited: u32 = 0;
                let end = (base + 32).min(threads.len());
                for (t, th) in threads.iter().enumerate().take(end).skip(base) {
                    let bit = 1 << th.lane;
                    if active.contains(&t) {
                        here |= bit;
                    } else if th.state == State::Exited {
                        exited |= bit;
                    }
                }
                if members & !here & !exited != 0 {
                    // Wait for the other members.
                    for &t in &active {
                        threads[t].state = State::Waiting;
                    }
                    return Ok(());
                }
                if op == Op::Shfl && members & exited != 0 {
                    return err(ctx("shfl.sync with an exited lane in its mask".into()));
                }
                self.collective(threads, &active, members & here, inst)
                    .map_err(ctx)?;
                for &t in &active {
                    threads[t].top_mut().pc += 1;
                }
                Ok(())
            }
            _ => {
                for &t in &active {
                    self.exec(&mut threads[t], inst, mask, l).map_err(ctx)?;
                }
                Ok(())
            }
        }
    }

    fn collective(
        &mut self,
        threads: &mut [Thread],
        active: &[usize],
        members: u32,
        inst: &Inst,
    ) -> Result<(), String> {
        match inst.op {
            Op::BarWarpSync => Ok(()),
            Op::MatchAny => {
                let ty = *inst.tys.first().ok_or("match without a type")?;
                let vals: Vec<(u32, u64)> = active
                    .iter()
                    .filter(|&&t| members & (1 << threads[t].lane) != 0)
                    .map(|&t| {
                        Ok((
                            threads[t].lane,
                            ty.mask(self.value(&threads[t], &inst.ops[1])?),
                        ))
                    })
                    .collect::<Result<_, String>>()?;
                for &t in active {
                    let v = ty.mask(self.value(&threads[t], &inst.ops[1])?);
                    let m = vals
                        .iter()
                        .filter(|x| x.1 == v)
                        .fold(0u32, |m, x| m | 1 << x.0);
                    self.set(&mut threads[t], &inst.ops[0], u64::from(m))?;
                }
                Ok(())
            }
            Op::Vote | Op::Redux => {
                let vals: Vec<u64> = active
                    .iter()
                    .filter(|&&t| members & (1 << threads[t].lane) != 0)
                    .map(|&t| self.value(&threads[t], &inst.ops[1]))
                    .collect::<Result<_, String>>()?;
                let has = |m: &str| inst.mods.iter().any(|x| x == m);
                let v = if inst.op == Op::Vote {
                    if has("ballot") {
                        // The member lanes whose predicate is true.
                        let mut m = 0u64;
                        for &t in active {
                            if members & (1 << threads[t].lane) != 0
                                && self.value(&threads[t], &inst.ops[1])? != 0
                            {
                                m |= 1 << threads[t].lane;
                            }
                        }
                        m
                    } else if has("any") {
                        u64::from(vals.iter().any(|&v| v != 0))
                    } else if has("all") {
                        u64::from(vals.iter().all(|&v| v != 0))
                    } else {
                        return err("vote.sync other than any/all not modelled");
                    }
                } else {
                    let ty = *inst.tys.first().ok_or("redux without a type")?;
                    let vals = vals.iter().map(|&v| ty.mask(v));
                    if has("add") {
                        vals.fold(0u64, |a, v| ty.mask(a.wrapping_add(v)))
                    } else if has("or") {
                        vals.fold(0, |a, v| a | v)
                    } else if has("and") {
                        vals.fold(ty.mask(u64::MAX), |a, v| a & v)
                    } else {
                        return err("redux.sync other than add/or/and not modelled");
                    }
                };
                for &t in active {
                    self.set(&mut threads[t], &inst.ops[0], v)?;
                }
                Ok(())
            }
            Op::Shfl => {
                let mode = inst
                    .mods
                    .iter()
                    .find(|m| matches!(m.as_str(), "bfly" | "up" | "down" | "idx"))
                    .ok_or("shfl without a mode")?
                    .clone();
                let src: HashMap<u32, u64> = active
                    .iter()
                    .map(|&t| {
                        Ok((
                            threads[t].lane,
                            self.value(&threads[t], &inst.ops[1])? & 0xffff_ffff,
                        ))
                    })
                    .collect::<Result<_, String>>()?;
                for &t in active {
                    let lane = threads[t].lane;
                    let b = self.value(&threads[t], &inst.ops[2])? as u32 & 31;
                    let c = self.value(&threads[t], &inst.ops[3])? as u32;
                    let max_lane = c & 31;
                    let seg = (c >> 8) & 31;
                    let min_lane = lane & seg;
                    let max_lane = (lane & seg) | (max_lane & !seg);
                    let j = match mode.as_str() {
                        "bfly" => lane ^ b,
                        "up" => lane.wrapping_sub(b),
                        "down" => lane + b,
                        _ => min_lane | (b & !seg),
                    };
                    let ok = match mode.as_str() {
                        "up" => lane >= b && j >= min_lane,
                        _ => j <= max_lane,
                    };
                    let from = if ok { j } else { lane };
                    let v = *src
                        .get(&from)
                        .ok_or_else(|| format!("shfl reads lane {from}, which is not with it"))?;
                    match &inst.ops[0] {
                        Opnd::Reg(_) => self.set(&mut threads[t], &inst.ops[0], v)?,
                        // The predicate says whether the source lane was in range.
                        &Opnd::Pair(d, q) => {
                            self.set(&mut threads[t], &Opnd::Reg(d), v)?;
                            self.set(&mut threads[t], &Opnd::Reg(q), u64::from(ok))?;
                        }
                        _ => return err("shfl's destination not modelled"),
                    }
                }
                Ok(())
            }
            _ => unreachable!("collectives only"),
        }
    }

    fn special(&self, t: &mut Thread, s: Special, l: &Launch, mask: u32) -> u64 {
        let lane = t.lane;
        u64::from(match s {
            Special::Tid(c) => t.tid[c],
            Special::Ntid(c) => l.block[c],
            Special::Ctaid(c) => l.ctaid[c],
            Special::Nctaid(c) => l.grid[c],
            Special::LaneId => lane,
            Special::WarpId => t.warp,
            Special::SmId => l.smid,
            Special::NSmId => SMS,
            Special::LaneMask(k) => match k {
                0 => 1 << lane,
                1 => (1u32 << lane) - 1,
                2 => ((1u64 << (lane + 1)) - 1) as u32,
                3 => !(((1u64 << (lane + 1)) - 1) as u32),
                _ => !((1u32 << lane) - 1),
            },
            Special::GlobalTimer | Special::Clock64 | Special::Clock => {
                let _ = mask;
                t.timer_reads += 1;
                let n = t.timer_reads;
                return 1_000_000 * (t.global + 1) + 37 * n * n;
            }
        })
    }

    /// The value of operand `o` for thread `t` (an address operand's address).
    fn value(&self, t: &Thread, o: &Opnd) -> Result<u64, String> {
        Ok(match o {
            Opnd::Reg(r) => t.top().regs[*r],
            Opnd::NotReg(r) => u64::from(t.top().regs[*r] == 0),
            Opnd::Imm(v) => *v,
            Opnd::Var(v) => self.var_addr(t, *v),
            Opnd::Addr(b, off) => self.value(t, b)?.wrapping_add(*off as u64),
            Opnd::Special(_) => return err("special register in a read-only position"),
            _ => return err(format!("operand {o:?} has no value")),
        })
    }

    fn var_addr(&self, t: &Thread, v: Var) -> u64 {
        match v {
            Var::Global(a) | Var::Shared(a) => a,
            Var::Local(a) => LOCAL_BASE + t.global * REGION + a,
            Var::Param(a) => PARAM_BASE + t.global * REGION + a,
            Var::KParam(a) => KPARAM_BASE + a,
        }
    }

    fn set(&self, t: &mut Thread, o: &Opnd, v: u64) -> Result<(), String> {
        match o {
            Opnd::Reg(r) => {
                t.top_mut().regs[*r] = v;
                Ok(())
            }
            _ => err(format!("cannot write {o:?}")),
        }
    }

    fn check_addr(&self, a: u64, n: u32) -> Result<(), String> {
        if a < PAGE {
            return err(format!("access at {a:#x}: null"));
        }
        if (GLOBAL_BASE..LOCAL_BASE).contains(&a) {
            let end = a + u64::from(n);
            if !self.allocs.iter().any(|&(s, e)| s <= a && end <= e) {
                return err(format!(
                    "global access of {n} bytes at {a:#x} outside every allocation"
                ));
            }
        }
        Ok(())
    }

    fn load(&self, a: u64, n: u32) -> Result<u64, String> {
        self.check_addr(a, n)?;
        Ok(self.mem.read(a, n))
    }

    fn store(&mut self, a: u64, n: u32, v: u64) -> Result<(), String> {
        self.check_addr(a, n)?;
        self.mem.write(a, n, v);
        Ok(())
    }

    /// One instruction for one thread (not a collective). `mask`: the lanes with it.
    fn exec(&mut self, t: &mut Thread, inst: &Inst, mask: u32, l: &Launch) -> Result<(), String> {
        let ty = inst.tys.first().copied().unwrap_or(Ty::B(64));
        // Operand values, specials read here (they may count timer reads).
        let val = |this: &Self, t: &mut Thread, k: usize| -> Result<u64, String> {
            match inst.ops.get(k).ok_or("missing operand")? {
                Opnd::Special(s) => Ok(this.special(t, *s, l, mask)),
                o => this.value(t, o),
            }
        };
        let mut next = true;
        match inst.op {
            Op::Unsupported => return err(inst.mods.join(" ")),
            Op::Nop => {}
            Op::Mov => match (&inst.ops[0], &inst.ops[1]) {
                (Opnd::Vec(parts), src) => {
                    let v = match src {
                        Opnd::Special(s) => self.special(t, *s, l, mask),
                        o => self.value(t, o)?,
                    };
                    let w = ty.bits() / parts.len() as u32;
                    for (k, p) in parts.iter().enumerate() {
                        let x = (v >> (w * k as u32)) & ((1u64 << w) - 1);
                        self.set(t, p, x)?;
                    }
                }
                (d, Opnd::Vec(parts)) => {
                    let w = ty.bits() / parts.len() as u32;
                    let mut v = 0u64;
                    for (k, p) in parts.iter().enumerate() {
                        let x = self.value(t, p)? & ((1u64 << w) - 1);
                        v |= x << (w * k as u32);
                    }
                    self.set(t, d, v)?;
                }
                (d, _) => {
                    let v = ty.mask(val(self, t, 1)?);
                    self.set(t, d, v)?;
                }
            },
            Op::Add
            | Op::Sub
            | Op::MulLo
            | Op::MulHi
            | Op::MulWide
            | Op::Div
            | Op::Rem
            | Op::Min
            | Op::Max
            | Op::And
            | Op::Or
            | Op::Xor
            | Op::Shl
            | Op::Shr => {
                let a = val(self, t, 1)?;
                let b = val(self, t, 2)?;
                let v = binary(inst.op, ty, a, b)?;
                self.set(t, &inst.ops[0], v)?;
            }
            Op::MadLo | Op::MadHi | Op::MadWide => {
                let a = val(self, t, 1)?;
                let b = val(self, t, 2)?;
                let c = val(self, t, 3)?;
                let m = match inst.op {
                    Op::MadLo => binary(Op::MulLo, ty, a, b)?,
                    Op::MadHi => binary(Op::MulHi, ty, a, b)?,
                    _ => binary(Op::MulWide, ty, a, b)?,
                };
                let wide = if inst.op == Op::MadWide {
                    match ty {
                        Ty::S(b) => Ty::S(b * 2),
                        Ty::U(b) => Ty::U(b * 2),
                        t => t,
                    }
                } else {
                    ty
                };
                let v = binary(Op::Add, wide, m, c)?;
                self.set(t, &inst.ops[0], v)?;
            }
            Op::Neg | Op::Abs | Op::Not | Op::Popc | Op::Clz | Op::Brev => {
                let a = ty.mask(val(self, t, 1)?);
                let v = match (inst.op, ty) {
                    (Op::Neg, Ty::F(32)) => u64::from((-f32::from_bits(a as u32)).to_bits()),
                    (Op::Neg, _) => ty.mask(a.wrapping_neg()),
                    (Op::Abs, _) => ty.mask(ty.signed(a).unsigned_abs()),
                    (Op::Not, _) => ty.mask(!a),
                    (Op::Popc, _) => u64::from(a.count_ones()),
                    (Op::Clz, _) => u64::from(a.leading_zeros() - (64 - ty.bits())),
                    _ => ty.mask(a.reverse_bits() >> (64 - ty.bits())),
                };
                self.set(t, &inst.ops[0], v)?;
            }
            Op::Bfind | Op::BfindShift => {
                let a = ty.mask(val(self, t, 1)?);
                let bits = ty.bits();
                // A negative signed value: its most significant 0 bit.
                let x = if matches!(ty, Ty::S(_)) && ty.signed(a) < 0 {
                    ty.mask(!a)
                } else {
                    a
                };
                let v = match x {
                    0 => 0xffff_ffff,
                    _ => {
                        let pos = 63 - x.leading_zeros();
                        u64::from(if inst.op == Op::BfindShift {
                            bits - 1 - pos
                        } else {
                            pos
                        })
                    }
                };
                self.set(t, &inst.ops[0], v)?;
            }
            Op::Bfe => {
                let a = ty.mask(val(self, t, 1)?);
                let pos = val(self, t, 2)? & 0xff;
                let len = val(self, t, 3)? & 0xff;
                let bits = u64::from(ty.bits());
                let signed = matches!(ty, Ty::S(_));
                let v = if len == 0 {
                    0
                } else {
                    let field = if pos >= bits { 0 } else { a >> pos };
                    let len = len.min(bits);
                    let m = if len >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << len) - 1
                    };
                    let f = field & m;
                    let sbit = if signed {
                        if pos + len > bits {
                            a >> (bits - 1) & 1
                        } else {
                            f >> (len - 1) & 1
                        }
                    } else {
                        0
                    };
                    if sbit == 1 {
                        ty.mask(f | !m)
                    } else {
                        f
                    }
                };
                self.set(t, &inst.ops[0], ty.mask(v))?;
            }
            Op::Bfi => {
                let a = val(self, t, 1)?;
                let b = ty.mask(val(self, t, 2)?);
                let pos = val(self, t, 3)? & 0xff;
                let len = val(self, t, 4)? & 0xff;
                let bits = u64::from(ty.bits());
                let v = if len == 0 || pos >= bits {
                    b
                } else {
                    let len = len.min(bits - pos);
                    let m = if len >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << len) - 1
                    } << pos;
                    (b & !m) | ((a << pos) & m)
                };
                self.set(t, &inst.ops[0], ty.mask(v))?;
            }
            Op::Prmt => {
                let a = val(self, t, 1)? as u32;
                let b = val(self, t, 2)? as u32;
                let c = val(self, t, 3)? as u32;
                let bytes = (u64::from(b) << 32 | u64::from(a)).to_le_bytes();
                let mut out = 0u32;
                for k in 0..4 {
                    let sel = (c >> (4 * k)) & 0xf;
                    let byte = bytes[(sel & 7) as usize];
                    let byte = if sel & 8 != 0 {
                        if byte & 0x80 != 0 {
                            0xff
                        } else {
                            0
                        }
                    } else {
                        byte
                    };
                    out |= u32::from(byte) << (8 * k);
                }
                self.set(t, &inst.ops[0], u64::from(out))?;
            }
            Op::Selp => {
                let a = val(self, t, 1)?;
                let b = val(self, t, 2)?;
                let p = val(self, t, 3)?;
                self.set(t, &inst.ops[0], ty.mask(if p != 0 { a } else { b }))?;
            }
            Op::Setp => {
                let cmp = inst
                    .mods
                    .first()
                    .ok_or("setp without a comparison")?
                    .clone();
                let ty = *inst.tys.first().ok_or("setp without a type")?;
                let a = ty.mask(val(self, t, 1)?);
                let b = ty.mask(val(self, t, 2)?);
                let r = compare(&cmp, ty, a, b)?;
                let r = match inst.mods.get(1).map(String::as_str) {
                    Some("and") => r && val(self, t, 3)? != 0,
                    Some("or") => r || val(self, t, 3)? != 0,
                    Some("xor") => r ^ (val(self, t, 3)? != 0),
                    _ => r,
                };
                self.set(t, &inst.ops[0], u64::from(r))?;
            }
            Op::Cvt => {
                let (d, s) = match inst.tys[..] {
                    [d, s] => (d, s),
                    _ => return err("cvt needs two types"),
                };
                let a = s.mask(val(self, t, 1)?);
                let v = match (d, s) {
                    (Ty::F(32), Ty::S(_)) => u64::from((s.signed(a) as f32).to_bits()),
                    (Ty::F(32), Ty::U(_)) => u64::from((a as f32).to_bits()),
                    (Ty::S(_) | Ty::U(_), Ty::F(32)) => {
                        let f = f32::from_bits(a as u32);
                        d.mask(if matches!(d, Ty::S(_)) {
                            f as i64 as u64
                        } else {
                            f as u64
                        })
                    }
                    (Ty::F(_), _) | (_, Ty::F(_)) => return err("float conversion not modelled"),
                    (_, Ty::S(_)) => d.mask(s.signed(a) as u64),
                    _ => d.mask(a),
                };
                self.set(t, &inst.ops[0], v)?;
            }
            Op::Cvta => {
                let v = val(self, t, 1)?;
                self.set(t, &inst.ops[0], v)?;
            }
            Op::Fma => {
                let a = f32::from_bits(val(self, t, 1)? as u32);
                let b = f32::from_bits(val(self, t, 2)? as u32);
                let c = f32::from_bits(val(self, t, 3)? as u32);
                self.set(t, &inst.ops[0], u64::from(a.mul_add(b, c).to_bits()))?;
            }
            Op::Ld => {
                let addr = self.value(t, &inst.ops[1])?;
                let n = ty.bytes();
                match &inst.ops[0] {
                    Opnd::Vec(parts) => {
                        for (k, p) in parts.iter().enumerate() {
                            let v = self.load(addr + u64::from(n) * k as u64, n)?;
                            self.set(t, p, load_ext(ty, v))?;
                        }
                    }
                    d => {
                        let v = self.load(addr, n)?;
                        self.set(t, d, load_ext(ty, v))?;
                    }
                }
            }
            Op::St => {
                let addr = self.value(t, &inst.ops[0])?;
                let n = ty.bytes();
                match &inst.ops[1] {
                    Opnd::Vec(parts) => {
                        for (k, p) in parts.iter().enumerate() {
                            let v = self.value(t, p)?;
                            self.store(addr + u64::from(n) * k as u64, n, v)?;
                        }
                    }
                    o => {
                        let v = self.value(t, o)?;
                        self.store(addr, n, v)?;
                    }
                }
            }
            Op::Atom | Op::Red => {
                let (aop, ai) = if inst.op == Op::Atom { (1, 1) } else { (0, 0) };
                let addr = self.value(t, &inst.ops[ai])?;
                let n = ty.bytes();
                let old = self.load(addr, n)?;
                let b = ty.mask(val(self, t, ai + 1)?);
                let kind = inst
                    .mods
                    .iter()
                    .find(|m| {
                        matches!(
                            m.as_str(),
                            "add"
                                | "inc"
                                | "dec"
                                | "min"
                                | "max"
                                | "and"
                                | "or"
                                | "xor"
                                | "exch"
                                | "cas"
                        )
                    })
                    .ok_or("atomic without an operation")?
                    .clone();
                let new = match kind.as_str() {
                    "add" if matches!(ty, Ty::F(32)) => {
                        u64::from((f32::from_bits(old as u32) + f32::from_bits(b as u32)).to_bits())
                    }
                    "add" => old.wrapping_add(b),
                    "and" => old & b,
                    "or" => old | b,
                    "xor" => old ^ b,
                    "exch" => b,
                    "min" | "max" => {
                        let less = match ty {
                            Ty::S(_) => ty.signed(old) < ty.signed(b),
                            _ => old < b,
                        };
                        if (kind == "min") == less {
                            old
                        } else {
                            b
                        }
                    }
                    "inc" => {
                        if old >= b {
                            0
                        } else {
                            old + 1
                        }
                    }
                    "dec" => {
                        if old == 0 || old > b {
                            b
                        } else {
                            old - 1
                        }
                    }
                    _ => {
                        let c = ty.mask(val(self, t, ai + 2)?);
                        if old == b {
                            c
                        } else {
                            old
                        }
                    }
                };
                self.store(addr, n, ty.mask(new))?;
                if aop == 1 {
                    self.set(t, &inst.ops[0], old)?;
                }
            }
            Op::Bra => {
                let Opnd::Label(target) = inst.ops[0] else {
                    return err("bra without a label");
                };
                t.top_mut().pc = target;
                next = false;
            }
            Op::Call => {
                let (ret, callee, args) = match &inst.ops[..] {
                    [Opnd::List(r), Opnd::Func(f), Opnd::List(a)] => (r.clone(), *f, a.clone()),
                    [Opnd::Func(f), Opnd::List(a)] => (Vec::new(), *f, a.clone()),
                    [Opnd::List(r), Opnd::Func(f)] => (r.clone(), *f, Vec::new()),
                    [Opnd::Func(f)] => (Vec::new(), *f, Vec::new()),
                    _ => return err("call form not modelled"),
                };
                let func = &self.funcs[callee];
                if func.insts.is_empty() {
                    return err(format!("call of `{}`, which has no body", func.name));
                }
                if args.len() != func.params.len() || ret.len() > func.rets.len() {
                    return err(format!("call of `{}` with wrong arguments", func.name));
                }
                for (a, &(at, bytes)) in args.iter().zip(&func.params) {
                    let src = self.value(t, a)?;
                    let dst = PARAM_BASE + t.global * REGION + at;
                    for k in 0..u64::from(bytes) {
                        let b = self.mem.byte(src + k);
                        self.mem.set_byte(dst + k, b);
                    }
                }
                let ret_to = ret
                    .iter()
                    .zip(&func.rets)
                    .map(|(r, &(at, bytes))| Ok((self.value(t, r)?, at, bytes)))
                    .collect::<Result<Vec<_>, String>>()?;
                t.frames.push(Frame {
                    func: callee,
                    pc: 0,
                    regs: vec![0; func.nregs],
                    ret: Some(ret_to),
                });
                next = false;
            }
            Op::Ret if t.frames.len() > 1 => {
                let frame = t.frames.pop().expect("a frame");
                for (dst, at, bytes) in frame.ret.unwrap_or_default() {
                    let src = PARAM_BASE + t.global * REGION + at;
                    for k in 0..u64::from(bytes) {
                        let b = self.mem.byte(src + k);
                        self.mem.set_byte(dst + k, b);
                    }
                }
                t.top_mut().pc += 1;
                next = false;
            }
            Op::Ret | Op::Exit | Op::Trap => {
                t.state = State::Exited;
                next = false;
            }
            Op::Activemask => self.set(t, &inst.ops[0], u64::from(mask))?,
            Op::BarSync => {
                t.state = State::Barrier;
                next = false;
            }
            Op::Shfl | Op::MatchAny | Op::Vote | Op::Redux | Op::BarWarpSync => {
                unreachable!("collectives")
            }
        }
        if next {
            t.top_mut().pc += 1;
        }
        Ok(())
    }
}

/// A loaded value extended to the register: signed loads sign-extend.
fn load_ext(ty: Ty, v: u64) -> u64 {
    match ty {
        Ty::S(_) => ty.signed(v) as u64,
        _ => v,
    }
}

fn binary(op: Op, ty: Ty, a: u64, b: u64) -> Result<u64, String> {
    if let Ty::F(32) = ty {
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        let r = match op {
            Op::Add => x + y,
            Op::Sub => x - y,
            Op::MulLo => x * y,
            Op::Div => x / y,
            Op::Min => x.min(y),
            Op::Max => x.max(y),
            _ => return err(format!("{op:?} on f32 not modelled")),
        };
        return Ok(u64::from(r.to_bits()));
    }
    let bits = ty.bits();
    let (ma, mb) = (ty.mask(a), ty.mask(b));
    let signed = matches!(ty, Ty::S(_));
    let (sa, sb) = (ty.signed(ma), ty.signed(mb));
    Ok(match op {
        Op::Add => ty.mask(ma.wrapping_add(mb)),
        Op::Sub => ty.mask(ma.wrapping_sub(mb)),
        Op::MulLo => ty.mask(ma.wrapping_mul(mb)),
        Op::MulHi | Op::MulWide => {
            let p: i128 = if signed {
                i128::from(sa) * i128::from(sb)
            } else {
                i128::from(ma) * i128::from(mb)
            };
            if op == Op::MulHi {
                ty.mask((p >> bits) as u64)
            } else if bits == 64 {
                return err("mul.wide of 64 bits");
            } else {
                (p as u128 & ((1u128 << (2 * bits)) - 1)) as u64
            }
        }
        Op::Div => {
            if mb == 0 {
                ty.mask(u64::MAX)
            } else if signed {
                ty.mask(sa.wrapping_div(sb) as u64)
            } else {
                ma / mb
            }
        }
        Op::Rem => {
            if mb == 0 {
                ma
            } else if signed {
                ty.mask(sa.wrapping_rem(sb) as u64)
            } else {
                ma % mb
            }
        }
        Op::Min => {
            if signed {
                ty.mask(sa.min(sb) as u64)
            } else {
                ma.min(mb)
            }
        }
        Op::Max => {
            if signed {
                ty.mask(sa.max(sb) as u64)
            } else {
                ma.max(mb)
            }
        }
        Op::And => ma & mb,
        Op::Or => ma | mb,
        Op::Xor => ma ^ mb,
        // PTX clamps shift amounts at the width.
        Op::Shl => {
            let s = (b & 0xffff_ffff).min(u64::from(bits));
            if s >= u64::from(bits) {
                0
            } else {
                ty.mask(ma << s)
            }
        }
        Op::Shr => {
            let s = (b & 0xffff_ffff).min(u64::from(bits));
            if signed {
                let s = s.min(u64::from(bits) - 1);
                ty.mask((sa >> s) as u64)
            } else if s >= u64::from(bits) {
                0
            } else {
                ma >> s
            }
        }
        _ => return err(format!("{op:?} is not binary")),
    })
}

fn compare(cmp: &str, ty: Ty, a: u64, b: u64) -> Result<bool, String> {
    if let Ty::F(32) = ty {
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        return Ok(match cmp {
            "eq" => x == y,
            "ne" => x != y,
            "lt" => x < y,
            "le" => x <= y,
            "gt" => x > y,
            "ge" => x >= y,
            _ => return err(format!("setp.{cmp}.f32 not modelled")),
        });
    }
    let signed = matches!(ty, Ty::S(_));
    let (sa, sb) = (ty.signed(a), ty.signed(b));
    Ok(match cmp {
        "eq" => a == b,
        "ne" => a != b,
        "lt" if signed => sa < sb,
        "le" if signed => sa <= sb,
        "gt" if signed => sa > sb,
        "ge" if signed => sa >= sb,
        "lt" | "lo" => a < b,
        "le" | "ls" => a <= b,
        "gt" | "hi" => a > b,
        "ge" | "hs" => a >= b,
        _ => return err(format!("setp.{cmp} not modelled")),
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Run,
    /// At a warp collective, for the rest of its member mask.
    Waiting,
    /// At `bar.sync`, for the rest of the block.
    Barrier,
    Exited,
}

struct Frame {
    func: usize,
    pc: usize,
    regs: Vec<u64>,
    /// Where the callee's return parameters go: (caller's address, callee's offset, bytes).
    ret: Option<Vec<(u64, u64, u32)>>,
}

struct Thread {
    frames: Vec<Frame>,
    state: State,
    tid: [u32; 3],
    lane: u32,
    warp: u32,
    global: u64,
    timer_reads: u64,
}

impl Thread {
    fn top(&self) -> &Frame {
        self.frames.last().expect("a frame")
    }

    fn top_mut(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame")
    }
}

struct Launch {
    ctaid: [u32; 3],
    grid: [u32; 3],
    block: [u32; 3],
    smid: u32,
}
