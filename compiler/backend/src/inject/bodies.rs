//! Site bodies: each probe's body for one attach site, verified again with the site's
//! known context bytes ([`Verified::with_known`]) and lowered ([`ptx::inline_body`]), so
//! computations on the site's constant fields (kernel, site, access size and kind) fold
//! away. [`weave`](super::weave) calls the verifier and the backend through
//! [`SiteBodies`] itself; nothing between them is text or a string error.

use super::weave::SiteContext;
use crate::back::ptx;
use crate::back::ptx::fuse;
use crate::isa::table::Kind;
use bpf2ptx_verifier::{Facts, KnownBytes, Regions, Rejected, Verified};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use thiserror::Error;

/// Why a probe's body for a site could not be made.
#[derive(Debug, Error)]
pub enum BodyError {
    /// The verifier rejected the program with the site's known context bytes.
    #[error("{file}: {rejected}")]
    Rejected {
        /// The probe file.
        file: String,
        /// The program and every violation.
        rejected: Rejected,
    },
    /// The backend cannot lower the program's body.
    #[error("{file}: {source}")]
    Lower {
        /// The probe file.
        file: String,
        /// The backend error (names the program and instruction).
        source: ptx::Error,
    },
}

/// How much of fusion ([`fuse`]) the bodies of one kernel's sites get: the weaver decides
/// per kernel, where the module's options allow fusion at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fusion {
    /// Today's lowering: every add an atomic at its site, nothing forwarded.
    Off,
    /// Fused, except that adds to the maps in `atomic` (indices) stay atomics at their
    /// sites: the kernel would not gain by accumulating them.
    On {
        /// Maps whose adds are not accumulated in this kernel.
        atomic: BTreeSet<u32>,
    },
}

impl Fusion {
    /// Everything fusion may do.
    pub fn full() -> Self {
        Fusion::On {
            atomic: BTreeSet::new(),
        }
    }
}

/// Site bodies for the programs of one verified probe object, each verified and lowered
/// once per set of sites on which the verifier cannot tell the contexts apart. Probe `k`
/// of the list [`weave`](super::weave) gets is program `k` of the object.
///
/// The verifier's run for a program is a deterministic function of the program and its
/// entry, and the entry's known context bytes enter it only where a load from the
/// context at one constant offset asks for the bytes it reads ([`KnownBytes::value`]).
/// Every such load is an instruction whose facts say it touches the context
/// ([`Regions::CTX`]) at that offset on every path (`ctx_offset`). So when a run's facts
/// name a constant offset for every instruction that touches the context, the bytes
/// those loads read are all the run consulted: a site whose context has the same known
/// mask and the same bytes there gets the same run step by step, hence the same facts
/// and the same body. When some context access has no constant offset, nothing is shared
/// and each such site is verified on its own.
pub struct SiteBodies<'a> {
    verified: &'a Verified<'a>,
    opts: &'a ptx::Options,
    /// The maps fusion may touch, from every program's facts ([`fuse::eligible`]).
    eligible: fuse::Eligible,
    /// Per program, the shapes seen: known mask and the byte ranges its loads read, with
    /// the bodies by the bytes in those ranges.
    shapes: Mutex<HashMap<usize, Vec<Shape>>>,
}

/// The context bytes a verification consulted, and the bodies of the sites that agree on
/// them.
struct Shape {
    mask: u128,
    /// How the bodies are fused into their kernel.
    fusion: Fusion,
    /// `start..end` byte ranges into [`KnownBytes::bytes`].
    ranges: Vec<(usize, usize)>,
    bodies: HashMap<Vec<u8>, ptx::InlineBody>,
}

impl Shape {
    /// The known bytes in this shape's ranges.
    fn key(&self, known: &KnownBytes) -> Vec<u8> {
        let b = &known.bytes;
        let mut k = Vec::new();
        for &(s, t) in &self.ranges {
            k.extend_from_slice(&b[s.min(b.len())..t.min(b.len())]);
        }
        k
    }
}

impl<'a> SiteBodies<'a> {
    /// An empty cache for the programs of `verified`, lowered with the probe module's
    /// options `opts` (so maps and sharding agree with the module the bodies link
    /// against).
    pub fn new(verified: &'a Verified<'a>, opts: &'a ptx::Options) -> Self {
        SiteBodies {
            verified,
            opts,
            eligible: fuse::eligible(verified, opts),
            shapes: Mutex::new(HashMap::new()),
        }
    }

