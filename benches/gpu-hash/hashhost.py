# SPDX-License-Identifier: MIT OR Apache-2.0
"""Host side of bpf2ptx hash maps for the hash-map benchmark (specs/abi.md, "Maps
(device runtime)" and "### Hash maps"), for CuPy: find a map of an injected module,
zero it, read its counts block, walk its slots and check the table's invariants.

Only what benches/gpu-hash needs: u32 keys, u64 values. The twins (twin.cu) use the same
layout in storage this module allocates (HashMap.alloc), so one checker serves both.

    m = HashMap.from_module(cupy.RawModule(path="vecadd.insert.ptx"), "table")
    m.zero(); ...launch...; print(m.counts(), m.check(keys=n).text)

The numpy parts (fnv1a_u32, expected_overflow, Walk) need no GPU.
"""
import numpy as np

try:  # the GPU machine has CuPy; the checks below are testable without it
    import cupy
except ImportError:  # pragma: no cover
    cupy = None

HASH_TYPES = (1, 9, 1501)
LRU_HASH = 9
COUNT_SHARDS = 32
COUNTS_BYTES = 128 + 128 * COUNT_SHARDS
COUNTER_NAMES = ("full", "busy", "evicted")
STATE_FREE, STATE_BUSY, STATE_FULL, STATE_HELD = 0, 1, 2, 3
LOCK_BIT = 1 << 31
OVF_MASK = LOCK_BIT - 1
FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


def round8(n):
    return (n + 7) // 8 * 8


def slots_for(max_entries):
    """Descriptor word 4 of a hash map: the next power of two >= 2 x max_entries."""
    n = 1
    while n < 2 * max_entries:
        n <<= 1
    return n


def slot_bytes(key_size, value_size):
    return 8 + round8(key_size) + round8(value_size)


def storage_bytes(map_type, key_size, value_size, max_entries):
    """The slots, and for an LRU map a u32 stamp per slot after them (rounded up to 8)."""
    aux = slots_for(max_entries)
    extra = round8(4 * aux) if map_type == LRU_HASH else 0
    return aux * slot_bytes(key_size, value_size) + extra


