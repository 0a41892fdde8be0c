//! The module writer: [`write_string`] lowers every program of an object to one PTX module
//! (map descriptors and storage, declarations, function bodies, the runtime text the
//! calls need) and [`inline_body`] one program's entry function to a block for an attach
//! site. It assembles what the function writers produce; how instructions lower is elsewhere.

use super::entry::{entry_granularity, entry_kernel, Granularity};
use super::func::FuncWriter;
use super::fuse::{AccSlot, FwSlot, SitePlan};
use super::mem::{runtime_body, runtime_decl};
use super::rings::{PRINTK_DESC, PRINTK_RING};
use super::symbols::{
    check_symbols, func_symbol, loop_budget_symbol, map_addr_symbol, map_counter_symbol,
    map_counts_symbol, map_data_symbol, map_desc_symbol, map_ref_symbol, map_symbol,
};
use super::{atomic_scope, has_map_addr, has_map_ref, is_sharded, Error, Options, SHARDS, TARGETS};
use crate::cfg::Cfg;
use crate::program::{MapOrigin, Object, Program};
use bpf2ptx_runtime::maps::specialized_function;
use bpf2ptx_runtime::{desc, MapKind};
use bpf2ptx_verifier::{Regions, Verified};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// Map types the device runtime implements: arrays ([`MapKind::is_array_like`]),
/// per-thread and per-warp arrays ([`MapKind::is_per_unit`]), hash maps
/// ([`MapKind::is_hash`]) and rings ([`MapKind::is_ring`]). Storage bytes the module
/// reserves for one, or `None` when the host sizes it from the launch (per-thread and
/// per-warp arrays).
///
/// Definitions Linux refuses at map creation are refused here too: an array of any kind
/// with keys other than 4 bytes, and an array or hash map with no entries or a 0-byte
/// value or key.
pub(super) fn map_storage(m: &crate::program::Map) -> Result<Option<u64>, &'static str> {
    let stride = bpf2ptx_runtime::maps::round8(u64::from(m.value_size));
    let entries = u64::from(m.max_entries);
    let kind = m.kind();
    let array = m.is(MapKind::is_array);
    if array && m.key_size != 4 {
        return Err("an array map needs 4-byte keys (Linux refuses others at map creation)");
    }
    if m.is(MapKind::is_kernel_user) {
        return Err("a kernel-user map (shared with the Linux kernel's eBPF) needs host-side programs, which bpf2ptx does not run");
    }
    let hash = m.is(MapKind::is_hash);
    if (array || hash) && (m.key_size == 0 || m.value_size == 0 || m.max_entries == 0) {
        return Err("a map with no entries, or 0-byte keys or values (Linux refuses it)");
    }
    match kind {
        Some(k) if k.is_array_like() => Ok(Some(stride * entries)),
        Some(k) if k.is_per_unit() => Ok(None),
        _ if hash => Ok(Some(bpf2ptx_runtime::maps::hash_storage_size(
            m.map_type,
            m.key_size,
            m.value_size,
            m.max_entries,
        ))),
        Some(k) if k.is_ring() => Ok(Some(ring_bytes(m))),
        _ => Err("this map type has no GPU implementation"),
    }
}

/// Bytes of a ring: a ringbuf's `max_entries` (its size, rounded up to a power of two of at
/// least 4096); a perf event array becomes one GPU ring of 4096 bytes per entry (at least
/// 64 KiB), since the GPU has no per-CPU buffers.
fn ring_bytes(m: &crate::program::Map) -> u64 {
    match m.kind() {
        Some(MapKind::PerfEventArray) => (u64::from(m.max_entries.max(1)) * 4096)
            .max(65536)
            .next_power_of_two(),
        _ => u64::from(m.max_entries).max(4096).next_power_of_two(),
    }
}

/// Prefix of a `need` entry `{SPEC_NEED}{base}:{map index}`: hash function `base`
/// specialised for one map (`maps::specialized_function`).
pub(super) const SPEC_NEED: &str = "spec:";

/// The `need` entry of a module whose code calls the runtime's `.gpu` copy of the map
/// functions (`maps::gpu_copy`): code pinned to a device-memory map in a module with a
/// host-placed map.
pub(super) const GPU_COPY_NEED: &str = "maps:gpu-copy";