    /// Program `k`'s body for a site with context `ctx`, fused into its kernel
    /// ([`fuse::plan`]) as far as the options and `fusion` allow (the weaver says
    /// [`Fusion::Off`] for a kernel whose own registers could collide with fusion's).
    pub fn get(
        &self,
        k: usize,
        ctx: &SiteContext,
        fusion: &Fusion,
    ) -> Result<ptx::InlineBody, BodyError> {
        let known = known_bytes(ctx);
        let fusion = if self.opts.fuse { fusion } else { &Fusion::Off };
        let mut shapes = self.shapes.lock().unwrap_or_else(|e| e.into_inner());
        let list = shapes.entry(k).or_default();
        for shape in list
            .iter()
            .filter(|s| s.mask == known.mask && s.fusion == *fusion)
        {
            if let Some(body) = shape.bodies.get(&shape.key(&known)) {
                return Ok(body.clone());
            }
        }
        let eligible = match fusion {
            Fusion::Off => None,
            Fusion::On { atomic } if atomic.is_empty() => Some(Cow::Borrowed(&self.eligible)),
            Fusion::On { atomic } => {
                let mut e = self.eligible.clone();
                for &m in atomic {
                    if let Some(a) = e.accumulate.get_mut(m as usize) {
                        *a = false;
                    }
                }
                Some(Cow::Owned(e))
            }
        };
        let (body, facts) = site_body(self.verified, self.opts, k, known, eligible.as_deref())?;
        if let Some(ranges) = ctx_reads(self.verified, k, &facts) {
            let at = match list
                .iter()
                .position(|s| s.mask == known.mask && s.ranges == ranges && s.fusion == *fusion)
            {
                Some(i) => i,
                None => {
                    list.push(Shape {
                        mask: known.mask,
                        ranges,
                        fusion: fusion.clone(),
                        bodies: HashMap::new(),
                    });
                    list.len() - 1
                }
            };
            let shape = &mut list[at];
            let key = shape.key(&known);
            shape.bodies.insert(key, body.clone());
        }
        Ok(body)
    }
}

impl SiteBodies<'_> {
    /// A block that adds the accumulators `acc` to their map words (and zeroes them),
    /// under the statement's `guard` when there is one ([`fuse::flush_text`] for the
    /// probe module's maps and options).
    pub fn flush(&self, acc: &[fuse::AccSlot], guard: Option<&super::ptx::Guard>) -> String {
        let guard = guard.map(|g| (g.negated, g.register.as_str()));
        fuse::flush_text(self.verified.object(), self.opts, acc, guard)
    }
}

/// The context bytes a site knows, as the verifier's entry takes them.
fn known_bytes(ctx: &SiteContext) -> KnownBytes {
    let mut known = KnownBytes::default();
    known.bytes[..ctx.bytes.len()].copy_from_slice(&ctx.bytes);
    known.mask = ctx.known;
    known
}

/// Program `k` verified again with the context bytes `known` and lowered (fused into its
/// kernel where `eligible` names maps fusion may touch), with the facts of that run.
fn site_body(
    verified: &Verified<'_>,
    opts: &ptx::Options,
    k: usize,
    known: KnownBytes,
    eligible: Option<&fuse::Eligible>,
) -> Result<(ptx::InlineBody, Facts), BodyError> {
    let file = || verified.object().file.clone();
    let site = verified
        .with_known(k, known)
        .map_err(|rejected| BodyError::Rejected {
            file: file(),
            rejected,
        })?;
    let plan = eligible.map_or_else(fuse::SitePlan::default, |e| fuse::plan(&site, opts, k, e));
    let body = ptx::inline_body(&site, opts, k, &plan).map_err(|source| BodyError::Lower {
        file: file(),
        source,
    })?;
    Ok((body, site.facts(k).clone()))
}

