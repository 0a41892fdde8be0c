//! `bpf2ptx inject` over every PTX fixture (nvcc 13.5 for sm_75/sm_90 with and without
//! -G/-lineinfo, clang 14 for sm_70): the kernel's own code survives byte for byte, a
//! probe that matches nothing or has no effects leaves the PTX unchanged, every attach
//! site is where the input says it should be, and ptxas accepts every output.
//!
//! ptxas here is 12.9 (PTX ISA ≤ 8.8) while nvcc 13.5 stamps its output `.version 9.5`;
//! these kernels use nothing newer, so the ptxas check lowers `.version` to 8.8 for them
//! (the GPU check, tests/gpu/inject_check.py, builds with the device's nvcc and runs the
//! output for real).

use bpf2ptx::inject::{self, Options};
use bpf2ptx_backend::back::ptx::Granularity;
use bpf2ptx_backend::inject::ptx::{self as model, FunctionKind, Space};
use bpf2ptx_backend::inject::weave::Woven;
use bpf2ptx_tests::{check_snapshot, files_with_ext, repo_root, require_ptxas};
use std::path::{Path, PathBuf};
use std::process::Command;

fn probe(name: &str) -> PathBuf {
    repo_root().join("tests/inject/probes").join(name)
}

/// Every nvcc- and clang-built PTX fixture, and the example applications' PTX (nvcc 13.0).
fn fixtures() -> Vec<PathBuf> {
    let mut v = files_with_ext(&repo_root().join("tests/inject/ptx"), "ptx");
    assert!(v.len() >= 30, "fixtures missing");
    let apps = files_with_ext(&repo_root().join("examples/apps"), "ptx");
    assert!(apps.len() >= 2, "examples/apps PTX missing");
    v.extend(apps);
    v
}

/// The ptxas target of a fixture: from its name (`vecadd.sm75.nvcc.ptx`), else its
/// `.target` line.
fn target_of(app: &Path) -> String {
    let name = app.file_name().unwrap().to_string_lossy().into_owned();
    match name.split('.').nth(1).filter(|t| t.starts_with("sm")) {
        Some(t) => t.replace("sm", "sm_"),
        None => std::fs::read_to_string(app)
            .unwrap()
            .lines()
            .find_map(|l| l.trim().strip_prefix(".target "))
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .trim()
            .to_string(),
    }
}

fn run(probes: &str, app: &Path, opts: &Options) -> Woven {
    let text = std::fs::read_to_string(app).unwrap();
    inject::inject(&probe(probes), &text, &app.display().to_string(), opts)
        .unwrap_or_else(|e| panic!("{}: {e}", app.display()))
        .0
}

fn header_lines(text: &str) -> (String, String) {
    let find = |d: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(d))
            .unwrap_or_default()
            .to_string()
    };
    (find(".version"), find(".target"))
}

/// What the input says the sites are: per kernel, one entry site, one exit site per
/// ret/exit (plus one when the kernel can run off its end), one memory site per
/// ld/ldu/st/atom/red outside .const and .param.
fn expected_sites(app: &str) -> (usize, usize, usize) {
    let m = model::parse(app).unwrap();
    let (mut entry, mut exit, mut mem) = (0, 0, 0);
    for f in m
        .functions()
        .filter(|f| f.kind() == FunctionKind::Entry && f.has_body())
    {
        entry += 1;
        let insns: Vec<_> = f.instructions().map(|(_, i)| i).collect();
        exit += insns
            .iter()
            .filter(|i| matches!(i.opcode.base.as_str(), "ret" | "exit"))
            .count();
        if !insns.last().is_some_and(|i| {
            i.guard.is_none() && matches!(i.opcode.base.as_str(), "ret" | "exit" | "bra" | "trap")
        }) {
            exit += 1;
        }
        mem += insns
            .iter()
            .filter_map(|i| i.memory_access())
            .filter(|a| !matches!(a.space, Space::Const | Space::Param))
            .count();
    }
    (entry, exit, mem)
}

