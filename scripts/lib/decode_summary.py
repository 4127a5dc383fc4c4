#!/usr/bin/env python3
"""Summary table of the decode_run points under a folder (scripts/lib/decode_run.sh): throughput,
latency (mean, p99), server queue time, requests per message, batch, event-timed compute, host CPU per request of the server
and of the load generator over the loadgen's run (from NAME.cpu), the GPU's mean utilization
(NAME.util, nvidia-smi samples), the server's timing breakdown (launch, copy-in, copy-out,
completion, total; mean microseconds per request) and its logged host time per unit by phase
(executor, logged at shutdown).

Usage: decode_summary.py OUT_DIR
"""
import os
import re
import sys

import loadgen_report


def seconds(t):
    """'1m2.5s' -> 62.5"""
    m = re.fullmatch(r"(\d+)m([\d.]+)s", t)
    return int(m.group(1)) * 60 + float(m.group(2)) if m else float("nan")


def host_phases(log):
    """The server's logged host time per unit by phase (one line per GPU, "prepare+plan 12.3,
    ..."), from its log `log`; empty when there is none."""
    try:
        with open(log) as f:
            return [line.split("units (us): ")[-1].strip() for line in f
                    if "host time per unit" in line]
    except OSError:
        return []


def cpu_us_per_request(path, rps):
    """(server, loadgen) CPU microseconds per request, or (nan, nan)."""
    try:
        f = open(path).read().split()
        t0, t1, s0, s1, clk = map(float, f[:5])
        child = seconds(f[5]) + seconds(f[6])
    except (OSError, ValueError, IndexError):
        return float("nan"), float("nan")
    wall = t1 - t0
    if wall <= 0 or rps <= 0:
        return float("nan"), float("nan")
    server_cores = (s1 - s0) / clk / wall
    loadgen_cores = child / wall
    return server_cores / rps * 1e6, loadgen_cores / rps * 1e6


BREAKDOWN = ("queue", "launch", "copy_in", "compute", "copy_out", "completion", "total")


def gpu_utilization(path):
    """Mean of the utilization.gpu samples (percent) in an nvidia-smi CSV log, or nan."""
    try:
        vals = [float(line.split(",")[0].strip().rstrip(" %")) for line in open(path)
                if line.strip() and line.strip()[0].isdigit()]
    except (OSError, ValueError):
        return float("nan")
    return sum(vals) / len(vals) if vals else float("nan")


def main():
    out = sys.argv[1]
    print(f"{'run':30} {'req/s':>8} {'mean ms':>8} {'p99 ms':>7} {'req/msg':>7} {'batch':>6} "
          f"{'queue':>7} {'compute':>8} {'srv cpu':>8} {'lg cpu':>7} {'verified':>9}")
    phases = []
    breakdown = []
    for f in sorted(os.listdir(out)):
        if not f.endswith(".json"):
            continue
        name = f[:-5]
        p = loadgen_report.load(os.path.join(out, f))["points"][0]
        st = loadgen_report.server_timing_us(p)
        rpm = p.get("stream_requests", 0) / max(1, p.get("stream_messages", 0))
        srv, lg = cpu_us_per_request(os.path.join(out, name + ".cpu"), p["throughput_rps"])
        print(f"{name:30} {p['throughput_rps']:8.0f} {p['latency_ms']['mean']:8.3f} "
              f"{p['latency_ms']['p99']:7.3f} {rpm:7.2f} {st['batch_requests']:6.1f} "
              f"{st['queue']:7.1f} {st['compute']:8.1f} {srv:8.1f} {lg:7.1f} "
              f"{p['verify']['checked']:>5}/{p['verify']['mismatches']}")
        util = gpu_utilization(os.path.join(out, name + ".util"))
        breakdown.append(
            f"{name:30} " + " ".join(f"{st.get(k, float('nan')):8.1f}" for k in BREAKDOWN) +
            f" {util:8.1f}")
        log = os.path.join(out, f"server-{name}.log")
        phases += [f"{name}: {line}" for line in host_phases(log)]
    print(f"\nserver timing per request (us) and GPU utilization (%):\n{'run':30} " +
          " ".join(f"{k:>8}" for k in BREAKDOWN) + f" {'gpu util':>8}")
    print("\n".join(breakdown))
    if phases:
        print("\nserver host time per unit by phase (us):")
        print("\n".join(phases))


if __name__ == "__main__":
    main()
