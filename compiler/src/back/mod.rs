//! Backends: code generation from a loaded (and, once the verifier grows its facts, verified)
//! [`crate::program::Object`].

pub mod ptx;
