//! `bpf2ptx trace PROBES -- COMMAND`: one trace session, from the probes' verification to
//! the last snapshot.
//!
//! ```text
//!  verify the probes (exit 1/2 before anything runs)
//!    ▼
//!  session folder: config.json (wire::Config)      ◀── the interposer reads it
//!    ▼
//!  COMMAND with LD_PRELOAD=libbpf2ptx_interposer.so, BPF2PTX_TRACE_DIR=folder, and
//!    │ PYTHONPATH=folder/python (Triton's kernels: super::python) with caches of its own
//!    │ (its child processes inherit them: each CUDA process writes proc-<pid>/)
//!    │ every --interval, per process: snapshot.json (raw map bytes) ─▶ image::decode
//!    │   ─▶ render (with several processes, a section per process)
//!    ▼ the command ends (exit, signal): each process's last snapshot, the command's
//!      marked with how it ended (processes still running get FINAL_WAIT to finish)
//!  events.jsonl ─▶ one line per instrumented module (inject and JIT time) on stderr, or
//!                  which kernels ran when no probe matched any
//! ```
//!
//! The front end never touches the GPU: the interposer, inside the application, copies
//! the maps out. SIGINT and SIGTERM reach the application (its process group's terminal
//! sends them to both); the front end only notes them and prints the last snapshot the
//! application left when it ends.

use super::wire::{self, Config, Event as WireEvent, RawSnapshot};
use super::{
    map_types, moment, object_btf, render_limited, ring_events, AppEnd, MapTypes, Snapshot,
};
use super::{DeviceView, Format, TraceArgs, TracedMap};
use crate::compile::{self, CompileError};
use crate::exit;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::image::{self, MapImage, RawRing};
use bpf2ptx_runtime::MapKind;
use std::collections::HashMap;
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
    /// Per process, host programs' printk lines printed so far.
    printed_printk: HashMap<u32, usize>,
    /// Text: rows printed per map at most (`--rows`; 0: all).
    rows: usize,
}

/// How long the front end waits, once the command ended, for processes of its tree that
/// still run (and so have not written their final snapshot): a child the command did not
/// wait for is usually ending too.
const FINAL_WAIT: Duration = Duration::from_secs(2);

