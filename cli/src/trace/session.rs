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
use super::{map_types, moment, object_btf, render, ring_events, AppEnd, MapTypes, Snapshot};
use super::{DeviceView, Format, TraceArgs, TracedMap};
use crate::compile::{self, CompileError};
use crate::exit;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::image::{self, MapImage, RawRing};
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

    /// One map of `raw` decoded (`None`, said on stderr, when its bytes do not decode):
    /// its definition's index in the object and its contents.
    fn decode_map(&self, rm: &wire::RawMap, what: &str) -> Option<(usize, MapImage)> {
        let k = self.obj.maps.iter().position(|m| m.name == rm.name)?;
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
            Ok(image) => Some((k, image)),
            Err(e) => {
                eprintln!("bpf2ptx trace: {what}: {e}");
                None
            }
        }
    }

    /// The maps of `raws` that have a descriptor (global data is carried, not printed),
    /// decoded, with the records of their rings (device `device`'s).
    fn traced(
        &self,
        raws: &[wire::RawMap],
        what: &str,
        ns: u64,
        device: Option<u32>,
    ) -> (Vec<TracedMap>, Vec<super::Event>) {
        let mut maps = Vec::new();
        let mut events = Vec::new();
        for rm in raws.iter().filter(|m| !m.desc.is_empty()) {
            let Some((k, image)) = self.decode_map(rm, what) else {
                continue;
            };
            let m = &self.obj.maps[k];
            if m.is(MapKind::is_ring) {
                events.extend(ring_events(&m.name, &image, ns, device));
            }
            maps.push(TracedMap::new(m.clone(), self.types[k].clone(), image));
        }
        (maps, events)
    }

    /// The snapshots of `raw` ([`moment`]): one per device's map set and, with several,
    /// their sum; the maps host programs share (one instance for the process) with the
    /// only device, or in the sum. `host_events`: host programs' printk lines.
    fn decode(
        &self,
        raw: &RawSnapshot,
        end: Option<AppEnd>,
        host_events: Vec<super::Event>,
    ) -> Vec<Snapshot> {
        let devices: Vec<DeviceView> = raw
            .devices
            .iter()
            .map(|d| {
                let what = format!("device {}", d.device);
                let (maps, events) = self.traced(&d.maps, &what, raw.time_ns, Some(d.device));
                DeviceView {
                    device: d.device,
                    context: d.context,
                    maps,
                    events,
                }
            })
            .collect();
        let (process, _) = self.traced(&raw.shared, "shared maps", raw.time_ns, None);
        let elapsed = if raw.devices.is_empty() && raw.shared.is_empty() {
            self.started.elapsed().as_nanos() as u64
        } else {
            raw.time_ns
        };
        moment(elapsed, end, devices, process, host_events)
    }

    fn print(&mut self, raw: &RawSnapshot, end: Option<AppEnd>, format: Format, out: &mut Output) {
        // Host programs' printk lines that arrived since the last print, at their time
        // since the start.
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
        let host: Vec<super::Event> = lines
            .iter()
            .skip(self.printed_printk)
            .map(|(ns, line)| super::Event {
                ns: start.map_or(0, |s| ns.saturating_sub(s)),
                device: None,
                data: super::EventData::Printk { line: line.clone() },
            })
            .collect();
        self.printed_printk = lines.len();
        for snap in self.decode(raw, end, host) {
            out.write(&render(&snap, format));
        }
    }

    fn write_trace_events(&self, path: &Path, raw: Option<&RawSnapshot>) -> std::io::Result<()> {
        let snaps = raw
            .map(|r| self.decode(r, None, Vec::new()))
            .unwrap_or_default();
        let wire_events = wire::read_events(self.dir.path());
        // Each device's own span maps (a sum's would add two devices' stamps).
        let own = |s: &&Snapshot| !matches!(s.scope, super::Scope::Sum { .. });
        let launches = super::events::launches(
            &wire::read_launches(self.dir.path()),
            &wire_events,
            snaps
                .iter()
                .filter(own)
                .flat_map(|s| s.maps.iter())
                .filter(|m| {
                    self.spans
                        .iter()
                        .any(|&k| self.obj.maps[k].name == m.map.name)
                }),
        );
        let calibrations = super::events::calibrations(&wire_events);
        let events: Vec<_> = snaps.into_iter().flat_map(|s| s.events).collect();
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
