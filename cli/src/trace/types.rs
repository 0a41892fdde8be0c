//! What a map's keys and values are, from the object's BTF: [`Shape`], decoded into
//! [`Value`]s that print as decimal numbers and `{field: value}` structs. A map without
//! BTF types (a legacy `maps` definition) prints its bytes in hex.

use super::args::{Hist, HistSpec};
use super::TraceError;
use bpf2ptx_compiler::front::btf::{self, Btf, BtfKind};
use bpf2ptx_compiler::program::{MapOrigin, Object};
use bpf2ptx_runtime::MapKind;
use std::fmt;

/// The prefix of the BTF decl tag that marks a map as a histogram:
/// `__attribute__((btf_decl_tag("bpf2ptx:hist=log2")))` on the map variable, or
/// `bpf2ptx:hist=linear:MIN:MAX:STEP`.
pub const HIST_TAG: &str = "bpf2ptx:hist=";
/// The decl tag that marks a map as the probes' record of each launch's blocks: a hash
/// map (1, 1501, 9) keyed by the launch's `host_ns` (a host program's context field, a
/// `__u64`) whose value starts with `__u64 first_block_ns, last_block_ns` on the GPU's
/// timeline (`struct bpf2ptx_launch_span`, specs/trace.md "Trace events").
pub const LAUNCH_SPANS_TAG: &str = "bpf2ptx:launch_spans";

/// The layout of a key or value, as far as printing needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// An integer (also `bool`, `char`) of 1, 2, 4 or 8 bytes.
    Int {
        /// Bytes.
        size: u32,
        /// Two's complement.
        signed: bool,
    },
    /// An enum: printed by name where a value has one.
    Enum {
        /// Bytes.
        size: u32,
        /// Signed values.
        signed: bool,
        /// The named values.
        names: Vec<(u64, String)>,
    },
    /// A struct: its named members, printed `{a: 1, b: 2}`.
    Struct(Vec<Field>),
    /// An array of `len` elements.
    Array {
        /// The element.
        elem: Box<Shape>,
        /// Bytes per element.
        elem_size: u32,
        /// Elements.
        len: u32,
    },
    /// Anything else (unions, floats, pointers, integers of other widths): hex bytes.
    Bytes {
        /// Bytes.
        size: u32,
    },
}

/// A member of a [`Shape::Struct`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// The member's name (`_N` for an anonymous one, N its index).
    pub name: String,
    /// Offset in bits from the struct's start.
    pub bit_offset: u32,
    /// Bitfield width in bits; 0 for a plain member.
    pub bits: u8,
    /// Its layout.
    pub shape: Shape,
}

/// How the trace front end prints one map: its key and value layouts (from BTF), and
/// whether it is a histogram.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapTypes {
    /// The key's layout; `None` without BTF.
    pub key: Option<Shape>,
    /// The value's layout; `None` without BTF.
    pub value: Option<Shape>,
    /// Print as a histogram (a `--hist` option or a [`HIST_TAG`] decl tag).
    pub hist: Option<Hist>,
}

/// BTF nests types through modifiers and members; a chain longer than this is a cycle
/// (libbpf's `MAX_RESOLVE_DEPTH`).
const MAX_DEPTH: usize = 32;

impl Shape {
    /// The layout of BTF type `id`.
    pub fn from_btf(btf: &Btf, id: u32) -> Shape {
        Self::resolve(btf, id, 0)
    }

