//! Each layout of specs/abi.md built byte by byte, then decoded.

use super::*;
use bpf2ptx_compiler::program::MapOrigin;
use bpf2ptx_runtime::maps::Count;

fn map(kind: MapKind, key_size: u32, value_size: u32, max_entries: u32) -> Map {
    Map {
        name: "m".into(),
        origin: MapOrigin::Btf,
        section: ".maps".into(),
        map_type: kind.id(),
        key_size,
        value_size,
        max_entries,
        flags: 0,
        btf_key_type: None,
        btf_value_type: None,
        init: None,
        iproute2: None,
        inner: None,
        slots: Vec::new(),
        fields: Vec::new(),
    }
}

/// A descriptor with `data` (non-zero: bound), `aux`, `aux2` and `drops`.
fn descriptor(m: &Map, data: u64, aux: u64, aux2: u64, drops: u64) -> Vec<u8> {
    let mut d = vec![0u8; desc::BYTES as usize];
    let mut put = |off: u64, v: &[u8]| d[off as usize..off as usize + v.len()].copy_from_slice(v);
    put(
        desc::MAP_TYPE,
        &m.kind().unwrap().layout().id().to_le_bytes(),
    );
    put(desc::KEY_SIZE, &m.key_size.to_le_bytes());
    put(desc::VALUE_SIZE, &m.value_size.to_le_bytes());
    put(desc::MAX_ENTRIES, &m.max_entries.to_le_bytes());
    for (off, v) in [
        (desc::DATA, data),
        (desc::AUX, aux),
        (desc::AUX2, aux2),
        (desc::DROPS, drops),
    ] {
        put(off, &v.to_le_bytes());
    }
    d
}

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn raw<'a>(d: &'a [u8], storage: &'a [u8]) -> RawMap<'a> {
    RawMap {
        desc: d,
        storage,
        counts: None,
        ring: None,
    }
}

#[test]
fn sharded_array_sums_replicas_by_words() {
    let m = map(MapKind::Array, 4, 4, 3);
    let replica = maps::replica_bytes(3, 4);
    let d = descriptor(&m, 0x1000, 4, replica, 0);
    assert_eq!(storage_bytes(&m, &d), 3 * replica + 3 * 8);
    let mut s = vec![0u8; storage_bytes(&m, &d) as usize];
    for r in 0..4 {
        put_u64(&mut s, (r * replica) as usize + 8, r + 1); // key 1
    }
    put_u64(&mut s, (3 * replica) as usize + 16, 7); // key 2, last replica
    let img = decode(&m, &raw(&d, &s)).unwrap();
    let MapData::Array { values, sharded } = img.data else {
        panic!("{:?}", img.data)
    };
    assert_eq!(sharded, Some(4));
    assert_eq!(
        values,
        vec![
            vec![0; 4],
            10u32.to_le_bytes().to_vec(),
            7u32.to_le_bytes().to_vec()
        ]
    );
}

#[test]
fn percpu_array_keeps_each_sm() {
    let m = map(MapKind::PercpuArray, 4, 8, 2);
    let replica = maps::replica_bytes(2, 8);
    let d = descriptor(&m, 0x1000, 2, replica, 0);
    let mut s = vec![0u8; storage_bytes(&m, &d) as usize];
    put_u64(&mut s, replica as usize + 8, 5); // SM 1, key 1
    let img = decode(&m, &raw(&d, &s)).unwrap();
    let MapData::PerSm(c) = img.data else {
        panic!()
    };
    assert_eq!((c.keys(), c.copies()), (2, 2));
    assert_eq!(c.get(1, 1), 5u64.to_le_bytes());
    assert_eq!(c.get(1, 0), [0; 8]);
    assert_eq!(c.sum(1), 5u64.to_le_bytes());
}

#[test]
fn per_unit_arrays_keep_each_unit_and_sum_without_losing_carries() {
    for (kind, unit) in [
        (MapKind::PerThreadArray, Unit::Thread),
        (MapKind::PerThreadArrayHost, Unit::Thread),
        (MapKind::PerWarpArray, Unit::Warp),
    ] {
        let m = map(kind, 4, 4, 2);
        let d = descriptor(&m, 0x1000, 3, 0, 0);
        assert_eq!(storage_bytes(&m, &d), 2 * 3 * 8);
        let mut s = vec![0u8; 48];
        for t in 0..3 {
            put_u64(&mut s, (3 + t) * 8, u64::from(u32::MAX)); // key 1, unit t
        }
        let img = decode(&m, &raw(&d, &s)).unwrap();
        let MapData::PerUnit { unit: u, values } = img.data else {
            panic!()
        };
        assert_eq!(u, unit);
        assert_eq!(values.get(1, 2), u32::MAX.to_le_bytes());
        assert_eq!(values.sum(1), (3 * u64::from(u32::MAX)).to_le_bytes());
    }
}

