#!/usr/bin/env python3
"""GPU check: ring records that cross the ring's end, and a nearly full ring.

Run from the repository root on the GPU machine:

    BPF2PTX=./target/release/bpf2ptx python3 tests/gpu/ring_wrap.py [OUT.md]

The probe object tests/gpu/probes/ring_wrap.o, compiled for each placement, has two
programs: `wrap_const` (16-byte records, a `ringbuf_output` the compiler inlines) and
`wrap_var` (16 or 24 bytes by the thread's parity, through the runtime's
`bpf2ptx_ringbuf_output`). For each, the test sets
the ring's positions (module storage, 64 KiB ring) just before the ring's end, or a few
rings further on, launches, and walks the launch's records from the old producer to the
new one as a host reader does: every thread's record exactly once and intact, padding where a record
met the end, no record crossing it, no drop, no claim left in flight (the bound, descriptor
word 7, back at the producer). A nearly full ring must keep whole records in its room and
count every other thread as a drop. A ring whose room is exactly what the launch writes
(2,048 threads at once, no record at the end) must keep every record: with the bound no
claim is ever too large when everything fits (runtime-ptx ringbuf.rs, "Reserving never
blocks"; the in-flight word before it counted claims twice and dropped some).
"""
import os
import struct
import subprocess
import sys
import tempfile

import cupy as cp

B = os.environ.get("BPF2PTX", "./target/release/bpf2ptx")
AUX = 65536
BUSY, DISCARD = 1 << 31, 1 << 30
MASK = (1 << 64) - 1

# The code compiled for each placement (device: `.gpu` record stores; host, the rings'
# default: `.sys`), both run here on the module's own ring storage.
MODS = {}
for place in ("device", "host"):
    ptx = os.path.join(tempfile.mkdtemp(), f"ring_wrap.{place}.ptx")
    subprocess.run([B, "tests/gpu/probes/ring_wrap.o", "--entry", "--target", "sm_90",
                    "--map", f"ring_c={place}", "--map", f"ring_v={place}", "-o", ptx],
                   check=True)
    MODS[place] = cp.RawModule(path=ptx)


def glob(mod, name, n, dtype):
    return cp.ndarray((n,), dtype, mod.get_global(name))


def walk(buf, cons, prod, size_of, var):
    """The records between the positions: (ids, error or None, bytes of padding)."""
    pos, ids, pad = cons, [], 0
    while pos < prod:
        off = pos % AUX
        ln, fl = struct.unpack_from("<II", buf, off)
        if (ln == 0 and fl == 0) or fl & BUSY:
            return ids, f"uncommitted header at position {pos}", pad
        t = 8 + (ln + 7) // 8 * 8
        if off + t > AUX:
            return ids, f"record at {pos} crosses the ring's end", pad
        if fl & DISCARD:
            pad += t
        else:
            i, n = struct.unpack_from("<QQ", buf, off + 8)
            if n != ~i & MASK or ln != size_of(i):
                return ids, f"record at {pos} damaged: {ln} bytes, {i:#x} {n:#x}", pad
            if var and ln == 24 and struct.unpack_from("<Q", buf, off + 24)[0] != i * 3 & MASK:
                return ids, f"record at {pos}: third word wrong", pad
            ids.append(i)
        pos += t
    return ids, None if pos == prod else f"walk ended at {pos}, producer {prod}", pad


rows, failed = [], 0
for place, prog, ring, size_of in [
    (place, *p) for place in MODS for p in [
        ("wrap_const", "ring_c", lambda i: 16),
        ("wrap_var", "ring_v", lambda i: 16 + (i & 1) * 8),
    ]
]:
    mod = MODS[place]
    desc = glob(mod, f"bpf2ptx_map_{ring}", 8, cp.uint64)
    ctr = glob(mod, f"bpf2ptx_mapctr_{ring}", 2, cp.uint64)
    data = glob(mod, f"bpf2ptx_mapdata_{ring}", AUX, cp.uint8)
    fn = mod.get_function(f"bpf2ptx_entry_{prog}")
    res = cp.zeros(1, cp.uint64)
    cases = [(s, g, b, AUX) for s in (AUX - 8, AUX - 16, AUX - 24, AUX - 40, AUX - 1000,
                                      3 * AUX - 8, 5 * AUX - 24)
             for g, b in ((1, 32), (1, 7), (4, 256), (8, 250))]
    cases += [(AUX - 48, 2, 64, 100), (7 * AUX - 16, 4, 128, 1000)]  # room < records
    # Room for exactly the launch's records, from a start that no record meets the end of.
    exact = sum(8 + size_of(i) for i in range(8 * 256))
    cases += [(s, 8, 256, exact) for s in (2 * AUX, 3 * AUX, 5 * AUX + 8192)]
    for start, grid, block, room in cases:
        n = grid * block
        data.fill(0)
        ctr[:] = cp.array([start, start - (AUX - room)], dtype=cp.uint64)
        # No drops yet; the bound (word 7) equals the producer when no reservation runs.
        desc[6:8] = cp.array([0, start], dtype=cp.uint64)
        fn((grid,), (block,), (cp.uint64(0), cp.uint64(0), res))
        cp.cuda.runtime.deviceSynchronize()
        prod, cons = (int(x) for x in ctr.get())
        drops, bound = (int(x) for x in desc[6:8].get())
        inflight = bound - prod  # claims not given back
        # The launch's records lie between the producer it started at and the new one
        # (below `start` is what the positions say was consumed or left earlier).
        ids, err, pad = walk(data.get().tobytes(), start, prod, size_of, prog == "wrap_var")
        if room == AUX or room == sum(8 + size_of(i) for i in range(n)):
            ok = err is None and sorted(ids) == list(range(n)) and drops == 0 and inflight == 0
        else:
            used = sum(8 + size_of(i) for i in ids) + pad
            ok = (err is None and len(set(ids)) == len(ids) and len(ids) + drops == n
                  and inflight == 0 and used <= room and 0 < len(ids) < n)
        ok = ok and cons == start - (AUX - room)
        failed += not ok
        rows.append(f"| {prog} ({place}) | {start:#x} | {grid}x{block} | {room} | {len(ids)} | {drops} "
                    f"| {pad} | {err or '-'} | {'ok' if ok else 'FAIL'} |")
        print(rows[-1], flush=True)

table = ["| program | start position | launch | room | records | drops | padding bytes "
         "| walk | |", "|---|---:|---|---:|---:|---:|---:|---|---|"] + rows
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(table) + "\n")
print(f"{len(rows) - failed} of {len(rows)} cases pass")
sys.exit(1 if failed else 0)
