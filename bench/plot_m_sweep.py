#!/usr/bin/env python3
"""Draws the m_sweep plots of docs/PERF.md: for every (N, K) of the m_sweep rows in a gemm_bench
results file, cuBLAS time / ours against M (log scale), one line per B layout, as an SVG with no
dependencies beyond Python 3:

  <out>/m_sweep-<gpu>-<N>x<K>.svg   <gpu>: the results file's name without .jsonl

Use: bench/plot_m_sweep.py [--out docs/img] [bench/results/<gpu>.jsonl ...]
(default: every bench/results/*.jsonl that holds m_sweep rows)
"""
import argparse
import collections
import glob
import json
import math
import os

from plot_results import svg, text

LAYOUTS = [("nk", "B [N,K]", "#1f77b4"), ("kn", "B [K,N]", "#d62728")]
BAR = 0.97  # the lowest ratio the set should show at any point


def load(path):
    """-> (device, date, {(N, K): {layout: [(M, ratio)]}}) of the m_sweep rows of `path`."""
    curves = collections.defaultdict(lambda: collections.defaultdict(list))
    device, date = os.path.basename(path), ""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("set") != "m_sweep":
                continue
            device, date = r.get("device", device), r.get("date", date)[:10]
            ratio = r.get("ratio")
            if r.get("error") or not ratio or not math.isfinite(ratio) or ratio <= 0:
                continue
            curves[(r["N"], r["K"])][r["b_layout"]].append((r["M"], ratio))
    return device, date, curves


def plot(device, date, n, k, by_layout):
    """SVG of the ratio against M for one (N, K), one polyline per layout."""
    w, h, left, right, top, bottom = 760, 420, 70, 20, 44, 64
    points = [p for pts in by_layout.values() for p in pts]
    m_lo, m_hi = min(p[0] for p in points), max(p[0] for p in points)
    m_hi = max(m_hi, m_lo * 2)
    r_lo = min(0.6, math.floor(min(p[1] for p in points) * 10) / 10)
    r_hi = max(1.4, math.ceil(max(p[1] for p in points) * 10) / 10)
    x = lambda m: left + math.log2(m / m_lo) / math.log2(m_hi / m_lo) * (w - left - right)
    y = lambda r: top + (r_hi - r) / (r_hi - r_lo) * (h - top - bottom)
    out = text(left, 24, f"{device}: cuBLAS time / ours against M, N={n} K={k} "
                         f"(> 1: ours faster; {date})", size=14)
    tick = 0.1 if r_hi - r_lo <= 1.2 else 0.2
    for i in range(int(round((r_hi - r_lo) / tick)) + 1):
        r = r_lo + i * tick
        out += (f'<line x1="{left}" x2="{w - right}" y1="{y(r):.1f}" y2="{y(r):.1f}" '
                f'stroke="{"#888" if abs(r - 1.0) < 1e-9 else "#e4e4e4"}"/>\n')
        out += text(left - 6, y(r) + 4, f"{r:.1f}", "end")
    out += (f'<line x1="{left}" x2="{w - right}" y1="{y(BAR):.1f}" y2="{y(BAR):.1f}" '
            f'stroke="#2ca02c" stroke-dasharray="4 3"/>\n')
    out += text(w - right - 4, y(BAR) + 14, f"{BAR}", "end", 10, "#2ca02c")
    m = 1
    while m <= m_hi:
        if m >= m_lo:
            out += (f'<line x1="{x(m):.1f}" x2="{x(m):.1f}" y1="{top}" y2="{h - bottom}" '
                    f'stroke="#f0f0f0"/>\n')
            out += text(x(m), h - bottom + 16, str(m), "middle", 11)
        m *= 2
    out += text((left + w - right) / 2, h - bottom + 36, "M (rows of A and D, log scale)", "middle")
    out += (f'<text x="18" y="{(top + h - bottom) / 2:.1f}" text-anchor="middle" '
            f'transform="rotate(-90 18 {(top + h - bottom) / 2:.1f})">cuBLAS time / ours</text>\n')
    for j, (layout, label, colour) in enumerate(LAYOUTS):
        pts = sorted(by_layout.get(layout, []))
        if not pts:
            continue
        coords = " ".join(f"{x(m):.1f},{y(r):.1f}" for m, r in pts)
        out += (f'<polyline data-layout="{layout}" points="{coords}" fill="none" '
                f'stroke="{colour}" stroke-width="1.8"/>\n')
        g = math.exp(sum(math.log(r) for _, r in pts) / len(pts))
        lx = left + 10 + j * 260
        out += f'<rect x="{lx}" y="{h - 20}" width="10" height="10" fill="{colour}"/>\n'
        out += text(lx + 14, h - 11, f"{label}: geomean {g:.3f}, min {min(r for _, r in pts):.3f}")
    return svg(w, h, out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "docs", "img"))
    ap.add_argument("results", nargs="*", help="gemm_bench --json files (default: bench/results)")
    args = ap.parse_args()
    paths = args.results or sorted(glob.glob(os.path.join(here, "results", "*.jsonl")))
    os.makedirs(args.out, exist_ok=True)
    for path in paths:
        gpu = os.path.basename(path)[:-len(".jsonl")] if path.endswith(".jsonl") else \
            os.path.basename(path)
        device, date, curves = load(path)
        for (n, k), by_layout in sorted(curves.items()):
            name = os.path.join(args.out, f"m_sweep-{gpu}-{n}x{k}.svg")
            with open(name, "w", encoding="utf-8") as f:
                f.write(plot(device, date, n, k, by_layout))
            print(name)


if __name__ == "__main__":
    main()
