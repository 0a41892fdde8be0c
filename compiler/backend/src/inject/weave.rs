//! Weaving: calls to probe functions inserted into an application's kernels at their
//! attach points, and the probe code merged into (or declared in) the module.
//!
//! Each attach site becomes one nested block inserted before the site's statement:
//!
//! ```text
//! {
//! .reg .b64 %bpf2ptx_d<2>; .reg .b32 %bpf2ptx_w<3>; .reg .pred %bpf2ptx_p;
//! @!%p1 bra $L__bpf2ptx_7;             // the instruction's own guard, when it has one
//! <granularity test>                   // warp: lowest lane of activemask; block: tid 0
//! <fill the kernel's .local context>   // st.local into bpf2ptx_ctx
//! { .param ...; call (bpf2ptx_ret), <probe>, (ctx, 0, 0, 0, 0); }   // each probe
//! $L__bpf2ptx_7:
//! }
//! ```
//!
//! The block's registers are its own (PTX scoping), so the kernel's registers, predicates
//! and results are never touched; the only state the block shares with the kernel is the
//! `.local` context (80 bytes, the largest context) declared once at the top of each
//! instrumented kernel.

use super::access::{self, mem_ctx};
use super::attach::{Attach, Point, KERNEL_CTX_SIZE, MEM_CTX_SIZE};
use super::bodies::{BodyError, Fusion, SiteBodies};
use super::ptx::{
    self, EditError, FunctionKind, Guard, ItemKind, Module, Operand, ParseError, Statement,
    StatementKind,
};
use crate::back::ptx::fuse::{self, AccSlot, FwSlot};
use crate::back::ptx::Granularity;
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};

/// A probe to weave: the PTX function of one program and where it attaches.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The program's PTX function (`.func (.param .b64) NAME(5 x .param .b64)`).
    pub symbol: String,
    /// Its attach point.
    pub attach: Attach,
    /// Whether running it can be observed (see [`super::attach::has_effects`]); a probe
    /// without effects is not called.
    pub effects: bool,
    /// Whether running it may end the thread ([`super::attach::may_end_thread`]): how a
    /// per-warp site rejoins its lanes afterwards, and (with fused bodies in the kernel)
    /// the accumulators are added to their maps before its site.
    pub may_end_thread: bool,
    /// Whether running it may write a ring or printk record ([`super::attach::may_output`]),
    /// which a host reads while the kernel runs: with fused bodies in the kernel, the
    /// accumulators are added to their maps before its site.
    pub may_output: bool,
}

/// The context of one attach site as the probe will see it: the bytes of
/// `struct bpf2ptx_kernel_ctx` / `struct bpf2ptx_mem_ctx`, and which of them are known when
/// the kernel is built (all but a memory access's address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteContext {
    /// Little-endian field bytes.
    pub bytes: [u8; MEM_CTX_SIZE as usize],
    /// Bit `k`: byte `k` is known.
    pub known: u128,
    /// Bytes the context has.
    pub size: u32,
}

/// Where the probes' code comes from.
#[derive(Clone, Copy)]
pub enum Linkage<'a> {
    /// The probe module's PTX (what `bpf2ptx FILE -o` writes), merged into the output;
    /// with `bodies`, each site gets the probe's body inlined instead of a call, verified
    /// and lowered for the site by [`SiteBodies`] (probe `k` is program `k` of its
    /// verified object).
    Merge {
        /// The probe module.
        module: &'a str,
        /// Site-specific bodies, or `None` for calls.
        bodies: Option<&'a SiteBodies<'a>>,
    },
    /// The output declares each probe `.extern .func`; the probe module is linked with
    /// it later (cuLink, nvlink -rdc).
    Extern,
}

