//! `bpf2ptx trace PROBES -- COMMAND`: one trace session, from the probes' verification to
//! the last snapshot.
//!
//! ```text
//!  verify the probes (exit 1/2 before anything runs)
//!    ▼
//!  session folder: config.json (wire::Config)      ◀── the interposer reads it
//!    ▼
//!  COMMAND with LD_PRELOAD=libbpf2ptx_interposer.so, BPF2PTX_TRACE_DIR=folder
//!    │ every --interval: snapshot.json (raw map bytes) ─▶ image::decode ─▶ render
//!    ▼ the command ends (exit, signal): the last snapshot, marked with how it ended
//!  events.jsonl ─▶ one line per instrumented module (inject and JIT time) on stderr, or
//!                  which kernels ran when no probe matched any
//! ```
//!
//! The front end never touches the GPU: the interposer, inside the application, copies
//! the maps out. SIGINT and SIGTERM reach the application (its process group's terminal
//! sends them to both); the front end only notes them and prints the last snapshot the
//! application left when it ends.

use super::wire::{self, Config, Event as WireEvent, RawSnapshot};
use super::{map_types, object_btf, render, ring_events, AppEnd, MapTypes, Snapshot};
use super::{Format, TraceArgs, TracedMap};
use crate::compile::{self, CompileError};
use crate::exit;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::image::{self, RawRing};
use bpf2ptx_runtime::MapKind;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The environment variable that names the interposer library, when it is not beside the
/// `bpf2ptx` executable (where `cargo build` puts both).
pub const INTERPOSER_VAR: &str = "BPF2PTX_INTERPOSER";
/// The interposer's file name.
pub const INTERPOSER_FILE: &str = "libbpf2ptx_interposer.so";

/// Runs a trace session; returns the exit code: the command's own (128 + the signal that
/// ended it), or 1 (a probe rejected) / 2 (bad input, the command cannot start) before it
/// runs.
pub fn trace(args: &TraceArgs, loop_budget: Option<u64>, flags: &crate::build::Flags) -> i32 {
    match Session::start(args, loop_budget, flags) {
        Ok(s) => s.run(args),
        Err(e) => {
            eprintln!("error: {}", e.message);
            e.code
        }
    }
}

/// Why a session did not start.
#[derive(Debug)]
struct StartError {
    message: String,
    code: i32,
}

impl From<crate::build::BuildError> for StartError {
    fn from(e: crate::build::BuildError) -> StartError {
        CompileError::from(e).into()
    }
}

impl From<CompileError> for StartError {
    fn from(e: CompileError) -> StartError {
        StartError {
            code: e.exit_code(),
            message: e.to_string(),
        }
    }
}

fn bad(message: String) -> StartError {
    StartError {
        message,
        code: exit::BAD_INPUT,
    }
}

/// A started session: the application running under the interposer.
struct Session {
    obj: Object,
    // Held for its Drop: a C input's object, which the interposer reads while the
    // application runs.
    _input: crate::build::Input,
    types: Vec<MapTypes>,
    dir: tempfile::TempDir,
    child: std::process::Child,
    started: Instant,
    /// Maps marked `bpf2ptx:launch_spans` (first block start, last block end per launch).
    spans: Vec<usize>,
    /// Host programs' printk lines printed so far.
    printed_printk: usize,
}

