//! `bpf2ptx FILE -o OUT`: load, check, lower to PTX, and write the result atomically.

use bpf2ptx_backend::back::ptx;
use bpf2ptx_backend::inject::attach::Attach;
use bpf2ptx_compiler::program::{Map, MapOrigin, Object, SourceKind};
use bpf2ptx_runtime::MapKind;
use bpf2ptx_verifier::{Diagnostic, Entry, Facts, Verified};
use std::io::Write;
use std::path::Path;
use thiserror::Error;

/// Why a compile did not produce output; [`CompileError::exit_code`] maps it to the
/// documented exit codes.
#[derive(Debug, Error)]
pub enum CompileError {
    /// The input does not load.
    #[error(transparent)]
    Load(#[from] bpf2ptx_compiler::front::LoadError),
    /// The verifier rejected a program.
    #[error("{file}: program {program} rejected:\n{}", errors.join("\n"))]
    Rejected {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// Each violation, one per line.
        errors: Vec<String>,
    },
    /// The backend cannot lower a program.
    #[error("{file}: {source}")]
    Lower {
        /// The input file.
        file: String,
        /// The backend error (names the program and instruction).
        source: ptx::Error,
    },
    /// A `--map` option is malformed or names no map.
    #[error("{0}")]
    Options(String),
    /// The object has one of bpftime's kernel-user maps (1001, 1002, 1004, 1006:
    /// [`MapKind::is_kernel_user`]), which only a host-side agent can share with the Linux
    /// kernel's eBPF.
    #[error(
        "{file}: map `{map}` is a kernel-user map (bpftime type {map_type}): maps shared with \
         the Linux kernel's eBPF need host-side programs, which bpf2ptx does not run"
    )]
    KernelUserMap {
        /// The input file.
        file: String,
        /// The map.
        map: String,
        /// Its type id.
        map_type: u32,
    },
    /// An ELF object holds only host-side programs.
    #[error("{file}: no GPU programs (sections {})", GPU_SECTIONS.join(", "))]
    NoGpuPrograms {
        /// The input file.
        file: String,
    },
    /// The output cannot be written.
    #[error("{path}: {source}")]
    Write {
        /// The output path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The output names the same file as an input (same device and inode).
    #[error("{path}: is the same file as {input}; not overwriting it (choose another output)")]
    SameAsInput {
        /// The output path.
        path: String,
        /// The input it names.
        input: String,
    },
    /// The output is an existing file the user may not write, or one marked read-only.
    #[error("{path}: the file is read-only; not replacing it")]
    ReadOnly {
        /// The output path.
        path: String,
    },
    /// The `--kconfig` file cannot be read.
    #[error("{path}: {source}")]
    KconfigFile {
        /// The config file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A kconfig extern gets no value, or one that does not fit it, or the config file
    /// is malformed.
    #[error(transparent)]
    Kconfig(Box<bpf2ptx_compiler::front::kconfig::KconfigError>),
    /// A GPU program uses something of the object that has no GPU meaning: a map of
    /// maps, or a `__ksym` kernel variable.
    #[error(transparent)]
    NotOnGpu(Box<NotOnGpu>),
    /// A C input did not compile to a BPF object (no clang, or clang failed).
    #[error(transparent)]
    Build(Box<crate::build::BuildError>),
}

impl From<bpf2ptx_compiler::front::kconfig::KconfigError> for CompileError {
    fn from(e: bpf2ptx_compiler::front::kconfig::KconfigError) -> Self {
        CompileError::Kconfig(Box::new(e))
    }
}

/// Where a GPU program uses what has no GPU meaning ([`check_gpu_support`]).
#[derive(Debug, Error)]
#[error("{file}: program {program} (section {section}): insn {pc}: `{insn}`{line}: {what}")]
pub struct NotOnGpu {
    /// The input file.
    pub file: String,
    /// The program.
    pub program: String,
    /// Its section.
    pub section: String,
    /// Slot index of the instruction that uses it.
    pub pc: usize,
    /// The instruction.
    pub insn: String,
    /// ` (FILE:LINE: TEXT)` where the object has line info, else empty.
    pub line: String,
    /// What it uses and why that cannot run (`map `m` is a map of maps (array_of_maps):
    /// map-in-map is not supported on the GPU`).
    pub what: String,
}

impl CompileError {
    /// The exit code: 1 for a rejected program, 2 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            CompileError::Rejected { .. } => crate::exit::REJECTED,
            _ => crate::exit::BAD_INPUT,
        }
    }
}

