//! The map types bpf2ptx knows, in one table: [`MapKind`].
//!
//! Every map type id the project reads, lays out or checks is a variant here: the Linux
//! `BPF_MAP_TYPE_*` ids, bpftime's GPU ids (1501-1504, 1512, 1513, 1527), bpftime's
//! kernel-user ids (1001, 1002, 1004, 1006; known so that they load and are refused by
//! name, see [`MapKind::is_kernel_user`]) and bpf2ptx's own per-warp array (1600). The front end refuses an id that is not in the table; the verifier, the
//! backend and the host loader ask the predicates below instead of matching ids, so a
//! class of maps ("array-like", "ring", ...) is written down once. The ids are the ABI
//! word 0 of a map's descriptor (specs/abi.md, "Maps (device runtime)").

/// One map type bpf2ptx knows. The discriminant is the map type id ([`MapKind::id`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum MapKind {
    /// `BPF_MAP_TYPE_HASH`.
    Hash = 1,
    /// `BPF_MAP_TYPE_ARRAY`.
    Array = 2,
    /// `BPF_MAP_TYPE_PROG_ARRAY`.
    ProgArray = 3,
    /// `BPF_MAP_TYPE_PERF_EVENT_ARRAY`: one GPU ring on the device.
    PerfEventArray = 4,
    /// `BPF_MAP_TYPE_PERCPU_HASH`.
    PercpuHash = 5,
    /// `BPF_MAP_TYPE_PERCPU_ARRAY`: one copy per SM on the GPU (256 replicas,
    /// `smid & 255`), which the host reads replica by replica.
    PercpuArray = 6,
    /// `BPF_MAP_TYPE_STACK_TRACE`.
    StackTrace = 7,
    /// `BPF_MAP_TYPE_CGROUP_ARRAY`.
    CgroupArray = 8,
    /// `BPF_MAP_TYPE_LRU_HASH`: a hash map that evicts an old entry instead of refusing an
    /// insertion when full.
    LruHash = 9,
    /// `BPF_MAP_TYPE_LRU_PERCPU_HASH`.
    LruPercpuHash = 10,
    /// `BPF_MAP_TYPE_LPM_TRIE`.
    LpmTrie = 11,
    /// `BPF_MAP_TYPE_ARRAY_OF_MAPS`.
    ArrayOfMaps = 12,
    /// `BPF_MAP_TYPE_HASH_OF_MAPS`.
    HashOfMaps = 13,
    /// `BPF_MAP_TYPE_DEVMAP`.
    Devmap = 14,
    /// `BPF_MAP_TYPE_SOCKMAP`.
    Sockmap = 15,
    /// `BPF_MAP_TYPE_CPUMAP`.
    Cpumap = 16,
    /// `BPF_MAP_TYPE_XSKMAP`.
    Xskmap = 17,
    /// `BPF_MAP_TYPE_SOCKHASH`.
    Sockhash = 18,
    /// `BPF_MAP_TYPE_CGROUP_STORAGE`.
    CgroupStorage = 19,
    /// `BPF_MAP_TYPE_REUSEPORT_SOCKARRAY`.
    ReuseportSockarray = 20,
    /// `BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE`.
    PercpuCgroupStorage = 21,
    /// `BPF_MAP_TYPE_QUEUE`.
    Queue = 22,
    /// `BPF_MAP_TYPE_STACK`.
    Stack = 23,
    /// `BPF_MAP_TYPE_SK_STORAGE`.
    SkStorage = 24,
    /// `BPF_MAP_TYPE_DEVMAP_HASH`.
    DevmapHash = 25,
    /// `BPF_MAP_TYPE_STRUCT_OPS`.
    StructOps = 26,
    /// `BPF_MAP_TYPE_RINGBUF`.
    Ringbuf = 27,
    /// `BPF_MAP_TYPE_INODE_STORAGE`.
    InodeStorage = 28,
    /// `BPF_MAP_TYPE_TASK_STORAGE`.
    TaskStorage = 29,
    /// `BPF_MAP_TYPE_BLOOM_FILTER`.
    BloomFilter = 30,
    /// `BPF_MAP_TYPE_USER_RINGBUF`.
    UserRingbuf = 31,
    /// `BPF_MAP_TYPE_CGRP_STORAGE`.
    CgrpStorage = 32,
    /// `BPF_MAP_TYPE_ARENA`.
    Arena = 33,
    /// Kernel-user hash map (bpftime's `BPF_MAP_TYPE_KERNEL_USER_HASH`, 1000 + the Linux
    /// id): a map shared with the Linux kernel's eBPF ([`MapKind::is_kernel_user`]).
    KernelUserHash = 1001,
    /// Kernel-user array (bpftime's `BPF_MAP_TYPE_KERNEL_USER_ARRAY`).
    KernelUserArray = 1002,
    /// Kernel-user per-CPU array (bpftime's `BPF_MAP_TYPE_KERNEL_USER_PERCPU_ARRAY`).
    KernelUserPercpuArray = 1004,
    /// Kernel-user perf event array (bpftime's `BPF_MAP_TYPE_KERNEL_USER_PERF_EVENT_ARRAY`).
    KernelUserPerfEventArray = 1006,
    /// GPU hash map (bpftime).
    GpuHash = 1501,
    /// Per-thread array (bpftime): one copy of each element per thread of the launch.
    PerThreadArray = 1502,
    /// GPU array (bpftime).
    GpuArray = 1503,
    /// GPU array shared with the Linux kernel's eBPF (bpftime's
    /// `BPF_MAP_TYPE_GPU_KERNEL_SHARED_ARRAY_MAP`): on the GPU a GPU array (1503), its
    /// [`MapKind::layout`], in device memory by default.
    GpuKernelSharedArray = 1504,
    /// Per-thread array in host memory (bpftime's `BPF_MAP_TYPE_PERGPUTD_ARRAY_HOST_MAP`):
    /// a per-thread array (1502, its [`MapKind::layout`]) placed in pinned host memory by
    /// default ([`MapKind::host_by_default`]).
    PerThreadArrayHost = 1512,
    /// Shared array in host memory (bpftime's `BPF_MAP_TYPE_GPU_ARRAY_HOST_MAP`): a GPU
    /// array (1503, its [`MapKind::layout`]) placed in pinned host memory by default, so
    /// its accesses have `.sys` scope.
    GpuArrayHost = 1513,
    /// GPU ring buffer (bpftime): takes both the ringbuf helpers and `perf_event_output`.
    GpuRingbuf = 1527,
    /// Per-warp array (bpf2ptx's own id): one copy of each element per warp of the launch,
    /// sized by the host from the launch shape.
    PerWarpArray = 1600,
}

