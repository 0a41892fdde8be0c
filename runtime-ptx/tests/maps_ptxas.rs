//! The map helpers' PTX assembles with ptxas for every target the backend emits.
//!
//! ptxas is `$PTXAS`, else the repository's `.venv/lib/python3*/site-packages/nvidia/
//! cuda_nvcc/bin/ptxas`; without one the tests fail, unless `BPF2PTX_SKIP_PTXAS=1`.

mod common;
use common::{assemble, with_ptxas};

use bpf2ptx_runtime::{maps, Scope};

/// A module with the helpers and a kernel that calls each once (so a whole-program
/// assembly keeps them all).
fn module(version: &str, target: &str) -> String {
    module_at(version, target, Scope::Gpu)
}

/// [`module`] with the runtime's atomics at `scope`.
fn module_at(version: &str, target: &str, scope: Scope) -> String {
    format!(
        ".version {version}\n.target {target}\n.address_size 64\n\n{}{}{}\n{}",
        maps::declarations(),
        bpf2ptx_runtime::COPY_FUNCTION,
        maps::functions_at(scope),
        r#"
.visible .entry bpf2ptx_maps_test(.param .u64 desc, .param .u64 key, .param .u64 value,
	.param .u64 out)
{
	.reg .b64 %rd<12>;
	ld.param.u64 %rd1, [desc];
	ld.param.u64 %rd2, [key];
	ld.param.u64 %rd3, [value];
	ld.param.u64 %rd4, [out];
	cvta.to.global.u64 %rd4, %rd4;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	call (r), bpf2ptx_map_lookup_elem, (a0, a1);
	ld.param.b64 %rd5, [r];
	}
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b64 a3;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	st.param.b64 [a2], %rd3;
	st.param.b64 [a3], 0;
	call (r), bpf2ptx_map_update_elem, (a0, a1, a2, a3);
	ld.param.b64 %rd6, [r];
	}
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd2;
	call (r), bpf2ptx_map_delete_elem, (a0, a1);
	ld.param.b64 %rd7, [r];
	}
	st.global.u64 [%rd4], %rd5;
	st.global.u64 [%rd4+8], %rd6;
	st.global.u64 [%rd4+16], %rd7;
	ret;
}
"#
    )
}

#[test]
fn assembles_for_sm70_sm80_sm90() {
    with_ptxas(|p| {
        for (version, arch) in [("6.3", "sm_70"), ("7.0", "sm_80"), ("7.8", "sm_90")] {
            let text = module(version, arch);
            assemble(p, &text, arch, &[]);
            // Relocatable: every function is compiled, called or not.
            assemble(p, &text, arch, &["-c"]);
        }
    });
}

#[test]
fn assembles_under_the_minimum_header() {
    // The baseline the text promises: PTX ISA maps::MIN_PTX (6.3) for sm_70, also when
    // pasted into a module with a newer ISA version for a newer target.
    let (major, minor) = maps::MIN_PTX;
    with_ptxas(|p| {
        assemble(
            p,
            &module(&format!("{major}.{minor}"), "sm_70"),
            "sm_70",
            &["-c", "-O0"],
        );
        assemble(p, &module("8.0", "sm_90"), "sm_90", &["-c"]);
    });
}

#[test]
fn assembles_at_sys_scope() {
    // Host placement: every `.gpu.` qualifier of an atomic or ordered access becomes
    // `.sys.`, and nothing else changes (the `fence.acq_rel.gpu` between GPU threads stays).
    let sys = maps::functions_at(Scope::Sys);
    assert!(!sys.contains(".gpu."), "a .gpu qualifier survived");
    assert_eq!(
        sys.matches(".sys.").count(),
        maps::functions().matches(".gpu.").count()
    );
    with_ptxas(|p| {
        for (version, arch) in [("6.3", "sm_70"), ("7.8", "sm_90")] {
            assemble(p, &module_at(version, arch, Scope::Sys), arch, &["-c"]);
        }
    });
}

/// Each hash function specialised for a map ([`maps::specialized_function`]) reads none
/// of descriptor words 0-2 (its sizes, type and max entries are constants) nor of `aux`
/// (word 4, fixed by max entries), still reads the data word, and assembles next to the generic functions, for each hash kind and
/// a short and a long key.
#[test]
fn specialised_hash_functions_have_constant_geometry_and_assemble() {
    with_ptxas(|p| {
        for (map_type, key_size, value_size) in [(1, 4, 8), (9, 8, 16), (1501, 12, 3)] {
            let g = maps::Geometry {
                map_type,
                flags: 0,
                key_size,
                value_size,
                max_entries: 1024,
            };
            let mut text = format!(
                ".version 7.8\n.target sm_90\n.address_size 64\n\n{}{}{}",
                maps::declarations(),
                bpf2ptx_runtime::COPY_FUNCTION,
                maps::functions_at(Scope::Gpu)
            );
            for (_, base) in maps::HASH_HELPERS {
                let name = maps::specialized_name(base, "desc_t");
                let f = maps::specialized_function(base, &name, g, Scope::Gpu).expect(base);
                assert!(
                    f.starts_with(&format!(".func (.param .b64 ret) {name}(")),
                    "{f}"
                );
                assert!(
                    !f.lines().any(|l| l.trim_start().starts_with("call")),
                    "flattened: {f}"
                );
                for off in [0, 8, 12, 16, 20] {
                    let load = if off == 0 {
                        "[%rd1];".to_string()
                    } else {
                        format!("[%rd1+{off}];")
                    };
                    assert!(
                        !f.lines()
                            .any(|l| l.contains("ld.u32") && l.ends_with(&load)),
                        "{base} word at {off}"
                    );
                }
                assert!(f.contains("[%rd1+24];"), "{base} reads data");
                assert!(
                    !f.lines()
                        .any(|l| l.contains("ld.b64") && l.ends_with("[%rd1+32];")),
                    "{base} takes aux as a constant"
                );
                text.push_str(&f);
            }
            assemble(p, &text, "sm_90", &["-c"]);
        }
    });
}
