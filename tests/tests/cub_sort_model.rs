//! tests/gpu/cub_sort.py's model of a CUB radix sort's memory traffic, checked on the CPU
//! before a GPU runs it: the PTX nvcc 13.0 makes of tests/gpu/trace/cub_sort.cu (CCCL
//! 3.0.1, `-arch=compute_90`), instrumented with examples/probes/mem_traffic.bpf.o and
//! mem_kernel.bpf.o, runs on the PTX-level model (tests/ptx_model.rs) with the launches
//! CUB makes on sm_90 for N keys (the histogram kernel, the exclusive sum, one onesweep
//! launch per 8-bit pass, the counters, bins and look-back zeroed as CUB's memsets do),
//! and:
//!
//! - the keys come out sorted;
//! - cub_sort.py's own `byte_rows`, given the CUB log lines of those launches, the keys and
//!   the maps the model leaves, read as its main reads them (`bpf2ptx trace`'s JSON lines,
//!   printed here by trace's own renderer, through checks.last_snapshots), all pass:
//!   every load, store and atomic of every kernel equals the model from CUB's algorithm;
//! - with several blocks per pass, the look-back polls are exactly their lower bound,
//!   4 R (B - 1) bytes per pass: the model runs one block after the other, so every block
//!   finds its predecessor's inclusive count at the first read (on a GPU, blocks that run
//!   together poll more, which the GPU check bounds from below only);
//! - ptxas assembles the instrumented module, as the model runs it and as `bpf2ptx trace`
//!   instruments it (rebound maps).
//!
//! Two sizes: 7000 keys with mem_traffic (one onesweep block per pass, 4 histogram tiles
//! on 4 blocks: the GPU check's exact case) and 7680 + 1234 keys with mem_kernel (2 blocks
//! per pass; 5 histogram tiles on 2 blocks, so a block merges the digits of several tiles,
//! one of them partial), each a test of its own (they run side by side).
//!
//! The PTX is committed (tests/gpu/trace/cub_sort.compute_90.ptx) because these tests need
//! it and the development machine has no nvcc; the GPU check builds its own from the
//! source with the GPU machine's nvcc and reads CUB's configuration from CUB's log, so it
//! does not depend on this copy. Regenerate it there with
//! `nvcc -ptx -O2 -arch=compute_90 tests/gpu/trace/cub_sort.cu -o tests/gpu/trace/cub_sort.compute_90.ptx`.

use bpf2ptx::inject::{self, Options};
use bpf2ptx::trace::{self, AppEnd, Format, Scope, Snapshot, TracedMap};
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::image::{MapCounts, MapData, MapImage};
use bpf2ptx_tests::ptx_model::Model;
use bpf2ptx_tests::{python3, repo_root, require_ptxas};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const PTX: &str = "tests/gpu/trace/cub_sort.compute_90.ptx";
/// CCCL 3.0's sm_90 tuning for 32-bit keys (the GPU check reads it from CUB's log).
const HIST_THREADS: u32 = 128;
const HIST_ITEMS: u32 = 16;
const ONESWEEP_THREADS: u32 = 384;
const ONESWEEP_ITEMS: u32 = 20;
const RADIX: u64 = 256;
const PASSES: u64 = 4;

/// cub_sort.cu's keys: splitmix64's output function, high half.
fn key_of(i: u64) -> u32 {
    let mut z = i
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(0x6A09_E667_F3BC_C909);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 32) as u32
}

fn kernel(ptx: &str, pat: &str) -> String {
    ptx.lines()
        .find(|l| l.starts_with(".visible .entry") && l.contains(pat))
        .unwrap_or_else(|| panic!("no kernel {pat}"))
        .trim_start_matches(".visible .entry ")
        .trim_end_matches('(')
        .to_string()
}

fn word(m: &Model, at: u64) -> u64 {
    u64::from_le_bytes(m.read(at, 8).try_into().expect("8 bytes"))
}

/// An array map's u64 values, every key (replicas summed).
fn array(m: &Model, obj: &Object, name: &str) -> Vec<u64> {
    let map = obj.maps.iter().find(|m| m.name == name).unwrap();
    let (desc, _) = m.symbol(&ptx::map_desc_symbol(name)).unwrap();
    let (data, replicas, step) = (word(m, desc + 24), word(m, desc + 32), word(m, desc + 40));
    let mut out = vec![0; map.max_entries as usize];
    for r in 0..replicas.max(1) {
        for (k, v) in out.iter_mut().enumerate() {
            *v += word(m, data + r * step + 8 * k as u64);
        }
    }
    out
}

struct Run {
    /// CUB_DEBUG_LOG's lines for these launches.
    log: String,
    /// The probe object's maps, in its order, as they are after the sort.
    maps: Vec<(String, Vec<u64>)>,
    names: BTreeMap<u32, String>,
}

