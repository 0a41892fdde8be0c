//! A reference interpreter of BPF with exact semantics: the oracle for the PTX backend (the
//! GPU must compute exactly what this computes) and the engine behind `bpf2ptx run --cpu`.
//!
//! # What is modelled
//!
//! Every instruction of [`crate::isa::table::OPCODES`] that needs no kernel runtime, with the
//! meaning RFC 9669 and Linux give it:
//!
//! * 32-bit ALU operations compute on the low halves and zero-extend the result; shift
//!   amounts are masked (`& 31`, `& 63`) for register and immediate sources alike;
//!   immediates are sign-extended `i32`s.
//! * Division by zero gives 0; modulo by zero leaves `dst` unchanged (the 32-bit form leaves
//!   its low half, zero-extended); signed division truncates, `MIN / -1 = MIN` and
//!   `MIN % -1 = 0`, and a signed remainder has the sign of the dividend.
//! * `le16`/`le32` truncate (this is a little-endian machine), `le64` is a no-op, `be*` and
//!   `bswap*` swap bytes; both zero-extend.
//! * Loads zero-extend, `ldxs*` sign-extend; memory is little endian; unaligned accesses are
//!   allowed because the GPU backend handles alignment itself.
//! * Atomics run as plain read-modify-write (there is one thread); fetching forms put the
//!   old value (zero-extended for 32 bits) into `src`, `cmpxchg` into `r0`.
//! * Local calls push a frame: the callee sees `r1`-`r5` as they are, gets a fresh zeroed
//!   512-byte stack and its own `r10`; on `exit` the caller's `r6`-`r10` come back and `r0`
//!   carries the result. At most [`MAX_FRAMES`] frames exist at once, the entry function's
//!   included, as in Linux (`MAX_CALL_FRAMES`).
//! * Helpers: only what the bpf_conformance suite needs. Helper 5 is Linux's
//!   `ktime_get_ns`, made deterministic: it returns the number of instructions executed so
//!   far in this run, so it never decreases and two runs agree. `callx rX` takes the
//!   register's value as a helper id, which is what bpf_conformance's `callx` test expects.
//!   Helper 165 is `bpf_snprintf`, formatted by the runtime's reference
//!   ([`bpf2ptx_runtime::snprintf`]) as Linux does; a `%s` reads up to its NUL or the end
//!   of the pointer's region, and a pointer outside every region prints as the empty
//!   string (Linux's failed `copy_from_kernel_nofault`).
//!   Any other helper, kfunc calls, legacy packet loads and map handles are errors
//!   ([`InterpError::UnknownHelper`], [`InterpError::Unsupported`]), never a guess.
//! * With an [`Env`] that provides maps ([`Env::maps`]; `bpf2ptx trace` runs host-side
//!   programs this way, specs/trace.md "Host-side programs"), `ld_imm64` of a map gives
//!   a handle, and the map helpers (1-3) work on arrays whose storage the environment
//!   lends, laid out as the device runtime lays out an array (value `k` at `k x stride`,
//!   stride = value size rounded up to 8: specs/abi.md), so the host and the GPU read the
//!   same bytes. Helpers 5 and 14 then ask the environment ([`Env::ktime_ns`],
//!   [`Env::pid_tgid`]). Atomics on naturally aligned addresses are real atomic
//!   instructions, so a program's `lock add` on a map value in memory the GPU also
//!   updates loses no update.
//!
//! Registers start at zero apart from `r1` (the input memory), `r2` (its length, the
//! bpf_conformance convention) and `r10`, so a run is deterministic even for a program that
//! reads a register the verifier would call uninitialised.
//!
//! # Address map
//!
//! Pointers are plain `u64`s into a small virtual address space of regions, each
//! [`REGION_SIZE`] (`0x1000_0000_0000`) bytes apart, so pointer arithmetic that strays from
//! one object can never reach another and a wrong pointer is an
//! [`InterpError::OutOfBounds`], never undefined behaviour:
//!
//! | region `k` | base                | contents                                          |
//! |------------|---------------------|---------------------------------------------------|
//! | 0          | `0`                 | nothing: null and small integers are never valid  |
//! | 1          | `0x1000_0000_0000`  | the input memory (`r1`; its length is in `r2`)    |
//! | 2 + d      | `(2 + d) << 44`     | the stack of call frame `d`; `r10` = base + 512   |
//! | 14         | `14 << 44`          | nothing: map handles (`14 << 44 \| i`, [`Env::maps`]) |
//! | 16 + i     | `(16 + i) << 44`    | the value of global-data map `i` (`.data`, ...), or the storage [`Env::map_storage`] lends for map `i` |
//!
//! An access (load, store or atomic) must lie wholly inside one region's bytes. A frame's
//! region disappears when the frame returns, so a dangling stack pointer is an error until
//! a new call at that depth reuses the region. Global data is a copy of the map's `init`
//! (zeros for `.bss`) that lives in the [`Interp`], so it persists from one run to the next
//! as it would in a loaded program; `.rodata` is not write-protected here (the verifier
//! rejects such writes before the backend sees them).
//!
//! An instruction budget ([`Options::budget`]) bounds every run, so an unverified program
//! that loops forever ends with [`InterpError::Budget`].
//!
//! # Files
//!
//! This file is the machine: the address map, frames, and one `step` per instruction.
//! What a call out of the program does (helpers, `bpf_loop`, kfuncs) is in
//! `interp/calls.rs`, and the value semantics of single operations ([`alu64`],
//! [`compare`], ...) in `interp/ops.rs`.

