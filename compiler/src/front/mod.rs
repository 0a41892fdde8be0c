//! Frontends: everything that turns a file into an [`crate::program::Object`].

pub mod data_file;