/// Section prefixes of programs that run on the GPU: our attach points (`gpu/entry/K`,
/// `gpu/exit/K`, `gpu/mem/K`) and bpftime's (`kprobe/K`, `kretprobe/K`,
/// `kprobe/__memcapture`); see `bpf2ptx_backend::inject::attach`. Programs in other
/// sections of an ELF object (`uprobe/...`, `tracepoint/...`, `xdp`, ...) run on the host
/// under Linux; bpf2ptx leaves them to libbpf.
pub const GPU_SECTIONS: &[&str] = &["gpu/", "kprobe/", "kretprobe/"];

/// Whether a program of `obj` in section `section` is a GPU program (every program of a
/// text or bpf_conformance input is).
pub fn is_gpu_section(obj: &Object, section: &str) -> bool {
    obj.kind != SourceKind::Elf || GPU_SECTIONS.iter().any(|p| section.starts_with(p))
}

/// `obj` without its host-side programs, and the (name, section) of those it dropped.
pub fn gpu_programs(obj: &Object) -> (Object, Vec<(String, String)>) {
    let mut gpu = obj.clone();
    let mut skipped = Vec::new();
    gpu.programs.retain(|p| {
        let keep = is_gpu_section(obj, &p.section);
        if !keep {
            skipped.push((p.name.clone(), p.section.clone()));
        }
        keep
    });
    (gpu, skipped)
}

/// What program `k`'s registers hold at entry: for a bpf_conformance test, r1 points to
/// its `-- mem` bytes and r2 holds their length; a probe whose section names an attach
/// point gets that point's read-only context (`struct bpf2ptx_kernel_ctx` or
/// `struct bpf2ptx_mem_ctx`); any other probe an empty one.
pub fn entry(obj: &Object, k: usize) -> Entry {
    match (&obj.kind, &obj.test) {
        (SourceKind::Conformance, Some(t)) => Entry::conformance(t.mem.len()),
        _ => match obj
            .programs
            .get(k)
            .and_then(|p| Attach::from_section(&p.section))
        {
            Some(a) => Entry::probe_ctx(a.point.ctx_size()),
            None => Entry::probe(),
        },
    }
}

/// The verdict on one program.
pub struct Verdict {
    /// The program's name.
    pub program: String,
    /// Its facts, or every violation found.
    pub result: Result<Facts, Vec<Diagnostic>>,
}

/// Runs the verifier over every program of an object.
pub fn verify_all(obj: &Object, loop_budget: Option<u64>) -> Vec<Verdict> {
    let opts = bpf2ptx_verifier::Options {
        loop_budget,
        ..Default::default()
    };
    (0..obj.programs.len())
        .map(|k| Verdict {
            program: obj.programs[k].name.clone(),
            result: bpf2ptx_verifier::verify_with(obj, k, &entry(obj, k), &opts),
        })
        .collect()
}

/// Refuses an object with a map bpf2ptx cannot give the programs: one of bpftime's
/// kernel-user maps ([`MapKind::is_kernel_user`]; the first one is named). The whole
/// object is refused, whichever programs use the map: such a map exists to be shared with
/// the Linux kernel's eBPF, which needs host-side programs that bpf2ptx does not run. The
/// object still loads (`bpf2ptx dump`).
pub fn check_maps(obj: &Object) -> Result<(), CompileError> {
    match obj.maps.iter().find(|m| m.is(MapKind::is_kernel_user)) {
        Some(m) => Err(CompileError::KernelUserMap {
            file: obj.file.clone(),
            map: m.name.clone(),
            map_type: m.map_type,
        }),
        None => Ok(()),
    }
}

