//! Host-side programs: programs of a probe object that `bpf2ptx trace` runs on the CPU,
//! inside the application, at each kernel launch, before the launch reaches the driver
//! (specs/trace.md, "Host-side programs"; the contexts in specs/abi.md, "Host-side
//! programs").
//!
//! ```text
//!  section                                   runs at                context (r1)
//!  host/launch/KERNEL (KERNEL: name or *)    launches of KERNEL     struct bpf2ptx_launch_ctx
//!  uprobe/...cudaLaunchKernel..., uprobe/...cuLaunchKernel...,
//!  uprobe (bpftime's launchlate)             every launch           struct pt_regs (x86-64),
//!                                                                   cudaLaunchKernel's arguments
//! ```
//!
//! They are verified like GPU programs (their context read-only, of its size), may call
//! only the helpers the host has ([`HOST_HELPERS`]), and may use only maps whose storage
//! the host and the GPU can share as it is: arrays ([`MapKind::has_direct_value`]) and
//! global data (the host's own copy). This module is the one place that decides all of
//! that; the front end checks it before the application starts and the interposer again
//! when it loads the object (a session started by hand gets the same answer).

use crate::compile::is_gpu_section;
use bpf2ptx_backend::inject::attach::Attach;
use bpf2ptx_compiler::isa::table::{CallKind, Kind, Pseudo};
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_runtime::MapKind;
use bpf2ptx_verifier::Entry;
use thiserror::Error;

/// The most 8-byte words a pushed map ([`HostPrograms::pushed`]) may have: every word is
/// written at every launch (one `cuStreamWriteValue64` each), so a larger map stays in
/// pinned memory for the GPU too.
pub const PUSH_MAX_WORDS: u64 = 32;

/// Bytes of `struct bpf2ptx_launch_ctx` (specs/abi.md).
pub const LAUNCH_CTX_SIZE: usize = 64;
/// Bytes of x86-64's `struct pt_regs`, a `uprobe` program's context.
pub const PT_REGS_SIZE: usize = 168;

/// Byte offsets of `struct bpf2ptx_launch_ctx`'s fields: the one home of the layout the
/// interposer fills and runtime-ptx/include/bpf2ptx_helpers.h declares.
pub mod launch_ctx {
    /// `__u32 grid_x, grid_y, grid_z`.
    pub const GRID: usize = 0;
    /// `__u32 block_x, block_y, block_z`.
    pub const BLOCK: usize = 12;
    /// `__u32 shared_bytes`: dynamic shared memory of the launch.
    pub const SHARED: usize = 24;
    /// `__u32 kernel`: the kernel's id, 1 for the first kernel name launched, 2 for the
    /// next, ... (the order of `bpf2ptx trace`'s kernel events).
    pub const KERNEL: usize = 28;
    /// `__u64 stream`: the `CUstream` handle (0: the legacy default stream).
    pub const STREAM: usize = 32;
    /// `__u64 host_ns`: when the launch call was made, on the GPU's `%globaltimer`
    /// timeline (what `bpf_ktime_get_ns` returns on the host).
    pub const HOST_NS: usize = 40;
    /// `__u64 kernel_hash`: FNV-1a (64 bits) of the kernel's PTX name.
    pub const KERNEL_HASH: usize = 48;
    /// `__u64 seq`: the launch's number in the process, from 1: the `seq` of its trace
    /// events.
    pub const SEQ: usize = 56;
}

/// Byte offsets of the `struct pt_regs` (x86-64) registers a `uprobe` program on
/// `cudaLaunchKernel(func, gridDim, blockDim, args, sharedMem, stream)` reads through
/// libbpf's `PT_REGS_PARMn` / `BPF_KPROBE` (System V: rdi, rsi, rdx, rcx, r8, r9, then
/// the stack).
pub mod pt_regs {
    /// r9: 6th argument (`sharedMem`, since `dim3` takes two registers).
    pub const R9: usize = 64;
    /// r8: 5th argument (`blockDim.z`).
    pub const R8: usize = 72;
    /// rcx: 4th argument (`blockDim.x | blockDim.y << 32`).
    pub const CX: usize = 88;
    /// rdx: 3rd argument (`gridDim.z`).
    pub const DX: usize = 96;
    /// rsi: 2nd argument (`gridDim.x | gridDim.y << 32`).
    pub const SI: usize = 104;
    /// rdi: 1st argument (`func`: here the driver's function handle).
    pub const DI: usize = 112;
}

