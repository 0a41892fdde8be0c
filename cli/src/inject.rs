//! `bpf2ptx inject PROBES --into APP -o OUT`: verify the probes, lower them for the
//! application's target, and weave calls to them into the application's kernels
//! (`bpf2ptx_backend::inject`).

use crate::compile::{self, CompileError};
use bpf2ptx_backend::back::ptx;
use bpf2ptx_backend::inject::attach::{self, Attach};
use bpf2ptx_backend::inject::fatbin;
use bpf2ptx_backend::inject::ptx::FunctionKind;
use bpf2ptx_backend::inject::weave::{self, Linkage, Probe, Woven};
use bpf2ptx_compiler::isa::table::Kind;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_verifier::{Entry, Facts};
use std::cell::RefCell;
use std::collections::HashMap;
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
    /// `NAME=device|host|sharded` map options, as for `bpf2ptx FILE`.
    pub maps: Vec<String>,
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
    #[error("{file}: program {program}: section `{section}` is not an attach point (gpu/entry/K, gpu/exit/K, gpu/mem/K with an optional .thread/.warp/.block after the point, kprobe/K, kretprobe/K, kprobe/__memcapture)")]
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
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| InjectError::Read {
        file: file.clone(),
        source,
    })?;
    if !fatbin::is_container(&bytes) {
        return String::from_utf8(bytes).map_err(|_| InjectError::App {
            file,
            message: "neither PTX text nor a fatbin or ELF file".into(),
        });
    }
    let app_err = |message: String| InjectError::App {
        file: file.clone(),
        message,
    };
    let entries = fatbin::extract_ptx(&bytes).map_err(|e| app_err(e.to_string()))?;
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
        let list: Vec<String> = top
            .iter()
            .map(|e| {
                let name = e.name.as_deref().unwrap_or("unnamed");
                format!("{} ({name}, {} bytes)", e.index, e.ptx.len())
            })
            .collect();
        return Err(app_err(format!(
            "{} PTX entries for compute_{best}; choose one with --ptx-entry: {}",
            top.len(),
            list.join(", ")
        )));
    }
    Ok(top.pop().map(|e| e.ptx).unwrap_or_default())
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
pub fn inject_checked(
    probes_file: &Path,
    app: &str,
    app_file: &str,
    opts: &Options,
) -> Result<Injected, InjectError> {
    let obj = bpf2ptx_compiler::front::load_path(probes_file).map_err(CompileError::from)?;
    let (gpu, skipped) = compile::gpu_programs(&obj);
    if gpu.programs.is_empty() {
        return Err(CompileError::NoGpuPrograms { file: obj.file }.into());
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
        ..maps
    };
    // Verified and lowered even with --extern, so a probe that would be rejected never
    // gets call sites.
    let resolved = compile::resolve(&gpu, &popts)?;
    let probe_ptx = compile::lower(&gpu, &resolved)?;
    // Each site gets the probe's body, verified and lowered with the site's constant
    // context fields (kernel, site, access size and kind) folded in.
    let cache = SiteBodies::new(&gpu, &resolved);
    let bodies = |k: usize, ctx: &weave::SiteContext| cache.get(k, ctx).map_err(|e| e.to_string());
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

/// Site bodies ([`compile::site_body`]), each verified and lowered once per set of sites
/// on which the verifier cannot tell the contexts apart.
///
/// The verifier's run for a program is a deterministic function of the program and its
/// entry, and the entry's known context bytes enter it only where a load from the
/// context at one constant offset asks for the bytes it reads
/// ([`bpf2ptx_verifier::KnownBytes::value`]). Every such load is an instruction whose
/// facts say it touches the context (`regions` bit 2) at that offset on every path
/// (`ctx_offset`). So when a run's facts name a constant offset for every instruction
/// that touches the context, the bytes those loads read are all the run consulted: a
/// site whose context has the same known mask and the same bytes there gets the same run
/// step by step, hence the same facts and the same body. When some context access has
/// no constant offset, nothing is shared and each such site is verified on its own.
pub struct SiteBodies<'a> {
    obj: &'a Object,
    resolved: &'a ptx::Options,
    /// Per program, the shapes seen: known mask and the byte ranges its loads read, with
    /// the bodies by the bytes in those ranges.
    shapes: RefCell<HashMap<usize, Vec<Shape>>>,
}

