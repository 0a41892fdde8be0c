//! Unit tests of `.BTF` parsing, map definitions and global data against the clang
//! fixtures, plus corruption and hand-built malformed sections.

use super::test_elf::*;
use super::*;

/// The `.BTF` of `obj` with `.rel.BTF` applied, as the loader should do it.
fn relocated_btf(obj: &[u8]) -> Vec<u8> {
    let mut data = section(obj, ".BTF").unwrap().to_vec();
    let relocs: Vec<_> = relocs(obj, ".BTF")
        .iter()
        .map(|r| BtfReloc {
            offset: r.offset,
            symbol_value: r.sym_value,
        })
        .collect();
    apply_relocations(BTF_SECTION, &mut data, &relocs).unwrap();
    data
}

fn btf(obj: &[u8]) -> Btf {
    parse(&relocated_btf(obj)).unwrap()
}

fn map(btf: &Btf, name: &str) -> Result<BtfMapDef, BtfError> {
    let var = btf
        .datasec_vars(".maps")
        .unwrap()
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no map {name}"));
    btf.map_def(var.var_type_id)
}

#[test]
fn multi_maps() {
    for obj in [MULTI14, MULTI19, MULTI19_DWARF4] {
        let btf = btf(obj);
        let events = map(&btf, "events").unwrap();
        assert_eq!(events.map_type, 1);
        assert_eq!(events.max_entries, 1024);
        assert_eq!(events.map_flags, 1);
        assert_eq!(events.key_size, Some(4));
        assert_eq!(events.value_size, Some(32));
        assert_eq!(btf.name(events.key_type_id.unwrap()), Some("__u32"));
        assert_eq!(btf.name(events.value_type_id.unwrap()), Some("event"));

        let counters = map(&btf, "counters").unwrap();
        assert_eq!(
            counters,
            BtfMapDef {
                map_type: 2,
                key_size: Some(4),
                value_size: Some(8),
                max_entries: 4,
                ..BtfMapDef::default()
            }
        );

        let rb = map(&btf, "rb").unwrap();
        assert_eq!(
            rb,
            BtfMapDef {
                map_type: 27,
                max_entries: 256 * 1024,
                ..BtfMapDef::default()
            }
        );

        let pinned = map(&btf, "pinned").unwrap();
        assert_eq!((pinned.map_type, pinned.max_entries), (6, 1));
        assert_eq!((pinned.key_size, pinned.value_size), (Some(4), Some(8)));
        assert_eq!((pinned.pinning, pinned.numa_node), (1, 0));
        assert_eq!(btf.name(pinned.key_type_id.unwrap()), Some("int"));
    }
}

#[test]
fn datasec_offsets_match_symbols_after_relocation() {
    for obj in [MULTI14, MULTI19, MULTI19_DWARF4, MAPS19] {
        let btf = btf(obj);
        let syms = symbols(obj);
        let mut seen = 0;
        for sec in [".data", ".rodata", ".bss", ".maps", "license"] {
            for v in btf.datasec_vars(sec).unwrap() {
                let sym = syms.iter().find(|s| s.0 == v.name).unwrap();
                assert_eq!(sym.1, sec, "{}", v.name);
                assert_eq!(u64::from(v.offset), sym.2, "offset of {}", v.name);
                assert_eq!(u64::from(v.size), sym.3, "size of {}", v.name);
                // `outer`'s flexible `values[]` array is sized by its initializer.
                if v.name != "outer" {
                    assert_eq!(
                        btf.resolve_size(v.var_type_id).unwrap(),
                        v.size,
                        "{}",
                        v.name
                    );
                }
                seen += 1;
            }
        }
        assert!(seen >= 7);
    }
}

