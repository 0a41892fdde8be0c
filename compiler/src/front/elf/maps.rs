//! The object's maps in libbpf's order: legacy `maps`, BTF-defined `.maps`, one array
//! map per global-data section in section order, then `.kconfig` when the object has
//! kconfig externs; and where relocations find them.
//!
//! Legacy entries are libbpf's `struct bpf_map_def` (20 bytes) or iproute2's `struct
//! bpf_elf_map` (36 bytes: `id`, `pinning`, `inner_id`, `inner_idx` after `flags`); a
//! shorter entry of at least 20 bytes has the missing fields 0, as iproute2 reads it,
//! and bytes past 36 must be 0, as libbpf requires. Maps of maps take their inner map
//! from BTF (`__array(values, ...)`, with initial entries from the relocations of
//! `.rel.maps`) or from iproute2's `inner_id`/`inner_idx`.

use super::err;
use crate::front::{btf, LoadError};
use crate::program::{
    map_type_name, ArrayShape, ElfMapFields, Field, Map, MapOrigin, MapSlot, BPF_F_RDONLY_PROG,
};
use bpf2ptx_runtime::MapKind;
use goblin::elf::{section_header as sh, sym, Elf};
use std::collections::HashMap;

/// `BPF_F_MMAPABLE`: libbpf sets it on global-data maps.
const BPF_F_MMAPABLE: u32 = 0x400;
/// Size of the legacy `struct bpf_map_def` (5 × u32), the shortest entry read.
const LEGACY_MAP_DEF: usize = 20;
/// Size of iproute2's `struct bpf_elf_map` (9 × u32), the most fields read.
const ELF_MAP_DEF: usize = 36;
/// `R_BPF_64_64` and `R_BPF_64_ABS64`: what clang writes in `.rel.maps` for `.values`.
const MAP_SLOT_RELOCS: [u32; 2] = [1, 2];

/// Where relocations find the maps [`read_maps`] returned (indices into them).
pub(super) struct MapIndex {
    /// `(section index, symbol value)` of a legacy or BTF-defined map's symbol → the map.
    pub(super) by_sym: HashMap<(usize, u64), usize>,
    /// A global-data section's index → its map.
    pub(super) by_data_sec: HashMap<usize, usize>,
}

