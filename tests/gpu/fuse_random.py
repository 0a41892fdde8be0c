#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 19's randomized check on the GPU: random probes of every kind at random sites of
random kernels, fused and unfused, give the same maps (and the same buffer).

The cases are tests/tests/fuse.rs's (`random_probes_fused_and_unfused_give_the_same_maps`,
which compares the two on the PTX model in CI); it writes them when asked:

    BPF2PTX_FUSE_RANDOM_OUT=$PWD/DIR cargo test -p bpf2ptx-tests --test fuse random_probes

(an absolute DIR: cargo runs the test in tests/)
then, on the GPU machine (CuPy; the driver JITs each module):

    python3 tests/gpu/fuse_random.py DIR [OUT.md]

Per case (`seedNNN.json`, `.fused.ptx`, `.unfused.ptx`): both modules are launched once on
the same inputs as the model's (one buffer filled with k * 13 % 256, the scalars); a
per-thread array gets storage for the launch through descriptor words 3 and 4, as a loader
binds it; each map is read as a host reads it (arrays through descriptor words 3-5, sharded
ones summed over their replicas; per-unit arrays their bound storage; global data its
symbol). Checks: fused == unfused, map by map, and the buffers (a failure); and fused == the
model's outcome (recorded by the test) for every map, reported as a `model:` row with the
first differing word where it differs (not a failure of fusion: the model runs one
schedule, and a probe reading a word other threads add to, or a `.warp`/`.block` program
whose groups are the lanes the hardware converged, can see the schedule; a row there is
a case to look into, the model or the probe). Where a probe stores `%globaltimer` (the
case's `timer`), the values it stores differ from run to run: `start` and `tstate`, where
they are stored, are not compared, and `other`, whose keys may come from them, by its sum
only. A generated kernel's `trap` runs as `exit`, as in the model (on a GPU it would
abort the launch). The cases run in child processes, a new one after a launch failure (which leaves
the CUDA context unusable); the first three cases whose launch failed run again under
compute-sanitizer memcheck, whose report is added to their row. Exit 1 when a check fails, 77 when CuPy is
missing.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import cupy as cp
    import numpy as np
except ImportError:
    print("fuse_random.py: needs CuPy", file=sys.stderr)
    sys.exit(77)


def entry_params(ptx, kernel):
    """The `.param` types of `.entry kernel`, in order (`u64`, `u32`, ...)."""
    m = re.search(r"\.entry\s+" + re.escape(kernel) + r"\s*\(([^)]*)\)", ptx)
    return re.findall(r"\.param\s+\.(\w+)", m.group(1)) if m else []


def pack(kind, v):
    return {"u64": np.uint64, "b64": np.uint64, "s64": np.int64, "u32": np.uint32,
            "b32": np.uint32, "s32": np.int32}[kind](v)


def words_at(ptr, n):
    return cp.ndarray((n,), cp.uint64, memptr=cp.cuda.MemoryPointer(
        cp.cuda.UnownedMemory(ptr, n * 8, None), 0)).get()


