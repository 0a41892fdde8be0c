//! The session folder `bpf2ptx trace` shares with the interposer it preloads into the
//! application (specs/trace.md, "Interposer"): the one definition of its files, which the
//! front end writes and reads here and the interposer (bpf2ptx-interposer) through this
//! module.
//!
//! The front end starts the application with two environment variables:
//!
//! - [`DIR_VAR`]: the session folder. The front end wrote `config.json` there
//!   ([`Config`]). Every process of the traced command's tree inherits both variables,
//!   so each interposer instance that starts (on its process's first driver call: a
//!   process that never uses CUDA writes nothing) writes into a folder of its own,
//!   `proc-<pid>/` ([`proc_dir`], [`processes`]); sharing one set of files, two processes
//!   (torchrun's workers) would replace each other's snapshots. In it: `cmdline` (a copy
//!   of `/proc/self/cmdline`, which the front end can no longer read once the process is
//!   gone), `events.jsonl`, one JSON line per event ([`Event`]), `snapshot.json`
//!   ([`RawSnapshot`]: per device, its one instance of each map), replaced atomically,
//!   and, when the config asks for launch records, `launches.jsonl`, one JSON line per
//!   launch ([`LaunchRecord`]).
//! - `LD_PRELOAD`: the interposer, ahead of whatever the user preloads.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The environment variable naming the session folder.
pub const DIR_VAR: &str = "BPF2PTX_TRACE_DIR";
/// Set to `jit` to make every JIT fail (the fallback path's test: the application must
/// run unmodified, with one line saying why).
pub const FAULT_VAR: &str = "BPF2PTX_TRACE_FAULT";

/// The prefix of a process's folder in the session folder: `proc-<pid>`.
pub const PROC_PREFIX: &str = "proc-";
/// A process's command line, as `/proc/<pid>/cmdline` (arguments, each ended by NUL).
pub const CMDLINE_FILE: &str = "cmdline";

/// The folder of process `pid`'s files in the session folder `dir`.
pub fn proc_dir(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{PROC_PREFIX}{pid}"))
}

/// The processes that wrote into the session folder `dir`, by pid, smallest first (a
/// stable order for the printed sections; a parent usually has the smaller pid).
pub fn processes(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            e.ok()?
                .file_name()
                .to_str()?
                .strip_prefix(PROC_PREFIX)?
                .parse()
                .ok()
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Creates process `pid`'s folder in `dir`, with its command line (`cmdline`: the bytes
/// of `/proc/<pid>/cmdline`, empty when unreadable); returns the folder.
pub fn create_proc_dir(dir: &Path, pid: u32, cmdline: &[u8]) -> std::io::Result<PathBuf> {
    let p = proc_dir(dir, pid);
    std::fs::create_dir_all(&p)?;
    std::fs::write(p.join(CMDLINE_FILE), cmdline)?;
    Ok(p)
}

/// Process `pid`'s command line, its arguments joined by spaces: from its folder's
/// `cmdline`, else `/proc/<pid>/cmdline`; `None` when neither reads (or is empty).
pub fn command_line(dir: &Path, pid: u32) -> Option<String> {
    let bytes = std::fs::read(proc_dir(dir, pid).join(CMDLINE_FILE))
        .ok()
        .filter(|b| !b.is_empty())
        .or_else(|| std::fs::read(format!("/proc/{pid}/cmdline")).ok())?;
    let args: Vec<String> = bytes
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!args.is_empty()).then(|| args.join(" "))
}

/// `config.json`: the probes and how to inject them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Config {
    /// The probe object (absolute path), verified by the front end before the start.
    pub probes: PathBuf,
    /// Granularity of probes whose section does not name one: `thread`, `warp`, `block`.
    #[serde(default)]
    pub granularity: Option<String>,
    /// `NAME=device|host|sharded` map options, as `bpf2ptx inject --map`.
    #[serde(default)]
    pub maps: Vec<String>,
    /// `--loop-budget N`.
    #[serde(default)]
    pub loop_budget: Option<u64>,
    /// Milliseconds between map snapshots (0: only the last one, at exit).
    #[serde(default)]
    pub interval_ms: u64,
    /// Where JIT results are cached (by content): `None` disables the cache.
    #[serde(default)]
    pub cache: Option<PathBuf>,
    /// Record every instrumented launch in `launches.jsonl` (`--trace-events`).
    #[serde(default)]
    pub launch_log: bool,
}

