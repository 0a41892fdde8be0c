//! The kernel-like text form of a [`Scalar`] (`Display`): a constant as a number,
//! otherwise `scalar(...)` with only the views that add information.

use std::fmt;

use super::Scalar;

fn fmt_u(v: u64) -> String {
    if v < 0x10000 {
        v.to_string()
    } else {
        format!("{v:#x}")
    }
}

fn fmt_s(v: i64) -> String {
    if v < 0 {
        if v > -0x10000 {
            v.to_string()
        } else {
            format!("-{:#x}", v.unsigned_abs())
        }
    } else {
        fmt_u(v as u64)
    }
}

/// Kernel-like: a constant as a number, otherwise `scalar(...)` with only the views that
/// add information: the unsigned range and the known bits when not trivial, a signed
/// range only when the bits and the unsigned range do not imply it, a 32-bit range only
/// when the 64-bit views do not.
impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(c) = self.as_const() {
            let s = c as i64;
            return f.write_str(&if (-0xffff..0).contains(&s) {
                s.to_string()
            } else {
                fmt_u(c)
            });
        }
        let mut out = Vec::new();
        if self.umin != 0 || self.umax != u64::MAX {
            out.push(format!(
                "umin={},umax={}",
                fmt_u(self.umin),
                fmt_u(self.umax)
            ));
        }
        // What the known bits and the unsigned range imply on their own; a view that adds
        // nothing to that is left out.
        let base = Scalar {
            bits: self.bits,
            umin: self.umin,
            umax: self.umax,
            ..Scalar::unknown()
        }
        .norm();
        if (self.smin, self.smax) != (base.smin, base.smax) {
            out.push(format!(
                "smin={},smax={}",
                fmt_s(self.smin),
                fmt_s(self.smax)
            ));
        }
        let base = Scalar {
            u32min: 0,
            u32max: u32::MAX,
            s32min: i32::MIN,
            s32max: i32::MAX,
            ..*self
        }
        .norm();
        if (self.u32min, self.u32max) != (base.u32min, base.u32max) {
            out.push(format!(
                "u32min={},u32max={}",
                fmt_u(self.u32min.into()),
                fmt_u(self.u32max.into())
            ));
        }
        if (self.s32min, self.s32max) != (base.s32min, base.s32max) {
            out.push(format!(
                "s32min={},s32max={}",
                fmt_s(self.s32min.into()),
                fmt_s(self.s32max.into())
            ));
        }
        if self.bits.mask != u64::MAX {
            out.push(format!(
                "var=({:#x}; {:#x})",
                self.bits.value, self.bits.mask
            ));
        }
        write!(f, "scalar({})", out.join(","))
    }
}
