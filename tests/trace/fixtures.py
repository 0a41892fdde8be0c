#!/usr/bin/env python3
"""Writes the trace snapshot fixtures (tests/trace/snapshots/*.json): raw map bytes laid
out as specs/abi.md says the device runtime leaves them, for the maps of
tests/trace/probes.bpf.c. The JSON files are the committed inputs of
tests/tests/trace_render.rs; this script is how they were made (rerun it after changing
a layout). Every byte is written here explicitly; nothing is computed by bpf2ptx.

Fixture format: `desc` the 8 descriptor words (hex strings); `storage`, `counts`: sparse
bytes `{"len": N, "at": {"OFFSET": "HEX"}}` (unlisted bytes are 0); `ring`: the
`[producer, consumer]` counters."""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
# (layout id, key size, value size, max entries) of each map, from probes.bpf.c.
MAPS = {
    "legacy": (1, 4, 8, 4), "counts": (2, 4, 8, 16), "stats": (1503, 4, 24, 4),
    "per_sm": (6, 4, 8, 4), "per_thread": (1502, 4, 4, 2), "per_warp": (1600, 4, 24, 2),
    "by_who": (1, 8, 8, 8), "recent": (9, 8, 8, 4), "by_block": (1501, 4, 24, 4),
    "sizes": (2, 4, 8, 12), "warp_lat": (1600, 4, 4, 64), "empty": (2, 4, 8, 8),
    "lat": (2, 4, 8, 64), "events": (27, 0, 0, 4096), "gpu_events": (1527, 4, 16, 4096),
}
DATA, COUNTS_AT, CTR_AT = 0x7f0000000000, 0x7f1000000000, 0x7f2000000000

def r8(n): return (n + 7) & ~7
def u(v, n=8): return (v & ((1 << (8 * n)) - 1)).to_bytes(n, "little")

class Image:
    def __init__(self, name, aux=0, aux2=0, drops=0, bound=True):
        self.name, (t, k, v, n) = name, MAPS[name]
        self.t, self.k, self.v, self.n, self.stride = t, k, v, n, r8(v)
        self.aux, self.aux2, self.drops, self.bound = aux, aux2, drops, bound
        self.bytes, self.counts, self.ring = {}, None, None
    def put(self, at, b): self.bytes[at] = b
    def desc(self):
        w = [self.t, self.k | self.v << 32, self.n | self.stride << 32,
             DATA if self.bound else 0, self.aux, self.aux2, self.drops,
             self.ring[0] if self.ring else 0]
        return ["%#x" % x for x in w]
    def json(self, length):
        out = {"desc": self.desc(),
               "storage": {"len": length, "at": {str(a): b.hex() for a, b in sorted(self.bytes.items())}}}
        if self.counts is not None:
            out["counts"] = {"len": 128 + 128 * 32, "at": {str(a): b.hex() for a, b in sorted(self.counts.items())}}
        if self.ring is not None:
            out["ring"] = {"counters": self.ring}
        return out

def array(name, values, replicas=0):
    """values: {key: bytes}; replicas: {(replica, key): bytes} when sharded."""
    im = Image(name)
    size = im.n * im.stride
    if replicas:
        line = (size + 127) // 128 * 128
        im.aux, im.aux2 = replicas, line
        for (r, k), b in values.items(): im.put(r * line + k * im.stride, b)
        return im.json(line * (replicas - 1) + size)
    for k, b in values.items(): im.put(k * im.stride, b)
    return im.json(size)

def per_unit(name, units, values):
    im = Image(name, aux=units)
    for (k, t), b in values.items(): im.put((k * units + t) * im.stride, b)
    return im.json(im.n * units * im.stride)