/// Helper ids a host-side program may call: map lookup, update, delete (1-3, on arrays),
/// `ktime_get_ns` (5, on the GPU's timeline), `trace_printk` (6), `get_current_pid_tgid`
/// (14), `snprintf` (165) and `loop` (181). Every other helper is a GPU helper or one the
/// host does not have.
pub const HOST_HELPERS: &[i64] = &[1, 2, 3, 5, 6, 14, 165, 181];

/// When a host-side program runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostAttach {
    /// `host/launch/KERNEL`: launches of kernels the pattern matches (as a GPU attach
    /// point's: PTX name, C++ name or `*`), context `struct bpf2ptx_launch_ctx`.
    Launch {
        /// The kernel pattern.
        kernel: String,
    },
    /// `uprobe` on a launch call (bpftime's convention): every launch, context
    /// `struct pt_regs` holding `cudaLaunchKernel`'s arguments.
    Uprobe,
}

impl HostAttach {
    /// The host attach point of `section`; `Ok(None)` for a section that is no host
    /// program's (GPU programs, `.text`, ...); an error for a `uprobe` on a function
    /// other than a launch call, or `host/` with an unknown point.
    pub fn from_section(section: &str) -> Result<Option<HostAttach>, String> {
        if let Some(rest) = section.strip_prefix("host/") {
            return match rest.split_once('/') {
                Some(("launch", k)) if !k.is_empty() => Ok(Some(HostAttach::Launch {
                    kernel: k.to_string(),
                })),
                _ => Err(format!(
                    "section `{section}`: the host attach point is host/launch/KERNEL"
                )),
            };
        }
        if section == "uprobe" {
            return Ok(Some(HostAttach::Uprobe));
        }
        if let Some(target) = section.strip_prefix("uprobe/") {
            // `uprobe/cudaLaunchKernel`, `uprobe/PATH:SYMBOL` with SYMBOL the C name or a
            // C++ instantiation (`_Z16cudaLaunchKernelIcE9cudaError...`).
            let symbol = target.rsplit(':').next().unwrap_or(target);
            let symbol = symbol.rsplit('/').next().unwrap_or(symbol);
            return if ["cudaLaunchKernel", "cuLaunchKernel"]
                .iter()
                .any(|f| symbol.contains(f))
            {
                Ok(Some(HostAttach::Uprobe))
            } else {
                Err(format!(
                    "section `{section}`: host-side programs run at kernel launches \
                     (uprobe on cudaLaunchKernel or cuLaunchKernel, or host/launch/KERNEL)"
                ))
            };
        }
        Ok(None)
    }

    /// Whether it runs at launches of the kernel named `ptx_name`.
    pub fn matches(&self, ptx_name: &str) -> bool {
        match self {
            HostAttach::Launch { kernel } => Attach {
                point: bpf2ptx_backend::inject::attach::Point::Entry,
                kernel: kernel.clone(),
                granularity: None,
                opcode: None,
            }
            .matches(ptx_name),
            HostAttach::Uprobe => true,
        }
    }

    /// Bytes of its context.
    pub fn ctx_size(&self) -> usize {
        match self {
            HostAttach::Launch { .. } => LAUNCH_CTX_SIZE,
            HostAttach::Uprobe => PT_REGS_SIZE,
        }
    }
}

/// Why an object's host-side programs cannot run.
#[derive(Debug, Error)]
pub enum HostError {
    /// A section that names a host attach point badly.
    #[error("{file}: program {program}: {why}")]
    Section {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// What is wrong.
        why: String,
    },
    /// The verifier rejected a host program.
    #[error("{file}: host program {program} rejected:\n{}", errors.join("\n"))]
    Rejected {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// Each violation.
        errors: Vec<String>,
    },
    /// A helper the host does not have.
    #[error(
        "{file}: host program {program}: insn {pc}: helper {helper} ({name}) is not available \
         on the host (host-side programs may call map lookup/update/delete, ktime_get_ns, \
         trace_printk, get_current_pid_tgid, snprintf and loop)"
    )]
    Helper {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// Slot of the call.
        pc: usize,
        /// The helper id.
        helper: i64,
        /// Its name, `?` when bpf2ptx does not know it.
        name: &'static str,
    },
    /// A map whose storage the host cannot share with the GPU as it is.
    #[error(
        "{file}: host program {program} uses map `{map}` ({kind}): host-side programs use \
         arrays (array, gpu_array, 1504, gpu_array_host) and global data; hash maps, per-SM, \
         per-thread and per-warp arrays and rings stay on the GPU (specs/trace.md)"
    )]
    Map {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// The map.
        map: String,
        /// Its kind's name.
        kind: &'static str,
    },
    /// A `--map NAME=device` (or `sharded`) for a map a host program writes.
    #[error(
        "{file}: map `{map}` is used by host program {program}, so it lives in pinned host \
         memory, unsharded: --map {map}={place} contradicts that"
    )]
    Placement {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// The map.
        map: String,
        /// The placement asked for.
        place: String,
    },
}