impl MapKind {
    /// Every kind, in id order, with its name (the `BPF_MAP_TYPE_*` suffix in lower case,
    /// or bpftime's name for the GPU ids): what `bpf2ptx dump` prints and the text
    /// assembly format accepts in place of an id.
    pub const ALL: [(MapKind, &'static str); 45] = [
        (MapKind::Hash, "hash"),
        (MapKind::Array, "array"),
        (MapKind::ProgArray, "prog_array"),
        (MapKind::PerfEventArray, "perf_event_array"),
        (MapKind::PercpuHash, "percpu_hash"),
        (MapKind::PercpuArray, "percpu_array"),
        (MapKind::StackTrace, "stack_trace"),
        (MapKind::CgroupArray, "cgroup_array"),
        (MapKind::LruHash, "lru_hash"),
        (MapKind::LruPercpuHash, "lru_percpu_hash"),
        (MapKind::LpmTrie, "lpm_trie"),
        (MapKind::ArrayOfMaps, "array_of_maps"),
        (MapKind::HashOfMaps, "hash_of_maps"),
        (MapKind::Devmap, "devmap"),
        (MapKind::Sockmap, "sockmap"),
        (MapKind::Cpumap, "cpumap"),
        (MapKind::Xskmap, "xskmap"),
        (MapKind::Sockhash, "sockhash"),
        (MapKind::CgroupStorage, "cgroup_storage"),
        (MapKind::ReuseportSockarray, "reuseport_sockarray"),
        (MapKind::PercpuCgroupStorage, "percpu_cgroup_storage"),
        (MapKind::Queue, "queue"),
        (MapKind::Stack, "stack"),
        (MapKind::SkStorage, "sk_storage"),
        (MapKind::DevmapHash, "devmap_hash"),
        (MapKind::StructOps, "struct_ops"),
        (MapKind::Ringbuf, "ringbuf"),
        (MapKind::InodeStorage, "inode_storage"),
        (MapKind::TaskStorage, "task_storage"),
        (MapKind::BloomFilter, "bloom_filter"),
        (MapKind::UserRingbuf, "user_ringbuf"),
        (MapKind::CgrpStorage, "cgrp_storage"),
        (MapKind::Arena, "arena"),
        (MapKind::KernelUserHash, "kernel_user_hash"),
        (MapKind::KernelUserArray, "kernel_user_array"),
        (MapKind::KernelUserPercpuArray, "kernel_user_percpu_array"),
        (
            MapKind::KernelUserPerfEventArray,
            "kernel_user_perf_event_array",
        ),
        (MapKind::GpuHash, "gpu_hash"),
        (MapKind::PerThreadArray, "perthread_array"),
        (MapKind::GpuArray, "gpu_array"),
        (MapKind::GpuKernelSharedArray, "gpu_kernel_shared_array"),
        (MapKind::PerThreadArrayHost, "perthread_array_host"),
        (MapKind::GpuArrayHost, "gpu_array_host"),
        (MapKind::GpuRingbuf, "gpu_ringbuf"),
        (MapKind::PerWarpArray, "perwarp_array"),
    ];

    /// The kind of map type id `id`; `None` for an id bpf2ptx does not know (a map of
    /// that type is refused where it is loaded, since nothing downstream could lay it out).
    pub const fn from_id(id: u32) -> Option<MapKind> {
        let mut i = 0;
        while i < Self::ALL.len() {
            if Self::ALL[i].0 as u32 == id {
                return Some(Self::ALL[i].0);
            }
            i += 1;
        }
        None
    }

    /// The kind whose name ([`MapKind::name`]) is `name`.
    pub fn from_name(name: &str) -> Option<MapKind> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    /// The map type id: word 0 (low half) of the map's descriptor.
    pub const fn id(self) -> u32 {
        self as u32
    }

    /// The kind's name (see [`MapKind::ALL`]).
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("?", |(_, n)| *n)
    }

