//! `bpf2ptx trace`'s front end, the part that needs no GPU: its command line
//! ([`TraceArgs`]) and the printing of what the interposer copied out of the traced
//! application (specs/trace.md).
//!
//! ```text
//!  interposer snapshot file (one per process: proc-<pid>/): per map the descriptor,
//!    │ storage, counts block and ring counters (raw bytes), launches, printk lines
//!    ▼
//!  bpf2ptx_loader::image::decode(map, raw)      one MapImage per map (the layouts of
//!    │                                          specs/abi.md, decoded in one place)
//!    ▼
//!  moment(devices, process-wide maps): per device a Snapshot { scope, elapsed, maps:
//!    │   [TracedMap { map, types, image }], events, end }, and with several their sum
//!    │   types: map_types(obj, object_btf(..), --hist): key/value Shapes from BTF,
//!    │          histogram marks from `bpf2ptx:hist=` decl tags and --hist
//!    ▼
//!  render(snapshot, Format::Text | Format::Json)  tables / bpftrace-style histograms /
//!    │                                            failures / records, or one JSON line
//!  trace_events(launches, events)                 Chrome trace-event JSON (Perfetto)
//!    ▼
//!  stdout, --trace-events FILE
//! ```
//!
//! Files: `args.rs` the options, `types.rs` BTF layouts and decoded values, `snapshot.rs`
//! the snapshot and the tables and histograms both printers share, `hist.rs` the buckets
//! and bars, `text.rs` and `json.rs` the two printers, `events.rs` the trace events.
//!
//! Choices (each documented in specs/trace.md):
//! - arrays sort by key; hash maps by value, largest first, as bpftrace prints maps (a
//!   struct value by its first integer member; ties by key bytes);
//! - rows whose value is all zero bytes are left out and counted (`N zero rows elided`),
//!   so a large, mostly empty array stays readable and nothing is hidden silently;
//! - per-SM, per-thread and per-warp arrays print per key the sum of their copies (field
//!   by field, in 64 bits) and how many copies were not zero;
//! - maps are one instance per process and device: one section per device and, with
//!   several, their sum (arrays added key by key, hash maps merged by key; rings stay
//!   with their device; [`moment`]);
//! - failure counters print whenever they are not zero, in every snapshot.

mod args;
mod events;
mod hist;
mod json;
mod python;
mod session;
mod snapshot;
mod text;
mod types;
pub mod wire;

pub use args::{parse_interval, Format, Hist, HistSpec, TraceArgs};
pub use events::{
    calibrations, launches, trace_events, trace_events_of, trace_events_with, Calibration, Launch,
    ProcessTrace, GPU_TRACK_BASE,
};
pub use session::{trace, INTERPOSER_FILE, INTERPOSER_VAR};
pub use snapshot::{
    moment, ring_events, AppEnd, DeviceView, Event, EventData, Scope, Snapshot, TracedMap,
};
pub use types::{
    launch_span_maps, map_types, object_btf, Field, MapTypes, Shape, Value, HIST_TAG,
    LAUNCH_SPANS_TAG,
};

use thiserror::Error;

/// Why the trace front end refused an input.
#[derive(Debug, Error)]
pub enum TraceError {
    /// A bad `--interval`.
    #[error("--interval {text}: {why}")]
    Interval {
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A bad histogram kind (`--hist` or a decl tag).
    #[error("histogram `{text}`: {why}")]
    Hist {
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A `bpf2ptx:hist=` decl tag that does not parse.
    #[error("map `{map}`: decl tag: {source}")]
    Tag {
        /// The map.
        map: String,
        /// Why.
        source: Box<TraceError>,
    },
    /// `--hist` names a map the object does not have.
    #[error("--hist {map}: no such map (maps: {})", maps.join(", "))]
    NoMap {
        /// The name given.
        map: String,
        /// The object's maps.
        maps: Vec<String>,
    },
    /// A histogram on a map whose keys are not bucket indices.
    #[error("map `{map}` ({kind}) cannot be a histogram: it needs an array or a hash map with an integer key")]
    NotHistogram {
        /// The map.
        map: String,
        /// Its kind.
        kind: &'static str,
    },
    /// The probe object's BTF does not read.
    #[error("BTF of the probe object: {why}")]
    Btf {
        /// Why.
        why: String,
    },
}

/// Which process of a traced tree a snapshot is of ([`render_process`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Its pid.
    pub pid: u32,
    /// Whether the snapshot is the one the interposer took at the process's exit (false:
    /// a periodic one, the last of a process that crashed, or one still running).
    pub last: bool,
}

/// [`render`] for a snapshot of process `p`: JSON objects carry `pid` and `final` (the
/// text's sections carry a header of their own, printed once per process by the
/// session when there are several).
pub fn render_process(snapshot: &Snapshot, format: Format, p: ProcessInfo) -> String {
    render_limited(snapshot, format, p, 0)
}

/// [`render_process`], text printing at most `max_rows` rows of each map (0: all; the
/// rest counted in a line), as `bpf2ptx trace --rows` asks.
pub fn render_limited(
    snapshot: &Snapshot,
    format: Format,
    p: ProcessInfo,
    max_rows: usize,
) -> String {
    match format {
        Format::Text => text::render(snapshot, max_rows),
        Format::Json => {
            let mut v = json::render(snapshot);
            v["pid"] = serde_json::json!(p.pid);
            v["final"] = serde_json::json!(p.last);
            let mut line = v.to_string();
            line.push('\n');
            line
        }
    }
}

/// Prints `snapshot` in `format`: text (ending in a newline) or one JSON object on one
/// line with its newline.
pub fn render(snapshot: &Snapshot, format: Format) -> String {
    match format {
        Format::Text => text::render(snapshot, 0),
        Format::Json => {
            let mut line = json::render(snapshot).to_string();
            line.push('\n');
            line
        }
    }
}
