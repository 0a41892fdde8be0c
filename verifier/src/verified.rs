//! [`Verified`]: an object whose every program the verifier accepted, with what it proved
//! about each. The backend lowers only this type, so lowering a program nobody verified
//! cannot be written: no other crate can make one.

use crate::{verify, Diagnostic, Entry, Facts, KnownBytes};
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
    /// Verifies every program `k` of `obj` under `entry(k)` ([`verify`]), in order; the
    /// first program rejected is the error (the later ones are not verified).
    pub fn new(obj: &'p Object, mut entry: impl FnMut(usize) -> Entry) -> Result<Self, Rejected> {
        let programs = (0..obj.programs.len())
            .map(|k| {
                let e = entry(k);
                let facts = check(obj, k, &e)?;
                Ok((e, facts))
            })
            .collect::<Result<_, Rejected>>()?;
        Ok(Verified { obj, programs })
    }

    /// The same verification with program `k` verified again under its entry with the
    /// context bytes `known` (an attach site's constant fields): its facts then fold
    /// every computation that depends only on them. The other programs keep theirs.
    pub fn with_known(&self, k: usize, known: KnownBytes) -> Result<Verified<'p>, Rejected> {
        let mut e = self.programs[k].0;
        e.known = known;
        let facts = check(self.obj, k, &e)?;
        let mut programs = self.programs.clone();
        programs[k] = (e, facts);
        Ok(Verified {
            obj: self.obj,
            programs,
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
fn check(obj: &Object, k: usize, e: &Entry) -> Result<Facts, Rejected> {
    verify(obj, k, e).map_err(|diagnostics| Rejected {
        program: k,
        name: obj.programs[k].name.clone(),
        diagnostics,
    })
}
