//! The unit tests of the scalar domain: soundness (every operation checked on random
//! concrete members of random abstract values) and precision (what real programs need).

use super::interval::sview;
use super::*;
use bpf2ptx_compiler::isa::table::{AluOp, Cond, Order, Width};

mod support;
use support::*;

// ---- soundness ----

#[test]
fn tnum_ops_are_sound() {
    let mut r = Rng::new(0x1234_5678_9abc_def1);
    for _ in 0..iters(3000) {
        let (va, ma, vb, mb) = (r.value(), r.mask(), r.value(), r.mask());
        let (a, b) = (
            Tnum {
                value: va & !ma,
                mask: ma,
            },
            Tnum {
                value: vb & !mb,
                mask: mb,
            },
        );
        for _ in 0..4 {
            let x = a.value | (r.next() & a.mask);
            let y = b.value | (r.next() & b.mask);
            let k = (r.next() % 64) as u32;
            let checks = [
                ("add", a.wrapping_add(b), x.wrapping_add(y)),
                ("sub", a.wrapping_sub(b), x.wrapping_sub(y)),
                ("mul", a.wrapping_mul(b), x.wrapping_mul(y)),
                ("and", a.and(b), x & y),
                ("or", a.or(b), x | y),
                ("xor", a.xor(b), x ^ y),
                ("lsh", a.lsh(k), x << k),
                ("rsh", a.rsh(k), x >> k),
                ("arsh", a.arsh(k), ((x as i64) >> k) as u64),
                ("union", a.union(b), x),
                ("union", a.union(b), y),
            ];
            for (name, t, v) in checks {
                assert!(
                    t.contains(v),
                    "{name}: {a:?} {b:?} ({x:#x}, {y:#x}) -> {t:?} lacks {v:#x}"
                );
                assert_eq!(t.value & t.mask, 0, "{name}: {t:?}");
            }
            if let Some(i) = a.intersect(Tnum::constant(y)) {
                assert!(a.contains(y) && i.contains(y));
            } else {
                assert!(!a.contains(y));
            }
        }
    }
}

#[test]
fn tnum_min_ge_max_le_are_exact() {
    // Every tnum over 6 bits (high bits known zero), every bound, against brute force.
    let mut tnums = vec![Tnum::constant(0)];
    for bit in 0..6 {
        let mut next = Vec::new();
        for t in tnums {
            next.push(t);
            next.push(Tnum {
                value: t.value | 1 << bit,
                mask: t.mask,
            });
            next.push(Tnum {
                value: t.value,
                mask: t.mask | 1 << bit,
            });
        }
        tnums = next;
    }
    for t in tnums {
        let members: Vec<u64> = (0..64).filter(|&v| t.contains(v)).collect();
        for x in 0..70 {
            assert_eq!(
                t.min_ge(x),
                members.iter().copied().find(|&v| v >= x),
                "{t:?} min_ge {x}"
            );
            assert_eq!(
                t.max_le(x),
                members.iter().copied().rev().find(|&v| v <= x),
                "{t:?} max_le {x}"
            );
        }
    }
    // Wide tnums: the answer is a member on the right side of x, and no random member
    // beats it.
    let mut r = Rng::new(77);
    for _ in 0..iters(2000) {
        let m = r.mask();
        let t = Tnum {
            value: r.value() & !m,
            mask: m,
        };
        let x = r.value();
        let lo = t.min_ge(x);
        let hi = t.max_le(x);
        for _ in 0..8 {
            let y = t.value | (r.next() & t.mask);
            if y >= x {
                assert!(
                    lo.is_some_and(|l| l <= y && t.contains(l) && l >= x),
                    "{t:?} min_ge {x:#x}: {lo:?} vs {y:#x}"
                );
            }
            if y <= x {
                assert!(
                    hi.is_some_and(|h| h >= y && t.contains(h) && h <= x),
                    "{t:?} max_le {x:#x}: {hi:?} vs {y:#x}"
                );
            }
        }
    }
}