impl Session {
    fn start(
        args: &TraceArgs,
        loop_budget: Option<u64>,
        flags: &crate::build::Flags,
    ) -> Result<Session, StartError> {
        // A C input is compiled first; the interposer gets the object (config.json).
        let input = crate::build::Input::open(&args.probes, flags)?;
        if flags.keep_object {
            if let Some(kept) = input.keep(&args.probes)? {
                eprintln!(
                    "note: kept the object of {} as {}",
                    args.probes.display(),
                    kept.display()
                );
            }
        }
        let obj = input.load()?;
        let object = input.object_path();
        let (gpu, _host) = compile::gpu_programs(&obj);
        if gpu.programs.is_empty() {
            return Err(CompileError::NoGpuPrograms { file: obj.file }.into());
        }
        let opts = ptx::Options {
            loop_budget,
            ..Default::default()
        };
        // Rejected probes stop here, before the application starts: GPU programs, then
        // host-side programs (their helpers, maps and contexts; crate::host).
        compile::resolve(&gpu, &opts)?;
        crate::host::HostPrograms::load(&obj, &[]).map_err(|e| StartError {
            code: match e {
                crate::host::HostError::Rejected { .. } => exit::REJECTED,
                _ => exit::BAD_INPUT,
            },
            message: e.to_string(),
        })?;
        // The BTF of the object (a C input's compiled object), named as the user gave it.
        let bytes =
            std::fs::read(object).map_err(|e| bad(format!("{}: {e}", args.probes.display())))?;
        let btf = object_btf(&bytes).map_err(|e| bad(format!("{}: {e}", args.probes.display())))?;
        let spans = super::types::launch_span_maps(&obj, btf.as_ref());
        let types = map_types(&obj, btf.as_ref(), &args.hist).map_err(|e| bad(e.to_string()))?;
        let interposer = interposer()?;
        let dir = tempfile::Builder::new()
            .prefix("bpf2ptx-trace-")
            .tempdir()
            .map_err(|e| bad(format!("session folder: {e}")))?;
        let probes = std::fs::canonicalize(object)
            .map_err(|e| bad(format!("{}: {e}", args.probes.display())))?;
        Config {
            probes,
            granularity: None,
            maps: Vec::new(),
            loop_budget,
            interval_ms: args.interval.as_millis().max(1) as u64,
            cache: jit_cache(),
            launch_log: args.trace_events.is_some(),
        }
        .write(dir.path())
        .map_err(|e| bad(format!("session folder: {e}")))?;
        let preload = match std::env::var_os("LD_PRELOAD") {
            Some(p) if !p.is_empty() => {
                let mut v = interposer.into_os_string();
                v.push(":");
                v.push(p);
                v
            }
            _ => interposer.into_os_string(),
        };
        catch_signals();
        let (cmd, rest) = args
            .command
            .split_first()
            .ok_or_else(|| bad("no command".into()))?;
        let child = std::process::Command::new(cmd)
            .args(rest)
            .env("LD_PRELOAD", preload)
            .env(wire::DIR_VAR, dir.path())
            .spawn()
            .map_err(|e| bad(format!("{}: {e}", Path::new(cmd).display())))?;
        Ok(Session {
            obj,
            _input: input,
            spans,
            printed_printk: 0,
            types,
            dir,
            child,
            started: Instant::now(),
        })
    }

