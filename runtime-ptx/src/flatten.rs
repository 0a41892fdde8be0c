//! Inlining of the runtime's calls to its own functions, in the PTX text.
//!
//! Why: ptxas gives a kernel one register count for everything it may call, and at a call
//! (the ABI's, which ptxas keeps for a function with more than one call site) every value
//! the caller keeps live across it takes a register the callee may not use. The hash
//! update keeps some twenty 64-bit values live across each of its fifteen calls, so it
//! needed 69 registers on sm_90 (38 with its calls inlined), and every injected kernel that
//! may call it the same: a third of the occupancy of the application's own kernel, which
//! is what made the probes of issue 12 slower than their CUDA twins, which nvcc inlines.
//!
//! [`flatten`] rewrites named functions of a PTX text so that each call block to a function
//! defined in the text (or in the library text given) becomes that function's body, in a
//! nested block of its own: registers renamed per instance (`%rd7` -> `%i3d7`), labels
//! suffixed (`$Lfind_hit` -> `$Lfind_hit_i3`), parameters moved in from the caller's
//! values, the result moved out, `ret` a branch to the block's end. Callees are flattened
//! first, so the result has no calls left to runtime functions. The source keeps one
//! definition of each function; the functions stay defined too (for callers that are not
//! flattened).

use std::collections::HashMap;

/// One `.func` definition of a PTX text.
struct Func<'a> {
    /// `(type, name)` of the return parameter, when there is one.
    ret: Option<(&'a str, &'a str)>,
    /// Parameter names, in order.
    params: Vec<&'a str>,
    /// The text between the body's braces.
    body: &'a str,
    /// Byte range of the body in the text it came from.
    range: std::ops::Range<usize>,
}

/// Every `.func` definition (a header line starting `.func`, then `{` ... `}` lines).
fn functions(text: &str) -> HashMap<&str, Func<'_>> {
    let mut out = HashMap::new();
    let mut at = 0;
    while let Some(off) = text[at..].find("\n.func ") {
        let start = at + off + 1;
        let line_end = start + text[start..].find('\n').unwrap_or(text.len() - start);
        let header = &text[start..line_end];
        at = line_end;
        if header.trim_end().ends_with(';') || !text[line_end..].starts_with("\n{\n") {
            continue; // a prototype
        }
        let body_start = line_end + 3;
        let Some(len) = text[body_start..].find("\n}\n") else {
            continue;
        };
        let body_end = body_start + len + 1;
        let Some((name, ret, params)) = parse_header(header) else {
            continue;
        };
        out.insert(
            name,
            Func {
                ret,
                params,
                body: &text[body_start..body_end],
                range: body_start..body_end,
            },
        );
        at = body_end;
    }
    out
}

/// A parsed `.func` header: name, return parameter `(type, name)`, parameter names.
type Header<'a> = (&'a str, Option<(&'a str, &'a str)>, Vec<&'a str>);

/// `.func (.param .b64 ret) NAME(.param .b64 a, .param .b32 b)` -> name, ret, params.
fn parse_header(header: &str) -> Option<Header<'_>> {
    let rest = header.strip_prefix(".func")?.trim_start();
    let (ret, rest) = if let Some(r) = rest.strip_prefix('(') {
        let close = r.find(')')?;
        let mut words = r[..close].split_whitespace().skip(1); // .param
        let (ty, name) = (words.next()?, words.next()?);
        (
            Some((ty.trim_start_matches('.'), name)),
            r[close + 1..].trim_start(),
        )
    } else {
        (None, rest)
    };
    let open = rest.find('(')?;
    let name = rest[..open].trim();
    let close = rest.rfind(')')?;
    let params = rest[open + 1..close]
        .split(',')
        .filter_map(|p| p.split_whitespace().last())
        .collect();
    Some((name, ret, params))
}

/// A call block: `{`, `.param` declarations, `st.param` of the arguments, one `call`, at
/// most one `ld.param` of the result, `}`.
struct Call<'a> {
    callee: &'a str,
    /// The values stored into the call's argument parameters, in the call's order.
    args: Vec<&'a str>,
    /// The register the result is loaded into.
    result: Option<&'a str>,
}