#[test]
fn kernels_keep_their_code_and_sites_match_the_input() {
    let mut checked = 0;
    for app in fixtures() {
        let text = std::fs::read_to_string(&app).unwrap();
        let woven = run("counters.bpf.o", &app, &Options::default());
        // The kernels' own statements are all there, in order, byte for byte.
        let (v_in, t_in) = header_lines(&text);
        let (v_out, t_out) = header_lines(&woven.text);
        let back = bpf2ptx_tests::strip_injected(&woven.text)
            .replacen(&v_out, &v_in, 1)
            .replacen(&t_out, &t_in, 1);
        assert_eq!(back, text, "{}: kernel code changed", app.display());
        // Sites: counters.bpf.o attaches 3 entry probes, 3 exit probes, 1 memory probe.
        let (entry, exit, mem) = expected_sites(&text);
        let count = |p: &str| {
            woven
                .sites
                .iter()
                .filter(|s| s.point == serde_point(p))
                .count()
        };
        assert_eq!(count("entry"), entry, "{}", app.display());
        assert_eq!(count("exit"), exit, "{}", app.display());
        assert_eq!(count("mem"), mem, "{}", app.display());
        assert!(mem > 0, "{}: no memory access found", app.display());
        for s in &woven.sites {
            let want = match s.point {
                p if p == serde_point("entry") => 3,
                p if p == serde_point("exit") => 3,
                _ => 1,
            };
            assert_eq!(s.probes.len(), want, "{}: {s:?}", app.display());
        }
        // Warp-granularity guards use activemask: PTX 6.2 at least.
        let v: f64 = v_out.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(v >= 6.2, "{}: {v_out}", app.display());
        checked += 1;
    }
    assert!(checked >= 30);
}

fn serde_point(p: &str) -> bpf2ptx_backend::inject::attach::Point {
    use bpf2ptx_backend::inject::attach::Point;
    match p {
        "entry" => Point::Entry,
        "exit" => Point::Exit,
        _ => Point::Mem,
    }
}

#[test]
fn no_match_or_no_effect_leaves_the_ptx_unchanged() {
    for app in fixtures() {
        let text = std::fs::read_to_string(&app).unwrap();
        // kprobe/vecAdd: an empty probe (elided) and, for other kernels, no match.
        let woven = run("empty.bpf.o", &app, &Options::default());
        assert_eq!(woven.text, text, "{}", app.display());
        assert!(woven.sites.is_empty());
    }
}

#[test]
fn sites_snapshot() {
    let app = repo_root().join("tests/inject/ptx/matmul.sm90.lineinfo.nvcc.ptx");
    let woven = run("memcapture.bpf.o", &app, &Options::default());
    let json = serde_json::to_string_pretty(&woven.sites).unwrap() + "\n";
    check_snapshot(
        &repo_root().join("tests/out/inject/matmul.sm90.lineinfo.sites.json"),
        &json,
    );
    // Every site id is the line of its instruction in the input.
    let text = std::fs::read_to_string(&app).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for s in &woven.sites {
        assert_eq!(lines[s.site as usize - 1].trim(), s.instruction, "{s:?}");
        assert!(s
            .source
            .as_deref()
            .is_some_and(|x| x.contains("matmul.cu:")));
    }
}

#[test]
fn extern_mode_declares_the_probes() {
    let app = repo_root().join("tests/inject/ptx/vecadd.sm70.clang.ptx");
    let opts = Options {
        extern_probes: true,
        ..Default::default()
    };
    let woven = run("counters.bpf.o", &app, &opts);
    for p in ["on_entry", "on_exit", "on_mem", "on_entry_warp"] {
        assert!(
            woven
                .text
                .contains(&format!(".extern .func (.param .b64 bpf_ret) {p}(")),
            "{p}"
        );
    }
    assert!(
        !woven.text.contains("bpf2ptx_map_counts"),
        "maps stay in the probe module"
    );
}

#[test]
fn granularity_option_applies_to_sections_without_one() {
    let app = repo_root().join("tests/inject/ptx/vecadd.sm70.clang.ptx");
    let opts = Options {
        granularity: Granularity::Block,
        ..Default::default()
    };
    let woven = run("memcapture.bpf.o", &app, &opts);
    let blocks = woven.text.matches("mov.u32 %bpf2ptx_w0, %tid.x;").count();
    assert_eq!(blocks, woven.sites.len());
}

