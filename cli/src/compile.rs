//! `bpf2ptx FILE -o OUT`: load, check, lower to PTX, and write the result atomically.

use bpf2ptx_compiler::back::ptx;
use bpf2ptx_compiler::program::{Object, SourceKind};
use std::io::Write;
use std::path::Path;
use thiserror::Error;

/// Why a compile did not produce output; [`CompileError::exit_code`] maps it to the
/// documented exit codes.
#[derive(Debug, Error)]
pub enum CompileError {
    /// The input does not load.
    #[error(transparent)]
    Load(#[from] bpf2ptx_compiler::front::LoadError),
    /// The verifier rejected a program.
    #[error("{file}: program {program} rejected:\n{}", errors.join("\n"))]
    Rejected {
        /// The input file.
        file: String,
        /// The program.
        program: String,
        /// Each violation, one per line.
        errors: Vec<String>,
    },
    /// The backend cannot lower a program.
    #[error("{file}: {source}")]
    Lower {
        /// The input file.
        file: String,
        /// The backend error (names the program and instruction).
        source: ptx::Error,
    },
    /// The output cannot be written.
    #[error("{path}: {source}")]
    Write {
        /// The output path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}

impl CompileError {
    /// The exit code: 1 for a rejected program, 2 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            CompileError::Rejected { .. } => crate::exit::REJECTED,
            _ => crate::exit::BAD_INPUT,
        }
    }
}

/// The registers an attach point initialises at program entry besides r10: r1 (the
/// context) for ELF programs; r1 and r2 (memory and length) for bpf_conformance tests.
pub fn entry_regs(obj: &Object) -> &'static [u8] {
    match obj.kind {
        SourceKind::Conformance => &[1, 2],
        _ => &[1],
    }
}

/// Runs the verifier over every program of an object.
pub fn verify(obj: &Object) -> Result<(), CompileError> {
    for p in &obj.programs {
        if let Err(errs) = bpf2ptx_verifier::check(p, entry_regs(obj)) {
            return Err(CompileError::Rejected {
                file: obj.file.clone(),
                program: p.name.clone(),
                errors: errs.iter().map(|e| e.to_string()).collect(),
            });
        }
    }
    Ok(())
}

/// Verifies and lowers an object to PTX text.
pub fn compile(obj: &Object, opts: &ptx::Options) -> Result<String, CompileError> {
    verify(obj)?;
    ptx::write_string(obj, opts).map_err(|source| CompileError::Lower {
        file: obj.file.clone(),
        source,
    })
}

/// Writes `text` to `out` atomically: to a temporary file in the same directory, then
/// renamed over `out`, so a failure never leaves a half-written file or clobbers the old
/// one. `-` means standard output.
pub fn write_output(out: &Path, text: &str) -> Result<(), CompileError> {
    let werr = |source| CompileError::Write {
        path: out.display().to_string(),
        source,
    };
    if out == Path::new("-") {
        return std::io::stdout().write_all(text.as_bytes()).map_err(werr);
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(werr)?;
    tmp.write_all(text.as_bytes()).map_err(werr)?;
    tmp.as_file().sync_all().map_err(werr)?;
    tmp.persist(out).map_err(|e| werr(e.error))?;
    Ok(())
}