/// One attach site that got calls.
#[derive(Debug, Clone, Serialize)]
pub struct Site {
    /// The `site` value the probe sees: the 1-based line of the site in the input PTX.
    pub site: u32,
    /// The attach point.
    pub point: Point,
    /// The kernel's PTX name.
    pub kernel: String,
    /// The `kernel` value the probe sees: the kernel's index among the input's kernels.
    pub kernel_index: u32,
    /// The probe functions called, in order.
    pub probes: Vec<String>,
    /// The instruction at the site (entry: the kernel's first statement).
    pub instruction: String,
    /// `file:line` of the last `.loc` before the site, when the PTX has line info.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The result of [`weave`].
#[derive(Debug, Clone)]
pub struct Woven {
    /// The output PTX. Byte-identical to the input when no probe matched.
    pub text: String,
    /// Every site that got calls.
    pub sites: Vec<Site>,
    /// Probes that matched a kernel but have no effects, so were not called.
    pub elided: Vec<String>,
}

/// Why weaving failed; nothing is written.
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    /// The application PTX does not parse.
    #[error("application PTX: {0}")]
    Parse(#[from] ParseError),
    /// The probe PTX does not parse (a bug: it is the compiler's own output).
    #[error("probe PTX: {0}")]
    ProbeParse(ParseError),
    /// Probes are 64-bit code.
    #[error("application PTX has .address_size {0}; probes need 64")]
    AddressSize(u32),
    /// A memory access whose address register is not declared in the kernel.
    #[error("kernel `{kernel}`, line {line}: address register `{register}` has no 32- or 64-bit declaration in the kernel")]
    Register {
        /// The kernel.
        kernel: String,
        /// The line of the access.
        line: u32,
        /// The register.
        register: String,
    },
    /// A probe's body for a site could not be made.
    #[error("probe `{probe}` at line {site}: {source}")]
    Body {
        /// The probe.
        probe: String,
        /// The site.
        site: u32,
        /// Why: the verifier rejected it for the site, or the backend cannot lower it
        /// (boxed: it carries the diagnostics).
        source: Box<BodyError>,
    },
    /// A memory access whose address operand the injector does not understand.
    #[error("kernel `{kernel}`, line {line}: address operand `{operand}` is not [reg+imm], [symbol+imm] or [imm]")]
    Address {
        /// The kernel.
        kernel: String,
        /// The line of the access.
        line: u32,
        /// The operand as written.
        operand: String,
    },
    /// The probe module and the application define the same symbol.
    #[error("symbol `{0}` is defined by both the application and the probes")]
    Clash(String),
    /// An instruction whose operands are not what the PTX ISA says for its opcode, so
    /// its site cannot be filled (nothing is guessed: access/mod.rs).
    #[error("kernel `{kernel}`, line {line}: `{instruction}`: {reason}")]
    Operands {
        /// The kernel.
        kernel: String,
        /// The line of the instruction.
        line: u32,
        /// Its opcode.
        instruction: String,
        /// What is wrong.
        reason: String,
    },
    /// An edit was refused (a bug).
    #[error(transparent)]
    Edit(#[from] EditError),
}

/// Inserts calls to `probes` into the kernels of `app` they attach to; `granularity` is
/// the default for probes whose section does not name one. When no probe (with effects)
/// matches a kernel, the output is `app` unchanged.
pub fn weave(
    app: &str,
    probes: &[Probe],
    linkage: Linkage<'_>,
    granularity: Granularity,
) -> Result<Woven, InjectError> {
    weave_parsed(ptx::parse(app)?, app, probes, linkage, granularity)
}

/// [`weave`] of `app` already parsed (`module` is `ptx::parse(app)`).
pub fn weave_parsed(
    mut module: Module,
    app: &str,
    probes: &[Probe],
    linkage: Linkage<'_>,
    granularity: Granularity,
) -> Result<Woven, InjectError> {
    let bodies = match linkage {
        Linkage::Merge { bodies, .. } => bodies,
        Linkage::Extern => None,
    };
    let kernels: Vec<String> = module
        .functions()
        .filter(|f| f.kind() == FunctionKind::Entry && f.has_body())
        .map(|f| f.name().to_string())
        .collect();
    let (plans, elided) = plan(&kernels, probes, granularity);
    if plans.is_empty() {
        return Ok(Woven {
            text: app.to_string(),
            sites: Vec::new(),
            elided,
        });
    }
    let size = module.address_size().unwrap_or(32);
    if size != 64 {
        return Err(InjectError::AddressSize(size));
    }
    let mut w = Weaver {
        probes,
        bodies,
        files: file_table(&module),
        sites: Vec::new(),
        labels: 0,
        uses_activemask: false,
        called: BTreeSet::new(),
    };
    for plan in &plans {
        for (_, list) in &plan.points {
            for (p, g) in list {
                w.uses_activemask |= *g == Granularity::Warp;
                w.called.insert(p.symbol.clone());
            }
        }
    }
    let merged = match linkage {
        Linkage::Merge { module: text, .. } => Some(merged_probes(&module, text)),
        Linkage::Extern => None,
    };
    let (probe_text, probe_version, probe_target) = match merged {
        Some(Ok(m)) => m,
        None => (extern_decls(&w.called), None, None),
        Some(Err(e)) => {
            // A kernel's error is reported before the probes' own.
            for_each_planned(
                module.take_items(),
                &plans,
                |f, plan| w.instrument(f, plan),
                |_, _| {},
            )?;
            return Err(e);
        }
    };
    let mut version = module.version().and_then(parse_version).unwrap_or((1, 0));
    if let Some(v) = probe_version {
        version = version.max(v);
    }
    if w.uses_activemask {
        version = version.max((6, 2));
    }
    let header_end = module
        .items()
        .iter()
        .rposition(|i| matches!(i.kind(), ItemKind::Directive(d) if is_header(&d.name)));
    // Each kernel is instrumented just before it is written, and each item dropped once
    // written: the module is never held whole both parsed and written.
    let mut text = String::new();
    for_each_planned(
        module.take_items(),
        &plans,
        |f, plan| w.instrument(f, plan),
        |i, item| {
            write_item(&mut text, &item, version, probe_target.as_deref());
            if Some(i) == header_end {
                text.push_str(&probe_text);
            }
        },
    )?;
    if header_end.is_none() {
        text.insert_str(0, &probe_text);
    }
    text.push_str(module.trailing());
    let mut sites = w.sites;
    sites.sort_by_key(|s| (s.kernel_index, s.site));
    Ok(Woven {
        text,
        sites,
        elided,
    })
}

/// The probes one kernel gets, by attach point, each with its granularity.
struct Plan<'p> {
    /// Index among the module's kernels (the context's `kernel`).
    index: u32,
    /// PTX name.
    kernel: String,
    points: Vec<(Point, Vec<(&'p Probe, Granularity)>)>,
}

/// Which probes each kernel gets; probes without effects are left out (and listed).
fn plan<'p>(
    kernels: &[String],
    probes: &'p [Probe],
    granularity: Granularity,
) -> (Vec<Plan<'p>>, Vec<String>) {
    let mut elided = BTreeSet::new();
    let mut plans = Vec::new();
    for (k, name) in kernels.iter().enumerate() {
        let mut points = Vec::new();
        for point in [Point::Entry, Point::Exit, Point::Mem, Point::Insn] {
            let mut list = Vec::new();
            for p in probes
                .iter()
                .filter(|p| p.attach.point == point && p.attach.matches(name))
            {
                if p.effects {
                    list.push((p, p.attach.granularity.unwrap_or(granularity)));
                } else {
                    elided.insert(p.symbol.clone());
                }
            }
            if point == Point::Insn {
                // One entry per opcode pattern, so every probe of an entry has its sites.
                let mut patterns = Vec::new();
                for (p, _) in &list {
                    if !patterns.contains(&&p.attach.opcode) {
                        patterns.push(&p.attach.opcode);
                    }
                }
                for pat in patterns {
                    let same: Vec<_> = list
                        .iter()
                        .filter(|(p, _)| &p.attach.opcode == pat)
                        .copied()
                        .collect();
                    points.push((point, same));
                }
            } else if !list.is_empty() {
                points.push((point, list));
            }
        }
        if !points.is_empty() {
            plans.push(Plan {
                index: k as u32,
                kernel: name.clone(),
                points,
            });
        }
    }
    (plans, elided.into_iter().collect())
}

/// State across the kernels of one [`weave`].
struct Weaver<'a> {
    probes: &'a [Probe],
    bodies: Option<&'a SiteBodies<'a>>,
    files: HashMap<String, String>,
    sites: Vec<Site>,
    /// Skip labels made so far (each block gets its own).
    labels: usize,
    uses_activemask: bool,
    called: BTreeSet<String>,
}

impl Weaver<'_> {
    /// Inserts the site blocks of `plan` into kernel `f`, and the context declaration;
    /// with fused bodies, the kernel's accumulators and forwarding registers, their
    /// zeroing at entry, and the flushes of the accumulators where a thread may leave.
    fn instrument(&mut self, f: &mut ptx::Function, plan: &Plan<'_>) -> Result<(), InjectError> {
        let regs = register_widths(f.body());
        // Fusion's registers are kernel-scope names under `%bpf2ptx_`: a kernel that
        // declares such a name itself (at any depth, where it would shadow ours) keeps the
        // unfused bodies.
        let fusion = if declares_bpf2ptx_register(f.body()) {
            Fusion::Off
        } else {
            Fusion::full()
        };
        // First every site's bodies, so the accumulators of the whole kernel are known
        // before any flush is written.
        let mut blocks: Vec<SiteBlocks<'_>> = Vec::new();
        for (point, list) in &plan.points {
            for at in plan_sites(f.body(), *point, list) {
                let st = f.body().get(at);
                let insn = st.and_then(|s| s.as_instruction());
                let line = match (point, st) {
                    (Point::Entry, _) | (_, None) => f.line(),
                    (_, Some(s)) => s.line(),
                };
                let (fill, ctx) = match point {
                    Point::Entry | Point::Exit => kernel_ctx(plan.index, line),
                    Point::Mem => {
                        let i = insn.expect("memory sites are instructions");
                        mem_ctx(i, &regs, &plan.kernel, plan.index, line)?
                    }
                    Point::Insn => {
                        let i = insn.expect("instruction sites are instructions");
                        access::insn_ctx(i, plan.index, line)
                    }
                };
                // An entry site precedes the kernel's first instruction, whose guard is
                // its own business; other sites run under their instruction's guard.
                let guard = match point {
                    Point::Entry => None,
                    _ => insn.and_then(|i| i.guard.clone()),
                };
                let mut probes = Vec::new();
                for (p, g) in list {
                    probes.push((*p, *g, self.body(p, &ctx, line, &fusion)?));
                }
                self.sites.push(Site {
                    site: line,
                    point: *point,
                    kernel: plan.kernel.clone(),
                    kernel_index: plan.index,
                    probes: list.iter().map(|(p, _)| p.symbol.clone()).collect(),
                    instruction: st.map_or_else(String::new, |s| s.text()),
                    source: source_of(f.body(), at, &self.files),
                });
                blocks.push(SiteBlocks {
                    at,
                    point: *point,
                    guard,
                    fill,
                    ctx,
                    line,
                    probes,
                });
            }
        }
        let collect = |blocks: &[SiteBlocks<'_>]| {
            let mut acc: BTreeSet<AccSlot> = BTreeSet::new();
            let mut fw: BTreeSet<FwSlot> = BTreeSet::new();
            for b in blocks {
                for (_, _, body) in &b.probes {
                    if let Some(body) = body {
                        acc.extend(body.accumulators.iter().copied());
                        fw.extend(body.forwards.iter().copied());
                    }
                }
            }
            (acc, fw)
        };
        let (mut acc, mut fw) = collect(&blocks);
        // Accumulating pays where a site's adds repeat in a thread: a map none of whose
        // accumulating sites is in a loop keeps its atomics (ptxas combines a warp's
        // atomics to one address into one, which costs no more than the flush).
        let atomic = once_only_maps(f.body(), &blocks);
        if !atomic.is_empty() {
            self.relower(&mut blocks, &Fusion::On { atomic })?;
            (acc, fw) = collect(&blocks);
        }
        // Past this many accumulators the kernel would trade occupancy (two registers each,
        // live through the whole kernel) for atomics: it keeps the unfused bodies.
        if acc.len() > fuse::MAX_ACCUMULATORS {
            self.relower(&mut blocks, &Fusion::Off)?;
            (acc, fw) = collect(&blocks);
        }
        let acc: Vec<AccSlot> = acc.into_iter().collect();
        let fw: Vec<FwSlot> = fw.into_iter().collect();
        let flush = |guard: Option<&Guard>| -> String {
            match self.bodies {
                Some(b) if !acc.is_empty() => b.flush(&acc, guard),
                _ => String::new(),
            }
        };
        // (statement index, phase, text): at one index the texts go in by phase, top to
        // bottom (declarations, zeroing, entry sites, other sites, flushes).
        let mut edits: Vec<(usize, Phase, String)> = Vec::new();
        for b in &blocks {
            let mut text = String::new();
            // Probes of one site may differ in granularity: one block each.
            for (p, g, body) in &b.probes {
                // Output a host may read while the kernel runs, or a probe that may end
                // its thread: the accumulated adds reach the maps before it.
                if p.may_output || p.may_end_thread {
                    text.push_str(&flush(None));
                }
                self.labels += 1;
                let edge = matches!(b.point, Point::Entry | Point::Exit);
                text.push_str(&site_block(
                    self.labels,
                    edge,
                    b.guard.as_ref(),
                    *g,
                    &b.fill,
                    p,
                    body.as_ref(),
                ));
            }
            // An `.aligned` instruction's lanes wait for each other after the probes.
            if let Some(i) = f.body().get(b.at).and_then(|s| s.as_instruction()) {
                let may_end = b.probes.iter().any(|(p, _, _)| p.may_end_thread);
                text = access::rejoin_aligned(i, may_end, text);
            }
            let phase = if b.point == Point::Entry {
                Phase::Entry
            } else {
                Phase::Site
            };
            edits.push((b.at, phase, text));
        }
        let mut decls = format!(".local .align 8 .b8 bpf2ptx_ctx[{MEM_CTX_SIZE}];\n");
        if !acc.is_empty() || !fw.is_empty() {
            self.uses_activemask |= !acc.is_empty();
            let (decl, init) = fuse::kernel_registers(&acc, &fw);
            decls.push_str(&decl);
            let entry = attach_sites(f.body(), Point::Entry)[0];
            edits.push((entry, Phase::Init, init));
        }
        edits.push((0, Phase::Decl, decls));
        if !acc.is_empty() {
            for at in flush_sites(f.body()) {
                let guard = f
                    .body()
                    .get(at)
                    .and_then(|s| s.as_instruction())
                    .and_then(|i| i.guard.as_ref());
                edits.push((at, Phase::Flush, flush(guard)));
            }
        }
        // Later positions first, so earlier indices stay valid.
        edits.sort_by_key(|e| (std::cmp::Reverse(e.0), e.1));
        // Applied as text, one insertion per position: parsing the inserted statements
        // into the body would keep every token of every site block for the whole run.
        let mut rest = &edits[..];
        while let Some((at, _, _)) = rest.first() {
            let n = rest.iter().take_while(|e| e.0 == *at).count();
            let (group, tail) = rest.split_at(n);
            rest = tail;
            let texts: Vec<&str> = group.iter().map(|e| e.2.as_str()).collect();
            if !f.insert_text_before(*at, &texts)? {
                // One by one, each above the one before: last first.
                for (at, _, text) in group.iter().rev() {
                    f.insert_before(*at, text)?;
                }
            }
        }
        Ok(())
    }