/// Gives the kconfig externs of `obj` their values (`bpf2ptx_compiler::front::kconfig`):
/// from the Linux config file `config` (`--kconfig FILE`) and the defaults, with
/// `LINUX_KERNEL_VERSION` the running kernel's (`/proc/sys/kernel/osrelease`, as libbpf
/// takes it from `uname`) unless the file sets it. An object without kconfig externs is
/// left as it is (and the file is not read).
pub fn apply_kconfig(obj: &mut Object, config: Option<&Path>) -> Result<(), CompileError> {
    use bpf2ptx_compiler::front::kconfig;
    use bpf2ptx_compiler::program::ExternKind;
    if !obj
        .externs
        .iter()
        .any(|e| matches!(e.kind, ExternKind::Kconfig { .. }))
    {
        return Ok(());
    }
    let parsed = match config {
        None => None,
        Some(p) => {
            let text = std::fs::read(p).map_err(|source| CompileError::KconfigFile {
                path: p.display().to_string(),
                source,
            })?;
            Some(kconfig::parse(
                &p.display().to_string(),
                &String::from_utf8_lossy(&text),
            )?)
        }
    };
    let running = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|r| kconfig::kernel_version(r.trim()));
    kconfig::apply(obj, parsed.as_ref(), running)?;
    Ok(())
}

/// Refuses a GPU program that uses what has no GPU meaning, at the first instruction
/// that uses it: a map of maps ("map-in-map is not supported on the GPU"; the object
/// still loads, dumps and verifies), the address of a `__ksym` kernel variable, or a
/// kconfig extern whose values [`apply_kconfig`] has not written.
pub fn check_gpu_support(obj: &Object) -> Result<(), CompileError> {
    use bpf2ptx_compiler::program::{ExternKind, RelocTarget};
    for p in &obj.programs {
        let pcs = p.pcs();
        for r in &p.relocs {
            let what = match &r.target {
                RelocTarget::Map { map } | RelocTarget::MapValue { map, .. } => {
                    let Some(m) = obj.maps.get(*map) else {
                        continue;
                    };
                    if m.is(MapKind::is_map_in_map) {
                        format!(
                            "map `{}` is a map of maps ({}): map-in-map is not supported on the GPU",
                            m.name,
                            bpf2ptx_compiler::program::map_type_name(m.map_type).unwrap_or("?")
                        )
                    } else if m.section == ".kconfig" && m.init.is_none() {
                        format!(
                            "kconfig extern `{}` has no value yet (the command line gives                              kconfig values: --kconfig FILE)",
                            r.symbol
                        )
                    } else {
                        continue;
                    }
                }
                RelocTarget::Extern { ext } => match obj.externs.get(*ext).map(|e| &e.kind) {
                    Some(ExternKind::KsymVar { .. }) => format!(
                        "`{}` is a kernel variable (__ksym), which has no address on the GPU",
                        r.symbol
                    ),
                    // kfuncs are the verifier's and the backend's to accept or refuse.
                    _ => continue,
                },
                _ => continue,
            };
            let line = p
                .lines
                .iter()
                .rev()
                .find(|(i, _)| *i <= r.insn)
                .map_or_else(String::new, |(_, l)| {
                    let file = l.file.rsplit('/').next().unwrap_or(&l.file);
                    if l.text.is_empty() {
                        format!(" ({file}:{})", l.line)
                    } else {
                        format!(" ({file}:{}: {})", l.line, l.text.trim())
                    }
                });
            return Err(CompileError::NotOnGpu(Box::new(NotOnGpu {
                file: obj.file.clone(),
                program: p.name.clone(),
                section: p.section.clone(),
                pc: pcs.get(r.insn).copied().unwrap_or(r.insn),
                insn: p
                    .insns
                    .get(r.insn)
                    .map_or_else(String::new, |i| i.to_string()),
                line,
                what,
            })));
        }
    }
    Ok(())
}

