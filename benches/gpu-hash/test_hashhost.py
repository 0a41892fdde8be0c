# SPDX-License-Identifier: MIT OR Apache-2.0
"""Checks hashhost.py's walker and invariant checks without a GPU, on tables the CPU
stress test built with the twins' protocol (cpu_test --dump DIR), and on tampered copies
of them (a wrong overflow count, a duplicate key, a held lock, a wrong value).

    g++ -O2 -std=c++17 -pthread benches/gpu-hash/cpu_test.cc -o /tmp/cpu_test
    /tmp/cpu_test --dump /tmp/tables && python3 benches/gpu-hash/test_hashhost.py /tmp/tables
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hashhost  # noqa: E402

passed = failed = 0


def expect(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    if ok:
        passed += 1
    else:
        failed += 1


def load(d, name):
    raw = np.fromfile(os.path.join(d, name + ".bin"), dtype=np.uint8)
    cnt = np.fromfile(os.path.join(d, name + ".cnt"), dtype=np.uint64)
    aux, mx = (int(x) for x in open(os.path.join(d, name + ".aux")).read().split())
    return raw, hashhost.counts_of(cnt), aux, mx


def value_of(k):
    with np.errstate(over="ignore"):
        return k.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(1)


def main(d):
    # FNV-1a against the Rust runtime's definition (bytes folded in order)
    def fnv_ref(k):
        h = 0xCBF29CE484222325
        for b in k.to_bytes(4, "little"):
            h = ((h ^ b) * 0x100000001B3) % (1 << 64)
        return h
    ks = np.array([0, 1, 255, 256, 65535, 1 << 20, 0xFFFFFFFF], dtype=np.uint32)
    expect(all(int(h) == fnv_ref(int(k)) for k, h in zip(ks, hashhost.fnv1a_u32(ks))),
           "fnv1a_u32 = FNV-1a 64 of the 4 little-endian key bytes")
    expect(hashhost.slots_for(4096) == 8192 and hashhost.slots_for(3) == 8 and hashhost.slots_for(1 << 21) == 1 << 22,
           "slots_for: next power of two >= 2 x max_entries")
    expect(hashhost.storage_bytes(9, 4, 8, 4096) == 8192 * 24 + 8192 * 4, "LRU storage: slots + stamps")

    raw, c, aux, mx = load(d, "insert")
    n = mx
    w = hashhost.Walk(raw, aux)
    r = w.check(count=c["count"], keys=n, value_fn=value_of)
    expect(r.ok and r.figures["live"] == n, f"insert table: {r.text}")
    print(f"     counts {c}")

    w2 = hashhost.Walk(raw, aux)
    i = int(np.nonzero(w2.meta)[0][0])
    w2.meta[i] += 1
    expect(not w2.check(count=c["count"]).ok, "a wrong overflow count is caught")
    w2 = hashhost.Walk(raw, aux)
    full = np.nonzero(w2.state == 2)[0]
    w2.key[full[1]] = w2.key[full[0]]
    r2 = w2.check(count=c["count"])
    expect(not r2.ok and "duplicate" in r2.text, "a duplicate key is caught")
    w2 = hashhost.Walk(raw, aux)
    w2.meta[5] |= np.uint32(1 << 31)
    expect(not w2.check(count=c["count"]).ok, "a held lock is caught")
    w2 = hashhost.Walk(raw, aux)
    w2.value[full[3]] ^= np.uint64(1)
    expect(not w2.check(value_fn=value_of).ok, "a wrong value is caught")
    expect(not w.check(count=c["count"] + 1).ok, "a count word off by one is caught")
    w2 = hashhost.Walk(raw, aux)
    homes = hashhost.fnv1a_u32(w2.key[full]) & np.uint64(aux - 1)
    far = full[np.nonzero(homes != full.astype(np.uint64))[0][0]]
    w2.state[far] = 0  # a key away from its home vanishes: its path's counts are too high
    expect(not w2.check(count=c["count"] - 1).ok, "a freed slot whose counts stayed is caught")

    raw, c, aux, mx = load(d, "overfull")
    r = hashhost.Walk(raw, aux).check(count=c["count"], n_full=mx, key_below=1 << 16, value_fn=value_of)
    expect(r.ok and c["full"] == (1 << 16) - mx and c["busy"] == 0, f"over-full table: {r.text}; {c}")
    raw, c, aux, mx = load(d, "overfull_lru")
    r = hashhost.Walk(raw, aux).check(count=c["count"], n_full=mx, key_below=1 << 16, value_fn=value_of)
    expect(r.ok and c["evicted"] + c["busy"] == (1 << 16) - mx, f"over-full LRU table: {r.text}; {c}")

    # wrap-around paths: a synthetic table whose keys' homes are at the end
    aux = 16
    words = np.zeros((aux, 3), dtype=np.uint64)
    keys = []
    for k in range(100000):
        if int(hashhost.fnv1a_u32(np.array([k]))[0]) & (aux - 1) == aux - 1:
            keys.append(k)
        if len(keys) == 3:
            break
    for j, k in enumerate(keys):  # home 15: slots 15, 0, 1
        p = (aux - 1 + j) % aux
        words[p, 1] = k
        words[p, 0] = 2
    meta = hashhost.expected_overflow(np.array([15, 0, 1]), np.array([15, 15, 15]), aux)
    expect([int(x) for x in meta[[15, 0, 1, 2]]] == [2, 1, 0, 0],
           f"expected_overflow wraps: {[int(x) for x in meta]}")
    for i in range(aux):
        words[i, 0] |= np.uint64(int(meta[i])) << np.uint64(32)
    r = hashhost.Walk(words.view(np.uint8).reshape(-1), aux).check(count=3)
    expect(r.ok, f"wrapped table: {r.text}")

    print(f"{passed} passed, {failed} failed")
    return failed == 0


if __name__ == "__main__":
    sys.exit(0 if main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tables") else 1)
