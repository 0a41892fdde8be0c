//! Calls out of the program: the helpers the interpreter knows (`ktime_get_ns`,
//! `get_current_pid_tgid`, bpf2ptx's `log2`, the array map helpers on storage an [`Env`](super::Env)
//! lends, `trace_printk`, `bpf_snprintf`), `bpf_loop`, and the numeric iterator kfuncs.
//!
//! Apart from the machine (`interp/mod.rs`) because each is one kernel function's
//! behaviour as Linux defines it, its results and error codes included, to be read
//! against Linux's source one function at a time; the machine's `step` only dispatches
//! to them.

use super::{
    Access, InterpError, LoopCall, Machine, Step, FUNC_BASE, MAP_HANDLE_BASE, MAP_REGION,
    MAX_FRAMES, REGION_SHIFT,
};
use crate::isa::table::Size;
use crate::program::MapOrigin;
use bpf2ptx_runtime::{snprintf, Kfunc, BPF_MAX_LOOPS};

impl Machine<'_> {
    pub(super) fn helper(&mut self, pc: usize, id: i64) -> Result<u64, InterpError> {
        match id {
            // ktime_get_ns: the environment's; the reference one is deterministic, the
            // instructions executed so far in this run.
            5 => Ok(self.mem.env.ktime_ns(self.executed)),
            14 => self
                .mem
                .env
                .pid_tgid()
                .ok_or(InterpError::UnknownHelper { pc, helper: id }),
            1..=3 if self.mem.env.maps() => self.map_helper(pc, id),
            6 => self.trace_printk(pc),
            // bpf2ptx's log2 (603): floor(log2(r1)), 0 for 0, as the GPU's bfind.
            603 => Ok(bpf2ptx_runtime::log2(self.regs[1])),
            165 => self.snprintf(pc),
            helper => Err(InterpError::UnknownHelper { pc, helper }),
        }
    }

    /// The map helpers (1 lookup, 2 update, 3 delete) on an array whose storage the
    /// [`Env`](super::Env) lends, with the device runtime's results (specs/abi.md; Linux's for
    /// arrays): lookup of an index past `max_entries`, or of an unbound map, is NULL;
    /// update with flags above `BPF_EXIST` or of an unbound map is -EINVAL, with
    /// `BPF_NOEXIST` -EEXIST (an array's keys always exist), past the end -E2BIG;
    /// delete is -EINVAL (an array's elements cannot be deleted). Any other map kind is
    /// [`InterpError::Unsupported`]: the environment refuses such programs before they
    /// run (`bpf2ptx trace` does, at the start).
    fn map_helper(&mut self, pc: usize, id: i64) -> Result<u64, InterpError> {
        use bpf2ptx_runtime::maps::{BPF_EXIST, BPF_NOEXIST, E2BIG, EEXIST, EINVAL};
        let handle = self.regs[1];
        let insn = self.insns[self.cfg.at(pc as i64).expect("the call's instruction")];
        let Some(map) = handle
            .checked_sub(MAP_HANDLE_BASE)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < self.obj.maps.len())
        else {
            return Err(self.unsupported(pc, insn, format!("r1 = {handle:#x} is no map")));
        };
        let m = &self.obj.maps[map];
        if !m.is(bpf2ptx_runtime::MapKind::has_direct_value) || m.origin == MapOrigin::GlobalData {
            return Err(self.unsupported(
                pc,
                insn,
                format!(
                    "on map `{}`: the map helpers run on arrays (types 2, 1503, 1504, 1513) here",
                    m.name
                ),
            ));
        }
        let (value_size, entries) = (u64::from(m.value_size), u64::from(m.max_entries));
        let stride = value_size.div_ceil(8) * 8;
        let index = self.load(pc, Access::Load, self.regs[2], Size::W)?;
        let bound = self.mem.env.map_storage(map).map(|s| s.len() as u64);
        let slot = ((MAP_REGION + map as u64) << REGION_SHIFT) + index * stride;
        let fits = index < entries && bound.is_some_and(|len| (index + 1) * stride <= len);
        Ok(match id {
            1 => {
                if fits {
                    slot
                } else {
                    0
                }
            }
            2 => {
                let flags = self.regs[4];
                let r = if flags > BPF_EXIST || bound.is_none() {
                    EINVAL
                } else if flags == BPF_NOEXIST {
                    EEXIST
                } else if !fits {
                    E2BIG
                } else {
                    let src = self.regs[3];
                    let mut at = 0;
                    while at < value_size {
                        let size = if value_size - at >= 8 {
                            Size::DW
                        } else {
                            Size::B
                        };
                        let v = self.load(pc, Access::Load, src + at, size)?;
                        self.store(pc, Access::Store, slot + at, size, v)?;
                        at += u64::from(size.bytes());
                    }
                    0
                };
                r as u64
            }
            _ => EINVAL as u64,
        })
    }

    /// `trace_printk` (6) handed to the environment with its format's bytes.
    fn trace_printk(&mut self, pc: usize) -> Result<u64, InterpError> {
        let [fmt, size, a, b, c] = [1, 2, 3, 4, 5].map(|r| self.regs[r]);
        let bytes = self.mem.rest(fmt).ok_or(InterpError::OutOfBounds {
            pc,
            access: Access::Load,
            addr: fmt,
            size: 1,
        })?;
        let n = bytes.len().min(size as u32 as usize);
        let text = &bytes[..bytes[..n].iter().position(|&x| x == 0).unwrap_or(n)];
        let mut buf = [0u8; 256];
        let k = text.len().min(buf.len());
        buf[..k].copy_from_slice(&text[..k]);
        self.mem
            .env
            .trace_printk(&buf[..k], [a, b, c])
            .ok_or(InterpError::UnknownHelper { pc, helper: 6 })
    }

    /// `bpf_snprintf(str, str_size, fmt, data, data_len)` (helper 165) as Linux runs it:
    /// `-EINVAL` for a data length that is not a multiple of 8 or above 96 bytes, or a
    /// format Linux refuses (only an unverified program gets there); else the formatted
    /// text written as [`snprintf::write_truncated`] writes it, and its length plus 1.
    fn snprintf(&mut self, pc: usize) -> Result<u64, InterpError> {
        let [out, size, fmt, data, len] = [1, 2, 3, 4, 5].map(|r| self.regs[r]);
        let (size, len) = (size as u32 as usize, len as u32 as usize);
        if len % 8 != 0 || len > 8 * snprintf::MAX_ARGS {
            return Ok(snprintf::EINVAL as u64);
        }
        let bytes = self
            .mem
            .rest(fmt)
            .ok_or(InterpError::OutOfBounds {
                pc,
                access: Access::Load,
                addr: fmt,
                size: 1,
            })?
            .to_vec();
        let Ok(format) = snprintf::parse(&bytes, len / 8) else {
            return Ok(snprintf::EINVAL as u64);
        };
        let args = (0..len / 8)
            .map(|k| self.load(pc, Access::Load, data.wrapping_add(8 * k as u64), Size::DW))
            .collect::<Result<Vec<u64>, _>>()?;
        let mem = &mut self.mem;
        let text = format.render(&args, &mut |_, p| {
            let s = mem.rest(p).unwrap_or(&[]);
            s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())].to_vec()
        });
        let dst = self.mem.bytes(out, size).ok_or(InterpError::OutOfBounds {
            pc,
            access: Access::Store,
            addr: out,
            size: size as u32,
        })?;
        Ok(snprintf::write_truncated(dst, &text))
    }

    /// `bpf_loop(nr_loops, callback, ctx, flags)` (helper 181) as Linux runs it: `-EINVAL`
    /// for flags other than 0, `-E2BIG` for more than [`BPF_MAX_LOOPS`] loops, 0 for none;
    /// otherwise the callback's first call, continued at its `exit`.
    pub(super) fn bpf_loop(&mut self, pc: usize, i: usize) -> Result<Step, InterpError> {
        let (count, func, ctx, flags) = (
            self.regs[1] & 0xffff_ffff,
            self.regs[2],
            self.regs[3],
            self.regs[4],
        );
        let callback = func
            .checked_sub(FUNC_BASE)
            .filter(|&t| t < self.insns.len() as u64)
            .ok_or(InterpError::BadCallback { pc, value: func })? as usize;
        let early = if flags != 0 {
            Some(bpf2ptx_runtime::EINVAL as u64)
        } else if count > BPF_MAX_LOOPS {
            Some(bpf2ptx_runtime::E2BIG as u64)
        } else if count == 0 {
            Some(0)
        } else {
            None
        };
        if let Some(r0) = early {
            self.regs[0] = r0;
            return Ok(Step::Next);
        }
        let frames = self.frames.len() + 2;
        if frames > MAX_FRAMES {
            return Err(InterpError::CallDepth {
                pc,
                frames,
                limit: MAX_FRAMES,
            });
        }
        self.push_frame(
            i + 1,
            Some(LoopCall {
                callback,
                index: 0,
                count,
                ctx,
            }),
        );
        self.regs[1] = 0;
        self.regs[2] = ctx;
        Ok(Step::Jump(callback))
    }

    /// The numeric iterator kfuncs, as Linux's `kernel/bpf/bpf_iter.c` defines them on the
    /// 8-byte `struct bpf_iter_num` at r1: `{ s32 cur; s32 end; }`.
    pub(super) fn kfunc(&mut self, pc: usize, k: Kfunc) -> Result<(), InterpError> {
        let it = self.regs[1];
        let set = |m: &mut Self, cur: i32, end: i32| {
            let v = u64::from(cur as u32) | (u64::from(end as u32) << 32);
            m.store(pc, Access::Store, it, Size::DW, v)
        };
        match k {
            Kfunc::IterNumNew => {
                let (start, end) = (self.regs[2] as i32, self.regs[3] as i32);
                let r0 = if start > end {
                    set(self, 0, 0)?;
                    bpf2ptx_runtime::EINVAL
                } else if (i64::from(end) - i64::from(start)) as u64 > BPF_MAX_LOOPS {
                    set(self, 0, 0)?;
                    bpf2ptx_runtime::E2BIG
                } else {
                    set(self, start.wrapping_sub(1), end)?;
                    0
                };
                self.regs[0] = r0 as u64;
            }
            Kfunc::IterNumNext => {
                let v = self.load(pc, Access::Load, it, Size::DW)?;
                let (cur, end) = (v as u32 as i32, (v >> 32) as u32 as i32);
                if i64::from(cur) + 1 >= i64::from(end) {
                    set(self, 0, 0)?;
                    self.regs[0] = 0;
                } else {
                    set(self, cur + 1, end)?;
                    self.regs[0] = it;
                }
            }
            Kfunc::IterNumDestroy => set(self, 0, 0)?,
        }
        Ok(())
    }
}
