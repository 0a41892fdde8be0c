//! Facts for the backend gathered along the paths: the regions and alignment of each
//! access, and once every path is explored, which plain counter updates become
//! `Facts::plain_add` and which maps stay shardable.

use super::{same_on_every_path, Explorer};
use crate::scalar::Scalar;
use crate::state::Region;
use crate::{PlainAdd, Regions};
use bpf2ptx_compiler::isa::table::Size;
use bpf2ptx_runtime::MapKind;

impl<'a> Explorer<'a> {
    /// Every path explored: a triple becomes `Facts::plain_add` where on every path its
    /// load and store touch only map values, aligned, and none of a per-thread array (a
    /// thread's own slots, like its stack: nothing races there and an atomic only costs).
    /// Pruned paths agree: a pruned state's pointers have the regions of the state that
    /// pruned it and offsets within its offsets, so they touch nothing else and stay
    /// aligned. The maps a triple touched stay shardable only if it became a 64-bit
    /// atomic add.
    pub(super) fn finish_plain_adds(&mut self) {
        let f = &mut self.facts;
        let mut fused = vec![false; self.triples.len()];
        for (k, t) in self.triples.iter().enumerate() {
            let map_value = |i: usize| f.regions[i] == Regions::MAP_VALUE && f.aligned[i];
            let private = self
                .triple_maps
                .range((k, 0)..=(k, u32::MAX))
                .any(|&(_, m)| {
                    self.obj.maps[m as usize].kind().map(MapKind::layout)
                        == Some(MapKind::PerThreadArray)
                });
            if !(f.reached[t.load] && map_value(t.load) && map_value(t.store)) || private {
                continue;
            }
            fused[k] = true;
            f.plain_add[t.load] = Some(PlainAdd::Load);
            f.plain_add[t.add] = Some(PlainAdd::Add);
            f.plain_add[t.store] = Some(PlainAdd::Store {
                addend: t.addend,
                map: self.triple_map[k].1,
            });
        }
        for &(k, map) in &self.triple_maps {
            if !(fused[k] && self.triples[k].size == Size::DW) {
                f.map_only_adds[map as usize] = false;
            }
        }
    }

    /// Records whether this visit's access at `off + extra` is naturally aligned: the
    /// pointer's offset must be known to be a multiple of the size in its low bits.
    pub(super) fn note_alignment(&mut self, i: usize, off: &Scalar, extra: i64, size: u32) {
        let m = u64::from(size) - 1;
        let ok = off.bits.mask & m == 0 && (off.bits.value.wrapping_add(extra as u64)) & m == 0;
        self.facts.aligned[i] &= ok;
    }

    pub(super) fn note_region(&mut self, i: usize, r: Region) {
        let map = match r {
            Region::MapValue { map } => Some(map),
            _ => None,
        };
        match (map, self.triple_of[i]) {
            // Decided once every path is explored (`finish_plain_adds`).
            (Some(m), Some(k)) => {
                self.triple_maps.insert((k, m));
            }
            (Some(m), None) if !self.adding => self.facts.map_only_adds[m as usize] = false,
            _ => {}
        }
        if let Some(k) = self.triple_of[i].filter(|&k| self.triples[k].load == i) {
            let (seen, fact) = &mut self.triple_map[k];
            same_on_every_path(seen, fact, map);
        }
        let bit = match r {
            // An iterator's value lives in its stack slot.
            Region::Stack { .. } | Region::IterValue { .. } => Regions::STACK,
            Region::Ctx => Regions::CTX,
            Region::Mem => Regions::MEM,
            Region::MapValue { .. } => Regions::MAP_VALUE,
            Region::Record { .. } => Regions::RECORD,
        };
        self.facts.regions[i].insert(bit);
    }
}
