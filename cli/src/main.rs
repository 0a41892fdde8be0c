//! The `bpf2ptx` binary.

/// `println!` that ignores a closed stdout (`bpf2ptx verify x | head` is not an error) but
/// remembers any other write error (a full disk, `> /dev/full`), which makes the command
/// fail with exit 2 at its end ([`stdout_status`]).
macro_rules! outln {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        crate::note_stdout(writeln!(std::io::stdout(), $($t)*));
    }};
}
/// `print!` with [`outln!`]'s error handling.
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        crate::note_stdout(write!(std::io::stdout(), $($t)*));
    }};
}

/// The first error writing standard output, other than a closed pipe.
static STDOUT_ERROR: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Records `r`'s error unless it is a closed pipe (a reader that stopped early).
fn note_stdout(r: std::io::Result<()>) {
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            let mut first = STDOUT_ERROR.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert_with(|| e.to_string());
        }
    }
}

/// `code`, or exit 2 if writing standard output failed (after a last flush): a command
/// whose output was lost did not do its job, whatever it found.
fn stdout_status(code: i32) -> i32 {
    use std::io::Write as _;
    note_stdout(std::io::stdout().flush());
    match STDOUT_ERROR
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        Some(e) => {
            eprintln!("error: standard output: {e}");
            if code == exit::OK {
                exit::BAD_INPUT
            } else {
                code
            }
        }
        None => code,
    }
}

// After the macros: `outln!` and `out!` are in scope in a module declared below them.
mod cmd;

use bpf2ptx::compile::{self, CompileError};
use bpf2ptx::{dump::Dump, exit};
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use clap::{Args, Parser, Subcommand, ValueEnum};
use cmd::run::{run_cmd, run_probe, ProbeRun};
use cmd::verify::verify;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Compile eBPF programs to NVIDIA PTX probes.
///
/// `bpf2ptx FILE -o probe.ptx` verifies every program of FILE and lowers it to PTX. FILE is
/// a clang-built BPF ELF object, a bpf_conformance .data file or a text assembly file
/// (detected from the content). Exit codes: 0 ok, 1 rejected or failed, 2 bad input,
/// 3 no GPU.
#[derive(Parser)]
#[command(
    name = "bpf2ptx",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    compile: CompileArgs,
    /// Put a may_goto-style budget of N iterations per run on every loop the verifier
    /// cannot bound otherwise: such a loop ends the program when the budget is spent, and
    /// the runtime counts it (`bpf2ptx_loopcnt_<program>`, specs/abi.md). The cost bound
    /// is then N x the loop's body. For compiling, verify, inject and run.
    #[arg(long, global = true, value_name = "N")]
    loop_budget: Option<u64>,
    #[command(flatten)]
    clang: ClangArgs,
}

/// How a C input (`bpf2ptx build SOURCE`, or a `.c` file given to any command) is
/// compiled; see `bpf2ptx::build`.
#[derive(Args)]
struct ClangArgs {
    /// The clang that compiles C inputs (`.c`); default: $BPF2PTX_CLANG, else clang, else
    /// the highest clang-NN on PATH.
    #[arg(long, global = true, value_name = "PATH")]
    clang: Option<PathBuf>,
    /// An include folder for C inputs (clang -I). The project header bpf2ptx_helpers.h
    /// needs none: bpf2ptx provides it. Repeatable.
    #[arg(short = 'I', global = true, value_name = "DIR")]
    include: Vec<PathBuf>,
    /// A macro for C inputs (clang -D NAME or -D NAME=VALUE). Repeatable.
    #[arg(short = 'D', global = true, value_name = "NAME[=VALUE]")]
    define: Vec<String>,
    /// Keep the object clang made of a C input: beside the output (or the source, for a
    /// command without one), named like the source with `.o` (x.bpf.c -> x.bpf.o).
    #[arg(long, global = true)]
    keep_object: bool,
}