fn parse_call<'a>(lines: &[&'a str]) -> Option<Call<'a>> {
    let mut stored: HashMap<&str, &str> = HashMap::new();
    let mut call = None;
    let mut result = None;
    for l in lines {
        let t = l.trim();
        if t.starts_with(".param ") || t.is_empty() || t.starts_with("//") {
        } else if let Some(r) = t.strip_prefix("st.param.") {
            let (_, r) = r.split_once(' ')?;
            let (dst, v) = r.split_once(',')?;
            stored.insert(
                dst.trim().trim_start_matches('[').trim_end_matches(']'),
                v.trim().trim_end_matches(';'),
            );
        } else if t.starts_with("call") && call.is_none() {
            call = Some(t);
        } else if let Some(r) = t.strip_prefix("ld.param.") {
            let (_, r) = r.split_once(' ')?;
            result = Some(r.split(',').next()?.trim());
        } else {
            return None;
        }
    }
    let t = call?.trim_end_matches(';');
    let t = t.split_once(' ')?.1.trim(); // after `call` / `call.uni`
    let t = if t.starts_with('(') {
        t.split_once("),")?.1.trim()
    } else {
        t
    };
    let (callee, args) = t.split_once(',')?;
    let args = args.trim().trim_start_matches('(').trim_end_matches(')');
    let args = args
        .split(',')
        .map(|a| stored.get(a.trim()).copied())
        .collect::<Option<Vec<_>>>()?;
    Some(Call {
        callee: callee.trim(),
        args,
        result,
    })
}

/// `text` with the bodies of the functions named in `names` flattened: every call block to
/// a function defined in `text` or `library` replaced by its inlined body (see the module
/// docs). A name not defined in `text` is ignored.
pub(crate) fn flatten(text: &str, library: &str, names: &[&str]) -> String {
    let lib = functions(library);
    let own = functions(text);
    let lookup = |n: &str| own.get(n).or_else(|| lib.get(n));
    let mut counter = 0u32;
    let mut edits: Vec<(std::ops::Range<usize>, String)> = names
        .iter()
        .filter_map(|n| own.get(n))
        .map(|f| {
            (
                f.range.clone(),
                inline_calls(f.body, &lookup, &mut counter, 0),
            )
        })
        .collect();
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = text.to_string();
    for (range, body) in edits {
        out.replace_range(range, &body);
    }
    out
}

fn inline_calls<'a>(
    body: &str,
    lookup: &dyn Fn(&str) -> Option<&'a Func<'a>>,
    counter: &mut u32,
    depth: u32,
) -> String {
    assert!(
        depth < 16,
        "runtime calls nest too deep to inline (recursion?)"
    );
    let lines: Vec<&str> = body.lines().collect();
    let mut out = String::with_capacity(body.len() * 2);
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "{" {
            if let Some(len) = lines[i + 1..].iter().position(|l| l.trim() == "}") {
                let block = &lines[i + 1..i + 1 + len];
                if let Some(call) = parse_call(block) {
                    if let Some(f) = lookup(call.callee) {
                        out.push_str(&instance(f, &call, lookup, counter, depth));
                        i += len + 2;
                        continue;
                    }
                }
            }
        }
        out.push_str(lines[i]);
        out.push('\n');
        i += 1;
    }
    out
}

/// One inlined instance of `f` for `call`.
fn instance<'a>(
    f: &Func<'a>,
    call: &Call<'_>,
    lookup: &dyn Fn(&str) -> Option<&'a Func<'a>>,
    counter: &mut u32,
    depth: u32,
) -> String {
    let body = inline_calls(f.body, lookup, counter, depth + 1);
    *counter += 1;
    let n = *counter;
    let end = format!("$Lret_i{n}");
    let mut s = String::from("\t{\n");
    for line in body.lines() {
        let line = rename(line, n);
        let t = line.trim();
        if let Some((ty, reg, param)) = param_load(t) {
            match f.params.iter().position(|p| *p == param) {
                Some(k) => s.push_str(&format!("\tmov.{ty} {reg}, {};\n", call.args[k])),
                None => s.push_str(&format!("{line}\n")),
            }
        } else if let Some(v) = f.ret.and_then(|(_, r)| ret_store(t, r)) {
            if let (Some(out), Some((ty, _))) = (call.result, f.ret) {
                s.push_str(&format!("\tmov.{ty} {out}, {v};\n"));
            }
        } else if t == "ret;" {
            s.push_str(&format!("\tbra.uni {end};\n"));
        } else {
            s.push_str(&line);
            s.push('\n');
        }
    }
    s.push_str(&format!("{end}:\n\t}}\n"));
    s
}

