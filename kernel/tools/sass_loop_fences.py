#!/usr/bin/env python3
"""GPU-wide fences in a kernel's main loops, from its SASS (one function, as cuobjdump -sass
prints it). The main loops are, for each of UTMALDG (the TMA producer's loads) and UTCHMMA (the
MMA issuer's), the smallest loop (a backward branch and its target) holding at least two of
them: the per-k-block loop, not the one-instruction retry loops around each. Prints one line per
main loop and exits 1 when one holds a GPU- or system-scope MEMBAR (a .release.cluster or
.gpu fence lowered into the loop), 2 when a main loop is missing.

Usage: sass_loop_fences.py KERNEL.sass
"""
import re
import sys

GPU_FENCE = re.compile(r"\bMEMBAR\.(?:[A-Z]+\.)*(?:GPU|SYS)\b")
LINE = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
BRANCH = re.compile(r"\bBRA(?:\.[A-Z.]+)?\s+(?:!?U?P\d+,\s*)?(0x[0-9a-f]+)")


def instructions(path):
    """(address, text) of every instruction."""
    out = []
    with open(path) as f:
        for line in f:
            m = LINE.search(line)
            if m:
                out.append((int(m.group(1), 16), m.group(2)))
    return out


def main_loop(code, opcode):
    """(start, end) of the smallest loop holding two or more `opcode`s, or None."""
    best = None
    for addr, text in code:
        m = BRANCH.search(text)
        if not m or int(m.group(1), 16) >= addr:
            continue
        start = int(m.group(1), 16)
        n = sum(1 for a, t in code if start <= a <= addr and re.search(rf"\b{opcode}\b", t))
        if n >= 2 and (best is None or addr - start < best[1] - best[0]):
            best = (start, addr)
    return best


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    code = instructions(sys.argv[1])
    status = 0
    for opcode in ("UTMALDG", "UTCHMMA"):
        loop = main_loop(code, opcode)
        if loop is None:
            print(f"   FAIL no loop with two or more {opcode}")
            status = max(status, 2)
            continue
        fences = [t for a, t in code if loop[0] <= a <= loop[1] and GPU_FENCE.search(t)]
        where = f"{opcode} loop 0x{loop[0]:x}-0x{loop[1]:x}"
        if fences:
            print(f"   FAIL {len(fences)} GPU-wide fence(s) in the {where}: {fences[0]}")
            status = max(status, 1)
        else:
            print(f"   ok   no GPU-wide fence in the {where}")
    return status


if __name__ == "__main__":
    sys.exit(main())