def run(path, case):
    """Launches the module at `path` (PTX, which the driver JITs) once as the case says;
    {map name: bytes}, buffer bytes."""
    ptx = open(path).read()
    # The model ends a thread at `trap` as at `exit`; on a GPU, `trap` aborts the whole
    # launch. The generator puts `@%p trap;` among its early ways out (after which the
    # woven exit probes run, as before `exit`): run it as the model does.
    if re.search(r"\btrap;", ptx):
        ptx = re.sub(r"\btrap;", "exit;", ptx)
        fd, path = tempfile.mkstemp(suffix=".ptx")
        with os.fdopen(fd, "w") as f:
            f.write(ptx)
    mod = cp.RawModule(path=path)
    fn = mod.get_function(case["kernel"])
    grid, block = tuple(case["grid"]), tuple(case["block"])
    threads = grid[0] * grid[1] * grid[2] * block[0] * block[1] * block[2]
    warps = grid[0] * grid[1] * grid[2] * -(-(block[0] * block[1] * block[2]) // 32)
    bound = {}
    for m in case["maps"]:
        if not m["per_unit"] or not m["desc"]:
            continue
        try:
            d = mod.get_global(m["desc"])
        except Exception:  # noqa: BLE001 - the probes do not use it: no descriptor
            continue
        units = warps if m["per_warp"] else threads
        buf = cp.zeros(units * m["max_entries"] * m["stride"], cp.uint8)
        desc = cp.ndarray((8,), cp.uint64, memptr=d)
        desc[3] = buf.data.ptr
        desc[4] = units
        bound[m["name"]] = buf
    bufs = []
    for n in case["buffers"]:
        bufs.append(cp.asarray((np.arange(n) * 13 % 256).astype(np.uint8)))
    kinds = entry_params(ptx, case["kernel"])
    vals = [b.data.ptr for b in bufs] + list(case["scalars"])
    args = tuple(pack(k, v) for k, v in zip(kinds, vals))
    fn(grid, block, args)
    cp.cuda.Device().synchronize()
    maps = {}
    for m in case["maps"]:
        name = m["name"]
        size = m["max_entries"] * m["stride"]
        if m["global"]:
            try:
                g = mod.get_global(m["global"])
            except Exception:  # noqa: BLE001
                continue
            raw = cp.ndarray((size,), cp.uint8, memptr=g).get()
            maps[name] = raw.tobytes()
        elif name in bound:
            maps[name] = bound[name].get().tobytes()
        elif m["desc"]:
            try:
                d = mod.get_global(m["desc"])
            except Exception:  # noqa: BLE001
                continue
            w = cp.ndarray((8,), cp.uint64, memptr=d).get()
            data, replicas, replica = int(w[3]), int(w[4]), int(w[5])
            total = np.zeros(size // 8, np.uint64)
            for r in range(max(replicas, 1)):
                total += words_at(data + r * replica, size // 8)
            maps[name] = total.tobytes()
    return maps, [b.get().tobytes() for b in bufs]


def u64s(b):
    return np.frombuffer(b + bytes(-len(b) % 8), np.uint64)


def check(path):
    """One case (`seedNNN.json`): the fused and unfused modules launched and compared;
    the problems found ([] when none). Raises when a launch fails."""
    case = json.load(open(path))
    base = path[:-len(".json")]
    fused, fbuf = run(base + ".fused.ptx", case)
    unfused, ubuf = run(base + ".unfused.ptx", case)
    problems, notes = [], []
    for m, fb in fused.items():
        ub = unfused.get(m)
        model = bytes.fromhex(case["model"].get(m, "")) if m in case["model"] else None
        if case["timer"] and m in ("start", "tstate"):
            continue
        if case["timer"] and m == "other":
            same = int(u64s(fb).sum()) == int(u64s(ub).sum())
            vs_model = model is None or int(u64s(fb).sum()) == int(u64s(model).sum())
        else:
            same = fb == ub
            vs_model = model is None or fb == model
        if not same:
            k = int(np.argmax(u64s(fb) != u64s(ub)))
            problems.append(f"{m}[{k}] fused {u64s(fb)[k]} unfused {u64s(ub)[k]}")
        if not vs_model:
            k = int(np.argmax(u64s(fb) != u64s(model))) if len(fb) == len(model) else 0
            notes.append(f"{m}[{k}] GPU {u64s(fb)[k]} model {u64s(model)[k] if len(model) else '-'}")
    if fbuf != ubuf:
        problems.append("buffers differ")
    # Where the GPU (fused and unfused alike) differs from the model: a note, not a
    # failure of fusion. The model runs one schedule, and some probes can see the
    # schedule (a `Reader` reads a word of `other` that other threads add to; `.warp` and
    # `.block` programs run once per group of lanes the hardware converged).
    if notes and not problems:
        return ["model: " + "; ".join(notes)]
    return problems


def child(cases):
    """Runs `cases` in order, one row per line ("name<TAB>result"), until a launch fails:
    that leaves this process's CUDA context unusable, so it ends the child (exit 3)."""
    for path in cases:
        name = os.path.basename(path)[:-len(".json")]
        try:
            problems = check(path)
        except Exception as e:  # noqa: BLE001 - the parent records it as the row
            print(f"{name}\tlaunch failed: {e}", flush=True)
            sys.exit(3)
        print(f"{name}\t{'; '.join(problems) or 'ok'}", flush=True)


def rows_of(cases, sanitize=False):
    """{name: result} of `cases`, each child starting after the case whose launch failed
    in the one before; under compute-sanitizer memcheck when `sanitize` (its report
    lines are appended to a failed launch's row)."""
    rows, rest = {}, list(cases)
    while rest:
        cmd = [sys.executable, os.path.abspath(__file__), "--child"] + rest
        if sanitize:
            cmd = ["compute-sanitizer", "--tool", "memcheck", "--print-limit", "3"] + cmd
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            out = r.stdout
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        done = [ln.split("\t", 1) for ln in out.splitlines() if "\t" in ln]
        for name, result in done:
            rows[name] = result
        names = [os.path.basename(c)[:-len(".json")] for c in rest]
        if not done:
            # The child ended before its first row: that case is the culprit.
            report = [ln.strip() for ln in out.splitlines() if "=========" in ln][:8]
            rows[names[0]] = "child died: " + (" / ".join(report) or "no output")
            done = [(names[0], "")]
        elif sanitize and "launch failed" in done[-1][1]:
            report = [ln.strip() for ln in out.splitlines()
                      if "=========" in ln and ln.strip("= ")][:8]
            rows[done[-1][0]] += " | memcheck: " + " / ".join(report)
        rest = rest[names.index(done[-1][0]) + 1:]
    return rows


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    if len(sys.argv) < 2:
        sys.exit("usage: fuse_random.py DIR [OUT.md]")
    d, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None
    cases = sorted(glob.glob(os.path.join(d, "seed*.json")))
    if not cases:
        sys.exit(f"fuse_random.py: no cases in {d} (BPF2PTX_FUSE_RANDOM_OUT=DIR cargo test "
                 "-p bpf2ptx-tests --test fuse random_probes)")
    rows = rows_of(cases)
    # The first three cases whose launch failed, again under memcheck: where they fault.
    crashed = [c for c in cases
               if rows[os.path.basename(c)[:-len(".json")]].startswith("launch failed")][:3]
    if crashed and shutil.which("compute-sanitizer"):
        for name, result in rows_of(crashed, sanitize=True).items():
            rows[name] += " | under memcheck: " + result
    failed = sum(r != "ok" and not r.startswith("model: ") for r in rows.values())
    model = sum(r.startswith("model: ") for r in rows.values())
    lines = [f"Randomized fusion check on the GPU: {len(cases) - failed} of {len(cases)} cases "
             "pass (`python3 tests/gpu/fuse_random.py DIR`): fused == unfused, maps and buffer; "
             f"the GPU's maps equal the model's in {len(cases) - failed - model} (the rest: "
             "`model:` rows)", "",
             "| case | result |", "|---|---|"] + [f"| {n} | {r} |" for n, r in sorted(rows.items())]
    text = "\n".join(lines) + "\n"
    print(text)
    if out:
        open(out, "w").write(text)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