    fn resolve(btf: &Btf, id: u32, depth: usize) -> Shape {
        let size = btf.resolve_size(id).unwrap_or(0);
        let bytes = Shape::Bytes { size };
        if depth > MAX_DEPTH {
            return bytes;
        }
        let Ok(id) = btf.skip_modifiers(id) else {
            return bytes;
        };
        match btf.type_by_id(id).map(|t| &t.kind) {
            Some(BtfKind::Int {
                size,
                encoding,
                bit_offset: 0,
                bits,
            }) if matches!(size, 1 | 2 | 4 | 8) && u32::from(*bits) == size * 8 => Shape::Int {
                size: *size,
                signed: encoding & 1 != 0,
            },
            Some(
                BtfKind::Enum {
                    size,
                    signed,
                    values,
                }
                | BtfKind::Enum64 {
                    size,
                    signed,
                    values,
                },
            ) if matches!(size, 1 | 2 | 4 | 8) => Shape::Enum {
                size: *size,
                signed: *signed,
                names: values
                    .iter()
                    .map(|v| (v.value, btf.string_at(v.name_off).unwrap_or("").to_string()))
                    .collect(),
            },
            Some(BtfKind::Struct { members, .. }) => Shape::Struct(
                members
                    .iter()
                    .enumerate()
                    .map(|(k, m)| Field {
                        name: btf
                            .string_at(m.name_off)
                            .filter(|s| !s.is_empty())
                            .map_or_else(|| format!("_{k}"), str::to_string),
                        bit_offset: m.bit_offset,
                        bits: m.bitfield_size,
                        shape: Self::resolve(btf, m.type_id, depth + 1),
                    })
                    .collect(),
            ),
            Some(BtfKind::Array {
                elem_type_id,
                nelems,
                ..
            }) => Shape::Array {
                elem: Box::new(Self::resolve(btf, *elem_type_id, depth + 1)),
                elem_size: btf.resolve_size(*elem_type_id).unwrap_or(0),
                len: *nelems,
            },
            _ => bytes,
        }
    }

    /// Decodes `bytes` (at least the shape's size; missing bytes read as 0).
    pub fn decode(&self, bytes: &[u8]) -> Value {
        match self {
            Shape::Int { size, signed } => int(bytes, 0, *size * 8, *signed),
            Shape::Enum {
                size,
                signed,
                names,
            } => {
                let v = int(bytes, 0, *size * 8, *signed);
                let bits = v.bits();
                match names.iter().find(|(n, _)| mask(*n, *size * 8) == bits) {
                    Some((_, name)) => Value::Name(name.clone(), Box::new(v)),
                    None => v,
                }
            }
            Shape::Struct(fields) => Value::Struct(
                fields
                    .iter()
                    .map(|f| {
                        let v = match (&f.shape, f.bits) {
                            (Shape::Int { signed, .. } | Shape::Enum { signed, .. }, b)
                                if b > 0 =>
                            {
                                int(bytes, f.bit_offset, u32::from(b), *signed)
                            }
                            _ => {
                                let at = (f.bit_offset / 8) as usize;
                                f.shape.decode(bytes.get(at..).unwrap_or(&[]))
                            }
                        };
                        (f.name.clone(), v)
                    })
                    .collect(),
            ),
            Shape::Array {
                elem,
                elem_size,
                len,
            } => Value::Array(
                (0..*len as usize)
                    .map(|i| {
                        let at = i * *elem_size as usize;
                        elem.decode(bytes.get(at..).unwrap_or(&[]))
                    })
                    .collect(),
            ),
            Shape::Bytes { size } => {
                let mut b = bytes.get(..*size as usize).unwrap_or(bytes).to_vec();
                b.resize(*size as usize, 0);
                Value::Bytes(b)
            }
        }
    }
}

/// `v` cut to its low `bits`.
fn mask(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

/// The `bits`-bit integer at bit `bit_offset` of little-endian `bytes`.
fn int(bytes: &[u8], bit_offset: u32, bits: u32, signed: bool) -> Value {
    let mut word = [0u8; 16];
    let from = (bit_offset / 8) as usize;
    let take = bytes.len().saturating_sub(from).min(16);
    word[..take].copy_from_slice(&bytes[from..from + take]);
    let raw = mask((u128::from_le_bytes(word) >> (bit_offset % 8)) as u64, bits);
    if signed && bits < 64 && raw >> (bits - 1) & 1 == 1 {
        Value::I((raw | !mask(u64::MAX, bits)) as i64)
    } else if signed {
        Value::I(raw as i64)
    } else {
        Value::U(raw)
    }
}

/// A decoded key or value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An unsigned integer.
    U(u64),
    /// A signed integer.
    I(i64),
    /// An integer without BTF: printed in hex.
    Hex(u64),
    /// An enum value that has a name, and its number.
    Name(String, Box<Value>),
    /// A struct's members, in order.
    Struct(Vec<(String, Value)>),
    /// An array's elements.
    Array(Vec<Value>),
    /// Bytes with no known layout.
    Bytes(Vec<u8>),
}

