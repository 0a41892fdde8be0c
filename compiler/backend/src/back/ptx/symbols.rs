//! PTX symbols: the names of programs, subprograms, entry kernels and map symbols, escaped
//! from BPF names (specs/abi.md, "Programs and functions"), and the check that no two of
//! them, nor one of them and the device runtime, give one symbol. Apart from the writer
//! because injection and the CLI name the same symbols.

use super::calls::runtime_callees;
use super::rings::PRINTK_DESC;
use super::{Error, Options};
use crate::program::{MapOrigin, Object, Program};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// The storage symbol of a runtime map whose size the compiler knows.
pub fn map_data_symbol(name: &str) -> String {
    format!("bpf2ptx_mapdata_{}", map_part(name))
}

/// The symbol of a ring's `[producer, consumer]` counters.
pub fn map_counter_symbol(name: &str) -> String {
    format!("bpf2ptx_mapctr_{}", map_part(name))
}

/// The symbol of a hash map's counts block (its count of keys and its counters of
/// refused, timed-out and evicted operations).
pub fn map_counts_symbol(name: &str) -> String {
    format!("bpf2ptx_mapcnt_{}", map_part(name))
}

/// The symbol of a program's loop-budget counter (specs/abi.md, "Loop budget counter"):
/// a u64 in device memory, zero at load, that counts the runs `--loop-budget` ended.
pub fn loop_budget_symbol(prog: &Program) -> String {
    format!("bpf2ptx_loopcnt_{}", escape(&prog.name))
}

/// The reference word of a map under [`Options::rebind_maps`]: a `.u64` holding the
/// generic address of the ring's descriptor, or of the writable global-data section,
/// that the code uses; it starts out naming the module's own, and the host may point it
/// at another instance (specs/abi.md, "Rebinding maps"). Which maps have one:
/// [`super::has_map_ref`].
pub fn map_ref_symbol(name: &str) -> String {
    format!(
        "bpf2ptx_mapref_{}",
        map_part(name.strip_prefix('.').unwrap_or(name))
    )
}

/// The address word of an array under [`Options::rebind_maps`]: a `.const .u64` copy of
/// descriptor word 3 (the storage's generic address), which the host writes beside the
/// word when it binds the map. The probes' inlined lookups and fusion flushes read it from
/// the constant bank, as `inject` without rebinding reads the storage's constant address,
/// not from the descriptor in global memory: a load on the path of every probe that
/// touches the map costs a kernel a few percent (benches/results/gpu-2026-12-07.md,
/// "GPU-side cost, trace vs inject"). Which maps have one: [`super::has_map_addr`].
pub fn map_addr_symbol(name: &str) -> String {
    format!("bpf2ptx_mapaddr_{}", map_part(name))
}

/// The descriptor symbol of a runtime map.
pub fn map_desc_symbol(name: &str) -> String {
    format!("bpf2ptx_map_{}", map_part(name))
}

/// The PTX name of a program's entry function (specs/abi.md, "Programs and functions"):
/// the name itself when it is a PTX identifier of its own that the module does not use
/// otherwise, else `bpf2ptx_p_` and the escaped name.
pub fn program_symbol(prog: &Program) -> String {
    program_name_symbol(&prog.name)
}

fn program_name_symbol(name: &str) -> String {
    let e = escape(name);
    if is_ptx_identifier(&e) && !e.starts_with(RESERVED_PREFIX) && !is_local_name(&e) {
        e
    } else {
        format!("{PROGRAM_PREFIX}{e}")
    }
}

/// The name of the `.entry` kernel emitted for a program with [`Options::entry`].
pub fn entry_symbol(prog: &Program) -> String {
    format!("bpf2ptx_entry_{}", escape(&prog.name))
}

pub(super) fn func_symbol(prog: &Program, k: usize) -> String {
    if k == 0 {
        program_symbol(prog)
    } else {
        format!("{}__{}", program_symbol(prog), escape(&prog.funcs[k].name))
    }
}

/// The PTX symbol of a global-data map: its section name less the leading `.`, under
/// `bpf2ptx_map_` as other maps.
pub fn map_symbol(name: &str) -> String {
    map_desc_symbol(name.strip_prefix('.').unwrap_or(name))
}

/// The prefix of every symbol the backend and the device runtime define for themselves.
const RESERVED_PREFIX: &str = "bpf2ptx_";
/// The prefix of a program symbol whose name is not a PTX identifier of its own.
const PROGRAM_PREFIX: &str = "bpf2ptx_p_";

/// A BPF name as PTX identifier characters: `[A-Za-z0-9_]` stay, every other byte of the
/// name's UTF-8 (`$` included) becomes `$` and its two lower-case hex digits, so two
/// names never escape alike.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            o.push(char::from(b));
        } else {
            let _ = write!(o, "${b:02x}");
        }
    }
    o
}

/// PTX's identifiers: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]+`.
fn is_ptx_identifier(s: &str) -> bool {
    let ok = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    match s.as_bytes() {
        [c, rest @ ..] if c.is_ascii_alphabetic() => rest.iter().all(|&c| ok(c)),
        [b'_' | b'$' | b'%', rest @ ..] => !rest.is_empty() && rest.iter().all(|&c| ok(c)),
        _ => false,
    }
}

