//! Accessors of a parsed [`Btf`]: strings and types by id, names, modifier skipping,
//! size resolution, `DATASEC` variables, and `FUNC` names and prototypes.

use super::{
    Btf, BtfDatasec, BtfError, BtfFuncProto, BtfHeader, BtfKind, BtfLinkage, BtfType, DatasecVar,
    BTF_SECTION, BTF_TYPE_LEN, MAX_RESOLVE_DEPTH, PTR_SIZE,
};

impl Btf {
    /// The header.
    pub fn header(&self) -> &BtfHeader {
        &self.header
    }

    /// All types; index `i` holds type id `i + 1`.
    pub fn types(&self) -> &[BtfType] {
        &self.types
    }

    /// The string at `offset` in the string table, or `None` if `offset` is outside
    /// the table or the bytes are not UTF-8. Offset 0 is the empty string.
    pub fn string_at(&self, offset: u32) -> Option<&str> {
        let rest = self.strings.get(usize::try_from(offset).ok()?..)?;
        let nul = rest.iter().position(|&b| b == 0)?;
        std::str::from_utf8(&rest[..nul]).ok()
    }

    /// The type with id `type_id`; `None` for 0 (void) and ids past the end.
    pub fn type_by_id(&self, type_id: u32) -> Option<&BtfType> {
        let index = usize::try_from(type_id).ok()?.checked_sub(1)?;
        self.types.get(index)
    }

    /// The name of type `type_id`; `None` if it is anonymous or does not exist.
    pub fn name(&self, type_id: u32) -> Option<&str> {
        let t = self.type_by_id(type_id)?;
        self.string_at(t.name_off).filter(|s| !s.is_empty())
    }

    /// Follows `typedef`, `const`, `volatile`, `restrict` and `type_tag` from
    /// `type_id` and returns the first other type id (possibly 0 = void), like
    /// libbpf's `skip_mods_and_typedefs`.
    pub fn skip_modifiers(&self, type_id: u32) -> Result<u32, BtfError> {
        let mut id = type_id;
        for _ in 0..MAX_RESOLVE_DEPTH {
            match self.type_by_id(id).map(|t| &t.kind) {
                Some(
                    BtfKind::Typedef { type_id }
                    | BtfKind::Const { type_id }
                    | BtfKind::Volatile { type_id }
                    | BtfKind::Restrict { type_id }
                    | BtfKind::TypeTag { type_id },
                ) => id = *type_id,
                _ => return Ok(id),
            }
        }
        Err(BtfError::TooDeep {
            section: BTF_SECTION,
            offset: self.type_offset(type_id),
            type_id,
            limit: MAX_RESOLVE_DEPTH,
        })
    }