use crate::cfg::Cfg;
use crate::isa::table::{AtomicOp, CallKind, Kind, Pseudo, Size, Src, Width, OPCODES};
use crate::isa::Insn;
use crate::program::{MapOrigin, Object, Program};
use bpf2ptx_runtime::BPF_MAX_LOOPS;
use thiserror::Error;

mod calls;
mod ops;

use ops::atomic_rmw;
pub use ops::{alu32, alu64, compare, endian, sign_extend};

/// Distance between the bases of two regions of the address space (`1 << 44`).
pub const REGION_SIZE: u64 = 1 << REGION_SHIFT;
const REGION_SHIFT: u32 = 44;
/// The region of the input memory.
const MEM_REGION: u64 = 1;
/// The region of the entry function's stack; frame `d` uses `STACK_REGION + d`.
const STACK_REGION: u64 = 2;
/// The region of map 0's value; map `i` uses `MAP_REGION + i`.
const MAP_REGION: u64 = 16;

/// The base address of the input memory (what `r1` holds at entry).
pub const MEM_BASE: u64 = MEM_REGION << REGION_SHIFT;
/// Base of the (inaccessible) region whose addresses are map handles: `ld_imm64` of map
/// `i` gives `MAP_HANDLE_BASE + i` when the [`Env`] has maps.
pub const MAP_HANDLE_BASE: u64 = 14 << REGION_SHIFT;

/// What a run reaches beyond the program's own memory: maps and the host's clock and
/// process ids. The default methods are the reference semantics `bpf2ptx run --cpu` and
/// the tests use ([`Reference`]): no maps, and a deterministic `ktime_get_ns`.
///
/// `bpf2ptx trace` implements it for host-side programs (crate bpf2ptx-interposer): map
/// storage in pinned host memory that the GPU's probes use too, the host's clock moved
/// onto the GPU's `%globaltimer` timeline.
pub trait Env {
    /// Whether map handles and the map helpers work. Without maps, `ld_imm64` of a map
    /// is [`InterpError::Unsupported`], as it always was.
    fn maps(&self) -> bool {
        false
    }

    /// The storage of map `map` (not global data, which the [`Interp`] owns): an array's
    /// `max_entries x stride` bytes. `None`: not bound (a lookup returns NULL, an update
    /// -EINVAL, as on the GPU with descriptor word 3 = 0).
    fn map_storage(&mut self, map: usize) -> Option<&mut [u8]> {
        let _ = map;
        None
    }

    /// `ktime_get_ns` (5); `executed` is the number of instructions run so far.
    fn ktime_ns(&mut self, executed: u64) -> u64 {
        executed
    }

    /// `get_current_pid_tgid` (14); `None`: not available ([`InterpError::UnknownHelper`]).
    fn pid_tgid(&mut self) -> Option<u64> {
        None
    }

    /// `trace_printk(fmt, fmt_size, a, b, c)` (6) with the format's bytes (up to its NUL
    /// or `fmt_size`) and the three arguments; returns r0. `None`: not available
    /// ([`InterpError::UnknownHelper`]).
    fn trace_printk(&mut self, fmt: &[u8], args: [u64; 3]) -> Option<u64> {
        let _ = (fmt, args);
        None
    }
}

/// The reference environment: the [`Env`] defaults.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reference;

impl Env for Reference {}

/// Bytes of stack per call frame, as in Linux.
pub const STACK_SIZE: usize = 512;

/// The most call frames that may exist at once, the entry function's included (Linux's
/// `MAX_CALL_FRAMES`).
pub const MAX_FRAMES: usize = 8;

/// The default instruction budget of a run.
pub const DEFAULT_BUDGET: u64 = 1 << 24;

