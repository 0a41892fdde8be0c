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