#[test]
fn bad_inputs_are_errors() {
    let app32 = ".version 7.0\n.target sm_70\n.address_size 32\n.visible .entry k()\n{\nret;\n}\n";
    let err = inject::inject(
        &probe("counters.bpf.o"),
        app32,
        "k.ptx",
        &Options::default(),
    )
    .expect_err("32-bit PTX refused");
    assert!(err.to_string().contains("address_size 32"), "{err}");
    assert_eq!(err.exit_code(), bpf2ptx::exit::BAD_INPUT);
    let clash = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .global .u64 bpf2ptx_map_counts;\n.visible .entry k()\n{\nret;\n}\n";
    let err = inject::inject(
        &probe("counters.bpf.o"),
        clash,
        "k.ptx",
        &Options::default(),
    )
    .expect_err("clash refused");
    assert!(err.to_string().contains("bpf2ptx_map_counts"), "{err}");
    let garbage = "not ptx {";
    assert!(inject::inject(
        &probe("counters.bpf.o"),
        garbage,
        "g.ptx",
        &Options::default()
    )
    .is_err());
    // A program with no attach point (a text input has no section).
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("p.s");
    std::fs::write(&s, "r0 = 0\nexit\n").unwrap();
    let app64 = app32.replace("address_size 32", "address_size 64");
    let err =
        inject::inject(&s, &app64, "k.ptx", &Options::default()).expect_err("no attach point");
    assert!(err.to_string().contains("is not an attach point"), "{err}");
}

