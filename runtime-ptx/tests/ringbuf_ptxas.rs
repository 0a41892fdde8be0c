//! The ringbuf helpers' PTX assembles with ptxas for every target the backend emits.
//!
//! ptxas is `$PTXAS`, else the repository's `.venv/lib/python3*/site-packages/nvidia/
//! cuda_nvcc/bin/ptxas`; without one the tests fail, unless `BPF2PTX_SKIP_PTXAS=1`.

mod common;
use common::{assemble, with_ptxas};

use bpf2ptx_runtime::{ringbuf, Scope};

/// A module with the helpers and a kernel that calls each once (so a whole-program
/// assembly keeps them all).
fn module(version: &str, target: &str) -> String {
    module_at(version, target, Scope::Gpu)
}

/// [`module`] with the runtime's atomics at `scope`.
fn module_at(version: &str, target: &str, scope: Scope) -> String {
    format!(
        ".version {version}\n.target {target}\n.address_size 64\n\n{}{}{}\n{}",
        ringbuf::declarations(),
        bpf2ptx_runtime::COPY_FUNCTION,
        ringbuf::functions_at(scope),
        r#"
.visible .entry bpf2ptx_ringbuf_test(.param .u64 desc, .param .u64 src, .param .u64 size,
	.param .u64 out)
{
	.reg .pred %p<2>;
	.reg .b64 %rd<12>;
	ld.param.u64 %rd1, [desc];
	ld.param.u64 %rd2, [src];
	ld.param.u64 %rd3, [size];
	ld.param.u64 %rd4, [out];
	cvta.to.global.u64 %rd4, %rd4;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd3;
	st.param.b64 [a2], 0;
	call (r), bpf2ptx_ringbuf_reserve, (a0, a1, a2);
	ld.param.b64 %rd5, [r];
	}
	setp.eq.u64 %p1, %rd5, 0;
	@%p1 bra $Lno_record;
	st.u64 [%rd5], %rd3;
	{
	.param .b64 a0;
	.param .b64 a1;
	st.param.b64 [a0], %rd5;
	st.param.b64 [a1], 0;
	call bpf2ptx_ringbuf_submit, (a0, a1);
	}
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd3;
	st.param.b64 [a2], 0;
	call (r), bpf2ptx_ringbuf_reserve, (a0, a1, a2);
	ld.param.b64 %rd6, [r];
	}
	{
	.param .b64 a0;
	.param .b64 a1;
	st.param.b64 [a0], %rd6;
	st.param.b64 [a1], 0;
	call bpf2ptx_ringbuf_discard, (a0, a1);
	}
$Lno_record:
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
	call (r), bpf2ptx_ringbuf_output, (a0, a1, a2, a3);
	ld.param.b64 %rd7, [r];
	}
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], 0;
	call (r), bpf2ptx_ringbuf_query, (a0, a1);
	ld.param.b64 %rd8, [r];
	}
	st.global.u64 [%rd4], %rd5;
	st.global.u64 [%rd4+8], %rd7;
	st.global.u64 [%rd4+16], %rd8;
	ret;
}
"#
    )
}

#[test]
fn assembles_for_sm70_sm80_sm90() {
    with_ptxas(|p| {
        for (version, arch) in [("6.2", "sm_70"), ("7.0", "sm_80"), ("7.8", "sm_90")] {
            let text = module(version, arch);
            assemble(p, &text, arch, &[]);
            // Relocatable: every function is compiled, called or not.
            assemble(p, &text, arch, &["-c"]);
        }
    });
}

#[test]
fn assembles_under_the_minimum_header() {
    // PTX ISA 6.2 (ringbuf::MIN_PTX: activemask) for sm_70 without optimisation, and
    // pasted into a newer module.
    let (major, minor) = ringbuf::MIN_PTX;
    let min = format!("{major}.{minor}");
    assert_eq!(min, "6.2");
    with_ptxas(|p| {
        assemble(p, &module(&min, "sm_70"), "sm_70", &["-c", "-O0"]);
        assemble(p, &module("8.0", "sm_90"), "sm_90", &["-c"]);
    });
}

#[test]
fn assembles_at_sys_scope() {
    // Host placement: the record side's stores become `.sys` (header, padding, submit,
    // discard); the counter side (claims, producer, consumer, drops) stays `.gpu`.
    let sys = ringbuf::functions_at(Scope::Sys);
    assert!(sys.contains("st.release.sys.b32") && sys.contains("st.relaxed.sys.b64"));
    assert!(sys.contains("atom.acq_rel.gpu.add.u64") && sys.contains("ld.acquire.gpu.u64"));
    assert_eq!(
        sys.matches(".sys.").count() + sys.matches(".gpu.").count(),
        ringbuf::functions().matches(".gpu.").count()
    );
    with_ptxas(|p| {
        for (version, arch) in [("6.2", "sm_70"), ("7.8", "sm_90")] {
            assemble(p, &module_at(version, arch, Scope::Sys), arch, &["-c"]);
        }
    });
}