#[test]
fn multi_global_data() {
    let btf = btf(MULTI19);
    let data = btf.datasec_vars(".data").unwrap();
    let summary: Vec<_> = data
        .iter()
        .map(|v| (v.name, v.offset, v.size, v.linkage))
        .collect();
    assert_eq!(
        summary,
        [
            ("global_counter", 0, 4, BtfLinkage::Global),
            ("static_counter", 4, 4, BtfLinkage::Static),
        ]
    );
    let rodata = btf.datasec_vars(".rodata").unwrap();
    let summary: Vec<_> = rodata.iter().map(|v| (v.name, v.offset, v.size)).collect();
    assert_eq!(summary, [("threshold", 0, 8), ("msg", 8, 10)]);
    let threshold = &rodata[0];
    let int = btf.skip_modifiers(threshold.type_id).unwrap();
    assert_eq!(btf.name(int), Some("unsigned long long"));
    assert!(matches!(
        btf.type_by_id(threshold.type_id).unwrap().kind,
        BtfKind::Const { .. }
    ));
    let bss = btf.datasec_vars(".bss").unwrap();
    assert_eq!((bss[0].name, bss[0].size), ("zeroed", 32));
    assert!(btf.datasec_vars(".rodata.str1.1").unwrap().is_empty());
    assert!(btf.datasec(".nope").is_none());
    // Without .rel.BTF the global's offset is still clang's placeholder 0.
    let raw = parse(section(MULTI19, ".BTF").unwrap()).unwrap();
    let msg = raw.datasec_vars(".rodata").unwrap()[1];
    assert_eq!((msg.name, msg.offset), ("msg", 0));
}

#[test]
fn multi_funcs() {
    let btf = btf(MULTI14);
    let funcs: Vec<_> = (1..=btf.types().len() as u32)
        .filter_map(|id| Some((btf.func_name(id)?, btf.func_proto(id)?)))
        .map(|(n, (p, l))| (n, p.params.len(), l))
        .collect();
    for f in [
        ("add_counter", 2, BtfLinkage::Static),
        ("global_helper", 1, BtfLinkage::Global),
        ("prog_first", 1, BtfLinkage::Global),
        ("prog_second", 1, BtfLinkage::Global),
        ("prog_third", 1, BtfLinkage::Global),
    ] {
        assert!(funcs.contains(&f), "{f:?} not in {funcs:?}");
    }
    let id = (1..=btf.types().len() as u32)
        .find(|&id| btf.func_name(id) == Some("add_counter"))
        .unwrap();
    let (proto, _) = btf.func_proto(id).unwrap();
    assert_eq!(btf.resolve_size(proto.ret_type_id).unwrap(), 8);
    let names: Vec<_> = proto
        .params
        .iter()
        .map(|p| btf.string_at(p.name_off).unwrap())
        .collect();
    assert_eq!(names, ["idx", "v"]);
    assert!(btf.resolve_size(id).is_err(), "a func has no size");
    assert_eq!(btf.func_name(proto.ret_type_id), None);
}

#[test]
fn map_edge_cases() {
    let btf = btf(MAPS19);
    let inner = map(&btf, "inner0").unwrap();
    assert_eq!(
        (inner.map_type, inner.key_size, inner.value_size),
        (2, Some(4), Some(4))
    );

    // A map of maps: the inner definition decoded, the value an inner map's 4-byte fd.
    let outer = map(&btf, "outer").unwrap();
    assert!(matches!(outer.map_type, 12 | 13), "{outer:?}");
    assert_eq!(outer.value_size, Some(4));
    let inner_def = outer.inner.as_deref().expect("inner map definition");
    assert_eq!(inner_def.map_type, 2);
    assert!(outer.values_offset.is_some());

    let err = map(&btf, "mismatch").unwrap_err();
    assert!(
        matches!(&err, BtfError::MapSizeMismatch { map, field: "key", declared: 8, actual: 4, .. } if map == "mismatch"),
        "{err}"
    );

    let err = map(&btf, "unknown").unwrap_err();
    assert!(
        matches!(&err, BtfError::UnknownMapMember { member, .. } if member == "bogus"),
        "{err}"
    );
    assert!(err.to_string().starts_with(".BTF+0x"), "{err}");

    let bloom = map(&btf, "bloom").unwrap();
    assert_eq!(bloom.map_type, 30);
    assert_eq!(bloom.map_extra, 0x5_0000_0003);
    assert_eq!((bloom.key_size, bloom.value_size), (None, Some(4)));

    let typed = map(&btf, "typed").unwrap();
    assert_eq!((typed.map_type, typed.max_entries), (9, 16));
    assert_eq!((typed.key_size, typed.value_size), (Some(16), Some(48)));
    let key = btf.skip_modifiers(typed.key_type_id.unwrap()).unwrap();
    assert!(matches!(
        btf.type_by_id(key).unwrap().kind,
        BtfKind::Struct { size: 16, .. }
    ));

    // A var that is not a map struct.
    let license = btf.datasec_vars("license").unwrap()[0];
    let err = btf.map_def(license.var_type_id).unwrap_err();
    assert!(
        matches!(&err, BtfError::MapNotStruct { kind: "array", .. }),
        "{err}"
    );
}