/// ptxas accepts every injected output (merged: assembled; extern: compiled as
/// relocatable code with `-c`).
#[test]
fn ptxas_accepts_every_output() {
    let Some(ptxas) = require_ptxas() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for app in fixtures() {
        let name = app.file_stem().unwrap().to_string_lossy().into_owned();
        let target = target_of(&app);
        // (probes, --extern, --call)
        for (probes, ext, call) in [
            ("counters.bpf.o", false, false),
            ("memcapture.bpf.o", false, false),
            ("counters.bpf.o", true, false),
            ("memcapture.bpf.o", false, true),
        ] {
            let opts = Options {
                extern_probes: ext,
                call,
                ..Default::default()
            };
            let mut text = run(probes, &app, &opts).text;
            if let Some(v) = text.lines().find(|l| l.starts_with(".version ")) {
                let ver: f64 = v[9..].trim().parse().unwrap();
                if ver > 8.8 {
                    text = text.replacen(v, ".version 8.8", 1);
                }
            }
            let src = tmp.path().join(format!("{name}.{probes}.{ext}.{call}.ptx"));
            std::fs::write(&src, &text).unwrap();
            let mut cmd = Command::new(&ptxas);
            cmd.arg(format!("-arch={target}"))
                .arg(&src)
                .arg("-o")
                .arg(src.with_extension("cubin"));
            if ext {
                cmd.arg("-c");
            }
            let out = cmd.output().unwrap();
            assert!(
                out.status.success(),
                "{} ({probes}, extern {ext}): {}",
                app.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            n += 1;
        }
    }
    assert!(n >= 140);
}

/// An application given as a fatbin (any compression), shared library, executable or
/// object file is instrumented through its PTX; a SASS-only one says how to rebuild.
#[test]
fn containers_give_their_ptx() {
    let dir = repo_root().join("tests/inject/fatbin");
    for f in [
        "vecadd.ptx.default.fatbin",
        "vecadd.ptx.speed.fatbin",
        "vecadd.sass-ptx.fatbin",
        "libvecadd.so",
        "app",
        "vecadd.o",
    ] {
        let path = dir.join(f);
        let app = inject::app_ptx(&path, None).unwrap_or_else(|e| panic!("{f}: {e}"));
        let (woven, _) = inject::inject(&probe("counters.bpf.o"), &app, f, &Options::default())
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(
            woven.sites.iter().any(|s| s.kernel.contains("vecadd")),
            "{f}"
        );
    }
    let err = inject::app_ptx(&dir.join("vecadd.sass.fatbin"), None).unwrap_err();
    assert!(
        err.to_string().contains("compute_90,code=compute_90"),
        "{err}"
    );
    assert_eq!(err.exit_code(), bpf2ptx::exit::BAD_INPUT);
}

/// An object with PTX for several virtual architectures (nvcc 13.0: `-arch=sm_90a` keeps
/// compute_90 and compute_90a PTX, both `compute_90` in the entry header;
/// `-gencode` for 75 and 90): `--ptx-arch` takes each one by its `.target`, the default
/// says how to choose, and an architecture the object lacks lists those it has. This is
/// what cli/cmake/bpf2ptx-embed does for a multi-architecture build.
#[test]
fn ptx_arch_picks_a_virtual_architecture() {
    let dir = repo_root().join("tests/inject/fatbin");
    let a = dir.join("vecadd.sm_90a.o");
    let target = |ptx: &str| inject::ptx_virtual_arch(ptx).unwrap();
    for (want, got) in [
        ("compute_90", "compute_90"),
        ("compute_90a", "compute_90a"),
        ("sm_90a", "compute_90a"),
        ("90", "compute_90"),
    ] {
        let ptx =
            inject::app_ptx_for(&a, None, Some(want)).unwrap_or_else(|e| panic!("{want}: {e}"));
        assert_eq!(target(&ptx), got, "{want}");
    }
    let err = inject::app_ptx(&a, None).unwrap_err().to_string();
    assert!(
        err.contains("2 PTX entries for compute_90; choose one with --ptx-arch or --ptx-entry: 0 (compute_90, unnamed,")
            && err.contains("(compute_90a, unnamed,"),
        "{err}"
    );
    let err = inject::app_ptx_for(&a, None, Some("compute_80")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: no PTX for compute_80; the input has PTX for compute_90, compute_90a",
            a.display()
        )
    );
    assert_eq!(err.exit_code(), bpf2ptx::exit::BAD_INPUT);
    let err = inject::app_ptx_for(&a, None, Some("ninety")).unwrap_err();
    assert!(err.to_string().contains("not an architecture"), "{err}");
    let m = dir.join("vecadd.multi.o");
    for want in ["compute_75", "compute_90"] {
        let ptx = inject::app_ptx_for(&m, None, Some(want)).unwrap();
        assert_eq!(target(&ptx), want);
        let (woven, _) = inject::inject(
            &probe("counters.bpf.o"),
            &ptx,
            "vecadd.multi.o",
            &Options::default(),
        )
        .unwrap_or_else(|e| panic!("{want}: {e}"));
        assert!(
            woven.sites.iter().any(|s| s.kernel.contains("vecadd")),
            "{want}"
        );
        assert!(
            woven.text.contains(&format!(".target sm_{}", &want[8..])),
            "{want}"
        );
    }
    // Without --ptx-arch, the highest.
    assert_eq!(target(&inject::app_ptx(&m, None).unwrap()), "compute_90");
    // A PTX file is its own one architecture.
    let p = dir.join("vecadd.compute_75.ptx");
    assert!(inject::app_ptx_for(&p, None, Some("compute_75")).is_ok());
    let err = inject::app_ptx_for(&p, None, Some("compute_90")).unwrap_err();
    assert!(
        err.to_string().contains("the PTX is for compute_75"),
        "{err}"
    );
}

/// `--call`: every site calls the probe's one function; by default its body is inlined.
#[test]
fn call_mode_calls_one_function() {
    let app = repo_root().join("tests/inject/ptx/matmul.sm70.clang.ptx");
    let called = run(
        "memcapture.bpf.o",
        &app,
        &Options {
            call: true,
            ..Default::default()
        },
    );
    let calls = called.text.matches("call (bpf2ptx_ret), capture,").count();
    assert_eq!(calls, called.sites.len());
    let inlined = run("memcapture.bpf.o", &app, &Options::default());
    assert_eq!(
        inlined.text.matches("call (bpf2ptx_ret), capture,").count(),
        0
    );
    assert_eq!(
        inlined.text.matches("$L__bpf2ptx_end:").count(),
        inlined.sites.len()
    );
}

