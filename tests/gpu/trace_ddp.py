#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Issue 20 on the GPU, the DDP point: `bpf2ptx trace` on a PyTorch DistributedDataParallel
training step (tests/gpu/trace/ddp_app.py), two ranks, each a process the traced command
started (torch.multiprocessing.spawn): one trace covers the process tree. With two GPUs:
backend nccl, one process per GPU, NCCL_NVLS_ENABLE=0; with one: backend gloo, both ranks
on device 0 (the table says which). The model's forward uses the PyTorch extension of
tests/gpu/trace/torch_ext (built as tests/gpu/trace_torch.py builds it, with
TORCH_CUDA_ARCH_LIST "9.0+PTX", so its kernels carry PTX); torch's own kernels (cuBLAS,
elementwise, the optimizer, NCCL's or gloo's copies) are SASS only.

Runs: the extension's build (untraced), the app untraced, under `bpf2ptx trace --format
json` and under `bpf2ptx trace` (text), each with tests/inject/probes/counters.bpf.o
(entry and exit, per thread, warp and block, on every kernel `*`). Rows:

- setup: the ranks' backend and devices, as the GPU count asks;
- run: exit codes 0; the app's stdout the same (its lines sorted: the ranks print
  concurrently); each rank's losses the same traced and untraced; every rank's parameters
  the same after the steps (DDP averaged the gradients), traced and untraced;
- processes: the JSON output has a section (lines with its `pid`) for every rank, whose
  last snapshot is its final one; each rank found its `proc-<pid>/` folder in the session
  folder (the app's own look, in its report); the text output has a `--- process PID:`
  header for every rank and says the command exited with code 0;
- devices: each rank's maps are on its own device (the JSON `device` of its last
  snapshot's lines; with two GPUs, rank r on device r);
- counts: per rank and device, `counts` slots 0-5 equal the CPU model of the rank's
  `model` lines (per thread L*G*B, per warp L*G*ceil(B/32), per block L*G);
- kernels: the kernels trace instrumented in each rank's process (its `process PID: ...
  probes in` lines) are exactly the extension's two; each rank's events name kernels with
  no PTX (the interposer's `no_ptx`), and trace's stderr names torch's kernels in `no PTX
  (SASS for ...)` lines.

    BPF2PTX=gpu-carry/bpf2ptx python3 tests/gpu/trace_ddp.py [OUT.md]

needs what trace_torch.py needs (PyTorch with CUDA, nvcc, a host C++ compiler, the
interposer beside the bpf2ptx binary); DDP_TIMEOUT (seconds, default 60) bounds each run
of the app; a run past it, SIGTERM or ^C kill the run's whole process group, and the
table is written with what was checked.
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from types import SimpleNamespace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Table  # noqa: E402
from trace_apps import slots_of  # noqa: E402
from trace_torch import (BPF2PTX, EXT_KERNELS, PROBES, add_launches,  # noqa: E402
                         build_extension, sass_only)

APP = "tests/gpu/trace/ddp_app.py"
TIMEOUT = int(os.environ.get("DDP_TIMEOUT", "60"))
# NVLink multicast stays off (the GPU machines' rule); the app sets it too.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                "NVSHMEM_DISABLE_NVLS": "1"}


class Stopped(Exception):
    """SIGTERM or SIGINT (the step's `timeout`, a ^C): the table is written as it is."""


RUNNING = []  # the app's process group, while it runs


def stop(signum, _frame):
    for p in RUNNING:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    raise Stopped(signal.Signals(signum).name)


def run_tree(cmd, env, timeout=TIMEOUT):
    """Runs `cmd` in a process group of its own (in this session: the device machine ends
    what a command leaves running in it); past `timeout` seconds, or when this script is
    stopped, the whole group (trace, the app, its ranks) is killed; exit code 124 for a
    timeout."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env, process_group=0)
    RUNNING.append(p)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc = 124
        err += f"\n(killed after {timeout} s)\n"
    finally:
        RUNNING.remove(p)
    return SimpleNamespace(returncode=rc, stdout=out, stderr=err, secs=time.time() - t0)


def reports(folder):
    """The app's reports: setup.json, and rank-R.json by rank."""
    setup, ranks = None, {}
    if os.path.isdir(folder):
        for f in sorted(os.listdir(folder)):
            with open(os.path.join(folder, f)) as fh:
                r = json.load(fh)
            if f == "setup.json":
                setup = r
            elif f.startswith("rank-"):
                ranks[r["rank"]] = r
    return setup, ranks


def sorted_lines(stdout):
    """The app's stdout lines, sorted: its ranks print concurrently, so their lines
    interleave in any order."""
    return sorted(x for x in stdout.splitlines() if x.strip())


def losses(stdout):
    """Per rank, its `(step, loss)` lines."""
    out = {}
    for r, s, v in re.findall(r"^rank (\d+) step (\d+) loss (\S+)$", stdout, re.M):
        out.setdefault(int(r), []).append((int(s), v))
    return {r: sorted(out[r]) for r in sorted(out)}


def params(stdout):
    """Per rank, its parameters' sum after the steps."""
    return {int(r): v for r, v in re.findall(r"^rank (\d+) params (\S+)$", stdout, re.M)}


def model(stdout):
    """Slots 0-5 per rank and device from the `model NAME launches L grid G block B device
    D rank R` lines."""
    per = {}
    for _, l, g, b, d, r in re.findall(
            r"^model (\S+) launches (\d+) grid (\d+) block (\d+) device (\d+) rank (\d+)$",
            stdout, re.M):
        slots = per.setdefault(int(r), {}).setdefault(int(d), [0] * 6)
        add_launches(slots, int(l), int(g), int(b))
    return per


def scope(snap):
    """A JSON snapshot line's scope: `device` (with `context`, 2, 3, ..., for a further
    context of the device: `"D (context C)"`), or `sum` for the sum of several devices,
    or None for a process with no device (nothing instrumented)."""
    if "sum_of" in snap:
        return "sum"
    d = snap.get("device")
    if d is not None and snap.get("context"):
        return f"{d} (context {snap['context']})"
    return d


def last_per_process(lines):
    """Per pid (the lines' `pid`), its last snapshot: the lines of the last moment printed
    for it (one per device and, with several, their sum; one with `device` null when it
    instrumented nothing), by scope. `bpf2ptx trace` prints every process's last
    snapshot once the command ended; a periodic round may have printed the same one
    before (same `elapsed_ns`), which the later lines replace."""
    by = {}
    for s in lines:
        by.setdefault(s.get("pid"), []).append(s)
    out = {}
    for pid, ss in by.items():
        t = ss[-1]["elapsed_ns"]
        out[pid] = {scope(s): s for s in ss if s["elapsed_ns"] == t}
    return out


def counted(lines):
    """Per pid: `counts` slots 0-5 per scope of its last snapshot (`device` ints, `sum`),
    whether that snapshot is the process's final one, and its `end` (set on one process
    only: the command's, or the last one's when the command used no CUDA)."""
    out = {}
    for pid, snaps in last_per_process(lines).items():
        out[pid] = {
            "slots": {k: slots_of(s) for k, s in snaps.items() if k is not None},
            "final": all(s.get("final") is True for s in snaps.values()),
            "end": next((s["end"] for s in snaps.values() if s.get("end") is not None), None),
        }
    return out


def instrumented_per_process(stderr):
    """Per pid, the kernels trace's `process PID: LABEL: probes in K1, K2 (inject ...`
    lines name (pid None when only one process wrote a session folder: no prefix)."""
    out = {}
    for pid, ks in re.findall(
            r"^bpf2ptx trace: (?:process (\d+): )?.*?: probes in (.+?) \(inject ", stderr, re.M):
        out.setdefault(int(pid) if pid else None, set()).update(k.strip() for k in ks.split(","))
    return {p: sorted(k) for p, k in out.items()}


def text_processes(text):
    """The pids of the text output's `--- process PID[: COMMAND] ---` headers."""
    return sorted({int(p) for p in re.findall(r"^--- process (\d+)\b", text, re.M)})


def text_devices(text):
    """The devices the text output's headers name (`, device N`)."""
    return sorted({int(d) for d in re.findall(r"^=== bpf2ptx trace .*?, device (\d+)", text, re.M)})


def app(tmp, name, ext, env, trace=None, skip=None):
    """One run of the app: untraced, or under `bpf2ptx trace` with `trace` (options before
    the probes; the snapshots go to tmp/NAME.out). The run, its reports and the command.
    `skip`: why not to run it (its rows fail)."""
    reps = os.path.join(tmp, f"{name}-reports")
    cmd = [sys.executable, APP, "run", ext, reps]
    if trace is not None:
        cmd = [BPF2PTX, "trace"] + trace + ["-o", os.path.join(tmp, f"{name}.out"), PROBES,
                                            "--"] + cmd
    if skip:
        r = SimpleNamespace(returncode=f"not run: {skip}", stdout="", stderr="", secs=0.0)
    else:
        r = run_tree(cmd, env)
    print(f"== {name} ({r.secs:.1f} s, exit {r.returncode}): {shlex.join(cmd)}", file=sys.stderr)
    print(r.stdout, file=sys.stderr)
    print(r.stderr[-20000:], file=sys.stderr)
    r.setup, r.ranks = reports(reps)
    r.cmd = cmd
    out = os.path.join(tmp, f"{name}.out")
    r.output = ""
    if os.path.exists(out):
        with open(out) as f:
            r.output = f.read()
    return r


def expected_setup(setup):
    """What the ranks' backend and devices must be for the GPU count: the table's words."""
    if setup is None:
        return None, "the app wrote no setup (see its stderr)"
    if setup["gpus"] >= 2:
        return ("nccl", [0, 1]), (f"{setup['gpus']} GPUs: nccl, one process per GPU "
                                  f"(NCCL_NVLS_ENABLE={setup.get('nccl_nvls_enable')})")
    return ("gloo", [0, 0]), "one GPU: gloo, both ranks on device 0"


def main():
    t = Table("ddp")
    head = ["# `bpf2ptx trace` on a PyTorch DDP training step (issue 20)", "",
            f"command: `BPF2PTX={shlex.quote(BPF2PTX)} "
            f"{shlex.join(['python3'] + sys.argv)}`"]
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        checks(t, head)
    except Stopped as e:
        t.check("run", "finished (not stopped by a signal: the step's timeout?)", str(e), None)
    except Exception as e:  # noqa: BLE001 -- a bug here must not cost the rows so far
        traceback.print_exc()
        t.check("script", "ran to its end", f"{type(e).__name__}: {e}", "no exception")
    t.finish(head=head)


