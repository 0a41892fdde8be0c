//! From a probe's C source to a BPF object, with the clang command line libbpf-based
//! projects use: `bpf2ptx build PROBE.bpf.c`, a `.c` file given to any command that takes
//! an object (`bpf2ptx x.bpf.c -o x.ptx`, `verify`, `inject`, `run`, `trace`, `dump`), and
//! [`Probe`], the same for a Cargo build script.
//!
//! The one place that knows how to drive clang:
//!
//! - which clang: `--clang` ([`Flags::clang`]), else `$BPF2PTX_CLANG`, else `clang` on
//!   `PATH`, else the highest versioned `clang-NN` on `PATH` ([`Clang::find`]);
//! - its flags: `-target bpf -O2 -g`, the highest `-mcpu` (v4, v3, v2) that this clang
//!   accepts, the host's system include folders found as libbpf-bootstrap finds them
//!   (`clang -v -E`, passed with `-idirafter`) plus the multiarch folder
//!   (`/usr/include/x86_64-linux-gnu`, where `<asm/types.h>` lives), the user's `-I` and
//!   `-D`, and a private folder holding `bpf2ptx_helpers.h` as this binary knows it
//!   ([`bpf2ptx_runtime::HELPERS_H`]), so a probe needs no `-I` for it;
//! - what comes out: clang's own messages go to stderr unchanged; a failure is one
//!   [`BuildError`] line naming the file; the object lands in a temporary folder
//!   ([`Built`]) that lives as long as the command needs it.
//!
//! ```text
//!  x.bpf.c ──clang (Clang::find, Flags)──▶ tmp/x.bpf.o ──load_bytes("x.bpf.c")──▶ Object
//!                                              └── --keep-object / `build -o`: written
//!                                                  atomically (compile::write_output_bytes)
//! ```

use crate::compile::{self, CompileError};
use crate::inject::{self, InjectError};
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use thiserror::Error;

/// The environment variable naming the clang to use when `--clang` does not.
pub const CLANG_VAR: &str = "BPF2PTX_CLANG";

/// The `-mcpu` values bpf2ptx asks for, best first: v4 (sign extension, 32-bit jumps,
/// `may_goto`; clang 18 and later) down to v2, which every clang with the BPF target has.
const MCPUS: &[&str] = &["v4", "v3", "v2"];

/// Where the clang in use was named; error messages say it, so the user fixes the right
/// setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClangOrigin {
    /// `--clang PATH` on the command line, or [`Probe::clang`].
    Option,
    /// `$BPF2PTX_CLANG`.
    Env,
    /// Found on `PATH`.
    Path,
}

impl ClangOrigin {
    /// How the user named `clang`, for a message.
    fn named(self, clang: &Path) -> String {
        match self {
            ClangOrigin::Option => format!("--clang {}", clang.display()),
            ClangOrigin::Env => format!("{CLANG_VAR}={}", clang.display()),
            ClangOrigin::Path => format!("{} (found on PATH)", clang.display()),
        }
    }

    /// What to do about a clang that does not run.
    fn hint(self) -> &'static str {
        match self {
            ClangOrigin::Option => "give --clang a clang that has the BPF target",
            ClangOrigin::Env => {
                "set BPF2PTX_CLANG to a clang that has the BPF target, or unset it to search PATH"
            }
            ClangOrigin::Path => {
                "install clang (Debian/Ubuntu: apt-get install clang libbpf-dev) or set BPF2PTX_CLANG"
            }
        }
    }
}

