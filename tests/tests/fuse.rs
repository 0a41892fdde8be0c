//! Fusion (issue 19; specs/verifier.md "Register accumulation and forwarding") on the
//! CPU: the example probes on the example applications, run on the PTX-level model
//! (tests/ptx_model.rs) fused and unfused, give the same maps and outputs, and the maps
//! the launch makes by hand.

use bpf2ptx::inject::Options;
use bpf2ptx_tests::fuse_check::{self, App};
use bpf2ptx_tests::repo_root;
use std::path::PathBuf;

fn example_probe(name: &str) -> (PathBuf, bpf2ptx_compiler::program::Object) {
    let path = repo_root().join(format!("examples/probes/{name}.bpf.o"));
    let obj = bpf2ptx::load_path(&path).expect("loads");
    (path, obj)
}

fn float_bytes(k: usize) -> u8 {
    // Small positive floats: byte 3 of each word 0x3f (1.0 .. 2.0), the rest varying.
    if k % 4 == 3 {
        0x3f
    } else {
        (k * 7 % 251) as u8
    }
}

/// A kernel `(a, b, c, n)` adding `n` floats (`c = a + b`), from the PTX at `path`, on a
/// grid of `grid` blocks of `block` threads.
fn add_app(path: &str, kernel: &str, n: u32, block: u32, grid: u32) -> App {
    let bytes = u64::from(n) * 4;
    App {
        ptx: std::fs::read_to_string(repo_root().join(path)).unwrap(),
        kernel: kernel.into(),
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        buffers: vec![(bytes, float_bytes), (bytes, float_bytes), (bytes, |_| 0)],
        scalars: vec![u64::from(n)],
    }
}

/// vecadd over `n` floats, `block` threads per block (the last block partly past `n`).
fn vecadd(n: u32, block: u32) -> App {
    let grid = n.div_ceil(block);
    add_app(
        "examples/apps/vecadd.ptx",
        "_Z6vecAddPKfS0_Pfi",
        n,
        block,
        grid,
    )
}

/// The grid-stride vector add of tests/inject/loop/strided.cu over `n` floats: `grid`
/// blocks of `block` threads, each thread adding every (grid x block)-th element, so its
/// memory sites run in a loop.
fn strided(n: u32, block: u32, grid: u32) -> App {
    add_app(
        "tests/inject/loop/strided.ptx",
        "strided_add",
        n,
        block,
        grid,
    )
}

/// The tiled matmul of `n` x `n` (a multiple of 16).
fn matmul(n: u32) -> App {
    let bytes = u64::from(n * n) * 4;
    App {
        ptx: std::fs::read_to_string(repo_root().join("examples/apps/matmul.ptx")).unwrap(),
        kernel: "_Z6matmulPKfS0_Pfi".into(),
        grid: [n / 16, n / 16, 1],
        block: [16, 16, 1],
        buffers: vec![(bytes, float_bytes), (bytes, float_bytes), (bytes, |_| 0)],
        scalars: vec![u64::from(n)],
    }
}

fn no_fuse() -> Options {
    Options {
        no_fuse: true,
        ..Default::default()
    }
}

/// mem_hist's key: space << 5 | kind << 3 | log2(size).
fn key(space: usize, kind: usize, size: usize) -> usize {
    space << 5 | kind << 3 | size.trailing_zeros() as usize
}