impl ClangArgs {
    fn flags(&self) -> bpf2ptx::build::Flags {
        bpf2ptx::build::Flags {
            clang: self.clang.clone(),
            includes: self.include.clone(),
            defines: self.define.clone(),
            keep_object: self.keep_object,
        }
    }
}

#[derive(Args)]
struct CompileArgs {
    /// The input file.
    file: Option<PathBuf>,
    /// Output file (`-` for stdout); default: FILE with the extension `.ptx`. Written
    /// atomically: on error nothing is written.
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    target: TargetArgs,
    /// `NAME=sharded`: give map NAME per-SM replicas even where the program also reads it
    /// (maps that are only added to are sharded anyway); `NAME=unsharded`: one copy even
    /// then. `NAME=host`: the host will put NAME in pinned host memory, so the module's
    /// atomics use `.sys` scope; `NAME=device`: it stays in device memory. Rings (ringbuf,
    /// GPU ringbuf, perf event array) default to host, every other map to device.
    /// Repeatable.
    #[arg(long = "map", value_name = "NAME=device|host|sharded|unsharded")]
    map: Vec<String>,
    /// A Linux config file (`CONFIG_X=y|n|m|NUMBER|"STRING"`) giving the values of the
    /// object's kconfig externs (`extern ... __kconfig`); `LINUX_KERNEL_VERSION` defaults
    /// to the running kernel's, `__weak` externs to 0.
    #[arg(long, value_name = "FILE")]
    kconfig: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct TargetArgs {
    /// GPU target: sm_70, sm_75, sm_80, sm_86, sm_89, sm_90, sm_100 or sm_120. The PTX
    /// .version is the lowest the target allows (specs/targets.md).
    #[arg(long, default_value = "sm_70")]
    target: String,
    /// Also emit a standalone `.entry` kernel per program (`bpf2ptx_entry_<program>`).
    #[arg(long)]
    entry: bool,
    /// Which threads of an `.entry` kernel run the probe: every thread, one lane per warp
    /// (the lowest active lane) or one thread per block (tid 0,0,0); a program whose
    /// section names a granularity (`gpu/entry.warp/K`) keeps its own.
    #[arg(long, value_enum, default_value_t = GranularityArg::Thread)]
    granularity: GranularityArg,
}

#[derive(Clone, Copy, ValueEnum)]
enum GranularityArg {
    Thread,
    Warp,
    Block,
}

impl From<GranularityArg> for ptx::Granularity {
    fn from(g: GranularityArg) -> Self {
        match g {
            GranularityArg::Thread => ptx::Granularity::Thread,
            GranularityArg::Warp => ptx::Granularity::Warp,
            GranularityArg::Block => ptx::Granularity::Block,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Compile a probe's C source to a BPF object with clang and verify its GPU programs:
    /// `-target bpf -O2 -g`, the highest -mcpu clang accepts, the system include folders,
    /// and bpf2ptx_helpers.h provided (no -I needed); -I, -D and --clang as given. clang's
    /// messages pass through; exit 0 written, 1 a program rejected (nothing written),
    /// 2 no clang, clang failed, or bad input.
    Build {
        /// The C source (compiled as C whatever its extension).
        source: PathBuf,
        /// The object (`-` for stdout); default: SOURCE with the extension `.o`
        /// (x.bpf.c -> x.bpf.o). Written atomically.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Also write a make-style dependency file naming the source and every header
        /// clang read (`OUT: SOURCE HEADER...`), for Make's `-include` and CMake's
        /// `DEPFILE`.
        #[arg(long, value_name = "FILE")]
        depfile: Option<PathBuf>,
    },
    /// Print what an input holds: sections, maps, programs, disassembly with relocations
    /// and source lines.
    Dump {
        /// The input file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Prove every program of an input safe: termination, bounded memory access, helper
    /// use. Prints each program's worst-case instruction count, or every violation with its
    /// instruction, source line, register state and path (exit 0 every program accepted,
    /// 1 one rejected, 2 bad input, or no GPU programs to verify).
    Verify {
        /// The input file.
        file: PathBuf,
        /// Output format (`json`: the schema in specs/verifier.md).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// A Linux config file giving the values of kconfig externs, as for `bpf2ptx
        /// FILE --kconfig`.
        #[arg(long, value_name = "FILE")]
        kconfig: Option<PathBuf>,
        /// Also print each error's raw verifier state: register values as the verifier
        /// holds them (ranges, known bits) and the last branch decisions one by one.
        #[arg(long, short)]
        verbose: bool,
    },
    /// Run a program once on the GPU (or the reference interpreter) and print r0; with a
    /// directory, run every .data file in it and print `N passed, N failed`.
    Run {
        /// A file, or a directory of bpf_conformance .data files.
        path: PathBuf,
        /// Bytes passed to the program in r1 (length in r2); default: the file's `-- mem`.
        #[arg(long)]
        mem: Option<PathBuf>,
        /// Run the reference interpreter instead of the GPU.
        #[arg(long)]
        cpu: bool,
        /// GPU target of the PTX.
        #[arg(long, default_value = "sm_70")]
        target: String,
        /// Blocks to launch (GPU; every thread runs the program).
        #[arg(long, default_value_t = 1)]
        grid: u32,
        /// Threads per block (GPU).
        #[arg(long, default_value_t = 1)]
        block: u32,
        /// After the run, print every map as JSON (GPU).
        #[arg(long)]
        maps: bool,
        /// The program to run, by name (default: the object's first).
        #[arg(long)]
        program: Option<String>,
        /// Which threads run the probe (GPU), unless its section names a granularity
        /// (`gpu/entry.warp/K`).
        #[arg(long, value_enum, default_value_t = GranularityArg::Thread)]
        granularity: GranularityArg,
        /// Where a map lives: `NAME=device`, `NAME=host` (pinned host memory the host can
        /// read while the kernel runs; the default for rings, which are drained while the
        /// kernel runs; device for every other map), `NAME=sharded` (per-SM replicas the host
        /// sums, even where the program also reads the map) or `NAME=unsharded` (one copy
        /// even where the program only adds to it). Repeatable.
        #[arg(long = "map", value_name = "NAME=device|host|sharded|unsharded")]
        placement: Vec<String>,
        /// Read rings in host memory only after the kernel, instead of draining them while
        /// it runs (to see what a ring drops without a reader). With the environment
        /// variable BPF2PTX_DRAIN_STATS set, a run that drained prints what the drainer did
        /// (passes, consumer publishes, records, when) on stderr.
        #[arg(long)]
        no_drain: bool,
    },
    /// Merge probes into an application's kernels: calls at kernel entry, before every
    /// exit, before every memory access, or before the instructions an opcode names, per
    /// the probes' section names. Kernels no
    /// probe matches are left byte for byte as they were. Exit 0 written; 1 a probe
    /// rejected, or no probe matches any kernel (the error lists the kernels; nothing is
    /// written; see --allow-no-match); 2 bad input.
    Inject(InjectArgs),
    /// Run COMMAND with the probes attached: every kernel the probes match is
    /// instrumented when the application first launches it (the application is not
    /// rebuilt; its modules need PTX), and the maps are printed every --interval and when
    /// it ends. Exit: the command's own code (128 + signal); 1 a probe rejected, 2 bad
    /// input, before the command runs. Needs the interposer library beside bpf2ptx
    /// (`cargo build --release` puts it there) or in BPF2PTX_INTERPOSER.
    Trace(bpf2ptx::trace::TraceArgs),
    /// Instrument Triton kernels through Triton's own dump and override directories
    /// (Triton 3.0 or newer), without trace: `--dump-dir D --override-dir O` instruments
    /// every `D/<hash>/<kernel>.ptx` the probes match into O, for a run with
    /// `TRITON_KERNEL_OVERRIDE=1 TRITON_OVERRIDE_DIR=O`; `-- COMMAND` runs the command
    /// once dumping, instruments, runs it again with the instrumented kernels, and checks
    /// that Triton used them. Exit: the instrumented run's code; 1 a probe rejected or no
    /// probe matches a kernel; 2 bad input, or a Triton that ignored the override.
    Triton(bpf2ptx::triton::TritonArgs),
}

#[derive(Args)]
struct InjectArgs {
    /// The probes: a BPF ELF object whose programs are in attach-point sections
    /// (gpu/entry/K, gpu/exit/K, gpu/mem/K, gpu/insn/K/OPCODE, kprobe/K, kretprobe/K,
    /// kprobe/__memcapture).
    probes: PathBuf,
    /// The application: its PTX (nvcc -ptx), or a fatbin, executable, shared library or
    /// object file nvcc built with PTX in it (`-gencode arch=compute_XX,code=compute_XX`).
    #[arg(long, value_name = "APP")]
    into: PathBuf,
    /// With a container holding several PTX entries of the highest architecture: the
    /// index of the one to instrument (the error lists them).
    #[arg(long, value_name = "INDEX")]
    ptx_entry: Option<usize>,
    /// With a container holding PTX for several virtual architectures: the one to
    /// instrument (`compute_80`, `compute_90a`, ...), told apart by the PTX's `.target`
    /// (nvcc 13 keeps `compute_90` and `compute_90a` PTX for `-arch=sm_90a`); default the
    /// highest. The compiler launcher cli/cmake/bpf2ptx-embed instruments each in turn.
    #[arg(long, value_name = "ARCH")]
    ptx_arch: Option<String>,
    /// The instrumented PTX (`-` for stdout). Written atomically.
    #[arg(short, long)]
    output: PathBuf,
    /// Which threads run probes whose section names no granularity.
    #[arg(long, value_enum, default_value_t = GranularityArg::Thread)]
    granularity: GranularityArg,
    /// Declare the probes `.extern .func` instead of merging their code; link the module
    /// of `bpf2ptx PROBES -o probes.ptx` with the output (cuLink, or nvlink -rdc).
    #[arg(long = "extern")]
    extern_probes: bool,
    /// Call each probe's one function from every site instead of inlining its body at
    /// each site (smaller PTX; inlining folds each site's constant context and is faster).
    #[arg(long)]
    call: bool,
    /// Write the attach sites (site id = input line, kernel, instruction, source line) as
    /// JSON to this file.
    #[arg(long, value_name = "FILE")]
    sites: Option<PathBuf>,
    /// `NAME=device|host|sharded|unsharded`: a map's placement, as for `bpf2ptx run`;
    /// `NAME=live`: a host reads NAME while the kernel runs, so every update of it reaches
    /// the map where the probe makes it (no register accumulation or forwarding touches
    /// it). Repeatable.
    #[arg(long = "map", value_name = "NAME=device|host|sharded|unsharded|live")]
    map: Vec<String>,
    /// Lower every site as without fusion: each add reaches its map at its site, and every
    /// load reads memory (for comparison; fusion changes no map's final contents,
    /// specs/verifier.md "Register accumulation and forwarding").
    #[arg(long)]
    no_fuse: bool,
    /// Lower the probes as `bpf2ptx trace` does, so a host may bind every map to storage
    /// outside the module (specs/abi.md, "Rebinding maps"): arrays found through
    /// descriptor word 3, rings and writable global data through reference words. Unbound,
    /// the module uses its own storage as without it: what this is for is measuring the
    /// trace lowering's cost (benches/gpu/run.sh).
    #[arg(long)]
    rebind_maps: bool,
    /// When no probe matches any kernel of APP (an empty APP has none), write APP
    /// unchanged and exit 0 with a note, instead of exit 1 without writing.
    #[arg(long)]
    allow_no_match: bool,
    /// A Linux config file giving the values of the probes' kconfig externs, as for
    /// `bpf2ptx FILE --kconfig`.
    #[arg(long, value_name = "FILE")]
    kconfig: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let flags = cli.clang.flags();
    let code = match cli.command {
        Some(Command::Build {
            source,
            output,
            depfile,
        }) => build_cmd(
            &source,
            output.as_deref(),
            depfile.as_deref(),
            &flags,
            cli.loop_budget,
        ),
        Some(Command::Dump { file, format }) => dump(&file, format, &flags),
        Some(Command::Verify {
            file,
            format,
            kconfig,
            verbose,
        }) => verify(
            &file,
            format,
            kconfig.as_deref(),
            cli.loop_budget,
            verbose,
            &flags,
        ),
        Some(Command::Inject(args)) => inject_cmd(&args, cli.loop_budget, &flags),
        Some(Command::Trace(args)) => bpf2ptx::trace::trace(&args, cli.loop_budget, &flags),
        Some(Command::Triton(args)) => bpf2ptx::triton::triton(&args, cli.loop_budget, &flags),
        Some(Command::Run {
            path,
            mem,
            cpu,
            target,
            grid,
            block,
            maps,
            program,
            granularity,
            placement,
            no_drain,
        }) => {
            let g = ptx::Granularity::from(granularity);
            let custom =
                grid > 1 || block > 1 || maps || program.is_some() || !placement.is_empty();
            if !cpu && !path.is_dir() && (custom || g != ptx::Granularity::Thread) {
                let launch = bpf2ptx_loader::gpu::Launch { grid, block };
                run_probe(
                    &path,
                    &ProbeRun {
                        mem: mem.as_deref(),
                        target: &target,
                        launch,
                        maps,
                        program: program.as_deref(),
                        granularity: g,
                        placement: &placement,
                        live_drain: !no_drain,
                        loop_budget: cli.loop_budget,
                    },
                    &flags,
                )
            } else {
                run_cmd(&path, mem.as_deref(), cpu, &target, cli.loop_budget, &flags)
            }
        }
        None => match cli.compile.file {
            Some(file) => compile_cmd(
                &file,
                cli.compile.output.as_deref(),
                &cli.compile.target,
                &cli.compile.map,
                cli.compile.kconfig.as_deref(),
                cli.loop_budget,
                &flags,
            ),
            None => {
                eprintln!("error: no input file (try `bpf2ptx --help`)");
                exit::BAD_INPUT
            }
        },
    };
    std::process::exit(stdout_status(code));
}

fn inject_cmd(a: &InjectArgs, loop_budget: Option<u64>, flags: &bpf2ptx::build::Flags) -> i32 {
    use bpf2ptx::inject;
    let opts = inject::Options {
        granularity: a.granularity.into(),
        extern_probes: a.extern_probes,
        call: a.call,
        maps: a.map.clone(),
        kconfig: a.kconfig.clone(),
        loop_budget,
        flags: flags.clone(),
        no_fuse: a.no_fuse,
        rebind_maps: a.rebind_maps,
    };
    let app_file = a.into.display().to_string();
    let result = inject::app_ptx_for(&a.into, a.ptx_entry, a.ptx_arch.as_deref()).and_then(|app| {
        let inject::Injected {
            woven,
            skipped,
            no_match,
        } = inject::inject_object(
            load_input(&a.probes, flags, Some(&a.output))?,
            &app,
            &app_file,
            &opts,
        )?;
        for (name, section) in &skipped {
            eprintln!(
                "note: {}: skipped host-side program {name} (section {section})",
                a.probes.display()
            );
        }
        for p in &woven.elided {
            eprintln!("note: probe {p} has no effects; not called");
        }
        match no_match {
            Some(_) if a.allow_no_match => {
                eprintln!("note: no probe matches a kernel of {app_file}; output = input");
            }
            Some(e) => return Err(e.into()),
            None if woven.sites.is_empty() => {
                eprintln!("note: no attach sites in {app_file}; output = input");
            }
            None => {}
        }
        if let Some(path) = &a.sites {
            let json = serde_json::to_string_pretty(&woven.sites).expect("serialises") + "\n";
            compile::write_output(path, &json, &[&a.probes, &a.into, &a.output])?;
        }
        compile::write_output(&a.output, &woven.text, &[&a.probes, &a.into])?;
        Ok(())
    });
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// Loads FILE, compiling it with clang first when it is C (`bpf2ptx::build::Input`); with
/// `--keep-object` the object clang made is kept beside `near` (the command's output), or
/// beside the source where the command has none.
fn load_input(
    file: &Path,
    flags: &bpf2ptx::build::Flags,
    near: Option<&Path>,
) -> Result<Object, CompileError> {
    let input = bpf2ptx::build::Input::open(file, flags)?;
    if flags.keep_object {
        if let Some(kept) = input.keep(near.unwrap_or(file))? {
            eprintln!(
                "note: kept the object of {} as {}",
                file.display(),
                kept.display()
            );
        }
    }
    input.load()
}

/// [`load_input`] for a command without an output, the error printed.
fn load(file: &Path, flags: &bpf2ptx::build::Flags) -> Result<Object, i32> {
    load_input(file, flags, None).map_err(|e| {
        eprintln!("error: {e}");
        e.exit_code()
    })
}

/// `bpf2ptx build SOURCE [-o OUT]`.
fn build_cmd(
    source: &Path,
    output: Option<&Path>,
    depfile: Option<&Path>,
    flags: &bpf2ptx::build::Flags,
    loop_budget: Option<u64>,
) -> i32 {
    let out = output.map_or_else(
        || source.with_file_name(bpf2ptx::build::object_name(source)),
        Path::to_path_buf,
    );
    let result =
        bpf2ptx::build::build_object(source, &out, flags, loop_budget).and_then(
            |b| match depfile {
                Some(d) => compile::write_output(d, &b.depfile(&out), &[source, &out]),
                None => Ok(()),
            },
        );
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn dump(file: &Path, format: Format, flags: &bpf2ptx::build::Flags) -> i32 {
    let obj = match load(file, flags) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let d = Dump::new(&obj);
    let text = match format {
        Format::Text => d.to_text(),
        Format::Json => d.to_json(),
    };
    // A closed pipe (`bpf2ptx dump x | head`) is not an error; a full disk is
    // (`stdout_status`).
    note_stdout(std::io::stdout().write_all(text.as_bytes()));
    exit::OK
}

fn compile_cmd(
    file: &Path,
    output: Option<&Path>,
    t: &TargetArgs,
    map: &[String],
    kconfig: Option<&Path>,
    loop_budget: Option<u64>,
    flags: &bpf2ptx::build::Flags,
) -> i32 {
    let opts = ptx::Options {
        target: t.target.clone(),
        entry: t.entry,
        granularity: t.granularity.into(),
        loop_budget,
        ..Default::default()
    };
    let out = output
        .map(Path::to_path_buf)
        .unwrap_or_else(|| file.with_extension("ptx"));
    let result = load_input(file, flags, Some(&out))
        .and_then(|mut obj| {
            compile::apply_kconfig(&mut obj, kconfig)?;
            let (gpu, skipped) = compile::gpu_programs(&obj);
            for (name, section) in &skipped {
                eprintln!(
                    "note: {}: skipped host-side program {name} (section {section})",
                    obj.file
                );
            }
            if gpu.programs.is_empty() {
                return Err(CompileError::NoGpuPrograms {
                    file: obj.file.clone(),
                });
            }
            let (maps, _) = compile::map_options(&gpu, map).map_err(CompileError::Options)?;
            let opts = ptx::Options {
                sharded: maps.sharded,
                unsharded: maps.unsharded,
                host: maps.host,
                ..opts.clone()
            };
            compile::compile(&gpu, &opts)
        })
        .and_then(|text| compile::write_output(&out, &text, &[file]));
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}
