//! Attach points: which program runs where in an application kernel, read from the
//! program's ELF section name, and the context each attach point gives the program.
//!
//! | section | point | kernels |
//! |---|---|---|
//! | `gpu/entry/K`, `kprobe/K` (bpftime) | first instruction | K |
//! | `gpu/exit/K`, `kretprobe/K` (bpftime) | before every `ret` and `exit` | K |
//! | `gpu/mem/K` | before every `ld`/`ldu`/`st`/`atom`/`red` on global, shared, local or generic memory | K |
//! | `kprobe/__memcapture` (bpftime) | same as `gpu/mem/*` | all |
//!
//! `K` is a kernel's PTX name (`_Z6vecAddPKfS0_Pfi`), the C++ name it mangles (`vecAdd`),
//! or `*`. Our points take a granularity suffix (`gpu/entry.warp/K`, `gpu/mem.block/K`);
//! bpftime's names use the command line's `--granularity`.

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
}

impl Point {
    /// Bytes of the context r1 points to: `struct bpf2ptx_kernel_ctx` (entry, exit) or
    /// `struct bpf2ptx_mem_ctx` (memory), in runtime-ptx/include/bpf2ptx_helpers.h.
    pub fn ctx_size(self) -> u32 {
        match self {
            Point::Entry | Point::Exit => KERNEL_CTX_SIZE,
            Point::Mem => MEM_CTX_SIZE,
        }
    }
}

/// `struct bpf2ptx_kernel_ctx { u32 kernel; u32 site; }`.
pub const KERNEL_CTX_SIZE: u32 = 8;
/// `struct bpf2ptx_mem_ctx { u64 addr; u32 size; u32 flags; u32 kernel; u32 site; }`.
pub const MEM_CTX_SIZE: u32 = 24;

/// `flags` bit: the access reads memory (`ld`, `ldu`, `atom`).
pub const MEM_LOAD: u32 = 1;
/// `flags` bit: the access writes memory (`st`, `atom`, `red`).
pub const MEM_STORE: u32 = 2;
/// `flags` bit: the access is atomic (`atom`, `red`).
pub const MEM_ATOMIC: u32 = 4;
/// `flags >> MEM_SPACE_SHIFT & 0xff` is the state space: 0 generic, 1 global, 2 shared
/// (CTA), 3 local, 4 shared::cluster.
pub const MEM_SPACE_SHIFT: u32 = 8;

/// A program's attach point.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach {
    /// Where.
    pub point: Point,
    /// The kernel pattern: a PTX name, a C++ base name, or `*`.
    pub kernel: String,
    /// The section's own granularity (`gpu/entry.warp/...`); `None`: the command line's.
    pub granularity: Option<Granularity>,
}

impl Attach {
    /// The attach point a section names; `None` for sections that are not GPU attach
    /// points (host programs, `.text`, unknown names).
    pub fn from_section(section: &str) -> Option<Attach> {
        let any = |point| Attach {
            point,
            kernel: "*".into(),
            granularity: None,
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
        let point = match point {
            "entry" => Point::Entry,
            "exit" => Point::Exit,
            "mem" => Point::Mem,
            _ => return None,
        };
        Some(Attach {
            point,
            kernel: nonempty(kernel)?.into(),
            granularity: gran,
        })
    }

    /// Whether the pattern names the kernel `ptx_name`: `*`, the name itself, or the
    /// C++ name an Itanium-mangled `_Z<len><name>...` carries.
    pub fn matches(&self, ptx_name: &str) -> bool {
        self.kernel == "*" || self.kernel == ptx_name || base_name(ptx_name) == Some(&self.kernel)
    }
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
