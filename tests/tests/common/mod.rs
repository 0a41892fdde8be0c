//! Checks shared by several test files.

use bpf2ptx_compiler::isa::{self, Insn};

/// Checks both round trips for a list of instructions; returns how many it checked.
pub fn check_roundtrips(what: &str, insns: &[Insn]) -> usize {
    let bytes = isa::encode(insns);
    let back = isa::decode(&bytes).unwrap_or_else(|e| panic!("{what}: decode(encode) failed: {e}"));
    assert_eq!(back, insns, "{what}: decode(encode(x)) != x");
    for (i, insn) in insns.iter().enumerate() {
        let text = insn.to_string();
        let a = isa::assemble(&text)
            .unwrap_or_else(|e| panic!("{what}: insn {i} `{text}` does not assemble: {e}"));
        assert_eq!(
            a.insns,
            vec![*insn],
            "{what}: insn {i}: assemble(`{text}`) differs"
        );
    }
    insns.len()
}
