#!/usr/bin/env python3
"""Draws the plots of docs/PERF.md from the current results (bench/results), as SVG files with no
dependencies beyond Python 3:

  docs/img/kernel_ratio.svg    every row of every gemm_bench set, cuBLAS time / ours (log scale),
                               one colour per GPU model, the set's geometric mean as a bar
  docs/img/service_decode.svg  decode requests per second with batching off and on, per transport
                               (CUDA IPC, host shared memory, gRPC messages) and GPU model

Use: bench/plot_results.py [--results bench/results] [--out docs/img]
"""
import argparse
import glob
import json
import math
import os

SETS = ["decode", "large", "batched", "grouped", "moe"]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
TRANSPORTS = [("decode-cuda-ipc", "CUDA IPC"), ("decode-host-shm", "host shared memory"),
              ("decode-messages", "gRPC messages")]


def median(values):
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def svg(width, height, body):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'font-family="sans-serif" font-size="12">\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n{body}</svg>\n')


def text(x, y, s, anchor="start", size=12, colour="#222"):
    s = s.replace("&", "&amp;").replace("<", "&lt;")
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'fill="{colour}">{s}</text>\n')


def kernel_plot(runs):
    """runs: [(gpu, date, rows)] -> SVG of the ratio per row and set."""
    w, h, left, top, bottom = 760, 400, 60, 40, 70
    lo, hi = math.log(0.8), math.log(4.0)
    y = lambda r: top + (hi - math.log(r)) / (hi - lo) * (h - top - bottom)
    band = (w - left - 20) / len(SETS)
    out = text(left, 22, "gemm_bench: cuBLAS time / ours per row (log scale; > 1: ours faster), "
                         "geometric means below", size=14)
    for tick in (0.8, 0.9, 1.0, 1.2, 1.5, 2.0, 3.0, 4.0):
        out += (f'<line x1="{left}" x2="{w - 20}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
                f'stroke="{"#888" if tick == 1.0 else "#e4e4e4"}"/>\n')
        out += text(left - 6, y(tick) + 4, f"{tick:g}", "end")
    for i, name in enumerate(SETS):
        cx = left + band * (i + 0.5)
        out += text(cx, h - bottom + 18, name, "middle")
        for j, (gpu, _, rows) in enumerate(runs):
            rs = [r["ratio"] for r in rows if r["set"] == name and r.get("ratio")]
            if not rs:
                continue
            gx = cx + (j - (len(runs) - 1) / 2) * band / (len(runs) + 1)
            colour = COLOURS[j % len(COLOURS)]
            for k, r in enumerate(rs):
                jitter = ((k * 7) % 11 - 5) * band / (len(runs) + 1) / 14
                out += (f'<circle cx="{gx + jitter:.1f}" cy="{y(min(max(r, 0.8), 4.0)):.1f}" '
                        f'r="2.5" fill="{colour}" fill-opacity="0.55"/>\n')
            g = math.exp(sum(math.log(r) for r in rs) / len(rs))
            out += (f'<line x1="{gx - 14:.1f}" x2="{gx + 14:.1f}" y1="{y(g):.1f}" y2="{y(g):.1f}" '
                    f'stroke="{colour}" stroke-width="3"/>\n')
            out += text(gx, h - bottom + 34, f"{g:.3f}", "middle", 11, colour)
    for j, (gpu, date, _) in enumerate(runs):
        out += f'<rect x="{left + j * 260}" y="{h - 18}" width="10" height="10" fill="{COLOURS[j]}"/>\n'
        out += text(left + 14 + j * 260, h - 9, f"{gpu} ({date})")
    return svg(w, h, out)


def service_plot(services):
    """services: [(gpu, loads)] -> SVG of decode req/s, batching off and on, per transport."""
    bars = []
    for gpu, loads in services:
        for key, label in TRANSPORTS:
            load = loads.get(key)
            if not load:
                continue
            off = [p["req_per_s"] for p in load["points"] if "batching=false" in p["server_flags"]]
            on = [p["req_per_s"] for p in load["points"] if "batching=false" not in p["server_flags"]]
            if off and on:
                short = " ".join(gpu.split()[:2])
                bars.append((f"{short}, {label} ({load['date']})", median(off), median(on)))
    w, left, top, row = 920, 350, 40, 44
    h = top + row * len(bars) + 40
    peak = max((b[2] for b in bars), default=1)
    x = lambda v: left + v / peak * (w - left - 150)
    out = text(10, 22, "decode 16x8192x8192, 64 callers: requests/s with batching off and on "
                       "(median of the newest run's points)", size=14)
    for i, (label, off, on) in enumerate(bars):
        y0 = top + i * row
        out += text(left - 8, y0 + 20, label, "end")
        out += f'<rect x="{left}" y="{y0 + 4}" width="{x(off) - left:.1f}" height="14" fill="#aaa"/>\n'
        out += text(x(off) + 4, y0 + 15, f"off {off / 1000:.1f}k", size=10)
        out += f'<rect x="{left}" y="{y0 + 20}" width="{x(on) - left:.1f}" height="14" fill="#1f77b4"/>\n'
        out += text(x(on) + 4, y0 + 31, f"on {on / 1000:.1f}k ({on / off:.1f}x)", size=10)
    return svg(w, h, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(os.path.dirname(__file__), "results"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "docs", "img"))
    args = ap.parse_args()
    runs = []
    for path in sorted(glob.glob(os.path.join(args.results, "*.jsonl"))):
        rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
        copy = next((r for r in rows if r.get("set") == "copy"), {})
        date = min((r["date"] for r in rows if r.get("date")), default="")[:10]
        runs.append((copy.get("device", os.path.basename(path)), date, rows))
    services = []
    for path in sorted(glob.glob(os.path.join(args.results, "*-service.json"))):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        services.append((data["gpu"], data["loads"]))
    os.makedirs(args.out, exist_ok=True)
    for name, body in (("kernel_ratio.svg", kernel_plot(runs)),
                       ("service_decode.svg", service_plot(services))):
        with open(os.path.join(args.out, name), "w", encoding="utf-8") as f:
            f.write(body)
        print(os.path.join(args.out, name))


if __name__ == "__main__":
    main()