impl Value {
    /// Decodes `bytes` by `shape`, or without one as an integer in hex when it has 1,
    /// 2, 4 or 8 bytes (the common counter), else as bytes.
    pub fn of(shape: Option<&Shape>, bytes: &[u8]) -> Value {
        match shape {
            Some(s) => s.decode(bytes),
            None if matches!(bytes.len(), 1 | 2 | 4 | 8) => {
                let mut w = [0u8; 8];
                w[..bytes.len()].copy_from_slice(bytes);
                Value::Hex(u64::from_le_bytes(w))
            }
            None => Value::Bytes(bytes.to_vec()),
        }
    }

    fn bits(&self) -> u64 {
        match self {
            Value::U(v) | Value::Hex(v) => *v,
            Value::I(v) => *v as u64,
            _ => 0,
        }
    }

    /// What hash maps are sorted by (largest first): an integer, or a struct's or
    /// array's first integer; `None` for bytes.
    pub fn rank(&self) -> Option<i128> {
        match self {
            Value::U(v) | Value::Hex(v) => Some(i128::from(*v)),
            Value::I(v) => Some(i128::from(*v)),
            Value::Name(_, v) => v.rank(),
            Value::Struct(f) => f.iter().find_map(|(_, v)| v.rank()),
            Value::Array(a) => a.iter().find_map(Value::rank),
            Value::Bytes(_) => None,
        }
    }

    /// Adds `other` (a value of the same shape) member by member, integers with
    /// wrap-around at 64 bits (not at their own width: a sum over a million threads'
    /// 32-bit counters keeps its carries), bytes by little-endian u64 words. Enum
    /// values are not summed: the first one stays.
    pub fn add(&mut self, other: &Value) {
        match (self, other) {
            (Value::U(a), Value::U(b)) | (Value::Hex(a), Value::Hex(b)) => *a = a.wrapping_add(*b),
            (Value::I(a), Value::I(b)) => *a = a.wrapping_add(*b),
            (Value::Struct(a), Value::Struct(b)) => {
                for ((_, x), (_, y)) in a.iter_mut().zip(b) {
                    x.add(y);
                }
            }
            (Value::Array(a), Value::Array(b)) => {
                for (x, y) in a.iter_mut().zip(b) {
                    x.add(y);
                }
            }
            (Value::Bytes(a), Value::Bytes(b)) => {
                let n = a.len();
                a.resize(n.div_ceil(8) * 8, 0);
                for (w, chunk) in a.chunks_exact_mut(8).zip(b.chunks(8)) {
                    let mut o = [0u8; 8];
                    o[..chunk.len()].copy_from_slice(chunk);
                    let s = u64::from_le_bytes(w.try_into().expect("8 bytes"))
                        .wrapping_add(u64::from_le_bytes(o));
                    w.copy_from_slice(&s.to_le_bytes());
                }
                a.truncate(n);
            }
            _ => {}
        }
    }

    /// As JSON: integers as numbers, hex integers as `"0x2a"`, enum names as strings,
    /// structs as objects, arrays as arrays, bytes as a hex string.
    pub fn json(&self) -> serde_json::Value {
        use serde_json::{json, Value as J};
        match self {
            Value::U(v) => json!(v),
            Value::I(v) => json!(v),
            Value::Hex(v) => json!(format!("{v:#x}")),
            Value::Name(n, _) => json!(n),
            Value::Struct(f) => J::Object(f.iter().map(|(k, v)| (k.clone(), v.json())).collect()),
            Value::Array(a) => J::Array(a.iter().map(Value::json).collect()),
            Value::Bytes(b) => json!(hex(b)),
        }
    }
}

