//! The interposer's side of the session folder, whose files have one definition,
//! `bpf2ptx::trace::wire` (re-exported here): what `bpf2ptx trace` tells the interposer,
//! and what the interposer tells it back.
//!
//! Without `BPF2PTX_TRACE_DIR` (or with an unreadable config) the interposer forwards
//! every call untouched: loading it by hand never changes an application.
//!
//! Messages for the user are single lines on stderr starting `bpf2ptx trace:`; the
//! interposer never prints anything else into the application's output.

pub use bpf2ptx::trace::wire::{read_events, Config, Event, DIR_VAR, FAULT_VAR};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_appended_one_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let log = Log::new(dir.path());
        let e = |n: &str| Event::Kernel {
            name: n.into(),
            matched: false,
            id: 1,
        };
        log.event(&e("a"));
        log.event(&e("b"));
        assert_eq!(read_events(dir.path()), vec![e("a"), e("b")]);
    }
}
