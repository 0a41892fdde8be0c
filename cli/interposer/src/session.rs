//! What `bpf2ptx trace` tells the interposer, and what the interposer tells it back.
//!
//! The front end starts the application with two environment variables:
//!
//! - `BPF2PTX_TRACE_DIR`: the session folder. The front end wrote `config.json` there
//!   ([`Config`]); the interposer appends one JSON line per event to `events.jsonl`
//!   ([`Event`]) and writes map snapshots (`snapshot.json`, replaced atomically).
//! - `LD_PRELOAD`: this library, ahead of whatever the user preloads.
//!
//! Without `BPF2PTX_TRACE_DIR` (or with an unreadable config) the interposer forwards
//! every call untouched: loading it by hand never changes an application.
//!
//! Messages for the user are single lines on stderr starting `bpf2ptx trace:`; the
//! interposer never prints anything else into the application's output.

use serde::{Deserialize, Serialize};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The environment variable naming the session folder.
pub const DIR_VAR: &str = "BPF2PTX_TRACE_DIR";
/// Set to `jit` to make every JIT fail (the fallback path's test: the application must
/// run unmodified, with one line saying why).
pub const FAULT_VAR: &str = "BPF2PTX_TRACE_FAULT";

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
}

impl Config {
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
    },
}

/// The session's output side: the events file and stderr lines.
#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    events: Mutex<Option<std::fs::File>>,
}

impl Log {
    /// The log of the session in `dir`.
    pub fn new(dir: &Path) -> Log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("events.jsonl"))
            .ok();
        Log {
            dir: dir.to_path_buf(),
            events: Mutex::new(file),
        }
    }

    /// The session folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends `e` to `events.jsonl` (one line, written with one `write`).
    pub fn event(&self, e: &Event) {
        let Ok(mut line) = serde_json::to_string(e) else {
            return;
        };
        line.push('\n');
        if let Ok(mut g) = self.events.lock() {
            if let Some(f) = g.as_mut() {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }

    /// One line for the user on stderr.
    pub fn say(&self, msg: &str) {
        eprintln!("bpf2ptx trace: {msg}");
    }
}

/// Reads every event of a session's `events.jsonl`; lines that do not parse (a write cut
/// short by a crash) are skipped.
pub fn read_events(dir: &Path) -> Vec<Event> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_and_defaults() {
        let dir = tempfile_dir();
        std::fs::write(dir.join("config.json"), r#"{"probes": "/p.bpf.o"}"#).unwrap();
        let c = Config::read(&dir).unwrap();
        assert_eq!(c.probes, PathBuf::from("/p.bpf.o"));
        assert!(c.maps.is_empty() && c.cache.is_none() && c.loop_budget.is_none());
        assert_eq!(c.interval_ms, 0);
        std::fs::write(dir.join("config.json"), "{").unwrap();
        assert!(Config::read(&dir).unwrap_err().contains("config.json"));
    }

    #[test]
    fn events_append_and_read_back() {
        let dir = tempfile_dir();
        let log = Log::new(&dir);
        let e = Event::Kernel {
            name: "k".into(),
            matched: true,
        };
        log.event(&e);
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("events.jsonl"))
            .unwrap()
            .write_all(b"{\"event\": \"kern")
            .unwrap();
        assert_eq!(read_events(&dir), vec![e]);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "bpf2ptx-interposer-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
