//! `bpf2ptx run`: run a program once, on the GPU or through the reference interpreter, and
//! the conformance runner over a directory of `.data` files.
//!
//! ```text
//!  file ──front::load_path──▶ Object ──opts.compile──▶ (PTX, entry) ──Gpu──▶ r0, mem
//!                                     └─opts.interp (--cpu)──────────────────▶ r0, mem
//! ```
//!
//! Compilation and interpretation come in as closures, so this module does not depend on
//! the backend's or the interpreter's API. The memory a program gets is the `--mem` file
//! if one is given, else the `.data` file's `-- mem` section, else nothing.
//!
//! [`run_dir`] runs every `*.data` file of a directory, sorted by name, in one process
//! with one GPU context. A file passes when r0 equals its `-- result`, or, for a file that
//! expects `-- error`, when loading, compiling or running it fails. A kernel fault poisons
//! CUDA for the rest of the process (see [`bpf2ptx_loader::gpu`]), so the files after
//! one are reported as not run ([`FailReason::NotRun`]).

use bpf2ptx_compiler::front::{load_path, LoadError};
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::gpu::{Gpu, GpuError};
use std::io::Write;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Lowers an object to PTX: returns the PTX text and the name of its `.entry` kernel.
pub type CompileFn<'a> = &'a dyn Fn(&Object) -> Result<(String, String), String>;

/// Runs an object on the CPU over the given memory (which it may change); returns r0.
pub type InterpFn<'a> = &'a dyn Fn(&Object, &mut [u8]) -> Result<u64, String>;

/// How to run.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    /// `--mem FILE`: the input bytes (only for [`run_file`]).
    pub mem: Option<&'a Path>,
    /// `--cpu`: use the reference interpreter instead of the GPU.
    pub cpu: bool,
    /// The compiler (used on the GPU path).
    pub compile: CompileFn<'a>,
    /// The reference interpreter (needed for `--cpu`).
    pub interp: Option<InterpFn<'a>>,
}

/// Where a program ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// On the GPU, as PTX.
    Gpu,
    /// Through the reference interpreter.
    Cpu,
}

/// What running one file gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The file, as given.
    pub file: String,
    /// Where it ran.
    pub engine: Engine,
    /// The program's return value.
    pub r0: u64,
    /// The memory after the run.
    pub mem: Vec<u8>,
    /// Kernel time in milliseconds (GPU only; see [`bpf2ptx_loader::gpu::RunResult`]).
    pub kernel_ms: Option<f32>,
    /// The file's `-- result`, if it has one.
    pub expected: Option<u64>,
    /// The file's `-- error`, if it expects a failure (it ran, so it did not fail).
    pub expected_error: Option<String>,
}

impl Outcome {
    /// Whether the run met the file's expectation; `None` where the file states none.
    pub fn passed(&self) -> Option<bool> {
        if self.expected_error.is_some() {
            return Some(false);
        }
        self.expected.map(|e| e == self.r0)
    }
}