/// The sort of `n` keys on the model with `probe`'s probes in every kernel.
fn sort(n: u64, hist_grid: u32, probe: &str, keys: &[u32]) -> Run {
    let text = std::fs::read_to_string(repo_root().join(PTX)).unwrap();
    let probe = repo_root().join(format!("examples/probes/{probe}.bpf.o"));
    let obj = bpf2ptx::load_path(&probe).unwrap();
    let (woven, _) = inject::inject(&probe, &text, "cub_sort.ptx", &Options::default())
        .unwrap_or_else(|e| panic!("inject: {e}"));
    let names = woven
        .sites
        .iter()
        .map(|s| (s.kernel_index, s.kernel.clone()))
        .collect();
    let mut m = Model::new(&woven.text).unwrap();
    let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
    let (a, b) = (m.alloc(n * 4), m.alloc(n * 4));
    m.write(a, &bytes);
    let tile = u64::from(ONESWEEP_THREADS * ONESWEEP_ITEMS);
    let blocks = n.div_ceil(tile);
    let (bins, lookback, ctrs) = (
        m.alloc(PASSES * RADIX * 4),
        m.alloc(blocks * RADIX * 4),
        m.alloc(PASSES * 4),
    );
    let budget = 1 << 40;
    let mut log = format!(
        "Invoking histogram_kernel<<<{hist_grid}, {HIST_THREADS}, 0, 0>>>(), {HIST_ITEMS} items \
         per iteration, 16 SM occupancy, bit_grain 8\n"
    );
    m.launch(
        &kernel(&text, "HistogramKernel"),
        [hist_grid, 1, 1],
        [HIST_THREADS, 1, 1],
        &[bins, a, n, 0, 32, 0],
        budget,
    )
    .unwrap_or_else(|e| panic!("histogram: {e}"));
    log += &format!("Invoking exclusive_sum_kernel<<<{PASSES}, 256, 0, 0>>>(), bit_grain 8\n");
    m.launch(
        &kernel(&text, "ExclusiveSumKernel"),
        [PASSES as u32, 1, 1],
        [256, 1, 1],
        &[bins],
        budget,
    )
    .unwrap_or_else(|e| panic!("exclusive sum: {e}"));
    let (mut cur, mut alt) = (a, b);
    for p in 0..PASSES {
        m.write(lookback, &vec![0; (blocks * RADIX * 4) as usize]);
        log += &format!(
            "Invoking onesweep_kernel<<<{blocks}, {ONESWEEP_THREADS}, 0, 0>>>(), {ONESWEEP_ITEMS} \
             items per thread, current bit {}, bit_grain 8, portion 0/1\n",
            8 * p
        );
        m.launch(
            &kernel(&text, "OnesweepKernel"),
            [blocks as u32, 1, 1],
            [ONESWEEP_THREADS, 1, 1],
            &[
                lookback,
                ctrs + 4 * p,
                0,
                bins + p * RADIX * 4,
                alt,
                cur,
                0,
                0,
                n,
                8 * p,
                8,
                0,
            ],
            budget,
        )
        .unwrap_or_else(|e| panic!("onesweep pass {p}: {e}"));
        std::mem::swap(&mut cur, &mut alt);
    }
    let got: Vec<u32> = m
        .read(cur, n * 4)
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut want = keys.to_vec();
    want.sort_unstable();
    assert!(got == want, "{n} keys: not sorted");
    let maps = obj
        .maps
        .iter()
        .map(|map| (map.name.clone(), array(&m, &obj, &map.name)))
        .collect();
    Run { log, maps, names }
}

/// The run's maps as `bpf2ptx trace --format json` prints them for one process on one
/// device (the object's BTF decodes them): a periodic snapshot holding half of each
/// count, then the last one, with the app's end.
fn trace_lines(probe: &Path, run: &Run) -> String {
    let obj = bpf2ptx::load_path(probe).unwrap();
    let btf = trace::object_btf(&std::fs::read(probe).unwrap()).unwrap();
    let types = trace::map_types(&obj, btf.as_ref(), &[]).unwrap();
    let snapshot = |ns: u64, end: Option<AppEnd>, part: u64| {
        let maps = obj
            .maps
            .iter()
            .enumerate()
            .map(|(k, map)| {
                let (_, vals) = run.maps.iter().find(|(n, _)| *n == map.name).unwrap();
                let values = vals
                    .iter()
                    .map(|v| (v / part).to_le_bytes().to_vec())
                    .collect();
                TracedMap::new(
                    map.clone(),
                    types[k].clone(),
                    MapImage {
                        counts: MapCounts::default(),
                        keys: None,
                        data: MapData::Array {
                            values,
                            sharded: None,
                        },
                    },
                )
            })
            .collect();
        let s = Snapshot {
            elapsed_ns: ns,
            scope: Scope::Device {
                device: 0,
                context: 0,
                several: false,
            },
            end,
            maps,
            loop_budget: Vec::new(),
            printk_dropped: 0,
            events: Vec::new(),
        };
        trace::render(&s, Format::Json)
    };
    snapshot(1_000_000, None, 2) + &snapshot(2_000_000, Some(AppEnd::Exited { code: 0 }), 1)
}