/// `ld.param.b64 %rd1, [desc];` -> ("b64", "%rd1", "desc").
fn param_load(t: &str) -> Option<(&str, &str, &str)> {
    let r = t.strip_prefix("ld.param.")?;
    let (ty, r) = r.split_once(' ')?;
    let (reg, src) = r.split_once(',')?;
    let src = src.trim().strip_prefix('[')?.strip_suffix("];")?;
    Some((ty, reg.trim(), src))
}

/// `st.param.b64 [ret], %rd6;` -> "%rd6".
fn ret_store<'t>(t: &'t str, ret: &str) -> Option<&'t str> {
    let r = t.strip_prefix("st.param.")?;
    let (_, r) = r.split_once(' ')?;
    let (dst, v) = r.split_once(',')?;
    (dst.trim() == format!("[{ret}]")).then(|| v.trim().trim_end_matches(';'))
}

/// Registers `%rdN`, `%rN`, `%pN` (and their `<N>` declarations) renamed for instance `n`
/// (`%i{n}d`, `%i{n}r`, `%i{n}p`); labels `$Lx` suffixed `_i{n}`. Names already renamed by
/// an inner instance start `%i` or end `_iM` and are left as they are (labels get a
/// second suffix, which keeps them unique).
fn rename(line: &str, n: u32) -> String {
    let mut s = String::with_capacity(line.len() + 8);
    let b = line.as_bytes();
    let mut i = 0;
    let numbered = |j: usize| j < b.len() && (b[j].is_ascii_digit() || b[j] == b'<');
    while i < b.len() {
        if b[i] == b'%' && line[i + 1..].starts_with("rd") && numbered(i + 3) {
            s.push_str(&format!("%i{n}d"));
            i += 3;
        } else if b[i] == b'%'
            && (line[i + 1..].starts_with('r') || line[i + 1..].starts_with('p'))
            && numbered(i + 2)
        {
            s.push_str(&format!("%i{n}{}", b[i + 1] as char));
            i += 2;
        } else if b[i] == b'$' && line[i + 1..].starts_with('L') {
            let len = line[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
                .unwrap_or(line.len() - i);
            s.push_str(&line[i..i + len]);
            s.push_str(&format!("_i{n}"));
            i += len;
        } else {
            let c = line[i..].chars().next().unwrap_or(' ');
            s.push(c);
            i += c.len_utf8();
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIB: &str = "\n.func (.param .b64 ret) twice(.param .b64 x)\n{\n\t.reg .b64 %rd<3>;\n\
        \tld.param.b64 %rd1, [x];\n\tadd.u64 %rd2, %rd1, %rd1;\n\tsetp.eq.u64 %p1, %rd2, 0;\n\
        \t@%p1 bra $Lzero;\n\tst.param.b64 [ret], %rd2;\n\tret;\n$Lzero:\n\tst.param.b64 [ret], 7;\n\tret;\n}\n";

    #[test]
    fn a_call_becomes_the_body_with_renamed_registers_labels_and_params() {
        let text = format!(
            "{LIB}\n.func (.param .b64 ret) outer(.param .b64 y)\n{{\n\t.reg .b64 %rd<3>;\n\
             \tld.param.b64 %rd1, [y];\n\t{{\n\t.param .b64 a0;\n\t.param .b64 r;\n\
             \tst.param.b64 [a0], %rd1;\n\tcall (r), twice, (a0);\n\tld.param.b64 %rd2, [r];\n\t}}\n\
             \tst.param.b64 [ret], %rd2;\n\tret;\n}}\n"
        );
        let out = flatten(&text, "", &["outer"]);
        let outer = &out[out.find("outer(").unwrap()..];
        assert!(!outer.contains("call"), "{outer}");
        assert!(outer.contains("\tmov.b64 %i1d1, %rd1;\n"), "{outer}");
        assert!(outer.contains("\tmov.b64 %rd2, %i1d2;\n"), "{outer}");
        assert!(outer.contains("\tmov.b64 %rd2, 7;\n"), "{outer}");
        assert!(outer.contains("@%i1p1 bra $Lzero_i1;"), "{outer}");
        assert!(
            outer.contains("bra.uni $Lret_i1;") && outer.contains("$Lret_i1:"),
            "{outer}"
        );
        // The callee stays defined, unchanged.
        assert!(out.starts_with(LIB), "{out}");
    }

    #[test]
    fn calls_to_functions_not_in_the_texts_stay_calls() {
        let text = "\n.func f()\n{\n\t{\n\t.param .b64 a0;\n\tst.param.b64 [a0], 1;\n\tcall g, (a0);\n\t}\n\tret;\n}\n";
        assert_eq!(flatten(text, "", &["f"]), text);
    }
}
