//! `bpf2ptx triton`: instrument Triton kernels through Triton's own dump and override
//! directories, without `bpf2ptx trace`.
//!
//! Triton builds each kernel from PTX it generates, and (Triton 3.0 and newer) lets a user
//! see and replace that PTX:
//!
//! - with `TRITON_KERNEL_DUMP=1` it writes every stage of every kernel it compiles to
//!   `$TRITON_DUMP_DIR/<hash>/<name>.<stage>` (`.ttir`, `.ttgir`, `.llir`, `.ptx`,
//!   `.cubin`), `<hash>` the hash of the kernel's source and specialisation alone and
//!   `<name>` the kernel's name cut to 150 characters;
//! - with `TRITON_KERNEL_OVERRIDE=1`, when `$TRITON_OVERRIDE_DIR/<hash>/<name>.<stage>`
//!   exists it uses that file as the stage's output instead of its own, so an overridden
//!   `.ptx` is what its `ptxas` assembles into the kernel's cubin.
//!
//! (`triton/compiler/compiler.py`, `compile()`: `get_dump_manager(src.hash())`,
//! `get_override_manager(src.hash())`; the directories are `triton/runtime/cache.py`'s
//! through 3.2 and `triton.knobs.cache.dump_dir` / `override_dir` from 3.3, defaulting to
//! `~/.triton/dump` and `~/.triton/override`.) Both use the same `<hash>`, so an
//! instrumented copy of a dumped `.ptx` written to the same relative path in the override
//! directory replaces exactly that kernel.
//!
//! File mode (`--dump-dir D --override-dir O`) instruments every dumped PTX the probes
//! match, by kernel name, into O. Run mode (`-- COMMAND`) runs the command twice: once
//! dumping into a work directory, then, after instrumenting, once more with the override
//! directory and a fresh cache, and checks from that cache that Triton assembled the
//! instrumented PTX (which an older Triton, without the override, does not): the check is
//! how an unsupported Triton is told apart from one that works. Each run gets fresh
//! Triton and TorchInductor caches (`TRITON_CACHE_DIR`, `TORCHINDUCTOR_CACHE_DIR`) and
//! `TRITON_ALWAYS_COMPILE=1`, so `torch.compile`d programs compile their kernels again
//! and both the dump and the override apply to them.
//!
//! The probes' maps live in the modules Triton loads; the application reads them
//! (`cuModuleGetGlobal` on the compiled kernel's module for `bpf2ptx_map_<name>`, as
//! tests/gpu/triton_attach.py does). Under `bpf2ptx trace` this command is not needed:
//! trace's Python start-up hook hands each kernel's PTX to the interposer at Triton's
//! `ptx` stage, and the maps are the process's (`crate::trace`, specs/trace.md "Triton").

use crate::compile::{self, CompileError};
use crate::inject::{self, InjectError, Options};
use bpf2ptx_backend::back::ptx::Granularity;
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// `bpf2ptx triton PROBES.o (--dump-dir D --override-dir O | [--work-dir W] -- COMMAND)`.
#[derive(Args, Clone, Debug)]
pub struct TritonArgs {
    /// The probe object: its GPU programs are injected into the Triton kernels they match
    /// by name (`gpu/mem/matmul_kernel`, `gpu/insn.warp/*/wgmma`, ...).
    pub probes: PathBuf,
    /// File mode: the directory Triton dumped its kernels into (`TRITON_KERNEL_DUMP=1
    /// TRITON_DUMP_DIR=DIR`): every `DIR/<hash>/<kernel>.ptx` is read.
    #[arg(long, value_name = "DIR", requires = "override_dir")]
    pub dump_dir: Option<PathBuf>,
    /// File mode: where the instrumented PTX goes, as `DIR/<hash>/<kernel>.ptx`, for a run
    /// with `TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR=DIR` (and `TRITON_ALWAYS_COMPILE=1`
    /// or a fresh `TRITON_CACHE_DIR`, so Triton compiles again). The directory must be new,
    /// empty, or one this command wrote (its previous files are removed first).
    #[arg(long, value_name = "DIR", requires = "dump_dir")]
    pub override_dir: Option<PathBuf>,
    /// Run mode: the work directory (dump/, override/, cache-*/ and the manifest);
    /// default: a new directory under the system's temporary directory, kept afterwards.
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Which threads run probes whose section names no granularity.
    #[arg(long, value_enum, default_value_t = GranularityArg::Thread)]
    pub granularity: GranularityArg,
    /// Call each probe's one function from every site instead of inlining its body.
    #[arg(long)]
    pub call: bool,
    /// `NAME=device|host|sharded|unsharded`: a map's placement, as for `bpf2ptx inject`.
    #[arg(long = "map", value_name = "NAME=device|host|sharded|unsharded")]
    pub map: Vec<String>,
    /// A Linux config file giving the values of the probes' kconfig externs.
    #[arg(long, value_name = "FILE")]
    pub kconfig: Option<PathBuf>,
    /// Run mode: the command that runs the Triton kernels, and its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// `--granularity`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GranularityArg {
    /// Every thread.
    Thread,
    /// One lane per group of lanes that arrives together.
    Warp,
    /// The thread with tid (0,0,0).
    Block,
}