/// Runs the verifier over every program of an object, each under its [`entry`]; the
/// first rejected program is an error, and so is a map [`check_maps`] refuses and a use
/// [`check_gpu_support`] refuses. The result is what the backend lowers.
pub fn verify(obj: &Object) -> Result<Verified<'_>, CompileError> {
    verify_budget(obj, None)
}

/// [`verify`] with `--loop-budget` (`bpf2ptx_verifier::Options::loop_budget`).
pub fn verify_budget(obj: &Object, loop_budget: Option<u64>) -> Result<Verified<'_>, CompileError> {
    check_maps(obj)?;
    check_gpu_support(obj)?;
    let opts = bpf2ptx_verifier::Options {
        loop_budget,
        ..Default::default()
    };
    Verified::new_with(obj, |k| entry(obj, k), &opts).map_err(|r| CompileError::Rejected {
        file: obj.file.clone(),
        program: r.name,
        errors: r.diagnostics.iter().map(|e| e.to_string()).collect(),
    })
}

/// Verifies and lowers an object to PTX text; the verifier's facts let the backend drop
/// run-time checks it proved unnecessary.
pub fn compile(obj: &Object, opts: &ptx::Options) -> Result<String, CompileError> {
    let (verified, resolved) = resolve(obj, opts)?;
    lower(&verified, &resolved)
}

/// Verifies every program and settles the backend option the facts decide: which maps
/// are sharded (a map every program only adds to with 64-bit atomic adds without fetch,
/// or with 64-bit plain counter updates the verifier proved may be such adds,
/// `Facts::plain_add`, so the device never serialises on one cache line and the host
/// sums replicas; `opts.sharded[k]` on input forces it, `--map NAME=sharded`, and the
/// user then accepts that the programs' reads see one SM's replica; `opts.unsharded[k]`
/// forbids it). Per-CPU arrays (6) are per SM on the GPU: always replicated, and the
/// host reads them replica by replica (unless `--map NAME=unsharded`).
///
/// Returns the verification, which is what the backend lowers, and the options.
pub fn resolve<'p>(
    obj: &'p Object,
    opts: &ptx::Options,
) -> Result<(Verified<'p>, ptx::Options), CompileError> {
    let verified = verify_budget(obj, opts.loop_budget)?;
    let mut opts = opts.clone();
    let forced = std::mem::take(&mut opts.sharded);
    opts.sharded = (0..obj.maps.len())
        .map(|k| {
            let auto = verified
                .all_facts()
                .all(|f| f.map_only_adds.get(k).copied().unwrap_or(false));
            let per_sm = obj.maps[k].kind() == Some(MapKind::PercpuArray);
            !opts.unsharded.get(k).copied().unwrap_or(false)
                && (forced.get(k).copied().unwrap_or(false) || auto || per_sm)
        })
        .collect();
    Ok((verified, opts))
}

/// [`compile`] with the object verified and the options [`resolve`]d.
pub fn lower(verified: &Verified<'_>, resolved: &ptx::Options) -> Result<String, CompileError> {
    ptx::write_string(verified, resolved).map_err(|source| CompileError::Lower {
        file: verified.object().file.clone(),
        source,
    })
}

/// Whether a map goes to pinned host memory when no `--map NAME=...` says otherwise
/// ([`MapKind::host_by_default`]). Rings ([`MapKind::is_ring`]: ringbuf, GPU ringbuf, perf
/// event array) are event streams the host reads while the kernel runs, so their record
/// bytes default to host memory (their counters stay in device memory either way,
/// specs/abi.md); bpftime's host-memory arrays (1512, 1513) are host memory by
/// definition; every other kind defaults to device memory, where the device's own updates
/// are cheapest.
pub fn host_by_default(m: &Map) -> bool {
    m.is(MapKind::host_by_default) && m.origin != MapOrigin::GlobalData
}

