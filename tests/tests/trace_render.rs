//! `bpf2ptx trace`'s printing, data-driven: each recorded snapshot in
//! tests/trace/snapshots/*.json (raw map bytes as the interposer copies them, written by
//! tests/trace/fixtures.py for the maps of tests/trace/probes.bpf.o) is decoded with
//! `bpf2ptx_loader::image` and printed as text, as JSON and as trace events; the outputs
//! are compared with tests/out/trace/ (`BLESS=1` rewrites them), and the JSON outputs are
//! checked against specs/trace-snapshot.schema.json and specs/trace-events.schema.json.

use bpf2ptx::trace::{
    self, ring_events, AppEnd, DeviceView, Event, EventData, Format, HistSpec, Launch, Scope,
    Snapshot, TracedMap,
};
use bpf2ptx_loader::image::{self, RawMap, RawRing};
use bpf2ptx_tests::{check_snapshot, files_with_ext, json_schema, repo_root};
use serde_json::Value;
use std::path::Path;

/// Sparse bytes of a fixture: `{"len": N, "at": {"OFFSET": "HEX"}}`.
fn sparse(v: &Value) -> Vec<u8> {
    let mut out = vec![0u8; v["len"].as_u64().expect("len") as usize];
    for (at, hex) in v["at"].as_object().expect("at") {
        let at: usize = at.parse().expect("offset");
        let hex = hex.as_str().expect("hex");
        for (i, k) in (0..hex.len()).step_by(2).enumerate() {
            out[at + i] = u8::from_str_radix(&hex[k..k + 2], 16).expect("hex byte");
        }
    }
    out
}

fn word(v: &Value) -> u64 {
    let s = v.as_str().expect("a hex word");
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex word")
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v} is not a u64"))
}

