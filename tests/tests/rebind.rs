//! `ptx::Options::rebind_maps` (what `bpf2ptx trace`'s interposer asks inject for) on
//! the PTX-level model (tests/ptx_model.rs): every map of the probes is bound before the
//! launch to storage allocated outside the module, as the interposer binds each
//! instrumented module to the one instance of every map it keeps per process and device
//! (descriptor words 3 and 5, an array's address word; a ring's reference word to a descriptor of its own; a
//! writable global-data section's reference word to a copy of it). After the launch the
//! rebound storage holds what the module's own storage holds when nothing is rebound,
//! and the module's own storage is untouched: no access path of the lowered code (inlined
//! array and hash lookups, fusion's flushes, sharded replicas, inlined ring output, the
//! runtime's map and ring functions, global data) uses a module address directly.

use bpf2ptx::inject::Options;
use bpf2ptx_backend::back::ptx;
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_runtime::{desc, maps::COUNTS_BYTES, MapKind};
use bpf2ptx_tests::fuse_check::App;
use bpf2ptx_tests::ptx_model::Model;
use bpf2ptx_tests::repo_root;

/// vecadd over `n` floats, its kernel named `kernel` (the bpftime probes match
/// `_Z9vectorAddPKfS0_Pf`).
fn vecadd(n: u32, block: u32, kernel: &str) -> App {
    let ptx = std::fs::read_to_string(repo_root().join("examples/apps/vecadd.ptx")).unwrap();
    App {
        ptx: ptx.replace("_Z6vecAddPKfS0_Pfi", kernel),
        kernel: kernel.into(),
        grid: [n.div_ceil(block), 1, 1],
        block: [block, 1, 1],
        buffers: vec![
            (u64::from(n) * 4, |k| (k % 7) as u8),
            (u64::from(n) * 4, |k| (k % 5) as u8),
            (u64::from(n) * 4, |_| 0),
        ],
        scalars: vec![u64::from(n)],
    }
}

/// Runs `app`'s launch on `m`: its buffers allocated and filled, its scalars after them
/// (`what` names the probes in a failure).
fn launch(m: &mut Model, app: &App, what: &str) {
    let mut args = Vec::new();
    for (bytes, fill) in &app.buffers {
        let at = m.alloc(*bytes);
        m.write(at, &(0..*bytes as usize).map(fill).collect::<Vec<u8>>());
        args.push(at);
    }
    args.extend(&app.scalars);
    m.launch(&app.kernel, app.grid, app.block, &args, 200_000_000)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
}

fn word(m: &Model, at: u64) -> u64 {
    u64::from_le_bytes(m.read(at, 8).try_into().expect("8 bytes"))
}

/// The descriptor the code uses for map `name`: the one its reference word names (rings
/// under `rebind_maps`), else the module's own.
fn descriptor(m: &Model, name: &str) -> Option<u64> {
    match m.symbol(&ptx::map_ref_symbol(name)) {
        Some((r, _)) => Some(word(m, r)),
        None => m.symbol(&ptx::map_desc_symbol(name)).map(|d| d.0),
    }
}

/// Every map's state as a host reads it, wherever the descriptors and reference words
/// point: storage, hash counts blocks, ring counters with the ring's drops and bound,
/// global data.
fn contents(m: &Model, obj: &Object, units: u64) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for map in &obj.maps {
        if map.origin == MapOrigin::GlobalData {
            let Some((at, n)) = m.symbol(&ptx::map_symbol(&map.name)) else {
                continue;
            };
            let at = match m.symbol(&ptx::map_ref_symbol(&map.name)) {
                Some((r, _)) => word(m, r),
                None => at,
            };
            out.push((map.name.clone(), m.read(at, n)));
            continue;
        }
        let Some(d) = descriptor(m, &map.name) else {
            continue;
        };
        let bytes = if map.is(MapKind::is_per_unit) {
            u64::from(map.max_entries)
                * units
                * bpf2ptx_runtime::maps::round8(map.value_size.into())
        } else {
            m.symbol(&ptx::map_data_symbol(&map.name))
                .expect("storage")
                .1
        };
        let mut v = m.read(word(m, d + desc::DATA), bytes);
        if map.is(MapKind::is_hash) {
            v.extend(m.read(word(m, d + desc::AUX2), COUNTS_BYTES));
        }
        if map.is(MapKind::is_ring) {
            v.extend(m.read(word(m, d + desc::AUX2), 16));
            v.extend(m.read(d + desc::DROPS, 16));
        }
        out.push((map.name.clone(), v));
    }
    out
}

