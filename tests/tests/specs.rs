//! specs/ stays true: the instruction table in specs/isa.md is rendered from the one opcode
//! table; BLESS=1 rewrites it.

use bpf2ptx_compiler::isa::table::{Key, Kind, OPCODES};
use bpf2ptx_compiler::isa::Insn;
use bpf2ptx_tests::repo_root;

const BEGIN: &str =
    "<!-- BEGIN GENERATED OPCODE TABLE (tests/tests/specs.rs; BLESS=1 rewrites) -->";
const END: &str = "<!-- END GENERATED OPCODE TABLE -->";

fn render() -> String {
    let mut s = String::new();
    s.push_str("| opcode | key | operands | cpu | kernel syntax (example) | bpf_conformance |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for r in OPCODES.iter() {
        let key = match r.key {
            Key::None => "-".to_string(),
            Key::Off(v) => format!("off={v}"),
            Key::Imm(v) => format!("imm=0x{v:x}"),
            Key::Src(v) => format!("src={v}"),
        };
        let f = r.form;
        let ops: Vec<&str> = [
            (f.dst, "dst"),
            (f.src, "src"),
            (f.off, "off"),
            (f.imm, "imm"),
        ]
        .into_iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| n)
        .collect();
        let imm = match r.kind {
            Kind::LdImm64(p) if p.uses_high_imm() => 0x1_0000_0002,
            Kind::LdImm64(_) => 2,
            _ => 4,
        };
        let example = Insn::new(r.kind, 1, 2, 3, imm).expect("row").to_string();
        let ops = if ops.is_empty() {
            "-".to_string()
        } else {
            ops.join(", ")
        };
        s.push_str(&format!(
            "| 0x{:02x} | {key} | {ops} | v{} | `{}` | `{}` |\n",
            r.code,
            r.cpu,
            example.replace('|', "\\|"),
            r.conf
        ));
    }
    s
}

#[test]
fn isa_spec_table_is_current() {
    let path = repo_root().join("specs/isa.md");
    let doc = std::fs::read_to_string(&path).expect("specs/isa.md");
    let (a, b) = (
        doc.find(BEGIN).expect("begin marker"),
        doc.find(END).expect("end marker"),
    );
    let current = &doc[a + BEGIN.len()..b];
    let fresh = format!("\n{}", render());
    if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
        let new = format!("{}{}{}{}", &doc[..a], BEGIN, fresh, &doc[b..]);
        std::fs::write(&path, new).unwrap();
        return;
    }
    pretty_assertions::assert_eq!(
        current,
        fresh,
        "specs/isa.md table drifted; BLESS=1 rewrites it"
    );
}
