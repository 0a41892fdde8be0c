//! `bpf2ptx verify FILE`: every program's verdict, as text (an accepted program's attach
//! point, cost bound, stack and loops on stdout; a rejected one's diagnostics on stderr,
//! with the source line read from disk) or as JSON (the schema in specs/verifier.md).
//!
//! Its own file because it is, after `run`, the binary's largest command, and what it
//! prints (the attach point in words, the loop summary, source lines looked up beside the
//! object) is used by no other command.

use crate::{load, Format};
use bpf2ptx::{compile, exit};
use bpf2ptx_backend::inject::attach::{Attach, Point};
use std::path::Path;

/// Line `line` (1-based) of the source file a diagnostic names: at the recorded path
/// (relative paths from the current directory), else beside the object `obj` when the
/// recorded path is relative (the object was built where its source is). `None` when
/// neither exists; the message then shows the line text BTF recorded.
fn source_line(obj: &Path, path: &str, line: u32) -> Option<String> {
    let recorded = Path::new(path);
    let beside = (!recorded.is_absolute())
        .then(|| obj.parent().map(|d| d.join(recorded)))
        .flatten();
    let text = std::fs::read_to_string(recorded)
        .ok()
        .or_else(|| std::fs::read_to_string(beside?).ok())?;
    text.lines()
        .nth(usize::try_from(line).ok()?.checked_sub(1)?)
        .map(str::to_string)
}

pub(crate) fn verify(
    file: &Path,
    format: Format,
    kconfig: Option<&Path>,
    loop_budget: Option<u64>,
    verbose: bool,
    flags: &bpf2ptx::build::Flags,
) -> i32 {
    let mut obj = match load(file, flags) {
        Ok(o) => o,
        Err(c) => return c,
    };
    if let Err(e) = compile::apply_kconfig(&mut obj, kconfig) {
        if let Format::Json = format {
            let doc =
                serde_json::json!({ "file": obj.file, "programs": [], "error": e.to_string() });
            outln!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("serialises")
            );
        }
        eprintln!("error: {e}");
        return e.exit_code();
    }
    let full = obj;
    let (obj, skipped) = compile::gpu_programs(&full);
    // Host-side programs that `bpf2ptx trace` runs (host/launch/K, uprobe on the launch
    // call) are checked as it checks them; other host sections are left to libbpf.
    let host = match bpf2ptx::host::HostPrograms::load(&full, &[]) {
        Ok(h) => h,
        // A uprobe on another function is libbpf's to load, not an error here.
        Err(e @ bpf2ptx::host::HostError::Section { .. }) => {
            eprintln!("note: {e}; bpf2ptx trace would refuse it");
            Default::default()
        }
        Err(e) => {
            eprintln!("error: {e}");
            return match e {
                bpf2ptx::host::HostError::Rejected { .. } => exit::REJECTED,
                _ => exit::BAD_INPUT,
            };
        }
    };
    for (name, section) in &skipped {
        match host.programs.iter().find(|p| &p.name == name) {
            Some(p) => eprintln!(
                "note: {}: host-side program {name} (section {section}, {}-byte context): accepted for bpf2ptx trace",
                obj.file,
                p.attach.ctx_size()
            ),
            None => eprintln!(
                "note: {}: skipped host-side program {name} (section {section})",
                obj.file
            ),
        }
    }
    if obj.programs.is_empty() {
        // Nothing verified is not a pass: a CI gate must not accept it.
        let error = format!("{}: no programs to verify", obj.file);
        if let Format::Json = format {
            let doc = serde_json::json!({ "file": obj.file, "programs": [], "error": error });
            outln!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("serialises")
            );
        }
        eprintln!("error: {error}");
        return exit::BAD_INPUT;
    }
    if let Err(e) = compile::check_maps(&obj) {
        if let Format::Json = format {
            let doc =
                serde_json::json!({ "file": obj.file, "programs": [], "error": e.to_string() });
            outln!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("serialises")
            );
        }
        eprintln!("error: {e}");
        return e.exit_code();
    }
    let verdicts = compile::verify_all(&obj, loop_budget);
    let rejected = verdicts.iter().any(|v| v.result.is_err());
    // The attach point each program was checked for (its context comes from it).
    let attach: Vec<Option<Attach>> = obj
        .programs
        .iter()
        .map(|p| Attach::from_section(&p.section))
        .collect();
    match format {
        Format::Json => {
            let programs: Vec<serde_json::Value> = verdicts
                .iter()
                .zip(&attach)
                .map(|(v, a)| {
                    let mut doc = match &v.result {
                        Ok(f) => serde_json::json!({
                            "program": v.program,
                            "verdict": "accepted",
                            "cost_bound": f.cost_bound,
                            "stack_bytes": f.stack_bytes,
                            "unreachable": f.unreachable,
                            "loops": loop_summary(f),
                            "loop_budget": f.loop_budget,
                        }),
                        Err(errs) => serde_json::json!({
                            "program": v.program,
                            "verdict": "rejected",
                            "errors": errs,
                        }),
                    };
                    if let Some(a) = a {
                        doc["attach"] = serde_json::json!({
                            "point": a.point,
                            "kernel": a.kernel,
                            "context_bytes": a.point.ctx_size(),
                        });
                    }
                    doc
                })
                .collect();
            let doc = serde_json::json!({ "file": obj.file, "programs": programs });
            outln!(
                "{}",
                serde_json::to_string_pretty(&doc).expect("serialises")
            );
        }
        Format::Text => {
            for (v, a) in verdicts.iter().zip(&attach) {
                let at = a.as_ref().map_or_else(String::new, describe_attach);
                match &v.result {
                    Ok(f) => {
                        outln!(
                            "{}: program {}{at}: accepted; worst case {} instructions, {} bytes of stack",
                            obj.file, v.program, f.cost_bound, f.stack_bytes
                        );
                        if !f.unreachable.is_empty() {
                            outln!("  warning: unreachable instructions at {:?}", f.unreachable);
                        }
                        for l in loop_summary(f) {
                            let budget = if l.form == bpf2ptx_verifier::LoopForm::Budget {
                                " (--loop-budget: the program ends, counted, when it is spent)"
                            } else {
                                ""
                            };
                            outln!(
                                "  loop at insn {} ({}): at most {} iterations x {} instructions{budget}",
                                l.pc,
                                l.form.name(),
                                l.trips,
                                l.body
                            );
                        }
                    }
                    Err(errs) => {
                        eprintln!(
                            "{}: program {}{at}: rejected ({} error{})",
                            obj.file,
                            v.program,
                            errs.len(),
                            if errs.len() == 1 { "" } else { "s" }
                        );
                        let read = |path: &str, line: u32| source_line(file, path, line);
                        let render = bpf2ptx_verifier::message::Render {
                            verbose,
                            source: Some(&read),
                        };
                        for e in errs {
                            eprintln!("{}", render.render(e));
                        }
                    }
                }
            }
        }
    }
    if rejected {
        exit::REJECTED
    } else {
        exit::OK
    }
}

