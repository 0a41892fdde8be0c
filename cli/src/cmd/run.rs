//! `bpf2ptx run`: one program once, on the GPU or the reference interpreter (`--cpu`),
//! or every `.data` file of a directory ([`run_cmd`]); or one program on a grid of
//! threads with its maps placed, drained and printed ([`run_probe`]). r0, the expected
//! result and the run's notes are printed here; the runs themselves are the library's
//! (`bpf2ptx::run`, bpf2ptx-loader).
//!
//! Its own file because it holds two ways of running, each with its options, its
//! printing and its exit codes: the largest of the binary's commands, a quarter of what
//! main.rs was. `cmd::run`, a module of the binary, is not the library's `bpf2ptx::run`,
//! which it calls.

use crate::load;
use bpf2ptx::compile;
use bpf2ptx::exit;
use bpf2ptx::run::{self, RunOptions};
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use std::path::Path;

pub(crate) fn run_cmd(
    path: &Path,
    mem: Option<&Path>,
    cpu: bool,
    target: &str,
    loop_budget: Option<u64>,
    flags: &bpf2ptx::build::Flags,
) -> i32 {
    let opts_ptx = ptx::Options {
        target: target.to_string(),
        entry: true,
        loop_budget,
        ..Default::default()
    };
    // Host-side programs (`host/launch/K`, `uprobe`) run on the CPU at CUDA launches under
    // `bpf2ptx trace`, with a context only that has: `run` runs the object's first GPU
    // program, on either engine, and says which it skipped.
    let gpu_only = |obj: &Object| -> Object {
        let (gpu, skipped) = compile::gpu_programs(obj);
        for (name, section) in &skipped {
            eprintln!(
                "note: {}: skipped host-side program {name} (section {section})",
                obj.file
            );
        }
        gpu
    };
    let compile_fn = |obj: &Object| -> Result<(String, String), String> {
        let obj = &gpu_only(obj);
        let first = obj
            .programs
            .first()
            .ok_or_else(|| format!("{}: no GPU programs to run", obj.file))?;
        let text = compile::compile(obj, &opts_ptx).map_err(|e| e.to_string())?;
        Ok((text, ptx::entry_symbol(first)))
    };
    let interp_fn = |obj: &Object, mem: &mut [u8]| -> Result<u64, String> {
        let obj = &gpu_only(obj);
        if obj.programs.is_empty() {
            return Err(format!("{}: no GPU programs to run", obj.file));
        }
        let verified = compile::verify_budget(obj, loop_budget).map_err(|e| e.to_string())?;
        let facts = verified.facts(0);
        let opts = bpf2ptx_compiler::interp::Options {
            loop_budget: facts
                .loop_budget
                .map(|n| bpf2ptx_compiler::interp::LoopBudget {
                    n,
                    heads: facts.budget_heads.clone(),
                }),
            ..Default::default()
        };
        let mut interp = bpf2ptx_compiler::interp::Interp::new(obj, opts);
        let r0 = interp.run(0, mem).map_err(|e| e.to_string())?;
        if interp.budget_exhausted() > 0 {
            eprintln!(
                "note: {}: the loop budget ran out: the run ended there with r0 = 0 (loop_budget_exhausted: {})",
                obj.file,
                interp.budget_exhausted()
            );
        }
        Ok(r0)
    };
    let opts = RunOptions {
        mem,
        cpu,
        compile: &compile_fn,
        interp: Some(&interp_fn),
    };
    if path.is_dir() {
        let mut stdout = std::io::stdout();
        return match run::run_dir(path, &opts, &mut stdout) {
            Ok(s) if s.failed == 0 => exit::OK,
            Ok(_) => exit::REJECTED,
            Err(e) => {
                eprintln!("error: {e}");
                run_error_code(&e)
            }
        };
    }
    let obj = match load(path, flags) {
        Ok(o) => o,
        Err(c) => return c,
    };
    match run::run_object(obj, &opts) {
        Ok(o) => {
            out!("r0 = {:#x} ({})", o.r0, o.r0 as i64);
            if let Some(ms) = o.kernel_ms {
                out!("  [{:?}, kernel {ms:.3} ms]", o.engine);
            }
            outln!();
            match o.passed() {
                Some(true) => {
                    outln!("expected {:#x}: ok", o.expected.unwrap_or_default());
                    exit::OK
                }
                Some(false) => {
                    outln!(
                        "FAIL: expected {}",
                        o.expected
                            .map_or_else(|| "an error".to_string(), |e| format!("{e:#x}"))
                    );
                    exit::REJECTED
                }
                None => exit::OK,
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            run_error_code(&e)
        }
    }
}

/// How `run_probe` runs a program (the `run` options that concern one probe).
pub(crate) struct ProbeRun<'a> {
    pub(crate) mem: Option<&'a Path>,
    pub(crate) target: &'a str,
    pub(crate) launch: bpf2ptx_loader::gpu::Launch,
    pub(crate) maps: bool,
    pub(crate) program: Option<&'a str>,
    pub(crate) granularity: ptx::Granularity,
    pub(crate) placement: &'a [String],
    pub(crate) live_drain: bool,
    pub(crate) loop_budget: Option<u64>,
}

