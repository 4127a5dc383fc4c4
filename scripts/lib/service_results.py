#!/usr/bin/env python3
"""Records one service load in a GPU model's current results file (bench/results/<gpu>-service.json).

The file holds one entry per load: what the load is, the command that measures it, the GPU, the
date of the measurement and, per point, the throughput, latency and batch figures taken from
gemm_loadgen's JSON reports. Recording a load again replaces its entry; the other loads stay.

Use:
  service_results.py RESULTS_DIR --load NAME --what TEXT --command TEXT \
      --point=NAME:REPORT.json[+REPORT.json...][:SERVER_FLAGS] [--point=...]
A point of several reports joined by '+' is one load from several gemm_loadgen processes run at
once against one server (one per GPU): rates, counts and callers are summed, the mean latency
and server figures are weighted by each process's rate, and p50/p99 are the largest of the
processes' (the slowest process bounds them).
RESULTS_DIR/<gpu>-service.json is read when it exists and written back; <gpu> is the GPU's name
as the server describes it (lower case, runs of other characters as '-', the slug
bench/run_bench.sh uses), e.g. nvidia-h100-80gb-hbm3.
"""
import argparse
import json
import math
import os
import re
import sys

import loadgen_report


def gpu_names(report):
    """The GPU names in a report's server description ("NAME sm_90 [kernels]; NAME ...")."""
    devices = report.get("server", {}).get("devices", "")
    return [d.split(" sm_")[0].strip() for d in devices.split(";") if d.strip()]


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def point_figures(name, flags, report):
    """One point of a report as the results file keeps it (the report's last point for closed
    loops; every offered rate for open loops, each as its own entry)."""
    out = []
    points = report["points"]
    if not any(p.get("target_rate") for p in points):
        points = points[-1:]
    for p in points:
        st = loadgen_report.server_timing_us(p)
        lat = p["latency_ms"]
        fig = {
            "point": name,
            "server_flags": flags,
            "gpus": len(gpu_names(report)),
            "callers": p.get("concurrency") or None,
            "offered_per_s": p.get("target_rate") or None,
            "req_per_s": round(p["throughput_rps"], 1),
            "tflops": round(p["tflops"], 2),
            "payload_gb_per_s": round(p["payload_gbps"], 2),
            "mean_ms": round(lat["mean"], 3),
            "p50_ms": round(lat["p50"], 3),
            "p99_ms": round(lat["p99"], 3),
            "batch": round(st["batch_requests"], 1),
            "server_compute_us": round(st["compute"], 1),
            "errors": sum(p.get("errors", {}).values()),
            "verified": p.get("verify", {}).get("checked", 0),
            "mismatches": p.get("verify", {}).get("mismatches", 0),
        }
        bad = [k for k, v in fig.items() if isinstance(v, float) and not math.isfinite(v)]
        if bad:
            sys.exit(f"point {name} ({p.get('label')}): no figure for {', '.join(bad)} "
                     f"(requests ok: {p.get('requests_ok')})")
        out.append({k: v for k, v in fig.items() if v is not None})
    return out


SUMMED = ("callers", "req_per_s", "tflops", "payload_gb_per_s", "errors", "verified", "mismatches")
WEIGHTED = ("mean_ms", "batch", "server_compute_us")
LARGEST = ("p50_ms", "p99_ms")


def merge_concurrent(figs):
    """One closed-loop point from the points of processes that ran at once (see the docstring)."""
    rate = sum(f["req_per_s"] for f in figs)
    out = dict(figs[0])
    for key in SUMMED:
        out[key] = round(sum(f.get(key, 0) for f in figs), 2)
    for key in WEIGHTED:
        out[key] = round(sum(f[key] * f["req_per_s"] for f in figs) / rate, 3) if rate else 0.0
    for key in LARGEST:
        out[key] = max(f[key] for f in figs)
    out["processes"] = len(figs)
    return out


def dumps(results):
    """The results as indented JSON with one line per point, so a diff shows what moved."""
    lines = ["{", f' "gpu": {json.dumps(results["gpu"])},', ' "loads": {']
    loads = list(results["loads"].items())
    for i, (name, load) in enumerate(loads):
        lines.append(f"  {json.dumps(name)}: {{")
        for key in ("what", "command", "date"):
            lines.append(f"   {json.dumps(key)}: {json.dumps(load[key])},")
        lines.append('   "points": [')
        pts = load["points"]
        lines += [f"    {json.dumps(p)}" + ("," if j + 1 < len(pts) else "") for j, p in enumerate(pts)]
        lines.append("   ]")
        lines.append("  }" + ("," if i + 1 < len(loads) else ""))
    lines += [" }", "}", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir")
    ap.add_argument("--load", required=True, help="name of the load, e.g. decode-cuda-ipc")
    ap.add_argument("--what", required=True, help="one line: shapes, operands, callers")
    ap.add_argument("--command", required=True, help="the command that measures it")
    ap.add_argument("--point", action="append", required=True,
                    metavar="NAME:REPORT[:SERVER_FLAGS]",
                    help="a point: its name, its gemm_loadgen JSON report, the server's flags "
                         "(write it as --point=..., since the flags begin with --)")
    args = ap.parse_args()

    points, dates, gpu = [], [], None
    for spec in args.point:
        parts = spec.split(":", 2)
        if len(parts) < 2:
            ap.error(f"--point takes NAME:REPORT[:SERVER_FLAGS], got {spec!r}")
        name, paths = parts[0], parts[1].split("+")
        flags = parts[2] if len(parts) == 3 else ""
        figs = []
        for path in paths:
            report = loadgen_report.load(path)
            names = gpu_names(report)
            if not names:
                sys.exit(f"{path}: the report names no GPU (server: {report.get('server')})")
            gpu = gpu or names[0]
            dates.append(report.get("started_utc", "")[:10])
            figs.append(point_figures(name, flags, report))
        if len(figs) == 1:
            points += figs[0]
        elif all(len(f) == 1 for f in figs):
            points.append(merge_concurrent([f[0] for f in figs]))
        else:
            sys.exit(f"point {name}: reports run at once must be closed-loop (one point each)")

    path = os.path.join(args.results_dir, slug(gpu) + "-service.json")
    results = {"gpu": gpu, "loads": {}}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            results = json.load(f)
    results["loads"][args.load] = {
        "what": args.what,
        "command": args.command,
        "date": min(d for d in dates if d) if any(dates) else "",
        "points": points,
    }
    results["loads"] = dict(sorted(results["loads"].items()))
    os.makedirs(args.results_dir, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(results))
    print(f"{path}: {args.load}, {len(points)} points")


if __name__ == "__main__":
    main()