/// Why one program could not be run.
#[derive(Debug, Error)]
pub enum StepError {
    /// The compiler refused the program.
    #[error("compile failed: {0}")]
    Compile(String),
    /// `--cpu` without an interpreter.
    #[error("--cpu needs the reference interpreter, which this build does not have")]
    NoInterpreter,
    /// The interpreter failed.
    #[error("interpreter: {0}")]
    Interp(String),
    /// Loading or running the PTX failed.
    #[error("{0}")]
    Gpu(#[from] GpuError),
}

/// Why `bpf2ptx run` failed.
#[derive(Debug, Error)]
pub enum RunError {
    /// The input does not load.
    #[error("{0}")]
    Load(Box<LoadError>),
    /// The `--mem` file cannot be read.
    #[error("cannot read memory file {path}: {source}")]
    ReadMem {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The directory cannot be listed.
    #[error("cannot read directory {dir}: {source}")]
    ReadDir {
        /// The directory.
        dir: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// `--mem` was given with a directory.
    #[error("--mem applies to one file, not to a directory of tests")]
    MemWithDir,
    /// No GPU context could be opened.
    #[error("{0}")]
    Gpu(GpuError),
    /// Compiling or running the program failed.
    #[error("{file}: {source}")]
    Step {
        /// The input file.
        file: String,
        /// What failed.
        source: StepError,
    },
    /// The report could not be written.
    #[error("cannot write the report: {0}")]
    Output(std::io::Error),
}

/// Why one test of [`run_dir`] failed.
#[derive(Debug)]
pub enum FailReason {
    /// r0 differs from `-- result`.
    Mismatch {
        /// The file's `-- result`.
        expected: u64,
        /// What the program returned.
        got: u64,
    },
    /// The file does not load (and does not expect an error).
    Load(Box<LoadError>),
    /// Compiling or running failed (and the file does not expect an error).
    Step(StepError),
    /// The file expects an error, but the program ran.
    NoError {
        /// The file's `-- error` text.
        expected: String,
        /// What the program returned.
        got: u64,
    },
    /// The file has neither `-- result` nor `-- error`.
    NoExpectation {
        /// What the program returned.
        got: u64,
    },
    /// Not run: an earlier test's kernel faulted, which leaves CUDA unusable in this
    /// process.
    NotRun {
        /// The test whose kernel faulted.
        lost_at: String,
    },
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FailReason::Mismatch { expected, got } => {
                write!(f, "expected {expected:#x}, got {got:#x}")
            }
            FailReason::Load(e) => write!(f, "{e}"),
            FailReason::Step(e) => write!(f, "{e}"),
            FailReason::NoError { expected, got } => {
                write!(f, "expected error `{expected}`, got {got:#x}")
            }
            FailReason::NoExpectation { got } => {
                write!(
                    f,
                    "no `-- result` or `-- error` to compare with, got {got:#x}"
                )
            }
            FailReason::NotRun { lost_at } => write!(
                f,
                "not run: the kernel of {lost_at} faulted, and CUDA refuses any further \
                 work in this process"
            ),
        }
    }
}

/// One failed test.
#[derive(Debug)]
pub struct Failure {
    /// The test's name (the file name without `.data`).
    pub name: String,
    /// Why it failed.
    pub reason: FailReason,
}

/// What [`run_dir`] found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Tests that met their expectation.
    pub passed: usize,
    /// Tests that did not.
    pub failed: usize,
    /// The failures, in file order.
    pub failures: Vec<Failure>,
}

/// Runs one file and returns r0 with the file's expectation.
pub fn run_file(path: &Path, opts: &RunOptions<'_>) -> Result<Outcome, RunError> {
    let obj = load_path(path).map_err(|e| RunError::Load(Box::new(e)))?;
    run_object(obj, opts)
}

/// [`run_file`] for an object already loaded (`bpf2ptx run x.bpf.c` compiles the C first).
pub fn run_object(obj: Object, opts: &RunOptions<'_>) -> Result<Outcome, RunError> {
    let mem = match opts.mem {
        Some(p) => std::fs::read(p).map_err(|source| RunError::ReadMem {
            path: p.to_path_buf(),
            source,
        })?,
        None => obj.test.as_ref().map(|t| t.mem.clone()).unwrap_or_default(),
    };
    let mut runner = Runner::new(opts)?;
    let (r0, mem, kernel_ms) = runner.run(&obj, mem).map_err(|source| RunError::Step {
        file: obj.file.clone(),
        source,
    })?;
    Ok(outcome(&obj, runner.engine(), r0, mem, kernel_ms))
}