/// Why a C source did not become a BPF object. Every one is bad input (exit 2).
#[derive(Debug, Error)]
pub enum BuildError {
    /// No clang on `PATH`, and neither `--clang` nor `$BPF2PTX_CLANG` named one.
    #[error(
        "{file}: compiling C needs clang, and none was found (--clang, {CLANG_VAR}, clang or \
         clang-NN on PATH): install it (Debian/Ubuntu: apt-get install clang libbpf-dev) or \
         set {CLANG_VAR}=/path/to/clang"
    )]
    NoClang {
        /// The source that needed it.
        file: String,
    },
    /// The named clang cannot be started.
    #[error("{}: cannot run it ({source}); {}", .origin.named(.clang), .origin.hint())]
    ClangUnusable {
        /// The clang.
        clang: PathBuf,
        /// Where it was named.
        origin: ClangOrigin,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// The clang runs but cannot compile for BPF (Apple's clang has no BPF target).
    #[error(
        "{}: cannot compile for BPF (`-target bpf -mcpu=v2` fails: {message}); {}",
        .origin.named(.clang), .origin.hint()
    )]
    NoBpfTarget {
        /// The clang.
        clang: PathBuf,
        /// Where it was named.
        origin: ClangOrigin,
        /// The first line clang printed.
        message: String,
    },
    /// clang ran and failed; what it printed is on stderr already.
    #[error("{file}: clang failed ({status}); its messages are above")]
    ClangFailed {
        /// The source.
        file: String,
        /// How clang ended (`exit status: 1`).
        status: String,
    },
    /// The private folder for the header and the object cannot be made or read.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

impl From<BuildError> for CompileError {
    fn from(e: BuildError) -> Self {
        CompileError::Build(Box::new(e))
    }
}

/// A clang that compiles for BPF, with what bpf2ptx found out about it once.
#[derive(Debug, Clone)]
pub struct Clang {
    /// The executable.
    pub path: PathBuf,
    /// Where it was named.
    pub origin: ClangOrigin,
    /// The highest of v4, v3, v2 it accepts for `-mcpu`.
    pub mcpu: &'static str,
    /// The host's system include folders, in clang's order (`clang -v -E`), and the
    /// multiarch folder where it exists; given to clang with `-idirafter`, so that the
    /// `-target bpf` compile finds `<linux/bpf.h>`, `<asm/types.h>` and `<bpf/bpf_helpers.h>`
    /// as the host compiler would, after anything the user gives with `-I`.
    pub system_includes: Vec<PathBuf>,
}

impl Clang {
    /// The clang to use: `explicit` (`--clang`), else `$BPF2PTX_CLANG` (when set and not
    /// empty), else `clang` on `PATH`, else the highest `clang-NN` on `PATH`; checked to
    /// compile for BPF. `file` is the source that needs it (for the message when there is
    /// none). What is found about a clang is kept for the rest of the process: a build
    /// script compiling several probes asks clang once.
    pub fn find(explicit: Option<&Path>, file: &Path) -> Result<Clang, BuildError> {
        let (path, origin) = match explicit {
            Some(p) => (p.to_path_buf(), ClangOrigin::Option),
            None => match std::env::var_os(CLANG_VAR).filter(|v| !v.is_empty()) {
                Some(p) => (PathBuf::from(p), ClangOrigin::Env),
                None => match on_path() {
                    Some(p) => (p, ClangOrigin::Path),
                    None => {
                        return Err(BuildError::NoClang {
                            file: file.display().to_string(),
                        })
                    }
                },
            },
        };
        static SEEN: OnceLock<Mutex<Vec<Clang>>> = OnceLock::new();
        let seen = SEEN.get_or_init(|| Mutex::new(Vec::new()));
        let cached = seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|c| c.path == path)
            .cloned();
        if let Some(mut c) = cached {
            c.origin = origin;
            return Ok(c);
        }
        let c = Clang::probe(path, origin)?;
        seen.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(c.clone());
        Ok(c)
    }

    /// Asks `path` which `-mcpu` it takes (an empty C file compiled with each, best first)
    /// and where the host's headers are.
    fn probe(path: PathBuf, origin: ClangOrigin) -> Result<Clang, BuildError> {
        let unusable = |source| BuildError::ClangUnusable {
            clang: path.clone(),
            origin,
            source,
        };
        let mut last = String::new();
        let mut mcpu = None;
        for &cpu in MCPUS {
            let out = Command::new(&path)
                .args(["-target", "bpf", "-O2"])
                .arg(format!("-mcpu={cpu}"))
                .args(["-x", "c", "-c", "-", "-o", "/dev/null"])
                .stdin(Stdio::null())
                .output()
                .map_err(unusable)?;
            if out.status.success() {
                mcpu = Some(cpu);
                break;
            }
            last = String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
        }
        let Some(mcpu) = mcpu else {
            return Err(BuildError::NoBpfTarget {
                clang: path,
                origin,
                message: last,
            });
        };
        // libbpf-bootstrap's way: the host compiler's `#include <...>` list.
        let out = Command::new(&path)
            .args(["-v", "-E", "-x", "c", "-", "-o", "/dev/null"])
            .stdin(Stdio::null())
            .output()
            .map_err(unusable)?;
        let mut system_includes = search_list(&String::from_utf8_lossy(&out.stderr));
        let multiarch = PathBuf::from(format!("/usr/include/{}-linux-gnu", multiarch_cpu()));
        if multiarch.is_dir() && !system_includes.contains(&multiarch) {
            system_includes.push(multiarch);
        }
        Ok(Clang {
            path,
            origin,
            mcpu,
            system_includes,
        })
    }
}

