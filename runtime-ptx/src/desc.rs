//! The map descriptor's layout, in one place: the byte offset of every field.
//!
//! Every map of an object other than global data has a descriptor of [`WORDS`] 64-bit
//! words ([`BYTES`] bytes) in the module, `bpf2ptx_map_<name>[8]` (specs/abi.md, "Maps
//! (device runtime)"). The backend writes its initial value, the device runtime
//! ([`crate::maps`], [`crate::ringbuf`]) and the inlined helpers read it, and the host
//! loader binds and reads its words. The constants are byte offsets from the descriptor's
//! start; [`word`] gives a 64-bit field's word index.
//!
//! ```text
//! +0  u32 map type     +4  u32 map flags
//! +8  u32 key size     +12 u32 value size
//! +16 u32 max entries  +20 u32 value stride (value size rounded up to 8)
//! +24 u64 data         +32 u64 aux          +40 u64 aux2   +48 u64 drops   +56 bound
//! ```
//!
//! The hand-written PTX of the runtime addresses the fields with these offsets written
//! out (`[%rd1+24]`); a test checks that every descriptor access there is at one of
//! [`FIELDS`].

/// 64-bit words of a descriptor.
pub const WORDS: usize = 8;
/// Bytes of a descriptor.
pub const BYTES: u64 = WORDS as u64 * 8;

/// u32, word 0 low: the map type id ([`crate::MapKind::id`]).
pub const MAP_TYPE: u64 = 0;
/// u32, word 0 high: the map flags (`BPF_F_*`).
pub const MAP_FLAGS: u64 = 4;
/// u32, word 1 low: key size in bytes.
pub const KEY_SIZE: u64 = 8;
/// u32, word 1 high: value size in bytes.
pub const VALUE_SIZE: u64 = 12;
/// u32, word 2 low: max entries.
pub const MAX_ENTRIES: u64 = 16;
/// u32, word 2 high: value stride, the value size rounded up to 8.
pub const VALUE_STRIDE: u64 = 20;
/// u64, word 3: `data`, the generic address of the map's storage (a ring's record bytes);
/// 0 when not bound (lookups return NULL, updates -EINVAL). The host loader rebinds it for
/// host placement and for per-thread and per-warp arrays.
pub const DATA: u64 = 24;
/// u64, word 4: `aux`. Hash maps: the number of slots (a power of two); sharded arrays
/// and per-CPU arrays: the number of replicas; per-thread and per-warp arrays: the
/// threads (warps) the storage was sized for, bound by the loader at launch; rings: the
/// data bytes (a power of two); 0 otherwise.
pub const AUX: u64 = 32;
/// u64, word 5: `aux2`. Rings: the generic address of the two u64 counters `[producer,
/// consumer]`; hash maps: the generic address of the counts block
/// ([`crate::maps::COUNTS_BYTES`]); sharded arrays: bytes from one replica to the next;
/// 0 otherwise.
pub const AUX2: u64 = 40;
/// u64, word 6: `drops`, records a full ring dropped (0 for other kinds).
pub const DROPS: u64 = 48;
/// u64, word 7: rings: the bound, the producer plus the bytes claimed by reservations in
/// flight (equal to the producer when none runs); reserved (0) for other kinds.
pub const BOUND: u64 = 56;

/// Every field, as (byte offset, name, width in bytes), in address order.
pub const FIELDS: [(u64, &str, u64); 11] = [
    (MAP_TYPE, "map type", 4),
    (MAP_FLAGS, "map flags", 4),
    (KEY_SIZE, "key size", 4),
    (VALUE_SIZE, "value size", 4),
    (MAX_ENTRIES, "max entries", 4),
    (VALUE_STRIDE, "value stride", 4),
    (DATA, "data", 8),
    (AUX, "aux", 8),
    (AUX2, "aux2", 8),
    (DROPS, "drops", 8),
    (BOUND, "bound", 8),
];

/// The word index of the 64-bit field at byte `offset` (`word(DATA) == 3`).
pub const fn word(offset: u64) -> usize {
    assert!(
        offset.is_multiple_of(8) && offset < BYTES,
        "not a 64-bit descriptor field"
    );
    (offset / 8) as usize
}