impl Config {
    /// Writes `dir/config.json` (atomically: the interposer may read it as soon as the
    /// application starts).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let tmp = dir.join("config.json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(tmp, dir.join("config.json"))
    }

    /// Reads `dir/config.json`.
    pub fn read(dir: &Path) -> Result<Config, String> {
        let path = dir.join("config.json");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// One line of `events.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A module or library was loaded (`label`: the interposer's name for it).
    Loaded {
        /// `module N` / `library N`.
        label: String,
        /// Bytes of the image copied (0: it could not be read).
        bytes: usize,
    },
    /// A kernel the probes match was first launched from a module, which is now
    /// instrumented (or runs unmodified: `fallback`).
    Instrumented {
        /// The module.
        label: String,
        /// The kernels the probes matched.
        kernels: Vec<String>,
        /// Milliseconds spent injecting.
        inject_ms: f64,
        /// Milliseconds the driver spent assembling (0 when cached).
        jit_ms: f64,
        /// The JIT result came from the cache.
        cached: bool,
    },
    /// Instrumenting failed; the module runs unmodified.
    Fallback {
        /// The module.
        label: String,
        /// Why.
        reason: String,
    },
    /// A module without PTX holds kernels the probes match: they run unmodified.
    NoPtx {
        /// The module.
        label: String,
        /// The matched kernels launched from it.
        kernels: Vec<String>,
        /// SASS architectures it has, as `sm_90`.
        sass: Vec<String>,
    },
    /// A kernel was launched (first launch of each name only).
    Kernel {
        /// Its PTX name.
        name: String,
        /// Whether a probe matches it.
        matched: bool,
        /// Its id: 1 for the first name launched, 2 for the next, ... (what a host
        /// program's context and a [`LaunchRecord`] call `kernel`).
        #[serde(default)]
        id: u32,
    },
    /// The host/GPU clock offset was measured (specs/trace.md, "One timeline").
    Clock {
        /// `%globaltimer - CLOCK_MONOTONIC`, ns.
        offset_ns: i64,
        /// The best read minus the median one, ns: how noisy the measurement was.
        spread_ns: i64,
        /// The session's start on the GPU's timeline (the origin of `time_ns` and of
        /// the trace events), with this offset.
        start_ns: u64,
        /// When it was measured, ns since the session started.
        at_ns: u64,
    },
    /// A host-side program's `bpf_trace_printk` line.
    Printk {
        /// When, on the GPU's timeline.
        ns: u64,
        /// The formatted line.
        line: String,
    },
}

/// One line of `launches.jsonl`: a launch of an instrumented kernel, or one that ran
/// host programs (written when the config asks for `launch_log`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct LaunchRecord {
    /// The launch's number in the process, from 1 (a host program's `seq`).
    pub seq: u64,
    /// The kernel's id ([`Event::Kernel`]).
    pub kernel: u32,
    /// The device it ran on (CUDA's ordinal).
    #[serde(default)]
    pub device: u32,
    /// The stream handle (0: the legacy default stream).
    pub stream: u64,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// When the launch call was made, on the GPU's `%globaltimer` timeline.
    pub host_ns: u64,
}

/// Appends `records` to `dir/launches.jsonl` (`dir`: a process's folder), one line each.
pub fn append_launches(dir: &Path, records: &[LaunchRecord]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r)?);
        text.push('\n');
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("launches.jsonl"))?
        .write_all(text.as_bytes())
}

/// Every launch record of a process (`dir`: its folder); lines that do not parse (cut by a crash) are
/// skipped.
pub fn read_launches(dir: &Path) -> Vec<LaunchRecord> {
    std::fs::read_to_string(dir.join("launches.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Reads every event of a process's `events.jsonl` (`dir`: its folder); lines that do not parse (a write cut
/// short by a crash) are skipped.
pub fn read_events(dir: &Path) -> Vec<Event> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// One snapshot of raw map bytes: `snapshot.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RawSnapshot {
    /// Nanoseconds since the session started (the interposer's first use).
    pub time_ns: u64,
    /// Taken at the process's exit, after its last kernel.
    pub last: bool,
    /// Per device (per context, in the order they were first used), its one instance of
    /// each map, shared by every module instrumented there.
    #[serde(default)]
    pub devices: Vec<DeviceMaps>,
    /// The maps host-side programs share with the GPU: one instance per process, in
    /// pinned host memory, bound into every module of every device (absent from
    /// `devices`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<RawMap>,
}

/// The maps of one device: one instance of each map its instrumented modules use.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DeviceMaps {
    /// The device (CUDA's ordinal, `cuCtxGetDevice`).
    pub device: u32,
    /// 0, or for a second (third, ...) context on the same device, 1 (2, ...): device
    /// memory is per context, so each context has a set of its own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context: u32,
    /// The instrumented modules bound to these maps (`module N` / `library N`, ...).
    pub modules: Vec<String>,
    /// The maps, in the object's order (maps no module's probes use are absent).
    pub maps: Vec<RawMap>,
    /// The `trace_printk` / `puts` lines the device's modules wrote since the previous
    /// snapshot (each module's own printk ring, read and consumed), module by module in
    /// ring order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub printk: Vec<PrintkLine>,
    /// Printk records the modules' rings had no room for, so far (summed).
    #[serde(default, skip_serializing_if = "is_zero64")]
    pub printk_dropped: u64,
    /// Per program run under `--loop-budget`: the runs whose budget ran out, so far,
    /// summed over the device's modules (`bpf2ptx_loopcnt_<program>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loop_budget: Vec<(String, u64)>,
}

/// One GPU printk line, with the module whose ring held it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PrintkLine {
    /// The module (`module N` / `library N`).
    pub module: String,
    /// The line, formatted, without its newline.
    pub line: String,
}