def fnv1a_u32(keys):
    """FNV-1a 64 of each u32 key's 4 little-endian bytes (numpy uint64 array)."""
    k = np.asarray(keys, dtype=np.uint64)
    h = np.full(k.shape, FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for s in (0, 8, 16, 24):
            h ^= (k >> np.uint64(s)) & np.uint64(0xFF)
            h *= FNV_PRIME
    return h


def expected_overflow(full_idx, homes, aux):
    """The overflow count every slot must have at rest: for each live key at slot p with
    home h, +1 on the slots h .. p-1 (cyclic)."""
    full_idx = np.asarray(full_idx, dtype=np.int64)
    homes = np.asarray(homes, dtype=np.int64)
    d = (full_idx - homes) & (aux - 1)
    end = homes + d
    wrap = end > aux
    diff = np.bincount(homes, minlength=aux + 1).astype(np.int64)
    diff -= np.bincount(np.minimum(end, aux), minlength=aux + 1)
    diff[0] += int(wrap.sum())
    diff -= np.bincount(end[wrap] - aux, minlength=aux + 1)
    return np.cumsum(diff[:aux])


class Result:
    """A check: ok, a one-line text, and the figures behind it."""

    def __init__(self, ok, text, figures):
        self.ok, self.text, self.figures = bool(ok), text, figures

    def __repr__(self):
        return f"Result({self.ok}, {self.text!r})"


class Walk:
    """The slots of a table read back to the host (u32 keys, u64 values)."""

    def __init__(self, raw_u8, aux, key_size=4, value_size=8):
        if key_size != 4 or value_size != 8:
            raise ValueError("hashhost walks u32 -> u64 maps only")
        sb = slot_bytes(key_size, value_size)
        raw = np.ascontiguousarray(raw_u8[: aux * sb])
        words = raw.view(np.uint64).reshape(aux, sb // 8)
        self.aux = aux
        self.state = (words[:, 0] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        self.meta = (words[:, 0] >> np.uint64(32)).astype(np.uint32)
        self.key = (words[:, 1] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        self.key_pad = (words[:, 1] >> np.uint64(32)).astype(np.uint32)   # 0: stored zero-extended
        self.value = words[:, 2].copy()

    def check(self, count=None, keys=None, key_set=None, key_below=None, n_full=None, value_fn=None,
              value_eq=None):
        """The invariants of a table at rest, and what the caller expects of it:
        keys=n: exactly the keys 0..n-1; key_set: exactly these keys (a numpy u32 array);
        key_below=n: every key < n; n_full: that many
        live keys; value_fn(keys) or value_eq: the values; count: the counts block's
        count word (must equal the live keys)."""
        aux = self.aux
        full = np.nonzero(self.state == STATE_FULL)[0]
        k = self.key[full]
        homes = (fnv1a_u32(k) & np.uint64(aux - 1)).astype(np.int64)
        ovf = expected_overflow(full, homes, aux)
        bad_ovf = int(np.count_nonzero((self.meta & np.uint32(OVF_MASK)).astype(np.int64) != ovf))
        locks = int(np.count_nonzero(self.meta & np.uint32(LOCK_BIT)))
        busy = int(np.count_nonzero(self.state == STATE_BUSY))
        other = int(np.count_nonzero(self.state > STATE_FULL))   # held (3) at rest, or garbage
        pad = int(np.count_nonzero(self.key_pad[full]))
        ks = np.sort(k)
        distinct = int(np.count_nonzero(ks[1:] != ks[:-1]) + 1) if k.size else 0
        dist = (full - homes) & (aux - 1)
        f = {
            "live": int(full.size), "distinct": distinct, "busy_slots": busy, "other_states": other,
            "locks": locks, "wrong_overflow": bad_ovf,
            "mean_probe": float(dist.mean() + 1) if full.size else 0.0,
            "max_probe": int(dist.max() + 1) if full.size else 0,
        }
        problems = []
        if distinct != full.size:
            problems.append(f"{full.size - distinct} duplicate keys")
        if busy:
            problems.append(f"{busy} busy slots")
        if other:
            problems.append(f"{other} slots held (3) or in states > 3")
        if pad:
            problems.append(f"{pad} live keys not zero-extended in their key word")
        if locks:
            problems.append(f"{locks} locks held")
        if bad_ovf:
            problems.append(f"{bad_ovf} wrong overflow counts")
        if count is not None:
            f["count"] = int(count)
            if int(count) != full.size:
                problems.append(f"count word {int(count)} != {full.size} live keys")
        if n_full is not None and full.size != n_full:
            problems.append(f"{full.size} live keys, expected {n_full}")
        if keys is not None:
            if full.size != keys or not np.array_equal(ks, np.arange(keys, dtype=np.uint32)):
                problems.append(f"keys are not exactly 0..{keys - 1}")
        if key_set is not None:
            want = np.sort(np.asarray(key_set, dtype=np.uint32))
            if full.size != want.size or not np.array_equal(ks, want):
                problems.append(f"keys are not exactly the {want.size} expected")
        if key_below is not None and full.size and int(k.max()) >= key_below:
            problems.append(f"a key >= {key_below}")
        if value_fn is not None or value_eq is not None:
            want = value_fn(k) if value_fn is not None else np.full(k.shape, value_eq, dtype=np.uint64)
            bad = int(np.count_nonzero(self.value[full] != want))
            f["wrong_values"] = bad
            if bad:
                problems.append(f"{bad} wrong values")
        text = (f"{full.size} live keys ({distinct} distinct), mean probe {f['mean_probe']:.3f}, "
                f"max {f['max_probe']}; overflow counts exact: {'yes' if not bad_ovf else 'NO'}; "
                f"locks {locks}, busy slots {busy}")
        if problems:
            text += "; PROBLEMS: " + ", ".join(problems)
        return Result(not problems, text, f)


def _u64_view(ptr, nbytes, owner=None):
    mem = cupy.cuda.UnownedMemory(int(ptr), nbytes, owner)
    return cupy.ndarray((nbytes // 8,), dtype=cupy.uint64, memptr=cupy.cuda.MemoryPointer(mem, 0))


class HashMap:
    """One hash map on the device: storage (cupy u8), counts block (cupy u64 or None: a
    runtime without one), geometry."""

    def __init__(self, storage, counts, aux, max_entries, map_type=1, key_size=4, value_size=8, notes=()):
        self.storage, self._counts = storage, counts
        self.aux, self.max_entries, self.type = aux, max_entries, map_type
        self.key_size, self.value_size = key_size, value_size
        self.notes = list(notes)

    @property
    def lru(self):
        return self.type == LRU_HASH

    @classmethod
    def from_module(cls, mod, name):
        """Map NAME of a loaded module (cupy.RawModule): its descriptor
        `bpf2ptx_map_NAME`, storage `bpf2ptx_mapdata_NAME`, counts `bpf2ptx_mapcnt_NAME`."""
        dp = mod.get_global("bpf2ptx_map_" + name)
        w = [int(x) for x in cupy.ndarray((8,), dtype=cupy.uint64, memptr=dp).get()]
        t, ks, vs, me = w[0] & 0xFFFFFFFF, w[1] & 0xFFFFFFFF, w[1] >> 32, w[2] & 0xFFFFFFFF
        if t not in HASH_TYPES:
            raise ValueError(f"map {name}: type {t} is not a hash map")
        notes = []
        aux = w[4]
        if aux != slots_for(me):
            notes.append(f"descriptor word 4 = {aux}, expected {slots_for(me)}")
        sp = mod.get_global("bpf2ptx_mapdata_" + name)
        if w[3] != sp.ptr:
            notes.append(f"word 3 ({w[3]:#x}) is not bpf2ptx_mapdata_{name} ({sp.ptr:#x})")
        nbytes = storage_bytes(t, ks, vs, me)
        size = getattr(sp.mem, "size", 0)   # CuPy gives 0 for module globals
        if size and size < nbytes:
            raise ValueError(f"map {name}: storage {size} bytes < {nbytes} the layout needs")
        storage = cupy.ndarray((nbytes,), dtype=cupy.uint8, memptr=sp)
        counts = None
        try:
            cp = mod.get_global("bpf2ptx_mapcnt_" + name)
            counts = cupy.ndarray((COUNTS_BYTES // 8,), dtype=cupy.uint64, memptr=cp)
            if w[5] != cp.ptr:
                notes.append(f"word 5 ({w[5]:#x}) is not bpf2ptx_mapcnt_{name} ({cp.ptr:#x})")
        except Exception:  # noqa: BLE001 - no such symbol: a runtime without counts block
            if w[5]:
                counts = _u64_view(w[5], COUNTS_BYTES, mod)
                notes.append("no bpf2ptx_mapcnt_ symbol; counts block read at word 5")
            else:
                notes.append("no counts block (descriptor word 5 = 0): a runtime before issue 12")
        return cls(storage, counts, aux, me, t, ks, vs, notes)

    @classmethod
    def alloc(cls, max_entries, map_type=1, key_size=4, value_size=8):
        """Zeroed storage and counts block for a twin."""
        nbytes = storage_bytes(map_type, key_size, value_size, max_entries)
        storage = cupy.zeros(nbytes, dtype=cupy.uint8)
        counts = cupy.zeros(COUNTS_BYTES // 8, dtype=cupy.uint64)
        return cls(storage, counts, slots_for(max_entries), max_entries, map_type, key_size, value_size)

    def twin_args(self):
        """(data, counts, aux, max_entries) as twin.cu's kernels take them."""
        return (self.storage, self._counts, np.uint64(self.aux), np.uint32(self.max_entries))

    def zero(self):
        self.storage.fill(0)
        if self._counts is not None:
            self._counts.fill(0)

    def copy_from(self, other):
        self.storage[...] = other.storage
        if self._counts is not None and other._counts is not None:
            self._counts[...] = other._counts

    @property
    def has_counts(self):
        return self._counts is not None

    def counts(self):
        """{'count', 'full', 'busy', 'evicted'} (shards summed), or None."""
        if self._counts is None:
            return None
        return counts_of(self._counts.get())

    def walk(self):
        return Walk(self.storage.get(), self.aux, self.key_size, self.value_size)

    def check(self, **want):
        c = self.counts()
        r = self.walk().check(count=None if c is None else c["count"], **want)
        if c is not None:
            r.figures.update({k: c[k] for k in COUNTER_NAMES})
        return r


def counts_of(block):
    """Sum the shards of a counts block (numpy u64 array of COUNTS_BYTES / 8 words)."""
    b = np.asarray(block, dtype=np.uint64)
    out = {"count": int(b[0])}
    for i, name in enumerate(COUNTER_NAMES):
        out[name] = int(sum(int(b[16 + 16 * s + i]) for s in range(COUNT_SHARDS)))
    return out