/// Why `bpf2ptx triton` failed.
#[derive(Debug, Error)]
pub enum TritonError {
    /// The probes or a kernel's PTX could not be instrumented.
    #[error(transparent)]
    Inject(#[from] InjectError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The command line names neither mode.
    #[error("give --dump-dir and --override-dir (file mode), or `-- COMMAND` (run mode)")]
    Mode,
    /// The dump directory holds no Triton PTX.
    #[error("{dir}: no Triton kernel PTX (<hash>/<kernel>.ptx){hint}")]
    NoDump {
        /// The directory.
        dir: String,
        /// What to do.
        hint: String,
    },
    /// The override directory holds files this command did not write.
    #[error("{dir}: not empty and not written by bpf2ptx triton (no {MANIFEST}); give a new or empty directory")]
    Foreign {
        /// The directory.
        dir: String,
    },
    /// No probe matches a kernel Triton dumped.
    #[error(
        "no probe matches a Triton kernel (probes for: {patterns}; kernels dumped: {kernels})"
    )]
    NoMatch {
        /// The probes' kernel patterns.
        patterns: String,
        /// The kernels found.
        kernels: String,
    },
    /// The command could not be started.
    #[error("cannot run {command}: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The command failed in the dump run.
    #[error("the dump run of {command} ended with exit code {code}")]
    DumpRun {
        /// The command.
        command: String,
        /// Its code (128 + signal).
        code: i32,
    },
    /// Triton did not assemble the instrumented PTX.
    #[error("Triton did not use the instrumented PTX of {kernels} (nothing in {cache} is it): TRITON_KERNEL_OVERRIDE and TRITON_OVERRIDE_DIR need Triton 3.0 or newer; with an older Triton, instrument the kernels with `bpf2ptx trace` or `bpf2ptx inject` instead")]
    NotOverridden {
        /// The kernels.
        kernels: String,
        /// The cache directory searched.
        cache: String,
    },
}

impl From<CompileError> for TritonError {
    fn from(e: CompileError) -> Self {
        TritonError::Inject(InjectError::Compile(e))
    }
}

impl TritonError {
    /// The exit code: a rejected probe or no match 1, the dump run's own code, 2 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            TritonError::Inject(e) => e.exit_code(),
            TritonError::NoMatch { .. } => crate::exit::REJECTED,
            TritonError::DumpRun { code, .. } => *code,
            _ => crate::exit::BAD_INPUT,
        }
    }
}

/// The manifest the override directory gets, so a later run knows which files are its
/// own and a reader which kernels were instrumented.
pub const MANIFEST: &str = "bpf2ptx-triton.json";

/// One instrumented kernel.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Instrumented {
    /// Triton's hash directory.
    pub hash: String,
    /// The file name without `.ptx` (Triton's kernel name, cut to 150 characters).
    pub file: String,
    /// The `.entry` kernels of the file the probes matched.
    pub kernels: Vec<String>,
    /// Attach sites.
    pub sites: usize,
    /// The override file, relative to the override directory.
    pub path: String,
}