/// How a run is bounded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The most instructions one run may execute before it fails with
    /// [`InterpError::Budget`].
    pub budget: u64,
    /// `--loop-budget`: the loops the verifier put a budget on, and the budget.
    pub loop_budget: Option<LoopBudget>,
}

/// The loop budget of a program verified with `--loop-budget` (the verifier's
/// `Facts::budget_heads` and `Facts::loop_budget`): each time the entry function reaches
/// one of `heads` it spends one of `n` units; with none left the run ends with r0 = 0 and
/// the event is counted ([`Interp::budget_exhausted`]), as the GPU counts it in the
/// program's `bpf2ptx_loopcnt_` counter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopBudget {
    /// Units per run.
    pub n: u64,
    /// Instruction indices of the budgeted loops' heads (in the entry function).
    pub heads: Vec<usize>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            budget: DEFAULT_BUDGET,
            loop_budget: None,
        }
    }
}

/// The kind of memory access an out-of-bounds error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// A load (`ldx`).
    Load,
    /// A store (`st`, `stx`).
    Store,
    /// An atomic read-modify-write.
    Atomic,
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Access::Load => "load",
            Access::Store => "store",
            Access::Atomic => "atomic access",
        })
    }
}

/// Why a run did not end with a value. `pc` is the slot index of the instruction at fault.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum InterpError {
    /// The object has no program of that index (the one error that is about no
    /// instruction).
    #[error("program {prog} does not exist (the object has {count})")]
    NoSuchProgram {
        /// The requested program index.
        prog: usize,
        /// How many programs the object has.
        count: usize,
    },
    /// An instruction is malformed in a way decoding rules out (an opcode id outside the
    /// table, a register above r10): possible only for a hand-built [`Program`].
    #[error("insn {pc}: malformed instruction ({what})")]
    Malformed {
        /// Slot index.
        pc: usize,
        /// What is wrong.
        what: String,
    },
    /// A memory access is not wholly inside one region.
    #[error("insn {pc}: {access} of {size} bytes at 0x{addr:x} is outside every memory region")]
    OutOfBounds {
        /// Slot index.
        pc: usize,
        /// The kind of access.
        access: Access,
        /// The first byte's address.
        addr: u64,
        /// The access size in bytes.
        size: u32,
    },
    /// The run executed its whole instruction budget; `pc` is the next instruction.
    #[error("insn {pc}: instruction budget of {budget} exhausted")]
    Budget {
        /// Slot index.
        pc: usize,
        /// The budget.
        budget: u64,
    },
    /// A local call would create more than [`MAX_FRAMES`] frames.
    #[error("insn {pc}: call would make {frames} frames, more than the limit of {limit}")]
    CallDepth {
        /// Slot index of the call.
        pc: usize,
        /// The number of frames the call would make.
        frames: usize,
        /// [`MAX_FRAMES`].
        limit: usize,
    },
    /// A helper the interpreter does not have.
    #[error(
        "insn {pc}: helper {helper} is not available in the interpreter (it has 5, ktime_get_ns, and 165, snprintf)"
    )]
    UnknownHelper {
        /// Slot index of the call.
        pc: usize,
        /// The helper id (`imm`, or the register's value for `callx`).
        helper: i64,
    },
    /// `bpf_loop`'s r2 is not a function address.
    #[error("insn {pc}: bpf_loop's callback (r2 = {value:#x}) is not a function address")]
    BadCallback {
        /// Slot index of the call.
        pc: usize,
        /// The value of r2.
        value: u64,
    },
    /// A jump or call targets a slot that does not start an instruction of the program.
    #[error("insn {pc}: target slot {target} is not the start of an instruction")]
    BadTarget {
        /// Slot index of the jump or call.
        pc: usize,
        /// The slot it targets.
        target: i64,
    },
    /// Execution continues past the last instruction.
    #[error("insn {pc}: execution continues past the end of the program")]
    FellOff {
        /// Slot index of the last instruction executed.
        pc: usize,
    },
    /// An `ld_imm64` names a map the object does not have.
    #[error("insn {pc}: map {map} does not exist (the object has {count})")]
    NoSuchMap {
        /// Slot index.
        pc: usize,
        /// The map index.
        map: u64,
        /// How many maps the object has.
        count: usize,
    },
    /// The instruction needs a runtime the interpreter does not model.
    #[error("insn {pc}: `{insn}` {what}")]
    Unsupported {
        /// Slot index.
        pc: usize,
        /// The instruction, disassembled.
        insn: String,
        /// Why it cannot run.
        what: String,
    },
}