/// Damaged application PTX never panics the injector: every fixture cut at many lengths
/// and with bytes changed is either instrumented or refused with an error.
#[test]
fn damaged_ptx_is_an_error_not_a_panic() {
    let mut seed = 0x5eed_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let noise = [
        b'{', b'}', b';', b'[', b']', b'@', b'%', b'.', b'\n', b' ', b'x', b'0',
    ];
    let mut outcomes = [0usize; 2];
    for app in fixtures().iter().step_by(3) {
        let text = std::fs::read(app).unwrap();
        for k in 0..24 {
            let mut bytes = text.clone();
            let cut = (next() as usize) % bytes.len();
            if k % 2 == 0 {
                bytes.truncate(cut);
            } else {
                for _ in 0..4 {
                    let at = (next() as usize) % bytes.len();
                    bytes[at] = noise[(next() as usize) % noise.len()];
                }
            }
            let Ok(app_text) = String::from_utf8(bytes) else {
                continue;
            };
            let r = inject::inject(
                &probe("counters.bpf.o"),
                &app_text,
                "damaged.ptx",
                &Options::default(),
            );
            outcomes[usize::from(r.is_ok())] += 1;
        }
    }
    // Both outcomes occur: some damage is harmless (a comment), most is not.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

/// The instrumented kernel as text (probe module left out): what a site block looks like,
/// with the memory probe's per-site constants folded, is reviewed in this snapshot.
#[test]
fn instrumented_kernel_snapshot() {
    let app = repo_root().join("tests/inject/ptx/vecadd.sm70.clang.ptx");
    let woven = run("memcapture.bpf.o", &app, &Options::default());
    let text = &woven.text;
    let start = text.find("// ---- bpf2ptx probes").unwrap();
    let end = text.find("// ---- end of bpf2ptx probes ----").unwrap();
    let kernel = format!("{}{}", &text[..start], &text[end..]);
    check_snapshot(
        &repo_root().join("tests/out/inject/vecadd.sm70.clang.memcapture.ptx"),
        &kernel,
    );
}

/// After a per-warp site the lanes that arrived together wait for each other
/// (`granularity_rejoin`: a `bar.warp.sync` over the guard's `activemask`), so the next
/// per-warp site elects one leader for the whole warp again; per-thread sites have none.
#[test]
fn per_warp_sites_rejoin_their_lanes() {
    let app = repo_root().join("tests/inject/ptx/vecadd.sm70.clang.ptx");
    let warp = Options {
        granularity: Granularity::Warp,
        ..Default::default()
    };
    let woven = run("memcapture.bpf.o", &app, &warp);
    let rejoins = woven.text.matches("bar.warp.sync %bpf2ptx_w0;").count();
    assert_eq!(rejoins, woven.sites.len());
    let thread = run("memcapture.bpf.o", &app, &Options::default());
    assert!(!thread.text.contains("bar.warp.sync %bpf2ptx_w0;"));
}

/// A probe that may end its thread (`gpu_exit`, or a `callx` whose helper is known only at
/// run time) cannot be waited for with `bar.warp.sync`; the others can.
#[test]
fn probes_that_may_end_their_thread_are_known() {
    use bpf2ptx_backend::inject::attach::may_end_thread;
    let prog = |body: &str| {
        let obj = bpf2ptx::load_bytes("p.s", format!("{body}\nr0 = 0\nexit\n").as_bytes())
            .expect("assembles");
        obj.programs[0].clone()
    };
    assert!(may_end_thread(&prog("call 507")));
    assert!(may_end_thread(&prog("r1 = 5\ncallx r1")));
    assert!(!may_end_thread(&prog("call 5")));
    assert!(!may_end_thread(&prog("r1 = 1")));
}

/// Issue 15, point 3: the GEMM probes of tests/probes/bpftime whose trip count comes from a
/// map (bpf_loop, bpf_for, may_goto, and a plain loop under `--loop-budget`) inject into
/// the vector add under bpftime's kernel name, each loop lowered (the callback's `.func`
/// called in a PTX loop, the iterator inlined on its slot, `%mg`, `%lb` and the counter),
/// and ptxas accepts the result.
#[test]
fn loop_probes_inject_into_the_vector_add() {
    let app_text =
        std::fs::read_to_string(repo_root().join("tests/inject/fatbin/vecadd.compute_90.ptx"))
            .unwrap()
            .replace("vecadd_param_", "_Z9vectorAddPKfS0_Pf_param_")
            .replace(".entry vecadd(", ".entry _Z9vectorAddPKfS0_Pf(");
    let tmp = tempfile::tempdir().unwrap();
    let ptxas = require_ptxas();
    for (name, budget, marks) in [
        (
            "gemm_bpf_loop",
            None,
            &["$Lbl", "call.uni (bpf_rv), cuda__gemm_bpf_loop__dot_step"][..],
        ),
        ("gemm_bpf_for", None, &["$Lit", "st.u32 [%r1+4], %w1;"][..]),
        (
            "gemm_can_loop",
            None,
            &["mov.u64 %mg, 8388608;", "sub.u64 %mg, %mg, 1;"][..],
        ),
        (
            "gemm_budget",
            Some(4096),
            &["mov.u64 %lb, 4096;", "bpf2ptx_loopcnt_cuda__gemm_budget"][..],
        ),
    ] {
        let file = repo_root().join(format!("tests/probes/bpftime/{name}.bpf.o"));
        let opts = Options {
            loop_budget: budget,
            ..Default::default()
        };
        let woven = inject::inject(&file, &app_text, "vectorAdd.ptx", &opts)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .0;
        assert!(!woven.sites.is_empty(), "{name}: no site");
        for m in marks {
            assert!(woven.text.contains(m), "{name}: no `{m}` in the output");
        }
        let Some(ptxas) = &ptxas else {
            continue;
        };
        let src = tmp.path().join(format!("{name}.ptx"));
        std::fs::write(&src, woven.text.replacen(".version 9.5", ".version 8.8", 1)).unwrap();
        let out = Command::new(ptxas)
            .arg("-arch=sm_90")
            .arg(&src)
            .arg("-o")
            .arg(src.with_extension("cubin"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Atomic scope per map where the verifier proves the map: a probe whose host program
/// shares maps in host memory (examples/probes/trace_latency.bpf.o, as `bpf2ptx trace`
/// places `launch` and `launches`) keeps `.gpu` atomics on its device-memory maps (the
/// `lat_us` and `lat_log2` adds, the `spans` compare-and-swap); a map placed in host memory
/// gets `.sys` ones. Only the program's own `atom`/`red` are counted here (the runtime's
/// map functions follow the module's scope).
#[test]
fn atomics_on_device_maps_keep_gpu_scope_beside_a_host_placed_map() {
    let app = repo_root().join("examples/apps/vecadd.ptx");
    let text = std::fs::read_to_string(&app).unwrap();
    let probe = repo_root().join("examples/probes/trace_latency.bpf.o");
    let woven = |maps: &[&str]| {
        let opts = Options {
            maps: maps.iter().map(|m| m.to_string()).collect(),
            rebind_maps: true,
            ..Default::default()
        };
        inject::inject(&probe, &text, "vecadd.ptx", &opts)
            .unwrap_or_else(|e| panic!("{e}"))
            .0
            .text
    };
    let sys = |t: &str| {
        t.lines()
            .filter(|l| {
                let l = l.trim_start();
                (l.starts_with("atom.sys") || l.starts_with("red.sys")) && !l.contains("[%rd")
            })
            .count()
    };
    let gpu = |t: &str| {
        t.lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("atom.global.cas") || l.starts_with("red.global.add")
            })
            .count()
    };
    let shared = woven(&["launch=host", "launches=host"]);
    assert_eq!(sys(&shared), 0, "device maps' atomics at .sys");
    assert!(gpu(&shared) > 0, "no .gpu atomics left");
    let lat_on_host = woven(&["launch=host", "launches=host", "lat_us=host"]);
    assert!(
        sys(&lat_on_host) > 0,
        "an add into a host-placed map must be .sys"
    );
}
