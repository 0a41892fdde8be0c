//! Decoding a map's raw bytes into what it holds: [`MapImage`]. No GPU here.
//!
//! A host reads a map back as raw bytes: its 64-byte descriptor, the storage the
//! descriptor's `data` word points at, a hash map's counts block and a ring's
//! `[producer, consumer]` counters (specs/abi.md, "Maps (device runtime)"). Two readers
//! do that: `bpf2ptx run`, through the CUDA driver after its kernel
//! ([`crate::loader::Loader::maps_json`]), and `bpf2ptx trace`, whose interposer copies
//! the same bytes out of a running application into a snapshot file. Both hand them to
//! [`decode`], so the layouts are interpreted in one place:
//!
//! ```text
//!  descriptor (8 words) ─┐
//!  storage bytes ────────┤  storage_bytes(map, desc): how many to copy
//!  counts block ─────────┼─▶ decode(map, raw) ─▶ MapImage { counts, keys, data }
//!  ring counters ────────┘                         data: Array | PerSm | PerUnit |
//!                                                        Hash | Ring | Unbound | Other
//! ```
//!
//! What is summed and what is kept apart follows what a copy means: a sharded array's
//! replicas exist only to spread atomic adds over cache lines, so they are summed (by u64
//! words, as the device only added to them); a per-CPU array's replicas are the SMs' own
//! values, and per-thread and per-warp arrays hold one value per unit, so those are kept
//! per copy ([`Copies`]) and the reader chooses to sum ([`Copies::sum`]) or not.
//!
//! Descriptor offsets come from [`bpf2ptx_runtime::desc`], map classes from the
//! [`MapKind`] predicates and slot states from [`bpf2ptx_runtime::maps`]: nothing here
//! writes an offset or a type id of its own.

use bpf2ptx_compiler::program::Map;
use bpf2ptx_runtime::ringbuf::{self, Record, RingError};
use bpf2ptx_runtime::{desc, maps, MapKind};
use thiserror::Error;

/// What a map's operations did other than what the program asked, by reason: nothing a
/// probe does is lost without being counted here (specs/abi.md, "Hash maps" and the
/// ringbuf bullet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapCounts {
    /// Hash maps: insertions refused because the map held `max_entries` keys (-E2BIG).
    pub full: u64,
    /// Hash maps: operations that gave up waiting for a lock or a slot (-EBUSY).
    pub busy: u64,
    /// LRU hash maps: entries evicted to make room (what the map did instead of refusing).
    pub evicted: u64,
    /// Rings: records dropped because the ring had no room.
    pub dropped: u64,
}

impl std::fmt::Display for MapCounts {
    /// `3 refused (full), 2 dropped`: the non-zero counts, for a line on stderr.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts = [
            (self.full, "refused (full)"),
            (self.busy, "gave up waiting (busy)"),
            (self.evicted, "evicted (LRU)"),
            (self.dropped, "dropped (ring full)"),
        ];
        let text: Vec<String> = parts
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        f.write_str(&text.join(", "))
    }
}

/// The raw bytes of one map, as a host copied them.
#[derive(Clone, Copy, Debug)]
pub struct RawMap<'a> {
    /// The descriptor's [`desc::BYTES`] bytes.
    pub desc: &'a [u8],
    /// The bytes at the descriptor's `data` word, at least [`storage_bytes`] of them
    /// (ignored when `data` is 0: the map is not bound).
    pub storage: &'a [u8],
    /// A hash map's counts block ([`maps::COUNTS_BYTES`] bytes at word 5), when word 5 is
    /// not 0; `None` otherwise.
    pub counts: Option<&'a [u8]>,
    /// A ring's reading state; `None` for other kinds.
    pub ring: Option<RawRing<'a>>,
}