/// Whether process `pid` still runs (a zombie has ended: its snapshot will not change).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and may hold any.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))),
        Err(_) => false,
    }
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
        let config = Config {
            probes,
            granularity: None,
            maps: Vec::new(),
            loop_budget,
            interval_ms: args.interval.as_millis().max(1) as u64,
            cache: jit_cache(),
            launch_log: args.trace_events.is_some(),
        };
        config
            .write(dir.path())
            .map_err(|e| bad(format!("session folder: {e}")))?;
        // Triton's kernels: the Python start-up hook and caches of the session's own,
        // keyed by what decides the instrumented text (super::python).
        let python = if args.no_triton {
            Vec::new()
        } else {
            let lib = std::fs::read(&interposer)
                .map_err(|e| bad(format!("{}: {e}", interposer.display())))?;
            let options = format!(
                "{:?} {:?} {:?}",
                config.granularity, config.maps, config.loop_budget
            );
            let key = super::python::cache_key(&[&lib, &bytes, options.as_bytes()]);
            let root = config.cache.as_deref().and_then(Path::parent);
            super::python::environment(dir.path(), root, key)
                .map_err(|e| bad(format!("session folder: {e}")))?
        };
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
            .envs(python)
            .spawn()
            .map_err(|e| bad(format!("{}: {e}", Path::new(cmd).display())))?;
        Ok(Session {
            obj,
            _input: input,
            spans,
            printed_printk: HashMap::new(),
            rows: args.rows,
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
        let mut last_seen: HashMap<u32, u64> = HashMap::new();
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
                let pids = wire::processes(self.dir.path());
                let several = pids.len() > 1;
                for pid in pids {
                    let Some(raw) = wire::read(&self.proc_dir(pid)) else {
                        continue;
                    };
                    if last_seen.insert(pid, raw.time_ns) != Some(raw.time_ns) {
                        let header = several.then(|| self.header(pid, None));
                        self.print(pid, header, &raw, None, false, args.format, &mut out);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10).min(args.interval));
        };
        let end = status.map(app_end);
        let command = self.child.id();
        let pids = self.wait_for_processes(command);
        let raws: Vec<(u32, Option<RawSnapshot>)> = pids
            .iter()
            .map(|&pid| (pid, wire::read(&self.proc_dir(pid))))
            .collect();
        // The command's end goes with its own section; when the command itself used no
        // CUDA (a launcher, a shell), with the last one.
        let ends_with = if pids.contains(&command) {
            command
        } else {
            pids.last().copied().unwrap_or(command)
        };
        if raws.is_empty() {
            self.print(
                command,
                None,
                &RawSnapshot::default(),
                end,
                false,
                args.format,
                &mut out,
            );
        }
        let several = raws.len() > 1;
        for (pid, raw) in &raws {
            let raw = raw.clone().unwrap_or_default();
            let header = several.then(|| self.header(*pid, Some(&raw)));
            let end = end.filter(|_| *pid == ends_with);
            // A snapshot a periodic round printed already (no newer one came): its maps
            // again, but not its records, which were the ones since the snapshot before.
            let repeat = last_seen.get(pid) == Some(&raw.time_ns);
            self.print(*pid, header, &raw, end, repeat, args.format, &mut out);
        }
        if let Some(path) = &args.trace_events {
            if let Err(e) = self.write_trace_events(path, &raws) {
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
                let (maps, mut events) = self.traced(&d.maps, &what, raw.time_ns, Some(d.device));
                // The modules' printk lines, in the order their rings held them.
                events.extend(d.printk.iter().map(|p| super::Event {
                    ns: raw.time_ns,
                    device: Some(d.device),
                    data: super::EventData::Printk {
                        line: p.line.clone(),
                    },
                }));
                DeviceView {
                    device: d.device,
                    context: d.context,
                    maps,
                    events,
                    loop_budget: d.loop_budget.clone(),
                    printk_dropped: d.printk_dropped,
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

    /// Process `pid`'s folder in the session folder.
    fn proc_dir(&self, pid: u32) -> PathBuf {
        wire::proc_dir(self.dir.path(), pid)
    }

    /// The processes that wrote into the session folder, once those other than the
    /// command (`command`, which ended) that still run without their final snapshot ended
    /// or [`FINAL_WAIT`] passed.
    fn wait_for_processes(&self, command: u32) -> Vec<u32> {
        let until = Instant::now() + FINAL_WAIT;
        loop {
            let mut pids = wire::processes(self.dir.path());
            pids.retain(|&pid| self.loaded_modules(pid));
            let waiting = pids.iter().any(|&pid| {
                pid != command
                    && alive(pid)
                    && !wire::read(&self.proc_dir(pid)).is_some_and(|r| r.last)
            });
            if !waiting || Instant::now() >= until {
                return pids;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether process `pid` loaded a CUDA module (or has a snapshot): a process that
    /// only handed Triton's PTX to the probes (TorchInductor's compile workers, through
    /// the Python hook) has no maps and gets no section; its lines are in the report.
    fn loaded_modules(&self, pid: u32) -> bool {
        let dir = self.proc_dir(pid);
        dir.join(wire::SNAPSHOT_FILE).exists()
            || wire::read_events(&dir)
                .iter()
                .any(|e| matches!(e, WireEvent::Loaded { .. }))
    }

    /// A process's section header, when the session has several: its pid and command
    /// line; at the end (`last`: its last snapshot), whether that is not its final one.
    fn header(&self, pid: u32, last: Option<&RawSnapshot>) -> String {
        let name = match wire::command_line(self.dir.path(), pid) {
            Some(c) => format!("process {pid}: {c}"),
            None => format!("process {pid}"),
        };
        let note = match last {
            Some(r) if !r.last => format!(
                " (no final snapshot: it ended without one, or still runs; its last periodic one, at {:.3} s)",
                r.time_ns as f64 / 1e9
            ),
            _ => String::new(),
        };
        format!("--- {name}{note} ---\n")
    }

    /// Prints process `pid`'s snapshot `raw` (after `header`, in text, when given).
    /// `repeat`: `raw` was printed before, so its ring records and GPU printk lines (those
    /// since the snapshot before it) were too and are left out.
    #[allow(clippy::too_many_arguments)]
    fn print(
        &mut self,
        pid: u32,
        header: Option<String>,
        raw: &RawSnapshot,
        end: Option<AppEnd>,
        repeat: bool,
        format: Format,
        out: &mut Output,
    ) {
        if let (Some(h), Format::Text) = (&header, format) {
            out.write(h);
        }
        // Host programs' printk lines that arrived since the last print, at their time
        // since the start.
        let events = wire::read_events(&self.proc_dir(pid));
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
            .skip(self.printed_printk.get(&pid).copied().unwrap_or(0))
            .map(|(ns, line)| super::Event {
                ns: start.map_or(0, |s| ns.saturating_sub(s)),
                device: None,
                data: super::EventData::Printk { line: line.clone() },
            })
            .collect();
        self.printed_printk.insert(pid, lines.len());
        let info = super::ProcessInfo {
            pid,
            last: raw.last,
        };
        for mut snap in self.decode(raw, end, host) {
            if repeat {
                snap.drop_records();
            }
            out.write(&render_limited(&snap, format, info, self.rows));
        }
    }

    /// Writes `path`: the trace events of each process of `raws` (its last snapshot).
    fn write_trace_events(
        &self,
        path: &Path,
        raws: &[(u32, Option<RawSnapshot>)],
    ) -> std::io::Result<()> {
        let processes: Vec<super::ProcessTrace> = raws
            .iter()
            .map(|(pid, raw)| self.process_trace(*pid, raw.as_ref()))
            .collect();
        let json = super::events::trace_events_of(&processes);
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&json)?)?;
        std::fs::rename(tmp, path)
    }

    /// Process `pid`'s launches, records and clock measurements, `raw` its last snapshot.
    fn process_trace(&self, pid: u32, raw: Option<&RawSnapshot>) -> super::ProcessTrace {
        let dir = self.proc_dir(pid);
        let snaps = raw
            .map(|r| self.decode(r, None, Vec::new()))
            .unwrap_or_default();
        let wire_events = wire::read_events(&dir);
        // Each device's own span maps (a sum's would add two devices' stamps).
        let own = |s: &&Snapshot| !matches!(s.scope, super::Scope::Sum { .. });
        let launches = super::events::launches(
            &wire::read_launches(&dir),
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
        super::ProcessTrace {
            pid,
            command: wire::command_line(self.dir.path(), pid),
            launches,
            clock: super::events::calibrations(&wire_events),
            events: snaps.into_iter().flat_map(|s| s.events).collect(),
        }
    }

    /// What the interposer did, on stderr: each instrumented module with its inject and
    /// JIT time (the first launch's cost), or, when no probe matched a kernel, the
    /// kernels that ran.
    fn report(&self) {
        let pids = wire::processes(self.dir.path());
        let several = pids.len() > 1;
        let mut seen: Vec<String> = Vec::new();
        let mut matched = false;
        for pid in pids {
            let who = if several {
                format!("process {pid}: ")
            } else {
                String::new()
            };
            self.report_process(pid, &who, &mut seen, &mut matched);
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

    /// [`Session::report`]'s lines for process `pid` (each after `who`), adding the
    /// kernels it launched to `seen` and whether a probe matched one to `matched`.
    fn report_process(&self, pid: u32, who: &str, seen: &mut Vec<String>, matched: &mut bool) {
        let events = wire::read_events(&self.proc_dir(pid));
        for e in &events {
            match e {
                WireEvent::Instrumented {
                    label,
                    kernels,
                    inject_ms,
                    jit_ms,
                    cached,
                } => eprintln!(
                    "bpf2ptx trace: {who}{label}: probes in {} (inject {inject_ms:.1} ms, {} {jit_ms:.1} ms)",
                    kernels.join(", "),
                    if *cached { "cached JIT" } else { "JIT" }
                ),
                WireEvent::Kernel {
                    name, matched: m, ..
                } => {
                    *matched |= m;
                    if !seen.contains(name) {
                        seen.push(name.clone());
                    }
                }
                _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_process_is_alive_and_an_ended_one_is_not() {
        assert!(alive(std::process::id()));
        assert!(!alive(u32::MAX));
        // A child that exited and was not yet waited for: a zombie, ended.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let until = Instant::now() + Duration::from_secs(5);
        while alive(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!alive(pid), "a zombie counts as ended");
        child.wait().unwrap();
    }
}
