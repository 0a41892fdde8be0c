//! `.rel.BTF` / `.rel.BTF.ext`: [`BtfReloc`] and [`apply_relocations`], which patch
//! the raw section bytes (the `DATASEC` offsets of global variables) before parsing.

use super::BtfError;
#[cfg(doc)]
use super::{BTF_EXT_SECTION, BTF_SECTION};

/// A REL-style relocation of a 32-bit field in `.BTF` or `.BTF.ext`
/// (`R_BPF_64_ABS32` = 3 or `R_BPF_64_NODYLD32` = 4; both write `S + A` into 4 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BtfReloc {
    /// Offset of the 32-bit field in the section (`r_offset`).
    pub offset: u64,
    /// Value of the relocation's symbol (`st_value`: the variable's offset in its
    /// section, or 0 for a section symbol).
    pub symbol_value: u64,
}

/// Applies `.rel.BTF` or `.rel.BTF.ext` relocations to the raw section bytes.
///
/// REL objects keep the addend in the field, so each field becomes
/// `field + symbol_value`. For `.BTF` this fills in the `DATASEC` offsets of global
/// variables (clang leaves them 0); for `.BTF.ext` the relocations target section
/// symbols (value 0), so applying them changes nothing but is harmless. `section` is
/// the name used in errors ([`BTF_SECTION`] or [`BTF_EXT_SECTION`]).
pub fn apply_relocations(
    section: &'static str,
    data: &mut [u8],
    relocs: &[BtfReloc],
) -> Result<(), BtfError> {
    for r in relocs {
        let bad = |reason| BtfError::BadRelocation {
            section,
            offset: r.offset,
            reason,
        };
        let start = usize::try_from(r.offset).map_err(|_| bad("offset outside the section"))?;
        let field = start
            .checked_add(4)
            .and_then(|end| data.get_mut(start..end))
            .ok_or_else(|| bad("offset outside the section"))?;
        let old = u32::from_le_bytes([field[0], field[1], field[2], field[3]]);
        let new = u64::from(old)
            .checked_add(r.symbol_value)
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| bad("result does not fit in 32 bits"))?;
        field.copy_from_slice(&new.to_le_bytes());
    }
    Ok(())
}