/// Parses `--map NAME=PLACE` options (PLACE: `device`, `host`, `sharded`, `unsharded`,
/// `live`) into the backend's per-map options: `sharded` (forced), `unsharded`
/// (forbidden), `host` (pinned host memory, `.sys` atomics; [`host_by_default`] where no
/// option names the map) and `live` (a host reads the map while the kernel runs: inject's
/// fusion leaves it alone; nothing else changes). Returns the options and the names of
/// the host-placed maps (for the loader).
pub fn map_options(
    obj: &Object,
    options: &[String],
) -> Result<(ptx::Options, Vec<String>), String> {
    let n = obj.maps.len();
    let mut o = ptx::Options {
        sharded: vec![false; n],
        unsharded: vec![false; n],
        live: vec![false; n],
        host: obj.maps.iter().map(host_by_default).collect(),
        ..Default::default()
    };
    for opt in options {
        let (name, place) = opt.split_once('=').unwrap_or((opt.as_str(), ""));
        let Some(k) = obj.maps.iter().position(|m| m.name == name) else {
            return Err(format!("{}: --map {opt}: no map `{name}`", obj.file));
        };
        match place {
            "device" => o.host[k] = false,
            "host" => o.host[k] = true,
            "sharded" => o.sharded[k] = true,
            "unsharded" => o.unsharded[k] = true,
            "live" => o.live[k] = true,
            _ => {
                let places = "`device`, `host`, `sharded`, `unsharded` or `live`";
                return Err(format!("--map {opt}: the placement is {places}"));
            }
        }
    }
    let host = (obj.maps.iter().zip(&o.host))
        .filter(|(_, &h)| h)
        .map(|(m, _)| m.name.clone())
        .collect();
    Ok((o, host))
}

/// Writes `text` to what `out` names, never to one of `inputs`.
///
/// - `-` is standard output.
/// - A symbolic link is followed: its target is written, the link stays.
/// - An existing file that is not a regular file (a device such as `/dev/null`, a FIFO)
///   is written to in place; there is nothing to replace.
/// - A regular file is written atomically: to a temporary file in its directory, then
///   renamed over it, so a failure never leaves a half-written file or clobbers the old
///   one; the new file keeps the old one's permissions (0644 for a new file).
///
/// Refused, with the output untouched: a path that is the same file as an input (same
/// device and inode, however it is spelled), and an existing regular file the user may
/// not write or that has no write permission for anyone (the user marked it read-only;
/// root, who may write anything, is refused too).
pub fn write_output(out: &Path, text: &str, inputs: &[&Path]) -> Result<(), CompileError> {
    write_output_bytes(out, text.as_bytes(), inputs)
}

