"""What every GPU check script shares: a table of checks against a CPU model (one printed
row each), the summary, the exit status, the map dump's hex byte strings, the last
snapshot of `bpf2ptx trace --format json` output, and the skip of a check whose
dependency is missing (exit 77, which tests/gpu/open_issues.sh records as skipped)."""
import sys

# The exit status of a check that could not run here (a dependency missing): not a
# failure (automake's convention, as trace_apps.py's two-device app uses it).
SKIPPED = 77


def val(h):
    """A little-endian number from a dumped value (`["0x01", "0x00", ...]`)."""
    return int.from_bytes(bytes(int(x, 16) for x in h), "little")


def number(v):
    """A key or value of `bpf2ptx trace --format json`: a JSON number (BTF integers) or a
    hex string (`"0x2a"`, maps without BTF)."""
    return int(v, 16) if isinstance(v, str) else int(v)


def last_snapshots(lines):
    """Each process's last snapshot in `bpf2ptx trace --format json` output (`lines`: the
    parsed lines), its maps summed over its devices: {pid: {"maps": {name: {key: value}},
    "failures": [...], "final": bool, "end": ...}}. A process's last snapshot is the lines
    of the last moment printed for it (its last `elapsed_ns`), as trace_ddp.py's
    last_per_process takes it: one line per device (or one with `device` null when it
    instrumented nothing), and with several devices or contexts their sum (`sum_of`). The
    values of a map found on several devices are added; the sum line adds only the maps
    no device line has, the process-wide ones (maps host-side programs share: specs/
    trace.md, "Several GPUs"). "final": every line of it says it is the process's final
    snapshot (False without pids, where lines do not say). Elided zero rows are absent
    keys; a map printed as a histogram has no entries here. pid None: output without pids
    (one process)."""
    by = {}
    for s in lines:
        by.setdefault(s.get("pid"), []).append(s)
    out = {}
    for pid, ss in by.items():
        t = ss[-1].get("elapsed_ns")
        moment = [s for s in ss if s.get("elapsed_ns") == t]
        p = out[pid] = {"maps": {}, "failures": [], "end": None,
                        "final": all(s.get("final") is True for s in moment)}
        on_devices = {m["name"] for s in moment if "sum_of" not in s for m in s.get("maps", [])}
        for s in moment:
            if "sum_of" not in s:
                p["failures"] += s.get("failures") or []
            p["end"] = p["end"] or s.get("end")
            for m in s.get("maps", []):
                if "sum_of" in s and m["name"] in on_devices:
                    continue
                vals = p["maps"].setdefault(m["name"], {})
                for e in m.get("entries", []):
                    if isinstance(e.get("value"), (int, str)):
                        k = number(e["key"])
                        vals[k] = vals.get(k, 0) + number(e["value"])
    return out


def fnv1a64(name):
    """FNV-1a (64 bits) of a kernel's name: `struct bpf2ptx_launch_ctx`'s kernel_hash."""
    h = 0xcbf29ce484222325
    for b in name.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


class Table:
    """Rows `| case | check | got | CPU model | ok/FAIL |`, printed as they come."""

    def __init__(self, first="case", width=None):
        self.first, self.width = first, width
        self.rows, self.failed, self.skipped = [], 0, 0

    def show(self, v):
        s = str(v)
        return "..." if self.width is not None and len(s) >= self.width else s

    def check(self, case, what, got, want):
        ok = got == want
        self.failed += not ok
        self.rows.append(f"| {case} | {what} | {self.show(got)} | {self.show(want)} "
                         f"| {'ok' if ok else 'FAIL'} |")
        print(self.rows[-1], flush=True)

    def skip(self, case, what, why):
        """A row for a check that could not run here (`why`: what was missing), neither a
        pass nor a failure (tests/gpu/corpus.py: a part whose dependency is missing)."""
        self.skipped += 1
        self.rows.append(f"| {case} | {what} | {self.show(why)} | - | skipped |")
        print(self.rows[-1], flush=True)

    def finish(self, unit="checks", head=None, tail=None):
        """Writes the table to argv[1] when given (after `head`, markdown lines such as
        the command that ran, and before `tail`, when given), prints the summary, exits 1
        on a FAIL."""
        table = [f"| {self.first} | check | got | CPU model | |",
                 "|---|---|---|---|---|"] + self.rows
        if head:
            table = list(head) + [""] + table
        if tail:
            table += [""] + list(tail)
        if len(sys.argv) > 1:
            with open(sys.argv[1], "w") as f:
                f.write("\n".join(table) + "\n")
        ran = len(self.rows) - self.skipped
        print(f"{ran - self.failed} of {ran} {unit} pass"
              + (f", {self.skipped} skipped" if self.skipped else ""))
        sys.exit(1 if self.failed else 0)

    def finish_on_sigterm(self, head=None):
        """On SIGTERM (the step's `timeout` in tests/gpu/open_issues.sh), a failing row
        saying so and finish(): the rows so far are written. A run in progress is ended
        with the check (subprocess.run kills its child when the exit unwinds it)."""
        import signal

        def stop(signum, _frame):
            signal.signal(signum, signal.SIG_DFL)
            self.check("run", "finished within the time limit", "stopped (SIGTERM)",
                       "finished")
            self.finish(head=head() if callable(head) else head)
        signal.signal(signal.SIGTERM, stop)


def skip(why, out=None):
    """Ends a check that cannot run here (`why`: the dependency that is missing): says so
    on stdout and in `out` (default argv[1], when given), exits SKIPPED."""
    out = out or (sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
                  else None)
    print(f"SKIP: {why}", flush=True)
    if out:
        with open(out, "w") as f:
            f.write(f"skipped: {why}\n")
    sys.exit(SKIPPED)


def vector_add_ptx(tmp, kernel):
    """An nvcc-built vector add (tests/inject/src/vecadd.cu, `nvcc -ptx -arch=sm_90` on
    this machine, so its `.version` is one this driver loads) with the kernel renamed to
    `kernel`, written into `tmp`; its path. Without nvcc: the committed
    tests/inject/fatbin/vecadd.compute_90.ptx, whose `.version` may be newer than the
    driver (then the load fails and says so)."""
    import os
    import re
    import shutil
    import subprocess
    nvcc = shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)
    src = os.path.join(tmp, "vecadd.nvcc.ptx")
    if nvcc:
        subprocess.run([nvcc, "-ptx", "-arch=sm_90", "-Itests/inject/src",
                        "tests/inject/src/vecadd.cu", "-o", src], check=True)
    else:
        src = "tests/inject/fatbin/vecadd.compute_90.ptx"
    text = open(src).read()
    text = re.sub(r"\bvecadd(_param_[0-9])?\b", lambda m: kernel + (m.group(1) or ""), text)
    path = os.path.join(tmp, "vectorAdd.ptx")
    with open(path, "w") as f:
        f.write(text)
    return path