#[test]
fn mem_hist_fused_counts_what_unfused_counts() {
    let (path, obj) = example_probe("mem_hist");
    for (name, app, want) in [
        (
            "vecadd 600",
            vecadd(600, 256),
            vec![(key(1, 1, 4), 1200u64), (key(1, 2, 4), 600)],
        ),
        (
            "strided 1000, 2 blocks of 96",
            strided(1000, 96, 2),
            vec![(key(1, 1, 4), 2000u64), (key(1, 2, 4), 1000)],
        ),
        (
            "matmul 32",
            matmul(32),
            // Per thread: 2 tile steps x (2 global loads, 2 shared stores, 32 shared
            // loads), one global store; 1024 threads.
            vec![
                (key(1, 1, 4), 4096),
                (key(2, 2, 4), 4096),
                (key(2, 1, 4), 65536),
                (key(1, 2, 4), 1024),
            ],
        ),
    ] {
        let fused = fuse_check::run(&path, &obj, &app, &Options::default())
            .unwrap_or_else(|e| panic!("{name}, fused: {e}"));
        let unfused = fuse_check::run(&path, &obj, &app, &no_fuse())
            .unwrap_or_else(|e| panic!("{name}, unfused: {e}"));
        assert!(fused == unfused, "{name}: fused and unfused differ");
        let hist = fuse_check::words(&fused.maps[0].1);
        let got: Vec<(usize, u64)> = hist
            .iter()
            .enumerate()
            .filter(|(_, &v)| v != 0)
            .map(|(k, &v)| (k, v))
            .collect();
        let mut want = want;
        want.sort_unstable();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn warp_time_forwarded_gives_the_unfused_histogram() {
    let (path, obj) = example_probe("warp_time");
    for (name, app) in [
        ("vecadd 600", vecadd(600, 256)),
        ("vecadd 600, blocks of 48", vecadd(600, 48)),
        ("matmul 32", matmul(32)),
    ] {
        let fused = fuse_check::run(&path, &obj, &app, &Options::default())
            .unwrap_or_else(|e| panic!("{name}, fused: {e}"));
        let unfused = fuse_check::run(&path, &obj, &app, &no_fuse())
            .unwrap_or_else(|e| panic!("{name}, unfused: {e}"));
        assert!(fused == unfused, "{name}: fused and unfused differ");
        let hist = fuse_check::words(&fused.maps.iter().find(|m| m.0 == "warp_hist").unwrap().1);
        let warps = u64::from(app.grid.iter().product::<u32>())
            * u64::from(app.block.iter().product::<u32>().div_ceil(32));
        assert_eq!(
            hist.iter().sum::<u64>(),
            warps,
            "{name}: one sample per warp"
        );
    }
}

/// The model sees what fusion does: with the forwarded value replaced by another one, or
/// a flush's add dropped, the maps differ from the unfused ones (so the comparisons above
/// are not comparisons of two lowerings that never ran their fused parts); and with
/// blocks that are not whole warps, the launch-shape check keeps the forwarded value
/// unused (a wrong one changes nothing).
#[test]
fn the_model_sees_a_broken_fusion() {
    let (path, obj) = example_probe("warp_time");
    let store = "mov.u64 %bpf2ptx_fw_0_w_0, %r0;";
    for (block, used) in [(256, true), (48, false)] {
        let app = vecadd(600, block);
        let (woven, _) =
            bpf2ptx::inject::inject(&path, &app.ptx, "app.ptx", &Options::default()).unwrap();
        let good = fuse_check::run_text(&woven.text, &obj, &app).unwrap();
        assert!(
            woven.text.contains(store),
            "warp_time's entry store is forwarded"
        );
        let broken = woven
            .text
            .replace(store, "mov.u64 %bpf2ptx_fw_0_w_0, 12345;");
        let bad = fuse_check::run_text(&broken, &obj, &app).unwrap();
        assert_eq!(
            good.maps != bad.maps,
            used,
            "blocks of {block}: forwarded value used"
        );
    }
    // Blocks of 48 threads: every second warp is partial, so the flushes take both paths
    // (a whole warp's sum, and each lane's own add).
    let app = strided(1000, 48, 3);
    let (path, obj) = example_probe("mem_hist");
    let (woven, _) =
        bpf2ptx::inject::inject(&path, &app.ptx, "app.ptx", &Options::default()).unwrap();
    let good = fuse_check::run_text(&woven.text, &obj, &app).unwrap();
    let red = "@%bpf2ptx_fp2 red.global.add.u64";
    let adds = woven.text.matches(red).count();
    // Two words, each added on three paths (sm_90: a warp's sum by redux.sync, by
    // shuffles when some lane's accumulator is 2^27 or more, each lane's own); the counts
    // here are small, so the shuffle path (adds 2 and 3) never runs.
    assert_eq!(adds, 6, "two words, each added on three paths");
    let runs = [true, true, false, false, true, true];
    for (k, &ran) in runs.iter().enumerate() {
        // Drop the k-th flush add alone.
        let mut n = 0;
        let broken: String = woven
            .text
            .split_inclusive('\n')
            .filter(|l| {
                if l.trim_start().starts_with(red) {
                    n += 1;
                    n != k + 1
                } else {
                    true
                }
            })
            .collect();
        let bad = fuse_check::run_text(&broken, &obj, &app).unwrap();
        assert_eq!(good.maps != bad.maps, ran, "flush add {k} dropped");
    }
}

/// Random probes of every kind (tests/fuse_random.rs) at random sites of random kernels,
/// fused and unfused, on the model: the same maps and the same buffer, seed by seed. Every
/// eighth fused module goes through ptxas for sm_70 (when the kernel's target is sm_70),
/// sm_80 and sm_90. With `BPF2PTX_FUSE_RANDOM_OUT=DIR` every case is also written there for
/// the same comparison on a GPU (tests/gpu/fuse_random.py).
#[test]
fn random_probes_fused_and_unfused_give_the_same_maps() {
    use bpf2ptx_tests::fuse_random;
    let ptxas = bpf2ptx_tests::require_ptxas();
    let tmp = tempfile::tempdir().unwrap();
    let (mut accumulated, mut forwarded, mut flushed_early, mut skipped) = (0, 0, 0, 0);
    for seed in 0..100u64 {
        let (ptx, block) = fuse_random::kernel(seed);
        let (obj, kinds) = fuse_random::probes(seed);
        let app = App {
            ptx,
            kernel: "k".into(),
            grid: [1 + (seed % 3) as u32, 1, 1],
            block: [block, 1, 1],
            buffers: vec![(fuse_random::BUF, |k| (k * 13 % 256) as u8)],
            scalars: vec![123],
        };
        let weave = |opts: &Options| {
            bpf2ptx::inject::inject_loaded(&obj, &app.ptx, "k.ptx", opts)
                .unwrap_or_else(|e| panic!("seed {seed} ({kinds:?}): {e}"))
                .woven
                .text
        };
        let fused_text = weave(&Options::default());
        let unfused_text = weave(&no_fuse());
        let run = |text: &str, what: &str| {
            fuse_check::run_text(text, &obj, &app)
                .unwrap_or_else(|e| panic!("seed {seed} ({kinds:?}), {what}: {e}"))
        };
        let fused = run(&fused_text, "fused");
        let unfused = run(&unfused_text, "unfused");
        if let Some(dir) = std::env::var_os(fuse_check::EXPORT_VAR) {
            let name = format!("seed{seed:03}");
            fuse_check::export_case(
                std::path::Path::new(&dir),
                &name,
                &fused_text,
                &unfused_text,
                &obj,
                &app,
                &fused,
            )
            .unwrap_or_else(|e| panic!("exporting {name}: {e}"));
        }
        if fused != unfused {
            let diff: Vec<String> = fused
                .maps
                .iter()
                .zip(&unfused.maps)
                .filter(|(a, b)| a != b)
                .map(|(a, b)| {
                    let (x, y) = (fuse_check::words(&a.1), fuse_check::words(&b.1));
                    let k = x.iter().zip(&y).position(|(p, q)| p != q).unwrap_or(0);
                    format!("{}[{k}]: fused {} unfused {}", a.0, x[k], y[k])
                })
                .collect();
            panic!(
                "seed {seed} ({kinds:?}): fused and unfused differ: {diff:?}, buffers equal: {}",
                fused.buffers == unfused.buffers
            );
        }
        accumulated += usize::from(fused_text.contains("add.u64 %bpf2ptx_acc_"));
        forwarded += usize::from(fused_text.contains("setp.ne.u32 %p1, %bpf2ptx_fws_"));
        skipped += usize::from(skips(&fused_text) > 0);
        flushed_early += usize::from(
            fused_text.contains("%bpf2ptx_flushed") && fused_text.contains("call 507")
                || fused_text.contains("call (pr), helper"),
        );
        if let (Some(p), 0) = (&ptxas, seed % 8) {
            let f = tmp.path().join(format!("k{seed}.ptx"));
            std::fs::write(&f, &fused_text).unwrap();
            let target: u32 = app.ptx[app.ptx.find(".target sm_").unwrap() + 11..][..2]
                .parse()
                .unwrap();
            for arch in ["sm_70", "sm_80", "sm_90"] {
                if arch[3..].parse::<u32>().unwrap() < target {
                    continue;
                }
                let out = std::process::Command::new(p)
                    .arg(format!("-arch={arch}"))
                    .arg(&f)
                    .arg("-o")
                    .arg(f.with_extension("cubin"))
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "seed {seed}, {arch}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    eprintln!(
        "{accumulated} accumulated, {forwarded} forwarded, {skipped} skipped, \
         {flushed_early} flushed early"
    );
    // The seeds exercise what they are for.
    assert!(accumulated >= 40, "{accumulated} seeds accumulated");
    assert!(forwarded >= 10, "{forwarded} seeds forwarded a load");
    assert!(skipped >= 5, "{skipped} seeds skipped a forwarded lookup");
    assert!(
        flushed_early >= 10,
        "{flushed_early} seeds flushed before a call"
    );
}

fn inject_probe(name: &str) -> (PathBuf, bpf2ptx_compiler::program::Object) {
    let path = repo_root().join(format!("tests/inject/probes/{name}.bpf.o"));
    let obj = bpf2ptx::load_path(&path).expect("loads");
    (path, obj)
}

fn weave(path: &std::path::Path, app: &App, opts: &Options) -> String {
    bpf2ptx::inject::inject(path, &app.ptx, "app.ptx", opts)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .0
        .text
}

/// A probe that reads a map it adds to keeps that map's adds at their sites (no
/// accumulator of it), while a map only ever added to is still accumulated; the model
/// gives the same maps either way.
#[test]
fn a_map_a_probe_reads_is_not_accumulated() {
    let (path, obj) = inject_probe("fuse_reads");
    let app = strided(1000, 96, 2);
    let fused = weave(&path, &app, &Options::default());
    assert!(
        !fused.contains("%bpf2ptx_acc_0_"),
        "hist (map 0) is read: no accumulator"
    );
    assert!(
        fused.contains("add.u64 %bpf2ptx_acc_1_0"),
        "total (map 1) is accumulated"
    );
    let body = fused.split("$L__bpf2ptx_1:").next().unwrap();
    assert!(
        body.contains("red.global.add.u64"),
        "hist's add stays an atomic at the site"
    );
    let a = fuse_check::run_text(&fused, &obj, &app).unwrap();
    let b = fuse_check::run(&path, &obj, &app, &no_fuse()).unwrap();
    assert!(a == b, "fused and unfused differ");
}

/// A probe that writes ring records is not fused (its add stays an atomic add), and the
/// kernel's accumulators are added to their maps before its site.
#[test]
fn a_ring_output_probe_is_not_fused_and_flushes_before_it() {
    let (path, obj) = inject_probe("fuse_ring");
    let app = strided(1000, 96, 2);
    let fused = weave(&path, &app, &Options::default());
    // Before the kernel's `ret`: a flush, the ring probe's site block, and the flush of
    // the exit itself; the first flush ends right where the site block starts.
    let kernel = &fused[fused.find(".entry strided_add").unwrap()..];
    let ret = kernel.rfind("\tret;").unwrap();
    let site = kernel[..ret]
        .rfind(".reg .b64 %bpf2ptx_d<3>;")
        .expect("the exit site");
    let flushed = kernel[..site]
        .rfind("$L__bpf2ptx_flushed:")
        .expect("a flush before it");
    let between = &kernel[flushed + "$L__bpf2ptx_flushed:".len()..site];
    assert!(
        between
            .chars()
            .all(|c| c.is_whitespace() || c == '{' || c == '}'),
        "the accumulators are flushed right before the ring probe's site: {between:?}"
    );
    // `sent` (map 1) is added to by the ring probe: no accumulator; `hits` (map 0) is.
    assert!(
        !fused.contains("%bpf2ptx_acc_1_"),
        "the ring probe's own add is not accumulated"
    );
    assert!(fused.contains("add.u64 %bpf2ptx_acc_0_0"));
    let a = fuse_check::run_text(&fused, &obj, &app).unwrap();
    let b = fuse_check::run(&path, &obj, &app, &no_fuse()).unwrap();
    let word = |o: &fuse_check::Outcome, name: &str| {
        fuse_check::words(&o.maps.iter().find(|m| m.0 == name).expect("the map").1)[0]
    };
    for o in [&a, &b] {
        // 1000 elements of 3 accesses each; 6 warps leave, one record each.
        assert_eq!((word(o, "hits"), word(o, "sent")), (3000, 6));
    }
}

/// `--map NAME=live` and `--map NAME=host` keep today's lowering of the map: with
/// mem_hist's one map live (or in host memory), the output is the `--no-fuse` output byte
/// for byte.
#[test]
fn live_and_host_maps_keep_the_unfused_lowering() {
    let (path, _) = example_probe("mem_hist");
    let app = strided(1000, 96, 2);
    for place in ["live", "host"] {
        let maps = vec![format!("mem_hist={place}")];
        let with = |no_fuse| Options {
            maps: maps.clone(),
            no_fuse,
            ..Default::default()
        };
        let fused = weave(&path, &app, &with(false));
        assert_eq!(fused, weave(&path, &app, &with(true)), "mem_hist={place}");
        assert!(!fused.contains("%bpf2ptx_acc_"), "mem_hist={place}");
    }
    // And without the option, the same probe is fused.
    assert!(weave(&path, &app, &Options::default()).contains("%bpf2ptx_acc_0_"));
}

/// Forwarding, exactly: fuse_forward stores a value of the warp at entry and counts a
/// function of what it loads back at exit, so the histogram is known for a launch of
/// whole warps; fused (the load takes the register), unfused, and computed agree.
#[test]
fn a_forwarded_value_is_the_stored_one() {
    let (path, obj) = inject_probe("fuse_forward");
    let app = vecadd(1024, 128);
    let fused = weave(&path, &app, &Options::default());
    assert!(
        fused.contains("mov.u64 %r1, %bpf2ptx_fw_0_w_0;"),
        "the exit's load is forwarded"
    );
    // The exit reads the key (`w`) again after the lookup's test: its computation is not
    // skipped (tests below).
    assert_eq!(skips(&fused), 0, "fw_exit keeps its key computation");
    let a = fuse_check::run_text(&fused, &obj, &app).unwrap();
    let b = fuse_check::run(&path, &obj, &app, &no_fuse()).unwrap();
    assert!(a == b, "fused and unfused differ");
    let mut want = [0u64; 64];
    for w in 0..1024u64 / 32 {
        want[(((32 * w) * 3 + 1) ^ w) as usize & 63] += 1;
    }
    let hist = fuse_check::words(&a.maps.iter().find(|m| m.0 == "fw_hist").unwrap().1);
    assert_eq!(hist, want);
}

/// A kernel that would need more than `fuse::MAX_ACCUMULATORS` accumulators keeps the
/// unfused bodies (each accumulator is a register live through the whole kernel).
#[test]
fn too_many_accumulators_keep_the_kernel_unfused() {
    let app = matmul(32);
    for (mask, fused) in [(7u32, true), (63, false)] {
        // A memory probe counting in the slot of its site's line: matmul has 37 sites.
        let text = format!(
            ".map hist array 4 8 64\nr1 = *(u32 *)(r1 + 20)\nr1 &= {mask}\n\
             *(u32 *)(r10 - 4) = r1\nr2 = r10\nr2 += -4\nr1 = map_idx(0) ll\ncall 1\n\
             if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 + 0) += r1\nout:\nr0 = 0\nexit\n"
        );
        let mut obj = bpf2ptx::load_bytes("sites.s", text.as_bytes()).unwrap();
        obj.programs[0].section = "gpu/mem/*".into();
        let woven =
            bpf2ptx::inject::inject_loaded(&obj, &app.ptx, "matmul.ptx", &Options::default())
                .unwrap()
                .woven
                .text;
        let n = woven.matches(".reg .b64 %bpf2ptx_acc_").count();
        assert_eq!(n > 0, fused, "slots & {mask}: {n} accumulators");
        assert!(n <= bpf2ptx_backend::back::ptx::fuse::MAX_ACCUMULATORS);
        let a = fuse_check::run_text(&woven, &obj, &app).unwrap();
        let unfused = bpf2ptx::inject::inject_loaded(&obj, &app.ptx, "matmul.ptx", &no_fuse())
            .unwrap()
            .woven
            .text;
        let b = fuse_check::run_text(&unfused, &obj, &app).unwrap();
        assert!(a == b, "slots & {mask}: fused and unfused differ");
    }
}

/// Accumulating pays only where a site's adds repeat in a thread: a map none of whose
/// accumulating sites is in a loop of the kernel keeps its atomics. vecadd's memory sites
/// and any kernel's entry site run once per thread (the output is `--no-fuse`'s byte for
/// byte); the same probes on kernels with loops accumulate the maps added to in them.
#[test]
fn adds_that_run_once_per_thread_stay_atomic() {
    for (probe, app, accumulated) in [
        ("mem_hist", vecadd(600, 256), false),
        ("thread_counter", vecadd(600, 256), false),
        ("thread_counter", matmul(32), false),
        ("warp_counter", matmul(32), false),
        ("mem_hist", matmul(32), true),
        ("mem_hist", strided(1000, 96, 2), true),
    ] {
        let (path, obj) = example_probe(probe);
        let name = format!("{probe} on {}", app.kernel);
        let fused = weave(&path, &app, &Options::default());
        let unfused = weave(&path, &app, &no_fuse());
        assert_eq!(
            fused.contains("add.u64 %bpf2ptx_acc_"),
            accumulated,
            "{name}"
        );
        assert_eq!(fused == unfused, !accumulated, "{name}");
        let a = fuse_check::run_text(&fused, &obj, &app).unwrap();
        let b = fuse_check::run_text(&unfused, &obj, &app).unwrap();
        assert!(a == b, "{name}: fused and unfused differ");
    }
}

/// How many bodies of `woven` start with a forwarded lookup's shortcut (`fuse::FwSkip`):
/// a test of a forwarded slot's flag followed by a branch, where a forwarded load's test
/// is followed by the copy of the register.
fn skips(woven: &str) -> usize {
    let lines: Vec<&str> = woven.lines().map(str::trim).collect();
    lines
        .windows(2)
        .filter(|w| {
            w[0].starts_with("setp.ne.u32 %p1, %bpf2ptx_fws_") && w[1].starts_with("@%p1 bra ")
        })
        .count()
}

/// The woven text's exit body of warp_time: from the exit site's start (the last site
/// block of the kernel) on.
fn last_site(woven: &str) -> usize {
    woven.rfind(".reg .b64 %bpf2ptx_d<3>;").expect("a site")
}

/// warp_time's exit reads back the start time its entry stored and needs nothing else of
/// the lookup: with the flag set the body skips the key computation, the lookup and its
/// test. Shown on the model: a lookup made to miss in the skipped code changes nothing
/// when every warp's flag is set (blocks of 256), and empties the histogram when none is
/// (blocks of 48: the launch's shape leaves the flag clear, so the full body runs); with
/// the flag forced clear the full body runs and gives the unfused maps.
#[test]
fn a_forwarded_lookup_skips_the_key_computation() {
    let (path, obj) = example_probe("warp_time");
    let flag = "selp.u32 %bpf2ptx_fws_0_w_0, 1, 0, %p4;";
    let bound = "setp.ge.u32 %lkp0, %lk0, 1048576;";
    for (block, skipped) in [(256, true), (48, false)] {
        let app = vecadd(600, block);
        let woven = weave(&path, &app, &Options::default());
        assert_eq!(skips(&woven), 1, "the exit body skips");
        assert!(woven.contains(flag), "the entry's store sets the flag");
        let unfused = fuse_check::run(&path, &obj, &app, &no_fuse()).unwrap();
        let fused = fuse_check::run_text(&woven, &obj, &app).unwrap();
        assert!(
            fused == unfused,
            "blocks of {block}: fused and unfused differ"
        );
        // The exit's lookup of warp_start misses.
        let at = last_site(&woven);
        let k = at + woven[at..].find(bound).expect("the exit's lookup");
        let missing = format!(
            "{}setp.ge.u32 %lkp0, %lk0, 0;{}",
            &woven[..k],
            &woven[k + bound.len()..]
        );
        let miss = fuse_check::run_text(&missing, &obj, &app).unwrap();
        assert_eq!(
            miss == unfused,
            skipped,
            "blocks of {block}: the exit's lookup skipped"
        );
        // The flag never set: every exit runs the full body.
        let cleared = woven.replace(flag, "mov.u32 %bpf2ptx_fws_0_w_0, 0;");
        let full = fuse_check::run_text(&cleared, &obj, &app).unwrap();
        assert!(full == unfused, "blocks of {block}: the full body differs");
    }
}

/// Whether the skip is taken is decided on what the body does after the lookup's test:
/// an exit that reads the key again, from its register or from the frame, keeps the key
/// computation (the skipped code would leave them stale); one that only reads the value
/// skips it. Fused and unfused give the same maps every way.
#[test]
fn a_forwarded_lookup_is_skipped_only_when_nothing_else_reads_it() {
    const MAPS: &str = ".map start array 4 8 1048576\n.map hist array 4 8 64\n";
    let key = "call 600\nr0 >>= 5\nr7 = r0\n*(u32 *)(r10 - 4) = r0\nr2 = r10\nr2 += -4\n\
               r1 = map_idx(0) ll\ncall 1\nif r0 == 0 goto out\n";
    let enter = format!("{key}r6 = r0\ncall 600\nr0 *= 3\nr0 += 1\n*(u64 *)(r6 + 0) = r0\n");
    let count = "r1 &= 63\n*(u32 *)(r10 - 8) = r1\nr2 = r10\nr2 += -8\nr1 = map_idx(1) ll\n\
                 call 1\nif r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 + 0) += r1\n";
    for (tail, skip) in [
        ("", true),
        ("r1 ^= r7\n", false),
        ("r2 = *(u32 *)(r10 - 4)\nr1 ^= r2\n", false),
        // The key's frame bytes written again before they are read: nothing stale is read.
        (
            "*(u32 *)(r10 - 4) = r1\nr2 = *(u32 *)(r10 - 4)\nr1 ^= r2\n",
            true,
        ),
    ] {
        let exit = format!("{key}r1 = *(u64 *)(r0 + 0)\n{tail}{count}");
        let mut obj: Option<bpf2ptx_compiler::program::Object> = None;
        for (k, (text, section)) in [(&enter, "gpu/entry.warp/*"), (&exit, "gpu/exit.warp/*")]
            .into_iter()
            .enumerate()
        {
            let src = format!("{MAPS}{text}out:\nr0 = 0\nexit\n");
            let mut one = bpf2ptx::load_bytes("probe.s", src.as_bytes()).unwrap();
            let mut p = one.programs.remove(0);
            p.name = format!("p{k}");
            p.section = section.into();
            match &mut obj {
                None => {
                    one.programs.push(p);
                    obj = Some(one);
                }
                Some(o) => o.programs.push(p),
            }
        }
        let obj = obj.unwrap();
        for block in [256, 48] {
            let app = vecadd(600, block);
            let text = |opts: &Options| {
                bpf2ptx::inject::inject_loaded(&obj, &app.ptx, "app.ptx", opts)
                    .unwrap()
                    .woven
                    .text
            };
            let fused = text(&Options::default());
            assert_eq!(skips(&fused), usize::from(skip), "tail {tail:?}");
            let a = fuse_check::run_text(&fused, &obj, &app).unwrap();
            let b = fuse_check::run_text(&text(&no_fuse()), &obj, &app).unwrap();
            assert!(
                a == b,
                "tail {tail:?}, blocks of {block}: fused and unfused differ"
            );
        }
    }
}

/// The log2 cascade most published probes write (tests/inject/probes/log2_cascade.bpf.c,
/// warp_time before it used `bpf2ptx_log2`), after its first step (`if (v >> 32) v >>=
/// 32`), works on a value the verifier proved below 2^32 (`Facts::upper_zero`): in the woven exit body its
/// compares and shifts are 32-bit (one SASS instruction each instead of two), and the
/// first step's compares, on the full 64-bit difference against 2^32 and 2^32 - 1, are
/// 32-bit compares of its high half (`Facts::jump_rhs_const`). The model gives the
/// unfused maps (and `warp_time_forwarded_gives_the_unfused_histogram` one sample per
/// warp).
#[test]
fn warp_time_log2_is_computed_in_32_bits() {
    let (path, obj) = inject_probe("log2_cascade");
    let app = vecadd(600, 256);
    let woven = weave(&path, &app, &Options::default());
    let exit = &woven[last_site(&woven)..];
    for step in [65536, 256, 16, 4] {
        assert!(
            exit.contains(&format!("setp.lt.u32 %p0, %w0, {step};")),
            "v < {step} in 32 bits"
        );
        assert!(!exit.contains(&format!("setp.lt.u64 %p0, %r3, {step};")));
    }
    for shift in [16, 8, 4, 2] {
        assert!(
            exit.contains(&format!("shr.u32 %w0, %w0, {shift};")),
            "v >>= {shift} in 32 bits"
        );
    }
    assert!(exit.contains("setp.gt.u32 %p0, %w0, 1;"));
    assert!(!exit.contains("shr.u64 %r3, %r3, 16;"));
    // The difference of two 64-bit times: the first step tests its high half.
    assert!(exit.contains("setp.lt.u32 %p0, %w1, 1;"), "{exit}");
    assert!(exit.contains("setp.gt.u32 %p0, %w1, 0;"), "{exit}");
    assert!(!exit.contains("setp.lt.u64 %p0, %r0, %r1;"), "{exit}");
    let fused = fuse_check::run_text(&woven, &obj, &app).unwrap();
    let unfused = fuse_check::run(&path, &obj, &app, &no_fuse()).unwrap();
    assert!(fused == unfused, "fused and unfused differ");
}

/// A probe that hands a helper a pointer into its context (here a map key: the access's
/// `size` field, bpf2ptx_mem_ctx offset 8) reads the site's real bytes: the site stores
/// the context to the `.local` copy r1 points to (a helper's read counts as a context
/// access in memory, `Facts::regions`), fused or not. vecadd's three accesses per thread
/// are 4 bytes each, so all land in slot 4.
#[test]
fn a_helper_reading_the_context_gets_the_sites_bytes() {
    let text = ".map m array 4 8 8\nr2 = r1\nr2 += 8\nr1 = map_idx(0) ll\ncall 1\n\
                if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 + 0) += r1\nout:\nr0 = 0\nexit\n";
    let mut obj = bpf2ptx::load_bytes("ctx_key.s", text.as_bytes()).unwrap();
    obj.programs[0].section = "gpu/mem/*".into();
    for (app, n) in [(vecadd(600, 256), 1800u64), (strided(1000, 96, 2), 3000)] {
        for opts in [Options::default(), no_fuse()] {
            let woven = bpf2ptx::inject::inject_loaded(&obj, &app.ptx, "app.ptx", &opts)
                .unwrap()
                .woven
                .text;
            assert!(
                woven.contains("st.local.u64 [bpf2ptx_ctx+8]"),
                "the size is stored"
            );
            let run = fuse_check::run_text(&woven, &obj, &app).unwrap();
            let mut want = [0u64; 8];
            want[4] = n;
            assert_eq!(fuse_check::words(&run.maps[0].1), want, "{}", app.kernel);
        }
    }
}