/// The manifest's contents.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Manifest {
    /// The probe object.
    pub probes: String,
    /// The probes' maps (`bpf2ptx_map_<name>` in each instrumented module).
    pub maps: Vec<String>,
    /// What was instrumented.
    pub instrumented: Vec<Instrumented>,
    /// Dumped kernels left to Triton, as `<hash>/<file>`: no probe matches them, or the
    /// probes that do have no site in them.
    pub skipped: Vec<String>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> TritonError + '_ {
    move |source| TritonError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Every `<hash>/<name>.ptx` of a dump directory, sorted.
fn dumped(dir: &Path) -> Result<Vec<(String, String, PathBuf)>, TritonError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io(dir))? {
        let e = e.map_err(io(dir))?;
        let sub = e.path();
        if !sub.is_dir() {
            continue;
        }
        let hash = e.file_name().to_string_lossy().into_owned();
        for f in std::fs::read_dir(&sub).map_err(io(&sub))? {
            let p = f.map_err(io(&sub))?.path();
            if p.extension().is_some_and(|x| x == "ptx") && p.is_file() {
                let name = p
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((hash.clone(), name, p));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Makes `dir` ready to be written: new, empty, or this command's own (its files from a
/// previous run are removed, so Triton never picks up a stale instrumented kernel).
fn prepare_override(dir: &Path) -> Result<(), TritonError> {
    if !dir.exists() {
        return std::fs::create_dir_all(dir).map_err(io(dir));
    }
    let manifest = dir.join(MANIFEST);
    let empty = std::fs::read_dir(dir).map_err(io(dir))?.next().is_none();
    if empty {
        return Ok(());
    }
    let text = std::fs::read_to_string(&manifest).map_err(|_| TritonError::Foreign {
        dir: dir.display().to_string(),
    })?;
    let old: Manifest = serde_json::from_str(&text).map_err(|_| TritonError::Foreign {
        dir: dir.display().to_string(),
    })?;
    for k in &old.instrumented {
        // Only plain relative paths this command wrote.
        let rel = Path::new(&k.path);
        if rel
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        {
            let p = dir.join(rel);
            match std::fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&p)(e)),
            }
        }
    }
    std::fs::remove_file(&manifest).map_err(io(&manifest))
}

/// File mode: instruments every dumped kernel the probes match into `override_dir`.
pub fn instrument(
    probes: &Path,
    dump_dir: &Path,
    override_dir: &Path,
    opts: &Options,
) -> Result<Manifest, TritonError> {
    let files = dumped(dump_dir)?;
    if files.is_empty() {
        return Err(TritonError::NoDump {
            dir: dump_dir.display().to_string(),
            hint: "; Triton 3.0 or newer writes it there when run with TRITON_KERNEL_DUMP=1 and TRITON_DUMP_DIR set to this directory (an older Triton writes none: instrument with `bpf2ptx trace` instead)".into(),
        });
    }
    prepare_override(override_dir)?;
    let mut manifest = Manifest {
        probes: probes.display().to_string(),
        maps: Vec::new(),
        instrumented: Vec::new(),
        skipped: Vec::new(),
    };
    let mut patterns = Vec::new();
    let mut all_kernels = Vec::new();
    let mut matched = false;
    for (hash, name, path) in &files {
        let text = std::fs::read_to_string(path).map_err(io(path))?;
        let shown = path.display().to_string();
        let done = inject::inject_checked(probes, &text, &shown, opts)?;
        if manifest.maps.is_empty() {
            manifest.maps = probe_maps(probes);
        }
        match done.no_match {
            Some(nm) => {
                for p in nm.patterns {
                    if !patterns.contains(&p) {
                        patterns.push(p);
                    }
                }
                all_kernels.extend(nm.kernels);
                manifest.skipped.push(format!("{hash}/{name}"));
            }
            // Matched, but no instruction the probes attach to: Triton keeps its own.
            None if done.woven.sites.is_empty() => {
                matched = true;
                manifest.skipped.push(format!("{hash}/{name}"));
            }
            None => {
                matched = true;
                let rel = format!("{hash}/{name}.ptx");
                let out = override_dir.join(&rel);
                if let Some(parent) = out.parent() {
                    std::fs::create_dir_all(parent).map_err(io(parent))?;
                }
                compile::write_output(&out, &done.woven.text, &[probes, path])
                    .map_err(InjectError::from)?;
                let mut kernels: Vec<String> =
                    done.woven.sites.iter().map(|s| s.kernel.clone()).collect();
                kernels.dedup();
                manifest.instrumented.push(Instrumented {
                    hash: hash.clone(),
                    file: name.clone(),
                    kernels,
                    sites: done.woven.sites.len(),
                    path: rel,
                });
            }
        }
    }
    let json = serde_json::to_string_pretty(&manifest).expect("serialises") + "\n";
    let mpath = override_dir.join(MANIFEST);
    compile::write_output(&mpath, &json, &[probes]).map_err(InjectError::from)?;
    if !matched {
        all_kernels.sort();
        all_kernels.dedup();
        return Err(TritonError::NoMatch {
            patterns: patterns.join(", "),
            kernels: all_kernels.join(", "),
        });
    }
    Ok(manifest)
}

