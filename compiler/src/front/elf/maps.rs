//! The object's maps in libbpf's order: legacy `maps`, BTF-defined `.maps`, then one
//! array map per global-data section in section order; and where relocations find them.

use super::err;
use crate::front::{btf, LoadError};
use crate::program::{map_type_name, Map, MapOrigin};
use bpf2ptx_runtime::MapKind;
use goblin::elf::{section_header as sh, sym, Elf};
use std::collections::HashMap;

/// `BPF_F_RDONLY_PROG`: libbpf sets it on `.rodata` maps.
const BPF_F_RDONLY_PROG: u32 = 0x80;
/// `BPF_F_MMAPABLE`: libbpf sets it on global-data maps.
const BPF_F_MMAPABLE: u32 = 0x400;
/// Size of the legacy `struct bpf_map_def` fields bpf2ptx reads (5 × u32).
const LEGACY_MAP_DEF: usize = 20;

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
            let f =
                |k: usize| u32::from_le_bytes([d[4 * k], d[4 * k + 1], d[4 * k + 2], d[4 * k + 3]]);
            if d[LEGACY_MAP_DEF..].iter().any(|&b| b != 0) {
                return Err(err(
                    file,
                    "maps",
                    Some(s.st_value),
                    format!("map `{name}`: unsupported non-zero fields after map_flags"),
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
            });
        }
    }
    if let Some(mi) = maps_sec {
        let btf = btf
            .as_ref()
            .ok_or_else(|| err(file, ".maps", None, "BTF-defined maps need a .BTF section"))?;
        let vars = btf.datasec_vars(".maps").map_err(|e| LoadError::Btf {
            file: file.to_string(),
            source: Box::new(e),
        })?;
        for v in vars {
            let def = btf.map_def(v.var_type_id).map_err(|e| LoadError::Btf {
                file: file.to_string(),
                source: Box::new(e),
            })?;
            let name = v.name.to_string();
            // The map's symbol gives its offset; libbpf matches them by name.
            let offset = syms
                .iter()
                .find(|s| {
                    s.st_shndx == mi && s.st_type() != sym::STT_SECTION && sym_name(s) == name
                })
                .map(|s| s.st_value)
                .unwrap_or(u64::from(v.offset));
            map_by_sym.insert((mi, offset), maps.len());
            // libbpf gives a perf event array 4-byte keys and values (cpu index → perf fd)
            // when the definition leaves them out.
            let default_size = if def.map_type == MapKind::PerfEventArray.id() {
                4
            } else {
                0
            };
            maps.push(Map {
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
            });
        }
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
        if m.is(MapKind::is_map_in_map) {
            return Err(err(
                file,
                &m.section,
                None,
                format!("map `{}`: map-in-map is not supported yet", m.name),
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