impl InterpError {
    /// The slot index the error is about, if it is about an instruction.
    pub fn pc(&self) -> Option<usize> {
        match *self {
            InterpError::NoSuchProgram { .. } => None,
            InterpError::Malformed { pc, .. }
            | InterpError::OutOfBounds { pc, .. }
            | InterpError::Budget { pc, .. }
            | InterpError::CallDepth { pc, .. }
            | InterpError::UnknownHelper { pc, .. }
            | InterpError::BadTarget { pc, .. }
            | InterpError::BadCallback { pc, .. }
            | InterpError::FellOff { pc }
            | InterpError::NoSuchMap { pc, .. }
            | InterpError::Unsupported { pc, .. } => Some(pc),
        }
    }
}

/// Runs program `prog` of `obj` once on `mem` with fresh global data; returns `r0`.
pub fn run(obj: &Object, prog: usize, mem: &mut [u8], opts: &Options) -> Result<u64, InterpError> {
    Interp::new(obj, opts.clone()).run(prog, mem)
}

/// An interpreter for the programs of one object. It owns the object's global data, so
/// several runs see each other's writes, as runs of a loaded program do.
///
/// After a program's first run, later runs allocate nothing: its control-flow graph is
/// kept, and the call frames' stacks are reused (zeroed per run). `bpf2ptx trace` runs
/// host-side programs at every kernel launch, where an allocation would be most of the
/// cost.
#[derive(Clone, Debug)]
pub struct Interp<'o> {
    obj: &'o Object,
    opts: Options,
    /// The value of each global-data map (`None` for other maps).
    globals: Vec<Option<Vec<u8>>>,
    /// Runs that ended because the loop budget was spent ([`LoopBudget`]).
    exhausted: u64,
    /// Each program's checked control-flow graph, made at its first run.
    cfgs: Vec<Option<Cfg>>,
    /// The call frames' stacks, kept between runs (capacity [`MAX_FRAMES`]).
    stacks: Vec<[u8; STACK_SIZE]>,
}