/// The names of the probe object's maps (for the manifest); empty when it does not load
/// (inject has reported that already).
fn probe_maps(probes: &Path) -> Vec<String> {
    bpf2ptx_compiler::front::load_path(probes)
        .map(|o| o.maps.iter().map(|m| m.name.clone()).collect())
        .unwrap_or_default()
}

/// Runs `command` with `env` added; returns its exit code (128 + signal).
fn run_command(
    command: &[OsString],
    env: &[(&str, &Path)],
    set: &[(&str, &str)],
) -> Result<i32, TritonError> {
    use std::os::unix::process::ExitStatusExt as _;
    let shown = command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut c = std::process::Command::new(&command[0]);
    c.args(&command[1..]);
    for (k, v) in env {
        c.env(k, v);
    }
    for (k, v) in set {
        c.env(k, v);
    }
    let status = c.status().map_err(|source| TritonError::Spawn {
        command: shown,
        source,
    })?;
    Ok(match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 1,
    })
}

/// Whether some `<cache>/<key>/<file>.ptx` holds exactly `text`: Triton keeps the PTX it
/// assembled in its cache.
fn cached(cache: &Path, file: &str, text: &str) -> bool {
    let Ok(dirs) = std::fs::read_dir(cache) else {
        return false;
    };
    dirs.flatten().any(|d| {
        std::fs::read_to_string(d.path().join(format!("{file}.ptx"))).is_ok_and(|t| t == text)
    })
}

