# SPDX-License-Identifier: MIT OR Apache-2.0
"""Host side of bpf2ptx maps for CuPy programs (specs/abi.md, "Maps").

A module made by `bpf2ptx inject` (or `bpf2ptx PROBES.bpf.o -o probes.ptx`)
holds, for every map NAME, a 64-byte descriptor `bpf2ptx_map_NAME` (8 u64
words) and, for arrays and hash maps, its storage `bpf2ptx_mapdata_NAME`.
Global data sections (.bss, .data, .rodata) are plain arrays named
`bpf2ptx_map_<section>`.

    mod = cupy.RawModule(path="vecadd.inj.ptx")
    m = Maps(mod)
    m.zero("thread_count")
    ...launch...
    print(m.array("thread_count"))   # numpy u64 [max_entries, stride/8], replicas summed
"""
import numpy as np
import cupy

ARRAY_TYPES = (2, 6, 1503)   # array, percpu array, GPU array
PERTHREAD = 1502
HASH_TYPES = (1, 1501, 9)    # hash, GPU hash, LRU hash
LRU_HASH = 9
COUNTS_BYTES = 128 + 128 * 32   # a hash map's counts block: count line, 32 shards
COUNTERS = ("full", "busy", "evicted")   # u64 words of each shard, in order


class MapInfo:
    def __init__(self, words):
        w = [int(x) for x in words]
        self.words = w
        self.type = w[0] & 0xFFFFFFFF
        self.flags = w[0] >> 32
        self.key_size = w[1] & 0xFFFFFFFF
        self.value_size = w[1] >> 32
        self.max_entries = w[2] & 0xFFFFFFFF
        self.stride = w[2] >> 32
        self.data = w[3]
        self.aux = w[4]
        self.aux2 = w[5]

    @property
    def replica_bytes(self):
        """Bytes from one replica to the next (sharded arrays: descriptor word 5, whole
        128-byte lines)."""
        if self.replicas > 1:
            return self.aux2
        return self.max_entries * self.stride

    @property
    def replicas(self):
        """Copies of the array the host must sum (sharded arrays: aux, else 1)."""
        if self.type in ARRAY_TYPES and self.aux > 1:
            return self.aux
        return 1

    def __repr__(self):
        return (f"MapInfo(type={self.type}, key={self.key_size}, value={self.value_size}, "
                f"max_entries={self.max_entries}, stride={self.stride}, aux={self.aux})")


