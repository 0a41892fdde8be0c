//! Atomics: BPF's atomic operations on memory (`atom`/`red` at the module's scope) and on
//! the frame (a plain read-modify-write), warp-aggregated adds of a constant, and the plain
//! counter updates the verifier fused ([`Facts::plain_add`](bpf2ptx_verifier::Facts::plain_add)).

use super::frame::{folded, Fp};
use super::func::FuncWriter;
use crate::back::Addend;
use crate::isa::table::{AtomicOp, Size};
use bpf2ptx_runtime::MapKind;

impl FuncWriter<'_> {
    /// `red.add [addr], c` for every active lane, done as one `red.add` of `c` times the
    /// group size by the lowest lane of each group of lanes with the same address
    /// (`match.any.sync` over `activemask`). The sum in memory is the same; the atomics
    /// on one line drop from 32 per warp to one.
    fn aggregated_add(&mut self, space: &str, wide: bool, addr: &str, c: u64) {
        self.ptx_62 = true;
        self.l("{");
        self.l(".reg .b32 %ag<4>;");
        self.l(".reg .b64 %agd;");
        self.l(".reg .pred %agp;");
        self.l("activemask.b32 %ag0;");
        self.l(format!("match.any.sync.b64 %ag1, {addr}, %ag0;"));
        self.l("popc.b32 %ag2, %ag1;");
        self.l("mov.u32 %ag3, %lanemask_lt;");
        self.l("and.b32 %ag3, %ag3, %ag1;");
        self.l("setp.eq.u32 %agp, %ag3, 0;");
        if wide {
            self.l("cvt.u64.u32 %agd, %ag2;");
            self.l(format!("mul.lo.u64 %agd, %agd, {c};"));
            self.l(format!("@%agp red{space}.add.u64 [{addr}], %agd;"));
        } else {
            self.l(format!("mul.lo.u32 %ag2, %ag2, {};", c as u32));
            self.l(format!("@%agp red{space}.add.u32 [{addr}], %ag2;"));
        }
        self.l("}");
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn atomic(
        &mut self,
        size: Size,
        op: AtomicOp,
        fetch: bool,
        base: u8,
        src: u8,
        off: i16,
        fp: &[Fp; 11],
        frame: u32,
    ) {
        if !fetch && op == AtomicOp::Add && self.accumulates(self.cur) {
            self.accumulate(self.cur, super::fuse::addend_operand(src, None));
            return;
        }
        // Atomics must be naturally aligned (BPF requires it too), so no byte-wise path.
        let slot = folded(fp, base, off, size, frame);
        let (space, addr) = match slot {
            None => (self.atomic_address(base, off), "%t1"),
            Some(_) => ("", ""),
        };
        let wide = size == Size::DW;
        // Operand registers: 64-bit use the BPF registers, 32-bit their low halves.
        let (v, old) = if wide {
            (format!("%r{src}"), "%t0".to_string())
        } else {
            self.l(format!("cvt.u32.u64 %w1, %r{src};"));
            ("%w1".to_string(), "%w0".to_string())
        };
        let (bt, ut) = if wide { ("b64", "u64") } else { ("b32", "u32") };
        let writeback = |w: &mut Self, reg: u8| {
            if wide {
                w.l(format!("mov.u64 %r{reg}, %t0;"));
            } else {
                w.l(format!("cvt.u64.u32 %r{reg}, %w0;"));
            }
        };
        // `.local` atomics do not exist in PTX; the frame is private to the thread, so a
        // plain read-modify-write is atomic there.
        if let Some(slot) = slot {
            self.local_load(&old, !wide, slot, size, false);
            let new = if wide { "%t3" } else { "%w2" };
            match op {
                AtomicOp::Add => self.l(format!("add.{ut} {new}, {old}, {v};")),
                AtomicOp::Or => self.l(format!("or.{bt} {new}, {old}, {v};")),
                AtomicOp::And => self.l(format!("and.{bt} {new}, {old}, {v};")),
                AtomicOp::Xor => self.l(format!("xor.{bt} {new}, {old}, {v};")),
                AtomicOp::Xchg => self.l(format!("mov.{bt} {new}, {v};")),
                AtomicOp::Cmpxchg => {
                    let r0 = if wide {
                        "%r0".to_string()
                    } else {
                        self.l("cvt.u32.u64 %w3, %r0;");
                        "%w3".to_string()
                    };
                    self.l(format!("setp.eq.{bt} %p1, {old}, {r0};"));
                    self.l(format!("selp.{bt} {new}, {v}, {old}, %p1;"));
                }
            }
            self.local_store(slot, size, new, !wide);
        } else {
            let (name, t) = match op {
                AtomicOp::Add => ("add", ut),
                AtomicOp::Or => ("or", bt),
                AtomicOp::And => ("and", bt),
                AtomicOp::Xor => ("xor", bt),
                AtomicOp::Xchg => ("exch", bt),
                AtomicOp::Cmpxchg => ("cas", bt),
            };
            if !fetch {
                if op == AtomicOp::Add {
                    let h = self.facts;
                    let c = h.atomic_add_const.get(self.cur).copied().flatten();
                    let map = h.atomic_map.get(self.cur).copied().flatten();
                    self.red_add(space, wide, &v, c, map);
                } else {
                    self.l(format!("red{space}.{name}.{t} [{addr}], {v};"));
                }
                return;
            }
            if op == AtomicOp::Cmpxchg {
                let r0 = if wide {
                    "%r0".to_string()
                } else {
                    self.l("cvt.u32.u64 %w3, %r0;");
                    "%w3".to_string()
                };
                self.l(format!("atom{space}.cas.{bt} {old}, [{addr}], {r0}, {v};"));
            } else {
                self.l(format!("atom{space}.{name}.{t} {old}, [{addr}], {v};"));
            }
        }
        if !fetch {
            return;
        }
        writeback(self, if op == AtomicOp::Cmpxchg { 0 } else { src });
    }

    /// Puts the address of an atomic on `%r{base} + off` outside the frame in `%t1`;
    /// returns the state space and scope the atomic takes (global where the verifier
    /// proved it; `.sys` when a map of the module is in host memory, unless the verifier
    /// proved the atomic is on the values of one map on every path and that map is in
    /// device memory: no host reads it while the kernel runs, so `.gpu` orders it for
    /// everyone who does).
    fn atomic_address(&mut self, base: u8, off: i16) -> &'static str {
        let global = self.proven_global();
        if global {
            self.l(format!("cvta.to.global.u64 %t1, %r{base};"));
            self.l(format!("add.u64 %t1, %t1, {off};"));
        } else {
            self.l(format!("add.u64 %t1, %r{base}, {off};"));
        }
        let on_device_map = self
            .facts
            .atomic_map
            .get(self.cur)
            .copied()
            .flatten()
            .is_some_and(|m| !self.host.get(m as usize).copied().unwrap_or(false));
        match (self.sys && !on_device_map, global) {
            (true, true) => ".sys.global",
            (true, false) => ".sys",
            (false, true) => ".global",
            (false, false) => "",
        }
    }

    /// `red.add [%t1], v` (64-bit when `wide`), v being the constant `c` on every path
    /// where that is known. Then the lanes that add to one address add once for the group
    /// ([`FuncWriter::aggregated_add`]), except into an array (`map`) whose lookups are
    /// inlined: ptxas sees that address and aggregates the warp's adds itself where it is
    /// uniform (cheaper than `match.any`); the address a runtime call returns (hash maps)
    /// it cannot.
    fn red_add(&mut self, space: &str, wide: bool, v: &str, c: Option<u64>, map: Option<u32>) {
        let array = map
            .and_then(|m| self.obj.maps.get(m as usize))
            .is_some_and(|m| m.is(MapKind::is_array_like) && m.key_size == 4);
        match c {
            Some(c) if !array => self.aggregated_add(space, wide, "%t1", c),
            _ => self.l(format!(
                "red{space}.add.{} [%t1], {v};",
                if wide { "u64" } else { "u32" }
            )),
        }
    }

    /// The store of a plain counter update the verifier fused
    /// ([`Facts::plain_add`](bpf2ptx_verifier::Facts::plain_add)): one `red.add` of the addend at the
    /// store's address (map memory, aligned: no frame slot, no byte-wise path); its load
    /// and add emitted nothing. A register addend still holds its value here, as the add
    /// that would have overwritten it was dropped.
    pub(super) fn plain_add(
        &mut self,
        size: Size,
        base: u8,
        off: i16,
        addend: Addend,
        map: Option<u32>,
    ) {
        let space = self.atomic_address(base, off);
        let wide = size == Size::DW;
        match addend {
            Addend::Const(c) => self.red_add(space, wide, &c.to_string(), Some(c), map),
            Addend::Reg(r) if wide => self.red_add(space, wide, &format!("%r{r}"), None, map),
            Addend::Reg(r) => {
                self.l(format!("cvt.u32.u64 %w1, %r{r};"));
                self.red_add(space, wide, "%w1", None, map);
            }
        }
    }
}