impl<'o> Interp<'o> {
    /// An interpreter with the global data of `obj` at its initial contents.
    pub fn new(obj: &'o Object, opts: Options) -> Interp<'o> {
        let globals = obj
            .maps
            .iter()
            .map(|m| {
                (m.origin == MapOrigin::GlobalData).then(|| {
                    let mut v = m.init.clone().unwrap_or_default();
                    v.resize(m.value_size as usize, 0);
                    v
                })
            })
            .collect();
        Interp {
            obj,
            opts,
            globals,
            exhausted: 0,
            cfgs: vec![None; obj.programs.len()],
            stacks: Vec::with_capacity(MAX_FRAMES),
        }
    }

    /// How many runs so far ended because their loop budget ran out ([`LoopBudget`]):
    /// what the GPU's `bpf2ptx_loopcnt_<program>` counter holds after as many runs.
    pub fn budget_exhausted(&self) -> u64 {
        self.exhausted
    }

    /// The current value of global-data map `map` (`None` for other maps).
    pub fn global_data(&self, map: usize) -> Option<&[u8]> {
        self.globals.get(map)?.as_deref()
    }

    /// Runs program `prog` on `mem` (passed as `r1`, its length as `r2`); returns `r0`.
    pub fn run(&mut self, prog: usize, mem: &mut [u8]) -> Result<u64, InterpError> {
        self.run_observed(prog, mem, &mut |_, _, _| {})
    }

    /// [`Interp::run`], calling `observe(i, regs, next)` after every instruction `i` that
    /// does not end the program, with the registers after it and the index of the next
    /// instruction: what tests use to check the verifier's facts against real runs.
    pub fn run_observed(
        &mut self,
        prog: usize,
        mem: &mut [u8],
        observe: &mut dyn FnMut(usize, &[u64; 11], usize),
    ) -> Result<u64, InterpError> {
        self.run_env(prog, mem, &mut Reference, observe)
    }

    /// [`Interp::run`] in the environment `env` (maps, clock, process ids: [`Env`]).
    pub fn run_with(
        &mut self,
        prog: usize,
        mem: &mut [u8],
        env: &mut dyn Env,
    ) -> Result<u64, InterpError> {
        self.run_env(prog, mem, env, &mut |_, _, _| {})
    }

    fn run_env(
        &mut self,
        prog: usize,
        mem: &mut [u8],
        env: &mut dyn Env,
        observe: &mut dyn FnMut(usize, &[u64; 11], usize),
    ) -> Result<u64, InterpError> {
        let obj = self.obj;
        let program = obj.programs.get(prog).ok_or(InterpError::NoSuchProgram {
            prog,
            count: obj.programs.len(),
        })?;
        if self.cfgs[prog].is_none() {
            self.cfgs[prog] = Some(checked_cfg(program)?);
        }
        let Some(cfg) = self.cfgs[prog].as_ref() else {
            unreachable!("made above")
        };
        let mut stacks = std::mem::take(&mut self.stacks);
        stacks.clear();
        stacks.push([0; STACK_SIZE]);
        let mut m = Machine {
            obj,
            insns: &program.insns,
            cfg,
            mem: Memory {
                input: mem,
                stacks,
                globals: &mut self.globals,
                env,
            },
            regs: [0; 11],
            frames: Vec::new(),
            executed: 0,
            budget: self.opts.budget,
            may_goto: BPF_MAX_LOOPS,
            program,
            loop_budget: self.opts.loop_budget.as_ref(),
            budget_left: self.opts.loop_budget.as_ref().map_or(0, |b| b.n),
            exhausted: false,
            observe,
        };
        m.regs[1] = MEM_BASE;
        m.regs[2] = m.mem.input.len() as u64;
        m.regs[10] = frame_pointer(0);
        let r = m.execute();
        let exhausted = m.exhausted;
        self.stacks = std::mem::take(&mut m.mem.stacks);
        if exhausted {
            self.exhausted += 1;
        }
        r
    }
}

/// The program's control-flow graph, after checking every instruction is one the table
/// knows with registers r0-r10, so nothing below can index out of bounds.
fn checked_cfg(program: &Program) -> Result<Cfg, InterpError> {
    let mut pc = 0;
    for insn in &program.insns {
        if usize::from(insn.op) >= OPCODES.len() {
            return Err(InterpError::Malformed {
                pc,
                what: format!("opcode id {} is not in the table", insn.op),
            });
        }
        if insn.dst > 10 || insn.src > 10 {
            return Err(InterpError::Malformed {
                pc,
                what: format!("register r{} above r10", insn.dst.max(insn.src)),
            });
        }
        pc += insn.slots();
    }
    Ok(Cfg::new(program))
}

/// `r10` of call frame `depth`: the end of its stack region's bytes.
fn frame_pointer(depth: usize) -> u64 {
    ((STACK_REGION + depth as u64) << REGION_SHIFT) + STACK_SIZE as u64
}

/// The regions of the address space that have bytes.
struct Memory<'a> {
    input: &'a mut [u8],
    /// One stack per live frame, the entry function's first.
    stacks: Vec<[u8; STACK_SIZE]>,
    globals: &'a mut Vec<Option<Vec<u8>>>,
    /// Where map storage (regions of maps that are not global data) comes from.
    env: &'a mut dyn Env,
}

impl Memory<'_> {
    /// The `size` bytes at `addr`, if they lie wholly inside one region.
    fn bytes(&mut self, addr: u64, size: usize) -> Option<&mut [u8]> {
        let (buf, off) = self.region(addr)?;
        buf.get_mut(off..off.checked_add(size)?)
    }

    /// The bytes from `addr` to the end of its region, if it lies in one (a string a
    /// helper reads up to its NUL).
    fn rest(&mut self, addr: u64) -> Option<&[u8]> {
        let (buf, off) = self.region(addr)?;
        buf.get(off..)
    }

    /// The bytes of the region `addr` is in, and its offset there.
    fn region(&mut self, addr: u64) -> Option<(&mut [u8], usize)> {
        let region = addr >> REGION_SHIFT;
        let off = usize::try_from(addr & (REGION_SIZE - 1)).ok()?;
        let buf: &mut [u8] = match region {
            MEM_REGION => self.input,
            r if (STACK_REGION..MAP_REGION).contains(&r) => {
                let d = usize::try_from(r - STACK_REGION).ok()?;
                self.stacks.get_mut(d)?.as_mut_slice()
            }
            r if r >= MAP_REGION => {
                let i = usize::try_from(r - MAP_REGION).ok()?;
                match self.globals.get_mut(i)? {
                    Some(g) => g.as_mut_slice(),
                    None => self.env.map_storage(i)?,
                }
            }
            _ => return None,
        };
        Some((buf, off))
    }
}

/// A caller's state saved by a local call.
struct Frame {
    /// Index of the instruction to continue at.
    ret: usize,
    /// The caller's r6-r10.
    saved: [u64; 5],
    /// The caller's `may_goto` budget (each function invocation has its own).
    may_goto: u64,
    /// Set when the frame is a `bpf_loop` callback's: the loop to continue at its `exit`.
    looping: Option<LoopCall>,
}

