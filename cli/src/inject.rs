//! `bpf2ptx inject PROBES --into APP -o OUT`: verify the probes, lower them for the
//! application's target, and weave calls to them into the application's kernels
//! (`bpf2ptx_backend::inject`).

use crate::compile::{self, CompileError};
use bpf2ptx_backend::back::ptx;
use bpf2ptx_backend::inject::attach::{self, Attach};
use bpf2ptx_backend::inject::bodies::SiteBodies;
use bpf2ptx_backend::inject::fatbin;
use bpf2ptx_backend::inject::ptx::FunctionKind;
use bpf2ptx_backend::inject::weave::{self, Linkage, Probe, Woven};
use bpf2ptx_compiler::program::Object;
use std::path::Path;
use thiserror::Error;

/// What `inject` is asked to do beyond the two inputs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Granularity of probes whose section does not name one.
    pub granularity: ptx::Granularity,
    /// Declare the probes `.extern .func` instead of merging their code (the probe module
    /// is then `bpf2ptx PROBES -o probes.ptx`, linked with cuLink or nvlink -rdc).
    pub extern_probes: bool,
    /// Call each probe's one `.func` from every site instead of inlining its body there
    /// (smaller code; the inlined form folds each site's constant context and is faster).
    pub call: bool,
    /// `NAME=device|host|sharded|unsharded|live` map options, as for `bpf2ptx FILE`
    /// (`live`: no fusion touches the map).
    pub maps: Vec<String>,
    /// The Linux config file giving kconfig externs their values (`--kconfig`;
    /// [`compile::apply_kconfig`]).
    pub kconfig: Option<std::path::PathBuf>,
    /// `--loop-budget N` (specs/verifier.md, "Loops").
    pub loop_budget: Option<u64>,
    /// How to compile PROBES when it is C (`--clang`, `-I`, `-D`; [`crate::build`]).
    pub flags: crate::build::Flags,
    /// `--no-fuse`: no register accumulation or forwarding at inlined sites (today's
    /// lowering of every site, for comparison; `ptx::Options::fuse`).
    pub no_fuse: bool,
    /// The host may bind every map before the module's first launch, to storage outside
    /// the module (`ptx::Options::rebind_maps`): what `bpf2ptx trace`'s interposer asks
    /// for, so the modules it instruments share one instance of each map per process and
    /// device (`--rebind-maps`, to measure that lowering's cost; by default a module
    /// keeps its own storage, reached at constant addresses).
    pub rebind_maps: bool,
}

/// Why `inject` failed; nothing is written.
#[derive(Debug, Error)]
pub enum InjectError {
    /// The probes do not load, verify or lower.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The application cannot be read.
    #[error("{file}: {source}")]
    Read {
        /// The application file.
        file: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The application is neither PTX text nor a container holding PTX.
    #[error("{file}: {message}")]
    App {
        /// The application file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// A GPU program's section is not an attach point.
    #[error("{file}: program {program}: section `{section}` is not an attach point (gpu/entry/K, gpu/exit/K, gpu/mem/K, gpu/insn/K/OPCODE with OPCODE a PTX opcode prefix such as wgmma, mma or bar.sync, each with an optional .thread/.warp/.block after the point; kprobe/K, kretprobe/K, kprobe/__memcapture)")]
    Section {
        /// The probe file.
        file: String,
        /// The program.
        program: String,
        /// Its section.
        section: String,
    },
    /// Weaving failed.
    #[error("{file}: {source}")]
    Weave {
        /// The application file.
        file: String,
        /// Why.
        source: weave::InjectError,
    },
    /// No probe matches a kernel of the application (`--allow-no-match` accepts that).
    #[error(transparent)]
    NoMatch(#[from] NoMatch),
}

/// No probe's kernel pattern names a kernel of the application: what the application has,
/// and the kernel a probe most likely meant.
#[derive(Debug, Error)]
pub struct NoMatch {
    /// The application file.
    pub file: String,
    /// The probes' kernel patterns (`*`, a PTX name or a C++ base name), as written.
    pub patterns: Vec<String>,
    /// The application's kernels (`.entry` with a body), in order.
    pub kernels: Vec<String>,
    /// `(pattern, kernel)`: the kernel closest to a probe's pattern, if one is close.
    pub suggestion: Option<(String, String)>,
}

/// Kernels the no-match message names before `and N more`.
const LISTED_KERNELS: usize = 20;

impl std::fmt::Display for NoMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: no probe matches a kernel (probes for: {})",
            self.file,
            self.patterns.join(", ")
        )?;
        if self.kernels.is_empty() {
            write!(f, "; {} has no kernels", self.file)?;
        } else {
            let shown = &self.kernels[..self.kernels.len().min(LISTED_KERNELS)];
            write!(f, "; kernels: {}", shown.join(", "))?;
            if self.kernels.len() > shown.len() {
                write!(f, " and {} more", self.kernels.len() - shown.len())?;
            }
        }
        if let Some((pattern, kernel)) = &self.suggestion {
            write!(f, "; did you mean {kernel} (not {pattern})?")?;
        }
        write!(
            f,
            " (--allow-no-match writes the input unchanged and exits 0)"
        )
    }
}

