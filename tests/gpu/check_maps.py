import json, subprocess, sys
import os
B = os.environ.get("BPF2PTX", "./target/release/bpf2ptx")
def run(obj, grid, block):
    out = subprocess.run([B, "run", obj, "--target", "sm_90", "--grid", str(grid), "--block", str(block), "--maps"], capture_output=True, text=True)
    if out.returncode != 0:
        print("FAIL", obj, out.returncode, out.stderr[-2000:]); sys.exit(1)
    head, _, body = out.stdout.partition("\n")
    print(obj, head)
    return json.loads(body)
def val(h):
    return int.from_bytes(bytes(int(x, 16) for x in h), "little")
N = 4096 * 256
maps = run("tests/corpus/obj/stress_array.v3.o", 4096, 256)
slots = [m for m in maps if m["name"] == "slots"][0]
counts = [val(e["value"]) for e in slots["entries"]]
print("array slots:", counts[:4], "... all == N/16:", all(c == N // 16 for c in counts), "sum", sum(counts))
mine = [m for m in maps if m["name"] == "mine"][0]["entries"][0]
print("per-thread: threads", mine["threads"], "sum_u64", mine["sum_u64"], "expected", N * (N - 1) // 2, "ok", mine["sum_u64"] == N * (N - 1) // 2)
maps = run("tests/corpus/obj/stress_hash.v3.o", 4096, 256)
h = [m for m in maps if m["name"] == "counts"][0]
keys = [val(e["key"]) for e in h["entries"]]
vals = [val(e["value"]) for e in h["entries"]]
print("hash: entries", len(keys), "unique", len(set(keys)), "keys == 0..4095:", sorted(keys) == list(range(4096)), "all counts == N/4096:", all(v == N // 4096 for v in vals), "sum", sum(vals), "counts", h["counts"])