    /// Every body of `blocks` made again under `fusion`.
    fn relower(&self, blocks: &mut [SiteBlocks<'_>], fusion: &Fusion) -> Result<(), InjectError> {
        for b in blocks {
            let ctx = b.ctx;
            for (p, _, body) in &mut b.probes {
                *body = self.body(p, &ctx, b.line, fusion)?;
            }
        }
        Ok(())
    }

    /// Probe `p`'s body for a site with context `ctx`, when bodies are inlined (fused into
    /// the kernel as far as the options and `fusion` allow).
    fn body(
        &self,
        p: &Probe,
        ctx: &SiteContext,
        line: u32,
        fusion: &Fusion,
    ) -> Result<Option<crate::back::ptx::InlineBody>, InjectError> {
        let Some(make) = self.bodies else {
            return Ok(None);
        };
        let index = self
            .probes
            .iter()
            .position(|q| std::ptr::eq(q, p))
            .expect("a probe of the list");
        make.get(index, ctx, fusion)
            .map(Some)
            .map_err(|source| InjectError::Body {
                probe: p.symbol.clone(),
                site: line,
                source: Box::new(source),
            })
    }
}

/// The maps the bodies of `blocks` accumulate whose every accumulating site runs at most
/// once per thread: none lies in a loop of `body` ([`loop_spans`]).
fn once_only_maps(body: &[Statement], blocks: &[SiteBlocks<'_>]) -> BTreeSet<u32> {
    let spans = loop_spans(body);
    let in_loop = |at: usize| match &spans {
        Some(spans) => spans.iter().any(|&(from, to)| from <= at && at <= to),
        None => true,
    };
    let mut accumulated = BTreeSet::new();
    let mut looped = BTreeSet::new();
    for b in blocks {
        for (_, _, body) in &b.probes {
            for a in body.iter().flat_map(|body| &body.accumulators) {
                accumulated.insert(a.map);
                if in_loop(b.at) {
                    looped.insert(a.map);
                }
            }
        }
    }
    accumulated.difference(&looped).copied().collect()
}

/// The statement spans `(target, branch)` of the backward branches of a kernel body, or
/// `None` when it branches through a table (`brx.idx`), whose targets are not read here.
///
/// Every cycle of the body's control flow covers a statement `s` only inside one of these
/// spans: follow the cycle from `s`; falling through moves forward, so the first step
/// back to `s` or before it is a branch from `s` or later to a label at `s` or earlier.
/// A statement in no span therefore runs at most once per thread.
fn loop_spans(body: &[Statement]) -> Option<Vec<(usize, usize)>> {
    let mut labels: HashMap<&str, Vec<usize>> = HashMap::new();
    for (k, st) in body.iter().enumerate() {
        if let StatementKind::Label(name) = st.kind() {
            labels.entry(name.as_str()).or_default().push(k);
        }
    }
    let mut spans = Vec::new();
    for (k, st) in body.iter().enumerate() {
        let Some(i) = st.as_instruction() else {
            continue;
        };
        match i.opcode.base.as_str() {
            "brx" => return None,
            "bra" => {}
            _ => continue,
        }
        for op in &i.operands {
            if let Operand::Symbol(target) = op {
                for &at in labels.get(target.as_str()).into_iter().flatten() {
                    if at <= k {
                        spans.push((at, k));
                    }
                }
            }
        }
    }
    Some(spans)
}

/// One attach site's probes with their bodies, before the kernel's texts are made.
struct SiteBlocks<'p> {
    at: usize,
    point: Point,
    guard: Option<Guard>,
    fill: String,
    ctx: SiteContext,
    line: u32,
    probes: Vec<(&'p Probe, Granularity, Option<crate::back::ptx::InlineBody>)>,
}

/// Where an inserted text goes among the texts at one statement, top to bottom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// The kernel-scope declarations (context, fusion's registers).
    Decl,
    /// Fusion's registers zeroed, before any probe can use them.
    Init,
    /// The entry probes' blocks.
    Entry,
    /// Exit and memory probes' blocks.
    Site,
    /// The accumulators added to their maps: after the exit probes (which may add to
    /// them), right before the statement that ends the thread.
    Flush,
}

/// Whether the body declares a register whose name starts with `%bpf2ptx_` (fusion's
/// kernel-scope registers would collide with it or be shadowed by it).
fn declares_bpf2ptx_register(body: &[ptx::Statement]) -> bool {
    body.iter().any(|s| match s.kind() {
        StatementKind::Declaration(d) => d.vars.iter().any(|v| v.name.starts_with("%bpf2ptx_")),
        _ => false,
    })
}

/// Statement indices where a thread's accumulators must reach their maps: every `ret` and
/// `exit` (the thread ends), every `trap` (the launch fails, but what was added stays
/// visible to a host that reads the maps), every `call` (a function the kernel calls may
/// end the thread with `exit` or `trap`, and sites inside it do not share the kernel's
/// registers), and the closing brace when the kernel can run off its end.
fn flush_sites(body: &[ptx::Statement]) -> Vec<usize> {
    let mut v = attach_sites(body, Point::Exit);
    v.extend(body.iter().enumerate().filter_map(|(k, s)| {
        s.as_instruction()
            .is_some_and(|i| matches!(i.opcode.base.as_str(), "trap" | "call"))
            .then_some(k)
    }));
    v.sort_unstable();
    v.dedup();
    v
}

/// Statement indices before which a point's calls go.
fn attach_sites(body: &[ptx::Statement], point: Point) -> Vec<usize> {
    match point {
        // Before the first label or instruction, so a loop back to the kernel's first
        // label does not run the entry probe again.
        Point::Entry => vec![body
            .iter()
            .position(|s| {
                matches!(
                    s.kind(),
                    StatementKind::Instruction(_)
                        | StatementKind::Label(_)
                        | StatementKind::BlockOpen
                )
            })
            .unwrap_or(body.len())],
        Point::Exit => {
            let mut v: Vec<usize> = body
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.as_instruction()
                        .is_some_and(|i| matches!(i.opcode.base.as_str(), "ret" | "exit"))
                })
                .map(|(k, _)| k)
                .collect();
            // A kernel may also end by running off its closing brace.
            let last = body.iter().rev().find_map(|s| s.as_instruction());
            let ends = last.is_some_and(|i| {
                i.guard.is_none()
                    && matches!(i.opcode.base.as_str(), "ret" | "exit" | "bra" | "trap")
            });
            if !ends {
                v.push(body.len());
            }
            v
        }
        Point::Mem => body
            .iter()
            .enumerate()
            .filter(|(_, s)| s.as_instruction().is_some_and(access::is_mem_site))
            .map(|(k, _)| k)
            .collect(),
        // Instruction sites come from their opcode pattern ([`plan_sites`]).
        Point::Insn => Vec::new(),
    }
}