/// A `bpf_loop` in progress: the callback runs for `index` = 0, 1, ... < `count`.
#[derive(Clone, Copy)]
struct LoopCall {
    /// Instruction index of the callback's first instruction.
    callback: usize,
    /// The index of the call running now.
    index: u64,
    /// `nr_loops`.
    count: u64,
    /// The callback's r2.
    ctx: u64,
}

/// Base of the (inaccessible) region that function addresses (`ld_imm64` with `src` 4)
/// point into: the value is this plus the function's first instruction index, so
/// `bpf_loop` can tell a callback from any other number.
const FUNC_BASE: u64 = 15 << REGION_SHIFT;

/// The state of one run.
struct Machine<'a> {
    obj: &'a Object,
    insns: &'a [Insn],
    /// Where jumps and calls go: [`Cfg::target`], the whole program (the interpreter
    /// also runs programs no verifier checked, and reports a target that is no
    /// instruction as [`InterpError::BadTarget`]).
    cfg: &'a Cfg,
    mem: Memory<'a>,
    regs: [u64; 11],
    frames: Vec<Frame>,
    executed: u64,
    budget: u64,
    /// The running function invocation's `may_goto` budget ([`BPF_MAX_LOOPS`] at entry).
    may_goto: u64,
    /// The program (for the names of its kfunc calls).
    program: &'a Program,
    /// The loop budget, if the program was verified with one.
    loop_budget: Option<&'a LoopBudget>,
    /// Its units left in this run.
    budget_left: u64,
    /// The run ended because the budget ran out.
    exhausted: bool,
    observe: &'a mut dyn FnMut(usize, &[u64; 11], usize),
}