/// Bytes as lower-case hex, two digits each, no separator.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U(v) => write!(f, "{v}"),
            Value::I(v) => write!(f, "{v}"),
            Value::Hex(v) => write!(f, "{v:#x}"),
            Value::Name(n, _) => f.write_str(n),
            Value::Struct(fields) => {
                f.write_str("{")?;
                for (k, (name, v)) in fields.iter().enumerate() {
                    let sep = if k == 0 { "" } else { ", " };
                    write!(f, "{sep}{name}: {v}")?;
                }
                f.write_str("}")
            }
            Value::Array(a) => {
                f.write_str("[")?;
                for (k, v) in a.iter().enumerate() {
                    let sep = if k == 0 { "" } else { ", " };
                    write!(f, "{sep}{v}")?;
                }
                f.write_str("]")
            }
            Value::Bytes(b) => {
                // Byte pairs, not `0x...`: a byte string is not a little-endian number.
                let pairs: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
                f.write_str(&pairs.join(" "))
            }
        }
    }
}

/// The `.BTF` section of the ELF object `bytes`, parsed; `None` when it has none. Only
/// types are read from it, so the section is parsed without the relocations that fix
/// its `DATASEC` offsets (the compiler's front end applies them when it loads maps).
pub fn object_btf(bytes: &[u8]) -> Result<Option<Btf>, TraceError> {
    let elf = goblin::elf::Elf::parse(bytes).map_err(|e| TraceError::Btf {
        why: format!("malformed ELF: {e}"),
    })?;
    let Some(sh) = elf
        .section_headers
        .iter()
        .find(|sh| elf.shdr_strtab.get_at(sh.sh_name) == Some(btf::BTF_SECTION))
    else {
        return Ok(None);
    };
    let range = sh.file_range().unwrap_or_default();
    let data = bytes.get(range).ok_or_else(|| TraceError::Btf {
        why: ".BTF runs past the end of the file".to_string(),
    })?;
    btf::parse(data)
        .map(Some)
        .map_err(|e| TraceError::Btf { why: e.to_string() })
}

/// The [`MapTypes`] of every map of `obj` (in its map order): key and value layouts from
/// `btf` (the object's, [`object_btf`]), a histogram from a [`HIST_TAG`] decl tag on the
/// map's variable, then `--hist` options, which win. A `--hist` for a map the object
/// does not have, or for a map whose keys are not bucket indices (not an array or a
/// hash map with an integer key of at most 8 bytes), is an error.
pub fn map_types(
    obj: &Object,
    btf: Option<&Btf>,
    hist: &[HistSpec],
) -> Result<Vec<MapTypes>, TraceError> {
    let mut out: Vec<MapTypes> = obj
        .maps
        .iter()
        .map(|m| MapTypes {
            key: btf
                .zip(m.btf_key_type)
                .map(|(b, id)| Shape::from_btf(b, id)),
            value: btf
                .zip(m.btf_value_type)
                .map(|(b, id)| Shape::from_btf(b, id)),
            hist: None,
        })
        .collect();
    if let Some(btf) = btf {
        for (m, t) in obj.maps.iter().zip(&mut out) {
            if m.origin == MapOrigin::Btf {
                if let Some(h) = tag_of(btf, &m.name) {
                    t.hist = Some(Hist::parse(h).map_err(|e| TraceError::Tag {
                        map: m.name.clone(),
                        source: Box::new(e),
                    })?);
                }
            }
        }
    }
    for spec in hist {
        let Some(k) = obj.maps.iter().position(|m| m.name == spec.map) else {
            return Err(TraceError::NoMap {
                map: spec.map.clone(),
                maps: obj.maps.iter().map(|m| m.name.clone()).collect(),
            });
        };
        out[k].hist = Some(spec.hist);
    }
    for (m, t) in obj.maps.iter().zip(&out) {
        let buckets = m.is(MapKind::is_array) || (m.is(MapKind::is_hash) && m.key_size <= 8);
        if t.hist.is_some() && !buckets {
            return Err(TraceError::NotHistogram {
                map: m.name.clone(),
                kind: m.kind().map_or("?", MapKind::name),
            });
        }
    }
    Ok(out)
}