    fn run(mut self, args: &TraceArgs) -> i32 {
        let mut out = match Output::open(args.output.as_deref()) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: {e}");
                let _ = self.child.kill();
                return exit::BAD_INPUT;
            }
        };
        let mut last_seen = None;
        let mut next = self.started + args.interval;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) => {}
                Err(e) => {
                    eprintln!("error: waiting for the command: {e}");
                    break None;
                }
            }
            if Instant::now() >= next {
                next += args.interval;
                if let Some(raw) = wire::read(self.dir.path()) {
                    if last_seen != Some(raw.time_ns) {
                        last_seen = Some(raw.time_ns);
                        self.print(&raw, None, args.format, &mut out);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10).min(args.interval));
        };
        let end = status.map(app_end);
        let raw = wire::read(self.dir.path());
        match &raw {
            Some(raw) => self.print(raw, end, args.format, &mut out),
            None => self.print(&RawSnapshot::default(), end, args.format, &mut out),
        }
        if let Some(path) = &args.trace_events {
            if let Err(e) = self.write_trace_events(path, raw.as_ref()) {
                eprintln!("error: {}: {e}", path.display());
            }
        }
        self.report();
        match end {
            Some(AppEnd::Exited { code }) => code,
            Some(AppEnd::Signaled { signal }) => 128 + signal,
            None => exit::BAD_INPUT,
        }
    }

    /// The snapshots of `raw`, one per instrumented module (each has its own maps today),
    /// labelled with the module when there are several.
    fn decode(&self, raw: &RawSnapshot, end: Option<AppEnd>) -> Vec<(String, Snapshot)> {
        let mut out = Vec::new();
        let shared = wire::ModuleMaps {
            label: "shared".into(),
            maps: raw.shared.clone(),
        };
        let mut modules: Vec<&wire::ModuleMaps> = raw.modules.iter().collect();
        if modules.is_empty() && !raw.shared.is_empty() {
            modules.push(&shared);
        }
        for module in modules {
            let mut maps = Vec::new();
            let mut events = Vec::new();
            // The maps host programs share are one instance, shown with every module.
            let own = module.maps.iter();
            let with_shared = own.chain(raw.shared.iter().filter(|_| module.label != "shared"));
            for rm in with_shared.filter(|m| !m.desc.is_empty()) {
                let Some(k) = self.obj.maps.iter().position(|m| m.name == rm.name) else {
                    continue;
                };
                let m = &self.obj.maps[k];
                let desc: Vec<u8> = rm.desc.iter().flat_map(|w| w.to_le_bytes()).collect();
                let storage = wire::unhex(&rm.data).unwrap_or_default();
                let counts = rm.counts.as_deref().and_then(wire::unhex);
                let counters = rm.counters.as_deref().and_then(wire::unhex);
                let ring = counters.filter(|_| m.is(MapKind::is_ring)).map(|c| {
                    let word = |i: usize| {
                        c.get(i * 8..i * 8 + 8)
                            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()))
                    };
                    RawRing {
                        counters: [word(0), word(1)],
                        taken: &[],
                        taken_error: None,
                    }
                });
                let raw_map = image::RawMap {
                    desc: &desc,
                    storage: &storage,
                    counts: counts.as_deref(),
                    ring,
                };
                match image::decode(m, &raw_map) {
                    Ok(image) => {
                        if m.is(MapKind::is_ring) {
                            events.extend(ring_events(&m.name, &image, raw.time_ns));
                        }
                        maps.push(TracedMap {
                            map: m.clone(),
                            types: self.types[k].clone(),
                            image,
                        });
                    }
                    Err(e) => eprintln!("bpf2ptx trace: {}: {e}", module.label),
                }
            }
            let snap = Snapshot {
                elapsed_ns: raw.time_ns,
                device: None,
                end,
                maps,
                loop_budget: Vec::new(),
                printk_dropped: 0,
                events,
            };
            out.push((module.label.clone(), snap));
        }
        if out.is_empty() {
            out.push((
                String::new(),
                Snapshot {
                    elapsed_ns: self.started.elapsed().as_nanos() as u64,
                    device: None,
                    end,
                    maps: Vec::new(),
                    loop_budget: Vec::new(),
                    printk_dropped: 0,
                    events: Vec::new(),
                },
            ));
        }
        out
    }

    fn print(&mut self, raw: &RawSnapshot, end: Option<AppEnd>, format: Format, out: &mut Output) {
        let mut snaps = self.decode(raw, end);
        // Host programs' printk lines that arrived since the last print, as records of
        // the first snapshot, at their time since the start.
        let events = wire::read_events(self.dir.path());
        let start = events.iter().find_map(|e| match e {
            WireEvent::Clock { start_ns, .. } => Some(*start_ns),
            _ => None,
        });
        let lines: Vec<(u64, String)> = events
            .into_iter()
            .filter_map(|e| match e {
                WireEvent::Printk { ns, line } => Some((ns, line)),
                _ => None,
            })
            .collect();
        if let Some((_, first)) = snaps.first_mut() {
            for (ns, line) in lines.iter().skip(self.printed_printk) {
                first.events.push(super::Event {
                    ns: start.map_or(0, |s| ns.saturating_sub(s)),
                    data: super::EventData::Printk { line: line.clone() },
                });
            }
            first.events.sort_by_key(|e| e.ns);
            self.printed_printk = lines.len();
        }
        let several = snaps.len() > 1;
        for (label, snap) in snaps {
            if several && format == Format::Text {
                out.write(&format!("== {label}\n"));
            }
            out.write(&render(&snap, format));
        }
    }

    fn write_trace_events(&self, path: &Path, raw: Option<&RawSnapshot>) -> std::io::Result<()> {
        let snaps = raw.map(|r| self.decode(r, None)).unwrap_or_default();
        let wire_events = wire::read_events(self.dir.path());
        let launches = super::events::launches(
            &wire::read_launches(self.dir.path()),
            &wire_events,
            snaps.iter().flat_map(|(_, s)| s.maps.iter()).filter(|m| {
                self.spans
                    .iter()
                    .any(|&k| self.obj.maps[k].name == m.map.name)
            }),
        );
        let calibrations = super::events::calibrations(&wire_events);
        let events: Vec<_> = snaps.into_iter().flat_map(|(_, s)| s.events).collect();
        let json = super::events::trace_events_with(&launches, &events, &calibrations);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&json)?)?;
        std::fs::rename(tmp, path)
    }

    /// What the interposer did, on stderr: each instrumented module with its inject and
    /// JIT time (the first launch's cost), or, when no probe matched a kernel, the
    /// kernels that ran.
    fn report(&self) {
        let events = wire::read_events(self.dir.path());
        let mut seen = Vec::new();
        let mut matched = false;
        for e in &events {
            match e {
                WireEvent::Instrumented {
                    label,
                    kernels,
                    inject_ms,
                    jit_ms,
                    cached,
                } => eprintln!(
                    "bpf2ptx trace: {label}: probes in {} (inject {inject_ms:.1} ms, {} {jit_ms:.1} ms)",
                    kernels.join(", "),
                    if *cached { "cached JIT" } else { "JIT" }
                ),
                WireEvent::Kernel {
                    name, matched: m, ..
                } => {
                    matched |= m;
                    seen.push(name.as_str());
                }
                _ => {}
            }
        }
        if !matched {
            if seen.is_empty() {
                eprintln!("bpf2ptx trace: no probe matched a kernel: no kernel was launched");
            } else {
                eprintln!(
                    "bpf2ptx trace: no probe matched a kernel; kernels launched: {}",
                    seen.join(", ")
                );
            }
        }
    }
}