/// The context byte ranges program `k`'s loads read in the run that gave `facts`: one
/// per instruction that touches the context, each a load at a constant offset. `None`
/// when some context access is not such a load (its bytes are then not known).
fn ctx_reads(verified: &Verified<'_>, k: usize, facts: &Facts) -> Option<Vec<(usize, usize)>> {
    let insns = &verified.object().programs.get(k)?.insns;
    let mut out = Vec::new();
    for (i, r) in facts.regions.iter().enumerate() {
        if !r.touches(Regions::CTX) {
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
    use crate::inject::attach::{Attach, Point, KERNEL_CTX_SIZE, MEM_CTX_SIZE};
    use crate::program::Object;
    use bpf2ptx_verifier::Entry;
    use std::path::Path;

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

    /// The probes of an injection test's probe object (its programs with attach points).
    fn probes(name: &str) -> Object {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/inject/probes");
        let path = dir.join(format!("{name}.bpf.o"));
        let mut obj = bpf2ptx_compiler::front::load_path(&path).expect("loads");
        obj.programs
            .retain(|p| Attach::from_section(&p.section).is_some());
        obj
    }

    /// Every program verified under its attach point's context, as the CLI does.
    fn verify(obj: &Object) -> Verified<'_> {
        Verified::new(obj, |k| {
            let a = Attach::from_section(&obj.programs[k].section).expect("an attach point");
            Entry::probe_ctx(a.point.ctx_size())
        })
        .expect("verifies")
    }

    /// Every body the cache gives is the one verifying and lowering that site alone gives,
    /// for every program of the injection tests' probes.
    #[test]
    fn cached_site_bodies_are_the_sites_own() {
        let opts = ptx::Options {
            fuse: true,
            ..Default::default()
        };
        let mut checked = 0;
        let mut fused = 0;
        for name in ["counters", "memcapture", "plain_counters", "ring_exit"] {
            let obj = probes(name);
            let verified = verify(&obj);
            let cache = SiteBodies::new(&verified, &opts);
            let eligible = fuse::eligible(&verified, &opts);
            for (k, p) in obj.programs.iter().enumerate() {
                let a = Attach::from_section(&p.section).expect("an attach point");
                let ctxs = contexts(a.point);
                // Twice, so the second round is served from the cache; fused and not.
                for ctx in ctxs.iter().chain(ctxs.iter().rev()) {
                    for f in [false, true] {
                        let e = f.then_some(&eligible);
                        let (own, _) =
                            site_body(&verified, &opts, k, known_bytes(ctx), e).expect("lowers");
                        let fusion = if f { Fusion::full() } else { Fusion::Off };
                        let cached = cache.get(k, ctx, &fusion).expect("lowers");
                        assert_eq!(own, cached, "{name}: program {}, fused {f}", p.name);
                        fused += usize::from(!own.accumulators.is_empty());
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 0 && fused > 0, "{checked} bodies, {fused} fused");
    }

    /// A probe that reads its site (not its kernel) and branches on it: sites that differ
    /// in the site get their own bodies, sites that differ only in the kernel share one.
    #[test]
    fn a_probe_that_reads_its_site_gets_a_body_per_site() {
        let mut obj = probes("counters");
        let k = obj
            .programs
            .iter()
            .position(|p| p.section == "gpu/entry/*")
            .expect("counters has an entry probe");
        let code = "r2 = *(u32 *)(r1 + 4)\nr0 = 0\nif r2 > 100 goto +1\nr0 = 1\nexit\n";
        let p = &mut obj.programs[k];
        p.insns = bpf2ptx_compiler::isa::asm::assemble(code)
            .expect("assembles")
            .insns;
        p.funcs.truncate(1);
        p.relocs.clear();
        p.lines.clear();
        let opts = ptx::Options::default();
        let verified = verify(&obj);
        let cache = SiteBodies::new(&verified, &opts);
        let ctxs = contexts(Point::Entry);
        for ctx in ctxs.iter().chain(ctxs.iter().rev()) {
            let (own, _) = site_body(&verified, &opts, k, known_bytes(ctx), None).expect("lowers");
            assert_eq!(own, cache.get(k, ctx, &Fusion::Off).expect("lowers"));
        }
        let shapes = cache.shapes.lock().expect("not poisoned");
        let shapes = &shapes[&k];
        assert_eq!(shapes.len(), 1);
        assert_eq!(shapes[0].ranges, vec![(4, 8)]);
        // Sites 12, 13 and 400.
        assert_eq!(shapes[0].bodies.len(), 3);
    }
}
