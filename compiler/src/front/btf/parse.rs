//! Reading the bytes of `.BTF`: the bounds-checked [`Reader`] and header preamble
//! shared with `btf_ext`, [`parse`] and the decoding of each type record, and the
//! validation of the invariants the accessors rely on (see the module doc of `btf`).

#[cfg(doc)]
use super::apply_relocations;
use super::{
    Btf, BtfDatasec, BtfEnumValue, BtfError, BtfFuncProto, BtfHeader, BtfKind, BtfLinkage,
    BtfMember, BtfParam, BtfType, BtfVarSecInfo, BTF_HEADER_LEN, BTF_MAGIC, BTF_SECTION,
    BTF_TYPE_LEN,
};

/// Bounds-checked little-endian reads that report `section`+offset on failure.
/// `end` is the end of the region being read (type section, record, ...), which may
/// be shorter than the slice.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) section: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn bytes(&self, pos: usize, len: usize, end: usize) -> Result<&'a [u8], BtfError> {
        let end = end.min(self.data.len());
        match pos.checked_add(len) {
            Some(stop) if stop <= end => Ok(&self.data[pos..stop]),
            _ => Err(BtfError::Truncated {
                section: self.section,
                offset: pos,
                needed: len,
                available: end.saturating_sub(pos),
            }),
        }
    }

    pub(crate) fn u32(&self, pos: usize, end: usize) -> Result<u32, BtfError> {
        let b = self.bytes(pos, 4, end)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u16(&self, pos: usize, end: usize) -> Result<u16, BtfError> {
        let b = self.bytes(pos, 2, end)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(crate) fn u8(&self, pos: usize, end: usize) -> Result<u8, BtfError> {
        Ok(self.bytes(pos, 1, end)?[0])
    }

    /// Checks that `[base + off, base + off + len)` lies in the section and returns it
    /// as a `usize` range. `field` is the offset of the header field naming it.
    pub(crate) fn region(
        &self,
        what: &'static str,
        field: usize,
        base: u64,
        off: u32,
        len: u32,
    ) -> Result<(usize, usize), BtfError> {
        let start = base + u64::from(off);
        let stop = start + u64::from(len);
        if stop > self.data.len() as u64 {
            return Err(BtfError::OutOfBounds {
                section: self.section,
                offset: field,
                what,
                start,
                len: u64::from(len),
                size: self.data.len(),
            });
        }
        // Both fit in usize: they are at most data.len().
        Ok((start as usize, stop as usize))
    }
}

/// Reads the common `magic, version, flags, hdr_len` prefix of `.BTF` and `.BTF.ext`
/// and returns `(flags, hdr_len)`.
pub(crate) fn parse_preamble(r: &Reader<'_>, min_hdr_len: u32) -> Result<(u8, u8, u32), BtfError> {
    let len = r.data.len();
    let magic = r.u16(0, len)?;
    if magic == BTF_MAGIC.swap_bytes() {
        return Err(BtfError::BigEndian {
            section: r.section,
            offset: 0,
        });
    }
    if magic != BTF_MAGIC {
        return Err(BtfError::BadMagic {
            section: r.section,
            offset: 0,
            magic,
        });
    }
    let version = r.u8(2, len)?;
    if version != 1 {
        return Err(BtfError::UnsupportedVersion {
            section: r.section,
            offset: 2,
            version,
        });
    }
    let flags = r.u8(3, len)?;
    let hdr_len = r.u32(4, len)?;
    if hdr_len < min_hdr_len {
        return Err(BtfError::HeaderTooShort {
            section: r.section,
            offset: 4,
            hdr_len,
            min: min_hdr_len,
        });
    }
    if u64::from(hdr_len) > len as u64 {
        return Err(BtfError::OutOfBounds {
            section: r.section,
            offset: 4,
            what: "header",
            start: 0,
            len: u64::from(hdr_len),
            size: len,
        });
    }
    Ok((version, flags, hdr_len))
}

/// Parses a `.BTF` section (the raw bytes, after [`apply_relocations`] if the caller
/// wants `DATASEC` offsets of global variables).
pub fn parse(data: &[u8]) -> Result<Btf, BtfError> {
    let r = Reader {
        data,
        section: BTF_SECTION,
    };
    let (version, flags, hdr_len) = parse_preamble(&r, BTF_HEADER_LEN)?;
    let len = data.len();
    let header = BtfHeader {
        version,
        flags,
        hdr_len,
        type_off: r.u32(8, len)?,
        type_len: r.u32(12, len)?,
        str_off: r.u32(16, len)?,
        str_len: r.u32(20, len)?,
    };
    let base = u64::from(hdr_len);
    let (type_start, type_end) =
        r.region("type section", 8, base, header.type_off, header.type_len)?;
    let (str_start, str_end) =
        r.region("string table", 16, base, header.str_off, header.str_len)?;
    if header.type_off & 3 != 0 {
        return Err(BtfError::Misaligned {
            section: BTF_SECTION,
            offset: 8,
            what: "type_off",
            value: u64::from(header.type_off),
        });
    }
    if u64::from(header.type_off) + u64::from(header.type_len) > u64::from(header.str_off) {
        // libbpf requires the type section to precede the string table.
        return Err(BtfError::OutOfBounds {
            section: BTF_SECTION,
            offset: 8,
            what: "type section (must end before the string table)",
            start: base + u64::from(header.type_off),
            len: u64::from(header.type_len),
            size: str_start,
        });
    }
    let strings = &data[str_start..str_end];
    let bad_table = |reason| BtfError::BadStringTable {
        section: BTF_SECTION,
        offset: str_start,
        reason,
    };
    match (strings.first(), strings.last()) {
        (None, _) => return Err(bad_table("empty")),
        (Some(&first), _) if first != 0 => return Err(bad_table("does not start with a NUL byte")),
        (_, Some(&last)) if last != 0 => return Err(bad_table("does not end with a NUL byte")),
        _ => {}
    }

    let mut types = Vec::new();
    let mut pos = type_start;
    while pos < type_end {
        let type_id = u32::try_from(types.len() + 1).unwrap_or(u32::MAX);
        let (ty, next) = parse_type(&r, pos, type_end, type_id)?;
        types.push(ty);
        pos = next;
    }

    let btf = Btf {
        header,
        strings: strings.to_vec(),
        types,
    };
    btf.validate()?;
    Ok(btf)
}

/// Parses the type record at `pos` and returns it with the offset of the next one.
fn parse_type(
    r: &Reader<'_>,
    pos: usize,
    end: usize,
    type_id: u32,
) -> Result<(BtfType, usize), BtfError> {
    let name_off = r.u32(pos, end)?;
    let info = r.u32(pos + 4, end)?;
    let size_or_type = r.u32(pos + 8, end)?;
    let vlen = (info & 0xffff) as usize;
    let kind_raw = ((info >> 24) & 0x1f) as u8;
    let kflag = info >> 31 != 0;
    let data = pos + BTF_TYPE_LEN;
    // Trailing bytes per kind; checked in one piece before any allocation so a huge
    // vlen in a short section fails fast.
    let trailing = match kind_raw {
        1 | 14 | 17 => 4,
        3 => 12,
        4 | 5 | 19 => 12 * vlen,
        6 | 13 => 8 * vlen,
        15 => 12 * vlen,
        2 | 7..=12 | 16 | 18 => 0,
        _ => {
            return Err(BtfError::UnknownKind {
                section: r.section,
                offset: pos,
                type_id,
                kind: kind_raw,
            })
        }
    };
    r.bytes(data, trailing, end)?;
    let next = data + trailing;
    let invalid = |reason| BtfError::InvalidType {
        section: r.section,
        offset: pos,
        type_id,
        kind: kind_name(kind_raw),
        reason,
    };
    let kind = match kind_raw {
        1 => {
            let v = r.u32(data, end)?;
            let bits = v & 0xff;
            let bit_offset = (v >> 16) & 0xff;
            if bits > 128 {
                return Err(invalid("more than 128 bits"));
            }
            BtfKind::Int {
                size: size_or_type,
                encoding: ((v >> 24) & 0x0f) as u8,
                bit_offset: bit_offset as u8,
                bits: bits as u8,
            }
        }
        2 => BtfKind::Ptr {
            type_id: size_or_type,
        },
        3 => BtfKind::Array {
            elem_type_id: r.u32(data, end)?,
            index_type_id: r.u32(data + 4, end)?,
            nelems: r.u32(data + 8, end)?,
        },
        4 | 5 => {
            let mut members = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let m = data + i * 12;
                let raw_off = r.u32(m + 8, end)?;
                let (bit_offset, bitfield_size) = if kflag {
                    (raw_off & 0x00ff_ffff, (raw_off >> 24) as u8)
                } else {
                    (raw_off, 0)
                };
                members.push(BtfMember {
                    name_off: r.u32(m, end)?,
                    type_id: r.u32(m + 4, end)?,
                    bit_offset,
                    bitfield_size,
                });
            }
            if kind_raw == 4 {
                BtfKind::Struct {
                    size: size_or_type,
                    members,
                }
            } else {
                BtfKind::Union {
                    size: size_or_type,
                    members,
                }
            }
        }
        6 => {
            let mut values = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let e = data + i * 8;
                let raw = r.u32(e + 4, end)?;
                let value = if kflag {
                    raw as i32 as i64 as u64
                } else {
                    u64::from(raw)
                };
                values.push(BtfEnumValue {
                    name_off: r.u32(e, end)?,
                    value,
                });
            }
            BtfKind::Enum {
                size: size_or_type,
                signed: kflag,
                values,
            }
        }
        7 => BtfKind::Fwd { is_union: kflag },
        8 => BtfKind::Typedef {
            type_id: size_or_type,
        },
        9 => BtfKind::Volatile {
            type_id: size_or_type,
        },
        10 => BtfKind::Const {
            type_id: size_or_type,
        },
        11 => BtfKind::Restrict {
            type_id: size_or_type,
        },
        12 => BtfKind::Func {
            proto_type_id: size_or_type,
            linkage: BtfLinkage::from_raw(vlen as u32).ok_or_else(|| invalid("bad linkage"))?,
        },
        13 => {
            let mut params = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let p = data + i * 8;
                params.push(BtfParam {
                    name_off: r.u32(p, end)?,
                    type_id: r.u32(p + 4, end)?,
                });
            }
            BtfKind::FuncProto(BtfFuncProto {
                ret_type_id: size_or_type,
                params,
            })
        }
        14 => BtfKind::Var {
            type_id: size_or_type,
            linkage: BtfLinkage::from_raw(r.u32(data, end)?)
                .ok_or_else(|| invalid("bad linkage"))?,
        },
        15 => {
            let mut vars = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let v = data + i * 12;
                vars.push(BtfVarSecInfo {
                    type_id: r.u32(v, end)?,
                    offset: r.u32(v + 4, end)?,
                    size: r.u32(v + 8, end)?,
                });
            }
            BtfKind::Datasec(BtfDatasec {
                size: size_or_type,
                vars,
            })
        }
        16 => BtfKind::Float { size: size_or_type },
        17 => BtfKind::DeclTag {
            type_id: size_or_type,
            component_idx: r.u32(data, end)? as i32,
        },
        18 => BtfKind::TypeTag {
            type_id: size_or_type,
        },
        19 => {
            let mut values = Vec::with_capacity(vlen);
            for i in 0..vlen {
                let e = data + i * 12;
                let lo = r.u32(e + 4, end)?;
                let hi = r.u32(e + 8, end)?;
                values.push(BtfEnumValue {
                    name_off: r.u32(e, end)?,
                    value: u64::from(hi) << 32 | u64::from(lo),
                });
            }
            BtfKind::Enum64 {
                size: size_or_type,
                signed: kflag,
                values,
            }
        }
        // Unreachable: unknown kinds returned above; keep an error rather than panic.
        _ => {
            return Err(BtfError::UnknownKind {
                section: r.section,
                offset: pos,
                type_id,
                kind: kind_raw,
            })
        }
    };
    Ok((
        BtfType {
            name_off,
            offset: pos,
            kind,
        },
        next,
    ))
}