/// The u64 field at byte `offset` of `desc`, a descriptor read back as bytes (little
/// endian); 0 when `desc` is too short.
pub fn read(desc: &[u8], offset: u64) -> u64 {
    let at = offset as usize;
    desc.get(at..at + 8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_tile_the_descriptor() {
        let mut at = 0;
        for (off, name, width) in FIELDS {
            assert_eq!(off, at, "{name}");
            assert!(off.is_multiple_of(width), "{name} is aligned");
            at += width;
        }
        assert_eq!(at, BYTES);
        assert_eq!(
            [word(DATA), word(AUX), word(AUX2), word(DROPS), word(BOUND)],
            [3, 4, 5, 6, 7]
        );
        let mut d = [0u8; BYTES as usize];
        d[AUX2 as usize..][..8].copy_from_slice(&7u64.to_le_bytes());
        assert_eq!(
            (read(&d, AUX2), read(&d, AUX), read(&d[..40], AUX2)),
            (7, 0, 0)
        );
    }

    /// The descriptor offsets written out in a PTX text: `[%rdN+K]` for every register
    /// the text loads a `desc` parameter into (`ld.param.b64 %rdN, [desc];`).
    fn desc_accesses(text: &str) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        // Per function: the registers holding the descriptor, then their accesses.
        for func in text.split("\n.func ").skip(1) {
            let regs: Vec<&str> = func
                .lines()
                .filter_map(|l| {
                    let l = l.trim();
                    let rest = l.strip_prefix("ld.param.b64 ")?;
                    let (reg, src) = rest.split_once(", ")?;
                    (src == "[desc];").then_some(reg)
                })
                .collect();
            for line in func.lines() {
                for reg in &regs {
                    let pat = format!("[{reg}+");
                    let mut rest = line;
                    while let Some(i) = rest.find(&pat) {
                        rest = &rest[i + pat.len()..];
                        let end = rest.find(']').expect("closing bracket");
                        let off = rest[..end].parse().expect("a decimal offset");
                        out.push((off, line.trim().to_string()));
                    }
                    // A plain `[%rdN]` is word 0 (type and flags).
                    if line.contains(&format!("[{reg}]")) {
                        out.push((MAP_TYPE, line.trim().to_string()));
                    }
                }
            }
        }
        out
    }

    /// The bits an instruction moves: its type suffix (`ld.u32`: 32, `ld.v2.b32`: 64).
    fn access_bits(line: &str) -> u64 {
        let op = line
            .split_whitespace()
            .find(|t| !t.starts_with('@'))
            .expect("an opcode");
        let ty = op.rsplit('.').next().expect("a type suffix");
        let bits: u64 = ty[1..]
            .parse()
            .unwrap_or_else(|_| panic!("type of `{line}`"));
        let lanes = if op.contains(".v2.") {
            2
        } else if op.contains(".v4.") {
            4
        } else {
            1
        };
        bits * lanes
    }

    /// Every descriptor access of the hand-written PTX is at a field of [`FIELDS`], with
    /// the field's width, so a moved field or a stray offset fails here.
    #[test]
    fn ptx_templates_use_the_layout() {
        for (what, text) in [
            ("maps", crate::maps::functions()),
            ("ringbuf", crate::ringbuf::functions().to_string()),
        ] {
            let acc = desc_accesses(&text);
            assert!(acc.len() >= 10, "{what}: {} descriptor accesses", acc.len());
            let mut seen = std::collections::BTreeSet::new();
            for (off, line) in &acc {
                let Some((_, name, width)) = FIELDS.iter().find(|f| f.0 == *off) else {
                    panic!("{what}: `{line}` reads descriptor byte {off}, not a field");
                };
                // The access covers whole fields: it starts at one (checked above) and
                // ends where one ends.
                let end = off + access_bits(line) / 8;
                assert!(
                    FIELDS.iter().any(|f| f.0 + f.2 == end) && end <= off + 8,
                    "{what}: `{line}` accesses {name} ({width} bytes) at the wrong width"
                );
                seen.insert(*off);
            }
            // The fields each text needs are all read somewhere.
            let need: &[u64] = if what == "maps" {
                &[KEY_SIZE, VALUE_STRIDE, DATA, AUX, AUX2]
            } else {
                &[DATA, AUX, AUX2, DROPS, BOUND]
            };
            for off in need {
                assert!(seen.contains(off), "{what}: no access at {off}");
            }
        }
    }
}
