//! [`Verified`]: an object whose every program the verifier accepted, with what it proved
//! about each. The backend lowers only this type, so lowering a program nobody verified
//! cannot be written: no other crate can make one.

use crate::{verify_with, Diagnostic, Entry, Facts, KnownBytes, Options};
use bpf2ptx_compiler::program::Object;

/// Every program of an object, accepted by the verifier, each with the entry it was
/// verified under and its [`Facts`].
///
/// The fields are private and the only constructors run the verifier
/// ([`Verified::new`], [`Verified::with_known`]), so holding one is the proof that every
/// program of [`Verified::object`] passed. The backend's entry points
/// (`bpf2ptx_backend::back::ptx::write_string`, `inline_body`, the injector's site
/// bodies) take a `Verified` rather than an `Object` and loose facts: lowering an
/// unverified program, or one with another program's facts, is not representable.
#[derive(Clone, Debug)]
pub struct Verified<'p> {
    obj: &'p Object,
    /// Per program of `obj`, in order: its entry and its facts.
    programs: Vec<(Entry, Facts)>,
    /// The options every program was verified with (a site verified again by
    /// [`Verified::with_known`] gets the same).
    opts: Options,
}

/// Why [`Verified::new`] or [`Verified::with_known`] refused: the first program the
/// verifier rejected, and every violation found in it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("program {name} rejected:\n{}", diagnostics.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct Rejected {
    /// The program's index in the object.
    pub program: usize,
    /// The program's name.
    pub name: String,
    /// Every violation, in instruction order.
    pub diagnostics: Vec<Diagnostic>,
}

impl<'p> Verified<'p> {
    /// Verifies every program `k` of `obj` under `entry(k)` ([`crate::verify`]), in order; the
    /// first program rejected is the error (the later ones are not verified).
    pub fn new(obj: &'p Object, entry: impl FnMut(usize) -> Entry) -> Result<Self, Rejected> {
        Verified::new_with(obj, entry, &Options::default())
    }

    /// [`Verified::new`] with explicit verifier [`Options`] (`--loop-budget`).
    pub fn new_with(
        obj: &'p Object,
        mut entry: impl FnMut(usize) -> Entry,
        opts: &Options,
    ) -> Result<Self, Rejected> {
        let programs = (0..obj.programs.len())
            .map(|k| {
                let e = entry(k);
                let facts = check(obj, k, &e, opts)?;
                Ok((e, facts))
            })
            .collect::<Result<_, Rejected>>()?;
        Ok(Verified {
            obj,
            programs,
            opts: *opts,
        })
    }

    /// The same verification with program `k` verified again under its entry with the
    /// context bytes `known` (an attach site's constant fields): its facts then fold
    /// every computation that depends only on them. The other programs keep theirs.
    pub fn with_known(&self, k: usize, known: KnownBytes) -> Result<Verified<'p>, Rejected> {
        let mut e = self.programs[k].0;
        e.known = known;
        let facts = check(self.obj, k, &e, &self.opts)?;
        let mut programs = self.programs.clone();
        programs[k] = (e, facts);
        Ok(Verified {
            obj: self.obj,
            programs,
            opts: self.opts,
        })
    }

    /// The object verified.
    pub fn object(&self) -> &'p Object {
        self.obj
    }

    /// Program `k`'s facts.
    pub fn facts(&self, k: usize) -> &Facts {
        &self.programs[k].1
    }

    /// Every program's facts, in program order.
    pub fn all_facts(&self) -> impl ExactSizeIterator<Item = &Facts> {
        self.programs.iter().map(|(_, f)| f)
    }
}

/// [`verify`] of program `k`, its diagnostics as a [`Rejected`].
fn check(obj: &Object, k: usize, e: &Entry, opts: &Options) -> Result<Facts, Rejected> {
    verify_with(obj, k, e, opts).map_err(|diagnostics| Rejected {
        program: k,
        name: obj.programs[k].name.clone(),
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify;

    fn object(text: &str) -> Object {
        bpf2ptx_compiler::front::load_bytes("t.s", text.as_bytes()).expect("assembles")
    }

    /// A rejected program is the error, with the diagnostics `verify` gives and the
    /// program's name in the message.
    #[test]
    fn a_rejected_program_is_the_error() {
        let obj = object("r0 = *(u64 *)(r2 + 0)\nexit\n");
        let r = Verified::new(&obj, |_| Entry::probe()).expect_err("r2 is not a pointer");
        let diags = verify(&obj, 0, &Entry::probe()).expect_err("rejected");
        assert_eq!((r.program, &r.diagnostics), (0, &diags));
        let text = r.to_string();
        assert!(
            text.starts_with(&format!("program {} rejected:\n", obj.programs[0].name)),
            "{text}"
        );
        assert!(text.ends_with(&diags[0].to_string()), "{text}");
    }

    /// `map_written` says which maps a program may change: a store or an atomic into a
    /// value, a helper writing into one, or an update; a lookup and a load do not.
    #[test]
    fn map_written_names_the_maps_a_program_may_change() {
        let head = ".map a array 4 8 4\n.map b array 4 8 4\n\
                    r1 = 0\n*(u32 *)(r10 - 4) = r1\nr2 = r10\nr2 += -4\n";
        let lookup = |m: u32| {
            format!("r1 = map_idx({m}) ll\nr2 = r10\nr2 += -4\ncall 1\nif r0 == 0 goto out\n")
        };
        let cases: [(String, [bool; 2]); 5] = [
            (format!("{}r1 = *(u64 *)(r0 + 0)\n", lookup(0)), [false, false]),
            (format!("{}r1 = 1\n*(u64 *)(r0 + 0) = r1\n", lookup(1)), [false, true]),
            (format!("{}r1 = 1\nlock *(u64 *)(r0 + 0) += r1\n", lookup(0)), [true, false]),
            (format!("{}r1 = 1\n*(u64 *)(r10 - 16) = r1\n", lookup(1)), [false, false]),
            (
                "*(u64 *)(r10 - 16) = r1\nr1 = map_idx(1) ll\nr3 = r10\nr3 += -16\nr4 = 0\ncall 2\n"
                    .to_string(),
                [false, true],
            ),
        ];
        for (body, want) in cases {
            let text = format!("{head}{body}out:\nr0 = 0\nexit\n");
            let obj = object(&text);
            let v =
                Verified::new(&obj, |_| Entry::probe()).unwrap_or_else(|r| panic!("{r}\n{text}"));
            assert_eq!(v.facts(0).map_written, want, "{text}");
        }
    }

    /// `with_known` verifies the program again with the known context bytes: its facts
    /// are those of `verify` with that entry, and a branch on a known field always goes
    /// one way.
    #[test]
    fn with_known_verifies_again_with_the_known_bytes() {
        let obj = object("r2 = *(u32 *)(r1 + 4)\nr0 = 0\nif r2 > 100 goto +1\nr0 = 1\nexit\n");
        let v = Verified::new(&obj, |_| Entry::probe_ctx(8)).expect("accepted");
        assert_eq!(v.facts(0).branch_always[2], None);
        let mut known = KnownBytes::default();
        known.bytes[4..8].copy_from_slice(&7u32.to_le_bytes());
        known.mask = 0xf0;
        let site = v.with_known(0, known).expect("accepted");
        let mut e = Entry::probe_ctx(8);
        e.known = known;
        assert_eq!(site.facts(0), &verify(&obj, 0, &e).expect("accepted"));
        assert_eq!(site.facts(0).branch_always[2], Some(false));
        assert!(std::ptr::eq(site.object(), v.object()));
    }
}