/// Per map of `obj`, whether a GPU program names it (an `ld_imm64` of the map or of its
/// value), and whether one may write it (a store or an atomic into a value, a helper
/// writing into one, an update or a delete), from the verifier's facts under each
/// program's attach-point context; every map written when a GPU program has no attach
/// point or does not verify (the front end reports that; here the answer only has to be
/// safe).
fn gpu_use(obj: &Object) -> (Vec<bool>, Vec<bool>) {
    let n = obj.maps.len();
    let (mut used, mut written) = (vec![false; n], vec![false; n]);
    for (k, p) in obj.programs.iter().enumerate() {
        if !is_gpu_section(obj, &p.section) {
            continue;
        }
        for insn in &p.insns {
            if let Kind::LdImm64(Pseudo::MapIdx | Pseudo::MapIdxValue) = insn.kind() {
                if let Some(u) = used.get_mut(insn.imm as u32 as usize) {
                    *u = true;
                }
            }
        }
        let facts = Attach::from_section(&p.section).and_then(|a| {
            let entry = Entry::probe_ctx(a.point.ctx_size());
            bpf2ptx_verifier::verify_with(obj, k, &entry, &Default::default()).ok()
        });
        let Some(f) = facts else {
            return (used, vec![true; n]);
        };
        for (w, &f) in written.iter_mut().zip(&f.map_written) {
            *w |= f;
        }
    }
    (used, written)
}

/// One host-side program.
#[derive(Debug, Clone)]
pub struct HostProgram {
    /// Its index in the object's programs.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// When it runs.
    pub attach: HostAttach,
}

/// The host-side programs of an object, verified, and the maps they share with the GPU.
#[derive(Debug, Clone, Default)]
pub struct HostPrograms {
    /// The programs, in object order.
    pub programs: Vec<HostProgram>,
    /// Indices of the (non-global-data) maps they use, ascending: the host programs'
    /// copy lives in pinned host memory, one instance per process.
    pub shared_maps: Vec<usize>,
    /// Those of [`HostPrograms::shared_maps`] that GPU programs read and none writes (the
    /// verifier's `map_written` of every GPU program), of at most [`PUSH_MAX_WORDS`]
    /// words (shared maps are arrays: an LRU map, whose lookups write, cannot be one):
    /// the GPU reads them from a copy in device
    /// memory that the interposer updates, in stream order, before each launch, instead
    /// of over the bus from the pinned copy. Why: GPU reads of mapped host memory queue
    /// over the bus, about a microsecond each: one read per block of a 528-block launch
    /// took 262 us for the median block on an H100 (benches/gpu-trace/hostread.cu),
    /// where the host's value is the same for the whole launch. The rest (maps a GPU program writes, which the host programs may read
    /// back) stay in pinned host memory for both.
    pub pushed: Vec<usize>,
}