/// What the interposer does before a module's first launch, here in the model: every map
/// the module holds gets storage of its own outside the module (hash maps a counts block,
/// rings their counters and a descriptor, writable global data a copy of its initial
/// bytes), bound through the descriptor and reference words. Returns the module
/// addresses that must stay as they were (the module's own storage, and a ring's own
/// descriptor words 6 and 7).
fn bind_elsewhere(m: &mut Model, obj: &Object) -> Vec<(u64, u64)> {
    let mut own = Vec::new();
    let mut copy = |m: &mut Model, sym: &str| -> Option<u64> {
        let (at, n) = m.symbol(sym)?;
        let new = m.alloc(n);
        let bytes = m.read(at, n);
        m.write(new, &bytes);
        own.push((at, n));
        Some(new)
    };
    for map in &obj.maps {
        if map.origin == MapOrigin::GlobalData {
            if let Some((r, _)) = m.symbol(&ptx::map_ref_symbol(&map.name)) {
                let new = copy(m, &ptx::map_symbol(&map.name)).expect("the section");
                m.write(r, &new.to_le_bytes());
            }
            continue;
        }
        let Some((d, _)) = m.symbol(&ptx::map_desc_symbol(&map.name)) else {
            continue;
        };
        if let Some(data) = copy(m, &ptx::map_data_symbol(&map.name)) {
            m.write(d + desc::DATA, &data.to_le_bytes());
            // An array's address word (`.const`) names the same storage.
            if let Some((a, _)) = m.symbol(&ptx::map_addr_symbol(&map.name)) {
                m.write(a, &data.to_le_bytes());
            }
        }
        for sym in [
            ptx::map_counts_symbol(&map.name),
            ptx::map_counter_symbol(&map.name),
        ] {
            if let Some(aux2) = copy(m, &sym) {
                m.write(d + desc::AUX2, &aux2.to_le_bytes());
                // A hash map's second address word names the counts block.
                if let Some((a, 16)) = m.symbol(&ptx::map_addr_symbol(&map.name)) {
                    m.write(a + 8, &aux2.to_le_bytes());
                }
            }
        }
        if let Some((r, _)) = m.symbol(&ptx::map_ref_symbol(&map.name)) {
            let new = copy(m, &ptx::map_desc_symbol(&map.name)).expect("the descriptor");
            m.write(r, &new.to_le_bytes());
        }
    }
    own
}

/// Runs `app` woven with `probes` under `opts`; with `rebind`, every map bound elsewhere
/// first. Returns the maps' contents and whether the module's own storage was untouched.
fn run(probes: &str, app: &App, opts: &Options, rebind: bool) -> (Vec<(String, Vec<u8>)>, bool) {
    let path = repo_root().join(probes);
    let obj = bpf2ptx::load_path(&path).expect("loads");
    let opts = Options {
        rebind_maps: rebind,
        ..opts.clone()
    };
    let (woven, _) = bpf2ptx::inject::inject(&path, &app.ptx, "app.ptx", &opts)
        .unwrap_or_else(|e| panic!("{probes}: {e}"));
    let text = &woven.text;
    assert_eq!(
        text.contains("bpf2ptx_mapref_"),
        rebind && obj.maps.iter().any(ptx::has_map_ref),
        "{probes}: reference words exactly under rebind_maps"
    );
    let mut m = Model::new(text).unwrap_or_else(|e| panic!("{probes}: {e}"));
    let own = if rebind {
        bind_elsewhere(&mut m, &obj)
    } else {
        Vec::new()
    };
    let before: Vec<Vec<u8>> = own.iter().map(|&(at, n)| m.read(at, n)).collect();
    let threads = u64::from(app.grid.iter().product::<u32>() * app.block.iter().product::<u32>());
    for map in obj.maps.iter().filter(|m| m.is(MapKind::is_per_unit)) {
        if let Some((d, _)) = m.symbol(&ptx::map_desc_symbol(&map.name)) {
            let stride = bpf2ptx_runtime::maps::round8(map.value_size.into());
            let at = m.alloc(u64::from(map.max_entries) * threads * stride);
            m.write(d + desc::DATA, &at.to_le_bytes());
            m.write(d + desc::AUX, &threads.to_le_bytes());
        }
    }
    launch(&mut m, app, probes);
    let untouched = own
        .iter()
        .zip(&before)
        .all(|(&(at, n), b)| m.read(at, n) == *b);
    (contents(&m, &obj, threads), untouched)
}

