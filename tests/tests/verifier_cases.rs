//! The verifier's text cases (tests/verifier/*.s): each is a program in the text assembly
//! syntax with its expectation written next to the code:
//!
//! - `; error: RULE [substring]` after an instruction: the verifier must reject the
//!   program with a diagnostic of that rule (whose message contains the substring) at that
//!   instruction; every annotated instruction must be reported and nothing else;
//! - no annotation: the program must be accepted;
//! - `# entry: mem N` makes r1 point to N bytes of read-write memory and r2 hold N (the
//!   bpf_conformance convention); the default is a GPU probe with an empty context;
//! - `# cost: N`: the accepted program's worst-case instruction count must be N;
//! - `# complexity: N`: explore at most N instructions (keeps cases about unbounded loops
//!   fast in debug builds; the default is the verifier's);
//! - `# loop-budget: N`: verify with `--loop-budget N` (specs/verifier.md, "Loops");
//! - `.map` lines declare maps (see `bpf2ptx_compiler::front`).

use bpf2ptx_tests::{files_with_ext, repo_root};
use bpf2ptx_verifier::{verify_with, Entry, Options};

struct Expect {
    line: usize,
    rule: String,
    text: String,
}

fn expectations(src: &str) -> (Vec<Expect>, Entry, Option<u64>, Options) {
    let mut errors = Vec::new();
    let mut entry = Entry::probe();
    let mut cost = None;
    let mut opts = Options::default();
    for (n, line) in src.lines().enumerate() {
        if let Some(i) = line.find("; error:") {
            let rest = line[i + 8..].trim();
            let (rule, text) = rest.split_once(' ').unwrap_or((rest, ""));
            errors.push(Expect {
                line: n + 1,
                rule: rule.to_string(),
                text: text.trim().to_string(),
            });
        }
        if let Some(e) = line.trim().strip_prefix("# entry: mem ") {
            entry = Entry::conformance(e.trim().parse().expect("entry size"));
        }
        if let Some(c) = line.trim().strip_prefix("# cost: ") {
            cost = Some(c.trim().parse().expect("cost"));
        }
        if let Some(c) = line.trim().strip_prefix("# loop-budget: ") {
            opts.loop_budget = Some(c.trim().parse().expect("loop budget"));
        }
        if let Some(c) = line.trim().strip_prefix("# complexity: ") {
            opts.complexity_limit = c.trim().parse().expect("complexity");
        }
    }
    (errors, entry, cost, opts)
}

#[test]
fn verifier_text_cases() {
    let dir = repo_root().join("tests/verifier");
    let files = files_with_ext(&dir, "s");
    let mut failures = Vec::new();
    let (mut accepts, mut rejects) = (0, 0);
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let src = std::fs::read_to_string(f).unwrap();
        let obj = match bpf2ptx::load_bytes(&name, src.as_bytes()) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: does not load: {e}"));
                continue;
            }
        };
        let (expected, entry, cost, opts) = expectations(&src);
        let prog = &obj.programs[0];
        let line_of = |pc: usize| -> usize {
            let pcs = prog.pcs();
            let idx = pcs.iter().position(|&p| p == pc).unwrap_or(0);
            prog.lines
                .iter()
                .find(|(i, _)| *i == idx)
                .map_or(0, |(_, l)| l.line as usize)
        };
        match verify_with(&obj, 0, &entry, &opts) {
            Ok(facts) => {
                if !expected.is_empty() {
                    failures.push(format!(
                        "{name}: accepted, expected {} error(s) at line(s) {:?}",
                        expected.len(),
                        expected.iter().map(|e| e.line).collect::<Vec<_>>()
                    ));
                } else if cost.is_some_and(|c| c != facts.cost_bound) {
                    failures.push(format!(
                        "{name}: cost bound {} != expected {}",
                        facts.cost_bound,
                        cost.unwrap()
                    ));
                } else {
                    accepts += 1;
                }
            }
            Err(diags) => {
                if expected.is_empty() {
                    failures.push(format!(
                        "{name}: rejected, expected accept:\n{}",
                        diags
                            .iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                    continue;
                }
                let mut ok = true;
                for e in &expected {
                    let hit = diags.iter().any(|d| {
                        line_of(d.pc) == e.line
                            && d.rule.name() == e.rule
                            && d.message.contains(&e.text)
                    });
                    if !hit {
                        ok = false;
                        failures.push(format!(
                            "{name}: line {}: expected {} `{}`, got:\n{}",
                            e.line,
                            e.rule,
                            e.text,
                            diags
                                .iter()
                                .map(|d| format!("line {}: {d}", line_of(d.pc)))
                                .collect::<Vec<_>>()
                                .join("\n")
                        ));
                    }
                }
                for d in &diags {
                    if !expected.iter().any(|e| e.line == line_of(d.pc)) {
                        ok = false;
                        failures.push(format!(
                            "{name}: unexpected diagnostic at line {}: {d}",
                            line_of(d.pc)
                        ));
                    }
                }
                if ok {
                    rejects += 1;
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
    eprintln!(
        "{} cases: {accepts} accepted, {rejects} rejected, as expected",
        files.len()
    );
}
