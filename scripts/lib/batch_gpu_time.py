#!/usr/bin/env python3
"""The server's GPU time per coalesced batch against the kernels alone at the same M.

  batch_gpu_time.py rows LOADGEN.json N K
      a gemm_bench shapes file with one line per batch size (M) that ran at least 1% of the
      batches of the last point, against an N x K weight
  batch_gpu_time.py compare LOADGEN.json BENCH.jsonl
      per M: the batches, their mean compute (ms), ours and cuBLASLt alone (gemm_bench), and the
      service's compute over the better of the two; then over all batches (weighted by their
      count): the service's compute time over the best kernel's, and over ours alone
"""
import json
import sys


def batches(report_path):
    """{rows: (batches, mean compute ms)} of the report's last point."""
    point = json.load(open(report_path))["points"][-1]
    return {int(m): (n, ms) for m, n, ms in point.get("compute_ms_by_batch_rows", [])}


def main(argv):
    if len(argv) == 5 and argv[1] == "rows":
        by_rows = batches(argv[2])
        total = sum(n for n, _ in by_rows.values())
        print(f"# batch sizes of {argv[2]} (M N K batch)")
        for m in sorted(by_rows):
            if by_rows[m][0] >= 0.01 * total:
                print(f"{m} {argv[3]} {argv[4]} 1")
        return 0 if total > 0 else 1
    if len(argv) != 4 or argv[1] != "compare":
        print(__doc__, file=sys.stderr)
        return 2
    by_rows = batches(argv[2])
    bench = {}
    for line in open(argv[3]):
        row = json.loads(line)
        if row.get("set") == "m_sweep" and not row.get("error"):
            bench[row["M"]] = (row["ours_ms"], row["cublas_ms"])
    print(f"{'M':>5} {'batches':>8} {'service_ms':>10} {'ours_ms':>8} {'cublas_ms':>9} "
          f"{'service/best':>12}")
    svc = best = ours = weight = 0.0
    for m in sorted(by_rows):
        n, ms = by_rows[m]
        if m not in bench:
            continue
        o, c = bench[m]
        print(f"{m:5d} {n:8.1f} {ms:10.4f} {o:8.4f} {c:9.4f} {ms / min(o, c):12.3f}")
        svc, best, ours, weight = svc + n * ms, best + n * min(o, c), ours + n * o, weight + n
    if weight == 0:
        print("no batch size was timed by gemm_bench")
        return 1
    all_batches = sum(n for n, _ in by_rows.values())
    print(f"{weight:.0f} of {all_batches:.0f} batches: service compute / best kernel "
          f"{svc / best:.3f}, / ours alone {svc / ours:.3f} (mean {svc / weight:.4f} ms against "
          f"{best / weight:.4f} and {ours / weight:.4f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