/// Reads the maps of the legacy `maps` section, of `.maps` (from BTF) and of the
/// global-data sections, in that order, and refuses map types bpf2ptx does not know or
/// does not support.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_maps<'a>(
    file: &str,
    elf: &Elf<'a>,
    btf: Option<&btf::Btf>,
    legacy_sec: Option<usize>,
    maps_sec: Option<usize>,
    data_secs: &[usize],
    syms: &[sym::Sym],
    sec_name: &dyn Fn(usize) -> String,
    sec_data: &dyn Fn(usize) -> Result<&'a [u8], LoadError>,
    sym_name: &dyn Fn(&sym::Sym) -> String,
    maps_relocs: &[goblin::elf::Reloc],
    kconfig_size: Option<u32>,
) -> Result<(Vec<Map>, MapIndex), LoadError> {
    let mut maps: Vec<Map> = Vec::new();
    let mut map_by_sym: HashMap<(usize, u64), usize> = HashMap::new();
    if let Some(li) = legacy_sec {
        let data = sec_data(li)?;
        let mut defs: Vec<&sym::Sym> = syms
            .iter()
            .filter(|s| s.st_shndx == li && s.st_type() != sym::STT_SECTION)
            .collect();
        defs.sort_by_key(|s| s.st_value);
        if defs.is_empty() && !data.is_empty() {
            return Err(err(
                file,
                "maps",
                None,
                "legacy maps section has no map symbols",
            ));
        }
        if !defs.is_empty() && data.len() % defs.len() != 0 {
            return Err(err(
                file,
                "maps",
                None,
                format!(
                    "section size {} is not a multiple of the {} map definitions",
                    data.len(),
                    defs.len()
                ),
            ));
        }
        let def_size = if defs.is_empty() {
            0
        } else {
            data.len() / defs.len()
        };
        for s in defs {
            let name = sym_name(s);
            let off = s.st_value as usize;
            let d = data.get(off..off.saturating_add(def_size)).filter(|_| def_size >= LEGACY_MAP_DEF).ok_or_else(|| {
                err(file, "maps", Some(s.st_value), format!("map `{name}`: definition of {def_size} bytes is outside the section or shorter than {LEGACY_MAP_DEF}"))
            })?;
            let f = |k: usize| {
                d.get(4 * k..4 * k + 4)
                    .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            };
            if d.get(ELF_MAP_DEF..)
                .is_some_and(|t| t.iter().any(|&b| b != 0))
            {
                return Err(err(
                    file,
                    "maps",
                    Some(s.st_value),
                    format!(
                        "map `{name}`: non-zero bytes after the {ELF_MAP_DEF} of iproute2's struct bpf_elf_map (the entry has {def_size})"
                    ),
                ));
            }
            map_by_sym.insert((li, s.st_value), maps.len());
            maps.push(Map {
                name,
                origin: MapOrigin::Legacy,
                section: "maps".into(),
                map_type: f(0),
                key_size: f(1),
                value_size: f(2),
                max_entries: f(3),
                flags: f(4),
                btf_key_type: None,
                btf_value_type: None,
                init: None,
                iproute2: (def_size > LEGACY_MAP_DEF).then(|| ElfMapFields {
                    id: f(5),
                    pinning: f(6),
                    inner_id: f(7),
                    inner_idx: f(8),
                }),
                inner: None,
                slots: vec![],
                fields: vec![],
            });
        }
        iproute2_inner_maps(file, &mut maps)?;
    }
    if let Some(mi) = maps_sec {
        let btf = btf
            .as_ref()
            .ok_or_else(|| err(file, ".maps", None, "BTF-defined maps need a .BTF section"))?;
        let vars = btf.datasec_vars(".maps").map_err(|e| LoadError::Btf {
            file: file.to_string(),
            source: Box::new(e),
        })?;
        // (map index, its offset in .maps, its size, the `values` offset): where the
        // relocations of initial entries land.
        let mut outers: Vec<(usize, u64, u64, u32)> = Vec::new();
        for v in vars {
            let def = btf.map_def(v.var_type_id).map_err(|e| LoadError::Btf {
                file: file.to_string(),
                source: Box::new(e),
            })?;
            let name = v.name.to_string();
            // The map's symbol gives its offset; libbpf matches them by name.
            let sym = syms.iter().find(|s| {
                s.st_shndx == mi && s.st_type() != sym::STT_SECTION && sym_name(s) == name
            });
            let offset = sym.map_or(u64::from(v.offset), |s| s.st_value);
            let size = sym.map_or(u64::from(v.size), |s| s.st_size);
            map_by_sym.insert((mi, offset), maps.len());
            if let Some(vo) = def.values_offset {
                outers.push((maps.len(), offset, size, vo));
            }
            let inner = def
                .inner
                .as_deref()
                .map(|d| Box::new(btf_map(format!("{name}.inner"), d)));
            let mut m = btf_map(name, &def);
            m.inner = inner;
            m.fields = def
                .value_type_id
                .map_or_else(Vec::new, |t| value_fields(btf, t));
            maps.push(m);
        }
        map_slots(
            file,
            &mut maps,
            &outers,
            mi,
            maps_relocs,
            syms,
            &sym_name,
            &map_by_sym,
        )?;
    }
    let mut data_map: HashMap<usize, usize> = HashMap::new();
    for &di in data_secs {
        let s = &elf.section_headers[di];
        if s.sh_size == 0 {
            continue;
        }
        let name = sec_name(di);
        let size = u32::try_from(s.sh_size)
            .map_err(|_| err(file, &name, None, "section larger than 4 GiB"))?;
        let rodata = name == ".rodata" || name.starts_with(".rodata.");
        let init = if s.sh_type == sh::SHT_NOBITS {
            None
        } else {
            Some(sec_data(di)?.to_vec())
        };
        // libbpf makes a global-data map mmapable only when BTF describes the section
        // (`.rodata.str1.1` has no DATASEC, so it stays read-only but not mmapable).
        let mmapable = if btf.as_ref().is_some_and(|b| b.datasec(&name).is_some()) {
            BPF_F_MMAPABLE
        } else {
            0
        };
        let fields = btf
            .as_ref()
            .map_or_else(Vec::new, |b| data_fields(b, &name, size));
        data_map.insert(di, maps.len());
        maps.push(Map {
            name: name.clone(),
            origin: MapOrigin::GlobalData,
            section: name,
            map_type: MapKind::Array.id(),
            key_size: 4,
            value_size: size,
            max_entries: 1,
            flags: mmapable | if rodata { BPF_F_RDONLY_PROG } else { 0 },
            btf_key_type: None,
            btf_value_type: None,
            init,
            iproute2: None,
            inner: None,
            slots: vec![],
            fields,
        });
    }
    if let Some(size) = kconfig_size {
        // libbpf's internal `.kconfig` map: read-only to programs, mmapable (BTF has its
        // DATASEC), after the global-data maps.
        maps.push(Map {
            name: ".kconfig".into(),
            origin: MapOrigin::GlobalData,
            section: ".kconfig".into(),
            map_type: MapKind::Array.id(),
            key_size: 4,
            value_size: size,
            max_entries: 1,
            flags: BPF_F_MMAPABLE | BPF_F_RDONLY_PROG,
            btf_key_type: None,
            btf_value_type: None,
            init: None,
            iproute2: None,
            inner: None,
            slots: vec![],
            fields: vec![],
        });
    }
    for m in &maps {
        if map_type_name(m.map_type).is_none() {
            return Err(LoadError::UnknownMapType {
                file: file.to_string(),
                section: m.section.clone(),
                map: m.name.clone(),
                map_type: m.map_type,
            });
        }
        if let Some(inner) = &m.inner {
            if map_type_name(inner.map_type).is_none() {
                return Err(LoadError::UnknownMapType {
                    file: file.to_string(),
                    section: m.section.clone(),
                    map: inner.name.clone(),
                    map_type: inner.map_type,
                });
            }
            if inner.is(MapKind::is_map_in_map) {
                return Err(err(
                    file,
                    &m.section,
                    None,
                    format!(
                        "map `{}`: its inner map `{}` is itself a map of maps; one level is the most Linux allows",
                        m.name, inner.name
                    ),
                ));
            }
        }
        if m.is(MapKind::is_map_in_map) && m.inner.is_none() {
            let how = if m.origin == MapOrigin::Legacy {
                "iproute2's `inner_id` naming the `id` of another map"
            } else {
                "`__array(values, struct {...})`"
            };
            return Err(err(
                file,
                &m.section,
                None,
                format!(
                    "map `{}` is a map of maps ({}) without an inner map; give one with {how}",
                    m.name,
                    map_type_name(m.map_type).unwrap_or("?")
                ),
            ));
        }
    }
    Ok((
        maps,
        MapIndex {
            by_sym: map_by_sym,
            by_data_sec: data_map,
        },
    ))
}