/// The maps of a fixture's `maps` object (those of `obj` it has, in the object's order),
/// decoded, with their rings' records as events stamped `ring_ns` (device `device`'s).
fn traced(
    obj: &bpf2ptx_compiler::program::Object,
    types: &[trace::MapTypes],
    maps_json: &Value,
    ring_ns: u64,
    device: Option<u32>,
) -> (Vec<TracedMap>, Vec<Event>) {
    let mut maps = Vec::new();
    let mut events = Vec::new();
    for (m, types) in obj.maps.iter().zip(types) {
        let Some(raw) = maps_json.get(&m.name) else {
            continue;
        };
        let desc: Vec<u8> = raw["desc"]
            .as_array()
            .expect("desc")
            .iter()
            .flat_map(|w| word(w).to_le_bytes())
            .collect();
        let storage = sparse(&raw["storage"]);
        assert_eq!(
            storage.len() as u64,
            image::storage_bytes(m, &desc),
            "{}: the fixture holds what storage_bytes asks for",
            m.name
        );
        let counts = raw.get("counts").map(sparse);
        let counters = raw.get("ring").map(|r| {
            let c = r["counters"].as_array().expect("counters");
            [u64_of(&c[0]), u64_of(&c[1])]
        });
        let image = image::decode(
            m,
            &RawMap {
                desc: &desc,
                storage: &storage,
                counts: counts.as_deref(),
                ring: counters.map(|counters| RawRing {
                    counters,
                    taken: &[],
                    taken_error: None,
                }),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        events.extend(ring_events(&m.name, &image, ring_ns, device));
        maps.push(TracedMap::new(m.clone(), types.clone(), image));
    }
    (maps, events)
}

/// The snapshots and launches a fixture describes: one snapshot of `maps` (on `device`),
/// or for a fixture with `devices` (and `process` maps) every section of that moment
/// ([`trace::moment`]: each device's, then their sum).
fn load(fixture: &Value) -> (Vec<Snapshot>, Vec<Launch>) {
    let path = repo_root().join(fixture["object"].as_str().expect("object"));
    let obj = bpf2ptx::load_path(&path).expect("the fixture object loads");
    let bytes = std::fs::read(&path).expect("read object");
    let btf = trace::object_btf(&bytes).expect("BTF reads");
    let hist: Vec<HistSpec> = fixture["hist"]
        .as_array()
        .expect("hist")
        .iter()
        .map(|h| HistSpec::parse(h.as_str().expect("hist text")).expect("hist parses"))
        .collect();
    let types = trace::map_types(&obj, btf.as_ref(), &hist).expect("map types");
    let elapsed_ns = u64_of(&fixture["elapsed_ns"]);
    let ring_ns = u64_of(&fixture["ring_ns"]);
    let printk: Vec<Event> = fixture["printk"]
        .as_array()
        .expect("printk")
        .iter()
        .map(|p| Event {
            ns: u64_of(&p[0]),
            device: None,
            data: EventData::Printk {
                line: p[1].as_str().expect("line").to_string(),
            },
        })
        .collect();
    let end = match &fixture["end"] {
        Value::Null => None,
        e if e.get("signal").is_some() => Some(AppEnd::Signaled {
            signal: e["signal"].as_i64().expect("signal") as i32,
        }),
        e => Some(AppEnd::Exited {
            code: e["exit_code"].as_i64().expect("exit_code") as i32,
        }),
    };
    let snapshots = match fixture.get("devices") {
        Some(devices) => {
            let views = devices
                .as_array()
                .expect("devices")
                .iter()
                .map(|d| {
                    let device = u64_of(&d["device"]) as u32;
                    let (maps, events) = traced(&obj, &types, &d["maps"], ring_ns, Some(device));
                    DeviceView {
                        device,
                        context: 0,
                        maps,
                        events,
                        ..DeviceView::default()
                    }
                })
                .collect();
            let (process, _) = traced(&obj, &types, &fixture["process"], ring_ns, None);
            trace::moment(elapsed_ns, end, views, process, printk)
        }
        None => {
            let device = fixture["device"].as_u64().map(|d| d as u32);
            let (maps, mut events) = traced(&obj, &types, &fixture["maps"], ring_ns, device);
            events.extend(printk);
            events.sort_by_key(|e| e.ns);
            vec![Snapshot {
                elapsed_ns,
                scope: match device {
                    Some(device) => Scope::Device {
                        device,
                        context: 0,
                        several: true,
                    },
                    None => Scope::Process,
                },
                end,
                maps,
                loop_budget: fixture["loop_budget"]
                    .as_array()
                    .expect("loop_budget")
                    .iter()
                    .map(|p| (p[0].as_str().expect("program").to_string(), u64_of(&p[1])))
                    .collect(),
                printk_dropped: u64_of(&fixture["printk_dropped"]),
                events,
            }]
        }
    };
    let dims = |v: &Value| -> [u32; 3] {
        let a = v.as_array().expect("dims");
        [0, 1, 2].map(|i| u64_of(&a[i]) as u32)
    };
    let launches = fixture["launches"]
        .as_array()
        .expect("launches")
        .iter()
        .enumerate()
        .map(|(k, l)| Launch {
            seq: l["seq"].as_u64().unwrap_or(k as u64 + 1),
            kernel: l["kernel"].as_str().expect("kernel").to_string(),
            device: u64_of(&l["device"]) as u32,
            stream: u64_of(&l["stream"]),
            grid: dims(&l["grid"]),
            block: dims(&l["block"]),
            host_ns: u64_of(&l["host_ns"]),
            first_block_ns: l["first_block_ns"].as_u64(),
            last_block_ns: l["last_block_ns"].as_u64(),
        })
        .collect();
    (snapshots, launches)
}

fn schema(name: &str) -> Value {
    let text = std::fs::read_to_string(repo_root().join("specs").join(name)).expect("schema");
    serde_json::from_str(&text).expect("schema is JSON")
}

fn conforms(schema: &Value, doc: &Value, what: &Path) {
    let errors = json_schema::check(schema, doc);
    assert!(
        errors.is_empty(),
        "{}:\n{}",
        what.display(),
        errors.join("\n")
    );
}

#[test]
fn recorded_snapshots_print_as_blessed() {
    let dir = repo_root().join("tests/trace/snapshots");
    let out = repo_root().join("tests/out/trace");
    let (snap_schema, events_schema) = (
        schema("trace-snapshot.schema.json"),
        schema("trace-events.schema.json"),
    );
    let fixtures = files_with_ext(&dir, "json");
    assert!(fixtures.len() >= 3, "fixtures in {}", dir.display());
    for path in fixtures {
        let text = std::fs::read_to_string(&path).expect("fixture");
        let fixture: Value = serde_json::from_str(&text).expect("fixture is JSON");
        let (snapshots, launches) = load(&fixture);
        let stem = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        let text: String = snapshots
            .iter()
            .map(|s| trace::render(s, Format::Text))
            .collect();
        check_snapshot(&out.join(format!("{stem}.txt")), &text);
        let mut lines = String::new();
        for s in &snapshots {
            let line = trace::render(s, Format::Json);
            assert_eq!(line.matches('\n').count(), 1, "one line per snapshot");
            let doc: Value = serde_json::from_str(&line).expect("the JSON line parses");
            conforms(&snap_schema, &doc, &path);
            lines.push_str(&line);
        }
        check_snapshot(&out.join(format!("{stem}.json")), &lines);
        let all: Vec<Event> = snapshots.iter().flat_map(|s| s.events.clone()).collect();
        let events = trace::trace_events(&launches, &all);
        conforms(&events_schema, &events, &path);
        let pretty = serde_json::to_string_pretty(&events).expect("serialises") + "\n";
        check_snapshot(&out.join(format!("{stem}.trace.json")), &pretty);
    }
}

#[test]
fn a_schema_violation_is_caught() {
    let events_schema = schema("trace-events.schema.json");
    let doc = trace::trace_events(
        &[Launch {
            seq: 1,
            kernel: "k".into(),
            device: 0,
            stream: 0,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            host_ns: 1000,
            first_block_ns: Some(3000),
            last_block_ns: Some(5000),
        }],
        &[],
    );
    conforms(&events_schema, &doc, Path::new("one launch"));
    let mut bad = doc.clone();
    bad["traceEvents"][3]["dur"] = serde_json::json!(-1);
    assert!(!json_schema::check(&events_schema, &bad).is_empty());
    let mut bad = doc.clone();
    bad["traceEvents"][0]["ph"] = serde_json::json!("Q");
    assert!(!json_schema::check(&events_schema, &bad).is_empty());
    let mut bad = doc;
    bad["traceEvents"][3]["args"]["seq"] = serde_json::json!(0);
    assert!(!json_schema::check(&events_schema, &bad).is_empty());
}

/// The launch records of a session joined with a `bpf2ptx:launch_spans` map's entries
/// and the clock's measurements become launch slices, kernel slices and calibration
/// instants that the schema accepts.
#[test]
fn launch_records_join_their_spans_and_the_clock() {
    use bpf2ptx::trace::wire::{Event as WireEvent, LaunchRecord};
    use bpf2ptx_loader::image::{MapData, MapImage};
    let obj = bpf2ptx::load_path(&repo_root().join("examples/probes/trace_latency.bpf.o"))
        .expect("the example probe loads");
    let btf = trace::object_btf(
        &std::fs::read(repo_root().join("examples/probes/trace_latency.bpf.o")).unwrap(),
    )
    .unwrap();
    let spans = trace::launch_span_maps(&obj, btf.as_ref());
    assert_eq!(spans.len(), 1);
    let m = obj.maps[spans[0]].clone();
    assert_eq!(m.name, "spans");
    let start = 5_000_000_000u64;
    let rec = |seq, host_ns| LaunchRecord {
        seq,
        kernel: 1,
        device: 0,
        stream: 0,
        grid: [4, 1, 1],
        block: [32, 1, 1],
        host_ns,
    };
    let records = [rec(1, start + 10_000), rec(2, start + 50_000)];
    let entry = |key: u64, first: u64, last: u64| {
        let v: Vec<u8> = [first, last].iter().flat_map(|w| w.to_le_bytes()).collect();
        (key.to_le_bytes().to_vec(), v)
    };
    let map = TracedMap::new(
        m,
        Default::default(),
        MapImage {
            counts: Default::default(),
            keys: None,
            data: MapData::Hash {
                // Launch 1 stamped 7 us after its call, its blocks over 3 us; launch 2 not.
                entries: vec![entry(start + 10_000, start + 17_000, start + 20_000)],
            },
        },
    );
    let events = [
        WireEvent::Kernel {
            name: "_Z6vecAddPKfS0_Pfi".into(),
            matched: true,
            id: 1,
        },
        WireEvent::Clock {
            offset_ns: 1234,
            spread_ns: 80,
            start_ns: start,
            at_ns: 2_000,
        },
    ];
    let launches = trace::launches(&records, &events, std::iter::once(&map));
    assert_eq!(launches.len(), 2);
    assert_eq!(launches[0].kernel, "_Z6vecAddPKfS0_Pfi");
    assert_eq!(
        (
            launches[0].host_ns,
            launches[0].first_block_ns,
            launches[0].last_block_ns
        ),
        (10_000, Some(17_000), Some(20_000))
    );
    assert_eq!(launches[1].first_block_ns, None);
    let doc = trace::trace_events_with(&launches, &[], &trace::calibrations(&events));
    conforms(
        &schema("trace-events.schema.json"),
        &doc,
        Path::new("joined"),
    );
    let evs = doc["traceEvents"].as_array().unwrap();
    let kernel = evs
        .iter()
        .find(|e| e["cat"] == "kernel")
        .expect("a kernel slice");
    assert_eq!(kernel["args"]["launch_latency_us"], 7.0);
    assert_eq!(kernel["dur"], 3.0);
    assert!(evs
        .iter()
        .any(|e| e["cat"] == "launch" && e["ph"] == "i" && e["args"]["seq"] == 2));
    assert!(evs
        .iter()
        .any(|e| e["cat"] == "calibration" && e["args"]["offset_ns"] == 1234));
}

/// A process tree's output: every JSON snapshot carries its process's pid and whether it
/// is the process's final one, and nothing else changes; the trace events put each
/// process's host tracks under its pid and its GPUs' under ids of their own.
#[test]
fn processes_are_named_by_pid() {
    let dir = repo_root().join("tests/trace/snapshots");
    let (snap_schema, events_schema) = (
        schema("trace-snapshot.schema.json"),
        schema("trace-events.schema.json"),
    );
    for path in files_with_ext(&dir, "json") {
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).unwrap();
        let (snapshots, launches) = load(&fixture);
        for s in &snapshots {
            let info = trace::ProcessInfo {
                pid: 4242,
                last: false,
            };
            let text = trace::render_process(s, Format::Text, info);
            assert_eq!(text, trace::render(s, Format::Text), "{}", path.display());
            let mut doc: Value =
                serde_json::from_str(&trace::render_process(s, Format::Json, info)).unwrap();
            conforms(&snap_schema, &doc, &path);
            assert_eq!(
                (doc["pid"].as_u64(), doc["final"].as_bool()),
                (Some(4242), Some(false))
            );
            let o = doc.as_object_mut().unwrap();
            o.remove("pid");
            o.remove("final");
            let plain: Value = serde_json::from_str(&trace::render(s, Format::Json)).unwrap();
            assert_eq!(doc, plain, "only additive fields: {}", path.display());
        }
        let events: Vec<Event> = snapshots.iter().flat_map(|s| s.events.clone()).collect();
        let procs: Vec<trace::ProcessTrace> = [100u32, 200]
            .into_iter()
            .map(|pid| trace::ProcessTrace {
                pid,
                command: (pid == 100).then(|| "torchrun train.py".to_string()),
                launches: launches.clone(),
                events: events.clone(),
                clock: Vec::new(),
            })
            .collect();
        let doc = trace::trace_events_of(&procs);
        conforms(&events_schema, &doc, &path);
        let evs = doc["traceEvents"].as_array().unwrap();
        for pid in [100u64, 200] {
            let host = |cat: &str| {
                evs.iter()
                    .filter(|e| e["cat"] == cat && e["pid"].as_u64() == Some(pid))
                    .count()
            };
            assert_eq!(host("launch"), launches.len(), "{}", path.display());
            assert_eq!(host("record"), events.len(), "{}", path.display());
            for l in &launches {
                if l.first_block_ns.is_some() && l.last_block_ns.is_some() {
                    let gpu = trace::GPU_TRACK_BASE + pid * 64 + u64::from(l.device);
                    assert!(
                        evs.iter()
                            .any(|e| e["cat"] == "kernel" && e["pid"].as_u64() == Some(gpu)),
                        "{}",
                        path.display()
                    );
                }
            }
        }
        let named = |pid: u64| {
            evs.iter()
                .find(|e| e["name"] == "process_name" && e["pid"].as_u64() == Some(pid))
                .map(|e| e["args"]["name"].as_str().unwrap().to_string())
        };
        assert_eq!(named(100).as_deref(), Some("pid 100: torchrun train.py"));
        assert_eq!(named(200).as_deref(), Some("pid 200"));
    }
}

/// `--rows N`: text prints at most N rows of each map and says how many more there are;
/// the rows it prints are the first of the full listing, and 0 prints them all.
#[test]
fn text_prints_at_most_the_rows_asked_and_counts_the_rest() {
    let dir = repo_root().join("tests/trace/snapshots");
    let mut cut = 0;
    for path in files_with_ext(&dir, "json") {
        let fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let (snapshots, _) = load(&fixture);
        for s in &snapshots {
            let info = trace::ProcessInfo { pid: 1, last: true };
            let all = trace::render(s, Format::Text);
            assert_eq!(trace::render_limited(s, Format::Text, info, 0), all);
            let two = trace::render_limited(s, Format::Text, info, 2);
            // Per map section: the rows under its `key value` header.
            for (full, short) in all.split("\n@").zip(two.split("\n@")) {
                let rows = |t: &str| {
                    t.lines()
                        .skip_while(|l| !l.trim_start().starts_with("key"))
                        .skip(1)
                        .take_while(|l| l.starts_with("  ") && !l.trim_start().starts_with('('))
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                };
                let (f, sh) = (rows(full), rows(short));
                assert_eq!(sh, f[..f.len().min(2)], "{path:?}");
                if f.len() > 2 {
                    cut += 1;
                    let more = f.len() - 2;
                    let s = if more == 1 { "" } else { "s" };
                    assert!(
                        short.contains(&format!(
                            "({more} more row{s} not shown: --rows 0 prints all"
                        )),
                        "{short}"
                    );
                } else {
                    assert!(!short.contains("not shown"), "{short}");
                }
            }
        }
    }
    assert!(cut > 0, "no fixture has a map of more than 2 rows");
}