/// The folders between `#include <...> search starts here:` and `End of search list.` in
/// what `clang -v -E` prints (macOS marks framework folders; they are dropped).
fn search_list(verbose: &str) -> Vec<PathBuf> {
    verbose
        .lines()
        .skip_while(|l| !l.starts_with("#include <...> search starts here:"))
        .skip(1)
        .take_while(|l| !l.starts_with("End of search list."))
        .filter(|l| !l.ends_with("(framework directory)"))
        .map(|l| PathBuf::from(l.trim()))
        .collect()
}

/// The CPU part of the host's Debian multiarch triple (`x86_64` in
/// `/usr/include/x86_64-linux-gnu`).
fn multiarch_cpu() -> &'static str {
    match std::env::consts::ARCH {
        "x86" => "i386",
        other => other,
    }
}

/// The value of libbpf's `__TARGET_ARCH_*` for the host (what `bpf_tracing.h` wants to
/// know; libbpf-bootstrap defines it the same way).
fn target_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" | "x86" => "x86",
        "aarch64" => "arm64",
        "arm" => "arm",
        "riscv64" => "riscv",
        "powerpc64" => "powerpc",
        "s390x" => "s390",
        "loongarch64" => "loongarch",
        other => other,
    }
}

/// `clang` on `PATH`, else the `clang-NN` with the highest NN on `PATH`.
fn on_path() -> Option<PathBuf> {
    let dirs: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH")?).collect();
    if let Some(p) = dirs.iter().map(|d| d.join("clang")).find(|p| executable(p)) {
        return Some(p);
    }
    let mut best: Option<(u32, PathBuf)> = None;
    for d in &dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let Some(n) = name
                .to_str()
                .and_then(|n| n.strip_prefix("clang-"))
                .and_then(|v| v.parse::<u32>().ok())
            else {
                continue;
            };
            let p = e.path();
            if executable(&p) && best.as_ref().is_none_or(|(b, _)| n > *b) {
                best = Some((n, p));
            }
        }
    }
    best.map(|(_, p)| p)
}

/// Whether `p` is a file someone may execute.
fn executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// What the user asks of clang, beyond what bpf2ptx always passes.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    /// `--clang PATH`: this clang instead of `$BPF2PTX_CLANG` or `PATH`'s.
    pub clang: Option<PathBuf>,
    /// `-I DIR`, in order; searched before the system folders and the project header.
    pub includes: Vec<PathBuf>,
    /// `-D NAME` or `-D NAME=VALUE`, as given.
    pub defines: Vec<String>,
    /// `--keep-object`: keep the object clang made (beside the output, or the source).
    pub keep_object: bool,
}

/// Whether a command's input is C to compile first (a `.c` file, `x.bpf.c` included)
/// rather than an object or text the loader reads.
pub fn is_source(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "c")
}

/// The object name for a source: `x.bpf.c` → `x.bpf.o` (the name `examples/probes/build.sh`
/// and libbpf projects give it).
pub fn object_name(source: &Path) -> PathBuf {
    let name = source
        .file_name()
        .map_or_else(|| std::ffi::OsString::from("probe"), |n| n.to_os_string());
    Path::new(&name).with_extension("o")
}