impl NoMatch {
    /// `None` when some probe matches some kernel of `app` (`kernels` of it); else what
    /// is there and the closest kernel: one with a probe's C++ base name (the mangled
    /// parameters differ), or the one whose base name is fewest edits from a probe's,
    /// within half the longer name.
    pub fn check(file: &str, probes: &[Probe], kernels: &[String]) -> Option<NoMatch> {
        let matched = probes
            .iter()
            .any(|p| kernels.iter().any(|k| p.attach.matches(k)));
        if matched {
            return None;
        }
        let mut patterns: Vec<String> = Vec::new();
        for p in probes {
            if !patterns.contains(&p.attach.kernel) {
                patterns.push(p.attach.kernel.clone());
            }
        }
        let base = |name: &str| attach::base_name(name).unwrap_or(name).to_string();
        // (distance, pattern, kernel); the first of the smallest wins.
        let mut best: Option<(usize, &str, &str)> = None;
        for pattern in patterns.iter().filter(|p| p.as_str() != "*") {
            let pb = base(pattern);
            for k in kernels {
                let kb = base(k);
                let d = edit_distance(&pb, &kb);
                let close = 2 * d <= pb.chars().count().max(kb.chars().count());
                if close && best.is_none_or(|(b, _, _)| d < b) {
                    best = Some((d, pattern, k));
                }
            }
        }
        Some(NoMatch {
            file: file.to_string(),
            suggestion: best.map(|(_, p, k)| (p.to_string(), k.to_string())),
            patterns,
            kernels: kernels.to_vec(),
        })
    }
}

/// Levenshtein distance (insertions, deletions, substitutions of chars).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

impl InjectError {
    /// The exit code: 1 for a rejected probe or no match, 2 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            InjectError::Compile(e) => e.exit_code(),
            InjectError::NoMatch(_) => crate::exit::REJECTED,
            _ => crate::exit::BAD_INPUT,
        }
    }
}

/// The PTX text of an application input: a `.ptx` file, or a fatbin, executable, shared
/// library or object file that nvcc built with PTX in it (compressed or not). From a
/// container, the PTX of the highest virtual architecture is taken; when several entries
/// (translation units) have it, `pick` (a [`PtxEntry::index`]) chooses one.
///
/// [`PtxEntry::index`]: bpf2ptx_backend::inject::fatbin::PtxEntry
pub fn app_ptx(path: &Path, pick: Option<usize>) -> Result<String, InjectError> {
    app_ptx_for(path, pick, None)
}

/// The virtual architecture a PTX text is for, from its `.target` directive, as nvcc
/// names it: `compute_90` for `.target sm_90`, `compute_90a` for the arch-specific
/// `sm_90a`, `compute_100f` for the family `sm_100f`.
pub fn ptx_virtual_arch(ptx: &str) -> Option<String> {
    ptx.lines().find_map(|l| {
        let t = l.trim_start().strip_prefix(".target")?;
        if !t.starts_with(char::is_whitespace) {
            return None;
        }
        let first = t.split([',', ' ', '\t']).find(|w| !w.is_empty())?;
        Some(format!("compute_{}", first.strip_prefix("sm_")?))
    })
}

/// `compute_90a`, `sm_90a` or `90a` as nvcc's virtual architecture name (`compute_90a`).
fn virtual_arch_name(arch: &str) -> Option<String> {
    let n = arch
        .strip_prefix("compute_")
        .or_else(|| arch.strip_prefix("sm_"))
        .unwrap_or(arch);
    let digits = n.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    (!digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && n.len() - digits.len() <= 1)
        .then(|| format!("compute_{n}"))
}