#[test]
fn normalize_keeps_exactly_the_members() {
    let mut r = Rng::new(0xfeed_beef);
    let mut kept = 0;
    for _ in 0..iters(3000) {
        let v = r.value();
        let raw = raw_around(&mut r, v, true);
        let mut n = raw;
        let ok = n.normalize();
        let mut probes = vec![v, raw.umin, raw.umax, raw.smin as u64, raw.smax as u64];
        probes.extend((0..6).map(|_| raw.bits.value | (r.next() & raw.bits.mask)));
        probes.extend((0..6).map(|_| v ^ (r.next() & r.mask())));
        for u in probes {
            if ok {
                assert_eq!(n.contains(u), raw.contains(u), "{raw:?} -> {n:?} at {u:#x}");
            } else {
                assert!(!raw.contains(u), "{raw:?} called empty but holds {u:#x}");
            }
        }
        if ok {
            kept += 1;
            // A fixpoint: normalizing again changes nothing.
            let mut again = n;
            assert!(again.normalize());
            assert_eq!(again, n, "from {raw:?}");
        }
    }
    assert!(
        kept > iters(3000) / 2,
        "too few non-empty raw values: {kept}"
    );
}

#[test]
fn alu_is_sound() {
    let mut r = Rng::new(0x0bad_cafe_f00d_0001);
    for _ in 0..iters(400) {
        let (a, x) = gen(&mut r, 2);
        let (b, y) = if r.below(3) == 0 {
            let v = r.value();
            (Scalar::constant(v), v)
        } else if r.below(3) == 0 {
            let v = r.below(70);
            (Scalar::range_u64(v, v + r.below(8)), v)
        } else {
            gen(&mut r, 2)
        };
        let xs = members(&mut r, &a, x, 5);
        let ys = members(&mut r, &b, y, 5);
        for op in OPS {
            for w in WIDTHS {
                let s = Scalar::alu(op, w, &a, &b);
                for &x in &xs {
                    for &y in &ys {
                        let v = c_alu(op, w, x, y);
                        assert!(
                            s.contains(v),
                            "{op:?} {w:?}: {a:?} ({x:#x}), {b:?} ({y:#x})\n -> {s:?} lacks {v:#x}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn unary_ops_are_sound() {
    let mut r = Rng::new(0x5eed);
    for _ in 0..iters(800) {
        let (a, x) = gen(&mut r, 2);
        let xs = members(&mut r, &a, x, 8);
        for w in WIDTHS {
            let n = a.neg(w);
            for bits in [8u8, 16, 32] {
                let m = a.movsx(w, bits);
                for &x in &xs {
                    assert!(
                        m.contains(c_movsx(w, bits, x)),
                        "movsx {w:?} {bits}: {a:?} ({x:#x}) -> {m:?}"
                    );
                }
            }
            for &x in &xs {
                assert!(
                    n.contains(c_neg(w, x)),
                    "neg {w:?}: {a:?} ({x:#x}) -> {n:?}"
                );
            }
        }
        for o in [Order::Le, Order::Be, Order::Swap] {
            for bits in [16u8, 32, 64] {
                let e = a.endian(o, bits);
                for &x in &xs {
                    assert!(
                        e.contains(c_endian(o, bits, x)),
                        "{o:?}{bits}: {a:?} ({x:#x}) -> {e:?}"
                    );
                }
            }
        }
    }
    for size in [1u32, 2, 4, 8] {
        for signed in [false, true] {
            let s = Scalar::loaded(size, signed);
            for _ in 0..200 {
                let raw = r.value();
                let v = match (size, signed) {
                    (8, _) => raw,
                    (n, false) => raw & umax_of(n * 8),
                    (n, true) => sview(raw, n * 8) as u64,
                };
                assert!(s.contains(v), "loaded({size}, {signed}) = {s} lacks {v:#x}");
            }
        }
    }
}

#[test]
fn refine_is_sound() {
    let mut r = Rng::new(0xabcd_0123);
    let (mut taken, mut fell) = (0, 0);
    for _ in 0..iters(500) {
        let (a, x) = gen(&mut r, 2);
        // Compare with nearby values often, so equalities and bounds are hit.
        let (b, y) = match r.below(4) {
            0 => {
                let v = members(&mut r, &a, x, 4)[r.below(1) as usize]
                    .wrapping_add(r.below(3))
                    .wrapping_sub(1);
                (Scalar::constant(v), v)
            }
            1 => {
                let v = r.value();
                (Scalar::constant(v), v)
            }
            _ => gen(&mut r, 2),
        };
        let xs = members(&mut r, &a, x, 4);
        let ys = members(&mut r, &b, y, 4);
        for c in CONDS {
            for w in WIDTHS {
                let t = Scalar::refine(c, w, &a, &b, true);
                let f = Scalar::refine(c, w, &a, &b, false);
                for &x in &xs {
                    for &y in &ys {
                        let holds = c_cond(c, w, x, y);
                        let edge = if holds { &t } else { &f };
                        let ok = edge.is_some_and(|(a2, b2)| a2.contains(x) && b2.contains(y));
                        assert!(
                            ok,
                            "{c:?} {w:?} {holds}: {a:?} ({x:#x}), {b:?} ({y:#x})\n -> {edge:?}"
                        );
                        if holds {
                            taken += 1;
                        } else {
                            fell += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(taken > 1000 && fell > 1000, "{taken} {fell}");
}

#[test]
fn join_and_subsumes_are_sound() {
    let mut r = Rng::new(0x7777_1111);
    for _ in 0..iters(1500) {
        let (a, x) = gen(&mut r, 2);
        let (b, y) = gen(&mut r, 2);
        let j = a.join(&b);
        let xs = members(&mut r, &a, x, 6);
        let ys = members(&mut r, &b, y, 6);
        for &v in xs.iter().chain(&ys) {
            assert!(j.contains(v), "join {a:?} {b:?} -> {j:?} lacks {v:#x}");
        }
        // Precision: the join covers both operands, a value covers itself.
        assert!(j.subsumes(&a) && j.subsumes(&b), "{a:?} {b:?} -> {j:?}");
        assert!(a.subsumes(&a), "{a:?}");
        // Soundness: whenever subsumes says yes, every sampled member agrees.
        let c = Scalar::refine(r.pick(&CONDS), r.pick(&WIDTHS), &a, &b, r.coin()).map(|p| p.0);
        let pairs = [
            (a, b, &ys),
            (b, a, &xs),
            (Scalar::unknown(), a, &xs),
            (j, a, &xs),
        ];
        for (big, small, ms) in pairs {
            if big.subsumes(&small) {
                for &v in ms {
                    assert!(
                        big.contains(v),
                        "{big:?} subsumes {small:?} but lacks {v:#x}"
                    );
                }
            }
        }
        if let Some(c) = c {
            let cs = members(&mut r, &c, c.umin, 6);
            if a.subsumes(&c) {
                assert!(cs.iter().all(|&v| a.contains(v)), "{a:?} subsumes {c:?}");
            }
        }
        // Against a constant, subsumes is exactly contains.
        for v in [
            a.umin.wrapping_sub(1),
            a.umax.wrapping_add(1),
            (a.smin as u64).wrapping_sub(1),
            x,
            x ^ 1,
            x ^ (1 << 40),
        ] {
            assert_eq!(
                a.subsumes(&Scalar::constant(v)),
                a.contains(v),
                "{a:?} vs {v:#x}"
            );
        }
    }
}

#[test]
fn arbitrary_inputs_never_panic() {
    // Fields as a caller might fill them, inconsistent or empty ones included.
    let mut r = Rng::new(0xdead_0001);
    let raw = |r: &mut Rng| {
        let v = r.value();
        let mut s = raw_around(r, v, true);
        s.bits.value = r.value();
        if r.coin() {
            (s.umin, s.umax) = (r.value(), r.value());
        }
        if r.coin() {
            (s.s32min, s.s32max) = (r.value() as i32, r.value() as i32);
        }
        s
    };
    for _ in 0..iters(300) {
        let (a, b) = (raw(&mut r), raw(&mut r));
        for w in WIDTHS {
            for op in OPS {
                let _ = Scalar::alu(op, w, &a, &b);
            }
            for c in CONDS {
                let _ = Scalar::refine(c, w, &a, &b, r.coin());
            }
            let _ = (a.neg(w), a.movsx(w, r.pick(&[8, 16, 32])));
        }
        let _ = (
            a.endian(Order::Be, r.pick(&[16, 32, 64])),
            a.join(&b),
            a.subsumes(&b),
            a.to_string(),
        );
        let mut n = a;
        let _ = n.normalize();
    }
}

// ---- precision: what real programs need ----

fn alu(op: AluOp, a: &Scalar, b: u64) -> Scalar {
    Scalar::alu(op, Width::W64, a, &Scalar::constant(b))
}

#[test]
fn masks_shifts_and_adds_stay_precise() {
    let x = Scalar::unknown();
    let m = alu(AluOp::And, &x, 0xff);
    assert_eq!((m.umin, m.umax, m.smin, m.smax), (0, 255, 0, 255));
    assert_eq!(
        m.bits,
        Tnum {
            value: 0,
            mask: 0xff
        }
    );
    let s = alu(AluOp::Lsh, &alu(AluOp::And, &x, 7), 3);
    assert_eq!(
        s.bits,
        Tnum {
            value: 0,
            mask: 0x38
        }
    );
    assert_eq!((s.umin, s.umax), (0, 56));
    let h = alu(AluOp::Rsh, &x, 60);
    assert_eq!((h.umin, h.umax), (0, 15));
    let a = Scalar::alu(
        AluOp::Add,
        Width::W64,
        &Scalar::range_u64(10, 20),
        &Scalar::range_u64(100, 200),
    );
    assert_eq!((a.umin, a.umax, a.smin, a.smax), (110, 220, 110, 220));
    let d = Scalar::alu(
        AluOp::Sub,
        Width::W64,
        &Scalar::range_u64(10, 20),
        &Scalar::range_u64(0, 5),
    );
    assert_eq!((d.umin, d.umax), (5, 20));
    let p = Scalar::alu(
        AluOp::Mul,
        Width::W64,
        &Scalar::range_u64(0, 10),
        &Scalar::constant(12),
    );
    assert_eq!((p.umin, p.umax), (0, 120));
    assert_eq!(p.bits.value & 3, 0, "a multiple of 4");
    let o = alu(AluOp::Or, &alu(AluOp::And, &x, 0xf0), 1);
    assert_eq!((o.umin, o.umax), (1, 0xf1));
    let ar = alu(AluOp::Arsh, &Scalar::range_i64(-1000, 1000), 3);
    assert_eq!((ar.smin, ar.smax), (-125, 125));
    // A variable shift by a small count.
    let v = Scalar::alu(
        AluOp::Lsh,
        Width::W64,
        &Scalar::constant(1),
        &alu(AluOp::And, &x, 3),
    );
    assert_eq!((v.umin, v.umax), (1, 8));
    // The sign-extension idiom `r <<= 32; r s>>= 32`.
    let w = Scalar::alu(
        AluOp::Add,
        Width::W32,
        &Scalar::range_i64(-6, 4),
        &Scalar::constant(1),
    );
    let e = alu(AluOp::Arsh, &alu(AluOp::Lsh, &w, 32), 32);
    assert_eq!((e.smin, e.smax), (-5, 5));
    // Signed ranges survive 32-bit arithmetic.
    let w = Scalar::alu(
        AluOp::Add,
        Width::W32,
        &Scalar::range_i64(-5, 5),
        &Scalar::constant(1),
    );
    assert_eq!((w.s32min, w.s32max), (-4, 6));
}

#[test]
fn thirty_two_bit_results_are_zero_extended() {
    let x = Scalar::unknown();
    for op in OPS {
        let r = Scalar::alu(op, Width::W32, &x, &x);
        assert!(r.umax <= 0xffff_ffff && r.smin >= 0, "{op:?}: {r}");
    }
    let r = Scalar::alu(AluOp::Mov, Width::W32, &x, &Scalar::constant(u64::MAX));
    assert_eq!(r.as_const(), Some(0xffff_ffff));
    let r = Scalar::alu(
        AluOp::Add,
        Width::W32,
        &Scalar::constant(0xffff_ffff),
        &Scalar::constant(1),
    );
    assert_eq!(r.as_const(), Some(0));
    let r = Scalar::alu(AluOp::And, Width::W32, &x, &Scalar::constant(0xff));
    assert_eq!((r.umin, r.umax), (0, 255));
    let r = Scalar::alu(
        AluOp::Lsh,
        Width::W32,
        &Scalar::constant(1),
        &Scalar::constant(35),
    );
    assert_eq!(r.as_const(), Some(8), "count masked with 31");
}

#[test]
fn division_and_modulo() {
    let x = Scalar::unknown();
    let m = alu(AluOp::Mod, &x, 16);
    assert_eq!((m.umin, m.umax), (0, 15));
    let m = alu(AluOp::Mod, &x, 10);
    assert_eq!((m.umin, m.umax), (0, 9));
    let d = alu(AluOp::Div, &x, 16);
    assert_eq!(d.umax, u64::MAX >> 4);
    let d = alu(AluOp::Div, &Scalar::range_u64(100, 200), 10);
    assert_eq!((d.umin, d.umax), (10, 20));
    assert_eq!(alu(AluOp::Div, &x, 0).as_const(), Some(0));
    assert_eq!(
        alu(AluOp::Mod, &Scalar::range_u64(3, 9), 0),
        Scalar::range_u64(3, 9)
    );
    let m32 = Scalar::alu(
        AluOp::Mod,
        Width::W32,
        &Scalar::constant(0x1_0000_0007),
        &Scalar::constant(0),
    );
    assert_eq!(
        m32.as_const(),
        Some(7),
        "32-bit mod by zero keeps the low half"
    );
    let min = Scalar::constant(i64::MIN as u64);
    assert_eq!(
        alu(AluOp::SDiv, &min, u64::MAX).as_const(),
        Some(i64::MIN as u64)
    );
    assert_eq!(alu(AluOp::SMod, &min, u64::MAX).as_const(), Some(0));
    let min32 = Scalar::constant(0x8000_0000);
    let r = Scalar::alu(AluOp::SDiv, Width::W32, &min32, &Scalar::constant(u64::MAX));
    assert_eq!(r.as_const(), Some(0x8000_0000));
    let sm = alu(AluOp::SMod, &x, 16);
    assert_eq!((sm.smin, sm.smax), (-15, 15));
    let sm = alu(AluOp::SMod, &Scalar::range_i64(-100, -1), 7);
    assert_eq!((sm.smin, sm.smax), (-6, 0));
    let sd = alu(AluOp::SDiv, &Scalar::range_i64(-100, 50), (-4i64) as u64);
    assert_eq!((sd.smin, sd.smax), (-12, 25));
}

#[test]
fn loads_endian_movsx() {
    assert_eq!(Scalar::loaded(1, false), Scalar::range_u64(0, 255));
    let s = Scalar::loaded(2, true);
    assert_eq!((s.smin, s.smax), (-32768, 32767));
    let x = Scalar::unknown();
    let b = x.endian(Order::Be, 16);
    assert_eq!((b.umin, b.umax), (0, 0xffff));
    let b = Scalar::constant(0x1234).endian(Order::Swap, 16);
    assert_eq!(b.as_const(), Some(0x3412));
    let l = x.endian(Order::Le, 32);
    assert_eq!(l.umax, 0xffff_ffff);
    let m = Scalar::range_u64(0, 100).movsx(Width::W64, 8);
    assert_eq!((m.smin, m.smax), (0, 100));
    let m = x.movsx(Width::W64, 8);
    assert_eq!((m.smin, m.smax), (-128, 127));
    let m = Scalar::constant(0xff).movsx(Width::W32, 8);
    assert_eq!(m.as_const(), Some(0xffff_ffff));
}

#[test]
fn branches_narrow_and_detect_impossible_edges() {
    let x = Scalar::unknown();
    let ten = Scalar::constant(10);
    let (t, _) = Scalar::refine(Cond::Gt, Width::W64, &x, &ten, true).unwrap();
    assert_eq!(t.umin, 11);
    let (f, _) = Scalar::refine(Cond::Gt, Width::W64, &x, &ten, false).unwrap();
    assert_eq!((f.umin, f.umax), (0, 10));
    let (s, _) = Scalar::refine(Cond::Sge, Width::W64, &x, &Scalar::constant(0), true).unwrap();
    assert_eq!((s.smin, s.umax), (0, i64::MAX as u64));
    let (e, _) = Scalar::refine(Cond::Eq, Width::W64, &x, &ten, true).unwrap();
    assert_eq!(e.as_const(), Some(10));
    let (n, _) =
        Scalar::refine(Cond::Ne, Width::W64, &Scalar::range_u64(10, 20), &ten, true).unwrap();
    assert_eq!(n.umin, 11);
    // Impossible edges.
    assert!(Scalar::refine(
        Cond::Eq,
        Width::W64,
        &Scalar::constant(5),
        &Scalar::constant(6),
        true
    )
    .is_none());
    assert!(Scalar::refine(
        Cond::Gt,
        Width::W64,
        &Scalar::range_u64(0, 10),
        &Scalar::constant(20),
        true
    )
    .is_none());
    assert!(Scalar::refine(Cond::Lt, Width::W64, &x, &Scalar::constant(0), true).is_none());
    let even = alu(AluOp::Lsh, &x, 1);
    assert!(Scalar::refine(Cond::Eq, Width::W64, &even, &Scalar::constant(7), true).is_none());
    assert!(Scalar::refine(Cond::Set, Width::W64, &even, &Scalar::constant(1), true).is_none());
    // jset: not taken clears the bits; taken on one bit sets it.
    let (c, _) = Scalar::refine(Cond::Set, Width::W64, &x, &Scalar::constant(0xf0), false).unwrap();
    assert_eq!(c.bits.mask & 0xf0, 0);
    assert_eq!(c.bits.value & 0xf0, 0);
    let (c, _) = Scalar::refine(Cond::Set, Width::W64, &x, &Scalar::constant(4), true).unwrap();
    assert!(c.bits.value & 4 != 0 && c.umin == 4);
    // A 32-bit compare narrows the 64-bit range when the high half is known zero.
    let z = Scalar::alu(AluOp::Mov, Width::W32, &x, &x);
    let (c, _) = Scalar::refine(Cond::Lt, Width::W32, &z, &Scalar::constant(100), true).unwrap();
    assert_eq!((c.umin, c.umax), (0, 99));
    // ... and only the low half when it is not.
    let (c, _) = Scalar::refine(Cond::Lt, Width::W32, &x, &Scalar::constant(100), true).unwrap();
    assert_eq!(
        (c.u32min, c.u32max, c.umax),
        (0, 99, u64::MAX - (0xffff_ffff - 99))
    );
    // The mask-then-bound idiom.
    let m = alu(AluOp::And, &x, 0xff);
    let (c, _) = Scalar::refine(Cond::Lt, Width::W64, &m, &Scalar::constant(16), true).unwrap();
    assert_eq!((c.umin, c.umax), (0, 15));
    // Both operands narrow: a < b with b <= 10 puts a below 10.
    let (a2, b2) =
        Scalar::refine(Cond::Lt, Width::W64, &x, &Scalar::range_u64(3, 10), true).unwrap();
    assert_eq!((a2.umax, b2.umin), (9, 3));
}

#[test]
fn join_subsumes_display() {
    let j = Scalar::constant(1).join(&Scalar::constant(3));
    assert_eq!((j.umin, j.umax, j.bits), (1, 3, Tnum { value: 1, mask: 2 }));
    assert!(Scalar::range_u64(0, 10).subsumes(&Scalar::range_u64(2, 5)));
    assert!(!Scalar::range_u64(2, 5).subsumes(&Scalar::range_u64(0, 10)));
    assert!(Scalar::unknown().subsumes(&Scalar::range_u64(2, 5)));
    assert_eq!(Scalar::constant(7).to_string(), "7");
    assert_eq!(Scalar::constant(u64::MAX).to_string(), "-1");
    assert_eq!(Scalar::constant(0xdead_beef).to_string(), "0xdeadbeef");
    assert_eq!(Scalar::unknown().to_string(), "scalar()");
    let m = alu(AluOp::And, &Scalar::unknown(), 0xff);
    assert_eq!(m.to_string(), "scalar(umin=0,umax=255,var=(0x0; 0xff))");
    assert_eq!(
        Scalar::loaded(1, true).to_string(),
        "scalar(smin=-128,smax=127)"
    );
}