/// Kind names by raw kind number, for errors raised before a [`BtfKind`] exists.
fn kind_name(kind: u8) -> &'static str {
    const NAMES: [&str; 20] = [
        "unknown",
        "int",
        "ptr",
        "array",
        "struct",
        "union",
        "enum",
        "fwd",
        "typedef",
        "volatile",
        "const",
        "restrict",
        "func",
        "func_proto",
        "var",
        "datasec",
        "float",
        "decl_tag",
        "type_tag",
        "enum64",
    ];
    NAMES.get(usize::from(kind)).copied().unwrap_or("unknown")
}

impl BtfLinkage {
    fn from_raw(v: u32) -> Option<Self> {
        match v {
            0 => Some(Self::Static),
            1 => Some(Self::Global),
            2 => Some(Self::Extern),
            _ => None,
        }
    }
}

impl BtfKind {
    /// Calls `f` on every type id this kind refers to (including 0 = void), so that
    /// validation and future walkers share one list.
    fn for_each_ref(&self, mut f: impl FnMut(u32)) {
        match self {
            Self::Int { .. }
            | Self::Fwd { .. }
            | Self::Float { .. }
            | Self::Enum { .. }
            | Self::Enum64 { .. } => {}
            Self::Ptr { type_id }
            | Self::Typedef { type_id }
            | Self::Volatile { type_id }
            | Self::Const { type_id }
            | Self::Restrict { type_id }
            | Self::Var { type_id, .. }
            | Self::DeclTag { type_id, .. }
            | Self::TypeTag { type_id } => f(*type_id),
            Self::Array {
                elem_type_id,
                index_type_id,
                ..
            } => {
                f(*elem_type_id);
                f(*index_type_id);
            }
            Self::Struct { members, .. } | Self::Union { members, .. } => {
                members.iter().for_each(|m| f(m.type_id))
            }
            Self::Func { proto_type_id, .. } => f(*proto_type_id),
            Self::FuncProto(p) => {
                f(p.ret_type_id);
                p.params.iter().for_each(|p| f(p.type_id));
            }
            Self::Datasec(d) => d.vars.iter().for_each(|v| f(v.type_id)),
        }
    }