impl Machine<'_> {
    fn execute(&mut self) -> Result<u64, InterpError> {
        let mut i = 0usize;
        loop {
            let (Some(&insn), Some(&pc)) = (self.insns.get(i), self.cfg.pcs().get(i)) else {
                // Only reachable with an empty program: every other step checks its target.
                return Err(InterpError::FellOff { pc: 0 });
            };
            if self.executed >= self.budget {
                return Err(InterpError::Budget {
                    pc,
                    budget: self.budget,
                });
            }
            self.executed += 1;
            if self.frames.is_empty()
                && self
                    .loop_budget
                    .is_some_and(|b| b.heads.binary_search(&i).is_ok())
            {
                if self.budget_left == 0 {
                    self.exhausted = true;
                    return Ok(0);
                }
                self.budget_left -= 1;
            }
            let next = match self.step(insn, i, pc)? {
                // An `Insn` is one entry whatever its slot count.
                Step::Next => i + 1,
                Step::Jump(j) => j,
                Step::Exit(r0) => return Ok(r0),
            };
            if next >= self.insns.len() {
                return Err(InterpError::FellOff { pc });
            }
            (self.observe)(i, &self.regs, next);
            i = next;
        }
    }

    /// The instruction `rel` slots after the one following instruction `i` (jumps and
    /// calls count from the next slot; they are all one slot long).
    fn target(&self, i: usize, rel: i64) -> Result<usize, InterpError> {
        self.cfg
            .target(i, rel)
            .map_err(|target| InterpError::BadTarget {
                pc: self.cfg.pc(i),
                target,
            })
    }

    /// Where jump or branch `i` goes when it is taken.
    fn jump(&self, i: usize, insn: Insn) -> Result<Step, InterpError> {
        let rel = insn.jump_rel().expect("a jump or branch");
        self.target(i, rel).map(Step::Jump)
    }

    fn unsupported(&self, pc: usize, insn: Insn, what: impl Into<String>) -> InterpError {
        InterpError::Unsupported {
            pc,
            insn: insn.to_string(),
            what: what.into(),
        }
    }

    fn load(
        &mut self,
        pc: usize,
        access: Access,
        addr: u64,
        size: Size,
    ) -> Result<u64, InterpError> {
        let n = size.bytes() as usize;
        let b = self.mem.bytes(addr, n).ok_or(InterpError::OutOfBounds {
            pc,
            access,
            addr,
            size: size.bytes(),
        })?;
        let mut word = [0u8; 8];
        word[..n].copy_from_slice(b);
        Ok(u64::from_le_bytes(word))
    }

    fn store(
        &mut self,
        pc: usize,
        access: Access,
        addr: u64,
        size: Size,
        value: u64,
    ) -> Result<(), InterpError> {
        let n = size.bytes() as usize;
        let b = self.mem.bytes(addr, n).ok_or(InterpError::OutOfBounds {
            pc,
            access,
            addr,
            size: size.bytes(),
        })?;
        b.copy_from_slice(&value.to_le_bytes()[..n]);
        Ok(())
    }

    fn step(&mut self, insn: Insn, i: usize, pc: usize) -> Result<Step, InterpError> {
        let d = usize::from(insn.dst);
        let s = usize::from(insn.src);
        let imm = insn.imm as u64;
        match insn.kind() {
            Kind::Alu(op, w, src) => {
                let b = match src {
                    Src::K => imm,
                    Src::X => self.regs[s],
                };
                let a = self.regs[d];
                self.regs[d] = match w {
                    Width::W64 => alu64(op, a, b),
                    Width::W32 => u64::from(alu32(op, a as u32, b as u32)),
                };
            }
            Kind::Neg(Width::W64) => self.regs[d] = self.regs[d].wrapping_neg(),
            Kind::Neg(Width::W32) => self.regs[d] = u64::from((self.regs[d] as u32).wrapping_neg()),
            Kind::Movsx(w, bits) => {
                let v = sign_extend(self.regs[s], bits);
                self.regs[d] = match w {
                    Width::W64 => v,
                    Width::W32 => v & 0xffff_ffff,
                };
            }
            Kind::Endian(order, bits) => self.regs[d] = endian(order, bits, self.regs[d]),
            Kind::Jmp(cond, w, src) => {
                let b = match src {
                    Src::K => imm,
                    Src::X => self.regs[s],
                };
                if compare(cond, w, self.regs[d], b) {
                    return self.jump(i, insn);
                }
            }
            Kind::Ja | Kind::Gotol => return self.jump(i, insn),
            Kind::Call(CallKind::Helper) if bpf2ptx_runtime::is_helper(insn.imm, "loop") => {
                return self.bpf_loop(pc, i);
            }
            Kind::Call(CallKind::Helper) => self.regs[0] = self.helper(pc, insn.imm)?,
            Kind::Callx => self.regs[0] = self.helper(pc, self.regs[d] as i64)?,
            Kind::Call(CallKind::Local) => {
                let target = self.target(i, insn.func_rel().expect("a local call"))?;
                let frames = self.frames.len() + 2;
                if frames > MAX_FRAMES {
                    return Err(InterpError::CallDepth {
                        pc,
                        frames,
                        limit: MAX_FRAMES,
                    });
                }
                self.push_frame(i + 1, None);
                return Ok(Step::Jump(target));
            }
            Kind::Call(CallKind::Kfunc) => match self.program.kfunc(i) {
                Some(k) => self.kfunc(pc, k)?,
                None => {
                    return Err(self.unsupported(
                        pc,
                        insn,
                        "calls a kernel function the runtime does not have",
                    ))
                }
            },
            Kind::MayGoto => {
                // Linux: jump once the budget is spent, otherwise spend one unit.
                if self.may_goto == 0 {
                    return self.target(pc, insn.off.into()).map(Step::Jump);
                }
                self.may_goto -= 1;
            }
            Kind::Exit => {
                let Some(frame) = self.frames.pop() else {
                    return Ok(Step::Exit(self.regs[0]));
                };
                self.mem.stacks.pop();
                self.may_goto = frame.may_goto;
                if let Some(mut lc) = frame.looping {
                    // The callback returned: 0 continues, anything else stops (the
                    // verifier allows 0 and 1 only).
                    lc.index += 1;
                    if self.regs[0] == 0 && lc.index < lc.count {
                        self.regs[6..11].copy_from_slice(&frame.saved);
                        self.push_frame(frame.ret, Some(lc));
                        self.regs[1] = lc.index;
                        self.regs[2] = lc.ctx;
                        return Ok(Step::Jump(lc.callback));
                    }
                    self.regs[0] = lc.index;
                }
                self.regs[6..11].copy_from_slice(&frame.saved);
                return Ok(Step::Jump(frame.ret));
            }
            Kind::LdImm64(pseudo) => self.regs[d] = self.ld_imm64(pc, insn, pseudo)?,
            Kind::LdAbs(_) | Kind::LdInd(_) => {
                return Err(self.unsupported(
                    pc,
                    insn,
                    "is a legacy packet load, which needs a socket buffer the interpreter does not model",
                ));
            }
            Kind::Ldx(size, signed) => {
                let addr = self.regs[s].wrapping_add(insn.off as u64);
                let v = self.load(pc, Access::Load, addr, size)?;
                self.regs[d] = if signed {
                    sign_extend(v, (size.bytes() * 8) as u8)
                } else {
                    v
                };
            }
            Kind::St(size) => {
                let addr = self.regs[d].wrapping_add(insn.off as u64);
                self.store(pc, Access::Store, addr, size, imm)?;
            }
            Kind::Stx(size) => {
                let addr = self.regs[d].wrapping_add(insn.off as u64);
                self.store(pc, Access::Store, addr, size, self.regs[s])?;
            }
            Kind::Atomic(size, op, fetch) => self.atomic(pc, insn, size, op, fetch)?,
        }
        Ok(Step::Next)
    }

    /// A new frame for a call that returns to instruction `ret`: the caller's r6-r10 and
    /// `may_goto` budget saved, a zeroed stack, a fresh budget.
    fn push_frame(&mut self, ret: usize, looping: Option<LoopCall>) {
        let mut saved = [0; 5];
        saved.copy_from_slice(&self.regs[6..11]);
        self.frames.push(Frame {
            ret,
            saved,
            may_goto: self.may_goto,
            looping,
        });
        self.may_goto = BPF_MAX_LOOPS;
        self.mem.stacks.push([0; STACK_SIZE]);
        self.regs[10] = frame_pointer(self.frames.len());
    }

    fn ld_imm64(&self, pc: usize, insn: Insn, pseudo: Pseudo) -> Result<u64, InterpError> {
        let what = match pseudo {
            Pseudo::Imm64 => return Ok(insn.imm as u64),
            Pseudo::MapIdxValue => {
                let map = insn.imm as u64 & 0xffff_ffff;
                let off = insn.imm as u64 >> 32;
                let count = self.obj.maps.len();
                let m = usize::try_from(map)
                    .ok()
                    .and_then(|i| self.obj.maps.get(i))
                    .ok_or(InterpError::NoSuchMap { pc, map, count })?;
                let lent = self.mem.env.maps() && m.is(bpf2ptx_runtime::MapKind::has_direct_value);
                if m.origin != MapOrigin::GlobalData && !lent {
                    return Err(self.unsupported(
                        pc,
                        insn,
                        format!(
                            "points into map {map} (`{}`), which is not global data; its values need the map runtime",
                            m.name
                        ),
                    ));
                }
                // Region numbers must fit the top 20 bits of an address.
                let region = MAP_REGION + map;
                if region >= 1 << (64 - REGION_SHIFT) {
                    return Err(self.unsupported(
                        pc,
                        insn,
                        "names a map index beyond the address map",
                    ));
                }
                return Ok((region << REGION_SHIFT) + off);
            }
            Pseudo::MapIdx if self.mem.env.maps() => {
                let map = insn.imm as u64 & 0xffff_ffff;
                let count = self.obj.maps.len();
                if map >= count as u64 {
                    return Err(InterpError::NoSuchMap { pc, map, count });
                }
                return Ok(MAP_HANDLE_BASE + map);
            }
            Pseudo::MapIdx => "loads a map handle, which needs the map runtime",
            Pseudo::MapFd | Pseudo::MapValue => {
                "refers to a map by file descriptor, which only a kernel loader resolves"
            }
            Pseudo::BtfId => "refers to a kernel variable, which the interpreter does not model",
            Pseudo::Func => {
                let rel = i64::from(insn.imm as i32);
                let i = self.cfg.at(pc as i64).expect("an instruction starts at pc");
                return self.target(i, rel).map(|t| FUNC_BASE + t as u64);
            }
        };
        Err(self.unsupported(pc, insn, what))
    }

    fn atomic(
        &mut self,
        pc: usize,
        insn: Insn,
        size: Size,
        op: AtomicOp,
        fetch: bool,
    ) -> Result<(), InterpError> {
        let d = usize::from(insn.dst);
        let s = usize::from(insn.src);
        let addr = self.regs[d].wrapping_add(insn.off as u64);
        let mask = match size {
            Size::W => 0xffff_ffff,
            _ => u64::MAX,
        };
        let src = self.regs[s] & mask;
        let expected = self.regs[0] & mask;
        let n = size.bytes() as usize;
        let bytes = self.mem.bytes(addr, n).ok_or(InterpError::OutOfBounds {
            pc,
            access: Access::Atomic,
            addr,
            size: size.bytes(),
        })?;
        let old = atomic_rmw(bytes, op, src, expected);
        match op {
            AtomicOp::Cmpxchg => self.regs[0] = old,
            _ if fetch => self.regs[s] = old,
            _ => {}
        }
        Ok(())
    }
}

/// What the run does after an instruction.
enum Step {
    /// Continue with the next instruction.
    Next,
    /// Continue at this instruction index.
    Jump(usize),
    /// The entry function returned this `r0`.
    Exit(u64),
}

#[cfg(test)]
mod tests;