/// A BPF object clang made from a C source, in a private temporary folder that goes away
/// with this value.
#[derive(Debug)]
pub struct Built {
    source: PathBuf,
    object: PathBuf,
    deps: Vec<PathBuf>,
    // Held for its Drop: the folder with the header and the object.
    _dir: tempfile::TempDir,
}

impl Built {
    /// The object.
    pub fn object(&self) -> &Path {
        &self.object
    }

    /// The source it was made from.
    pub fn source(&self) -> &Path {
        &self.source
    }

    /// The files clang read to make it (the source and every header, from clang's `-MD`
    /// list, without the project header bpf2ptx provided): what a build system must watch.
    pub fn dependencies(&self) -> &[PathBuf] {
        &self.deps
    }

    /// A make-style dependency file saying that `target` depends on
    /// [`dependencies`](Built::dependencies) (spaces escaped as make reads them).
    pub fn depfile(&self, target: &Path) -> String {
        let esc = |p: &Path| p.display().to_string().replace(' ', "\\ ");
        let mut s = format!("{}:", esc(target));
        for d in &self.deps {
            s.push_str(" \\\n  ");
            s.push_str(&esc(d));
        }
        s.push('\n');
        s
    }

    /// The object's bytes.
    pub fn bytes(&self) -> Result<Vec<u8>, BuildError> {
        std::fs::read(&self.object).map_err(|source| BuildError::Io {
            path: self.object.clone(),
            source,
        })
    }

    /// The object loaded, named after the source: a message about a program names
    /// `x.bpf.c`, not the temporary object.
    pub fn load(&self) -> Result<Object, CompileError> {
        let bytes = self.bytes()?;
        Ok(bpf2ptx_compiler::front::load_bytes(
            &self.source.display().to_string(),
            &bytes,
        )?)
    }
}

/// Compiles the C file `source` to a BPF object with clang (module docs: which clang,
/// which flags). clang's messages go to stderr as clang wrote them; its standard output,
/// which a compile does not use, goes there too, so that `-o -` output stays clean.
pub fn clang_build(source: &Path, flags: &Flags) -> Result<Built, BuildError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BuildError::Io { path, source }
    };
    // A source that cannot be read is said as such, before any clang is looked for.
    std::fs::File::open(source).map_err(io(source))?;
    let clang = Clang::find(flags.clang.as_deref(), source)?;
    let dir = tempfile::Builder::new()
        .prefix("bpf2ptx-build-")
        .tempdir()
        .map_err(io(&std::env::temp_dir()))?;
    let include = dir.path().join("include");
    std::fs::create_dir(&include).map_err(io(&include))?;
    let header = include.join("bpf2ptx_helpers.h");
    std::fs::write(&header, bpf2ptx_runtime::HELPERS_H).map_err(io(&header))?;
    let object = dir.path().join(object_name(source));
    let depfile = dir.path().join("deps.d");
    let mut cmd = Command::new(&clang.path);
    cmd.args(["-target", "bpf", "-O2", "-g"])
        .arg(format!("-mcpu={}", clang.mcpu));
    if !flags
        .defines
        .iter()
        .any(|d| d.starts_with("__TARGET_ARCH_"))
    {
        cmd.arg(format!("-D__TARGET_ARCH_{}", target_arch()));
    }
    for d in &flags.includes {
        cmd.arg("-I").arg(d);
    }
    for d in &flags.defines {
        cmd.arg(format!("-D{d}"));
    }
    cmd.arg("-I").arg(&include);
    for d in &clang.system_includes {
        cmd.arg("-idirafter").arg(d);
    }
    cmd.arg("-MD")
        .arg("-MF")
        .arg(&depfile)
        .args(["-x", "c", "-c"])
        .arg(source)
        .arg("-o")
        .arg(&object)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::io::stderr()));
    let status = cmd.status().map_err(|source| BuildError::ClangUnusable {
        clang: clang.path.clone(),
        origin: clang.origin,
        source,
    })?;
    if !status.success() {
        return Err(BuildError::ClangFailed {
            file: source.display().to_string(),
            status: status.to_string(),
        });
    }
    let deps = std::fs::read_to_string(&depfile)
        .map(|d| parse_depfile(&d))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.starts_with(dir.path()))
        .collect();
    Ok(Built {
        source: source.to_path_buf(),
        object,
        deps,
        _dir: dir,
    })
}