/// A ring's counters and what a reader already took from it.
#[derive(Clone, Copy, Debug)]
pub struct RawRing<'a> {
    /// The two u64 counters at word 5: `[producer, consumer]`.
    pub counters: [u64; 2],
    /// Records a reader already took from the ring (before `consumer`), which come before
    /// those still between `consumer` and `producer`: a live drainer moves records out
    /// of the ring as they come, and they are part of what the map delivered.
    pub taken: &'a [Record],
    /// Why that reader stopped, if the ring did not decode: the storage is then not
    /// decoded again.
    pub taken_error: Option<&'a RingError>,
}

/// Why raw bytes do not decode as the map they are said to be.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ImageError {
    /// The descriptor is shorter than [`desc::BYTES`].
    #[error("map `{map}`: descriptor of {len} bytes, {} expected", desc::BYTES)]
    Descriptor {
        /// The map.
        map: String,
        /// Bytes given.
        len: usize,
    },
    /// Fewer storage bytes than the descriptor says the map has.
    #[error("map `{map}`: {len} storage bytes, its descriptor needs {need}")]
    Storage {
        /// The map.
        map: String,
        /// Bytes given.
        len: usize,
        /// Bytes the layout needs ([`storage_bytes`]).
        need: u64,
    },
    /// A counts block shorter than [`maps::COUNTS_BYTES`].
    #[error(
        "map `{map}`: counts block of {len} bytes, {} expected",
        maps::COUNTS_BYTES
    )]
    Counts {
        /// The map.
        map: String,
        /// Bytes given.
        len: usize,
    },
    /// A bound ring without its counters.
    #[error("map `{map}`: a bound ring needs its [producer, consumer] counters")]
    RingCounters {
        /// The map.
        map: String,
    },
}

/// One map's contents, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapImage {
    /// What a map's operations lost or did instead, by reason.
    pub counts: MapCounts,
    /// Hash maps with a counts block: the `count` word (keys plus insertions in progress).
    pub keys: Option<u64>,
    /// The contents.
    pub data: MapData,
}

/// The unit a per-unit array keeps a value for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Per-thread arrays (1502, 1512).
    Thread,
    /// Per-warp arrays (1600).
    Warp,
}

impl Unit {
    /// `thread` or `warp`.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Thread => "thread",
            Unit::Warp => "warp",
        }
    }
}

/// What a map holds, by layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapData {
    /// Descriptor word 3 is 0: nothing to read.
    Unbound,
    /// An array (2, 1503, 1504, 1513, or a per-CPU array kept as one copy): the value of
    /// key `i` at index `i`, `value_size` bytes each.
    Array {
        /// The values, in key order; a sharded array's replicas summed by u64 words.
        values: Vec<Vec<u8>>,
        /// The replicas summed (descriptor word 4) when the array is sharded.
        sharded: Option<u64>,
    },
    /// A per-CPU array (6): one copy per SM replica (`smid & (replicas - 1)`).
    PerSm(Copies),
    /// A per-thread or per-warp array: one copy per unit of the launch the storage was
    /// sized for (descriptor word 4).
    PerUnit {
        /// Threads or warps.
        unit: Unit,
        /// The values.
        values: Copies,
    },
    /// A hash map: the keys of the slots that hold a live key, in slot order.
    Hash {
        /// `(key, value)`, `key_size` and `value_size` bytes.
        entries: Vec<(Vec<u8>, Vec<u8>)>,
    },
    /// A ring: its committed records.
    Ring {
        /// The records taken before ([`RawRing::taken`]) then those still in the ring.
        records: Vec<Record>,
        /// The producer position.
        producer: u64,
        /// Why decoding stopped, if the ring did not decode.
        error: Option<RingError>,
    },
    /// A kind with no GPU layout: nothing decoded.
    Other,
}

/// Several copies of every value of an array: per key, one value per copy (SM, thread or
/// warp), `value_size` bytes each, key-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Copies {
    keys: usize,
    copies: usize,
    value_size: usize,
    bytes: Vec<u8>,
}

impl Copies {
    /// The number of keys (`max_entries`).
    pub fn keys(&self) -> usize {
        self.keys
    }

    /// The copies each key has.
    pub fn copies(&self) -> usize {
        self.copies
    }