    /// The kind whose storage layout and device-runtime protocol this one has: a GPU array
    /// (1503) for the kernel-shared array (1504) and the host-memory shared array (1513),
    /// a per-thread array (1502) for the host-memory per-thread array (1512), the kind
    /// itself for every other. It is the id word 0 of the map's descriptor holds (the
    /// runtime's map functions dispatch on it); what differs, the default placement, is a
    /// compile-time input ([`MapKind::host_by_default`]).
    pub const fn layout(self) -> MapKind {
        match self {
            MapKind::GpuKernelSharedArray | MapKind::GpuArrayHost => MapKind::GpuArray,
            MapKind::PerThreadArrayHost => MapKind::PerThreadArray,
            k => k,
        }
    }

    /// Maps placed in pinned host memory when no `--map NAME=device` says otherwise: the
    /// rings ([`MapKind::is_ring`]), event streams the host drains while the kernel runs,
    /// and bpftime's host-memory arrays (1512, 1513). Every other kind defaults to device
    /// memory.
    pub const fn host_by_default(self) -> bool {
        self.is_ring() || matches!(self, MapKind::PerThreadArrayHost | MapKind::GpuArrayHost)
    }

    /// bpftime's kernel-user maps (1001, 1002, 1004, 1006): maps shared with the Linux
    /// kernel's eBPF through a host-side agent. They load (`bpf2ptx dump` shows them), but
    /// compiling or verifying an object that has one is refused by name: bpf2ptx runs no
    /// host-side programs.
    pub const fn is_kernel_user(self) -> bool {
        matches!(
            self,
            MapKind::KernelUserHash
                | MapKind::KernelUserArray
                | MapKind::KernelUserPercpuArray
                | MapKind::KernelUserPerfEventArray
        )
    }

