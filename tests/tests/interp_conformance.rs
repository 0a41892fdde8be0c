//! The bpf_conformance suite through the reference interpreter: every test runs on its
//! `-- mem` and must return its `-- result` in r0. The interpreter is the oracle the GPU
//! backend is compared with, so it has to be right on all of them.

use bpf2ptx_compiler::interp::{self, Options};
use bpf2ptx_tests::conformance_cases;

/// Tests the interpreter cannot pass, with the reason. Each must actually fail, so the table
/// cannot go stale.
const ALLOWED_FAILURES: &[(&str, &str)] = &[];

#[test]
fn conformance_suite_runs_on_the_interpreter() {
    let cases = conformance_cases();
    assert_eq!(cases.len(), 313);
    let mut failures = Vec::new();
    let mut passed = 0;
    for (name, obj, test) in &cases {
        let mut mem = test.mem.clone();
        let got = interp::run(obj, 0, &mut mem, &Options::default());
        let outcome = match (&got, test.result, &test.error) {
            (Ok(r0), Some(want), _) if *r0 == want => Ok(()),
            (Ok(r0), Some(want), _) => Err(format!("r0 = {r0:#x}, expected {want:#x}")),
            (Err(_), None, Some(_)) => Ok(()),
            (Ok(r0), None, Some(e)) => Err(format!("r0 = {r0:#x}, expected error `{e}`")),
            (Err(e), _, _) => Err(e.to_string()),
            (Ok(_), None, None) => Err("the file has no expectation".into()),
        };
        let allowed = ALLOWED_FAILURES.iter().find(|(n, _)| *n == name);
        match (outcome, allowed) {
            (Ok(()), None) => passed += 1,
            (Err(_), Some(_)) => {}
            (Ok(()), Some((_, why))) => {
                failures.push(format!("{name}: listed as failing ({why}) but passes"))
            }
            (Err(e), None) => failures.push(format!("{name}: {e}")),
        }
    }
    eprintln!(
        "{passed} of {} conformance tests pass on the interpreter",
        cases.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(passed + ALLOWED_FAILURES.len(), cases.len());
}
