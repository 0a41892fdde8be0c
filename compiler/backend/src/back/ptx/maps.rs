//! Map helpers: calls of the runtime's map functions (specialised for a hash map the
//! verifier pinned) and the lookups and updates inlined with one map's constants: arrays,
//! per-thread and per-warp arrays, hash maps and their miss memo.

use super::calls::{lowering, LOOKUP, UPDATE};
use super::frame::{folded, Fp};
use super::func::FuncWriter;
use super::module::{GPU_COPY_NEED, MODULE_SCOPE_NEED, SPEC_NEED};
use super::symbols::{map_addr_symbol, map_counts_symbol, map_data_symbol, map_desc_symbol};
use super::SHARDS;
use crate::isa::insn::Insn;
use crate::isa::table::{CallKind, Kind, Size};
use bpf2ptx_runtime::maps::HashAddrs;
use bpf2ptx_runtime::{desc, MapKind};
use bpf2ptx_runtime::{is_helper, Lowering};

impl FuncWriter<'_> {
    /// The runtime's hash function for map helper call `i` (1-3) when the verifier pinned
    /// the call to one hash map ([`MapKind::is_hash`]).
    fn pinned_hash_helper(&self, i: usize) -> Option<(u32, &'static str)> {
        let m = self.facts.call_map.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        if !map.is(MapKind::is_hash) {
            return None;
        }
        bpf2ptx_runtime::maps::HASH_HELPERS
            .iter()
            .find(|(id, _)| i64::from(*id) == self.prog.insns[i].imm)
            .map(|(_, name)| (m, *name))
    }

    /// A call of map helper 1-3 (instruction `i`) into the runtime: when the verifier
    /// pinned the call to one hash map, that map's specialisation of the hash function
    /// (past the type dispatch, with the map's sizes and type as constants:
    /// `maps::specialized_function`; same checks, same results), else the generic helper.
    pub(super) fn map_call(&mut self, i: usize) {
        let ins = self.prog.insns[i];
        let Some(Lowering::Map {
            runtime: generic,
            args: argc,
        }) = lowering(ins.imm)
        else {
            unreachable!("map_call is reached for map helpers only")
        };
        let name = match self.pinned_hash_helper(i) {
            Some((m, base)) => {
                self.need.insert(format!("{SPEC_NEED}{base}:{m}"));
                if !self.gpu_copy(m) {
                    self.need.insert(MODULE_SCOPE_NEED.into());
                }
                let desc = map_desc_symbol(&self.obj.maps[m as usize].name);
                bpf2ptx_runtime::maps::specialized_name(base, &desc)
            }
            None => {
                self.need.insert(MODULE_SCOPE_NEED.into());
                generic.to_string()
            }
        };
        self.need.insert("maps".into());
        self.l("{");
        let mut params = Vec::new();
        for r in 1..=argc {
            self.l(format!(".param .b64 bpf_h{r};"));
            self.l(format!("st.param.b64 [bpf_h{r}], %r{r};"));
            params.push(format!("bpf_h{r}"));
        }
        self.l(".param .b64 bpf_hr;");
        self.l(format!(
            "call.uni (bpf_hr), {name}, ({});",
            params.join(", ")
        ));
        self.l("ld.param.b64 %r0, [bpf_hr];");
        self.l("}");
    }

    /// The hash map, key slot and key width of instruction `i` when it is a
    /// `map_lookup_elem` of a hash map ([`MapKind::is_hash`]) or a `map_update_elem` of a
    /// plain one (hash, GPU hash) that the verifier pinned to one map, whose key of 1, 2, 4
    /// or 8 bytes is one aligned slot of this frame: inlined
    /// ([`FuncWriter::inline_hash_lookup`], [`FuncWriter::inline_hash_update`]).
    ///
    /// The instruction kind is tested first, inline at the caller: this runs for every
    /// instruction of a function (the memo scan), and the rest is for helper calls only.
    /// `matches!`, not `!=`: `Kind`'s derived `eq` is an out-of-line call from this crate.
    #[inline]
    pub(super) fn hash_inline(
        &self,
        i: usize,
        fp: &[Fp; 11],
        frame: u32,
    ) -> Option<(u32, i64, Size)> {
        let ins = self.prog.insns.get(i)?;
        if !matches!(ins.kind(), Kind::Call(CallKind::Helper)) {
            return None;
        }
        self.hash_inline_call(i, ins, fp, frame)
    }

    /// [`FuncWriter::hash_inline`] for a helper call `ins` at `i`. Never inlined, so that
    /// the kind test in front of it stays small enough to inline into the scans.
    #[inline(never)]
    fn hash_inline_call(
        &self,
        i: usize,
        ins: &Insn,
        fp: &[Fp; 11],
        frame: u32,
    ) -> Option<(u32, i64, Size)> {
        use bpf2ptx_runtime::maps;
        let lookup = is_helper(ins.imm, LOOKUP);
        if !(lookup || is_helper(ins.imm, UPDATE)) {
            return None;
        }
        let m = self.facts.call_map.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        let kind_ok = if lookup {
            map.is(MapKind::is_hash)
        } else {
            matches!(map.kind(), Some(MapKind::Hash | MapKind::GpuHash))
        };
        if !kind_ok || !maps::inlinable(map.key_size, map.max_entries) {
            return None;
        }
        let size = match map.key_size {
            1 => Size::B,
            2 => Size::H,
            4 => Size::W,
            _ => Size::DW,
        };
        Some((m, folded(fp, 2, 0, size, frame)?, size))
    }

    /// The scope of the map code for map `m` (inlined, or its specialised runtime
    /// functions): `.sys` when `m` itself is host-placed, `.gpu` otherwise, also in a module
    /// whose other maps are host-placed ([`FuncWriter::gpu_copy`]).
    fn map_scope(&self, m: u32) -> bpf2ptx_runtime::Scope {
        if self.host.get(m as usize).copied().unwrap_or(false) {
            bpf2ptx_runtime::Scope::Sys
        } else {
            bpf2ptx_runtime::Scope::Gpu
        }
    }

    /// Whether code pinned to map `m` calls the runtime's `.gpu` copy of the map
    /// functions (`maps::gpu_copy`): `m` is in device memory in a module whose own map
    /// functions are at `.sys` (it has a host-placed map). Records the need.
    fn gpu_copy(&mut self, m: u32) -> bool {
        let copy = self.sys && self.map_scope(m) == bpf2ptx_runtime::Scope::Gpu;
        if copy {
            self.need.insert(GPU_COPY_NEED.into());
        }
        copy
    }

    /// `map_lookup_elem` on a hash map, inlined ([`FuncWriter::hash_inline`],
    /// `maps::inline_hash_lookup`): the key word from its frame slot, then the runtime's
    /// find with the key and value sizes as constants. A miss fills the miss memo.
    pub(super) fn inline_hash_lookup(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, slot, size)) = self.hash_inline(self.cur, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let (ks, vs, max) = (map.key_size, map.value_size, map.max_entries);
        let lru = map.kind() == Some(MapKind::LruHash);
        self.need.insert("maps".into());
        self.l("{");
        self.l(".reg .b64 %hkw;");
        self.local_load("%hkw", false, slot, size, false);
        let tag = self.fresh_label();
        let (data, counts, words) = (
            map_data_symbol(&map.name),
            map_counts_symbol(&map.name),
            map_addr_symbol(&map.name),
        );
        // Host-placed: the descriptor, which the loader binds; rebound: the address
        // words; else the module's own storage and counts block.
        let addrs = if self.host.get(m as usize).copied().unwrap_or(false) {
            HashAddrs::Descriptor
        } else if self.addr_word.get(m as usize).copied().unwrap_or(false) {
            HashAddrs::Words(&words)
        } else if self.rebind {
            HashAddrs::Descriptor
        } else {
            HashAddrs::Symbols {
                data: &data,
                counts: &counts,
            }
        };
        let text = bpf2ptx_runtime::maps::inline_hash_lookup(
            "%r1",
            addrs,
            ks,
            vs,
            max,
            lru,
            "%hkw",
            "%r0",
            &tag,
            self.map_scope(m),
        );
        let text = if self.gpu_copy(m) {
            bpf2ptx_runtime::maps::to_gpu_copy(&text)
        } else {
            if lru {
                // It calls the runtime's stamp.
                self.need.insert(MODULE_SCOPE_NEED.into());
            }
            text
        };
        for line in text.lines() {
            self.l(line);
        }
        self.l("}");
        true
    }

    /// `map_update_elem` on a plain hash map, with the refusal of a full map inlined
    /// before the runtime's update (`maps::inline_hash_update`): taken when the miss memo
    /// says this thread's last lookup of the key, with no call since, missed.
    pub(super) fn inline_hash_update(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let i = self.cur;
        let Some((m, slot, size)) = self.hash_inline(i, fp, frame) else {
            return false;
        };
        self.need.insert("maps".into());
        self.l("{");
        self.l(".reg .b64 %hkw;");
        self.local_load("%hkw", false, slot, size, false);
        let tag = self.fresh_label();
        let (head, tail) = bpf2ptx_runtime::maps::inline_hash_update(
            "%r1",
            "%hkw",
            "%r4",
            "%r0",
            &tag,
            self.map_scope(m),
        );
        for line in head.lines() {
            self.l(line);
        }
        self.map_call(i);
        for line in tail.lines() {
            self.l(line);
        }
        self.l("}");
        true
    }

    /// The map and key slot of instruction `i` when it is a `map_lookup_elem` that
    /// [`FuncWriter::inline_lookup`] inlines.
    pub(super) fn lookup_map(&self, i: usize, fp: &[Fp; 11], frame: u32) -> Option<(u32, i64)> {
        let ins = self.prog.insns.get(i)?;
        if ins.kind() != Kind::Call(CallKind::Helper) || !is_helper(ins.imm, LOOKUP) {
            return None;
        }
        let m = self.facts.call_map.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        if !map.is(MapKind::is_array) || map.key_size != 4 {
            return None;
        }
        Some((m, folded(fp, 2, 0, Size::W, frame)?))
    }

    /// `map_lookup_elem` on an array ([`MapKind::is_array`]) the verifier pinned to one map, with
    /// the key in a known stack slot: inline, with the map's entries, stride and sharding
    /// as constants. Returns false (nothing emitted) when the call does not qualify and
    /// goes to the runtime function instead.
    pub(super) fn inline_lookup(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, slot)) = self.lookup_map(self.cur, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let entries = map.max_entries;
        let stride = bpf2ptx_runtime::maps::round8(u64::from(map.value_size));
        let desc = map_desc_symbol(&map.name);
        if map.is(MapKind::is_per_unit) {
            let warp = map.kind() == Some(MapKind::PerWarpArray);
            self.per_unit_lookup(slot, entries, stride, &desc, warp);
            return true;
        }
        let sharded = self.sharded.get(m as usize).copied().unwrap_or(false);
        self.l("{");
        self.l(".reg .b32 %lk<2>;");
        self.l(".reg .b64 %lkd<3>;");
        self.l(".reg .pred %lkp<2>;");
        self.local_load("%lk0", true, slot, Size::W, false);
        self.l(format!("setp.ge.u32 %lkp0, %lk0, {entries};"));
        if self.host.get(m as usize).copied().unwrap_or(false) {
            // Host placement: the loader binds word 3 to pinned memory before a launch.
            self.l(format!("ld.global.nc.u64 %lkd0, [{desc}+{}];", desc::DATA));
            self.l("setp.eq.u64 %lkp1, %lkd0, 0;");
            self.l("or.pred %lkp0, %lkp0, %lkp1;");
        } else if self.addr_word.get(m as usize).copied().unwrap_or(false) {
            // Device placement, storage bound by the host before the module's first
            // launch (never unbound: a module the host could not bind does not run),
            // its address in the constant bank (the address word).
            self.l(format!(
                "ld.const.u64 %lkd0, [{}];",
                map_addr_symbol(&map.name)
            ));
        } else if self.rebind {
            self.l(format!("ld.global.nc.u64 %lkd0, [{desc}+{}];", desc::DATA));
        } else {
            // Device placement: the module's own storage, which word 3 names too (a
            // constant address, no load on the probe's path; specs/abi.md).
            self.l(format!("mov.u64 %lkd0, {};", map_data_symbol(&map.name)));
            self.l("cvta.global.u64 %lkd0, %lkd0;");
        }
        self.l(format!("mul.wide.u32 %lkd1, %lk0, {stride};"));
        if sharded {
            self.l("mov.u32 %lk1, %smid;");
            self.l(format!("and.b32 %lk1, %lk1, {};", SHARDS - 1));
            self.l(format!(
                "mul.wide.u32 %lkd2, %lk1, {};",
                bpf2ptx_runtime::maps::replica_bytes(entries, map.value_size)
            ));
            self.l("add.u64 %lkd1, %lkd1, %lkd2;");
        }
        let hit = self.facts.lookup_in_range.get(self.cur).copied().flatten() == Some(true);
        if hit && !self.host.get(m as usize).copied().unwrap_or(false) {
            self.l("add.u64 %r0, %lkd0, %lkd1;");
            self.nonnull_r0 = true;
        } else {
            self.l("add.u64 %lkd1, %lkd0, %lkd1;");
            self.l("selp.u64 %r0, 0, %lkd1, %lkp0;");
            // NULL exactly when %lkp0: the storage's address is never 0 (the module's
            // own, or bound; host placement tests word 3 for 0 into %lkp0 too).
            if self.null_pred_reg {
                self.l("mov.pred %lknull, %lkp0;");
                self.null_pred = Some(0);
            }
        }
        self.l("}");
        true
    }

    /// Whether instruction `i` is a `map_lookup_elem` that [`FuncWriter::inline_lookup`]
    /// inlines on an array (not per-unit) and whose result may be NULL: the lookups that
    /// set `%lknull` ([`FuncWriter::null_pred`]).
    pub(super) fn inline_lookup_may_miss(&self, i: usize, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, _)) = self.lookup_map(i, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let hit = self.facts.lookup_in_range.get(i).copied().flatten() == Some(true);
        let host = self.host.get(m as usize).copied().unwrap_or(false);
        !map.is(MapKind::is_per_unit) && (!hit || host)
    }

    /// Inlined `map_lookup_elem` on a per-thread array or a per-warp array ([`MapKind::is_per_unit`]):
    /// the calling thread's (warp's) slot of key `k`, `data + (k * aux + id) * stride`
    /// (words 3 and 4, which the host binds for the launch; id the global thread or warp
    /// id), or NULL when the map is unbound, the key is out of range or the id is beyond
    /// what the storage was sized for — the runtime's rules (`bpf2ptx_map_array_slot`),
    /// without the call.
    fn per_unit_lookup(&mut self, slot: i64, entries: u32, stride: u64, desc: &str, warp: bool) {
        self.l("{");
        self.l(".reg .b32 %lk<1>;");
        self.l(".reg .b64 %lkd<4>;");
        self.l(".reg .pred %lkp<2>;");
        self.local_load("%lk0", true, slot, Size::W, false);
        self.l(format!("ld.global.nc.u64 %lkd0, [{desc}+{}];", desc::DATA));
        self.l(format!("ld.global.nc.u64 %lkd1, [{desc}+{}];", desc::AUX));
        self.global_id("%lkd2", warp);
        self.l(format!("setp.ge.u32 %lkp0, %lk0, {entries};"));
        self.l("setp.ge.u64 %lkp1, %lkd2, %lkd1;");
        self.l("or.pred %lkp0, %lkp0, %lkp1;");
        self.l("setp.eq.u64 %lkp1, %lkd0, 0;");
        self.l("or.pred %lkp0, %lkp0, %lkp1;");
        self.l("cvt.u64.u32 %lkd3, %lk0;");
        self.l("mad.lo.u64 %lkd3, %lkd3, %lkd1, %lkd2;");
        self.l(format!("mad.lo.u64 %lkd3, %lkd3, {stride}, %lkd0;"));
        self.l("selp.u64 %r0, 0, %lkd3, %lkp0;");
        self.l("}");
    }
}