/// [`write_output`] for bytes that need not be text (a BPF object: `bpf2ptx build`,
/// `--keep-object`).
pub fn write_output_bytes(out: &Path, text: &[u8], inputs: &[&Path]) -> Result<(), CompileError> {
    let werr = |source| CompileError::Write {
        path: out.display().to_string(),
        source,
    };
    if out == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        return stdout
            .write_all(text)
            .and_then(|()| stdout.flush())
            .map_err(werr);
    }
    // What the path names: the file a link leads to (a dangling link: the link's path,
    // which opening for writing follows).
    let target = std::fs::canonicalize(out).unwrap_or_else(|_| out.to_path_buf());
    if let Ok(meta) = std::fs::metadata(&target) {
        for input in inputs {
            if same_file(&meta, input) {
                return Err(CompileError::SameAsInput {
                    path: out.display().to_string(),
                    input: input.display().to_string(),
                });
            }
        }
        if !meta.is_file() && !meta.is_dir() {
            // A device or FIFO: write to it.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .map_err(werr)?;
            return f.write_all(text).and_then(|()| f.flush()).map_err(werr);
        }
        if meta.is_file() {
            let denied = meta.permissions().readonly()
                || matches!(
                    std::fs::OpenOptions::new().write(true).open(&target),
                    Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied
                );
            if denied {
                return Err(CompileError::ReadOnly {
                    path: out.display().to_string(),
                });
            }
        }
    } else if std::fs::symlink_metadata(out).is_ok_and(|m| m.file_type().is_symlink()) {
        // A dangling link: create its target through it.
        return std::fs::write(out, text).map_err(werr);
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(werr)?;
    tmp.write_all(text).map_err(werr)?;
    // The temporary file is private (0600); the output gets the permissions the file it
    // replaces had, or the usual 0644 for a new file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = std::fs::metadata(&target)
            .map(|m| m.permissions())
            .unwrap_or_else(|_| std::fs::Permissions::from_mode(0o644));
        tmp.as_file().set_permissions(perms).map_err(werr)?;
    }
    tmp.as_file().sync_all().map_err(werr)?;
    tmp.persist(&target).map_err(|e| werr(e.error))?;
    Ok(())
}