    /// Key `key`'s value in copy `copy`.
    pub fn get(&self, key: usize, copy: usize) -> &[u8] {
        let at = (key * self.copies + copy) * self.value_size;
        &self.bytes[at..at + self.value_size]
    }

    /// Key `key`'s copies summed by little-endian u64 words (the value padded with zeros
    /// to whole words), the same sum as a sharded array's replicas. Its length is the
    /// value size rounded up to 8, so a 4-byte counter's sum keeps its carries.
    pub fn sum(&self, key: usize) -> Vec<u8> {
        let mut sum = vec![0u8; maps::round8(self.value_size as u64) as usize];
        for c in 0..self.copies {
            add_words(&mut sum, self.get(key, c));
        }
        sum
    }
}

/// Adds `v` (padded with zeros) to `acc` word by word, as u64 with wrap-around.
fn add_words(acc: &mut [u8], v: &[u8]) {
    for (k, w) in acc.chunks_exact_mut(8).enumerate() {
        let mut o = [0u8; 8];
        let part = v.get(8 * k..).unwrap_or(&[]);
        let n = part.len().min(8);
        o[..n].copy_from_slice(&part[..n]);
        let s =
            u64::from_le_bytes(w.try_into().expect("8 bytes")).wrapping_add(u64::from_le_bytes(o));
        w.copy_from_slice(&s.to_le_bytes());
    }
}

fn stride(m: &Map) -> usize {
    maps::round8(u64::from(m.value_size)) as usize
}

/// The storage bytes map `m` has under descriptor `desc` (from its `data` word on): what
/// a host copies for [`decode`]. 0 for a map that is not bound or has no GPU layout.
/// Sharded arrays span `aux` replicas of `aux2` bytes (the last one only up to its
/// values), per-unit arrays `aux` units per key, hash maps `aux` slots (an LRU map's
/// stamps are not read), rings `aux` bytes.
pub fn storage_bytes(m: &Map, desc_bytes: &[u8]) -> u64 {
    let (data, aux, aux2) = (
        desc::read(desc_bytes, desc::DATA),
        desc::read(desc_bytes, desc::AUX),
        desc::read(desc_bytes, desc::AUX2),
    );
    let (n, stride) = (u64::from(m.max_entries), stride(m) as u64);
    match m.kind() {
        _ if data == 0 => 0,
        Some(k) if k.is_array_like() && aux > 0 => aux2 * (aux - 1) + n * stride,
        Some(k) if k.is_array_like() => n * stride,
        Some(k) if k.is_per_unit() => n * aux * stride,
        Some(k) if k.is_hash() => aux * maps::hash_slot_size(m.key_size, m.value_size),
        Some(k) if k.is_ring() => aux,
        _ => 0,
    }
}

/// A map's counts from its descriptor and counts block: a ring's drops (word 6), a hash
/// map's key count and refusals (the counts block's shards summed). The key count is
/// `None` for other kinds and for a hash map without a counts block.
pub fn counts(m: &Map, desc_bytes: &[u8], block: Option<&[u8]>) -> (Option<u64>, MapCounts) {
    let mut c = MapCounts {
        dropped: desc::read(desc_bytes, desc::DROPS),
        ..MapCounts::default()
    };
    let Some(block) = block.filter(|_| m.is(MapKind::is_hash)) else {
        return (None, c);
    };
    let (keys, [full, busy, evicted]) = maps::read_counts(block);
    (c.full, c.busy, c.evicted) = (full, busy, evicted);
    (Some(keys), c)
}