impl HostPrograms {
    /// Finds, checks and verifies the host-side programs of `obj`: each attach point,
    /// helper and map, then the verifier with the context of its attach point. `maps`
    /// are the session's `--map NAME=PLACE` options, which must not move a shared map
    /// off pinned host memory.
    pub fn load(obj: &Object, maps: &[String]) -> Result<HostPrograms, HostError> {
        let mut out = HostPrograms::default();
        for (k, p) in obj.programs.iter().enumerate() {
            if is_gpu_section(obj, &p.section) {
                continue;
            }
            let err = |why| HostError::Section {
                file: obj.file.clone(),
                program: p.name.clone(),
                why,
            };
            let Some(attach) = HostAttach::from_section(&p.section).map_err(err)? else {
                continue;
            };
            let pcs = p.pcs();
            for (i, insn) in p.insns.iter().enumerate() {
                match insn.kind() {
                    Kind::Call(CallKind::Helper) if !HOST_HELPERS.contains(&insn.imm) => {
                        return Err(HostError::Helper {
                            file: obj.file.clone(),
                            program: p.name.clone(),
                            pc: pcs.get(i).copied().unwrap_or(i),
                            helper: insn.imm,
                            name: bpf2ptx_runtime::helper(insn.imm).map_or("?", |h| h.name),
                        })
                    }
                    Kind::Callx => {
                        return Err(HostError::Helper {
                            file: obj.file.clone(),
                            program: p.name.clone(),
                            pc: pcs.get(i).copied().unwrap_or(i),
                            helper: -1,
                            name: "callx",
                        })
                    }
                    Kind::LdImm64(Pseudo::MapIdx | Pseudo::MapIdxValue) => {
                        let Some(m) = obj.maps.get(insn.imm as u64 as u32 as usize) else {
                            continue;
                        };
                        let map = insn.imm as u64 as u32 as usize;
                        if m.origin == MapOrigin::GlobalData {
                            continue;
                        }
                        if !m.is(MapKind::has_direct_value) {
                            return Err(HostError::Map {
                                file: obj.file.clone(),
                                program: p.name.clone(),
                                map: m.name.clone(),
                                kind: m.kind().map_or("?", MapKind::name),
                            });
                        }
                        if let Some(place) = maps.iter().find_map(|o| {
                            let (name, place) = o.split_once('=')?;
                            (name == m.name && matches!(place, "device" | "sharded"))
                                .then(|| place.to_string())
                        }) {
                            return Err(HostError::Placement {
                                file: obj.file.clone(),
                                program: p.name.clone(),
                                map: m.name.clone(),
                                place,
                            });
                        }
                        if !out.shared_maps.contains(&map) {
                            out.shared_maps.push(map);
                        }
                    }
                    _ => {}
                }
            }
            let entry = Entry::probe_ctx(attach.ctx_size() as u32);
            if let Err(diags) = bpf2ptx_verifier::verify_with(obj, k, &entry, &Default::default()) {
                return Err(HostError::Rejected {
                    file: obj.file.clone(),
                    program: p.name.clone(),
                    errors: diags.iter().map(|d| d.to_string()).collect(),
                });
            }
            out.programs.push(HostProgram {
                index: k,
                name: p.name.clone(),
                attach,
            });
        }
        out.shared_maps.sort_unstable();
        let (used, written) = gpu_use(obj);
        let small = |k: usize| {
            let m = &obj.maps[k];
            u64::from(m.max_entries) * u64::from(m.value_size).div_ceil(8) <= PUSH_MAX_WORDS
        };
        out.pushed = (out.shared_maps.iter().copied())
            .filter(|&k| used[k] && !written[k] && small(k))
            .collect();
        Ok(out)
    }

    /// The `--map` options that place the shared maps as the host needs them, after the
    /// session's own `options`: never sharded (a host write goes to one copy); in pinned
    /// host memory (`.sys` scope for the module), except the maps in `pushed`, which the
    /// GPU reads from device memory ([`HostPrograms::pushed`]; empty when the driver
    /// cannot write device memory in stream order).
    pub fn map_options(&self, obj: &Object, options: &[String], pushed: &[usize]) -> Vec<String> {
        let mut out = options.to_vec();
        for &k in &self.shared_maps {
            let name = &obj.maps[k].name;
            if !pushed.contains(&k) {
                out.push(format!("{name}=host"));
            }
            out.push(format!("{name}=unsharded"));
        }
        out
    }

    /// Whether any program runs at launches of `ptx_name`, as a bit set of indices into
    /// [`HostPrograms::programs`] (at most 64 programs run at one launch; the rest are
    /// said once by the interposer).
    pub fn matching(&self, ptx_name: &str) -> u64 {
        self.programs
            .iter()
            .take(64)
            .enumerate()
            .filter(|(_, p)| p.attach.matches(ptx_name))
            .fold(0, |set, (i, _)| set | 1 << i)
    }
}