/// Runs every `*.data` file of `dir`, sorted by name, writes a line per failure and then
/// `N passed, N failed` to `out`.
pub fn run_dir(
    dir: &Path,
    opts: &RunOptions<'_>,
    out: &mut dyn Write,
) -> Result<Summary, RunError> {
    if opts.mem.is_some() {
        return Err(RunError::MemWithDir);
    }
    let read_dir_err = |source| RunError::ReadDir {
        dir: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_dir_err)? {
        let path = entry.map_err(read_dir_err)?.path();
        if path.extension().is_some_and(|e| e == "data") && path.is_file() {
            files.push(path);
        }
    }
    files.sort();

    let mut runner = Runner::new(opts)?;
    let mut summary = Summary::default();
    for path in &files {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let verdict = runner.test(&name, path);
        match verdict {
            None => summary.passed += 1,
            Some(reason) => {
                writeln!(out, "FAIL {name}: {reason}").map_err(RunError::Output)?;
                summary.failed += 1;
                summary.failures.push(Failure { name, reason });
            }
        }
    }
    writeln!(out, "{} passed, {} failed", summary.passed, summary.failed)
        .map_err(RunError::Output)?;
    Ok(summary)
}

fn outcome(obj: &Object, engine: Engine, r0: u64, mem: Vec<u8>, kernel_ms: Option<f32>) -> Outcome {
    Outcome {
        file: obj.file.clone(),
        engine,
        r0,
        mem,
        kernel_ms,
        expected: obj.test.as_ref().and_then(|t| t.result),
        expected_error: obj.test.as_ref().and_then(|t| t.error.clone()),
    }
}

/// Whether a file that does not load says it expects an error (a `-- error` line).
fn text_expects_error(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|b| {
        b.split(|&c| c == b'\n')
            .any(|l| l.trim_ascii() == b"-- error")
    })
}

/// Runs programs one after another on one engine.
struct Runner<'a> {
    opts: RunOptions<'a>,
    /// The GPU, unless `--cpu`.
    gpu: Option<Gpu>,
    /// The test whose kernel faulted, poisoning CUDA for this process.
    lost_at: Option<String>,
}

impl<'a> Runner<'a> {
    fn new(opts: &RunOptions<'a>) -> Result<Self, RunError> {
        let gpu = if opts.cpu {
            None
        } else {
            Some(Gpu::open().map_err(RunError::Gpu)?)
        };
        Ok(Runner {
            opts: *opts,
            gpu,
            lost_at: None,
        })
    }

    fn engine(&self) -> Engine {
        if self.gpu.is_some() {
            Engine::Gpu
        } else {
            Engine::Cpu
        }
    }

    /// Runs `obj` over `mem`: r0, the memory after the run and the kernel time.
    fn run(
        &mut self,
        obj: &Object,
        mut mem: Vec<u8>,
    ) -> Result<(u64, Vec<u8>, Option<f32>), StepError> {
        let Some(gpu) = &self.gpu else {
            let interp = self.opts.interp.ok_or(StepError::NoInterpreter)?;
            let r0 = interp(obj, &mut mem).map_err(StepError::Interp)?;
            return Ok((r0, mem, None));
        };
        let (ptx, entry) = (self.opts.compile)(obj).map_err(StepError::Compile)?;
        let module = gpu.load(&ptx)?;
        let r = gpu.run_entry(&module, &entry, &mem)?;
        Ok((r.r0, r.mem, Some(r.kernel_ms)))
    }

