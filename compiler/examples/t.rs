fn main() {
    use bpf2ptx_compiler::isa::*;
    for r in OPCODES.iter() {
        let imm = match r.kind { Kind::LdImm64(p) if p.uses_high_imm() => 0x1234_5678_9abc, Kind::LdImm64(_) => 5, _ => -5 };
        let i = Insn::new(r.kind, 3, 7, -12, imm).unwrap();
        println!("{:02x} {:<20} {}", r.code, r.conf, i);
    }
}