    /// Hash maps (hash, GPU hash, LRU hash): one storage layout (open addressing), one
    /// lock-free protocol in [`crate::maps`], and a counts block the host reports.
    pub const fn is_hash(self) -> bool {
        matches!(self, MapKind::Hash | MapKind::GpuHash | MapKind::LruHash)
    }

    /// Arrays whose storage the module reserves (array, per-CPU array, GPU array and its
    /// kernel-shared and host-memory forms 1504 and 1513): one
    /// block of `max_entries` values indexed by a 4-byte key. A lookup with a key below
    /// `max_entries` cannot miss, and such an array may be sharded into per-SM replicas
    /// (a per-CPU array is one replica per SM by definition).
    pub const fn is_array_like(self) -> bool {
        matches!(
            self,
            MapKind::Array
                | MapKind::PercpuArray
                | MapKind::GpuArray
                | MapKind::GpuKernelSharedArray
                | MapKind::GpuArrayHost
        )
    }

    /// Arrays with one copy of each element per unit of the launch (per-thread arrays,
    /// in device or host memory, and per-warp arrays): the host sizes their storage from the launch shape when it binds
    /// them, so the module reserves none, and each unit reaches only its own copy.
    pub const fn is_per_unit(self) -> bool {
        matches!(
            self,
            MapKind::PerThreadArray | MapKind::PerThreadArrayHost | MapKind::PerWarpArray
        )
    }

    /// Every array kind ([`MapKind::is_array_like`] or [`MapKind::is_per_unit`]): keys are
    /// 4-byte indices (Linux refuses other key sizes at map creation), and a lookup the
    /// verifier pinned to one map is inlined as index arithmetic.
    pub const fn is_array(self) -> bool {
        self.is_array_like() || self.is_per_unit()
    }

    /// Arrays whose values a direct address (`ld_imm64` of `map_idx_value`) may point into
    /// (array, GPU array, 1504, 1513): their first value is one fixed block. A per-CPU array's value
    /// depends on the SM, so it has no one address.
    pub const fn has_direct_value(self) -> bool {
        matches!(
            self,
            MapKind::Array
                | MapKind::GpuArray
                | MapKind::GpuKernelSharedArray
                | MapKind::GpuArrayHost
        )
    }

    /// Rings (ringbuf, GPU ringbuf, perf event array): event streams the host reads while
    /// or after the kernel runs, laid out by [`crate::ringbuf`]; they default to host
    /// placement and have producer/consumer counters instead of entries.
    pub const fn is_ring(self) -> bool {
        matches!(
            self,
            MapKind::Ringbuf | MapKind::GpuRingbuf | MapKind::PerfEventArray
        )
    }

    /// The maps the ringbuf helpers (`ringbuf_output`, `ringbuf_reserve`, `ringbuf_query`)
    /// take: ringbuf and GPU ringbuf.
    pub const fn takes_ringbuf_helpers(self) -> bool {
        matches!(self, MapKind::Ringbuf | MapKind::GpuRingbuf)
    }

    /// The maps `perf_event_output` takes: perf event array and GPU ringbuf (both one GPU
    /// ring on the device).
    pub const fn takes_perf_event_output(self) -> bool {
        matches!(self, MapKind::PerfEventArray | MapKind::GpuRingbuf)
    }