/// The sites of one entry of a plan: its point's ([`attach_sites`]), or for instruction
/// probes (one opcode pattern per entry, [`plan`]) every instruction the pattern names.
fn plan_sites(body: &[ptx::Statement], point: Point, list: &[(&Probe, Granularity)]) -> Vec<usize> {
    let pattern = list.first().and_then(|(p, _)| p.attach.opcode.as_ref());
    match (point, pattern) {
        (Point::Insn, Some(pat)) => body
            .iter()
            .enumerate()
            .filter(|(_, s)| s.as_instruction().is_some_and(|i| pat.matches(&i.opcode)))
            .map(|(k, _)| k)
            .collect(),
        _ => attach_sites(body, point),
    }
}

/// The context of an entry or exit site: `{ u32 kernel; u32 site; }`, one constant.
fn kernel_ctx(kernel: u32, site: u32) -> (String, SiteContext) {
    let word = u64::from(kernel) | u64::from(site) << 32;
    let mut ctx = SiteContext {
        bytes: [0; MEM_CTX_SIZE as usize],
        known: 0xff,
        size: KERNEL_CTX_SIZE,
    };
    ctx.bytes[..8].copy_from_slice(&word.to_le_bytes());
    (
        format!("mov.u64 %bpf2ptx_c0, {word};\nst.local.u64 [bpf2ptx_ctx], %bpf2ptx_c0;\n"),
        ctx,
    )
}

