#!/usr/bin/env python3
"""Turns gemm_bench --json output (bench/results/<gpu>.jsonl, written by bench/run_bench.sh) into
the Markdown tables of docs/PERF.md.

  bench/perf_table.py bench/results/<gpu>.jsonl            one table per shape set: every row,
      the geometric-mean ratio per B layout and, for the memory-bound sets, the effective
      bandwidth as a share of the device-to-device copy bandwidth measured in the same run
  bench/perf_table.py --summary bench/results/<gpu>.jsonl  one line per set: rows, geometric-mean
      ratio per layout and over both, the range of the ratio, the mean share of the copy
      bandwidth, the largest relative error against cuBLASLt and the rows that failed the check

Ratio = cuBLAS time / ours (> 1: ours is faster).
"""
import argparse
import json
import math

SETS = ["decode", "large", "batched", "grouped", "moe", "m_sweep"]


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def load(path):
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    return [r for r in rows if r.get("set") == "copy"], [r for r in rows if r.get("set") in SETS]


def summary(path):
    copies, data = load(path)
    c = copies[0] if copies else {}
    date = min((r["date"] for r in data if r.get("date")), default="")[:10]
    print(f"{c.get('device', '?')}, {c.get('sms', '?')} SMs, {date}; copy "
          f"{min(r['copy_gbps'] for r in copies):.0f} GB/s, read "
          f"{min(r.get('read_gbps', 0) for r in copies):.0f} GB/s\n")
    print("| set | rows | B [N,K] | B [K,N] | both | min-max | % copy (mean) | max rel. err | failed |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in SETS:
        rs = [r for r in data if r["set"] == name]
        if not rs:
            continue
        ratios = {lay: [r["ratio"] for r in rs if r["b_layout"] == lay and r["ratio"]]
                  for lay in ("nk", "kn")}
        both = ratios["nk"] + ratios["kn"]
        pct = [r["ours_pct_copy"] for r in rs if r.get("ours_pct_copy")]
        failed = sum(1 for r in rs if r.get("bad") or r.get("error"))
        print(f"| {name} | {len(rs)} | {fmt(geomean(ratios['nk']), '.3f')} "
              f"| {fmt(geomean(ratios['kn']), '.3f')} | **{fmt(geomean(both), '.3f')}** "
              f"| {min(both):.2f}-{max(both):.2f} "
              f"| {fmt(sum(pct) / len(pct) if pct and name in ('decode', 'moe') else None, '.1f')} "
              f"| {max(r['rel_err'] for r in rs):.1e} | {failed} |")


def tables(path):
    copies, data = load(path)
    if copies:
        c = copies[0]
        bw = ", ".join(f"{r['copy_gbps']:.0f}" for r in copies)
        print(f"Device: {c['device']} ({c['sms']} SMs). D2D copy bandwidth per process "
              f"(GB/s, read + write): {bw}.\n")
    for name in SETS:
        rs = [r for r in data if r["set"] == name]
        if not rs:
            continue
        print(f"### {name}\n")
        print("| M | N | K | batch | B | ours ms | cuBLAS ms | ours TFLOPS | cuBLAS TFLOPS "
              "| ratio | ours GB/s | % copy | rel. err | ours |")
        print("|---:|---:|---:|---:|:-:|---:|---:|---:|---:|---:|---:|---:|---:|:--|")
        logs = {}
        for r in rs:
            m = f"{r['M']} (sum of {r['problems']})" if r["problems"] > 1 else r["M"]
            ours = r["ours"] + (f", {r['ctas']} CTAs" if r.get("ctas") else "")
            if r["error"]:
                ours += f" — error: {r['error']}"
            print(f"| {m} | {r['N']} | {r['K']} | {r['batch']} | {r['b_layout']} "
                  f"| {fmt(r['ours_ms'], '.4f')} | {fmt(r['cublas_ms'], '.4f')} "
                  f"| {fmt(r['ours_tflops'], '.1f')} | {fmt(r['cublas_tflops'], '.1f')} "
                  f"| {fmt(r['ratio'], '.3f')} | {fmt(r['ours_gbps'], '.0f')} "
                  f"| {fmt(r['ours_pct_copy'], '.1f')} | {fmt(r['rel_err'], '.1e')} | {ours} |")
            if r["ratio"]:
                logs.setdefault(r["b_layout"], []).append(r["ratio"])
        print()
        for lay, vs in sorted(logs.items()):
            print(f"- {name}, B {lay}: geometric-mean ratio (cuBLAS time / ours) "
                  f"**{geomean(vs):.3f}** over {len(vs)} shapes")
        if name == "decode":
            for lay in sorted(logs):
                pc = [r["ours_pct_copy"] for r in rs if r["b_layout"] == lay and r["ours_pct_copy"]]
                if pc:
                    print(f"- decode, B {lay}: effective bandwidth {min(pc):.1f}–{max(pc):.1f}% "
                          f"of copy (mean {sum(pc) / len(pc):.1f}%)")
        print()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", action="store_true", help="one line per shape set")
    ap.add_argument("jsonl")
    args = ap.parse_args()
    (summary if args.summary else tables)(args.jsonl)