/// [`app_ptx`], or with `arch` (`--ptx-arch compute_90a`) the container's PTX entry for
/// that virtual architecture (its `.target`; `compute_90` and `compute_90a` are told
/// apart, as nvcc 13 keeps both for `-arch=sm_90a`). A plain `.ptx` file must be for it.
pub fn app_ptx_for(
    path: &Path,
    pick: Option<usize>,
    arch: Option<&str>,
) -> Result<String, InjectError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| InjectError::Read {
        file: file.clone(),
        source,
    })?;
    if !fatbin::is_container(&bytes) {
        let text = String::from_utf8(bytes).map_err(|_| InjectError::App {
            file: file.clone(),
            message: "neither PTX text nor a fatbin or ELF file".into(),
        })?;
        if let Some(want) = arch {
            let have = ptx_virtual_arch(&text);
            if have.as_deref() != virtual_arch_name(want).as_deref() {
                return Err(InjectError::App {
                    file,
                    message: format!(
                        "--ptx-arch {want}: the PTX is for {}",
                        have.as_deref().unwrap_or("no .target")
                    ),
                });
            }
        }
        return Ok(text);
    }
    let app_err = |message: String| InjectError::App {
        file: file.clone(),
        message,
    };
    let entries = fatbin::extract_ptx(&bytes).map_err(|e| app_err(e.to_string()))?;
    if let Some(want) = arch {
        let want = virtual_arch_name(want).ok_or_else(|| {
            app_err(format!(
                "--ptx-arch {want}: not an architecture (compute_90, compute_90a, sm_90 or 90)"
            ))
        })?;
        let have: Vec<(usize, String)> = entries
            .iter()
            .map(|e| {
                let a = ptx_virtual_arch(&e.ptx).unwrap_or_else(|| format!("compute_{}", e.arch));
                (e.index, a)
            })
            .collect();
        let mut found: Vec<_> = entries
            .into_iter()
            .zip(&have)
            .filter(|(_, (_, a))| *a == want)
            .map(|(e, _)| e)
            .collect();
        if let Some(k) = pick {
            found.retain(|e| e.index == k);
        }
        return match found.len() {
            1 => Ok(found.pop().map(|e| e.ptx).unwrap_or_default()),
            0 => {
                let mut archs: Vec<&str> = have.iter().map(|(_, a)| a.as_str()).collect();
                archs.sort_unstable();
                archs.dedup();
                Err(app_err(format!(
                    "no PTX for {want}{}; the input has PTX for {}",
                    pick.map(|k| format!(" with index {k}")).unwrap_or_default(),
                    archs.join(", ")
                )))
            }
            n => Err(app_err(format!(
                "{n} PTX entries for {want}; choose one with --ptx-entry: {}",
                entry_list(&found)
            ))),
        };
    }
    if let Some(k) = pick {
        return entries
            .into_iter()
            .find(|e| e.index == k)
            .map(|e| e.ptx)
            .ok_or_else(|| app_err(format!("no PTX entry with index {k}")));
    }
    let best = entries.iter().map(|e| e.arch).max().unwrap_or(0);
    let mut top: Vec<_> = entries.into_iter().filter(|e| e.arch == best).collect();
    if top.len() > 1 {
        // nvcc 13's -arch=sm_90a keeps compute_90 and compute_90a PTX: both compute_90 in
        // the entry header, told apart by their .target.
        let mut archs: Vec<_> = top.iter().map(|e| ptx_virtual_arch(&e.ptx)).collect();
        archs.sort_unstable();
        archs.dedup();
        let by = if archs.len() > 1 {
            "--ptx-arch or --ptx-entry"
        } else {
            "--ptx-entry"
        };
        return Err(app_err(format!(
            "{} PTX entries for compute_{best}; choose one with {by}: {}",
            top.len(),
            entry_list(&top)
        )));
    }
    Ok(top.pop().map(|e| e.ptx).unwrap_or_default())
}