fn is_zero64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One map's bytes, hex-encoded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RawMap {
    /// The map's name in the object.
    pub name: String,
    /// The descriptor's 8 words; empty for global data.
    pub desc: Vec<u64>,
    /// The storage (global data: its bytes).
    pub data: String,
    /// A hash map's counts block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<String>,
    /// A ring's `[producer, consumer]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counters: Option<String>,
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The bytes of a [`hex`] string; `None` if it is not one.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A process's snapshot file in its folder.
pub const SNAPSHOT_FILE: &str = "snapshot.json";

/// Writes `snap` as `dir/snapshot.json` (`dir`: a process's folder), atomically (a temporary file renamed over it).
pub fn write(dir: &Path, snap: &RawSnapshot) -> std::io::Result<()> {
    let tmp = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
    std::fs::write(&tmp, serde_json::to_vec(snap)?)?;
    std::fs::rename(tmp, dir.join(SNAPSHOT_FILE))
}

/// Reads `dir/snapshot.json`, if there is one.
pub fn read(dir: &Path) -> Option<RawSnapshot> {
    serde_json::from_slice(&std::fs::read(dir.join(SNAPSHOT_FILE)).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("config.json"), r#"{"probes": "/p.bpf.o"}"#).unwrap();
        let c = Config::read(d).unwrap();
        assert_eq!(c.probes, PathBuf::from("/p.bpf.o"));
        assert!(c.maps.is_empty() && c.cache.is_none() && c.loop_budget.is_none());
        assert_eq!(c.interval_ms, 0);
        let full = Config {
            interval_ms: 250,
            cache: Some("/c".into()),
            ..c
        };
        full.write(d).unwrap();
        assert_eq!(Config::read(d).unwrap(), full);
        std::fs::write(d.join("config.json"), "{").unwrap();
        assert!(Config::read(d).unwrap_err().contains("config.json"));
    }

    #[test]
    fn events_read_back_and_a_cut_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let e = Event::Kernel {
            name: "k".into(),
            matched: true,
            id: 1,
        };
        let mut text = serde_json::to_string(&e).unwrap();
        text.push_str("\n{\"event\": \"kern");
        std::fs::write(dir.path().join("events.jsonl"), text).unwrap();
        assert_eq!(read_events(dir.path()), vec![e]);
    }

    #[test]
    fn process_folders_are_listed_by_pid_with_their_command_lines() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(processes(d).is_empty());
        let p = create_proc_dir(d, 20, b"torchrun\0--nproc\x002\0").unwrap();
        assert_eq!(p, d.join("proc-20"));
        create_proc_dir(d, 7, b"").unwrap();
        std::fs::create_dir(d.join("proc-x")).unwrap();
        std::fs::write(d.join("config.json"), "{}").unwrap();
        assert_eq!(processes(d), vec![7, 20]);
        assert_eq!(command_line(d, 20).as_deref(), Some("torchrun --nproc 2"));
        // No copy and no such process: only the pid can name it.
        assert_eq!(command_line(d, u32::MAX), None);
        // Our own: the copy is empty, /proc has it.
        let me = std::process::id();
        create_proc_dir(d, me, b"").unwrap();
        assert!(command_line(d, me).is_some());
    }

    #[test]
    fn hex_round_trips() {
        let b = [0u8, 1, 0xab, 0xff];
        assert_eq!(hex(&b), "0001abff");
        assert_eq!(unhex("0001abff").as_deref(), Some(&b[..]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn snapshots_are_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        let s = RawSnapshot {
            time_ns: 5,
            last: true,
            devices: vec![DeviceMaps {
                device: 1,
                context: 0,
                modules: vec!["module 1".into(), "module 2".into()],
                maps: vec![RawMap {
                    name: "counts".into(),
                    desc: vec![2, 0, 0, 0, 0, 0, 0, 0],
                    data: "0100".into(),
                    counts: None,
                    counters: Some("00".into()),
                }],
                printk: vec![PrintkLine {
                    module: "module 2".into(),
                    line: "hi 3".into(),
                }],
                printk_dropped: 1,
                loop_budget: vec![("p".into(), 4)],
            }],
            shared: vec![RawMap {
                name: "launch".into(),
                desc: vec![2, 0, 0, 0, 0, 0, 0, 0],
                data: "2a00".into(),
                counts: None,
                counters: None,
            }],
        };
        write(dir.path(), &s).unwrap();
        assert_eq!(read(dir.path()), Some(s));
        assert!(!dir.path().join("snapshot.json.tmp").exists());
        let text = std::fs::read_to_string(dir.path().join("snapshot.json")).unwrap();
        assert!(
            !text.contains("\"context\""),
            "a device's first context is not said"
        );
    }

    #[test]
    fn launch_records_append_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let r = |seq| LaunchRecord {
            seq,
            kernel: 1,
            device: seq as u32 % 2,
            stream: 0,
            grid: [2, 1, 1],
            block: [32, 1, 1],
            host_ns: 1000 * seq,
        };
        append_launches(dir.path(), &[r(1), r(2)]).unwrap();
        append_launches(dir.path(), &[r(3)]).unwrap();
        assert_eq!(read_launches(dir.path()), vec![r(1), r(2), r(3)]);
    }
}