/// The variables of global-data section `name` (`size` bytes) as fields, from its
/// `DATASEC`: a message about `.bss` names the variable the user declared. Variables BTF
/// places outside the section are left out (a malformed object must not make a message
/// point past the value).
fn data_fields(btf: &btf::Btf, name: &str, size: u32) -> Vec<Field> {
    let Ok(vars) = btf.datasec_vars(name) else {
        return Vec::new();
    };
    vars.iter()
        .filter(|v| !v.name.is_empty() && v.size > 0)
        .filter(|v| v.offset.checked_add(v.size).is_some_and(|end| end <= size))
        .map(|v| Field {
            name: v.name.to_string(),
            offset: v.offset,
            size: v.size,
            array: array_shape(btf, v.type_id),
        })
        .collect()
}

/// The fields of a map value of BTF type `type_id`: a struct's (or union's) named
/// members, or the whole value when it is an array; nothing for other types.
pub(crate) fn value_fields(btf: &btf::Btf, type_id: u32) -> Vec<Field> {
    let Ok(id) = btf.skip_modifiers(type_id) else {
        return Vec::new();
    };
    let Some(t) = btf.type_by_id(id) else {
        return Vec::new();
    };
    match &t.kind {
        btf::BtfKind::Array { .. } => btf
            .resolve_size(id)
            .ok()
            .map(|size| Field {
                name: String::new(),
                offset: 0,
                size,
                array: array_shape(btf, id),
            })
            .into_iter()
            .collect(),
        btf::BtfKind::Struct { members, .. } | btf::BtfKind::Union { members, .. } => members
            .iter()
            // Bitfields have no byte range of their own.
            .filter(|m| m.bitfield_size == 0 && m.bit_offset % 8 == 0)
            .filter_map(|m| {
                let name = btf.string_at(m.name_off).filter(|n| !n.is_empty())?;
                Some(Field {
                    name: name.to_string(),
                    offset: m.bit_offset / 8,
                    size: btf.resolve_size(m.type_id).ok().filter(|&s| s > 0)?,
                    array: array_shape(btf, m.type_id),
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The element size and count of BTF type `type_id` when it is an array (after
/// modifiers and typedefs) with elements of a known, non-zero size.
fn array_shape(btf: &btf::Btf, type_id: u32) -> Option<ArrayShape> {
    let id = btf.skip_modifiers(type_id).ok()?;
    match btf.type_by_id(id)?.kind {
        btf::BtfKind::Array {
            elem_type_id,
            nelems,
            ..
        } => Some(ArrayShape {
            elem_size: btf.resolve_size(elem_type_id).ok().filter(|&s| s > 0)?,
            len: nelems,
        }),
        _ => None,
    }
}

/// A map from its BTF definition.
fn btf_map(name: String, def: &btf::BtfMapDef) -> Map {
    // libbpf gives a perf event array 4-byte keys and values (cpu index → perf fd) when
    // the definition leaves them out.
    let default_size = if def.map_type == MapKind::PerfEventArray.id() {
        4
    } else {
        0
    };
    Map {
        name,
        origin: MapOrigin::Btf,
        section: ".maps".into(),
        map_type: def.map_type,
        key_size: def.key_size.unwrap_or(default_size),
        value_size: def.value_size.unwrap_or(default_size),
        max_entries: def.max_entries,
        flags: def.map_flags,
        btf_key_type: def.key_type_id,
        btf_value_type: def.value_type_id,
        init: None,
        iproute2: None,
        inner: None,
        slots: vec![],
        fields: vec![],
    }
}

/// iproute2's maps of maps: a map with `inner_id` takes the map whose `id` it is as its
/// inner map, and every map with that `id` goes in slot `inner_idx` (unless it is
/// `u32::MAX`), as iproute2's loader fills them.
fn iproute2_inner_maps(file: &str, maps: &mut [Map]) -> Result<(), LoadError> {
    for k in 0..maps.len() {
        let Some(f) = maps[k].iproute2 else { continue };
        let at = |what: String| {
            err(
                file,
                "maps",
                None,
                format!("map `{}`: {what}", maps[k].name),
            )
        };
        if f.inner_id == 0 {
            continue;
        }
        if !maps[k].is(MapKind::is_map_in_map) {
            return Err(at(format!(
                "inner_id {} on a map that is not a map of maps (type {})",
                f.inner_id, maps[k].map_type
            )));
        }
        let with_id: Vec<usize> = (0..maps.len())
            .filter(|&j| j != k && maps[j].iproute2.is_some_and(|g| g.id == f.inner_id))
            .collect();
        let Some(&first) = with_id.first() else {
            return Err(at(format!(
                "inner_id {} names no map (no map has id {})",
                f.inner_id, f.inner_id
            )));
        };
        let mut slots = Vec::new();
        for &j in &with_id {
            let idx = maps[j].iproute2.map_or(u32::MAX, |g| g.inner_idx);
            if idx == u32::MAX {
                continue;
            }
            if idx >= maps[k].max_entries && maps[k].map_type == MapKind::ArrayOfMaps.id() {
                return Err(at(format!(
                    "map `{}` goes in slot {idx} (inner_idx), past its {} entries",
                    maps[j].name, maps[k].max_entries
                )));
            }
            if slots.iter().any(|s: &MapSlot| s.slot == idx) {
                return Err(at(format!("two maps go in slot {idx} (inner_idx)")));
            }
            slots.push(MapSlot { slot: idx, map: j });
        }
        slots.sort_by_key(|s| s.slot);
        let mut inner = maps[first].clone();
        inner.slots.clear();
        maps[k].inner = Some(Box::new(inner));
        maps[k].slots = slots;
    }
    Ok(())
}

/// The initial entries of BTF maps of maps (`.values = { [k] = &m }`): clang writes one
/// relocation in `.rel.maps` per entry, at `values` + 8 × k of the outer map, against the
/// inner map's symbol, as libbpf's `bpf_object__collect_map_relos` reads them.
#[allow(clippy::too_many_arguments)]
fn map_slots(
    file: &str,
    maps: &mut [Map],
    outers: &[(usize, u64, u64, u32)],
    mi: usize,
    relocs: &[goblin::elf::Reloc],
    syms: &[sym::Sym],
    sym_name: &dyn Fn(&sym::Sym) -> String,
    map_by_sym: &HashMap<(usize, u64), usize>,
) -> Result<(), LoadError> {
    for r in relocs {
        let at = |what: String| err(file, ".rel.maps", Some(r.r_offset), what);
        let s = syms.get(r.r_sym).ok_or_else(|| {
            at(format!(
                "relocation against missing symbol #{} ({} symbols)",
                r.r_sym,
                syms.len()
            ))
        })?;
        let symbol = sym_name(s);
        if !MAP_SLOT_RELOCS.contains(&r.r_type) {
            return Err(at(format!(
                "unsupported relocation type {} against `{symbol}` in .maps",
                r.r_type
            )));
        }
        let Some(&(outer, base, size, vo)) = outers
            .iter()
            .find(|(_, base, size, _)| (*base..base.saturating_add(*size)).contains(&r.r_offset))
        else {
            return Err(at(format!(
                "relocation against `{symbol}` in .maps outside the `values` of any map of maps"
            )));
        };
        let _ = size;
        let rel = r.r_offset - base;
        if rel < u64::from(vo) || (rel - u64::from(vo)) % 8 != 0 {
            return Err(at(format!(
                "relocation against `{symbol}` at byte {rel} of map `{}` is not an entry of its `values`",
                maps[outer].name
            )));
        }
        let slot = (rel - u64::from(vo)) / 8;
        let Some(&target) = (s.st_shndx == mi)
            .then(|| map_by_sym.get(&(mi, s.st_value)))
            .flatten()
        else {
            return Err(at(format!(
                "entry {slot} of map `{}` is `{symbol}`, which is not a map of .maps",
                maps[outer].name
            )));
        };
        let slot = u32::try_from(slot)
            .ok()
            .filter(|&k| {
                k < maps[outer].max_entries || maps[outer].map_type != MapKind::ArrayOfMaps.id()
            })
            .ok_or_else(|| {
                at(format!(
                    "entry {slot} of map `{}` is past its {} entries",
                    maps[outer].name, maps[outer].max_entries
                ))
            })?;
        if maps[target].is(MapKind::is_map_in_map) {
            return Err(at(format!(
                "entry {slot} of map `{}` is `{symbol}`, a map of maps",
                maps[outer].name
            )));
        }
        maps[outer].slots.push(MapSlot { slot, map: target });
    }
    for &(outer, ..) in outers {
        maps[outer].slots.sort_by_key(|s| s.slot);
    }
    Ok(())
}