/// Decodes map `m` from its raw bytes (module docs).
pub fn decode(m: &Map, raw: &RawMap<'_>) -> Result<MapImage, ImageError> {
    let err_map = || m.name.clone();
    if raw.desc.len() < desc::BYTES as usize {
        return Err(ImageError::Descriptor {
            map: err_map(),
            len: raw.desc.len(),
        });
    }
    if let Some(b) = raw.counts {
        if b.len() < maps::COUNTS_BYTES as usize {
            return Err(ImageError::Counts {
                map: err_map(),
                len: b.len(),
            });
        }
    }
    let (keys, counts) = counts(m, raw.desc, raw.counts);
    let need = storage_bytes(m, raw.desc);
    if (raw.storage.len() as u64) < need {
        return Err(ImageError::Storage {
            map: err_map(),
            len: raw.storage.len(),
            need,
        });
    }
    let image = |data| MapImage { counts, keys, data };
    let (data, aux, aux2) = (
        desc::read(raw.desc, desc::DATA),
        desc::read(raw.desc, desc::AUX),
        desc::read(raw.desc, desc::AUX2),
    );
    if data == 0 {
        return Ok(image(MapData::Unbound));
    }
    let bytes = raw.storage;
    let (n, stride, vsize) = (m.max_entries as usize, stride(m), m.value_size as usize);
    let data = match m.kind() {
        Some(kind) if kind.is_array_like() => {
            let replicas = (aux as usize).max(1);
            let replica = if aux > 0 { aux2 as usize } else { n * stride };
            if kind == MapKind::PercpuArray && aux > 0 {
                // Replica-major in memory; key-major in the image.
                let mut out = Vec::with_capacity(n * replicas * vsize);
                for key in 0..n {
                    for r in 0..replicas {
                        let at = r * replica + key * stride;
                        out.extend_from_slice(&bytes[at..at + vsize]);
                    }
                }
                MapData::PerSm(Copies {
                    keys: n,
                    copies: replicas,
                    value_size: vsize,
                    bytes: out,
                })
            } else {
                let values = (0..n)
                    .map(|key| {
                        let mut v = vec![0u8; stride];
                        for r in 0..replicas {
                            let at = r * replica + key * stride;
                            add_words(&mut v, &bytes[at..at + stride]);
                        }
                        v.truncate(vsize);
                        v
                    })
                    .collect();
                MapData::Array {
                    values,
                    sharded: (aux > 0).then_some(aux),
                }
            }
        }
        Some(kind) if kind.is_per_unit() => {
            let units = aux as usize;
            let mut out = Vec::with_capacity(n * units * vsize);
            for slot in bytes[..n * units * stride].chunks_exact(stride) {
                out.extend_from_slice(&slot[..vsize]);
            }
            MapData::PerUnit {
                unit: if kind.layout() == MapKind::PerThreadArray {
                    Unit::Thread
                } else {
                    Unit::Warp
                },
                values: Copies {
                    keys: n,
                    copies: units,
                    value_size: vsize,
                    bytes: out,
                },
            }
        }
        Some(kind) if kind.is_hash() => {
            let key8 = maps::round8(u64::from(m.key_size)) as usize;
            let slot = maps::hash_slot_size(m.key_size, m.value_size) as usize;
            let live = |s: &&[u8]| {
                let state = u32::from_le_bytes(s[..4].try_into().expect("4 bytes"));
                state == maps::SLOT_FULL || state == maps::SLOT_HELD
            };
            let entries = bytes[..aux as usize * slot]
                .chunks_exact(slot)
                .filter(live)
                .map(|s| {
                    let key = s[8..8 + m.key_size as usize].to_vec();
                    (key, s[8 + key8..8 + key8 + vsize].to_vec())
                })
                .collect();
            MapData::Hash { entries }
        }
        Some(kind) if kind.is_ring() => {
            let ring = raw
                .ring
                .ok_or_else(|| ImageError::RingCounters { map: err_map() })?;
            let [producer, consumer] = ring.counters;
            let mut records = ring.taken.to_vec();
            let error = match ring.taken_error {
                Some(e) => Some(e.clone()),
                None => match ringbuf::decode(&bytes[..aux as usize], producer, consumer) {
                    Ok(d) => {
                        records.extend(d.records);
                        None
                    }
                    Err(e) => Some(e),
                },
            };
            MapData::Ring {
                records,
                producer,
                error,
            }
        }
        _ => MapData::Other,
    };
    Ok(image(data))
}

#[cfg(test)]
mod tests;