/// Bit widths of the kernel's `.reg` declarations (1 for `.pred`), by register name or by
/// the prefix of a parameterised declaration (`%rd` of `%rd<12>`).
fn register_widths(body: &[ptx::Statement]) -> HashMap<String, u32> {
    let mut out = HashMap::new();
    for s in body {
        let StatementKind::Declaration(d) = s.kind() else {
            continue;
        };
        if d.space != ".reg" {
            continue;
        }
        let bits = d.attributes.iter().find_map(|a| match a.as_str() {
            ".b64" | ".u64" | ".s64" | ".f64" => Some(64),
            ".b32" | ".u32" | ".s32" | ".f32" => Some(32),
            ".b16" | ".u16" | ".s16" => Some(16),
            ".pred" => Some(1),
            _ => None,
        });
        if let Some(bits) = bits {
            for v in &d.vars {
                out.insert(v.name.clone(), bits);
            }
        }
    }
    out
}

/// One site's block for one probe: guards, the context (registers `%bpf2ptx_c0..2`
/// and the kernel's `.local` copy r1 points to), then the probe's body in a block of its
/// own, or a call.
/// `edge`: the site is at the kernel's entry or an exit, which every thread passes once
/// (`granularity_test`).
fn site_block(
    n: usize,
    edge: bool,
    guard: Option<&Guard>,
    g: Granularity,
    fill: &str,
    probe: &Probe,
    body: Option<&crate::back::ptx::InlineBody>,
) -> String {
    let skip = format!("$L__bpf2ptx_{n}");
    // Lanes whose guard is false leave past the rejoin below, which only the lanes that
    // passed the guard (and elected a leader among themselves) reach: a per-warp
    // `bar.warp.sync` over a mask the skipped lanes never read would be undefined.
    let unguarded = format!("$L__bpf2ptx_{n}_g");
    let mut s = format!(
        "{{\n.reg .b64 %bpf2ptx_d<3>;\n.reg .b64 %bpf2ptx_c<{}>;\n.reg .b32 %bpf2ptx_w<3>;\n.reg .pred %bpf2ptx_p;\n",
        crate::back::ptx::INLINE_CTX_WORDS
    );
    if let Some(gd) = guard {
        let neg = if gd.negated { "" } else { "!" };
        s.push_str(&format!("@{neg}{} bra {unguarded};\n", gd.register));
    }
    s.push_str(&crate::back::ptx::granularity_test(
        g,
        "%bpf2ptx_w",
        "%bpf2ptx_p",
        &skip,
        edge,
    ));
    // Only a probe that reads its context through r1 needs the `.local` copy.
    let in_memory = body.is_none_or(|b| b.ctx_in_memory);
    for line in fill.lines() {
        if in_memory || !line.starts_with("st.local.u64 [bpf2ptx_ctx") {
            s.push_str(line);
            s.push('\n');
        }
    }
    s.push_str(
        "mov.u64 %bpf2ptx_d0, bpf2ptx_ctx;\ncvta.local.u64 %bpf2ptx_d0, %bpf2ptx_d0;\n\
         mov.u64 %bpf2ptx_d1, 0;\n",
    );
    // r5: the lanes word (0, or the warp's arriving lanes for a per-warp probe).
    s.push_str(&crate::back::ptx::lanes_word(
        g,
        "%bpf2ptx_w",
        "%bpf2ptx_d2",
    ));
    s.push('\n');
    match body {
        Some(body) => {
            s.push_str(
                ".reg .b64 %bpf2ptx_a<6>;\n.reg .b64 %bpf2ptx_ret;\nmov.u64 %bpf2ptx_a1, %bpf2ptx_d0;\n\
                 mov.u64 %bpf2ptx_a2, 0;\nmov.u64 %bpf2ptx_a3, 0;\n\
                 mov.u64 %bpf2ptx_a4, 0;\nmov.u64 %bpf2ptx_a5, %bpf2ptx_d2;\n{\n",
            );
            s.push_str(&body.text);
            s.push_str(&format!("}}\n{}:\n", crate::back::ptx::INLINE_END));
        }
        None => s.push_str(&format!(
            "{{\n.param .b64 bpf2ptx_a1;\n.param .b64 bpf2ptx_a2;\n.param .b64 bpf2ptx_a3;\n\
             .param .b64 bpf2ptx_a4;\n.param .b64 bpf2ptx_a5;\n.param .b64 bpf2ptx_ret;\n\
             st.param.b64 [bpf2ptx_a1], %bpf2ptx_d0;\nst.param.b64 [bpf2ptx_a2], %bpf2ptx_d1;\n\
             st.param.b64 [bpf2ptx_a3], %bpf2ptx_d1;\nst.param.b64 [bpf2ptx_a4], %bpf2ptx_d1;\n\
             st.param.b64 [bpf2ptx_a5], %bpf2ptx_d2;\n\
             call (bpf2ptx_ret), {}, (bpf2ptx_a1, bpf2ptx_a2, bpf2ptx_a3, bpf2ptx_a4, bpf2ptx_a5);\n\
             }}\n",
            probe.symbol
        )),
    }
    s.push_str(&format!("{skip}:\n"));
    s.push_str(&crate::back::ptx::granularity_rejoin(
        g,
        "%bpf2ptx_w",
        probe.may_end_thread,
    ));
    if guard.is_some() {
        s.push_str(&format!("{unguarded}:\n"));
    }
    s.push_str("}\n");
    s
}

