//! The bpf_conformance suite through the loader: all 313 tests load and pass the structural
//! checks; every negative file except `incorrect_return_value_high_bits.data` (a wrong
//! expected result, which only running the program can show) is rejected with an error.

use bpf2ptx_compiler::program::SourceKind;
use bpf2ptx_tests::{conformance_dir, files_with_ext};

/// r1 (the memory) and r2 (its length) are what bpf_conformance passes.
const CONFORMANCE_ARGS: &[u8] = &[1, 2];

#[test]
fn all_conformance_tests_load_and_pass_structure() {
    let dir = conformance_dir().expect("the vendored bpf_conformance suite (tests/conformance)");
    let files = files_with_ext(&dir.join("tests"), "data");
    assert_eq!(files.len(), 313);
    for f in &files {
        let obj = bpf2ptx::load_path(f).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(obj.kind, SourceKind::Conformance);
        let p = &obj.programs[0];
        if let Err(errs) = bpf2ptx_verifier::check(p, CONFORMANCE_ARGS) {
            panic!(
                "{}: {}",
                f.display(),
                errs.iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        let t = obj.test.as_ref().unwrap();
        assert!(
            t.result.is_some() || t.error.is_some(),
            "{}: no expectation",
            f.display()
        );
    }
}

#[test]
fn negative_files_are_rejected() {
    let dir = conformance_dir().expect("the vendored bpf_conformance suite (tests/conformance)");
    let files = files_with_ext(&dir.join("negative"), "data");
    assert!(files.len() >= 60, "{} negative files", files.len());
    let mut report = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        let verdict = match bpf2ptx::load_path(f) {
            Err(e) => Err(e.to_string()),
            Ok(obj) => match bpf2ptx_verifier::check(&obj.programs[0], CONFORMANCE_ARGS) {
                Err(errs) => Err(errs[0].to_string()),
                Ok(()) => Ok(()),
            },
        };
        if name == "incorrect_return_value_high_bits.data" {
            assert!(verdict.is_ok(), "{name} is a valid program: {verdict:?}");
            continue;
        }
        let msg = verdict
            .err()
            .unwrap_or_else(|| panic!("{name} was accepted"));
        // The message names the file, or the instruction the structural check rejects.
        assert!(
            msg.contains(&*name) || msg.starts_with("insn "),
            "{name}: unhelpful error `{msg}`"
        );
        report.push(format!("{name}: {msg}"));
    }
    eprintln!("{}", report.join("\n"));
}