class Maps:
    """The maps of one loaded module (cupy.RawModule)."""

    def __init__(self, module):
        self.module = module

    def _global(self, sym):
        return self.module.get_global(sym)

    def desc_ptr(self, name):
        return self._global("bpf2ptx_map_" + name)

    def info(self, name):
        p = self.desc_ptr(name)
        words = cupy.ndarray((8,), dtype=cupy.uint64, memptr=p).get()
        return MapInfo(words)

    def set_word(self, name, index, value):
        """Write descriptor word `index` (e.g. 3 = data pointer, 4 = aux)."""
        p = self.desc_ptr(name)
        d = cupy.ndarray((8,), dtype=cupy.uint64, memptr=p)
        d[index] = np.uint64(value)

    def storage_bytes(self, name):
        """Bytes of map NAME's storage, from its descriptor (specs/abi.md layouts)."""
        i = self.info(name)
        if i.type in ARRAY_TYPES:
            return i.replica_bytes * i.replicas
        if i.type in HASH_TYPES:   # aux slots of 8 + round8(key) + stride bytes
            slots = i.aux * (8 + (i.key_size + 7) // 8 * 8 + i.stride)
            if i.type == LRU_HASH:   # then a u32 stamp per slot, rounded up to 8
                slots += (4 * i.aux + 7) // 8 * 8
            return slots
        if i.type in (27, 1527):  # ringbuf: aux data bytes
            return i.aux
        raise ValueError(f"map {name}: storage size of type {i.type} not known here")

    def storage(self, name):
        """The module's own storage of map NAME as a cupy u64 array (read/write)."""
        p = self._global("bpf2ptx_mapdata_" + name)
        return cupy.ndarray((self.storage_bytes(name) // 8,), dtype=cupy.uint64, memptr=p)

    def zero(self, name):
        """Empty map NAME: its storage and, for a hash map, its count and counters."""
        self.storage(name).fill(0)
        if self.info(name).type in HASH_TYPES:
            self.counts_block(name).fill(0)

    def counts_block(self, name):
        """A hash map's counts block (descriptor word 5) as a cupy u64 array."""
        i = self.info(name)
        if i.type not in HASH_TYPES:
            raise ValueError(f"map {name}: type {i.type} has no counts block")
        p = self._global("bpf2ptx_mapcnt_" + name)
        return cupy.ndarray((COUNTS_BYTES // 8,), dtype=cupy.uint64, memptr=p)

    def hash_counts(self, name):
        """A hash map's key count and counters summed over the shards:
        {"keys": n, "full": n, "busy": n, "evicted": n} (specs/abi.md, "Hash maps")."""
        b = self.counts_block(name).get()
        shards = b[16:].reshape(32, 16)
        out = {"keys": int(b[0])}
        for k, c in enumerate(COUNTERS):
            out[c] = int(shards[:, k].sum())
        return out

    def hash_entries(self, name):
        """A hash map's live entries as {key bytes: value bytes}."""
        i = self.info(name)
        key8 = (i.key_size + 7) // 8 * 8
        slot = 8 + key8 + i.stride
        raw = self.storage(name).get().view(np.uint8)[: i.aux * slot].reshape(i.aux, slot)
        full = (raw[:, 0:4].copy().view(np.uint32)[:, 0] & 2) != 0   # full (2) or held (3)
        return {bytes(r[8:8 + i.key_size]): bytes(r[8 + key8:8 + key8 + i.value_size])
                for r in raw[full]}

    def array(self, name):
        """An array map's values as numpy u64 [max_entries, stride/8], replicas summed."""
        i = self.info(name)
        if i.type not in ARRAY_TYPES:
            raise ValueError(f"map {name}: type {i.type} is not an array")
        s = self.storage(name).get()
        per = i.max_entries * i.stride // 8
        step = i.replica_bytes // 8
        r = i.replicas
        if s.size < step * r:
            raise ValueError(f"map {name}: storage {s.size * 8} bytes < {r} x {step * 8}")
        rows = s[: step * r].reshape(r, step)[:, :per]
        return rows.reshape(r, i.max_entries, i.stride // 8).sum(axis=0, dtype=np.uint64)

    def counts(self, name):
        """A u64-valued array map as a flat numpy array (value word 0 of each entry)."""
        return self.array(name)[:, 0]

    def global_data(self, section, size):
        """SIZE bytes of a global-data section (e.g. 'bss') as a cupy u8 array (read/write)."""
        p = self._global("bpf2ptx_map_" + section)
        return cupy.ndarray((size,), dtype=cupy.uint8, memptr=p)


def map_names(ptx_path):
    """The runtime maps of a PTX module (those with a descriptor `bpf2ptx_map_NAME[8]`)."""
    import re
    text = open(ptx_path).read()
    return re.findall(r"\.visible \.global \.align 8 \.u64 bpf2ptx_map_([A-Za-z0-9_$]+)\[8\]", text)


RING_TYPES = (27, 1527, 4)   # ringbuf, GPU ringbuf, perf event array


def losses(maps, ptx_path):
    """What the probes' map operations did not do as asked, per map, as the device counted
    it (specs/abi.md): a hash map's inserts refused because it was full, operations that
    gave up waiting (busy) and LRU evictions, a ring's dropped records. Only non-zero
    counts: {map: {reason: n}}."""
    out = {}
    for name in map_names(ptx_path):
        i = maps.info(name)
        if i.type in HASH_TYPES:
            c = {k: v for k, v in maps.hash_counts(name).items() if k != "keys" and v}
        elif i.type in RING_TYPES:
            c = {"dropped": int(i.words[6])} if i.words[6] else {}
        else:
            c = {}
        if c:
            out[name] = c
    return out


def print_losses(maps, ptx_path):
    """Prints `losses` in one line: nothing a probe did is lost without being said."""
    lost = losses(maps, ptx_path)
    if not lost:
        print("maps: no refused, timed-out, evicted or dropped operations counted")
    for name, c in lost.items():
        print(f"map {name}: " + ", ".join(f"{n} {k}" for k, n in c.items()))


def entry_names(ptx_path):
    """The .entry kernels of a PTX file, in order."""
    import re
    text = open(ptx_path).read()
    return re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(", text)
