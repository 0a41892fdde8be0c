//! Extern symbols (`extern ... __kconfig`, `__ksym`) as libbpf's
//! `bpf_object__collect_externs` reads them: an undefined global or weak `NOTYPE` symbol
//! whose `VAR` or `FUNC` BTF lists in the `.kconfig` or `.ksyms` `DATASEC`.
//!
//! Kconfig externs are laid out in one `.kconfig` map as libbpf lays them out: sorted by
//! alignment (largest first), then size (smallest first), then name, each at the next
//! offset its alignment allows. Their values are not in the object: the command line
//! fills the map (`front::kconfig`). Ksym variables and kfuncs keep their name; a
//! relocation that uses one becomes [`RelocTarget::Extern`](crate::program::RelocTarget).

use super::err;
use crate::front::btf::{Btf, BtfKind, BtfLinkage};
use crate::front::LoadError;
use crate::program::{Extern, ExternKind, KconfigType};
use goblin::elf::sym;
use std::collections::HashMap;

/// `BTF_INT_SIGNED`, `BTF_INT_CHAR`, `BTF_INT_BOOL`.
const INT_SIGNED: u8 = 1;
const INT_BOOL: u8 = 4;
/// The most bytes of kconfig externs (one, or all of them in `.kconfig`) bpf2ptx lays
/// out; Linux config strings are short, and the map is allocated when values are
/// written.
const MAX_KCONFIG_SIZE: u32 = 65536;

/// The externs of an object and how relocations find them.
pub(super) struct Externs {
    /// In symbol-table order, kconfig offsets assigned.
    pub(super) list: Vec<Extern>,
    /// Symbol name → index into `list`.
    pub(super) by_name: HashMap<String, usize>,
    /// Size of the `.kconfig` map's value, when there are kconfig externs.
    pub(super) kconfig_size: Option<u32>,
}

/// Whether `s` is what libbpf calls an extern: undefined, global or weak, no type.
pub(super) fn is_extern(s: &sym::Sym) -> bool {
    s.st_shndx == 0
        && matches!(s.st_bind(), sym::STB_GLOBAL | sym::STB_WEAK)
        && s.st_type() == sym::STT_NOTYPE
}