def checks(t, head):
    """Every row, into `t`; the markdown's first lines into `head`."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), **NO_MULTICAST)
        ext = build_extension(t, tmp, env)
        if ext is None:
            return

        plain = app(tmp, "untraced", ext, env)
        want_setup, words = expected_setup(plain.setup)
        head.append("")
        head.append(f"setup: {words}; torch {(plain.setup or {}).get('torch')}, CUDA "
                    f"{(plain.setup or {}).get('cuda')}; "
                    + ", ".join(f"rank {r} on device {v['device']} ({v['device_name']})"
                                for r, v in sorted(plain.ranks.items())))
        got_setup = (next((v["backend"] for v in plain.ranks.values()), None),
                     [plain.ranks[r]["device"] for r in sorted(plain.ranks)])
        t.check("setup", f"ranks' backend and devices ({words})", got_setup, want_setup)
        if plain.returncode != 0:
            t.check("run", "exit code (untraced)", plain.returncode, 0)
            return

        traced = app(tmp, "json", ext, env, ["--format", "json", "--interval", "200ms"])
        # A traced run that hung would hang again: its time is better left to the table.
        text = app(tmp, "text", ext, env, ["--interval", "1s"],
                   skip="the json run timed out" if traced.returncode == 124 else None)
        head.append("")
        head.append(f"traced: `{shlex.join(traced.cmd)}` (and with the text format: "
                    f"`{shlex.join(text.cmd)}`; {traced.secs:.1f} s and {text.secs:.1f} s, "
                    f"untraced {plain.secs:.1f} s)")

        t.check("run", "exit code (untraced, traced json, traced text)",
                (plain.returncode, traced.returncode, text.returncode), (0, 0, 0))
        same = (sorted_lines(traced.stdout) == sorted_lines(plain.stdout),
                sorted_lines(text.stdout) == sorted_lines(plain.stdout))
        t.check("run", "app's output unchanged, lines sorted (json, text)", same, (True, True))
        t.check("run", "each rank's losses, traced (json run)", losses(traced.stdout),
                losses(plain.stdout) or "no loss lines")
        t.check("run", "parameters after the steps: distinct values across ranks "
                "(untraced, traced)",
                (len(set(params(plain.stdout).values())), len(set(params(traced.stdout).values()))),
                (1, 1))

        # The JSON run: one section per rank's process. Every row is keyed by the ranks
        # and devices the setup asks for, so that a rank missing from the traced run
        # fails its rows rather than leaving them empty.
        want_devices = want_setup[1] if want_setup else [v["device"] for _, v in
                                                         sorted(plain.ranks.items())]
        want_ranks = list(range(len(want_devices)))
        lines = [json.loads(x) for x in traced.output.splitlines() if x.lstrip().startswith("{")]
        per = counted(lines)
        ranks = traced.ranks
        pid_of = {r: v["pid"] for r, v in ranks.items()}
        of = {r: per.get(pid_of.get(r), {}) for r in want_ranks}
        others = sorted((p for p in per if p not in pid_of.values()), key=str)
        print(f"  json: {len(lines)} lines; processes {sorted(per, key=str)}; ranks' pids "
              f"{pid_of}; others (the launcher, when it used CUDA) {others}", file=sys.stderr)
        t.check("processes", f"ranks with a section in the JSON output (`pid`; other "
                f"processes: {len(others)})", [r for r in want_ranks if of[r]], want_ranks)
        t.check("processes", "each rank's last snapshot is its final one (`final`)",
                {r: of[r].get("final") for r in want_ranks}, {r: True for r in want_ranks})
        ended = [v["end"].get("exit_code") for v in per.values() if v["end"]]
        t.check("processes", "the command's end on one section: exit code", ended, [0])
        need = {"cmdline", "events.jsonl"}
        t.check("processes", "each rank's proc-<pid>/ in the session folder (seen by the "
                "rank: cmdline, events.jsonl)",
                {r: sorted(need & set(((ranks.get(r) or {}).get("session") or {}).get("files")
                                      or [])) for r in want_ranks},
                {r: sorted(need) for r in want_ranks})
        # The text run's process sections.
        tpids = {r: v["pid"] for r, v in text.ranks.items()}
        heads = text_processes(text.output)
        print(f"  text: process headers {heads}, ranks' pids {tpids}, devices named "
              f"{text_devices(text.output)} (a process with one device names none)",
              file=sys.stderr)
        t.check("processes", "text output: a `--- process PID` header per rank",
                [r for r in want_ranks if tpids.get(r) in heads], want_ranks)
        t.check("processes", "text output: `final snapshot (the app exited with code 0)`",
                "final snapshot (the app exited with code 0)" in text.output, True)

        # Devices and counts, per rank.
        t.check("devices", "each rank's maps on its device (JSON `device`)",
                {r: sorted((k for k in of[r].get("slots", {}) if k != "sum"), key=str)
                 for r in want_ranks},
                {r: [want_devices[r]] for r in want_ranks})
        want_model = model(plain.stdout)
        t.check("counts", "entry/exit per thread, warp, block, per rank and device",
                {r: {k: v for k, v in of[r].get("slots", {}).items() if k != "sum"}
                 for r in want_ranks},
                {r: want_model[r] for r in sorted(want_model)} or "no model lines")

        # Kernels: instrumented in each process, SASS-only ones named.
        probed = instrumented_per_process(traced.stderr)
        t.check("kernels", "instrumented in each rank's process: the extension's only",
                {r: probed.get(pid_of.get(r), []) for r in want_ranks},
                {r: sorted(EXT_KERNELS) for r in want_ranks})
        t.check("kernels", "each rank's events name kernels with no PTX (`no_ptx`)",
                {r: len(((ranks.get(r) or {}).get("session") or {}).get("no_ptx", [])) > 0
                 for r in want_ranks},
                {r: True for r in want_ranks})
        sass, fallbacks = sass_only(traced.stderr)
        sass = sorted(set(k for k in sass if k not in EXT_KERNELS))
        print(f"  kernels named as SASS-only on trace's stderr ({len(sass)}):", file=sys.stderr)
        for k in sass:
            print(f"    {k}", file=sys.stderr)
        print(f"  other fallback lines ({len(fallbacks)}):", file=sys.stderr)
        for f in fallbacks[:20]:
            print(f"    {f}", file=sys.stderr)
        for r, v in sorted(ranks.items()):
            s = v["session"] or {}
            print(f"  rank {r} (pid {v['pid']}, device {v['device']}): instrumented "
                  f"{s.get('instrumented')}, no PTX {len(s.get('no_ptx', []))}, fallbacks "
                  f"{s.get('fallback')}, kernels launched {s.get('kernels')}", file=sys.stderr)
        t.check("kernels", f"trace's stderr names torch's kernels as SASS-only ({len(sass)} "
                f"kernels, {len(fallbacks)} other fallbacks)", len(sass) > 0, True)


if __name__ == "__main__":
    main()