#[test]
fn big_endian_is_rejected() {
    let data = section(MULTI19_BPFEB, ".BTF").unwrap();
    assert_eq!(
        parse(data).unwrap_err(),
        BtfError::BigEndian {
            section: ".BTF",
            offset: 0
        }
    );
    let err = parse(&[0x12, 0x34, 1, 0]).unwrap_err();
    assert!(
        matches!(err, BtfError::BadMagic { magic: 0x3412, .. }),
        "{err}"
    );
}

#[test]
fn every_prefix_is_an_error() {
    for obj in [MULTI14, MAPS19] {
        let data = relocated_btf(obj);
        for len in 0..data.len() {
            let err = parse(&data[..len]).unwrap_err();
            assert!(err.to_string().starts_with(".BTF"), "{err}");
        }
        assert!(parse(&data).is_ok());
    }
}

/// Exercises every accessor on a parsed (possibly corrupted) section.
pub(crate) fn exercise(btf: &Btf) {
    for id in 0..=btf.types().len() as u32 + 1 {
        let _ = btf.resolve_size(id);
        let _ = btf.skip_modifiers(id);
        let _ = btf.name(id);
        let _ = btf.func_name(id);
        let _ = btf.func_proto(id);
        let _ = btf.map_def(id);
    }
    for sec in [".maps", ".data", ".rodata", ".bss"] {
        if let Ok(vars) = btf.datasec_vars(sec) {
            for v in vars {
                let _ = btf.map_def(v.var_type_id);
            }
        }
    }
}

#[test]
fn random_corruption_never_panics() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for obj in [MULTI14, MULTI19, MAPS19] {
        let clean = relocated_btf(obj);
        for _ in 0..3000 {
            let mut data = clean.clone();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(data.len());
                data[i] ^= 1 << rng.below(8);
            }
            // Occasionally smash a whole word to reach big values.
            if rng.below(4) == 0 {
                let i = rng.below(data.len() - 4);
                data[i..i + 4].copy_from_slice(&(rng.next() as u32).to_le_bytes());
            }
            if let Ok(btf) = parse(&data) {
                exercise(&btf);
            }
        }
    }
}

/// Builds a `.BTF` section from raw type words and a string table.
fn build(types: &[u32], strings: &[u8]) -> Vec<u8> {
    let type_len = types.len() as u32 * 4;
    let mut out = Vec::new();
    out.extend_from_slice(&BTF_MAGIC.to_le_bytes());
    out.extend_from_slice(&[1, 0]);
    for v in [24, 0, type_len, type_len, strings.len() as u32] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    types
        .iter()
        .for_each(|w| out.extend_from_slice(&w.to_le_bytes()));
    out.extend_from_slice(strings);
    out
}

const fn info(kind: u32, vlen: u32) -> u32 {
    kind << 24 | vlen
}

#[test]
fn typedef_cycle_is_too_deep() {
    // [1] typedef a -> [2], [2] typedef b -> [1]
    let data = build(&[1, info(8, 0), 2, 3, info(8, 0), 1], b"\0a\0b\0");
    let btf = parse(&data).unwrap();
    assert!(matches!(
        btf.resolve_size(1),
        Err(BtfError::TooDeep { type_id: 1, .. })
    ));
    assert!(matches!(
        btf.skip_modifiers(2),
        Err(BtfError::TooDeep { type_id: 2, .. })
    ));
}

#[test]
fn array_size_overflow() {
    // [1] int size 8, [2] array of [1] x 0x8000_0000
    let data = build(
        &[1, info(1, 0), 8, 64, 0, info(3, 0), 0, 1, 1, 0x8000_0000],
        b"\0long\0",
    );
    let btf = parse(&data).unwrap();
    assert!(matches!(
        btf.resolve_size(2),
        Err(BtfError::SizeOverflow { type_id: 2, .. })
    ));
    assert_eq!(btf.resolve_size(1), Ok(8));
    assert!(matches!(
        btf.resolve_size(0),
        Err(BtfError::Unsized { kind: "void", .. })
    ));
}

