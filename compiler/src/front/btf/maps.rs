//! BTF-defined maps: [`BtfMapDef`] and [`Btf::map_def`], which decode a `.maps`
//! variable's struct type (`__uint`, `__type`, `__ulong` members) the way libbpf's
//! `parse_btf_map_def` does.

use super::{Btf, BtfError, BtfKind, BtfType, BTF_SECTION};

/// A BTF-defined map (`struct { __uint(type, ...); ... } name SEC(".maps")`),
/// decoded the way libbpf's `parse_btf_map_def` does.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BtfMapDef {
    /// `type`: `BPF_MAP_TYPE_*`.
    pub map_type: u32,
    /// Key size from `key_size` or the size of the `key` type; `None` when neither
    /// is given (ringbuf, perf event array).
    pub key_size: Option<u32>,
    /// Value size from `value_size` or the size of the `value` type.
    pub value_size: Option<u32>,
    /// BTF id of the key type when given with `__type(key, T)`.
    pub key_type_id: Option<u32>,
    /// BTF id of the value type when given with `__type(value, T)`.
    pub value_type_id: Option<u32>,
    /// `max_entries` (0 when absent).
    pub max_entries: u32,
    /// `map_flags` (`BPF_F_*`).
    pub map_flags: u32,
    /// `numa_node`.
    pub numa_node: u32,
    /// `map_extra` (bloom filter hashes, arena address, ...).
    pub map_extra: u64,
    /// `pinning` (`LIBBPF_PIN_NONE` 0 / `LIBBPF_PIN_BY_NAME` 1).
    pub pinning: u32,
    /// For a map of maps (`__array(values, struct {...})`): the inner map's definition.
    pub inner: Option<Box<BtfMapDef>>,
    /// For a map of maps: the byte offset of the `values` member in the map's struct,
    /// where the relocations of its initial entries (`.values = { [k] = &m }`) point.
    pub values_offset: Option<u32>,
}

impl Btf {
    /// Decodes the BTF-defined map whose `VAR` is `var_type_id` (an entry of the
    /// `.maps` `DATASEC`); the id of the map's struct type itself is accepted too.
    ///
    /// Integer attributes are `int (*name)[N]` (pointer to an array of N elements:
    /// the value is N), or an enum with one value for `__ulong(name, V)`; `key` and
    /// `value` are `T *name` and give both the size and the BTF id of `T`.
    /// `values` (`__array(values, struct {...})`, a zero-length array of pointers to the
    /// inner map's struct) makes a map of maps, as libbpf reads it: the inner definition
    /// is decoded too (it may not itself be a map of maps), and the value size is 4. A
    /// `values` of any other map type (a program array's initial programs) is
    /// [`BtfError::Unsupported`]; an unknown member is [`BtfError::UnknownMapMember`].
    pub fn map_def(&self, var_type_id: u32) -> Result<BtfMapDef, BtfError> {
        self.map_def_at(var_type_id, false)
    }

