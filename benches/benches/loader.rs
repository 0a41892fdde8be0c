//! Benchmarks of the object loader: ELF bytes → `Object`, plus disassembly, raw decode and
//! the text assembler, over the committed corpus objects.
//!
//! The target: a 10,000-instruction object loads and disassembles in under 50 ms
//! (`load_and_disassemble/big.v3`, 11,694 instructions).

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;

use bpf2ptx_compiler::front::load_bytes;
use bpf2ptx_compiler::isa::{assemble, decode, encode};
use bpf2ptx_compiler::program::Object;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// The objects benchmarked: two big ones and two typical small probes.
const OBJECTS: &[&str] = &["big.v3", "big.v4", "counter.v1", "subprog.v3"];

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/obj")
}

/// Reads a corpus object into memory.
fn read_object(name: &str) -> (String, Vec<u8>) {
    let path = corpus_dir().join(format!("{name}.o"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (format!("{name}.o"), bytes)
}

/// The total instruction count of every program of an object.
fn insn_count(obj: &Object) -> u64 {
    obj.programs.iter().map(|p| p.insns.len() as u64).sum()
}

/// One string with every instruction's text, one per line, program after program.
fn disassemble(obj: &Object) -> String {
    let mut out = String::with_capacity(insn_count(obj) as usize * 32);
    for prog in &obj.programs {
        for insn in &prog.insns {
            writeln!(out, "{insn}").expect("writing to a String");
        }
    }
    out
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    for name in OBJECTS {
        let (file, bytes) = read_object(name);
        let obj = load_bytes(&file, &bytes).expect("corpus object loads");
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(name), &bytes, |b, bytes| {
            b.iter(|| load_bytes(black_box(&file), black_box(bytes)).expect("loads"))
        });
    }
    group.finish();
}

fn load_and_disassemble(c: &mut Criterion) {
    let mut group = c.benchmark_group("load_and_disassemble");
    for name in OBJECTS {
        let (file, bytes) = read_object(name);
        let obj = load_bytes(&file, &bytes).expect("corpus object loads");
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(name), &bytes, |b, bytes| {
            b.iter(|| {
                let obj = load_bytes(black_box(&file), black_box(bytes)).expect("loads");
                disassemble(&obj)
            })
        });
    }
    group.finish();
}

/// Decoding alone, of each program's linked code (re-encoded from the loaded object, so
/// relocations are applied and subprograms are linked in).
fn decode_only(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_only");
    for name in OBJECTS {
        let (file, bytes) = read_object(name);
        let obj = load_bytes(&file, &bytes).expect("corpus object loads");
        let code: Vec<Vec<u8>> = obj.programs.iter().map(|p| encode(&p.insns)).collect();
        for (prog, bytes) in obj.programs.iter().zip(&code) {
            assert_eq!(
                decode(bytes).expect("decodes"),
                prog.insns,
                "decode round-trip"
            );
        }
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(name), &code, |b, code| {
            b.iter(|| {
                code.iter()
                    .map(|bytes| decode(black_box(bytes)).expect("decodes").len())
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

/// The text assembler on the disassembly of each program (one text per program, since
/// jump and call offsets are relative to the program's own code).
fn assemble_text(c: &mut Criterion) {
    let mut group = c.benchmark_group("assemble");
    for name in OBJECTS {
        let (file, bytes) = read_object(name);
        let obj = load_bytes(&file, &bytes).expect("corpus object loads");
        let texts: Vec<String> = obj
            .programs
            .iter()
            .map(|p| p.insns.iter().map(|i| format!("{i}\n")).collect())
            .collect();
        for (prog, text) in obj.programs.iter().zip(&texts) {
            let asm = assemble(text).unwrap_or_else(|e| panic!("{name} {}: {e}", prog.name));
            assert_eq!(asm.insns.len(), prog.insns.len(), "{name} {}", prog.name);
        }
        group.throughput(Throughput::Elements(insn_count(&obj)));
        group.bench_with_input(BenchmarkId::from_parameter(name), &texts, |b, texts| {
            b.iter(|| {
                texts
                    .iter()
                    .map(|t| assemble(black_box(t)).expect("assembles").insns.len())
                    .sum::<usize>()
            })
        });
    }
    group.finish();
}

criterion_group!(
    benches,
    load,
    load_and_disassemble,
    decode_only,
    assemble_text
);
criterion_main!(benches);