/// `0 (compute_90a, unnamed, 885 bytes), ...`: PTX entries as messages list them.
fn entry_list(entries: &[fatbin::PtxEntry]) -> String {
    entries
        .iter()
        .map(|e| {
            let arch = ptx_virtual_arch(&e.ptx).unwrap_or_else(|| format!("compute_{}", e.arch));
            let name = e.name.as_deref().unwrap_or("unnamed");
            format!("{} ({arch}, {name}, {} bytes)", e.index, e.ptx.len())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The backend target for an application compiled for `sm`: the highest of
/// [`ptx::TARGETS`] not above it (sm_70 at least, the lowest the backend emits).
pub fn probe_target(app_target: Option<&str>) -> String {
    let sm = weave::sm_number;
    let app = app_target.and_then(sm).unwrap_or(0);
    ptx::TARGETS
        .iter()
        .map(|(t, _)| *t)
        .filter(|t| sm(t).is_some_and(|n| n <= app))
        .max_by_key(|t| sm(t))
        .unwrap_or(ptx::TARGETS[0].0)
        .to_string()
}

/// The probes of `obj`: every GPU program with its attach point.
pub fn probes(obj: &Object) -> Result<Vec<Probe>, InjectError> {
    obj.programs
        .iter()
        .map(|p| {
            let attach = Attach::from_section(&p.section).ok_or_else(|| InjectError::Section {
                file: obj.file.clone(),
                program: p.name.clone(),
                section: p.section.clone(),
            })?;
            Ok(Probe {
                symbol: ptx::program_symbol(p),
                attach,
                effects: attach::has_effects(p),
                may_end_thread: attach::may_end_thread(p),
                may_output: attach::may_output(p),
            })
        })
        .collect()
}

/// Verifies and lowers the probes of `probes_file` for `app`'s target and weaves them
/// into `app` (PTX text). Returns the woven module and the host-side programs skipped.
/// When no probe matches a kernel, the woven module is `app` unchanged
/// ([`inject_checked`] says so).
pub fn inject(
    probes_file: &Path,
    app: &str,
    app_file: &str,
    opts: &Options,
) -> Result<(Woven, Vec<(String, String)>), InjectError> {
    let done = inject_checked(probes_file, app, app_file, opts)?;
    Ok((done.woven, done.skipped))
}

/// What [`inject_checked`] did.
#[derive(Debug)]
pub struct Injected {
    /// The woven module.
    pub woven: Woven,
    /// Host-side programs skipped: (name, section).
    pub skipped: Vec<(String, String)>,
    /// `Some` when no probe matches a kernel (the woven module is then `app`).
    pub no_match: Option<NoMatch>,
}

/// [`inject`], also saying whether any probe matched a kernel of `app` (a probe without
/// effects that matches counts: it is elided, not missing). The probes are verified and
/// lowered either way.
///
/// `probes_file` may be C (a `.c` file), compiled first with `opts.flags`
/// ([`crate::build::Input`]).
pub fn inject_checked(
    probes_file: &Path,
    app: &str,
    app_file: &str,
    opts: &Options,
) -> Result<Injected, InjectError> {
    let input = crate::build::Input::open(probes_file, &opts.flags).map_err(CompileError::from)?;
    inject_object(input.load()?, app, app_file, opts)
}

/// [`inject_checked`] with the probes already loaded.
pub fn inject_object(
    mut obj: Object,
    app: &str,
    app_file: &str,
    opts: &Options,
) -> Result<Injected, InjectError> {
    compile::apply_kconfig(&mut obj, opts.kconfig.as_deref())?;
    inject_loaded(&obj, app, app_file, opts)
}

/// [`inject_checked`] of a probe object already loaded (and its kconfig applied): what
/// tests that build probe objects in memory call.
pub fn inject_loaded(
    obj: &Object,
    app: &str,
    app_file: &str,
    opts: &Options,
) -> Result<Injected, InjectError> {
    let (gpu, skipped) = compile::gpu_programs(obj);
    if gpu.programs.is_empty() {
        return Err(CompileError::NoGpuPrograms {
            file: obj.file.clone(),
        }
        .into());
    }
    let list = probes(&gpu)?;
    let weave_err = |source| InjectError::Weave {
        file: app_file.to_string(),
        source,
    };
    let app_module = bpf2ptx_backend::inject::ptx::parse(app).map_err(|e| weave_err(e.into()))?;
    let target = probe_target(
        app_module
            .target()
            .and_then(|t| t.first())
            .map(String::as_str),
    );
    let (maps, _) = compile::map_options(&gpu, &opts.maps).map_err(CompileError::Options)?;
    let popts = ptx::Options {
        target,
        granularity: opts.granularity,
        loop_budget: opts.loop_budget,
        fuse: !opts.no_fuse,
        rebind_maps: opts.rebind_maps,
        ..maps
    };
    // Verified and lowered even with --extern, so a probe that would be rejected never
    // gets call sites.
    let (verified, resolved) = compile::resolve(&gpu, &popts)?;
    let probe_ptx = compile::lower(&verified, &resolved)?;
    // Each site gets the probe's body, verified again and lowered by the weaver with the
    // site's constant context fields (kernel, site, access size and kind) folded in.
    let bodies = SiteBodies::new(&verified, &resolved);
    let linkage = if opts.extern_probes {
        Linkage::Extern
    } else {
        Linkage::Merge {
            module: &probe_ptx,
            bodies: if opts.call { None } else { Some(&bodies) },
        }
    };
    let kernels: Vec<String> = app_module
        .functions()
        .filter(|f| f.kind() == FunctionKind::Entry && f.has_body())
        .map(|f| f.name().to_string())
        .collect();
    let no_match = NoMatch::check(app_file, &list, &kernels);
    let woven = weave::weave_parsed(app_module, app, &list, linkage, opts.granularity)
        .map_err(weave_err)?;
    Ok(Injected {
        woven,
        skipped,
        no_match,
    })
}