    fn map_def_at(&self, var_type_id: u32, inner: bool) -> Result<BtfMapDef, BtfError> {
        let var = self.get(var_type_id)?;
        let (map, def_type) = match var.kind {
            BtfKind::Var { type_id, .. } => {
                (self.name(var_type_id).unwrap_or("").to_string(), type_id)
            }
            _ => (
                self.name(var_type_id)
                    .map_or_else(|| format!("<type {var_type_id}>"), str::to_string),
                var_type_id,
            ),
        };
        let struct_id = self.skip_modifiers(def_type)?;
        let (offset, members) = match self.type_by_id(struct_id) {
            Some(BtfType {
                offset,
                kind: BtfKind::Struct { members, .. },
                ..
            }) => (*offset, members),
            other => {
                return Err(BtfError::MapNotStruct {
                    section: BTF_SECTION,
                    offset: other.map_or(var.offset, |t| t.offset),
                    map,
                    kind: other.map_or("void", |t| t.kind.name()),
                })
            }
        };

        let mut def = BtfMapDef::default();
        let mut map_type = None;
        // Explicit sizes and type-derived sizes are kept apart so a mismatch can say
        // which is which, whatever the member order.
        let (mut key_size, mut value_size) = (None, None);
        let (mut key_type_size, mut value_type_size) = (None, None);
        for m in members {
            let member = self.string_at(m.name_off).unwrap_or("");
            let int = || self.map_int_member(m.type_id, &map, member, offset);
            let to_u32 = |v: u64| {
                u32::try_from(v).map_err(|_| BtfError::BadMapMember {
                    section: BTF_SECTION,
                    offset,
                    map: map.clone(),
                    member: member.to_string(),
                    expected: "a value that fits in 32 bits",
                })
            };
            match member {
                "type" => map_type = Some(to_u32(int()?)?),
                "max_entries" => def.max_entries = to_u32(int()?)?,
                "map_flags" => def.map_flags = to_u32(int()?)?,
                "numa_node" => def.numa_node = to_u32(int()?)?,
                "pinning" => def.pinning = to_u32(int()?)?,
                "map_extra" => def.map_extra = int()?,
                "key_size" => key_size = Some(to_u32(int()?)?),
                "value_size" => value_size = Some(to_u32(int()?)?),
                "key" => {
                    let target = self.map_ptr_member(m.type_id, &map, member, offset)?;
                    key_type_size = Some(self.resolve_size(target)?);
                    def.key_type_id = Some(target);
                }
                "value" => {
                    let target = self.map_ptr_member(m.type_id, &map, member, offset)?;
                    value_type_size = Some(self.resolve_size(target)?);
                    def.value_type_id = Some(target);
                }
                "values" => {
                    let unsupported = |feature| BtfError::Unsupported {
                        section: BTF_SECTION,
                        offset,
                        map: map.clone(),
                        feature,
                    };
                    if inner {
                        return Err(unsupported(
                            "an inner map of maps (a `values` member inside `values`)",
                        ));
                    }
                    let bad = |expected| BtfError::BadMapMember {
                        section: BTF_SECTION,
                        offset,
                        map: map.clone(),
                        member: member.to_string(),
                        expected,
                    };
                    const ARRAY: &str =
                        "a zero-length array of pointers to a map struct (`__array(values, struct {...})`)";
                    let elem = match self.type_by_id(m.type_id).map(|t| &t.kind) {
                        Some(BtfKind::Array {
                            elem_type_id,
                            nelems: 0,
                            ..
                        }) => *elem_type_id,
                        _ => return Err(bad(ARRAY)),
                    };
                    let ptr = self.skip_modifiers(elem)?;
                    let target = match self.type_by_id(ptr).map(|t| &t.kind) {
                        Some(BtfKind::Ptr { type_id }) => self.skip_modifiers(*type_id)?,
                        _ => return Err(bad(ARRAY)),
                    };
                    match self.type_by_id(target).map(|t| &t.kind) {
                        Some(BtfKind::Struct { .. }) => {}
                        Some(BtfKind::FuncProto(_)) => {
                            return Err(unsupported(
                                "initial programs of a program array (`values` of functions)",
                            ))
                        }
                        _ => return Err(bad(ARRAY)),
                    }
                    def.inner = Some(Box::new(self.map_def_at(target, true)?));
                    def.values_offset = Some(m.bit_offset / 8);
                }
                _ => {
                    return Err(BtfError::UnknownMapMember {
                        section: BTF_SECTION,
                        offset,
                        map,
                        member: member.to_string(),
                    })
                }
            }
        }
        def.key_size = agree(key_size, key_type_size, &map, "key", offset)?;
        def.value_size = agree(value_size, value_type_size, &map, "value", offset)?;
        def.map_type = map_type.ok_or(BtfError::MissingMapType {
            section: BTF_SECTION,
            offset,
            map: map.clone(),
        })?;
        if def.inner.is_some() {
            // libbpf: the value of a map of maps is an inner map's fd, 4 bytes.
            if !matches!(def.map_type, 12 | 13) {
                return Err(BtfError::Unsupported {
                    section: BTF_SECTION,
                    offset,
                    map,
                    feature: "a `values` member on a map that is not a map of maps (12, 13)",
                });
            }
            def.value_size = agree(def.value_size, Some(4), &map, "value", offset)?;
        }
        Ok(def)
    }

    /// Value of an integer map attribute: `int (*name)[N]` → N, or the single value
    /// of an enum (`__ulong`).
    fn map_int_member(
        &self,
        type_id: u32,
        map: &str,
        member: &str,
        offset: usize,
    ) -> Result<u64, BtfError> {
        let bad = || BtfError::BadMapMember {
            section: BTF_SECTION,
            offset,
            map: map.to_string(),
            member: member.to_string(),
            expected: "`int (*name)[N]` (`__uint(name, N)`)",
        };
        let id = self.skip_modifiers(type_id)?;
        match self.type_by_id(id).map(|t| &t.kind) {
            Some(BtfKind::Ptr { type_id }) => match self.type_by_id(*type_id).map(|t| &t.kind) {
                Some(BtfKind::Array { nelems, .. }) => Ok(u64::from(*nelems)),
                _ => Err(bad()),
            },
            Some(BtfKind::Enum { values, .. } | BtfKind::Enum64 { values, .. })
                if values.len() == 1 =>
            {
                Ok(values[0].value)
            }
            _ => Err(bad()),
        }
    }

    /// Target type of a `T *name` map attribute (`__type(name, T)`).
    fn map_ptr_member(
        &self,
        type_id: u32,
        map: &str,
        member: &str,
        offset: usize,
    ) -> Result<u32, BtfError> {
        let id = self.skip_modifiers(type_id)?;
        match self.type_by_id(id).map(|t| &t.kind) {
            Some(BtfKind::Ptr { type_id }) => Ok(*type_id),
            _ => Err(BtfError::BadMapMember {
                section: BTF_SECTION,
                offset,
                map: map.to_string(),
                member: member.to_string(),
                expected: "a pointer `T *name` (`__type(name, T)`)",
            }),
        }
    }
}

/// Combines a size given explicitly (`key_size`) with one derived from a type
/// (`key`); libbpf rejects a map where both are present and differ.
fn agree(
    explicit: Option<u32>,
    from_type: Option<u32>,
    map: &str,
    field: &'static str,
    offset: usize,
) -> Result<Option<u32>, BtfError> {
    match (explicit, from_type) {
        (Some(declared), Some(actual)) if declared != actual => Err(BtfError::MapSizeMismatch {
            section: BTF_SECTION,
            offset,
            map: map.to_string(),
            field,
            declared,
            actual,
        }),
        (e, t) => Ok(e.or(t)),
    }
}
