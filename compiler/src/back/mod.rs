//! Backends: code generation from a loaded (and, once the verifier grows its facts, verified)
//! [`crate::program::Object`].

use serde::Serialize;

pub mod ptx;

/// An instruction's part in a counter update written as plain code (`*v += x`: a load, an
/// add, a store of the sum to the same bytes) that may run as one atomic add without fetch.
///
/// The verifier proves where this holds (`bpf2ptx_verifier::Facts::plain_add`, conditions
/// and soundness argument in specs/verifier.md); a backend lowers the store as the atomic
/// add and emits nothing for the load and the add. The type lives here, below both, so
/// that the facts and the backend's hints ([`ptx::Hints::plain_add`]) share it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlainAdd {
    /// The load of the old value: only the add reads it, so it is dropped.
    Load,
    /// The add: only the store reads the sum, so it is dropped.
    Add,
    /// The store of the sum: one atomic add of `addend` to the store's address.
    Store {
        /// What to add.
        addend: Addend,
        /// The map whose value the store writes, when it is the same map on every path
        /// (a backend may pick the cheaper lowering for arrays).
        map: Option<u32>,
    },
}

/// What a [`PlainAdd::Store`] adds, in the width of the access (the low 32 bits for a
/// 32-bit counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Addend {
    /// A constant from the add's immediate (negated for a subtraction).
    Const(u64),
    /// The register that held the other operand at the add. Nothing between the add and
    /// the store writes it, so with the add dropped it still holds that value at the store.
    Reg(u8),
}