/// `bpf2ptx triton`: returns the exit code.
pub fn triton(a: &TritonArgs, loop_budget: Option<u64>, flags: &crate::build::Flags) -> i32 {
    match run(a, loop_budget, flags) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn options(a: &TritonArgs, loop_budget: Option<u64>, flags: &crate::build::Flags) -> Options {
    Options {
        granularity: match a.granularity {
            GranularityArg::Thread => Granularity::Thread,
            GranularityArg::Warp => Granularity::Warp,
            GranularityArg::Block => Granularity::Block,
        },
        extern_probes: false,
        call: a.call,
        maps: a.map.clone(),
        kconfig: a.kconfig.clone(),
        loop_budget,
        flags: flags.clone(),
        no_fuse: false,
        rebind_maps: false,
    }
}

fn report(m: &Manifest, override_dir: &Path) {
    for k in &m.instrumented {
        eprintln!(
            "bpf2ptx triton: {} ({}): {} sites -> {}",
            k.kernels.join(", "),
            k.hash,
            k.sites,
            override_dir.join(&k.path).display()
        );
    }
    for s in &m.skipped {
        eprintln!("bpf2ptx triton: {s}: no attach site; Triton compiles it unchanged");
    }
}

fn run(
    a: &TritonArgs,
    loop_budget: Option<u64>,
    flags: &crate::build::Flags,
) -> Result<i32, TritonError> {
    let opts = options(a, loop_budget, flags);
    if a.command.is_empty() {
        let (Some(dump), Some(ov)) = (&a.dump_dir, &a.override_dir) else {
            return Err(TritonError::Mode);
        };
        let m = instrument(&a.probes, dump, ov, &opts)?;
        report(&m, ov);
        eprintln!(
            "bpf2ptx triton: run the application with TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR={} TRITON_ALWAYS_COMPILE=1",
            ov.display()
        );
        return Ok(crate::exit::OK);
    }
    if a.dump_dir.is_some() || a.override_dir.is_some() {
        return Err(TritonError::Mode);
    }
    // Verify the probes before running anything.
    let obj = bpf2ptx_compiler::front::load_path(&a.probes).map_err(CompileError::from)?;
    crate::inject::probes(&compile::gpu_programs(&obj).0)?;
    let work = match &a.work_dir {
        Some(w) => {
            std::fs::create_dir_all(w).map_err(io(w))?;
            w.clone()
        }
        None => tempfile::Builder::new()
            .prefix("bpf2ptx-triton-")
            .tempdir()
            .map_err(io(&std::env::temp_dir()))?
            .keep(),
    };
    let dump = work.join("dump");
    let ov = work.join("override");
    let cache_dump = work.join("cache-dump");
    let cache = work.join("cache");
    // torch.compile keeps compiled kernels in its own cache too; a warm one would skip
    // Triton's compile() (and with it the dump and the override).
    let inductor_dump = work.join("inductor-dump");
    let inductor = work.join("inductor");
    for d in [&dump, &cache_dump, &cache, &inductor_dump, &inductor] {
        if d.exists() {
            std::fs::remove_dir_all(d).map_err(io(d))?;
        }
        std::fs::create_dir_all(d).map_err(io(d))?;
    }
    eprintln!(
        "bpf2ptx triton: dump run (work directory {})",
        work.display()
    );
    let code = run_command(
        &a.command,
        &[
            ("TRITON_DUMP_DIR", &dump),
            ("TRITON_CACHE_DIR", &cache_dump),
        ],
        &[("TRITON_KERNEL_DUMP", "1"), ("TRITON_ALWAYS_COMPILE", "1")],
    )?;
    if code != 0 {
        return Err(TritonError::DumpRun {
            command: a.command[0].to_string_lossy().into_owned(),
            code,
        });
    }
    let m = instrument(&a.probes, &dump, &ov, &opts)?;
    report(&m, &ov);
    eprintln!("bpf2ptx triton: instrumented run");
    let code = run_command(
        &a.command,
        &[
            ("TRITON_OVERRIDE_DIR", &ov),
            ("TRITON_CACHE_DIR", &cache),
            ("TORCHINDUCTOR_CACHE_DIR", &inductor),
        ],
        &[
            ("TRITON_KERNEL_OVERRIDE", "1"),
            ("TRITON_KERNEL_DUMP", "0"),
            ("TRITON_ALWAYS_COMPILE", "1"),
            // The check below reads the PTX Triton keeps in its cache.
            ("TRITON_STORE_BINARY_ONLY", "0"),
        ],
    )?;
    // Which instrumented kernels Triton assembled: its cache holds the PTX it used.
    let mut unused = Vec::new();
    for k in &m.instrumented {
        let text = std::fs::read_to_string(ov.join(&k.path)).unwrap_or_default();
        if !cached(&cache, &k.file, &text) {
            unused.push(k.file.clone());
        }
    }
    if !unused.is_empty() && code == 0 {
        return Err(TritonError::NotOverridden {
            kernels: unused.join(", "),
            cache: cache.display().to_string(),
        });
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_foreign_override_directory_is_refused_and_our_own_is_cleaned() {
        let d = tempfile::tempdir().unwrap();
        let ov = d.path().join("ov");
        write(&ov.join("x/y.ptx"), "not ours");
        assert!(matches!(
            prepare_override(&ov),
            Err(TritonError::Foreign { .. })
        ));
        let m = Manifest {
            probes: "p.o".into(),
            maps: vec![],
            instrumented: vec![Instrumented {
                hash: "x".into(),
                file: "y".into(),
                kernels: vec!["y".into()],
                sites: 1,
                path: "x/y.ptx".into(),
            }],
            skipped: vec![],
        };
        write(&ov.join(MANIFEST), &serde_json::to_string(&m).unwrap());
        prepare_override(&ov).unwrap();
        assert!(!ov.join("x/y.ptx").exists());
        assert!(!ov.join(MANIFEST).exists());
    }

    #[test]
    fn an_empty_dump_says_what_triton_needs() {
        let d = tempfile::tempdir().unwrap();
        let e = instrument(
            Path::new("p.o"),
            d.path(),
            &d.path().join("ov"),
            &Options::default(),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("TRITON_KERNEL_DUMP=1") && msg.contains("Triton 3.0"),
            "{msg}"
        );
    }
}