/// The `need` entry of a module whose code calls the runtime's map functions at the
/// module's own scope. A module whose map code all calls the `.gpu` copy
/// ([`GPU_COPY_NEED`]) leaves them out.
pub(super) const MODULE_SCOPE_NEED: &str = "maps:module-scope";

/// Prototype and definition of each specialised hash function the module's calls need:
/// at `.sys` scope for a host-placed map, else at `.gpu` (calling the `.gpu` copy of the
/// map functions in a `.sys` module, `scope`).
fn specialised_functions(
    obj: &Object,
    opts: &Options,
    need: &BTreeSet<String>,
    scope: bpf2ptx_runtime::Scope,
) -> Vec<(String, String)> {
    need.iter()
        .filter_map(|n| n.strip_prefix(SPEC_NEED))
        .filter_map(|n| {
            let (base, m) = n.rsplit_once(':')?;
            let k = m.parse::<usize>().ok()?;
            let map = obj.maps.get(k)?;
            let host = opts.host.get(k).copied().unwrap_or(false);
            let name = bpf2ptx_runtime::maps::specialized_name(base, &map_desc_symbol(&map.name));
            let geometry = bpf2ptx_runtime::maps::Geometry {
                map_type: map.map_type,
                flags: map.flags,
                key_size: map.key_size,
                value_size: map.value_size,
                max_entries: map.max_entries,
            };
            let body = if host {
                specialized_function(base, &name, geometry, bpf2ptx_runtime::Scope::Sys)?
            } else if scope == bpf2ptx_runtime::Scope::Sys {
                let gpu = specialized_function(base, &name, geometry, bpf2ptx_runtime::Scope::Gpu)?;
                bpf2ptx_runtime::maps::to_gpu_copy(&gpu)
            } else {
                specialized_function(base, &name, geometry, scope)?
            };
            let proto = body.lines().next()?.to_string() + ";\n";
            Some((proto, body))
        })
        .collect()
}