    /// Maps with keys and values, which `map_lookup_elem`, `map_update_elem` and
    /// `map_delete_elem` take: the hash and array kinds, and the Linux per-CPU hash, LRU
    /// per-CPU hash and LPM trie (which the verifier checks although the backend has no
    /// GPU implementation of them).
    pub const fn is_key_value(self) -> bool {
        self.is_hash()
            || self.is_array()
            || matches!(
                self,
                MapKind::PercpuHash | MapKind::LruPercpuHash | MapKind::LpmTrie
            )
    }

    /// Maps of maps (array of maps, hash of maps), which bpf2ptx refuses at load.
    pub const fn is_map_in_map(self) -> bool {
        matches!(self, MapKind::ArrayOfMaps | MapKind::HashOfMaps)
    }
}

#[cfg(test)]
mod tests {
    use super::MapKind;

    #[test]
    fn ids_round_trip_and_are_sorted() {
        for w in MapKind::ALL.windows(2) {
            assert!(w[0].0.id() < w[1].0.id());
        }
        for (k, name) in MapKind::ALL {
            assert_eq!(MapKind::from_id(k.id()), Some(k));
            assert_eq!(MapKind::from_name(name), Some(k));
            assert_eq!(k.name(), name);
        }
        assert_eq!(MapKind::from_id(0), None);
        assert_eq!(MapKind::from_id(34), None);
        assert_eq!(MapKind::from_id(1600), Some(MapKind::PerWarpArray));
    }

    #[test]
    fn classes() {
        let ids = |p: fn(MapKind) -> bool| {
            MapKind::ALL
                .iter()
                .filter(|(k, _)| p(*k))
                .map(|(k, _)| k.id())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(MapKind::is_hash), [1, 9, 1501]);
        assert_eq!(ids(MapKind::is_array_like), [2, 6, 1503, 1504, 1513]);
        assert_eq!(ids(MapKind::is_per_unit), [1502, 1512, 1600]);
        assert_eq!(
            ids(MapKind::is_array),
            [2, 6, 1502, 1503, 1504, 1512, 1513, 1600]
        );
        assert_eq!(ids(MapKind::has_direct_value), [2, 1503, 1504, 1513]);
        assert_eq!(ids(MapKind::is_ring), [4, 27, 1527]);
        assert_eq!(ids(MapKind::takes_ringbuf_helpers), [27, 1527]);
        assert_eq!(ids(MapKind::takes_perf_event_output), [4, 1527]);
        assert_eq!(
            ids(MapKind::is_key_value),
            [1, 2, 5, 6, 9, 10, 11, 1501, 1502, 1503, 1504, 1512, 1513, 1600]
        );
        assert_eq!(ids(MapKind::is_map_in_map), [12, 13]);
        assert_eq!(ids(MapKind::is_kernel_user), [1001, 1002, 1004, 1006]);
        assert_eq!(ids(MapKind::host_by_default), [4, 27, 1512, 1513, 1527]);
    }

    #[test]
    fn layouts() {
        let layout = |id: u32| MapKind::from_id(id).map(|k| k.layout().id());
        assert_eq!(layout(1504), Some(1503));
        assert_eq!(layout(1512), Some(1502));
        assert_eq!(layout(1513), Some(1503));
        for (k, _) in MapKind::ALL {
            // A layout is its own layout, and a kind is in its layout's classes.
            let l = k.layout();
            assert_eq!(l.layout(), l);
            assert_eq!(k.is_array_like(), l.is_array_like());
            assert_eq!(k.is_per_unit(), l.is_per_unit());
            assert_eq!(k.has_direct_value(), l.has_direct_value());
            assert_eq!(k.is_hash(), l.is_hash());
            assert_eq!(k.is_ring(), l.is_ring());
        }
    }
}
