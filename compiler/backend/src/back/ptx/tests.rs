//! Unit tests of the backend's fixed texts and small functions: the inlined ring output's
//! descriptor accesses and record arithmetic, and the per-warp rejoin.

use super::rings::{INLINE_RECORD_MAX, INLINE_RING_OUTPUT};
use super::{granularity_rejoin, Granularity};
use bpf2ptx_runtime::desc;

/// The inlined ring output reads the descriptor only at the runtime's fields, by name:
/// data, aux and aux2 (counters), drops and the bound, never at a literal offset.
#[test]
fn inline_ring_output_uses_the_descriptor_layout() {
    let mut seen = std::collections::BTreeSet::new();
    for part in INLINE_RING_OUTPUT.split("[@DESC@+").skip(1) {
        let off = &part[..part.find(']').expect("closing bracket")];
        let name = off
            .strip_prefix('@')
            .and_then(|o| o.strip_suffix('@'))
            .unwrap_or_else(|| panic!("literal descriptor offset {off}"));
        let filled = bpf2ptx_runtime::fill_abi(&format!("@{name}@"));
        let value: u64 = filled.parse().unwrap_or_else(|_| panic!("unknown {name}"));
        assert!(
            desc::FIELDS.iter().any(|f| f.0 == value),
            "{name} = {value}"
        );
        seen.insert(value);
    }
    let want = [desc::DATA, desc::AUX, desc::AUX2, desc::DROPS, desc::BOUND];
    assert_eq!(seen, want.into_iter().collect());
}

#[test]
fn per_warp_sites_rejoin_with_a_warp_barrier_unless_the_leader_may_exit() {
    assert_eq!(
        granularity_rejoin(Granularity::Warp, "%w", false),
        "bar.warp.sync %w0;\n"
    );
    assert_eq!(
        granularity_rejoin(Granularity::Warp, "%w", true),
        "match.any.sync.b32 %w1, %w0, %w0;\n"
    );
    for g in [Granularity::Thread, Granularity::Block] {
        assert_eq!(granularity_rejoin(g, "%w", false), "");
    }
}
use bpf2ptx_runtime::ringbuf::record_size;

/// The inlined ring output counts the records that fit as `mul.hi.u32(x, ceil(2^32 /
/// t))` for a room `x <= 32 t` (at most 32 lanes): exact for every record size it is
/// used with, every room up to 32 records.
#[test]
fn records_that_fit_by_multiplication_are_exact() {
    for size in 1..=INLINE_RECORD_MAX {
        let t = record_size(size);
        let magic = (1u64 << 32).div_ceil(t);
        assert!(magic <= u64::from(u32::MAX), "size {size}");
        for x in 0..=32 * t {
            assert_eq!((x * magic) >> 32, x / t, "size {size}, room {x}");
        }
    }
}

/// The PTX of the function of a program in assembler text, verified with the
/// conformance entry (the module's runtime functions are not searched).
fn lowered(text: &str) -> String {
    let obj = bpf2ptx_compiler::front::load_bytes("t.s", text.as_bytes()).expect("assembles");
    let v = bpf2ptx_verifier::Verified::new(&obj, |_| bpf2ptx_verifier::Entry::conformance(16))
        .unwrap_or_else(|r| panic!("{r}\n{text}"));
    let ptx = super::write_string(
        &v,
        &super::Options {
            target: "sm_70".into(),
            ..Default::default()
        },
    )
    .expect("lowers");
    let name = super::program_symbol(&obj.programs[0]);
    // The definition, after the declaration.
    let start = ptx
        .rfind(&format!(" {name}("))
        .expect("the program's function");
    let body = &ptx[start..];
    body[..body.find("\n}").expect("its end")].to_string()
}