/// FNV-1a (64 bits) of a kernel's PTX name: `struct bpf2ptx_launch_ctx`'s `kernel_hash`.
pub fn kernel_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_name_their_attach_points() {
        let launch = |k: &str| {
            Ok(Some(HostAttach::Launch {
                kernel: k.to_string(),
            }))
        };
        assert_eq!(HostAttach::from_section("host/launch/*"), launch("*"));
        assert_eq!(
            HostAttach::from_section("host/launch/vecAdd"),
            launch("vecAdd")
        );
        for s in [
            "uprobe",
            "uprobe/cudaLaunchKernel",
            "uprobe/example/gpu/launchlate/vec_add:_Z16cudaLaunchKernelIcE9cudaErrorPT_4dim3S3_PPvmP11CUstream_st",
            "uprobe//usr/lib/libcuda.so:cuLaunchKernel",
        ] {
            assert_eq!(HostAttach::from_section(s), Ok(Some(HostAttach::Uprobe)), "{s}");
        }
        assert!(HostAttach::from_section("uprobe/libc.so:malloc").is_err());
        assert!(HostAttach::from_section("host/exit/k").is_err());
        assert!(HostAttach::from_section("host/launch/").is_err());
        assert_eq!(HostAttach::from_section("gpu/entry/k"), Ok(None));
        assert_eq!(HostAttach::from_section("tracepoint/x"), Ok(None));
    }

    #[test]
    fn launch_points_match_as_gpu_points_do() {
        let a = HostAttach::Launch {
            kernel: "vecAdd".into(),
        };
        assert!(a.matches("_Z6vecAddPKfS0_Pfi") && a.matches("vecAdd"));
        assert!(!a.matches("_Z6vecSubPKfS0_Pfi"));
        assert!(HostAttach::Uprobe.matches("anything"));
    }

    fn load(path: &str) -> Result<(Object, HostPrograms), HostError> {
        let obj = crate::load_path(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(path),
        )
        .expect("the object loads");
        let progs = HostPrograms::load(&obj, &[])?;
        Ok((obj, progs))
    }

    #[test]
    fn the_examples_host_programs_load_with_their_shared_maps() {
        let (obj, progs) = load("examples/probes/trace_latency.bpf.o").unwrap();
        let names: Vec<&str> = progs.programs.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["on_launch"]);
        let shared: Vec<&str> = progs
            .shared_maps
            .iter()
            .map(|&k| obj.maps[k].name.as_str())
            .collect();
        assert_eq!(shared, ["launch", "launches"]);
        assert_eq!(progs.matching("_Z4workPfiPy"), 1);
        // The GPU reads `launch` and writes neither; it never names `launches`.
        let pushed: Vec<&str> = progs
            .pushed
            .iter()
            .map(|&k| obj.maps[k].name.as_str())
            .collect();
        assert_eq!(pushed, ["launch"]);
        assert_eq!(
            progs.map_options(&obj, &["spans=device".into()], &progs.pushed),
            [
                "spans=device",
                "launch=unsharded",
                "launches=host",
                "launches=unsharded"
            ]
        );
        assert_eq!(
            progs.map_options(&obj, &[], &[]),
            [
                "launch=host",
                "launch=unsharded",
                "launches=host",
                "launches=unsharded"
            ]
        );
        // A map a host program shares cannot be moved to device memory.
        let e = HostPrograms::load(&obj, &["launch=device".into()]).unwrap_err();
        assert!(matches!(e, HostError::Placement { .. }), "{e}");
        // A map a GPU program adds to stays in pinned memory for both.
        let (obj, progs) = load("tests/corpus/obj/mixed.v2.o").unwrap();
        let shared: Vec<&str> = progs
            .shared_maps
            .iter()
            .map(|&k| obj.maps[k].name.as_str())
            .collect();
        assert_eq!((shared, progs.pushed.len()), (vec!["seen"], 0));
        let (_, progs) = load("tests/probes/bpftime/launchlate.bpf.o").unwrap();
        assert_eq!(progs.programs[0].attach, HostAttach::Uprobe);
        // GPU-only objects have none.
        let (_, progs) = load("tests/probes/bpftime/cuda_counter.bpf.o").unwrap();
        assert!(progs.programs.is_empty() && progs.shared_maps.is_empty());
    }

    #[test]
    fn hash_maps_gpu_helpers_and_bad_context_reads_are_refused() {
        let e = load("tests/probes/host/hash_map.bpf.o").unwrap_err();
        assert!(
            matches!(&e, HostError::Map { map, kind, .. } if map == "per_kernel" && *kind == "hash"),
            "{e}"
        );
        let e = load("tests/probes/host/gpu_helper.bpf.o").unwrap_err();
        assert!(
            matches!(&e, HostError::Helper { helper: 502, name, .. } if *name == "get_globaltimer"),
            "{e}"
        );
        let e = load("tests/probes/host/ctx_write.bpf.o").unwrap_err();
        assert!(matches!(e, HostError::Rejected { .. }), "{e}");
    }

    #[test]
    fn kernel_hash_is_fnv1a() {
        assert_eq!(kernel_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(kernel_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
