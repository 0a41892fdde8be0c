"""What every GPU check script shares: a table of checks against a CPU model (one printed
row each), the summary, the exit status, and the map dump's hex byte strings."""
import sys


def val(h):
    """A little-endian number from a dumped value (`["0x01", "0x00", ...]`)."""
    return int.from_bytes(bytes(int(x, 16) for x in h), "little")


class Table:
    """Rows `| case | check | got | CPU model | ok/FAIL |`, printed as they come."""

    def __init__(self, first="case", width=None):
        self.first, self.width = first, width
        self.rows, self.failed = [], 0

    def show(self, v):
        s = str(v)
        return "..." if self.width is not None and len(s) >= self.width else s

    def check(self, case, what, got, want):
        ok = got == want
        self.failed += not ok
        self.rows.append(f"| {case} | {what} | {self.show(got)} | {self.show(want)} "
                         f"| {'ok' if ok else 'FAIL'} |")
        print(self.rows[-1], flush=True)

    def finish(self, unit="checks", head=None):
        """Writes the table to argv[1] when given (after `head`, markdown lines such as
        the command that ran, when given), prints the summary, exits 1 on a FAIL."""
        table = [f"| {self.first} | check | got | CPU model | |",
                 "|---|---|---|---|---|"] + self.rows
        if head:
            table = list(head) + [""] + table
        if len(sys.argv) > 1:
            with open(sys.argv[1], "w") as f:
                f.write("\n".join(table) + "\n")
        print(f"{len(self.rows) - self.failed} of {len(self.rows)} {unit} pass")
        sys.exit(1 if self.failed else 0)


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