/// How the command ended.
fn app_end(status: std::process::ExitStatus) -> AppEnd {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => AppEnd::Exited { code },
        (None, Some(signal)) => AppEnd::Signaled { signal },
        (None, None) => AppEnd::Exited { code: -1 },
    }
}

/// The interposer: [`INTERPOSER_VAR`], else beside this executable.
fn interposer() -> Result<PathBuf, StartError> {
    let path = match std::env::var_os(INTERPOSER_VAR) {
        Some(p) => PathBuf::from(p),
        None => std::env::current_exe()
            .map_err(|e| bad(format!("this executable's path: {e}")))?
            .with_file_name(INTERPOSER_FILE),
    };
    if !path.is_file() {
        return Err(bad(format!(
            "{}: the interposer is missing (`cargo build --release` builds it beside bpf2ptx; \
             or set {INTERPOSER_VAR})",
            path.display()
        )));
    }
    std::fs::canonicalize(&path).map_err(|e| bad(format!("{}: {e}", path.display())))
}

/// The JIT cache folder: `$XDG_CACHE_HOME/bpf2ptx/jit`, else `~/.cache/bpf2ptx/jit`.
fn jit_cache() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("bpf2ptx").join("jit"))
}

/// SIGINT and SIGTERM, meant for the application, must not end the front end before
/// it printed the last snapshot. A handler (not SIG_IGN, which the application would
/// inherit through exec) that does nothing: the application gets the signal from the
/// terminal or from whoever sent it to the process group.
fn catch_signals() {
    extern "C" fn noted(_: libc::c_int) {}
    // SAFETY: installing an async-signal-safe handler that does nothing.
    unsafe {
        libc::signal(libc::SIGINT, noted as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, noted as *const () as libc::sighandler_t);
    }
}

/// Where snapshots go: standard output, or `--output FILE`.
enum Output {
    Stdout,
    File(std::fs::File),
}

impl Output {
    fn open(path: Option<&Path>) -> Result<Output, String> {
        match path {
            None => Ok(Output::Stdout),
            Some(p) => std::fs::File::create(p)
                .map(Output::File)
                .map_err(|e| format!("{}: {e}", p.display())),
        }
    }

    fn write(&mut self, text: &str) {
        let _ = match self {
            Output::Stdout => {
                let mut o = std::io::stdout().lock();
                o.write_all(text.as_bytes()).and_then(|_| o.flush())
            }
            Output::File(f) => f.write_all(text.as_bytes()),
        };
    }
}
