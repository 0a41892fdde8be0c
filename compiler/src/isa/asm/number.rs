//! Numbers and registers shared by both syntaxes.

use super::{AsmErrorKind, R};

pub(super) fn parse_number(s: &str) -> R<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        body.parse::<u64>()
    }
    .map_err(|_| AsmErrorKind::Number(s.to_string()))?;
    Ok(if neg { -i128::from(v) } else { i128::from(v) })
}

pub(super) fn is_hex(s: &str) -> bool {
    let b = s.trim_start_matches(['-', '+']);
    b.starts_with("0x") || b.starts_with("0X")
}

/// A 32-bit immediate: decimal values must fit `i32`; hex values may also be written as
/// the unsigned bit pattern (`0xffffffff`), as bpf_conformance does. The decimal rule is
/// what keeps `mov32 %r0, 2147483648` an error instead of a silent `-2147483648`.
pub(super) fn imm32(v: i128, hex: bool) -> R<i64> {
    if let Ok(x) = i32::try_from(v) {
        return Ok(x.into());
    }
    if hex && (0..=i128::from(u32::MAX)).contains(&v) {
        return Ok(i64::from(v as u32 as i32));
    }
    Err(AsmErrorKind::ImmRange { value: v, bits: 32 })
}

pub(super) fn imm64(v: i128) -> R<i64> {
    if let Ok(x) = i64::try_from(v) {
        Ok(x)
    } else if let Ok(x) = u64::try_from(v) {
        Ok(x as i64)
    } else {
        Err(AsmErrorKind::ImmRange { value: v, bits: 64 })
    }
}

pub(super) fn off16(v: i128) -> R<i16> {
    i16::try_from(v).map_err(|_| AsmErrorKind::OffRange(v))
}

pub(super) fn reg_number(digits: &str, full: &str) -> R<u8> {
    match digits.parse::<u8>() {
        Ok(n) if n <= 10 && !digits.is_empty() => Ok(n),
        _ => Err(AsmErrorKind::Register(full.to_string())),
    }
}