/// Where `Facts::upper_zero` proves the operands below 2^32, 64-bit compares, shifts
/// right, masks and divisions become 32-bit ones on the low halves (signed compares as
/// unsigned ones), each result zero-extended back into its 64-bit register; r3 here is a
/// 32-bit load, r4 a 64-bit one shifted right by 32, r5 a 64-bit one the branch proved
/// below 2^32 (`log2_u64`'s first step).
#[test]
fn operations_on_numbers_below_2_32_are_narrowed() {
    let cases = [
        ("if r3 > 100 goto out", "setp.gt.u32 %p0, %w0, 100;"),
        ("if r3 s< 100 goto out", "setp.lt.u32 %p0, %w0, 100;"),
        ("if r3 == r4 goto out", "setp.eq.u32 %p0, %w0, %w1;"),
        ("if r5 & 12 goto out", "and.b32 %w0, %w0, 12;"),
        ("r5 >>= 3", "shr.u32 %w0, %w0, 3;"),
        ("r3 s>>= 3", "shr.u32 %w0, %w0, 3;"),
        ("r3 >>= 40", "mov.u64 %r3, 0;"),
        ("r3 >>= r4", "shr.u32 %w0, %w0, %w2;"),
        ("r3 &= 0xff", "and.b32 %w0, %w0, 255;"),
        ("r3 &= -16", "and.b32 %w0, %w0, -16;"),
        ("r6 &= r3", "and.b32 %w0, %w0, %w1;"),
        ("r3 |= r4", "or.b32 %w0, %w0, %w1;"),
        ("r3 /= r5", "div.u32 %w0, %w0, %w1;"),
        ("r3 %= 10", "rem.u32 %w0, %w0, 10;"),
    ];
    for (op, want) in cases {
        let text = format!(
            "r3 = *(u32 *)(r1 + 0)\nr4 = *(u64 *)(r1 + 8)\nr4 >>= 32\nr5 = *(u64 *)(r1 + 0)\n\
             r6 = *(u64 *)(r1 + 8)\nr0 = 0x100000000 ll\nif r5 >= r0 goto out\n{op}\n\
             r0 = r3\nr0 += r4\nr0 += r5\nr0 += r6\nif r0 > 7 goto out\nr0 = 1\nout:\nexit\n"
        );
        let code = lowered(&text);
        assert!(code.contains(want), "{op}: no `{want}` in\n{code}");
    }
}

/// No narrowing where a path may bring upper bits: r6 is any 64-bit number, r7 is 5 on
/// one path and 2^32 on the other; an add may carry into the upper half, a shift left into it.
#[test]
fn operations_that_may_see_upper_bits_stay_64_bit() {
    let cases = [
        ("if r6 > 100 goto out", "setp.gt.u64 %p0, %r6, 100;"),
        ("if r7 > 100 goto out", "setp.gt.u64 %p0, %r7, 100;"),
        ("if r3 > r6 goto out", "setp.gt.u64 %p0, %r3, %r6;"),
        ("if r3 s> r6 goto out", "setp.gt.s64 %p0, %r3, %r6;"),
        ("r6 >>= 3", "shr.u64 %r6, %r6, 3;"),
        ("r7 >>= 3", "shr.u64 %r7, %r7, 3;"),
        ("r3 |= r6", "or.b64 %r3, %r3, %r6;"),
        ("r3 += 1", "add.u64 %r3, %r3, 1;"),
        ("r3 <<= 1", "shl.b64 %r3, %r3, 1;"),
    ];
    for (op, want) in cases {
        let text = format!(
            "r3 = *(u32 *)(r1 + 0)\nr6 = *(u64 *)(r1 + 8)\nr7 = 5\nr0 = *(u8 *)(r1 + 1)\n\
             if r0 == 0 goto +2\nr7 = 0x100000000 ll\n{op}\n\
             r0 = r3\nr0 += r6\nr0 += r7\nif r0 > 7 goto out\nr0 = 1\nout:\nexit\n"
        );
        let code = lowered(&text);
        assert!(code.contains(want), "{op}: no `{want}` in\n{code}");
    }
}