#[test]
fn structural_errors_name_the_offset() {
    // Unknown kind 20 in the first type, at 24 + 0.
    let data = build(&[0, info(20, 0), 0], b"\0");
    assert_eq!(
        parse(&data).unwrap_err(),
        BtfError::UnknownKind {
            section: ".BTF",
            offset: 24,
            type_id: 1,
            kind: 20
        }
    );
    // A pointer to type 7 when only 1 type exists.
    let data = build(&[0, info(2, 0), 7], b"\0");
    assert!(matches!(
        parse(&data).unwrap_err(),
        BtfError::BadTypeRef {
            offset: 24,
            target: 7,
            ..
        }
    ));
    // A name offset past the string table.
    let data = build(&[40, info(2, 0), 0], b"\0");
    assert!(matches!(
        parse(&data).unwrap_err(),
        BtfError::BadString {
            offset: 24,
            str_off: 40,
            ..
        }
    ));
    // A struct whose vlen runs past the type section.
    let data = build(&[0, info(4, 1000), 8], b"\0");
    let err = parse(&data).unwrap_err();
    assert!(
        matches!(err, BtfError::Truncated { offset: 36, .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with(".BTF+0x24: truncated"), "{err}");
    // A string table that does not end with NUL.
    let data = build(&[], b"\0ab");
    assert!(matches!(
        parse(&data).unwrap_err(),
        BtfError::BadStringTable { .. }
    ));
    // Version 2.
    let mut data = build(&[], b"\0");
    data[2] = 2;
    assert!(matches!(
        parse(&data).unwrap_err(),
        BtfError::UnsupportedVersion { version: 2, .. }
    ));
}

#[test]
fn relocation_out_of_bounds() {
    let mut data = vec![0u8; 8];
    let err = apply_relocations(
        BTF_SECTION,
        &mut data,
        &[BtfReloc {
            offset: 6,
            symbol_value: 1,
        }],
    )
    .unwrap_err();
    assert!(matches!(err, BtfError::BadRelocation { offset: 6, .. }));
    let err = apply_relocations(
        BTF_SECTION,
        &mut data,
        &[BtfReloc {
            offset: 0,
            symbol_value: u64::from(u32::MAX) + 1,
        }],
    )
    .unwrap_err();
    assert!(matches!(err, BtfError::BadRelocation { offset: 0, .. }));
}

/// Map fields (`Map::fields`) come from BTF: global data's variables with their array
/// shapes, a struct value's members, an array value as one unnamed field.
#[test]
fn map_fields_name_variables_members_and_arrays() {
    use crate::program::{ArrayShape, Field};
    let obj = crate::front::load_bytes("multi.clang19.o", MULTI19).unwrap();
    let by_name = |n: &str| obj.maps.iter().find(|m| m.name == n).unwrap();
    let bss = by_name(".bss");
    assert_eq!(
        bss.fields[0],
        Field {
            name: "zeroed".into(),
            offset: 0,
            size: 32,
            array: Some(ArrayShape {
                elem_size: 8,
                len: 4
            }),
        }
    );
    let rodata = by_name(".rodata");
    let names: Vec<_> = rodata
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.size, f.array.map(|a| a.len)))
        .collect();
    assert_eq!(names, [("threshold", 0, 8, None), ("msg", 8, 10, Some(10))]);
    assert_eq!(rodata.field_at(9).map(|f| f.name.as_str()), Some("msg"));
    assert_eq!(rodata.field_at(18), None);
    let events = by_name("events");
    let members: Vec<_> = events
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.offset, f.size))
        .collect();
    assert_eq!(
        members,
        [
            ("ts", 0, 8),
            ("pid", 8, 4),
            ("cpu", 12, 4),
            ("comm", 16, 16)
        ]
    );
    // `counters` gives sizes, not types: nothing to name.
    assert!(by_name("counters").fields.is_empty());

    // maps.clang19.o does not load (it has malformed maps on purpose): its BTF does.
    let btf = btf(MAPS19);
    let typed = map(&btf, "typed").unwrap();
    assert_eq!(
        crate::front::elf::maps::value_fields(&btf, typed.value_type_id.unwrap()),
        [Field {
            name: String::new(),
            offset: 0,
            size: 48,
            array: Some(ArrayShape {
                elem_size: 16,
                len: 3
            }),
        }]
    );
}
