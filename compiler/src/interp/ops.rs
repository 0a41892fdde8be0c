//! The value semantics of single instructions: ALU operations at both widths, byte
//! order, sign extension, conditional jumps' comparisons, and an atomic read-modify-write
//! on a value's bytes.
//!
//! Apart from the machine (`interp/mod.rs`) because they are functions of values alone,
//! with no state of a run: the backend's constant folding of probe bodies at attach sites
//! (`back/ptx/fuse/`) calls the same functions through their re-exports in
//! [`crate::interp`], so the interpreter and the fold cannot disagree on what an
//! instruction computes.

use crate::isa::table::{AluOp, AtomicOp, Cond, Order, Width};

/// One atomic read-modify-write on `bytes` (4 or 8 of them); returns the old value.
/// Naturally aligned bytes get a real atomic instruction (sequentially consistent, as
/// BPF's atomics are), so memory another agent updates at the same time (map storage in
/// pinned host memory that the GPU adds to with `.sys` atomics) loses no update; other
/// bytes a plain load and store, which is all one thread needs.
pub(super) fn atomic_rmw(bytes: &mut [u8], op: AtomicOp, src: u64, expected: u64) -> u64 {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
    let apply = |old: u64| match op {
        AtomicOp::Add => old.wrapping_add(src),
        AtomicOp::Or => old | src,
        AtomicOp::And => old & src,
        AtomicOp::Xor => old ^ src,
        AtomicOp::Xchg => src,
        AtomicOp::Cmpxchg if old == expected => src,
        AtomicOp::Cmpxchg => old,
    };
    let p = bytes.as_mut_ptr();
    match bytes.len() {
        8 if (p as usize).is_multiple_of(8) => {
            // SAFETY: 8 aligned bytes this function holds exclusively in Rust's terms;
            // another agent (the GPU) may update them, which is why they are accessed
            // atomically.
            let a = unsafe { AtomicU64::from_ptr(p.cast()) };
            match op {
                AtomicOp::Add => a.fetch_add(src, SeqCst),
                AtomicOp::Or => a.fetch_or(src, SeqCst),
                AtomicOp::And => a.fetch_and(src, SeqCst),
                AtomicOp::Xor => a.fetch_xor(src, SeqCst),
                AtomicOp::Xchg => a.swap(src, SeqCst),
                AtomicOp::Cmpxchg => a
                    .compare_exchange(expected, src, SeqCst, SeqCst)
                    .unwrap_or_else(|v| v),
            }
        }
        4 if (p as usize).is_multiple_of(4) => {
            // SAFETY: as above, 4 aligned bytes.
            let a = unsafe { AtomicU32::from_ptr(p.cast()) };
            let (src, expected) = (src as u32, expected as u32);
            u64::from(match op {
                AtomicOp::Add => a.fetch_add(src, SeqCst),
                AtomicOp::Or => a.fetch_or(src, SeqCst),
                AtomicOp::And => a.fetch_and(src, SeqCst),
                AtomicOp::Xor => a.fetch_xor(src, SeqCst),
                AtomicOp::Xchg => a.swap(src, SeqCst),
                AtomicOp::Cmpxchg => a
                    .compare_exchange(expected, src, SeqCst, SeqCst)
                    .unwrap_or_else(|v| v),
            })
        }
        n => {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(bytes);
            let old = u64::from_le_bytes(w);
            bytes.copy_from_slice(&apply(old).to_le_bytes()[..n]);
            old
        }
    }
}

/// Sign-extends the low `bits` bits of `v` to 64 bits.
pub fn sign_extend(v: u64, bits: u8) -> u64 {
    match bits {
        8 => v as u8 as i8 as i64 as u64,
        16 => v as u16 as i16 as i64 as u64,
        32 => v as u32 as i32 as i64 as u64,
        _ => v,
    }
}

/// A 64-bit ALU operation `a op b` with BPF's semantics (masked shifts, division by zero
/// 0, modulo by zero `a`): the one home of them, which the backend's constant folding of
/// probe bodies at attach sites uses too.
pub fn alu64(op: AluOp, a: u64, b: u64) -> u64 {
    let (sa, sb) = (a as i64, b as i64);
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Div => a.checked_div(b).unwrap_or(0),
        AluOp::SDiv if sb == 0 => 0,
        AluOp::SDiv => sa.wrapping_div(sb) as u64,
        AluOp::Mod => a.checked_rem(b).unwrap_or(a),
        AluOp::SMod if sb == 0 => a,
        AluOp::SMod => sa.wrapping_rem(sb) as u64,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Xor => a ^ b,
        AluOp::Lsh => a << (b & 63),
        AluOp::Rsh => a >> (b & 63),
        AluOp::Arsh => (sa >> (b & 63)) as u64,
        AluOp::Mov => b,
    }
}

/// [`alu64`] on the low 32 bits (the caller zero-extends the result).
pub fn alu32(op: AluOp, a: u32, b: u32) -> u32 {
    let (sa, sb) = (a as i32, b as i32);
    match op {
        AluOp::Add => a.wrapping_add(b),
        AluOp::Sub => a.wrapping_sub(b),
        AluOp::Mul => a.wrapping_mul(b),
        AluOp::Div => a.checked_div(b).unwrap_or(0),
        AluOp::SDiv if sb == 0 => 0,
        AluOp::SDiv => sa.wrapping_div(sb) as u32,
        AluOp::Mod => a.checked_rem(b).unwrap_or(a),
        AluOp::SMod if sb == 0 => a,
        AluOp::SMod => sa.wrapping_rem(sb) as u32,
        AluOp::Or => a | b,
        AluOp::And => a & b,
        AluOp::Xor => a ^ b,
        AluOp::Lsh => a << (b & 31),
        AluOp::Rsh => a >> (b & 31),
        AluOp::Arsh => (sa >> (b & 31)) as u32,
        AluOp::Mov => b,
    }
}

/// A byte-order operation (`le`/`be`/`bswap` of `bits`), zero-extended.
pub fn endian(order: Order, bits: u8, v: u64) -> u64 {
    match (order, bits) {
        (Order::Le, 16) => u64::from(v as u16),
        (Order::Le, 32) => u64::from(v as u32),
        (Order::Le, _) => v,
        (Order::Be | Order::Swap, 16) => u64::from((v as u16).swap_bytes()),
        (Order::Be | Order::Swap, 32) => u64::from((v as u32).swap_bytes()),
        (Order::Be | Order::Swap, _) => v.swap_bytes(),
    }
}

/// Whether a conditional jump `if a cond b` at width `w` is taken.
pub fn compare(cond: Cond, w: Width, a: u64, b: u64) -> bool {
    let (a, b, sa, sb) = match w {
        Width::W64 => (a, b, a as i64, b as i64),
        Width::W32 => (
            u64::from(a as u32),
            u64::from(b as u32),
            i64::from(a as u32 as i32),
            i64::from(b as u32 as i32),
        ),
    };
    match cond {
        Cond::Eq => a == b,
        Cond::Ne => a != b,
        Cond::Gt => a > b,
        Cond::Ge => a >= b,
        Cond::Lt => a < b,
        Cond::Le => a <= b,
        Cond::Set => a & b != 0,
        Cond::Sgt => sa > sb,
        Cond::Sge => sa >= sb,
        Cond::Slt => sa < sb,
        Cond::Sle => sa <= sb,
    }
}
