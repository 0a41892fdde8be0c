//! The interposer's side of the session folder, whose files have one definition,
//! `bpf2ptx::trace::wire` (re-exported here): what `bpf2ptx trace` tells the interposer,
//! and what the interposer tells it back.
//!
//! Without `BPF2PTX_TRACE_DIR` (or with an unreadable config) the interposer forwards
//! every call untouched: loading it by hand never changes an application.
//!
//! Messages for the user are single lines on stderr starting `bpf2ptx trace:`; the
//! interposer never prints anything else into the application's output.

use bpf2ptx::trace::wire::create_proc_dir;
pub use bpf2ptx::trace::wire::{read_events, Config, Event, DIR_VAR, FAULT_VAR};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The session's output side: the events file and stderr lines.
#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    events: Mutex<Option<std::fs::File>>,
    /// The process that opened the log: a child forked after the session started
    /// inherits it, and must not write into its parent's folder.
    pid: u32,
}

impl Log {
    /// This process's folder in the session folder `session` (`proc-<pid>`), made with
    /// its command line, which the front end prints in the process's header.
    pub fn process_dir(session: &Path) -> std::io::Result<PathBuf> {
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
        create_proc_dir(session, std::process::id(), &cmdline)
    }

    /// The log of this process in `dir` (its folder).
    pub fn new(dir: &Path) -> Log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("events.jsonl"))
            .ok();
        Log {
            dir: dir.to_path_buf(),
            events: Mutex::new(file),
            pid: std::process::id(),
        }
    }

    /// This process's folder in the session folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this is still the process that started the session: a child forked after
    /// that (where CUDA itself does not work) writes nothing, rather than replace its
    /// parent's files.
    pub fn owned(&self) -> bool {
        std::process::id() == self.pid
    }

    /// Appends `e` to `events.jsonl` (one line, written with one `write`).
    pub fn event(&self, e: &Event) {
        if !self.owned() {
            return;
        }
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
        assert!(log.owned());
    }

    #[test]
    fn each_process_gets_a_folder_with_its_command_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = Log::process_dir(dir.path()).unwrap();
        let me = std::process::id();
        assert_eq!(p, dir.path().join(format!("proc-{me}")));
        assert_eq!(bpf2ptx::trace::wire::processes(dir.path()), vec![me]);
        let cmd = bpf2ptx::trace::wire::command_line(dir.path(), me).unwrap();
        assert!(!cmd.is_empty());
    }
}