/// The context bytes a verification consulted, and the bodies of the sites that agree on
/// them.
struct Shape {
    mask: u32,
    /// `start..end` byte ranges into [`bpf2ptx_verifier::KnownBytes::bytes`].
    ranges: Vec<(usize, usize)>,
    bodies: HashMap<Vec<u8>, ptx::InlineBody>,
}

impl Shape {
    /// The entry's bytes in this shape's ranges.
    fn key(&self, e: &Entry) -> Vec<u8> {
        let b = &e.known.bytes;
        let mut k = Vec::new();
        for &(s, t) in &self.ranges {
            k.extend_from_slice(&b[s.min(b.len())..t.min(b.len())]);
        }
        k
    }
}

impl<'a> SiteBodies<'a> {
    /// An empty cache for the programs of `obj` with the module's options `resolved`.
    pub fn new(obj: &'a Object, resolved: &'a ptx::Options) -> Self {
        SiteBodies {
            obj,
            resolved,
            shapes: RefCell::new(HashMap::new()),
        }
    }

    /// [`compile::site_body`] of program `k` for a site with context `ctx`.
    pub fn get(&self, k: usize, ctx: &weave::SiteContext) -> Result<ptx::InlineBody, CompileError> {
        let e = compile::site_entry(self.obj, k, ctx);
        let mut shapes = self.shapes.borrow_mut();
        let list = shapes.entry(k).or_default();
        for shape in list.iter().filter(|s| s.mask == e.known.mask) {
            if let Some(body) = shape.bodies.get(&shape.key(&e)) {
                return Ok(body.clone());
            }
        }
        let (body, facts) = compile::site_body_facts(self.obj, self.resolved, &e, k)?;
        if let Some(ranges) = ctx_reads(self.obj, k, &facts) {
            let at = match list
                .iter()
                .position(|s| s.mask == e.known.mask && s.ranges == ranges)
            {
                Some(i) => i,
                None => {
                    list.push(Shape {
                        mask: e.known.mask,
                        ranges,
                        bodies: HashMap::new(),
                    });
                    list.len() - 1
                }
            };
            let shape = &mut list[at];
            let key = shape.key(&e);
            shape.bodies.insert(key, body.clone());
        }
        Ok(body)
    }
}