/// The prerequisites of a make-style dependency file (`obj: a.c b.h \` continued lines,
/// `\ ` an escaped space), without the target.
fn parse_depfile(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let Some((_, prereqs)) = joined.split_once(": ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = prereqs.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&' ') => {
                cur.push(' ');
                chars.next();
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(PathBuf::from(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(PathBuf::from(cur));
    }
    out
}

/// A command's input: the file as given, or the object clang made of it when it is C
/// ([`is_source`]).
#[derive(Debug)]
pub struct Input {
    given: PathBuf,
    built: Option<Built>,
}

impl Input {
    /// `path` ready to load: compiled with clang first when it is C.
    pub fn open(path: &Path, flags: &Flags) -> Result<Input, BuildError> {
        let built = if is_source(path) {
            Some(clang_build(path, flags)?)
        } else {
            None
        };
        Ok(Input {
            given: path.to_path_buf(),
            built,
        })
    }

    /// The object file to read: the one clang made, or the input itself.
    pub fn object_path(&self) -> &Path {
        self.built.as_ref().map_or(&self.given, |b| b.object())
    }

    /// What clang made, when the input was C.
    pub fn built(&self) -> Option<&Built> {
        self.built.as_ref()
    }

    /// The object, loaded; named as the user named the input.
    pub fn load(&self) -> Result<Object, CompileError> {
        match &self.built {
            Some(b) => b.load(),
            None => Ok(bpf2ptx_compiler::front::load_path(&self.given)?),
        }
    }

    /// The object's bytes.
    pub fn bytes(&self) -> Result<Vec<u8>, BuildError> {
        let path = self.object_path();
        std::fs::read(path).map_err(|source| BuildError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// `--keep-object`: writes the object clang made beside `near` (the command's output,
    /// or where there is none, the source) as `<source name>.o`, atomically, and returns
    /// where; `None` when the input was not C (there is nothing to keep).
    pub fn keep(&self, near: &Path) -> Result<Option<PathBuf>, CompileError> {
        let Some(b) = &self.built else {
            return Ok(None);
        };
        let near = if near == Path::new("-") {
            &self.given
        } else {
            near
        };
        let out = near.with_file_name(object_name(&self.given));
        compile::write_output_bytes(&out, &b.bytes()?, &[&self.given])?;
        Ok(Some(out))
    }
}

/// `bpf2ptx build SOURCE -o OUT`: compiles the C file `source` (whatever its extension),
/// checks that the object loads and that every GPU program in it passes the verifier (a
/// probe that would be rejected is not built: exit 1 with the verifier's messages), and
/// writes the object to `out` atomically. Returns what clang made.
pub fn build_object(
    source: &Path,
    out: &Path,
    flags: &Flags,
    loop_budget: Option<u64>,
) -> Result<Built, CompileError> {
    let built = clang_build(source, flags)?;
    let mut obj = built.load()?;
    compile::apply_kconfig(&mut obj, None)?;
    let (gpu, _host) = compile::gpu_programs(&obj);
    if gpu.programs.is_empty() {
        return Err(CompileError::NoGpuPrograms { file: gpu.file });
    }
    compile::verify_budget(&gpu, loop_budget)?;
    compile::write_output_bytes(out, &built.bytes()?, &[source])?;
    Ok(built)
}

/// A probe for a build script: a C source (or a BPF object) compiled, verified and
/// lowered to PTX, or injected into a CUDA application's PTX.
///
/// A `build.rs` that turns `probe.bpf.c` into PTX the crate embeds with `include_str!`;
/// clang is found as for `bpf2ptx build` (`$BPF2PTX_CLANG`, then `PATH`), and
/// [`cargo_metadata`](Probe::cargo_metadata) makes cargo rebuild when the source or any
/// header it includes changes:
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # if std::env::var_os("BPF2PTX_SKIP_CLANG").is_some_and(|v| v == "1") { return Ok(()); }
/// # let tmp = tempfile::tempdir()?;
/// # std::env::set_var("OUT_DIR", tmp.path());
/// use std::path::PathBuf;
///
/// let out = PathBuf::from(std::env::var("OUT_DIR")?);
/// bpf2ptx::build::Probe::new("../examples/probes/launch_count.bpf.c")
///     .define("MAX_KERNELS", "64")
///     .target("sm_90")
///     .cargo_metadata(true)
///     .compile_ptx(&out.join("launch_count.ptx"))?;
/// // and in the crate: const PROBE: &str = include_str!(concat!(env!("OUT_DIR"), "/launch_count.ptx"));
/// # let ptx = std::fs::read_to_string(out.join("launch_count.ptx"))?;
/// # assert!(ptx.contains(".target sm_90") && ptx.contains("bpf2ptx_map_launches"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Probe {
    source: PathBuf,
    flags: Flags,
    target: String,
    cargo: bool,
}

impl Probe {
    /// A probe from `source`: C (`.c`), compiled with clang, or a BPF object used as it is.
    pub fn new(source: impl AsRef<Path>) -> Probe {
        Probe {
            source: source.as_ref().to_path_buf(),
            flags: Flags::default(),
            target: ptx::TARGETS[0].0.to_string(),
            cargo: false,
        }
    }

    /// Uses this clang (as `--clang`) instead of `$BPF2PTX_CLANG` or `PATH`'s.
    pub fn clang(&mut self, path: impl AsRef<Path>) -> &mut Probe {
        self.flags.clang = Some(path.as_ref().to_path_buf());
        self
    }

    /// Adds an include folder (`-I`), searched before the system's.
    pub fn include(&mut self, dir: impl AsRef<Path>) -> &mut Probe {
        self.flags.includes.push(dir.as_ref().to_path_buf());
        self
    }

    /// Defines a macro (`-D NAME` for `None`, `-D NAME=VALUE`).
    pub fn define<'a>(&mut self, name: &str, value: impl Into<Option<&'a str>>) -> &mut Probe {
        self.flags.defines.push(match value.into() {
            Some(v) => format!("{name}={v}"),
            None => name.to_string(),
        });
        self
    }

    /// The GPU target of [`compile_ptx`](Probe::compile_ptx) (`sm_70`, the default, to
    /// `sm_120`; specs/targets.md). [`inject`](Probe::inject) takes the application's.
    pub fn target(&mut self, sm: &str) -> &mut Probe {
        self.target = sm.to_string();
        self
    }

    /// Prints `cargo:rerun-if-changed=` for the source and every header clang read, and
    /// `cargo:rerun-if-env-changed=BPF2PTX_CLANG`, when the probe is built: what a
    /// `build.rs` must tell cargo so that editing a probe rebuilds the crate.
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Probe {
        self.cargo = on;
        self
    }

    /// The input: compiled when it is C, with the cargo lines printed if asked.
    fn input(&self) -> Result<Input, CompileError> {
        let input = Input::open(&self.source, &self.flags)?;
        if self.cargo {
            println!("cargo:rerun-if-env-changed={CLANG_VAR}");
            match input.built() {
                Some(b) => {
                    for d in b.dependencies() {
                        println!("cargo:rerun-if-changed={}", d.display());
                    }
                }
                None => println!("cargo:rerun-if-changed={}", self.source.display()),
            }
        }
        Ok(input)
    }

    /// Writes the probe's BPF object to `out` after checking that its GPU programs pass
    /// the verifier (as `bpf2ptx build`).
    pub fn object(&self, out: &Path) -> Result<(), CompileError> {
        let input = self.input()?;
        let mut obj = input.load()?;
        compile::apply_kconfig(&mut obj, None)?;
        let (gpu, _host) = compile::gpu_programs(&obj);
        if gpu.programs.is_empty() {
            return Err(CompileError::NoGpuPrograms { file: gpu.file });
        }
        compile::verify(&gpu)?;
        compile::write_output_bytes(out, &input.bytes()?, &[&self.source])
    }

    /// Verifies the probe's GPU programs and writes their PTX to `out` (as `bpf2ptx FILE
    /// -o OUT --target ...`; host-side programs are left out).
    pub fn compile_ptx(&self, out: &Path) -> Result<(), CompileError> {
        let mut obj = self.input()?.load()?;
        compile::apply_kconfig(&mut obj, None)?;
        let (gpu, _host) = compile::gpu_programs(&obj);
        if gpu.programs.is_empty() {
            return Err(CompileError::NoGpuPrograms { file: gpu.file });
        }
        let (maps, _) = compile::map_options(&gpu, &[]).map_err(CompileError::Options)?;
        let opts = ptx::Options {
            target: self.target.clone(),
            ..maps
        };
        let text = compile::compile(&gpu, &opts)?;
        compile::write_output(out, &text, &[&self.source])
    }

    /// Injects the probe into `app` (PTX, or a fatbin or ELF file with PTX in it) and
    /// writes the instrumented PTX to `out` (as `bpf2ptx inject`); no probe matching a
    /// kernel of `app` is an error ([`InjectError::NoMatch`]).
    pub fn inject(&self, app: &Path, out: &Path) -> Result<(), InjectError> {
        let input = self.input()?;
        let text = inject::app_ptx(app, None)?;
        let app_file = app.display().to_string();
        let obj = input.load()?;
        let done = inject::inject_object(obj, &text, &app_file, &inject::Options::default())?;
        if let Some(e) = done.no_match {
            return Err(e.into());
        }
        compile::write_output(out, &done.woven.text, &[&self.source, app])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_list_takes_the_angle_bracket_folders() {
        let v = "clang -cc1 ...\n#include \"...\" search starts here:\n#include <...> search starts here:\n /usr/lib/llvm-14/lib/clang/14.0.6/include\n /usr/local/include\n /usr/include/x86_64-linux-gnu\n /usr/include\n /System/Library/Frameworks (framework directory)\nEnd of search list.\n # 1 \"<stdin>\"\n";
        assert_eq!(
            search_list(v),
            [
                "/usr/lib/llvm-14/lib/clang/14.0.6/include",
                "/usr/local/include",
                "/usr/include/x86_64-linux-gnu",
                "/usr/include"
            ]
            .map(PathBuf::from)
        );
        assert!(search_list("no list here").is_empty());
    }

    #[test]
    fn depfile_prerequisites() {
        let d = "/tmp/x/p.bpf.o: examples/probes/p.bpf.c \\\n  examples/probes/common.h /tmp/x/include/bpf2ptx_helpers.h \\\n  /usr/include/linux/bpf.h a\\ b.h\n";
        assert_eq!(
            parse_depfile(d),
            [
                "examples/probes/p.bpf.c",
                "examples/probes/common.h",
                "/tmp/x/include/bpf2ptx_helpers.h",
                "/usr/include/linux/bpf.h",
                "a b.h"
            ]
            .map(PathBuf::from)
        );
        assert!(parse_depfile("garbage").is_empty());
    }

    #[test]
    fn sources_and_object_names() {
        assert!(is_source(Path::new("x.bpf.c")));
        assert!(!is_source(Path::new("x.bpf.o")));
        assert!(!is_source(Path::new("c")));
        assert_eq!(object_name(Path::new("dir/x.bpf.c")), Path::new("x.bpf.o"));
        assert_eq!(object_name(Path::new("y.c")), Path::new("y.o"));
    }

    /// A clang named by the option that does not exist is that clang's error, not a
    /// search of PATH.
    #[test]
    fn a_missing_named_clang_is_named() {
        let e =
            Clang::find(Some(Path::new("/nonexistent/clang")), Path::new("x.bpf.c")).unwrap_err();
        let msg = e.to_string();
        assert!(
            matches!(
                e,
                BuildError::ClangUnusable {
                    origin: ClangOrigin::Option,
                    ..
                }
            ),
            "{msg}"
        );
        assert!(
            msg.starts_with("--clang /nonexistent/clang: cannot run it ("),
            "{msg}"
        );
    }
}