/// cub_sort.py's model and checks on a run, reading the maps as its main does: from
/// `bpf2ptx trace`'s JSON lines (checks.last_snapshots); its rows, each (what, got,
/// want), and the model's facts.
fn python_rows(n: u64, run: &Run, probe: &Path, keys_file: &Path) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let (input, snaps) = (dir.path().join("run.json"), dir.path().join("snaps.jsonl"));
    std::fs::write(&snaps, trace_lines(probe, run)).unwrap();
    let doc = serde_json::json!({"log": run.log, "n": n, "names": run.names});
    std::fs::write(&input, doc.to_string()).unwrap();
    let script = "
import json, sys
sys.path.insert(0, 'tests/gpu')
import cub_sort as c
from checks import last_snapshots
d = json.load(open(sys.argv[1]))
keys = open(sys.argv[2], 'rb').read()
lines = [json.loads(x) for x in open(sys.argv[3]) if x.lstrip().startswith('{')]
procs = last_snapshots(lines)
assert list(procs) == [None], procs.keys()
maps = procs[None]['maps']
(want, info), why = c.model(c.cub_launches(d['log']), d['n'], keys)
assert why is None, why
names = {int(k): v for k, v in d['names'].items()}
rows = c.byte_rows('case', want, info, maps.get('traffic_bytes'), maps.get('kmem_bytes'),
                   names)
polls = c.look_back(maps, names, want)
print(json.dumps({'rows': [[w, repr(g), repr(x)] for _, w, g, x in rows],
                  'info': info, 'polls': polls}))
";
    let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_string();
    let (input, keys, snaps) = (path(&input), path(keys_file), path(&snaps));
    let out = python3(&["-c", script, &input, &keys, &snaps]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Sorts `n` keys on the model with `probe` in every kernel (`hist_grid` histogram
/// blocks) and checks cub_sort.py's rows on what trace would print of the maps.
fn check(n: u64, hist_grid: u32, probe: &str) {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<u32> = (0..n).map(key_of).collect();
    let keys_file = dir.path().join(format!("keys-{n}.bin"));
    let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
    std::fs::write(&keys_file, bytes).unwrap();
    let t0 = std::time::Instant::now();
    let run = sort(n, hist_grid, probe, &keys);
    eprintln!(
        "{n} keys, {probe}: {:.1} s on the model",
        t0.elapsed().as_secs_f64()
    );
    let object = repo_root().join(format!("examples/probes/{probe}.bpf.o"));
    let r = python_rows(n, &run, &object, &keys_file);
    let rows = r["rows"].as_array().unwrap();
    assert!(rows.len() >= 2, "{n} {probe}: {r}");
    for row in rows {
        assert_eq!(row[1], row[2], "{n} {probe}: {}", row[0]);
    }
    let info = &r["info"];
    let exact = info["exact"].as_bool().unwrap();
    assert_eq!(
        exact,
        n <= u64::from(ONESWEEP_THREADS * ONESWEEP_ITEMS),
        "{n}: {info}"
    );
    // One block at a time: every poll finds what it waits for.
    assert_eq!(r["polls"], info["polls_min"], "{n} {probe}: {info}");
}

/// The exact case with mem_traffic (the totals): one onesweep block per pass.
/// About 15 s on the model in a debug build.
#[test]
fn one_block_per_pass_with_mem_traffic() {
    check(7000, 4, "mem_traffic");
}

/// Two blocks per pass with mem_kernel (the look-back set apart). About 50 s on the model
/// in a debug build.
#[test]
fn two_blocks_per_pass_with_mem_kernel() {
    check(7680 + 1234, 2, "mem_kernel");
}

/// What `bpf2ptx trace` makes of the PTX the GPU check runs (its interposer's options:
/// rebound maps) with each probe, and what the model above runs (the module's own
/// storage), ptxas assembles.
#[test]
fn the_instrumented_sort_assembles() {
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // ptxas here may be older than nvcc 13's `.version 9.0`; nothing in it is newer than
    // 8.8 (as tests/tests/gallery.rs lowers it).
    let text = std::fs::read_to_string(repo_root().join(PTX))
        .unwrap()
        .replacen(".version 9.0", ".version 8.8", 1);
    for probe in ["mem_traffic", "mem_kernel"] {
        let object = repo_root().join(format!("examples/probes/{probe}.bpf.o"));
        for rebind_maps in [false, true] {
            let opts = Options {
                rebind_maps,
                ..Default::default()
            };
            let (woven, _) = inject::inject(&object, &text, "cub_sort.ptx", &opts)
                .unwrap_or_else(|e| panic!("{probe}: inject: {e}"));
            let src = dir.path().join(format!("{probe}.{rebind_maps}.ptx"));
            std::fs::write(&src, &woven.text).unwrap();
            let out = Command::new(&ptxas)
                .args(["-arch=sm_90", "-o"])
                .arg(src.with_extension("cubin"))
                .arg(&src)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{probe} (rebind_maps {rebind_maps}): ptxas: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