/// `.file` numbers to paths.
fn file_table(m: &Module) -> HashMap<String, String> {
    m.items()
        .iter()
        .filter_map(|i| match i.kind() {
            ItemKind::Directive(d) if d.name == ".file" => {
                let n = d.args.first()?.clone();
                let path = d.args.get(1)?.trim_matches('"').to_string();
                Some((n, path))
            }
            _ => None,
        })
        .collect()
}

/// `file:line` of the last `.loc` at or before statement `at`.
fn source_of(
    body: &[ptx::Statement],
    at: usize,
    files: &HashMap<String, String>,
) -> Option<String> {
    body.get(..at.min(body.len()))?
        .iter()
        .rev()
        .find_map(|s| match s.kind() {
            StatementKind::Directive(d) if d.name == ".loc" => {
                let file = files.get(d.args.first()?)?;
                Some(format!("{file}:{}", d.args.get(1)?))
            }
            _ => None,
        })
}

type Version = (u32, u32);

fn parse_version(v: &str) -> Option<Version> {
    let (a, b) = v.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The number of a `.target` such as `sm_90a` (90).
pub fn sm_number(t: &str) -> Option<u32> {
    let digits: String = t
        .strip_prefix("sm_")?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The probe module without its header, its `.version`, and its `.target`; refuses a
/// symbol both modules define.
fn merged_probes(
    app: &Module,
    probe_ptx: &str,
) -> Result<(String, Option<Version>, Option<String>), InjectError> {
    let probes = ptx::parse(probe_ptx).map_err(InjectError::ProbeParse)?;
    let defined = |m: &Module| -> BTreeSet<String> {
        m.items()
            .iter()
            .flat_map(|i| match i.kind() {
                ItemKind::Function(f) => vec![f.name().to_string()],
                ItemKind::Declaration(d) => d.vars.iter().map(|v| v.name.clone()).collect(),
                ItemKind::Directive(_) => Vec::new(),
            })
            .collect()
    };
    if let Some(name) = defined(app).intersection(&defined(&probes)).next() {
        return Err(InjectError::Clash(name.clone()));
    }
    let mut text = String::from("\n// ---- bpf2ptx probes ----");
    for item in probes.items() {
        if matches!(item.kind(), ItemKind::Directive(d) if is_header(&d.name)) {
            continue;
        }
        item.write_to(&mut text);
    }
    text.push_str("\n// ---- end of bpf2ptx probes ----");
    let version = probes.version().and_then(parse_version);
    let target = probes.target().and_then(|t| t.first()).cloned();
    Ok((text, version, target))
}

fn is_header(name: &str) -> bool {
    matches!(name, ".version" | ".target" | ".address_size")
}

fn extern_decls(called: &BTreeSet<String>) -> String {
    let mut s = String::from("\n// ---- bpf2ptx probes, linked separately ----");
    for p in called {
        s.push_str(&format!(
            "\n.extern .func (.param .b64 bpf_ret) {p}(.param .b64 bpf_a1, .param .b64 bpf_a2, \
             .param .b64 bpf_a3, .param .b64 bpf_a4, .param .b64 bpf_a5);"
        ));
    }
    s.push_str("\n// ---- end of bpf2ptx probes ----");
    s
}

/// Goes through `items` in order, handing each to `then` (with its index) after
/// `instrument` has edited it when it is a kernel with a plan (plans are in kernel order).
fn for_each_planned(
    items: Vec<ptx::Item>,
    plans: &[Plan<'_>],
    mut instrument: impl FnMut(&mut ptx::Function, &Plan<'_>) -> Result<(), InjectError>,
    mut then: impl FnMut(usize, ptx::Item),
) -> Result<(), InjectError> {
    let mut next = plans.iter().peekable();
    let mut k = 0;
    for (i, mut item) in items.into_iter().enumerate() {
        if let Some(f) = item
            .function_mut()
            .filter(|f| f.kind() == FunctionKind::Entry && f.has_body())
        {
            if let Some(plan) = next.next_if(|p| p.index as usize == k) {
                instrument(f, plan)?;
            }
            k += 1;
        }
        then(i, item);
    }
    debug_assert!(
        next.peek().is_none(),
        "every plan's kernel is in the module"
    );
    Ok(())
}

/// Appends `item` with `.version` and `.target` raised to what the probes need.
fn write_item(out: &mut String, item: &ptx::Item, version: Version, probe_target: Option<&str>) {
    match item.kind() {
        ItemKind::Directive(d) if d.name == ".version" => {
            let old = d.args.first().and_then(|v| parse_version(v));
            if old == Some(version) {
                item.write_to(out);
            } else {
                out.push_str(item.leading_trivia());
                out.push_str(&format!(".version {}.{}", version.0, version.1));
            }
        }
        ItemKind::Directive(d) if d.name == ".target" => {
            let app_sm = d.args.first().and_then(|t| sm_number(t));
            let raise = probe_target.filter(|p| sm_number(p) > app_sm);
            match raise {
                None => item.write_to(out),
                Some(p) => {
                    out.push_str(item.leading_trivia());
                    let mut args = vec![p.to_string()];
                    args.extend(d.args.iter().skip(1).cloned());
                    out.push_str(&format!(".target {}", args.join(", ")));
                }
            }
        }
        _ => item.write_to(out),
    }
}
