//! `bpf2ptx FILE -o OUT` as users run it: host-side programs are skipped by name, the output
//! appears only on success (written atomically), `-o -` writes to stdout, a rejected
//! program exits 1 and leaves an existing output untouched.

use bpf2ptx_tests::{bpf2ptx_bin, repo_root};
use std::process::Command;

fn corpus(name: &str) -> String {
    repo_root()
        .join("tests/corpus/obj")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn host_programs_are_skipped_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mixed.ptx");
    let r = Command::new(bpf2ptx_bin())
        .arg(corpus("mixed.v2.o"))
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{stderr}");
    assert!(
        stderr.contains("skipped host-side program host_launch (section uprobe/cudaLaunchKernel)"),
        "{stderr}"
    );
    let ptx = std::fs::read_to_string(&out).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "a new output gets the usual permissions");
    }
    assert!(
        ptx.contains(".visible .func (.param .b64 bpf_ret) gpu_entry("),
        "GPU program missing"
    );
    assert!(!ptx.contains("host_launch"), "host program lowered");
}

#[test]
fn stdout_output_and_targets() {
    let r = Command::new(bpf2ptx_bin())
        .arg(corpus("launch_stamp.v3.o"))
        .args(["-o", "-", "--target", "sm_90"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let ptx = String::from_utf8(r.stdout).unwrap();
    assert!(
        ptx.contains(".version 7.8\n.target sm_90\n"),
        "{}",
        &ptx[..200.min(ptx.len())]
    );
    let bad = Command::new(bpf2ptx_bin())
        .arg(corpus("launch_stamp.v3.o"))
        .args(["-o", "-", "--target", "sm_42"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown target `sm_42`"));
}

#[test]
fn a_rejected_program_leaves_the_old_output_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("probe.ptx");
    std::fs::write(&out, "previous build\n").unwrap();
    let src = repo_root().join("tests/verifier/map_value_off_by_one.s");
    let r = Command::new(bpf2ptx_bin())
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("error[mem-bounds]"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous build\n");
    // Nothing else was left behind in the directory (no temporary file).
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// The descriptor line of map `name` in PTX text.
fn descriptor<'a>(ptx: &'a str, name: &str) -> &'a str {
    let key = format!("bpf2ptx_map_{name}[8] = {{");
    ptx.lines()
        .find(|l| l.contains(&key))
        .unwrap_or_else(|| panic!("no descriptor for {name}"))
}

#[test]
fn arrays_that_are_only_added_to_are_sharded() {
    let opts = bpf2ptx_backend::back::ptx::Options::default();
    let obj = bpf2ptx::load_path(std::path::Path::new(&corpus("stress_array.v3.o"))).unwrap();
    let ptx = bpf2ptx::compile::compile(&obj, &opts).unwrap();
    // slots: only `__sync_fetch_and_add` → 256 replicas (descriptor word 4) of one
    // 128-byte line each (word 5).
    assert!(
        descriptor(&ptx, "slots").contains(", 256, 128, 0, 0};"),
        "{}",
        descriptor(&ptx, "slots")
    );
    // `--map slots=unsharded` keeps one copy.
    let one = bpf2ptx_backend::back::ptx::Options {
        unsharded: vec![true; obj.maps.len()],
        ..Default::default()
    };
    let ptx = bpf2ptx::compile::compile(&obj, &one).unwrap();
    assert!(
        descriptor(&ptx, "slots").contains(", 0, 0, 0, 0};"),
        "{}",
        descriptor(&ptx, "slots")
    );
    // The same array read back by the program is not sharded.
    let src = "\
.map slots array 4 8 16
r1 = 0
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 == 0 goto out
r1 = 1
lock *(u64 *)(r0 + 0) += r1
r1 = *(u64 *)(r0 + 0)
out:
r0 = 0
exit
";
    let obj = bpf2ptx::load_bytes("reads.s", src.as_bytes()).unwrap();
    let ptx = bpf2ptx::compile::compile(&obj, &opts).unwrap();
    assert!(
        descriptor(&ptx, "slots").contains(", 0, 0, 0, 0};"),
        "{}",
        descriptor(&ptx, "slots")
    );
    // Without the read it is.
    let obj = bpf2ptx::load_bytes(
        "adds.s",
        src.replace("r1 = *(u64 *)(r0 + 0)\n", "").as_bytes(),
    )
    .unwrap();
    let ptx = bpf2ptx::compile::compile(&obj, &opts).unwrap();
    assert!(
        descriptor(&ptx, "slots").contains(", 256, 128, 0, 0};"),
        "{}",
        descriptor(&ptx, "slots")
    );
}

#[test]
fn map_sharded_forces_sharding() {
    let run = |extra: &[&str]| {
        let r = Command::new(bpf2ptx_bin())
            .arg(corpus("gpu_maps.v3.o"))
            .args(["-o", "-"])
            .args(extra)
            .output()
            .unwrap();
        (
            r.status.code(),
            String::from_utf8_lossy(&r.stdout).into_owned(),
            String::from_utf8_lossy(&r.stderr).into_owned(),
        )
    };
    // control is read by the program (a kill switch): not sharded unless asked.
    let (code, ptx, _) = run(&[]);
    assert_eq!(code, Some(0));
    assert!(
        descriptor(&ptx, "control").contains(", 0, 0, 0, 0};"),
        "{}",
        descriptor(&ptx, "control")
    );
    let (code, ptx, _) = run(&["--map", "control=sharded"]);
    assert_eq!(code, Some(0));
    assert!(
        descriptor(&ptx, "control").contains(", 256, 128, 0, 0};"),
        "{}",
        descriptor(&ptx, "control")
    );
    let (code, _, err) = run(&["--map", "nope=sharded"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no map `nope`"), "{err}");
}

/// `bpf2ptx FILE ARGS... -o -`: the PTX, after asserting exit 0.
fn compile_ok(file: impl AsRef<std::path::Path>, args: &[&str]) -> String {
    let file = file.as_ref();
    let r = Command::new(bpf2ptx_bin())
        .arg(file)
        .args(args)
        .args(["-o", "-"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(0), "{}: {err}", file.display());
    String::from_utf8_lossy(&r.stdout).into_owned()
}

/// Rings default to host placement (record stores at `.sys` scope, so the host can drain
/// them while the kernel runs); `--map NAME=device` keeps them at `.gpu`; other maps
/// default to device.
#[test]
fn rings_default_to_host_placement() {
    let obj = corpus("ringbuf.v2.o");
    let default = compile_ok(&obj, &["--target", "sm_90"]);
    assert!(
        default.contains("st.release.sys.global.b64"),
        "record stores at .sys"
    );
    assert!(
        default.contains("atom.relaxed.gpu.global.add.u64 %rbd7, [bpf2ptx_map_events+56]"),
        "claims on the bound stay .gpu"
    );
    assert!(
        default.contains("atom.acq_rel.gpu.global.add.u64 %rbd5, [%rbd2]"),
        "the producer add stays .gpu"
    );
    let device = compile_ok(&obj, &["--target", "sm_90", "--map", "events=device"]);
    assert!(!device.contains(".sys."), "--map events=device: no .sys");
    // A module without rings has nothing at .sys by default.
    let counter = compile_ok(corpus("counter.v1.o"), &["--target", "sm_90"]);
    assert!(!counter.contains(".sys."));
}

/// An `--entry` kernel runs its program at the granularity the program's section names
/// (`gpu/entry.warp/*`, `gpu/entry.block/*`), as injection does; `--granularity` is for
/// programs whose section names none.
#[test]
fn entry_kernels_take_the_sections_granularity() {
    let obj = repo_root().join("tests/inject/probes/counters.bpf.o");
    let ptx = compile_ok(
        &obj,
        &["--entry", "--target", "sm_90", "--granularity", "thread"],
    );
    let kernel = |name: &str| {
        let at = ptx
            .find(&format!(".entry bpf2ptx_entry_{name}("))
            .unwrap_or_else(|| panic!("no entry kernel for {name}"));
        let end = ptx[at..].find("\n}\n").map_or(ptx.len(), |e| at + e);
        ptx[at..end].to_string()
    };
    let progs = bpf2ptx::load_path(&obj).unwrap().programs;
    for p in &progs {
        let k = kernel(&p.name);
        // A per-warp entry kernel elects lane 0 (back::ptx::granularity_test, `edge`).
        let warp = k.contains("mov.u32 %g1, %laneid;");
        let block = k.contains("mov.u32 %g0, %tid.x;");
        match p.section.split('/').nth(1) {
            Some(s) if s.ends_with(".warp") => assert!(warp && !block, "{}", p.section),
            Some(s) if s.ends_with(".block") => assert!(block && !warp, "{}", p.section),
            _ => assert!(!warp && !block, "{}", p.section),
        }
    }
}

/// A map definition Linux refuses at creation (an array with 8-byte keys, a map with no
/// entries) is refused with exit 2 and a message that names the instruction loading it.
#[test]
fn map_definitions_linux_refuses_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (def, why) in [
        ("pw perwarp_array 8 8 2", "4-byte keys"),
        ("a array 8 8 2", "4-byte keys"),
        ("h hash 8 8 0", "no entries"),
    ] {
        let src = dir.path().join("m.s");
        std::fs::write(
            &src,
            format!(
                ".map {def}\nr1 = 0\n*(u64 *)(r10 - 8) = r1\nr2 = r10\nr2 += -8\n\
                 r1 = map_idx(0) ll\ncall 1\nr0 = 0\nexit\n"
            ),
        )
        .unwrap();
        let r = Command::new(bpf2ptx_bin())
            .arg(&src)
            .args(["-o", "-"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{def}: {err}");
        assert!(err.contains("insn 4") && err.contains(why), "{def}: {err}");
    }
}

/// `ringbuf_output` is inlined when the verifier pins the ring and the size and the data
/// is an 8-aligned range of the frame; otherwise it calls the runtime's function.
#[test]
fn ring_output_is_inlined_only_when_it_qualifies() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body, inlined) in [
        ("pinned", "r2 = r10\nr2 += -16\nr3 = 16\n", true),
        ("unaligned", "r2 = r10\nr2 += -12\nr3 = 8\n", false),
        (
            "size_varies",
            "call 5\nr2 = r10\nr2 += -16\nr3 = 8\nif r0 == 0 goto +1\nr3 = 16\n",
            false,
        ),
        ("too_big", "r2 = r10\nr2 += -512\nr3 = 512\n", false),
    ] {
        let src = dir.path().join(format!("{name}.s"));
        std::fs::write(
            &src,
            format!(
                ".map r ringbuf 0 0 4096\nr1 = 0\n{}{body}\
                 r1 = map_idx(0) ll\nr4 = 0\ncall 130\nr0 = 0\nexit\n",
                (1..=64)
                    .map(|k| format!("*(u64 *)(r10 - {}) = r1\n", 8 * k))
                    .collect::<String>()
            ),
        )
        .unwrap();
        let ptx = compile_ok(&src, &["--target", "sm_90"]);
        let call = ptx.contains("call.uni (bpf_hr), bpf2ptx_ringbuf_output");
        // The inlined output's claim on the ring's bound (descriptor word 7).
        let inline = ptx.contains("atom.relaxed.gpu.global.add.u64 %rbd7, [bpf2ptx_map_r+56]");
        assert_eq!((inline, call), (inlined, !inlined), "{name}");
    }
}

/// The definition of function or kernel `name` in `ptx`: from its header line (the one
/// that does not end in `;`, which a declaration does) to its closing `}`.
fn function_text<'a>(ptx: &'a str, name: &str) -> &'a str {
    let heads = [format!(") {name}("), format!(".entry {name}(")];
    let start = ptx
        .lines()
        .scan(0, |at, line| {
            let here = *at;
            *at += line.len() + 1;
            Some((here, line))
        })
        .find(|(_, line)| !line.ends_with(';') && heads.iter().any(|h| line.contains(h)))
        .map(|(at, _)| at)
        .unwrap_or_else(|| panic!("no definition of {name}"));
    let end = ptx[start..].find("\n}\n").map_or(ptx.len(), |e| start + e);
    &ptx[start..end]
}

/// `get_active_mask` in a per-warp program returns the lanes its leader stands for: the
/// site passes them as r5 (the entry kernel from its guard's `activemask`), the program
/// keeps them in `%lanes` and hands them to its subprograms as a sixth parameter. Per-thread
/// and per-block programs read `activemask` where they call it.
#[test]
fn per_warp_programs_read_the_lanes_their_leader_stands_for() {
    let obj = repo_root().join("tests/gpu/probes/granularity.o");
    let ptx = compile_ok(&obj, &["--entry", "--target", "sm_90"]);
    for warp in ["g_warp", "g_warp_sub__lanes_here"] {
        let f = function_text(&ptx, warp);
        assert!(f.contains("cvt.u64.u32 %r0, %lanes;"), "{warp}:\n{f}");
        assert!(!f.contains("activemask"), "{warp}:\n{f}");
    }
    assert!(function_text(&ptx, "g_warp").contains("cvt.u32.u64 %lanes, %r5;"));
    let sub = function_text(&ptx, "g_warp_sub__lanes_here");
    assert!(
        sub.contains(".param .b32 bpf_lanes)") && sub.contains("ld.param.u32 %lanes, [bpf_lanes];")
    );
    let caller = function_text(&ptx, "g_warp_sub");
    assert!(caller.contains("call.uni (bpf_rv), g_warp_sub__lanes_here, (bpf_p1, bpf_p2, bpf_p3, bpf_p4, bpf_p5, bpf_pl);"));
    for per_warp in ["bpf2ptx_entry_g_warp", "bpf2ptx_entry_g_warp_sub"] {
        let k = function_text(&ptx, per_warp);
        assert!(
            k.contains("cvt.u64.u32 %bpf2ptx_a5, %g0;"),
            "{per_warp}:\n{k}"
        );
    }
    for other in ["g_opt", "g_block"] {
        let f = function_text(&ptx, other);
        assert!(
            f.contains("activemask.b32") && !f.contains("%lanes"),
            "{other}:\n{f}"
        );
        let k = function_text(&ptx, &format!("bpf2ptx_entry_{other}"));
        assert!(k.contains("mov.u64 %bpf2ptx_a5, 0;"), "{other}:\n{k}");
    }
    // `--granularity warp` makes the section-less program per-warp too.
    let warp = compile_ok(
        &obj,
        &["--entry", "--target", "sm_90", "--granularity", "warp"],
    );
    assert!(function_text(&warp, "g_opt").contains("cvt.u64.u32 %r0, %lanes;"));
    assert!(function_text(&warp, "g_block").contains("activemask.b32"));
}

/// Counters written as plain code (tests/inject/probes/plain_counters.bpf.c, as clang
/// emits them): where the verifier proved a load-add-store may be one atomic add, it is one
/// `red.add` at the module's scope and no load or store of the counter is left, and an
/// array only added to that way is sharded like one only `__sync_fetch_and_add`ed; where it
/// did not (the loaded value is the program's result; a helper call between the load and
/// the add), the plain load and store stay.
#[test]
fn plain_counter_updates_become_atomic_adds() {
    let obj = repo_root().join("tests/inject/probes/plain_counters.bpf.o");
    let ptx = compile_ok(&obj, &["--target", "sm_90"]);
    let entry = function_text(&ptx, "plain_entry");
    for red in [
        // hits: `*v += 1` on an array, which ptxas aggregates per warp itself.
        "red.global.add.u64 [%t1], 1;",
        // lanes: a 32-bit counter, a register addend.
        "red.global.add.u32 [%t1], %w1;",
        // per_sm: `s->calls += 1` on a hash value, aggregated with match.any ...
        "match.any.sync.b64 %ag1, %t1, %ag0;",
        // ... and `s->time += t`.
        "red.global.add.u64 [%t1], %r6;",
        // small -= 3 (clang: `w2 += -3`) on a 32-bit global.
        "red.global.add.u32 [%t1], 4294967293;",
    ] {
        assert!(entry.contains(red), "{red}:\n{entry}");
    }
    // The inlined hash lookup's own loads (registers %hk, %hw) are the only global
    // loads left; no counter is loaded or stored.
    let counter_access = entry.lines().any(|l| {
        let l = l.trim();
        (l.starts_with("ld.global") && !l.contains("%hk") && !l.contains("%hw"))
            || l.starts_with("st.global")
    });
    assert!(!counter_access, "{entry}");
    let exit = function_text(&ptx, "plain_exit");
    assert_eq!(exit.matches("ld.global.u64").count(), 2, "{exit}");
    assert_eq!(exit.matches("st.global.u64").count(), 2, "{exit}");
    assert!(!exit.contains("red."), "{exit}");
    // Only 64-bit adds shard a map (the host sums replicas as u64 words).
    for (map, sharded) in [("hits", true), ("lanes", false), ("tickets", false)] {
        let d = descriptor(&ptx, map);
        let want = if sharded {
            ", 256, 128, 0, 0};"
        } else {
            ", 0, 0, 0, 0};"
        };
        assert!(d.contains(want), "{map}: {d}");
    }
    // A host-placed map puts the module's atomics at .sys scope, these included.
    let host = compile_ok(&obj, &["--target", "sm_90", "--map", "per_sm=host"]);
    let entry = function_text(&host, "plain_entry");
    assert!(
        entry.contains("red.sys.global.add.u64 [%t1], 1;"),
        "{entry}"
    );
    assert!(!entry.contains("red.global."), "{entry}");
}

/// Hash maps as specs/abi.md "Hash maps" lays them out: descriptor word 4 the slots (the
/// next power of two at least twice max_entries), word 5 the counts block
/// `bpf2ptx_mapcnt_<name>` (its own 128-byte aligned symbol of `maps::COUNTS_BYTES`),
/// storage `slots x (8 + round8(key) + stride)` and, for an LRU map (9), a u32 stamp per
/// slot after the slots; calls go to the runtime's map functions.
#[test]
fn hash_maps_get_a_counts_block_and_lru_maps_stamps() {
    use bpf2ptx_runtime::maps::{hash_slot_size, COUNTS_BYTES};
    for (kind, id, stamps) in [
        ("hash", 1, false),
        ("gpu_hash", 1501, false),
        ("lru_hash", 9, true),
    ] {
        let src = format!(
            "\
.map h {kind} 4 12 1000
r1 = 7
*(u32 *)(r10 - 4) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
r0 = 0
exit
"
        );
        let obj = bpf2ptx::load_bytes("h.s", src.as_bytes()).unwrap();
        let ptx = bpf2ptx::compile::compile(&obj, &Default::default()).unwrap();
        let slots = 2048u64; // next power of two >= 2 x 1000
        let slot = hash_slot_size(4, 12);
        assert_eq!(slot, 8 + 8 + 16);
        let d = descriptor(&ptx, "h");
        assert!(
            d.contains(&format!(
                "{{{id}, {}, {}, generic(bpf2ptx_mapdata_h), {slots}, generic(bpf2ptx_mapcnt_h), 0, 0}};",
                4u64 | (12u64 << 32),
                1000u64 | (16u64 << 32)
            )),
            "{kind}: {d}"
        );
        assert!(
            ptx.contains(&format!(
                ".visible .global .align 128 .b8 bpf2ptx_mapcnt_h[{COUNTS_BYTES}];"
            )),
            "{kind}"
        );
        let bytes = slots * slot + if stamps { 4 * slots } else { 0 };
        assert!(
            ptx.contains(&format!(
                ".visible .global .align 8 .b8 bpf2ptx_mapdata_h[{bytes}];"
            )),
            "{kind}: storage of {bytes} bytes"
        );
        // A lookup pinned to a hash map with a 4-byte key on the stack is inlined: the
        // walk over 32-byte slots (8 + 8 + 16), no call of a lookup function, and LRU
        // stamps a hit through the runtime.
        assert!(ptx.contains("mad.wide.u32 %hk7, %hh0, 32, %hk2;"), "{kind}");
        assert!(
            !ptx.contains("call.uni (bpf_hr), bpf2ptx_map_hash_lookup,"),
            "{kind}"
        );
        assert!(
            !ptx.contains("call.uni (bpf_hr), bpf2ptx_map_lookup_elem,"),
            "{kind}"
        );
        assert_eq!(
            ptx.contains("call bpf2ptx_map_hash_stamp, (a0, a1);\n\t}\n\tbra.uni"),
            stamps,
            "{kind}"
        );
    }
}

/// A lookup that missed in a full map and an update of the same map and key right after it
/// (the published insert-or-increment pattern) share the lookup's walk: the update refuses
/// a full map from the miss memo, and the runtime's update clears it.
#[test]
fn an_update_after_a_missed_lookup_reuses_its_walk() {
    let src = "\
.map h hash 4 8 1024
r1 = 7
*(u32 *)(r10 - 4) = r1
r1 = 1
*(u64 *)(r10 - 16) = r1
r2 = r10
r2 += -4
r1 = map_idx(0) ll
call 1
if r0 != 0 goto +8
r2 = r10
r2 += -4
r3 = r10
r3 += -16
r1 = map_idx(0) ll
r4 = 1
call 2
r0 = 0
exit
";
    let obj = bpf2ptx::load_bytes("m.s", src.as_bytes()).unwrap();
    let ptx = bpf2ptx::compile::compile(&obj, &Default::default()).unwrap();
    // A miss fills the memo only when, before the walk, the count said the map is full
    // (1024 keys) and the home lock was free.
    let full = ptx
        .find("setp.ge.u64 %hq2, %hk1, 1024;")
        .expect("the count is read");
    let lock = ptx
        .find("setp.eq.and.u32 %hq2, %hw3, 0, %hq2;")
        .expect("the home lock");
    let lookup_miss = ptx
        .find("mov.pred %hm_v, %hq2;")
        .expect("a miss fills the memo");
    assert!(full < lock && lock < lookup_miss);
    let fused = ptx.find("@!%hm_v bra").expect("the update reads the memo");
    assert!(lookup_miss < fused);
    // The refusal counts `full` (one red per converged group, in the SM's shard) and
    // gives -E2BIG (7) before the runtime's update.
    let refuse = ptx
        .find("@%hr0 red.relaxed.gpu.global.add.u64 [%hf2+128], %hf1;")
        .unwrap();
    // The runtime's update, specialised for this map (its sizes and type constants).
    let update = ptx
        .find("call.uni (bpf_hr), bpf2ptx_map_hash_update__bpf2ptx_map_h,")
        .unwrap();
    assert!(fused < refuse && refuse < update);
    assert!(ptx[refuse..update].contains("mov.u64 %r0, -7;"));
    // The memo is declared and cleared at entry, and after the runtime's update.
    assert!(ptx.contains(".reg .pred %hm_v;"));
    assert!(ptx[update..].contains("setp.ne.u32 %hm_v, 0, 0;"));
}