/// The context byte ranges program `k`'s loads read in the run that gave `facts`: one
/// per instruction that touches the context, each a load at a constant offset. `None`
/// when some context access is not such a load (its bytes are then not known).
fn ctx_reads(obj: &Object, k: usize, facts: &Facts) -> Option<Vec<(usize, usize)>> {
    let insns = &obj.programs.get(k)?.insns;
    let mut out = Vec::new();
    for (i, &r) in facts.regions.iter().enumerate() {
        if r & 2 == 0 {
            continue;
        }
        let off = facts.ctx_offset.get(i).copied().flatten()?;
        let Kind::Ldx(size, _) = insns.get(i)?.kind() else {
            return None;
        };
        let start = usize::try_from(off).ok()?;
        out.push((start, start + size.bytes() as usize));
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bpf2ptx_backend::inject::attach::{Point, KERNEL_CTX_SIZE, MEM_CTX_SIZE};
    use bpf2ptx_backend::inject::weave::SiteContext;

    /// Contexts of a point's sites: kernel and site varied, and for memory sites the
    /// access size and flags too.
    fn contexts(point: Point) -> Vec<SiteContext> {
        let mut out = Vec::new();
        for kernel in [0u64, 1, 7] {
            for site in [12u64, 13, 400] {
                let id = kernel | site << 32;
                let mut ctx = SiteContext {
                    bytes: [0; MEM_CTX_SIZE as usize],
                    known: 0xff,
                    size: KERNEL_CTX_SIZE,
                };
                if point != Point::Mem {
                    ctx.bytes[..8].copy_from_slice(&id.to_le_bytes());
                    out.push(ctx);
                    continue;
                }
                for w1 in [4u64 | 1 << 32, 8 | 2 << 32, 4 | (1 | 1 << 8) << 32] {
                    ctx.known = 0x00ff_ff00;
                    ctx.size = MEM_CTX_SIZE;
                    ctx.bytes[8..16].copy_from_slice(&w1.to_le_bytes());
                    ctx.bytes[16..24].copy_from_slice(&id.to_le_bytes());
                    out.push(ctx);
                }
            }
        }
        out
    }

    /// Every body the cache gives is the one verifying and lowering that site alone gives,
    /// for every program of the injection tests' probes.
    #[test]
    fn cached_site_bodies_are_the_sites_own() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/inject/probes");
        let mut checked = 0;
        for name in ["counters", "memcapture", "plain_counters", "ring_exit"] {
            let path = dir.join(format!("{name}.bpf.o"));
            let obj = bpf2ptx_compiler::front::load_path(&path).expect("loads");
            let (gpu, _) = compile::gpu_programs(&obj);
            let (maps, _) = compile::map_options(&gpu, &[]).expect("map options");
            let resolved = compile::resolve(&gpu, &maps).expect("verifies");
            let cache = SiteBodies::new(&gpu, &resolved);
            for (k, p) in gpu.programs.iter().enumerate() {
                let Some(a) = Attach::from_section(&p.section) else {
                    continue;
                };
                let ctxs = contexts(a.point);
                // Twice, so the second round is served from the cache.
                for ctx in ctxs.iter().chain(ctxs.iter().rev()) {
                    let own = compile::site_body(&gpu, &resolved, k, ctx).expect("lowers");
                    let cached = cache.get(k, ctx).expect("lowers");
                    assert_eq!(own, cached, "{name}: program {}", p.name);
                    checked += 1;
                }
            }
        }
        assert!(checked > 0);
    }

    /// A probe that reads its site (not its kernel) and branches on it: sites that differ
    /// in the site get their own bodies, sites that differ only in the kernel share one.
    #[test]
    fn a_probe_that_reads_its_site_gets_a_body_per_site() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/inject/probes");
        let obj = bpf2ptx_compiler::front::load_path(&dir.join("counters.bpf.o")).expect("loads");
        let (mut gpu, _) = compile::gpu_programs(&obj);
        let k = gpu
            .programs
            .iter()
            .position(|p| p.section == "gpu/entry/*")
            .expect("counters has an entry probe");
        let code = "r2 = *(u32 *)(r1 + 4)\nr0 = 0\nif r2 > 100 goto +1\nr0 = 1\nexit\n";
        let p = &mut gpu.programs[k];
        p.insns = bpf2ptx_compiler::isa::asm::assemble(code)
            .expect("assembles")
            .insns;
        p.funcs.truncate(1);
        p.relocs.clear();
        p.lines.clear();
        let (maps, _) = compile::map_options(&gpu, &[]).expect("map options");
        let resolved = compile::resolve(&gpu, &maps).expect("verifies");
        let cache = SiteBodies::new(&gpu, &resolved);
        let ctxs = contexts(Point::Entry);
        for ctx in ctxs.iter().chain(ctxs.iter().rev()) {
            let own = compile::site_body(&gpu, &resolved, k, ctx).expect("lowers");
            assert_eq!(own, cache.get(k, ctx).expect("lowers"));
        }
        let shapes = cache.shapes.borrow();
        let shapes = &shapes[&k];
        assert_eq!(shapes.len(), 1);
        assert_eq!(shapes[0].ranges, vec![(4, 8)]);
        // Sites 12, 13 and 400.
        assert_eq!(shapes[0].bodies.len(), 3);
    }
}