/// Collects the externs BTF describes. An undefined symbol BTF says nothing of is left
/// out (a relocation against it is an error where it is used); one BTF lists in
/// `.kconfig` with a type libbpf cannot fill is an error here, as in libbpf.
/// `kconfig_map` is the index the `.kconfig` map will have.
pub(super) fn collect(
    file: &str,
    btf: Option<&Btf>,
    syms: &[sym::Sym],
    sym_name: &dyn Fn(&sym::Sym) -> String,
    kconfig_map: usize,
) -> Result<Externs, LoadError> {
    let mut out = Externs {
        list: Vec::new(),
        by_name: HashMap::new(),
        kconfig_size: None,
    };
    let Some(btf) = btf else {
        return Ok(out);
    };
    // Which DATASEC lists each type id.
    let mut sec_of: HashMap<u32, &str> = HashMap::new();
    for t in btf.types() {
        if let BtfKind::Datasec(d) = &t.kind {
            let name = btf.string_at(t.name_off).unwrap_or("");
            if name == ".kconfig" || name == ".ksyms" {
                for v in &d.vars {
                    sec_of.insert(v.type_id, name);
                }
            }
        }
    }
    for (k, s) in syms.iter().enumerate() {
        if !is_extern(s) {
            continue;
        }
        let name = sym_name(s);
        if name.is_empty() || out.by_name.contains_key(&name) {
            continue;
        }
        // The extern VAR or FUNC of that name.
        let found = btf.types().iter().enumerate().find_map(|(i, t)| {
            let id = i as u32 + 1;
            let ext = matches!(
                t.kind,
                BtfKind::Var {
                    linkage: BtfLinkage::Extern,
                    ..
                } | BtfKind::Func {
                    linkage: BtfLinkage::Extern,
                    ..
                }
            );
            (ext && btf.string_at(t.name_off) == Some(name.as_str())).then_some((id, t))
        });
        let Some((btf_id, t)) = found else { continue };
        let bad = |what: String| {
            err(
                file,
                ".symtab",
                Some(k as u64 * 24),
                format!("extern `{name}`: {what}"),
            )
        };
        let kind = match (&t.kind, sec_of.get(&btf_id).copied()) {
            (BtfKind::Var { type_id, .. }, Some(".kconfig")) => {
                let (ty, size) = kconfig_type(btf, *type_id).ok_or_else(|| {
                    bad("its type is not one a kconfig value fills (bool, enum libbpf_tristate, char, an integer of 1, 2, 4 or 8 bytes, or a char array)".into())
                })?;
                if size > MAX_KCONFIG_SIZE {
                    return Err(bad(format!(
                        "a kconfig value of {size} bytes; at most {MAX_KCONFIG_SIZE}"
                    )));
                }
                ExternKind::Kconfig {
                    ty,
                    offset: 0,
                    size,
                    map: kconfig_map,
                }
            }
            (BtfKind::Var { type_id, .. }, Some(".ksyms")) => ExternKind::KsymVar {
                typeless: btf.skip_modifiers(*type_id).ok() == Some(0),
            },
            (BtfKind::Func { .. }, Some(".ksyms") | None) => ExternKind::Kfunc,
            (_, sec) => {
                return Err(bad(format!(
                    "BTF lists it in {}, not in .kconfig (`__kconfig`) or .ksyms (`__ksym`)",
                    sec.map_or_else(|| "no DATASEC".to_string(), |s| format!("DATASEC {s}"))
                )))
            }
        };
        out.by_name.insert(name.clone(), out.list.len());
        out.list.push(Extern {
            name,
            weak: s.st_bind() == sym::STB_WEAK,
            btf_id,
            kind,
        });
    }
    // libbpf's layout of .kconfig.
    let mut kcfg: Vec<usize> = (0..out.list.len())
        .filter(|&i| matches!(out.list[i].kind, ExternKind::Kconfig { .. }))
        .collect();
    let key = |e: &Extern| match e.kind {
        ExternKind::Kconfig { ty, size, .. } => (align(ty, size), size),
        _ => (1, 0),
    };
    kcfg.sort_by(|&a, &b| {
        let ((aa, asz), (ba, bsz)) = (key(&out.list[a]), key(&out.list[b]));
        ba.cmp(&aa)
            .then(asz.cmp(&bsz))
            .then(out.list[a].name.cmp(&out.list[b].name))
    });
    let mut off: u32 = 0;
    for i in kcfg {
        let (al, sz) = key(&out.list[i]);
        let at = off.div_ceil(al) * al;
        if let ExternKind::Kconfig { offset, .. } = &mut out.list[i].kind {
            *offset = at;
        }
        off = at.saturating_add(sz);
        out.kconfig_size = Some(off);
    }
    if off > MAX_KCONFIG_SIZE {
        return Err(err(
            file,
            ".BTF",
            None,
            format!("the kconfig externs take {off} bytes of .kconfig; at most {MAX_KCONFIG_SIZE}"),
        ));
    }
    Ok(out)
}

/// libbpf's alignment of a kconfig value: its size for an integer (at most 8), 4 for
/// the tristate enum, 1 for the rest.
fn align(ty: KconfigType, size: u32) -> u32 {
    match ty {
        KconfigType::Int { .. } => size.clamp(1, 8),
        KconfigType::Tristate => 4,
        KconfigType::Bool | KconfigType::Char | KconfigType::CharArray => 1,
    }
}

/// libbpf's `find_kcfg_type`: the type and size of a kconfig extern, `None` where
/// libbpf says "type is unsupported".
fn kconfig_type(btf: &Btf, type_id: u32) -> Option<(KconfigType, u32)> {
    let id = btf.skip_modifiers(type_id).ok()?;
    let t = btf.type_by_id(id)?;
    match &t.kind {
        BtfKind::Int { size, encoding, .. } => {
            if encoding & INT_BOOL != 0 {
                return (*size == 1).then_some((KconfigType::Bool, 1));
            }
            if *size == 1 {
                return Some((KconfigType::Char, 1));
            }
            matches!(size, 2 | 4 | 8).then_some((
                KconfigType::Int {
                    signed: encoding & INT_SIGNED != 0,
                },
                *size,
            ))
        }
        BtfKind::Enum { size: 4, .. } | BtfKind::Enum64 { .. }
            if btf.string_at(t.name_off) == Some("libbpf_tristate") =>
        {
            Some((KconfigType::Tristate, 4))
        }
        BtfKind::Array {
            elem_type_id,
            nelems,
            ..
        } if *nelems > 0 => {
            // Not recursive: an array whose element is itself would never end.
            let elem = btf.skip_modifiers(*elem_type_id).ok()?;
            match btf.type_by_id(elem)?.kind {
                BtfKind::Int {
                    size: 1, encoding, ..
                } if encoding & INT_BOOL == 0 => Some((KconfigType::CharArray, *nelems)),
                _ => None,
            }
        }
        _ => None,
    }
}