/// Lowers every program of a verified object to one PTX module, using what the verifier
/// proved about each instruction (address spaces, alignment, constants, inlinable map
/// calls). It takes [`Verified`] rather than an `Object`: only the verifier makes one, so
/// a program nobody verified cannot be lowered.
pub fn write_string(v: &Verified<'_>, opts: &Options) -> Result<String, Error> {
    let obj = v.object();
    let version = TARGETS
        .iter()
        .find(|(t, _)| *t == opts.target)
        .map(|(_, v)| *v)
        .ok_or_else(|| Error::UnknownTarget(opts.target.clone()))?;
    check_symbols(obj, opts)?;
    let mut bodies = String::new();
    let mut decls = String::new();
    let mut need = BTreeSet::new();
    let mut needs_62 = false;
    let scope = atomic_scope(obj, opts);
    for prog in &obj.programs {
        let cfg = Cfg::new(prog);
        for k in 0..prog.funcs.len().max(1) {
            let pi = obj
                .programs
                .iter()
                .position(|p| std::ptr::eq(p, prog))
                .unwrap_or(0);
            let mut f = FuncWriter::configured(v, opts, pi, k);
            let head = func_head(prog, k, f.lanes);
            let _ = writeln!(decls, "{head};");
            f.lower(&cfg)?;
            need.extend(f.need.iter().cloned());
            needs_62 |= f.ptx_62;
            let _ = writeln!(bodies, "{head}\n{{\n{}}}\n", f.out);
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "//\n// Generated by bpf2ptx {} from {}\n//\n",
        env!("CARGO_PKG_VERSION"),
        obj.file
    );
    // The lowest version the target and the instructions used allow.
    let warp_entry = opts.entry
        && obj
            .programs
            .iter()
            .any(|p| entry_granularity(p, opts) == Granularity::Warp);
    let version = if needs_62 || warp_entry {
        version.max((6, 2))
    } else {
        version
    };
    // The ring functions aggregate reservations per warp (activemask, match.any); the map
    // functions back off with nanosleep on a busy hash slot.
    let version = if need.contains("ringbuf") {
        version.max(bpf2ptx_runtime::ringbuf::MIN_PTX)
    } else {
        version
    };
    let version = if need.contains("maps") {
        version.max(bpf2ptx_runtime::maps::MIN_PTX)
    } else {
        version
    };
    let _ = writeln!(
        out,
        ".version {}.{}\n.target {}\n.address_size 64\n",
        version.0, version.1, opts.target
    );
    for m in obj
        .maps
        .iter()
        .filter(|m| m.origin == MapOrigin::GlobalData)
    {
        let sym = map_symbol(&m.name);
        match &m.init {
            Some(bytes) if bytes.iter().any(|&b| b != 0) => {
                let list: Vec<String> = bytes.iter().map(|b| b.to_string()).collect();
                let _ = writeln!(
                    out,
                    ".visible .global .align 8 .b8 {sym}[{}] = {{{}}};",
                    m.value_size,
                    list.join(", ")
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    ".visible .global .align 8 .b8 {sym}[{}];",
                    m.value_size.max(1)
                );
            }
        }
        if opts.rebind_maps && has_map_ref(m) {
            let _ = writeln!(
                out,
                ".visible .global .align 8 .u64 {} = generic({sym});",
                map_ref_symbol(&m.name)
            );
        }
    }
    for (k, m) in obj
        .maps
        .iter()
        .enumerate()
        .filter(|(_, m)| m.origin != MapOrigin::GlobalData)
    {
        let shards = if is_sharded(obj, opts, k) { SHARDS } else { 0 };
        // Only maps the runtime implements get a descriptor; a program that uses another
        // is rejected where it loads the map.
        let Ok(storage) = map_storage(m) else {
            continue;
        };
        let desc = map_desc_symbol(&m.name);
        let stride = u64::from(m.value_size).div_ceil(8) * 8;
        // Word 0 is the layout's id (1504 and 1513 are GPU arrays, 1512 a per-thread array
        // on the device), which the runtime's map functions dispatch on.
        let layout = m.kind().map_or(m.map_type, |k| k.layout().id());
        let w0 = u64::from(layout) | (u64::from(m.flags) << 32);
        let w1 = u64::from(m.key_size) | (u64::from(m.value_size) << 32);
        let w2 = u64::from(m.max_entries) | (stride << 32);
        let aux = match m.kind() {
            Some(k) if k.is_array_like() => shards,
            Some(k) if k.is_hash() => bpf2ptx_runtime::maps::hash_slots(m.max_entries),
            Some(k) if k.is_ring() => ring_bytes(m),
            _ => 0,
        };
        let aux2 = if shards > 0 {
            bpf2ptx_runtime::maps::replica_bytes(m.max_entries, m.value_size).to_string()
        } else if m.is(MapKind::is_ring) {
            let counters = map_counter_symbol(&m.name);
            let _ = writeln!(out, ".visible .global .align 8 .u64 {counters}[2];");
            format!("generic({counters})")
        } else if m.is(MapKind::is_hash) {
            // The count and the sharded counters, on lines of their own, in device
            // memory whatever the placement (specs/abi.md, "Hash maps").
            let counts = map_counts_symbol(&m.name);
            let _ = writeln!(
                out,
                ".visible .global .align 128 .b8 {counts}[{}];",
                bpf2ptx_runtime::maps::COUNTS_BYTES
            );
            format!("generic({counts})")
        } else {
            "0".to_string()
        };
        let data = match storage {
            Some(bytes) => {
                let store = map_data_symbol(&m.name);
                // Sharded: line-aligned replicas of whole 128-byte lines.
                let (bytes, align) = if shards > 0 {
                    let r = bpf2ptx_runtime::maps::replica_bytes(m.max_entries, m.value_size);
                    (r * shards, 128)
                } else {
                    (bytes, 8)
                };
                let _ = writeln!(
                    out,
                    ".visible .global .align {align} .b8 {store}[{}];",
                    bytes.max(8)
                );
                format!("generic({store})")
            }
            None => "0".to_string(),
        };
        // The words in order (runtime desc): type and flags, sizes, entries and stride,
        // data, aux, aux2, drops, bound.
        const _: () = assert!(desc::WORDS == 8 && desc::word(desc::AUX2) == 5);
        let _ = writeln!(out, ".visible .global .align 8 .u64 {desc}[{}] = {{{w0}, {w1}, {w2}, {data}, {aux}, {aux2}, 0, 0}};", desc::WORDS);
        if has_map_addr(obj, opts, k) {
            let addr = map_addr_symbol(&m.name);
            let _ = if m.is(MapKind::is_hash) {
                writeln!(
                    out,
                    ".visible .const .align 8 .u64 {addr}[2] = {{{data}, {aux2}}};"
                )
            } else {
                writeln!(out, ".visible .const .align 8 .u64 {addr} = {data};")
            };
        }
        if opts.rebind_maps && has_map_ref(m) {
            let _ = writeln!(
                out,
                ".visible .global .align 8 .u64 {} = generic({desc});",
                map_ref_symbol(&m.name)
            );
        }
    }
    if need.contains("printk") {
        let _ = writeln!(
            out,
            ".visible .global .align 8 .b8 bpf2ptx_printk_data[{PRINTK_RING}];"
        );
        let _ = writeln!(out, ".visible .global .align 8 .u64 bpf2ptx_printk_ctr[2];");
        // The printk ring is a GPU ringbuf: its descriptor's word 0 is that map type id.
        let gpu_ringbuf = MapKind::GpuRingbuf.id();
        let _ = writeln!(out, ".visible .global .align 8 .u64 {PRINTK_DESC}[8] = {{{gpu_ringbuf}, 0, 0, generic(bpf2ptx_printk_data), {PRINTK_RING}, generic(bpf2ptx_printk_ctr), 0, 0}};");
    }
    // The loop-budget counter of each program `--loop-budget` bounds (specs/abi.md, "Loop
    // budget counter"): runs that ended because the budget ran out.
    for (k, p) in obj.programs.iter().enumerate() {
        if !v.facts(k).budget_heads.is_empty() {
            let _ = writeln!(
                out,
                ".visible .global .align 8 .u64 {} = 0;",
                loop_budget_symbol(p)
            );
        }
    }
    out.push('\n');
    out.push_str(&decls);
    for n in need.iter().filter(|n| n.starts_with("bpf2ptx_")) {
        let _ = writeln!(out, "{}", runtime_decl(n));
    }
    let gpu_copy = need
        .contains(GPU_COPY_NEED)
        .then(bpf2ptx_runtime::maps::gpu_copy);
    // The map functions at the module's scope, unless every call goes to the `.gpu` copy
    // (a prototype with no definition is an unresolved extern to ptxas).
    let module_maps =
        need.contains("maps") && (gpu_copy.is_none() || need.contains(MODULE_SCOPE_NEED));
    if module_maps {
        out.push_str(bpf2ptx_runtime::maps::declarations());
    }
    if let Some((decls, _)) = &gpu_copy {
        out.push_str(decls);
    }
    let specialised = specialised_functions(obj, opts, &need, scope);
    for (proto, _) in &specialised {
        out.push_str(proto);
    }
    if need.contains("ringbuf") {
        out.push_str(bpf2ptx_runtime::ringbuf::declarations());
    }
    if need.contains("snprintf") {
        out.push_str(bpf2ptx_runtime::snprintf::DECLARATIONS);
    }
    out.push('\n');
    out.push_str(&bodies);
    for n in need.iter().filter(|n| n.starts_with("bpf2ptx_")) {
        out.push_str(&runtime_body(n));
    }
    if need.contains("maps") || need.contains("ringbuf") {
        out.push_str(bpf2ptx_runtime::COPY_FUNCTION);
    }
    if module_maps {
        out.push_str(&bpf2ptx_runtime::maps::functions_at(scope));
    }
    if let Some((_, functions)) = &gpu_copy {
        out.push_str(functions);
    }
    for (_, body) in &specialised {
        out.push_str(body);
    }
    if need.contains("ringbuf") {
        out.push_str(&bpf2ptx_runtime::ringbuf::functions_at(scope));
    }
    if need.contains("snprintf") {
        out.push_str(bpf2ptx_runtime::snprintf::FUNCTIONS);
    }
    if opts.entry {
        for (pi, prog) in obj.programs.iter().enumerate() {
            // The program's body inlined into its kernel: no call, no ABI parameters.
            let mut f = FuncWriter::configured(v, opts, pi, 0);
            f.inline = true;
            f.lower(&Cfg::new(prog))?;
            out.push_str(&entry_kernel(prog, entry_granularity(prog, opts), &f.out));
        }
    }
    Ok(out)
}

/// The `.func` line of function `k` of `prog`: r1..r5 in, r0 out; the program itself is
/// `.visible` (the probe ABI), its subprograms are module-local and, when the program
/// passes the lanes word down ([`FuncWriter::lanes`]), take it as a sixth parameter.
fn func_head(prog: &Program, k: usize, lanes: bool) -> String {
    let vis = if k == 0 { ".visible " } else { "" };
    let extra = if lanes && k > 0 {
        ", .param .b32 bpf_lanes"
    } else {
        ""
    };
    format!(
        "{vis}.func (.param .b64 bpf_ret) {}(.param .b64 bpf_a1, .param .b64 bpf_a2, \
         .param .b64 bpf_a3, .param .b64 bpf_a4, .param .b64 bpf_a5{extra})",
        func_symbol(prog, k)
    )
}

/// An inlined body's `exit` copies r0 to `%bpf2ptx_ret` (declared by the enclosing
/// block) and branches to this label; the attach site defines it after the
/// body's block (labels are scoped by blocks, so every site can reuse the name).
pub const INLINE_END: &str = "$L__bpf2ptx_end";
/// 64-bit context registers `%bpf2ptx_c0..` an attach site sets for an inlined body: the
/// largest context's words (a memory site's 80 bytes).
pub const INLINE_CTX_WORDS: u32 = 10;

/// Program `pi`'s entry function as a block body to paste at an attach site: its own
/// `.reg`/`.local` declarations (which shadow the kernel's, PTX scoping), r1..r5 from
/// the site's `%bpf2ptx_a1..5`, context fields at constant offsets from
/// `%bpf2ptx_c0..`, and `exit` as a branch to [`INLINE_END`]. Calls to its
/// subprograms and the runtime go to the functions of the module [`write_string`] writes
/// with the same options, which the caller links in. `v` is usually the module's
/// verification with program `pi` verified again under the site's known context bytes
/// ([`Verified::with_known`]), so the site's constant fields fold away.
///
/// `plan` is what fusion changes in the body ([`super::fuse::plan`] of the same `v`; empty
/// for none): its adds go to the kernel's accumulators, its forwarded stores and loads
/// through the kernel's registers, which the attach site's kernel declares
/// ([`InlineBody::accumulators`], [`InlineBody::forwards`]).
pub fn inline_body(
    v: &Verified<'_>,
    opts: &Options,
    pi: usize,
    plan: &SitePlan,
) -> Result<InlineBody, Error> {
    let obj = v.object();
    let mut f = FuncWriter::configured(v, opts, pi, 0);
    f.inline = true;
    f.ctx_regs = true;
    f.fuse = plan.clone();
    let cfg = Cfg::new(&obj.programs[pi]);
    f.lower(&cfg)?;
    // Context bytes are read from memory by any context access the body does not serve
    // from registers: one in a subprogram, at an offset not known on every path, or a
    // helper's read through a pointer into the context (a map key there).
    let prog = &obj.programs[pi];
    let entry = cfg.funcs()[0].clone();
    let facts = v.facts(pi);
    let ctx_in_memory = (0..prog.insns.len()).any(|i| {
        let ctx = facts.regions.get(i).is_none_or(|r| r.touches(Regions::CTX));
        let served = entry.contains(&i)
            && prog.insns[i].access().is_some()
            && facts.ctx_offset.get(i).copied().flatten().is_some();
        ctx && !served
    });
    Ok(InlineBody {
        text: f.out,
        ctx_in_memory,
        accumulators: plan.accumulators(),
        forwards: plan.forwards(),
    })
}

/// A program's body for an attach site ([`inline_body`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineBody {
    /// The block's statements.
    pub text: String,
    /// Whether the body reads the context through r1 (the site must then store the
    /// context to the memory r1 points to); when false every field it reads comes from
    /// the site's registers.
    pub ctx_in_memory: bool,
    /// The kernel accumulators the body adds to (fusion; sorted): the kernel declares
    /// them, zeroes them at entry and adds them to their maps where the thread may leave.
    pub accumulators: Vec<AccSlot>,
    /// The forwarded slots whose kernel registers the body stores or reads (sorted): the
    /// kernel declares them and zeroes them at entry.
    pub forwards: Vec<FwSlot>,
}