#[test]
fn hash_map_gives_live_slots_and_summed_counts() {
    for kind in [MapKind::Hash, MapKind::GpuHash, MapKind::LruHash] {
        let m = map(kind, 4, 8, 4);
        let slots = maps::hash_slots(4);
        let slot = maps::hash_slot_size(4, 8) as usize;
        let d = descriptor(&m, 0x1000, slots, 0x2000, 0);
        let mut s = vec![0u8; storage_bytes(&m, &d) as usize];
        assert_eq!(s.len(), slots as usize * slot);
        for (i, state, key, value) in [
            (0, maps::SLOT_FULL, 7u32, 70u64),
            (1, maps::SLOT_BUSY, 8, 80),
            (5, maps::SLOT_HELD, 9, 90),
        ] {
            s[i * slot..i * slot + 4].copy_from_slice(&state.to_le_bytes());
            s[i * slot + 8..i * slot + 12].copy_from_slice(&key.to_le_bytes());
            put_u64(&mut s, i * slot + 16, value);
        }
        let mut block = vec![0u8; maps::COUNTS_BYTES as usize];
        put_u64(&mut block, 0, 2);
        put_u64(&mut block, Count::Full.offset(0) as usize, 3);
        put_u64(&mut block, Count::Full.offset(31) as usize, 1);
        put_u64(&mut block, Count::Evicted.offset(4) as usize, 6);
        let r = RawMap {
            counts: Some(&block),
            ..raw(&d, &s)
        };
        let img = decode(&m, &r).unwrap();
        assert_eq!(img.keys, Some(2));
        assert_eq!(
            img.counts,
            MapCounts {
                full: 4,
                evicted: 6,
                ..MapCounts::default()
            }
        );
        let MapData::Hash { entries } = img.data else {
            panic!()
        };
        assert_eq!(
            entries,
            vec![
                (7u32.to_le_bytes().to_vec(), 70u64.to_le_bytes().to_vec()),
                (9u32.to_le_bytes().to_vec(), 90u64.to_le_bytes().to_vec()),
            ]
        );
    }
}

#[test]
fn ring_records_follow_those_taken_before() {
    let m = map(MapKind::Ringbuf, 0, 0, 4096);
    let d = descriptor(&m, 0x1000, 4096, 0x2000, 3);
    let mut s = vec![0u8; 4096];
    // One committed record of 4 bytes at position 16 (the consumer).
    s[16..20].copy_from_slice(&4u32.to_le_bytes());
    s[24..28].copy_from_slice(b"abcd");
    let taken = [Record {
        offset: 0,
        data: b"xy".to_vec(),
    }];
    let r = RawMap {
        ring: Some(RawRing {
            counters: [32, 16],
            taken: &taken,
            taken_error: None,
        }),
        ..raw(&d, &s)
    };
    let img = decode(&m, &r).unwrap();
    assert_eq!(img.counts.dropped, 3);
    let MapData::Ring {
        records,
        producer,
        error,
    } = img.data
    else {
        panic!()
    };
    assert_eq!((producer, error), (32, None));
    let data: Vec<&[u8]> = records.iter().map(|r| &r.data[..]).collect();
    assert_eq!(data, [&b"xy"[..], b"abcd"]);

    // A ring a reader already failed on is not decoded again; bad counters are an error
    // of the ring, not of the image.
    let e = RingError::Positions {
        producer: 0,
        consumer: 8,
    };
    let r = RawMap {
        ring: Some(RawRing {
            counters: [32, 16],
            taken: &[],
            taken_error: Some(&e),
        }),
        ..raw(&d, &s)
    };
    let MapData::Ring { records, error, .. } = decode(&m, &r).unwrap().data else {
        panic!()
    };
    assert_eq!((records.len(), error), (0, Some(e)));
    let r = RawMap {
        ring: Some(RawRing {
            counters: [8, 16],
            taken: &[],
            taken_error: None,
        }),
        ..raw(&d, &s)
    };
    let MapData::Ring { error, .. } = decode(&m, &r).unwrap().data else {
        panic!()
    };
    assert!(matches!(error, Some(RingError::Positions { .. })));
}

#[test]
fn unbound_maps_need_no_storage_and_short_inputs_are_errors() {
    let m = map(MapKind::Array, 4, 8, 4);
    let d = descriptor(&m, 0, 0, 0, 0);
    assert_eq!(storage_bytes(&m, &d), 0);
    assert_eq!(decode(&m, &raw(&d, &[])).unwrap().data, MapData::Unbound);
    assert_eq!(
        decode(&m, &raw(&d[..40], &[])),
        Err(ImageError::Descriptor {
            map: "m".into(),
            len: 40
        })
    );
    let d = descriptor(&m, 0x1000, 0, 0, 0);
    assert_eq!(
        decode(&m, &raw(&d, &[0; 8])),
        Err(ImageError::Storage {
            map: "m".into(),
            len: 8,
            need: 32
        })
    );
    let h = map(MapKind::Hash, 4, 4, 1);
    let d = descriptor(&h, 0x1000, 2, 0x2000, 0);
    let r = RawMap {
        counts: Some(&[0; 8]),
        ..raw(&d, &[0; 64])
    };
    assert!(matches!(
        decode(&h, &r),
        Err(ImageError::Counts { len: 8, .. })
    ));
    let ring = map(MapKind::GpuRingbuf, 0, 0, 4096);
    let d = descriptor(&ring, 0x1000, 4096, 0x2000, 0);
    assert_eq!(
        decode(&ring, &raw(&d, &[0; 4096])),
        Err(ImageError::RingCounters { map: "m".into() })
    );
}