/// One program on a grid of threads, with its maps bound and, with `--maps`, printed.
pub(crate) fn run_probe(path: &Path, run: &ProbeRun<'_>, flags: &bpf2ptx::build::Flags) -> i32 {
    use bpf2ptx_loader::{gpu::Gpu, loader};
    let ProbeRun {
        mem,
        target,
        launch,
        maps,
        program,
        granularity,
        placement,
        live_drain,
        loop_budget,
    } = *run;
    let obj = match load(path, flags) {
        Ok(o) => o,
        Err(c) => return c,
    };
    let (map_opts, host) = match compile::map_options(&obj, placement) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::BAD_INPUT;
        }
    };
    let index = match program {
        None => 0,
        Some(name) => match obj.programs.iter().position(|p| p.name == name) {
            Some(k) => k,
            None => {
                let names: Vec<&str> = obj.programs.iter().map(|p| p.name.as_str()).collect();
                eprintln!(
                    "error: {}: no program `{name}` (programs: {})",
                    obj.file,
                    names.join(", ")
                );
                return exit::BAD_INPUT;
            }
        },
    };
    let opts = ptx::Options {
        target: target.to_string(),
        entry: true,
        granularity,
        sharded: map_opts.sharded,
        unsharded: map_opts.unsharded,
        host: loader::host_flags(&obj, &host).unwrap_or_default(),
        loop_budget,
        fuse: false,
        live: map_opts.live,
        // `bpf2ptx run` binds only what it sizes per launch: the module's own storage.
        rebind_maps: false,
    };
    let text = match compile::compile(&obj, &opts) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return e.exit_code();
        }
    };
    let input = match mem {
        Some(p) => match std::fs::read(p) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: {}: {e}", p.display());
                return exit::BAD_INPUT;
            }
        },
        None => obj.test.as_ref().map(|t| t.mem.clone()).unwrap_or_default(),
    };
    let result = (|| -> Result<_, loader::LoaderError> {
        let gpu = Gpu::open()?;
        let module = gpu.load(&text)?;
        let mut l = loader::Loader::new(&gpu, &module, &obj, &host)?;
        l.set_live_drain(live_drain);
        let r = l.run_entry(&obj.programs[index].name, launch.into(), &input)?;
        let dump = if maps { Some(l.maps_json()?) } else { None };
        Ok((
            r,
            l.printk()?,
            dump,
            l.losses()?,
            l.loop_budget_exhausted()?,
        ))
    })();
    match result {
        Ok((r, printk, dump, losses, budget)) => {
            // Nothing lost silently: every map operation that did not do what the
            // program asked is counted on the device and said here.
            for (name, counts) in losses {
                eprintln!("note: map {name}: {counts}");
            }
            // Nor a run the loop budget ended (--loop-budget).
            for (name, n) in budget {
                eprintln!("note: program {name}: loop_budget_exhausted: {n}");
            }
            let (r0, ms) = (r.r0, r.report.kernel_ms);
            out!(
                "r0 = {r0:#x} ({})  [{} threads, kernel {ms:.3} ms",
                r0 as i64,
                launch.threads()
            );
            if r.report.drained > 0 {
                out!(", {} records drained live", r.report.drained);
            }
            outln!("]");
            // What the live drainer did, on request (one line, stderr): the figures that
            // tell a drainer that kept up from one that started late or published seldom.
            let d = r.report.drain;
            if d.passes > 0 && std::env::var_os("BPF2PTX_DRAIN_STATS").is_some() {
                eprintln!(
                    "drain: {} records live in {} passes ({} idle), {} consumer publishes, \
                     at most {} records a pass, first taken after {} us, last after {} us \
                     (kernel {ms:.3} ms); {} records after the kernel",
                    d.records,
                    d.passes,
                    d.idle_passes,
                    d.publishes,
                    d.max_pass_records,
                    d.first_record_us,
                    d.last_record_us,
                    r.report.drained_after
                );
            }
            for line in printk {
                outln!("printk: {line}");
            }
            if let Some(d) = dump {
                outln!("{}", serde_json::to_string_pretty(&d).expect("serialises"));
            }
            exit::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            use bpf2ptx_loader::gpu::GpuError;
            match e {
                loader::LoaderError::Gpu(GpuError::NoDriver | GpuError::NoDevice) => exit::NO_GPU,
                _ => exit::REJECTED,
            }
        }
    }
}

fn run_error_code(e: &run::RunError) -> i32 {
    match e {
        run::RunError::Gpu(_) => exit::NO_GPU,
        run::RunError::Step { .. } => exit::REJECTED,
        _ => exit::BAD_INPUT,
    }
}