    /// One conformance test: `None` when it passes, else why not.
    fn test(&mut self, name: &str, path: &Path) -> Option<FailReason> {
        if let Some(lost_at) = &self.lost_at {
            return Some(FailReason::NotRun {
                lost_at: lost_at.clone(),
            });
        }
        let obj = match load_path(path) {
            Ok(o) => o,
            Err(_) if text_expects_error(path) => return None,
            Err(e) => return Some(FailReason::Load(Box::new(e))),
        };
        let mem = obj.test.as_ref().map(|t| t.mem.clone()).unwrap_or_default();
        let expected_error = obj.test.as_ref().and_then(|t| t.error.clone());
        let expected = obj.test.as_ref().and_then(|t| t.result);
        match self.run(&obj, mem) {
            Ok((got, _, _)) => match (expected_error, expected) {
                (Some(expected), _) => Some(FailReason::NoError { expected, got }),
                (None, Some(expected)) if expected == got => None,
                (None, Some(expected)) => Some(FailReason::Mismatch { expected, got }),
                (None, None) => Some(FailReason::NoExpectation { got }),
            },
            Err(e) => {
                if matches!(&e, StepError::Gpu(g) if g.is_context_lost()) {
                    self.lost_at = Some(name.to_string());
                    self.gpu = None;
                }
                if expected_error.is_some() {
                    None
                } else {
                    Some(FailReason::Step(e))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_compile(_: &Object) -> Result<(String, String), String> {
        Err("no backend in this test".to_string())
    }

    /// A stand-in interpreter: r0 is the number of instructions, and it writes 0xff to
    /// the first memory byte.
    fn count_insns(obj: &Object, mem: &mut [u8]) -> Result<u64, String> {
        if let Some(b) = mem.first_mut() {
            *b = 0xff;
        }
        Ok(obj.programs.iter().map(|p| p.insns.len() as u64).sum())
    }

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn run_dir_reports_failures_and_a_summary_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Two instructions: passes with `-- result 0x2`.
        write(
            d,
            "a-pass.data",
            "-- asm\nmov32 %r0, 1\nexit\n-- result\n0x2\n",
        );
        // Three instructions: fails against 0x7.
        write(
            d,
            "b-fail.data",
            "-- asm\nmov32 %r0, 1\nmov32 %r0, 2\nexit\n-- result\n0x7\n",
        );
        write(d, "ignored.txt", "not a test");
        let opts = RunOptions {
            mem: None,
            cpu: true,
            compile: &no_compile,
            interp: Some(&count_insns),
        };
        let mut out = Vec::new();
        let s = run_dir(d, &opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "FAIL b-fail: expected 0x7, got 0x3\n1 passed, 1 failed\n"
        );
        assert_eq!((s.passed, s.failed), (1, 1));
        assert_eq!(s.failures[0].name, "b-fail");
        assert!(matches!(
            s.failures[0].reason,
            FailReason::Mismatch {
                expected: 7,
                got: 3
            }
        ));
    }

    #[test]
    fn run_dir_counts_expected_errors() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "err.data", "-- asm\nexit\n-- error\nsomething\n");
        write(d, "fails.data", "-- asm\nexit\n-- result\n0x0\n");
        let failing = |_: &Object, _: &mut [u8]| -> Result<u64, String> { Err("boom".into()) };
        let opts = RunOptions {
            mem: None,
            cpu: true,
            compile: &no_compile,
            interp: Some(&failing),
        };
        let mut out = Vec::new();
        let s = run_dir(d, &opts, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text, "FAIL fails: interpreter: boom\n1 passed, 1 failed\n");
        assert_eq!((s.passed, s.failed), (1, 1));
    }

    #[test]
    fn run_file_uses_the_data_memory_or_the_mem_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "m.data",
            "-- asm\nmov32 %r0, 1\nexit\n-- mem\n01 02\n-- result\n0x2\n",
        );
        std::fs::write(d.join("in.bin"), [9u8, 9, 9]).unwrap();
        let mut opts = RunOptions {
            mem: None,
            cpu: true,
            compile: &no_compile,
            interp: Some(&count_insns),
        };
        let o = run_file(&d.join("m.data"), &opts).unwrap();
        assert_eq!((o.r0, o.mem.as_slice()), (2, &[0xff, 2][..]));
        assert_eq!((o.engine, o.passed()), (Engine::Cpu, Some(true)));
        let mem_file = d.join("in.bin");
        opts.mem = Some(&mem_file);
        let o = run_file(&d.join("m.data"), &opts).unwrap();
        assert_eq!(o.mem, [0xff, 9, 9]);
        opts.interp = None;
        let e = run_file(&d.join("m.data"), &opts).unwrap_err();
        assert!(matches!(
            e,
            RunError::Step {
                source: StepError::NoInterpreter,
                ..
            }
        ));
    }
}
