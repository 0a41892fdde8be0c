#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""The opcodes of PTX text, and their rows in specs/abi.md's coverage table ("Attach points
by instruction", generated from compiler/backend/src/inject/opcodes.rs), for
tests/gpu/corpus.py: every opcode of a real-world module must have a row, so that it is
either a memory attach point or listed as deliberately not one (issue 18, "Coverage
table").

`opcodes(text)` counts the instructions of every function body by opcode as written
(`ld.global.nc.v4.f32`, without the guard); `CoverageTable().row(opcode)` is the row of the
longest opcode prefix, by dot-separated components, as `opcodes::classify` takes it
(`cp.async.bulk.tensor.2d...` is `cp.async.bulk.tensor`, `bar.warp.sync` is `bar`), or
None. tests/tests/corpus_cpu.rs checks both against the Rust reader and table on the
committed PTX (nvcc, clang, CUB and the hand-written Hopper and Blackwell fixtures).

    python3 tests/gpu/ptx_opcodes.py FILE.ptx ...   # JSON: {"files": {FILE: {opcode: n}},
                                                    #        "rows": {opcode: row or null}}
"""
import json
import os
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ABI = os.path.join(os.path.dirname(os.path.dirname(HERE)), "specs", "abi.md")
BEGIN = "<!-- BEGIN GENERATED ATTACH TABLE"
END = "<!-- END GENERATED ATTACH TABLE -->"

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
# Directives that end at the end of their line, not at a `;` (the Rust lexer's
# LINE_DIRECTIVES), and old nvcc's `@@DWARF` debug lines.
_LINE = re.compile(r"^[ \t]*(?:\.(?:version|target|address_size|file|loc)\b|@@DWARF)[^\n]*$",
                   re.M)
_LABEL = re.compile(r"^\s*[A-Za-z_$][\w$]*\s*:(?!:)")
_GUARD = re.compile(r"^@\s*!?\s*[%\w$]+\s*")
_OPCODE = re.compile(r"[^\s({\[,;]+")
_FUNCTION = re.compile(r"(?:^|\s)\.(?:entry|func)\b")


def _strip_labels(s):
    while True:
        m = _LABEL.match(s)
        if not m:
            return s.strip()
        s = s[m.end():]


def _opcode(statement):
    """The opcode of one statement of a function body (its text without the `;`), or None
    for a directive (`.reg`, `.local`, `.pragma`, a call prototype) or nothing."""
    s = _strip_labels(statement)
    if not s or s.startswith("."):
        return None
    if s.startswith("@"):
        s = _GUARD.sub("", s, count=1)
    m = _OPCODE.match(s)
    return m.group(0) if m else None


def opcodes(text):
    """Counter {opcode: instructions} of every `.entry` and `.func` body of `text`, nested
    scopes (inline assembly's `{ ... }`, call sequences) included. Braces inside an
    instruction (vector operands `{%r1, %r2}`) are told from a scope's by where they are: a
    scope opens where a statement starts. Initialisers and sections (`= {...}`, `.section
    .debug_info { ... }`) at the top level are skipped."""
    text = _STRING.sub('""', text)
    text = _COMMENT.sub(" ", text)
    text = _LINE.sub("", text)
    out = Counter()
    depth = 0        # scope depth inside a function body (0: at the top level)
    pending = False  # a `.entry` / `.func` header seen, its body not yet
    skip = 0         # depth inside a top-level initialiser or section
    operand = 0      # braces open inside the current instruction
    buf = []
    for m in re.finditer(r"[{};]|[^{};]+", text):
        tok = m.group(0)
        if depth == 0:
            if skip:
                skip += {"{": 1, "}": -1}.get(tok, 0)
            elif tok == "{":
                if pending:
                    depth, pending, buf, operand = 1, False, [], 0
                else:
                    skip = 1
            elif tok == ";":
                pending = False  # a prototype: `.extern .func (...) f (...);`
            elif tok != "}" and _FUNCTION.search(tok):
                pending = True
            continue
        if tok == ";":
            op = _opcode("".join(buf))
            if op:
                out[op] += 1
            buf, operand = [], 0
        elif tok == "{":
            if operand or _strip_labels("".join(buf)):
                operand += 1
                buf.append(tok)
            else:
                depth += 1
                buf = []
        elif tok == "}":
            if operand:
                operand -= 1
                buf.append(tok)
            else:
                depth -= 1
                buf = []
        else:
            buf.append(tok)
    return out


class CoverageTable:
    """specs/abi.md's generated table: {opcode: {"op", "group", "mem", "why"}}."""

    def __init__(self, path=ABI):
        with open(path) as f:
            doc = f.read()
        a, b = doc.find(BEGIN), doc.find(END)
        if a < 0 or b < a:
            raise ValueError(f"{path}: no generated attach table")
        self.rows = {}
        for line in doc[a:b].splitlines():
            m = re.match(r"^\| `([^`]+)` \| (\d+) \| (\w+) \| (yes|no) \| (.*) \|$", line)
            if m:
                self.rows[m.group(1)] = {"opcode": m.group(1), "op": int(m.group(2)),
                                         "group": m.group(3), "mem": m.group(4) == "yes",
                                         "why": m.group(5)}
        if len(self.rows) < 100:
            raise ValueError(f"{path}: only {len(self.rows)} rows in the attach table")

    def row(self, opcode):
        """The row of the longest prefix of `opcode`'s components, or None."""
        parts = opcode.split(".")
        best = None
        for n in range(len(parts), 0, -1):
            best = self.rows.get(".".join(parts[:n]))
            if best:
                return best
        return best


def main(files):
    table = CoverageTable()
    per_file, seen = {}, set()
    for f in files:
        with open(f, errors="replace") as fh:
            c = opcodes(fh.read())
        per_file[f] = dict(sorted(c.items()))
        seen.update(c)
    rows = {op: (table.row(op) or {}).get("opcode") for op in sorted(seen)}
    print(json.dumps({"files": per_file, "rows": rows}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