def hsh(name, live, busy=(), count=None, full=0, busy_n=0, evicted=0):
    """live: [(slot, key bytes, value bytes)]; busy: slots claimed but not live."""
    im = Image(name)
    slots = 1
    while slots < 2 * im.n: slots *= 2
    slot = 8 + r8(im.k) + im.stride
    im.aux, im.aux2 = slots, COUNTS_AT
    for s, k, v in live:
        im.put(s * slot, u(2, 4)); im.put(s * slot + 8, k); im.put(s * slot + 8 + r8(im.k), v)
    for s in busy: im.put(s * slot, u(1, 4))
    im.counts = {0: u(len(live) if count is None else count)}
    # Spread the counters over shards, as SMs add to their own.
    for reason, total in enumerate([full, busy_n, evicted]):
        for shard, part in [(0, total - total // 2), (17, total // 2)]:
            if part: im.counts[128 + 128 * shard + 8 * reason] = u(part)
    return im.json(slots * slot)

def ring(name, records, consumer=0, drops=0, pending=False):
    im = Image(name, aux=4096, aux2=CTR_AT, drops=drops)
    at = consumer
    for r in records:
        im.put(at % 4096, u(len(r), 4) + u(0, 4)); im.put(at % 4096 + 8, r); at += 8 + r8(len(r))
    if pending:  # a record reserved, not yet committed: BUSY
        im.put(at % 4096, u(16, 4) + u(1 << 31, 4)); at += 24
    im.ring = [at, consumer]
    return im.json(4096)

def stats(calls, nbytes, kind, delta, mode):
    return u(calls) + u(nbytes, 4) + u((kind & 7) | ((delta & 31) << 3), 4) + u(mode, 4) + u(0, 4)

def write(name, doc):
    with open(os.path.join(HERE, "snapshots", name + ".json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True); f.write("\n")

write("all_kinds", {
    "object": "tests/trace/probes.bpf.o",
    "hist": ["sizes=linear:0:100:10"],
    "elapsed_ns": 2_000_000_000, "device": None, "end": None,
    "loop_budget": [["probe", 5]], "printk_dropped": 2,
    "maps": {
        "legacy": hsh("legacy", [(1, u(7, 4), u(0x30)), (6, u(3, 4), u(0x400))]),
        # Sharded over 4 replicas; key 3's adds landed on three of them.
        "counts": array("counts", {(0, 3): u(10), (1, 3): u(5), (3, 3): u(1), (2, 15): u(1 << 40)}, replicas=4),
        "stats": array("stats", {1: stats(3, 4096, 5, -2, 1), 2: stats(1, 12, 0, 3, 2)}),
        "per_sm": array("per_sm", {(0, 0): u(4), (7, 0): u(6), (131, 2): u(1)}, replicas=256),
        "per_thread": per_unit("per_thread", 8, {(0, t): u(0xffffffff, 4) for t in range(8)} | {(1, 5): u(9, 4)}),
        "per_warp": per_unit("per_warp", 4, {(1, 0): stats(2, 8, 1, -1, 2), (1, 3): stats(5, 16, 1, -1, 2)}),
        "by_who": hsh("by_who", [(2, u(1, 4) + u(7, 4), u(30)), (5, u(2, 4) + u(7, 4), u(300)),
                                 (9, u(3, 4) + u(8, 4), u(30)), (11, u(4, 4) + u(9, 4), u(0))],
                      busy=[12], count=5, full=3, busy_n=1),
        "recent": hsh("recent", [(0, u(100), u(-5)), (3, u(200), u(12))], evicted=7),
        "by_block": hsh("by_block", [(4, u(1, 4), stats(9, 1, 2, 0, 1))]),
        "sizes": array("sizes", {0: u(2), 1: u(1), 3: u(4), 11: u(1)}),
        "warp_lat": per_unit("warp_lat", 3, {(0, 0): u(1, 4), (3, 1): u(2, 4), (3, 2): u(5, 4), (10, 0): u(1, 4)}),
        "empty": array("empty", {}),
        "lat": array("lat", {0: u(1), 1: u(3), 4: u(8), 10: u(2), 12: u(1)}),
        "events": ring("events", [u(1, 4), b"hello", u(0xdead)], consumer=64, drops=12, pending=True),
        "gpu_events": ring("gpu_events", [u(1500) + u(3, 4) + u(7, 4)]),
    },
    "ring_ns": 1_999_000_000,
    "printk": [[1_250_000_000, "block 3 on SM 7: 42 iterations"], [1_999_500_000, "done"]],
    "launches": [
        {"kernel": "_Z6vecAddPKfS0_Pfi", "device": 0, "stream": 0, "grid": [4096, 1, 1], "block": [256, 1, 1],
         "host_ns": 1_000_000, "first_block_ns": 1_004_500, "last_block_ns": 1_104_500},
        {"kernel": "_Z6vecAddPKfS0_Pfi", "device": 0, "stream": 7, "grid": [16, 1, 1], "block": [64, 1, 1],
         "host_ns": 1_200_000, "first_block_ns": None, "last_block_ns": None},
    ],
})

write("interrupted", {
    "object": "tests/trace/probes.bpf.o",
    "hist": ["sizes=linear:0:4096:1024", "warp_lat=log2"],
    "elapsed_ns": 3_250_000_000, "device": 1, "end": {"signal": 2},
    "loop_budget": [["probe", 0]], "printk_dropped": 0,
    "maps": {
        # Overflow (key 5) and keys past it count together; underflow (key 0) is first.
        "sizes": array("sizes", {0: u(1), 2: u(7), 5: u(2), 9: u(1)}),
        # A per-warp histogram: the warps' counts summed per bucket.
        "warp_lat": per_unit("warp_lat", 2, {(20, 0): u(3, 4), (20, 1): u(4, 4), (30, 1): u(1, 4), (40, 0): u(2, 4)}),
        "by_who": hsh("by_who", [], full=4),
    },
    "ring_ns": 0, "printk": [], "launches": [],
})

write("crashed_empty", {
    "object": "tests/trace/probes.bpf.o",
    "hist": [],
    "elapsed_ns": 10_000_000, "device": None, "end": {"signal": 11},
    "loop_budget": [], "printk_dropped": 0,
    "maps": {
        "counts": array("counts", {}),
        "lat": array("lat", {}),
        "by_block": hsh("by_block", []),
        "per_thread": {"desc": Image("per_thread", bound=False).desc(), "storage": {"len": 0, "at": {}}},
        "events": ring("events", []),
    },
    "ring_ns": 0, "printk": [], "launches": [],
})

# An application on two devices: one map set per device, and the sum section (arrays added
# key by key, per-SM and per-unit copies pooled, hash maps merged by key with the values
# of a key both hold added; a map bound on one device only; rings stay with their
# device); `process` maps (host programs' shared maps: one instance) print in the sum.
write("two_devices", {
    "object": "tests/trace/probes.bpf.o",
    "hist": ["sizes=linear:0:100:10"],
    "elapsed_ns": 5_000_000_000, "end": {"exit_code": 0},
    "loop_budget": [], "printk_dropped": 0,
    "devices": [
        {"device": 0, "maps": {
            "counts": array("counts", {(0, 3): u(10), (1, 3): u(5)}, replicas=4),
            "per_sm": array("per_sm", {(0, 0): u(4)}, replicas=256),
            "per_thread": per_unit("per_thread", 8, {(0, t): u(2, 4) for t in range(8)}),
            "by_who": hsh("by_who", [(2, u(1, 4) + u(7, 4), u(30)), (5, u(2, 4) + u(7, 4), u(300))], full=2),
            "recent": hsh("recent", [(0, u(100), u(9))]),
            "sizes": array("sizes", {1: u(2)}),
            "events": ring("events", [u(1, 4)]),
        }},
        {"device": 1, "maps": {
            "counts": array("counts", {(2, 3): u(1), (0, 15): u(7)}, replicas=4),
            "per_sm": array("per_sm", {(5, 0): u(6), (9, 3): u(1)}, replicas=256),
            "per_thread": per_unit("per_thread", 4, {(0, 1): u(5, 4), (1, 3): u(1, 4)}),
            "by_who": hsh("by_who", [(7, u(1, 4) + u(7, 4), u(5)), (1, u(3, 4) + u(8, 4), u(1))], full=1),
            "recent": {"desc": Image("recent", bound=False).desc(), "storage": {"len": 0, "at": {}}},
            "sizes": array("sizes", {1: u(1), 3: u(4)}),
            "events": ring("events", [u(2, 4), u(3, 4)]),
        }},
    ],
    "process": {
        "stats": array("stats", {0: stats(4, 64, 1, 0, 1)}),
    },
    "ring_ns": 4_900_000_000,
    "printk": [[4_800_000_000, "host: launch 6"]],
    "launches": [
        {"kernel": "_Z6vecAddPKfS0_Pfi", "device": 0, "stream": 0, "grid": [4, 1, 1], "block": [256, 1, 1],
         "host_ns": 1_000_000, "first_block_ns": 1_004_500, "last_block_ns": 1_104_500},
        {"kernel": "_Z6vecAddPKfS0_Pfi", "device": 1, "stream": 0, "grid": [4, 1, 1], "block": [256, 1, 1],
         "host_ns": 1_000_500, "first_block_ns": 1_006_000, "last_block_ns": 1_100_000},
    ],
})