    /// Size in bytes of a value of type `type_id`, like libbpf's `btf__resolve_size`:
    /// modifiers, typedefs, vars and tags are followed, pointers are 8 bytes, arrays
    /// are `nelems * element size`. Void, functions and forward declarations have no
    /// size ([`BtfError::Unsized`]); a chain deeper than 32 is reported as a cycle.
    pub fn resolve_size(&self, type_id: u32) -> Result<u32, BtfError> {
        let mut id = type_id;
        let mut nelems: u64 = 1;
        let overflow = || BtfError::SizeOverflow {
            section: BTF_SECTION,
            offset: self.type_offset(type_id),
            type_id,
        };
        for _ in 0..MAX_RESOLVE_DEPTH {
            let Some(t) = self.type_by_id(id) else {
                return Err(BtfError::Unsized {
                    section: BTF_SECTION,
                    offset: self.type_offset(type_id),
                    type_id: id,
                    kind: "void",
                });
            };
            let size = match &t.kind {
                BtfKind::Int { size, .. }
                | BtfKind::Struct { size, .. }
                | BtfKind::Union { size, .. }
                | BtfKind::Enum { size, .. }
                | BtfKind::Enum64 { size, .. }
                | BtfKind::Float { size }
                | BtfKind::Datasec(BtfDatasec { size, .. }) => *size,
                BtfKind::Ptr { .. } => PTR_SIZE,
                BtfKind::Typedef { type_id }
                | BtfKind::Const { type_id }
                | BtfKind::Volatile { type_id }
                | BtfKind::Restrict { type_id }
                | BtfKind::TypeTag { type_id }
                | BtfKind::DeclTag { type_id, .. }
                | BtfKind::Var { type_id, .. } => {
                    id = *type_id;
                    continue;
                }
                BtfKind::Array {
                    elem_type_id,
                    nelems: n,
                    ..
                } => {
                    nelems = nelems.checked_mul(u64::from(*n)).ok_or_else(overflow)?;
                    if nelems > u64::from(u32::MAX) {
                        return Err(overflow());
                    }
                    id = *elem_type_id;
                    continue;
                }
                kind @ (BtfKind::Fwd { .. } | BtfKind::Func { .. } | BtfKind::FuncProto(_)) => {
                    return Err(BtfError::Unsized {
                        section: BTF_SECTION,
                        offset: t.offset,
                        type_id: id,
                        kind: kind.name(),
                    })
                }
            };
            let total = nelems.checked_mul(u64::from(size)).ok_or_else(overflow)?;
            return u32::try_from(total).map_err(|_| overflow());
        }
        Err(BtfError::TooDeep {
            section: BTF_SECTION,
            offset: self.type_offset(type_id),
            type_id,
            limit: MAX_RESOLVE_DEPTH,
        })
    }

    /// The `DATASEC` named `name` (e.g. ".data", ".maps") with its type id.
    pub fn datasec(&self, name: &str) -> Option<(u32, &BtfDatasec)> {
        self.types
            .iter()
            .enumerate()
            .find_map(|(i, t)| match &t.kind {
                BtfKind::Datasec(d) if self.string_at(t.name_off) == Some(name) => {
                    Some((i as u32 + 1, d))
                }
                _ => None,
            })
    }

    /// The variables of data section `name` (".data", ".rodata", ".bss",
    /// ".rodata.str1.1", ".maps", ...) with name, offset, size and linkage; empty if
    /// the section has no `DATASEC`. Entries that are not `VAR`s (`.ksyms` functions)
    /// are an error, since data sections never hold them.
    pub fn datasec_vars(&self, name: &str) -> Result<Vec<DatasecVar<'_>>, BtfError> {
        let Some((ds_id, ds)) = self.datasec(name) else {
            return Ok(Vec::new());
        };
        let ds_offset = self.type_offset(ds_id);
        ds.vars
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let var = self.type_by_id(v.type_id);
                match var.map(|t| &t.kind) {
                    Some(BtfKind::Var { type_id, linkage }) => Ok(DatasecVar {
                        name: self.name(v.type_id).unwrap_or(""),
                        var_type_id: v.type_id,
                        type_id: *type_id,
                        offset: v.offset,
                        size: v.size,
                        linkage: *linkage,
                    }),
                    _ => Err(BtfError::InvalidType {
                        section: BTF_SECTION,
                        offset: ds_offset + BTF_TYPE_LEN + i * 12,
                        type_id: ds_id,
                        kind: "datasec",
                        reason: "entry is not a var",
                    }),
                }
            })
            .collect()
    }

    /// The name of `FUNC` type `type_id`; `None` if it is not a named `FUNC`.
    pub fn func_name(&self, type_id: u32) -> Option<&str> {
        match self.type_by_id(type_id)?.kind {
            BtfKind::Func { .. } => self.name(type_id),
            _ => None,
        }
    }

    /// The prototype and linkage of `FUNC` type `type_id`; `None` if it is not a
    /// `FUNC` or its type is not a `FUNC_PROTO`.
    pub fn func_proto(&self, type_id: u32) -> Option<(&BtfFuncProto, BtfLinkage)> {
        let BtfKind::Func {
            proto_type_id,
            linkage,
        } = self.type_by_id(type_id)?.kind
        else {
            return None;
        };
        match &self.type_by_id(proto_type_id)?.kind {
            BtfKind::FuncProto(p) => Some((p, linkage)),
            _ => None,
        }
    }
}