#[test]
fn rebound_maps_hold_what_the_module_storage_holds_and_nothing_else_is_written() {
    const VECADD: &str = "_Z6vecAddPKfS0_Pfi";
    let fused = Options::default();
    let unfused = Options {
        no_fuse: true,
        ..Default::default()
    };
    let called = Options {
        call: true,
        ..Default::default()
    };
    // (gpu_hash_perthread's updates of one key wait for one another, slowly on the model:
    // a few threads there.)
    for (probes, kernel, threads) in [
        // Plain counters: sharded fused array, hash map, 32-bit array, `.bss` global.
        ("tests/inject/probes/plain_counters.bpf.o", VECADD, 256),
        // A ring written inline beside fused arrays.
        ("tests/inject/probes/fuse_ring.bpf.o", VECADD, 256),
        // Per-thread, per-warp and per-block counters of every kernel.
        ("tests/inject/probes/counters.bpf.o", VECADD, 256),
        ("examples/probes/mem_hist.bpf.o", VECADD, 256),
        ("examples/probes/warp_time.bpf.o", VECADD, 256),
        (
            "tests/probes/bpftime/gpu_hash_perthread.bpf.o",
            "_Z9vectorAddPKfS0_Pf",
            8,
        ),
    ] {
        let app = vecadd(threads, threads.min(64), kernel);
        for (how, opts) in [
            ("fused", &fused),
            ("unfused", &unfused),
            ("called", &called),
        ] {
            let (own, _) = run(probes, &app, opts, false);
            let (rebound, untouched) = run(probes, &app, opts, true);
            assert!(
                own.iter().any(|(_, b)| b.iter().any(|&x| x != 0)),
                "{probes} {how}: the probes wrote some map"
            );
            let names = |c: &[(String, Vec<u8>)]| c.iter().map(|m| m.0.clone()).collect::<Vec<_>>();
            assert_eq!(names(&rebound), names(&own), "{probes} {how}");
            for ((name, a), (_, b)) in rebound.iter().zip(&own) {
                let at = a.iter().zip(b).position(|(x, y)| x != y);
                assert!(
                    a.len() == b.len() && at.is_none(),
                    "{probes} {how}: map {name} rebound differs from its own storage at byte {at:?}"
                );
            }
            assert!(
                untouched,
                "{probes} {how}: the module's own storage was written"
            );
        }
    }
}

/// Without `rebind_maps` (inject, `bpf2ptx run`) nothing changes: an inlined array
/// lookup takes the module's storage as a constant address; with it, from the array's
/// address word in the constant bank.
#[test]
fn without_rebinding_inlined_array_lookups_keep_their_constant_address() {
    let path = repo_root().join("tests/inject/probes/fuse_ring.bpf.o");
    let app = vecadd(64, 32, "_Z6vecAddPKfS0_Pfi");
    let weave = |rebind_maps| {
        let opts = Options {
            no_fuse: true,
            rebind_maps,
            ..Default::default()
        };
        bpf2ptx::inject::inject(&path, &app.ptx, "app.ptx", &opts)
            .expect("injects")
            .0
            .text
    };
    let (plain, rebound) = (weave(false), weave(true));
    assert!(plain.contains("mov.u64 %lkd0, bpf2ptx_mapdata_hits;"));
    assert!(!rebound.contains("mov.u64 %lkd0, bpf2ptx_mapdata_"));
    assert!(rebound.contains("ld.const.u64 %lkd0, [bpf2ptx_mapaddr_hits];"));
    assert!(!plain.contains("bpf2ptx_mapaddr_"));
    assert!(rebound.contains("ld.global.nc.u64 %rbref, [bpf2ptx_mapref_events];"));
}