/// Whether `input` is the file `meta` describes (device and inode on Unix; elsewhere
/// the same canonical path is all that can be told).
fn same_file(meta: &std::fs::Metadata, input: &Path) -> bool {
    let Ok(other) = std::fs::metadata(input) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.dev() == other.dev() && meta.ino() == other.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (meta, other);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::{compile, Object, Path};
    use bpf2ptx_backend::back::ptx;
    use bpf2ptx_loader::loader::host_flags;

    fn corpus(name: &str) -> Object {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        crate::load_path(&root.join("tests/corpus/obj").join(name)).unwrap()
    }

    #[test]
    fn host_placement_compiles_sys_scope_record_stores() {
        let obj = corpus("rt_rings.v3.o");
        let compile = |host: &[String]| {
            let opts = ptx::Options {
                target: "sm_90".into(),
                entry: true,
                host: host_flags(&obj, host).unwrap(),
                ..Default::default()
            };
            compile(&obj, &opts).unwrap()
        };
        let device = compile(&[]);
        assert!(device.contains("ld.acquire.gpu.") && !device.contains(".sys."));
        let host = compile(&["rb".to_string()]);
        // A ring's records are published at `.sys` (a CPU drains them while the kernel
        // runs); its counters stay in device memory, read and moved at `.gpu`.
        assert!(host.contains("st.release.sys."), "{host}");
        assert!(host.contains("ld.acquire.gpu.") && !host.contains("ld.acquire.sys."));
        assert!(!host.contains("atom.acq_rel.sys.") && !host.contains("red.release.sys."));
        // The program's own atomics on a map the verifier names follow that map's
        // placement: the `fails` counters, in device memory, stay `.gpu`
        // (`red.global.add`, no `.sys`); placed in host memory too, they are `.sys`.
        assert!(
            host.contains("red.global.add.u64") && !host.contains("red.sys.global.add.u64"),
            "{host}"
        );
        let both = compile(&["rb".to_string(), "fails".to_string()]);
        assert!(both.contains("red.sys.global.add.u64"), "{both}");
    }

    #[test]
    fn hash_code_on_a_device_map_keeps_gpu_scope_beside_a_host_map() {
        // trace_latency under `bpf2ptx trace`: its host program shares `launch` and
        // `launches`, which are host-placed; `spans` (LRU hash) stays in device memory.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let obj = crate::load_path(&root.join("examples/probes/trace_latency.bpf.o")).unwrap();
        let obj = super::gpu_programs(&obj).0;
        let compile = |host: &[&str]| {
            let host: Vec<String> = host.iter().map(|s| s.to_string()).collect();
            let opts = ptx::Options {
                target: "sm_90".into(),
                host: host_flags(&obj, &host).unwrap(),
                rebind_maps: true,
                ..Default::default()
            };
            compile(&obj, &opts).unwrap()
        };
        let copy = bpf2ptx_runtime::maps::GPU_COPY_PREFIX;
        let device = compile(&[]);
        assert!(!device.contains(".sys.") && !device.contains(copy));
        // The hash code calls the `.gpu` copy; nothing at `.sys` is left (the module's
        // `.sys` map functions, which nothing calls, are left out).
        let mixed = compile(&["launch", "launches"]);
        assert!(mixed.contains(&format!("{copy}hash_stamp")), "{mixed}");
        assert!(!mixed.contains(".sys."), "{mixed}");
        assert!(!mixed.contains(".func (.param .b64 ret) bpf2ptx_map_hash_update("));
        // `spans` host-placed too: its code is `.sys`, no copy.
        let host = compile(&["launch", "launches", "spans"]);
        assert!(
            host.contains("ld.acquire.sys.") && !host.contains(copy),
            "{host}"
        );
    }

    fn bpftime_probe(name: &str) -> Object {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let obj = crate::load_path(&root.join("tests/probes/bpftime").join(name)).unwrap();
        super::gpu_programs(&obj).0
    }

    /// bpftime's host-memory arrays (1512 per-thread, 1513 shared) default to host
    /// placement, so the module's map functions and atomics have `.sys` scope; `--map
    /// NAME=device` overrides it. Word 0 of each descriptor is the layout's id (1502, 1503).
    #[test]
    fn host_memory_arrays_default_to_host_placement() {
        let obj = bpftime_probe("host_maps.bpf.o");
        let compile = |options: &[&str]| {
            let options: Vec<String> = options.iter().map(|s| s.to_string()).collect();
            let (o, host) = super::map_options(&obj, &options).unwrap();
            (compile(&obj, &o).unwrap(), host)
        };
        let (text, host) = compile(&[]);
        assert_eq!(host, ["thread_slots", "lane_hits"]);
        assert!(text.contains(".sys.") && !text.contains(".gpu."), "{text}");
        assert!(
            text.contains("bpf2ptx_map_thread_slots[8] = {1502, "),
            "{text}"
        );
        assert!(
            text.contains("bpf2ptx_map_lane_hits[8] = {1503, "),
            "{text}"
        );
        let (text, host) = compile(&["thread_slots=device", "lane_hits=device"]);
        assert!(host.is_empty());
        assert!(!text.contains(".sys."), "{text}");
    }

    /// The kernel-shared array (1504) is a GPU array (1503) in device memory.
    #[test]
    fn kernel_shared_array_is_a_device_gpu_array() {
        let obj = bpftime_probe("kernel_shared_map.bpf.o");
        let (o, host) = super::map_options(&obj, &[]).unwrap();
        assert!(host.is_empty());
        let text = compile(&obj, &o).unwrap();
        // 1503 with BPF_F_MMAPABLE (1024) in the high half.
        let w0 = (1024u64 << 32) | 1503;
        assert!(
            text.contains(&format!("bpf2ptx_map_shared_counts[8] = {{{w0}, ")),
            "{text}"
        );
        assert!(!text.contains(".sys."), "{text}");
    }

    /// A kernel-user map (bpftime 1001, 1002, 1004, 1006) is refused by name, with the
    /// map's name and type, before any program is verified.
    #[test]
    fn kernel_user_maps_are_refused_by_name() {
        for id in [1001, 1002, 1004, 1006] {
            let mut obj = bpftime_probe("host_maps.bpf.o");
            obj.maps[1].map_type = id;
            match compile(&obj, &ptx::Options::default()) {
                Err(super::CompileError::KernelUserMap { map, map_type, .. }) => {
                    assert_eq!((map.as_str(), map_type), ("lane_hits", id));
                }
                other => panic!("{id}: {:?}", other.map(|_| ())),
            }
        }
    }
}
