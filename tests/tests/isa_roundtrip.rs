//! Round trips of the ISA model over the conformance suite: decode(encode(x)) == x and
//! assemble(disassemble(x)) == x for every instruction; plus the negative files.

use bpf2ptx_compiler::front::data_file;
use bpf2ptx_compiler::isa::{self, Insn};
use bpf2ptx_tests::{conformance_dir, files_with_ext};

mod common;
use common::check_roundtrips;

#[test]
fn conformance_roundtrips() {
    let dir = conformance_dir().expect("the vendored bpf_conformance suite (tests/conformance)");
    let files = files_with_ext(&dir.join("tests"), "data");
    assert_eq!(files.len(), 313, "the suite has 313 tests");
    let mut n = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let d = data_file::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        n += check_roundtrips(&f.display().to_string(), &d.insns);
    }
    eprintln!("{n} conformance instructions round-tripped");
}

#[test]
fn every_table_row_roundtrips() {
    // One instruction per row with non-trivial operands, so every syntax path is covered.
    let insns: Vec<Insn> = isa::OPCODES
        .iter()
        .map(|r| {
            let imm = match r.kind {
                isa::Kind::LdImm64(p) if p.uses_high_imm() => 0x1234_5678_9abc,
                isa::Kind::LdImm64(_) => 0x5678_9abc,
                _ => -5,
            };
            Insn::new(r.kind, 3, 7, -12, imm).unwrap()
        })
        .collect();
    check_roundtrips("table", &insns);
}
