#!/usr/bin/env python3
"""Turns gemm_bench --json output (bench/results/*.jsonl) into the Markdown tables of
docs/PERF.md: one table per shape set, with geometric-mean ratios and, for the decode set, the
effective bandwidth as a share of the device-to-device copy bandwidth measured in the same run.

Use: bench/perf_table.py bench/results/<gpu>-<date>.jsonl
"""
import json
import math
import sys


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    copies = [r for r in rows if r.get("set") == "copy"]
    data = [r for r in rows if r.get("set") != "copy"]
    if copies:
        c = copies[0]
        bw = ", ".join(f"{r['copy_gbps']:.0f}" for r in copies)
        print(f"Device: {c['device']} ({c['sms']} SMs). D2D copy bandwidth per process "
              f"(GB/s, read + write): {bw}.\n")
    for name in ["decode", "large", "batched", "grouped", "moe"]:
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
            err = r["error"]
            ours = r["ours"] + (f", {r['ctas']} CTAs" if r.get("ctas") else "")
            if err:
                ours += f" — error: {err}"
            print(f"| {m} | {r['N']} | {r['K']} | {r['batch']} | {r['b_layout']} "
                  f"| {fmt(r['ours_ms'], '.4f')} | {fmt(r['cublas_ms'], '.4f')} "
                  f"| {fmt(r['ours_tflops'], '.1f')} | {fmt(r['cublas_tflops'], '.1f')} "
                  f"| {fmt(r['ratio'], '.3f')} | {fmt(r['ours_gbps'], '.0f')} "
                  f"| {fmt(r['ours_pct_copy'], '.1f')} | {fmt(r['rel_err'], '.1e')} | {ours} |")
            if r["ratio"]:
                logs.setdefault(r["b_layout"], []).append(math.log(r["ratio"]))
        print()
        for lay, ls in sorted(logs.items()):
            print(f"- {name}, B {lay}: geometric-mean ratio (cuBLAS time / ours) "
                  f"**{math.exp(sum(ls) / len(ls)):.3f}** over {len(ls)} shapes")
        if name == "decode":
            for lay in sorted(logs):
                pc = [r["ours_pct_copy"] for r in rs if r["b_layout"] == lay and r["ours_pct_copy"]]
                if pc:
                    print(f"- decode, B {lay}: effective bandwidth {min(pc):.1f}–{max(pc):.1f}% "
                          f"of copy (mean {sum(pc) / len(pc):.1f}%)")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