/// ` (memory-access probe of every kernel, 80-byte context)`: what `verify` checked a
/// program as.
fn describe_attach(a: &Attach) -> String {
    let point = match (a.point, &a.opcode) {
        (Point::Entry, _) => "entry".to_string(),
        (Point::Exit, _) => "exit".to_string(),
        (Point::Mem, _) => "memory-access".to_string(),
        (Point::Insn, Some(op)) => format!("`{}` instruction", op.as_str()),
        (Point::Insn, None) => "instruction".to_string(),
    };
    let kernel = if a.kernel == "*" {
        "every kernel".to_string()
    } else {
        format!("kernel {}", a.kernel)
    };
    format!(
        " ({point} probe of {kernel}, {}-byte context)",
        a.point.ctx_size()
    )
}

/// Each loop head's worst instance (the largest trips x body), in code order: what the
/// cost bound counts for the loop.
fn loop_summary(f: &bpf2ptx_verifier::Facts) -> Vec<bpf2ptx_verifier::LoopCost> {
    let mut out: Vec<bpf2ptx_verifier::LoopCost> = Vec::new();
    for l in &f.loops {
        match out.iter_mut().find(|o| o.pc == l.pc && o.form == l.form) {
            Some(o) if o.trips.saturating_mul(o.body) < l.trips.saturating_mul(l.body) => *o = *l,
            Some(_) => {}
            None => out.push(*l),
        }
    }
    out.sort_by_key(|l| l.pc);
    out
}