/// The rebound lowering is PTX ptxas accepts (the model above would run PTX the driver
/// refuses): every probe object of the first test, woven fused and called. (ptxas here
/// knows PTX ISA 8.8; vecadd.ptx is stamped 9.0 and uses nothing newer, so `.version` is
/// lowered as tests/tests/inject.rs does.)
#[test]
fn rebound_modules_assemble() {
    let Some(ptxas) = bpf2ptx_tests::require_ptxas() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let app = vecadd(64, 32, "_Z6vecAddPKfS0_Pfi");
    for (k, probes) in [
        "tests/inject/probes/plain_counters.bpf.o",
        "tests/inject/probes/fuse_ring.bpf.o",
        "tests/inject/probes/counters.bpf.o",
        "examples/probes/mem_hist.bpf.o",
        "examples/probes/trace_latency.bpf.o",
    ]
    .iter()
    .enumerate()
    {
        for call in [false, true] {
            let opts = Options {
                call,
                rebind_maps: true,
                ..Default::default()
            };
            let (woven, _) =
                bpf2ptx::inject::inject(&repo_root().join(probes), &app.ptx, "app.ptx", &opts)
                    .unwrap_or_else(|e| panic!("{probes}: {e}"));
            let src = dir.path().join(format!("{k}-{call}.ptx"));
            std::fs::write(&src, woven.text.replacen(".version 9.0", ".version 8.8", 1)).unwrap();
            let out = std::process::Command::new(&ptxas)
                .arg("-arch=sm_90")
                .arg(&src)
                .arg("-o")
                .arg(dir.path().join(format!("{k}-{call}.cubin")))
                .output()
                .expect("runs ptxas");
            assert!(
                out.status.success(),
                "{probes} (call {call}): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The live `(key, first_block_ns, last_block_ns)` entries of a `bpf2ptx:launch_spans`
/// map (a hash map of `__u64` keys and `struct bpf2ptx_launch_span` values) in the
/// module's own storage: slots whose state word has bit 1 (live, specs/abi.md).
fn spans(m: &Model, name: &str, max_entries: u32) -> Vec<(u64, u64, u64)> {
    let (data, _) = m
        .symbol(&ptx::map_data_symbol(name))
        .expect("the map's storage");
    let size = bpf2ptx_runtime::maps::hash_slot_size(8, 16);
    (0..bpf2ptx_runtime::maps::hash_slots(max_entries))
        .map(|k| data + k * size)
        .filter(|&at| word(m, at) & 2 != 0)
        .map(|at| (word(m, at + 8), word(m, at + 16), word(m, at + 24)))
        .collect()
}

/// `bpf2ptx_launch_span_start` inserts a launch's span from the grid's first block only
/// (a crowd of blocks inserting one key at their entry waits on the map's update, and a
/// block's wait at entry delays the application: benches/results/gpu-2026-12-07.md,
/// session 17). latency_parts variant 6 keys each block's span apart (launch time +
/// global thread id / 256): over 4 blocks of 256 only block 0's key is inserted; the
/// trace_latency example (one key per launch) gets its span, block 0's start within it.
#[test]
fn launch_spans_are_inserted_by_the_first_block_only() {
    let app = vecadd(1024, 256, "_Z6vecAddPKfS0_Pfi");
    for (probes, keys) in [
        ("benches/gpu-trace/probes/latency_part6.bpf.o", 1),
        ("examples/probes/trace_latency.bpf.o", 1),
    ] {
        let path = repo_root().join(probes);
        let (woven, _) = bpf2ptx::inject::inject(&path, &app.ptx, "app.ptx", &Options::default())
            .unwrap_or_else(|e| panic!("{probes}: {e}"));
        let mut m = Model::new(&woven.text).unwrap_or_else(|e| panic!("{probes}: {e}"));
        launch(&mut m, &app, probes);
        let live = spans(&m, "spans", 4096);
        assert_eq!(live.len(), keys, "{probes}: {live:?}");
        // The launch's time is 0 (the module's own `launch`, which no host wrote), so
        // block 0's key is 0 in both probes.
        let (key, first, last) = live[0];
        assert_eq!(key, 0, "{probes}");
        assert!(first != 0 && first <= last, "{probes}: {live:?}");
    }
}