/// Names PTX predefines, and the parameter and local names the backend declares in a
/// function (ptxas crashes on a function named like its own parameter).
fn is_local_name(s: &str) -> bool {
    const NAMES: &[&str] = &[
        "WARP_SZ",
        "bpf_ret",
        "bpf_lanes",
        "bpf_stack",
        "bpf_hr",
        "bpf_pa",
        "bpf_pd",
        "bpf_pf",
        "bpf_pg",
        "bpf_pl",
        "bpf_pr",
        "bpf_ps",
        "bpf_ra",
        "bpf_rf",
        "bpf_rr",
        "bpf_rs",
        "bpf_rv",
        "bpf_ua",
        "bpf_uv",
    ];
    // bpf_a1..bpf_a5 and the call sites' bpf_h<k> and bpf_p<r>.
    NAMES.contains(&s)
        || ["bpf_a", "bpf_h", "bpf_p"].iter().any(|p| {
            s.strip_prefix(p)
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
        })
}

/// The part of a map's symbols after their kind's prefix: the escaped name, with its
/// first byte escaped too where `bpf2ptx_map_` and the plain escape would be one of the
/// device runtime's functions (a map named `lookup_elem`: `bpf2ptx_map_$6cookup_elem`).
fn map_part(name: &str) -> String {
    let e = escape(name);
    let first = name.bytes().next();
    if let Some(b) = first.filter(|_| runtime_symbols().contains(&format!("bpf2ptx_map_{e}"))) {
        format!("${b:02x}{}", escape(&name[1..]))
    } else {
        e
    }
}

/// Every `bpf2ptx_...` name the device runtime's text (any part, any scope) and the
/// backend's own module-level symbols use.
fn runtime_symbols() -> &'static BTreeSet<String> {
    static SET: std::sync::OnceLock<BTreeSet<String>> = std::sync::OnceLock::new();
    SET.get_or_init(|| {
        let mut texts: Vec<String> = vec![
            bpf2ptx_runtime::maps::declarations().to_string(),
            bpf2ptx_runtime::ringbuf::declarations().to_string(),
            bpf2ptx_runtime::COPY_FUNCTION.to_string(),
            bpf2ptx_runtime::snprintf::FUNCTIONS.to_string(),
        ];
        for scope in [bpf2ptx_runtime::Scope::Gpu, bpf2ptx_runtime::Scope::Sys] {
            texts.push(bpf2ptx_runtime::maps::functions_at(scope));
            texts.push(bpf2ptx_runtime::ringbuf::functions_at(scope).into_owned());
        }
        let mut set: BTreeSet<String> = [PRINTK_DESC, "bpf2ptx_printk_data", "bpf2ptx_printk_ctr"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        set.extend(runtime_callees().map(str::to_string));
        for t in &texts {
            let b = t.as_bytes();
            let mut i = 0;
            while let Some(k) = t[i..].find(RESERVED_PREFIX) {
                let at = i + k;
                let mut end = at + RESERVED_PREFIX.len();
                while end < b.len()
                    && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b'$')
                {
                    end += 1;
                }
                let starts = at == 0
                    || !(b[at - 1].is_ascii_alphanumeric()
                        || b[at - 1] == b'_'
                        || b[at - 1] == b'$');
                if starts {
                    set.insert(t[at..end].to_string());
                }
                i = end;
            }
        }
        set
    })
}

/// Whether `sym` is a runtime helper the backend emits per access size.
fn is_runtime_sized(sym: &str) -> bool {
    ["bpf2ptx_ldu", "bpf2ptx_stu"].iter().any(|p| {
        sym.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()))
    })
}

/// Every module-level symbol [`write_string`](super::write_string) defines for the
/// object, with what it stands for; a symbol given twice, or one the device runtime has,
/// is a [`Error::SymbolClash`].
pub(super) fn check_symbols(obj: &Object, opts: &Options) -> Result<(), Error> {
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let mut add = |sym: String, what: String| -> Result<(), Error> {
        if runtime_symbols().contains(&sym) || is_runtime_sized(&sym) {
            return Err(Error::SymbolClash {
                symbol: sym,
                first: "the device runtime's".into(),
                second: what,
            });
        }
        if let Some(first) = seen.get(&sym) {
            return Err(Error::SymbolClash {
                symbol: sym,
                first: first.clone(),
                second: what,
            });
        }
        seen.insert(sym, what);
        Ok(())
    };
    for prog in &obj.programs {
        add(program_symbol(prog), format!("program `{}`", prog.name))?;
        for k in 1..prog.funcs.len() {
            add(
                func_symbol(prog, k),
                format!(
                    "function `{}` of program `{}`",
                    prog.funcs[k].name, prog.name
                ),
            )?;
        }
        if opts.entry {
            add(
                entry_symbol(prog),
                format!("the kernel of program `{}`", prog.name),
            )?;
        }
    }
    for m in &obj.maps {
        let what = |kind: &str| format!("{kind}map `{}`", m.name);
        if opts.rebind_maps && super::has_map_ref(m) {
            add(map_ref_symbol(&m.name), what("the reference of "))?;
        }
        if m.origin == MapOrigin::GlobalData {
            add(map_symbol(&m.name), what("global-data "))?;
            continue;
        }
        add(map_desc_symbol(&m.name), what("the descriptor of "))?;
        add(map_data_symbol(&m.name), what("the storage of "))?;
        add(map_counter_symbol(&m.name), what("the counters of "))?;
        add(map_counts_symbol(&m.name), what("the counts of "))?;
    }
    Ok(())
}
