//! The verifier's messages for the mistakes probe authors make (issue 17, "Messages for
//! probe authors"): one case per clang-built object in `tests/verifier/messages/`
//! (`NAME.bpf.c` beside its committed `NAME.bpf.o`; `build.sh` rebuilds them). For each:
//!
//! - `bpf2ptx verify NAME.bpf.o` (run from the repository root, where the source the
//!   object records is found) rejects it with exit 1, and its text equals
//!   `tests/out/verify/NAME.txt`; with `--verbose`, `NAME.verbose.txt` (`BLESS=1`
//!   rewrites both);
//! - the source's `// expect: RULE; names: N; value: V; help: H` line holds for the
//!   text: the rule, the name `N` (a map or variable in backquotes, or the region), the
//!   value `V` as the message writes it, the source line with a caret, and a `help:`
//!   line containing `H` (`help: -` for none). The text shows no raw state (`map#`,
//!   `umax=`, tnums, `.bss`) unless `--verbose`, which shows it;
//! - `--format json` conforms to `specs/verify.schema.json`, which requires every field
//!   the document had before the messages changed, and the new ones.

use bpf2ptx_tests::{bpf2ptx_bin, check_snapshot, files_with_ext, json_schema, repo_root};
use std::path::Path;
use std::process::Output;

/// The `// expect:` line of a case's source.
struct Expect {
    rule: String,
    names: String,
    value: String,
    help: Option<String>,
}

fn expect(src: &str, name: &str) -> Expect {
    let line = src
        .lines()
        .find_map(|l| l.strip_prefix("// expect: "))
        .unwrap_or_else(|| panic!("{name}: no `// expect:` line"));
    let mut rule = None;
    let (mut names, mut value, mut help) = (None, None, None);
    for (k, part) in line.split("; ").enumerate() {
        match part.split_once(": ") {
            Some(("names", v)) => names = Some(v.to_string()),
            Some(("value", v)) => value = Some(v.to_string()),
            Some(("help", v)) => help = Some(v.to_string()),
            None if k == 0 => rule = Some(part.to_string()),
            _ => panic!("{name}: bad `// expect:` part `{part}`"),
        }
    }
    Expect {
        rule: rule.unwrap_or_else(|| panic!("{name}: no rule")),
        names: names.unwrap_or_else(|| panic!("{name}: no names")),
        value: value.unwrap_or_else(|| panic!("{name}: no value")),
        help: help.filter(|h| h != "-"),
    }
}

fn verify(obj: &Path, args: &[&str]) -> Output {
    std::process::Command::new(bpf2ptx_bin())
        .current_dir(repo_root())
        .arg("verify")
        .arg(obj.strip_prefix(repo_root()).unwrap_or(obj))
        .args(args)
        .output()
        .expect("run bpf2ptx verify")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// What a case's text must say, whatever the snapshot holds.
fn check_text(name: &str, text: &str, e: &Expect) -> Vec<String> {
    let mut bad = Vec::new();
    let mut need = |ok: bool, what: String| {
        if !ok {
            bad.push(format!("{name}: {what}"));
        }
    };
    need(
        text.contains(&format!("error[{}]: ", e.rule)),
        format!("no `error[{}]`", e.rule),
    );
    need(
        text.contains(&e.names),
        format!("does not name {}", e.names),
    );
    need(
        text.contains(&e.value),
        format!("does not show `{}`", e.value),
    );
    // The source line: `NN | code`, then the caret line under it.
    let caret = text.lines().collect::<Vec<_>>().windows(2).any(|w| {
        w[0].split_once(" | ")
            .is_some_and(|(n, _)| n.trim().parse::<u32>().is_ok())
            && w[1].trim_start().starts_with('|')
            && w[1].trim_end().ends_with('^')
    });
    need(caret, "no source line with a caret under it".into());
    match &e.help {
        Some(h) => need(
            text.lines()
                .any(|l| l.starts_with("help: ") && l.contains(h.as_str())),
            format!("no `help:` line with `{h}`"),
        ),
        None => need(
            !text.contains("\nhelp: "),
            "a help line where none is expected".into(),
        ),
    }
    for raw in ["map#", "umax=", "var=(", "`.bss`", "map_value(", "fp0"] {
        need(
            !text.contains(raw),
            format!("shows raw state `{raw}` without --verbose"),
        );
    }
    bad
}

#[test]
fn messages_for_probe_authors() {
    let dir = repo_root().join("tests/verifier/messages");
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("specs/verify.schema.json")).expect("schema"),
    )
    .expect("the schema is JSON");
    let objects: Vec<_> = files_with_ext(&dir, "o");
    assert!(objects.len() >= 8, "the five mistakes and three more");
    let mut failures = Vec::new();
    for obj in &objects {
        let file = obj.file_name().unwrap().to_string_lossy().into_owned();
        let name = file.trim_end_matches(".bpf.o").to_string();
        let src = std::fs::read_to_string(dir.join(format!("{name}.bpf.c")))
            .unwrap_or_else(|e| panic!("{name}: its source beside it: {e}"));
        let e = expect(&src, &name);

        let plain = verify(obj, &[]);
        assert_eq!(plain.status.code(), Some(1), "{name}: {}", stderr(&plain));
        let text = stderr(&plain);
        failures.extend(check_text(&name, &text, &e));
        check_snapshot(
            &repo_root().join(format!("tests/out/verify/{name}.txt")),
            &text,
        );

        let verbose = verify(obj, &["--verbose"]);
        assert_eq!(verbose.status.code(), Some(1), "{name}");
        let vtext = stderr(&verbose);
        if !vtext.contains("= state: r") && !vtext.contains("= last decisions: ") {
            failures.push(format!("{name}: --verbose shows no raw state"));
        }
        check_snapshot(
            &repo_root().join(format!("tests/out/verify/{name}.verbose.txt")),
            &vtext,
        );

        let json = verify(obj, &["--format", "json"]);
        assert_eq!(json.status.code(), Some(1), "{name}");
        let doc: serde_json::Value =
            serde_json::from_slice(&json.stdout).expect("verify --format json is JSON");
        for err in json_schema::check(&schema, &doc) {
            failures.push(format!("{name}: JSON: {err}"));
        }
        let d = &doc["programs"][0]["errors"][0];
        if d["rule"] != e.rule.as_str() || d["line"]["col"].as_u64().unwrap_or(0) == 0 {
            failures.push(format!(
                "{name}: JSON's first error is not {} with a column: {d}",
                e.rule
            ));
        }
        if e.help.is_some() != d["help"].is_string() {
            failures.push(format!("{name}: JSON help is {}", d["help"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checks above can fail: a message in the verifier's own terms breaks each.
#[test]
fn the_text_checks_catch_the_old_form() {
    let e = Expect {
        rule: "mem-bounds".into(),
        names: "`counts`".into(),
        value: "0..256".into(),
        help: Some("`<`".into()),
    };
    let old = "error[mem-bounds]: insn 9: `lock *(u64 *)(r1 + 0) += r2` in count_sm \
               (off_by_one.bpf.c:16: __sync_fetch_and_add(&counts[sm], 1);)\n  \
               access of 8 bytes at offsets 0..2048 is outside the value of map .bss (2048 bytes)\n  \
               r1 = map_value(.bss)+scalar(umin=0,umax=2048,var=(0x0; 0xff8))";
    let bad = check_text("old", old, &e);
    for what in ["does not name", "caret", "help", "umax="] {
        assert!(bad.iter().any(|b| b.contains(what)), "{what}: {bad:?}");
    }
}