/// The value of the first `bpf2ptx:hist=` decl tag on the `VAR` named `name`.
fn tag_of<'b>(btf: &'b Btf, name: &str) -> Option<&'b str> {
    decl_tags(btf, name).find_map(|t| t.strip_prefix(HIST_TAG))
}

/// The decl tags on the `VAR` named `name`.
fn decl_tags<'b>(btf: &'b Btf, name: &str) -> impl Iterator<Item = &'b str> + 'b {
    let var = btf
        .types()
        .iter()
        .position(|t| {
            matches!(t.kind, BtfKind::Var { .. }) && btf.string_at(t.name_off) == Some(name)
        })
        .map(|k| k as u32 + 1);
    btf.types().iter().filter_map(move |t| match t.kind {
        BtfKind::DeclTag {
            type_id,
            component_idx: -1,
        } if Some(type_id) == var => btf.string_at(t.name_off),
        _ => None,
    })
}

/// The maps of `obj` marked [`LAUNCH_SPANS_TAG`] that have the shape it needs (a hash
/// map with an 8-byte key and a value of 16 bytes or more); others are left out.
pub fn launch_span_maps(obj: &Object, btf: Option<&Btf>) -> Vec<usize> {
    let Some(btf) = btf else {
        return Vec::new();
    };
    obj.maps
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.origin == MapOrigin::Btf
                && m.is(MapKind::is_hash)
                && m.key_size == 8
                && m.value_size >= 16
                && decl_tags(btf, &m.name).any(|t| t == LAUNCH_SPANS_TAG)
        })
        .map(|(k, _)| k)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point() -> Shape {
        Shape::Struct(vec![
            Field {
                name: "x".into(),
                bit_offset: 0,
                bits: 0,
                shape: Shape::Int {
                    size: 4,
                    signed: true,
                },
            },
            Field {
                name: "flags".into(),
                bit_offset: 32,
                bits: 3,
                shape: Shape::Int {
                    size: 4,
                    signed: false,
                },
            },
            Field {
                name: "neg".into(),
                bit_offset: 35,
                bits: 5,
                shape: Shape::Int {
                    size: 4,
                    signed: true,
                },
            },
            Field {
                name: "mode".into(),
                bit_offset: 64,
                bits: 0,
                shape: Shape::Enum {
                    size: 4,
                    signed: false,
                    names: vec![(1, "ON".into())],
                },
            },
        ])
    }

    #[test]
    fn structs_bitfields_and_enums_decode() {
        let mut b = vec![0u8; 12];
        b[..4].copy_from_slice(&(-3i32).to_le_bytes());
        // flags = 5 (bits 32..35), neg = -2 (bits 35..40: 0b11110)
        b[4] = 5 | (0b11110 << 3);
        b[8] = 1;
        let v = point().decode(&b);
        assert_eq!(v.to_string(), "{x: -3, flags: 5, neg: -2, mode: ON}");
        assert_eq!(
            v.json(),
            serde_json::json!({"x": -3, "flags": 5, "neg": -2, "mode": "ON"})
        );
        assert_eq!(v.rank(), Some(-3));
        b[8] = 7;
        assert_eq!(
            point().decode(&b).to_string(),
            "{x: -3, flags: 5, neg: -2, mode: 7}"
        );
    }

    #[test]
    fn untyped_values_print_in_hex_and_sum_by_words() {
        assert_eq!(Value::of(None, &[0x2a, 0, 0, 0]).to_string(), "0x2a");
        let mut v = Value::of(None, &[0xff; 12]);
        assert_eq!(v.to_string(), "ff ff ff ff ff ff ff ff ff ff ff ff");
        v.add(&Value::of(None, &[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0]));
        assert_eq!(v, Value::Bytes(vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
        let mut n = Value::of(None, &u32::MAX.to_le_bytes());
        n.add(&Value::of(None, &u32::MAX.to_le_bytes()));
        assert_eq!(n, Value::Hex(2 * u64::from(u32::MAX)));
        assert_eq!(Value::Bytes(vec![1]).rank(), None);
    }
}