    /// Calls `f` on every string offset inside the trailing data (member, parameter
    /// and enumerator names), with the byte offset of the field relative to the start
    /// of the type record.
    fn for_each_inner_name(&self, mut f: impl FnMut(u32, usize)) {
        let base = BTF_TYPE_LEN;
        match self {
            Self::Struct { members, .. } | Self::Union { members, .. } => {
                for (i, m) in members.iter().enumerate() {
                    f(m.name_off, base + i * 12);
                }
            }
            Self::Enum { values, .. } => {
                for (i, v) in values.iter().enumerate() {
                    f(v.name_off, base + i * 8);
                }
            }
            Self::Enum64 { values, .. } => {
                for (i, v) in values.iter().enumerate() {
                    f(v.name_off, base + i * 12);
                }
            }
            Self::FuncProto(p) => {
                for (i, p) in p.params.iter().enumerate() {
                    f(p.name_off, base + i * 8);
                }
            }
            _ => {}
        }
    }
}

impl Btf {
    /// Checks the invariants the accessors rely on (see the module doc).
    fn validate(&self) -> Result<(), BtfError> {
        let count = u32::try_from(self.types.len()).unwrap_or(u32::MAX);
        for (i, t) in self.types.iter().enumerate() {
            let type_id = i as u32 + 1;
            self.check_string(t.name_off, t.offset)?;
            let mut res = Ok(());
            t.kind.for_each_inner_name(|off, rel| {
                if res.is_ok() {
                    res = self.check_string(off, t.offset + rel);
                }
            });
            res?;
            let mut res = Ok(());
            t.kind.for_each_ref(|target| {
                if res.is_ok() && target > count {
                    res = Err(BtfError::BadTypeRef {
                        section: BTF_SECTION,
                        offset: t.offset,
                        type_id,
                        target,
                        count,
                    });
                }
            });
            res?;
        }
        Ok(())
    }

    fn check_string(&self, str_off: u32, offset: usize) -> Result<(), BtfError> {
        match self.string_at(str_off) {
            Some(_) => Ok(()),
            None => Err(BtfError::BadString {
                section: BTF_SECTION,
                offset,
                str_off,
                str_len: self.header.str_len,
            }),
        }
    }
}
