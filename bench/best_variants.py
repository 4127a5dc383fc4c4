#!/usr/bin/env python3
"""Best launch variant of the SM90 kernel per m_sweep row, from the files that
scripts/gpu_m_sweep_variants.sh writes (m_sweep-<variant>.jsonl, gemm_bench --json lines; the
variant "dispatch" is the heuristics' own choice).

For every (N, K, B layout, M) it prints the fastest variant whose rows are valid (no error, checked
against cuBLASLt), its speed against cuBLAS (the median of the cuBLAS times that every run of
the row measured) and against the dispatch, and the dispatch's own ratio; then the geometric mean
and minimum of the ratio over the set for the dispatch and for the best measured variant per row
(what the heuristics alone could reach with these variants), how often each variant wins, and per
(layout, M) the one variant that does best over every weight shape (a rule keyed on M alone).

With --rules it instead scores a rule set (RULES below, the bands of kShapeRules in
kernel/src/heuristics_sm90.cc that pick a launch other than the wave-count model's): every row a
rule matches takes the measured row of the variant the rule names, every other row the dispatch's.
It prints the set's geomean and minimum ratio against cuBLAS for the dispatch and for the rules,
per (N, K, layout) too, and per rule its rows' geomean gain over the dispatch and its worst row
(a rule is kept when the gain is >= 3% and no row is more than 2% slower).

Use: bench/best_variants.py [--csv FILE] [--rules] $OUT/m_sweep-*.jsonl
"""
import argparse
import collections
import json
import math
import os
import re

MAX_REL_ERR = 2e-2  # gemm_bench --check's bound

# The measured bands of kShapeRules (kernel/src/heuristics_sm90.cc) ahead of the wave-count
# model, as the variants of scripts/gpu_m_sweep_variants.sh that they launch; keep the two in
# step. The waves are the rule's own cluster tiles over the device's cluster slots, as
# MatchShapeRule counts them.
RULES = [
    dict(m_min=257, m_max=384, min_waves=0.3, max_waves=3.0, min_k_blocks=64,
         variant="t128x256-c1"),
    dict(m_min=385, m_max=512, min_waves=0.4, max_waves=0.5, min_k_blocks=64,
         variant="t128x256-c2"),
    dict(m_min=513, m_max=640, min_waves=0.5, max_waves=4.5, min_k_blocks=64,
         variant="t128x256-c1"),
    dict(m_min=641, m_max=768, min_waves=0.5, max_waves=5.5, min_k_blocks=64,
         variant="t128x256-c2"),
]
MIN_GAIN = 1.03       # a rule's geomean speed-up over the dispatch on its rows
MAX_ROW_LOSS = 0.98   # no row of a rule slower than the dispatch by more than 2%


def variant_of(path):
    m = re.match(r"m_sweep-(.+)\.jsonl$", os.path.basename(path))
    return m.group(1) if m else os.path.basename(path)


def valid(row):
    """A timed row whose result matched cuBLASLt (NaN never passes)."""
    err = row.get("rel_err")
    return (not row.get("error") and row.get("ours_ms") and row.get("cublas_ms")
            and row["ours_ms"] > 0 and err is not None and err < MAX_REL_ERR
            and row.get("bad", 0) == 0)


def load(paths):
    """-> {(N, K, layout, M): {variant: row}}"""
    rows = collections.defaultdict(dict)
    for path in paths:
        variant = variant_of(path)
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                r = json.loads(line)
                if r.get("set") != "m_sweep" or not valid(r):
                    continue
                rows[(r["N"], r["K"], r["b_layout"], r["M"])][variant] = r
    return rows


def median(values):
    v = sorted(values)
    return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2


def best_rows(rows):
    """-> [(key, best variant, its row, cuBLAS ms, dispatch row or None)] in key order."""
    out = []
    for key in sorted(rows):
        by_variant = rows[key]
        cublas = median([r["cublas_ms"] for r in by_variant.values()])
        variant, row = min(by_variant.items(), key=lambda kv: kv[1]["ours_ms"])
        out.append((key, variant, row, cublas, by_variant.get("dispatch")))
    return out


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def report(best):
    print(f"{'N':>6} {'K':>6} {'B':>2} {'M':>5}  {'dispatch':>8} {'best':>6} {'vs_disp':>7}  "
          f"best variant (launch)")
    disp_ratios, best_ratios, wins = [], [], collections.Counter()
    for (n, k, layout, m), variant, row, cublas, disp in best:
        ratio = cublas / row["ours_ms"]
        best_ratios.append(ratio)
        wins[variant] += 1
        disp_txt, vs_txt = "-", "-"
        if disp is not None:
            disp_ratios.append(cublas / disp["ours_ms"])
            disp_txt = f"{disp_ratios[-1]:.3f}"
            vs_txt = f"{disp['ours_ms'] / row['ours_ms']:.3f}"
        launch = row.get("ours", "")
        print(f"{n:>6} {k:>6} {layout:>2} {m:>5}  {disp_txt:>8} {ratio:>6.3f} {vs_txt:>7}  "
              f"{variant} ({launch})")
    print()
    if disp_ratios:
        print(f"dispatch: geomean {geomean(disp_ratios):.3f}, min {min(disp_ratios):.3f} over "
              f"{len(disp_ratios)} rows")
    if best_ratios:
        print(f"best measured variant per row (heuristics' ceiling): geomean "
              f"{geomean(best_ratios):.3f}, min {min(best_ratios):.3f} over {len(best_ratios)} rows")
    print("wins: " + ", ".join(f"{v} {c}" for v, c in wins.most_common()))
    per_shape = collections.defaultdict(lambda: ([], []))
    for (n, k, layout, _), _, row, cublas, disp in best:
        if disp is not None:
            per_shape[(n, k, layout)][0].append(cublas / disp["ours_ms"])
            per_shape[(n, k, layout)][1].append(cublas / row["ours_ms"])
    for (n, k, layout), (d, b) in sorted(per_shape.items()):
        print(f"{n}x{k} {layout}: dispatch geomean {geomean(d):.3f} min {min(d):.3f}; "
              f"best geomean {geomean(b):.3f} min {min(b):.3f}")


def by_m(rows):
    """Per (layout, M): the one variant with the best geomean ratio over every weight shape it
    was measured on (all of them), against the dispatch's and the per-row best's geomean: what
    a rule keyed on M alone would reach."""
    groups = collections.defaultdict(list)  # (layout, M) -> [{variant: row}]
    for (n, k, layout, m), by_variant in rows.items():
        groups[(layout, m)].append(by_variant)
    print(f"\n{'B':>2} {'M':>5}  {'dispatch':>8} {'one':>6} {'best':>6}  one variant for every (N, K)")
    for (layout, m), shapes in sorted(groups.items()):
        cublas = [median([r["cublas_ms"] for r in s.values()]) for s in shapes]
        common = set.intersection(*(set(s) for s in shapes))
        score = {v: geomean([c / s[v]["ours_ms"] for c, s in zip(cublas, shapes)]) for v in common}
        if not score:
            continue
        variant = max(score, key=score.get)
        best = geomean([c / min(r["ours_ms"] for r in s.values()) for c, s in zip(cublas, shapes)])
        disp = f"{score['dispatch']:.3f}" if "dispatch" in score else "-"
        print(f"{layout:>2} {m:>5}  {disp:>8} {score[variant]:>6.3f} {best:>6.3f}  {variant}")


def launch_of(variant):
    """'t128x256-c2[-nosplit|-splitN]' -> (block_m, block_n, cluster_m)."""
    m = re.match(r"t(\d+)x(\d+)-c(\d)", variant)
    return tuple(int(g) for g in m.groups())


def rule_for(rules, n, k, layout, m, sms):
    """The first of `rules` matching the shape (MatchShapeRule's conditions), or None."""
    for r in rules:
        if not r["m_min"] <= m <= r["m_max"] or r.get("layout", layout) != layout:
            continue
        if -(-k // 64) < r.get("min_k_blocks", 0):
            continue
        block_m, block_n, cluster = launch_of(r["variant"])
        cluster_tiles = -(-(-(-m // block_m)) // cluster) * -(-n // block_n)
        waves = cluster_tiles / (max(sms, 2) // cluster)
        if r.get("min_waves", 0) > 0 and waves < r["min_waves"]:
            continue
        if r.get("max_waves", 0) > 0 and waves > r["max_waves"]:
            continue
        return r
    return None


def score_rules(rows, rules, sms):
    """Prints what `rules` reach over the rows the dispatch measured; returns 1 when a rule
    misses its bar (or names a variant with no row), else 0."""
    disp, ruled = [], []
    per_shape = collections.defaultdict(lambda: ([], []))
    per_rule = collections.defaultdict(list)  # rule index -> [(dispatch ms / rule ms, key)]
    missing = 0
    for key in sorted(rows):
        by_variant = rows[key]
        if "dispatch" not in by_variant:
            continue
        n, k, layout, m = key
        cublas = median([r["cublas_ms"] for r in by_variant.values()])
        row = by_variant["dispatch"]
        rule = rule_for(rules, n, k, layout, m, sms)
        if rule is not None:
            if rule["variant"] not in by_variant:
                print(f"no {rule['variant']} row for {n}x{k} {layout} M={m}")
                missing += 1
                continue
            row = by_variant[rule["variant"]]
            per_rule[rules.index(rule)].append((by_variant["dispatch"]["ours_ms"] / row["ours_ms"],
                                                key))
        disp.append(cublas / by_variant["dispatch"]["ours_ms"])
        ruled.append(cublas / row["ours_ms"])
        per_shape[(n, k, layout)][0].append(disp[-1])
        per_shape[(n, k, layout)][1].append(ruled[-1])
    if not disp:
        print("no dispatch rows")
        return 1
    print(f"m_sweep over {len(disp)} rows: dispatch geomean {geomean(disp):.3f} min "
          f"{min(disp):.3f}; rules geomean {geomean(ruled):.3f} min {min(ruled):.3f}")
    for (n, k, layout), (d, r) in sorted(per_shape.items()):
        print(f"  {n}x{k} {layout}: dispatch geomean {geomean(d):.3f} min {min(d):.3f}; "
              f"rules geomean {geomean(r):.3f} min {min(r):.3f}")
    failed = missing > 0
    for i, rule in enumerate(rules):
        gains = per_rule.get(i, [])
        bounds = ", ".join(f"{f}={rule[f]}" for f in ("layout", "min_waves", "max_waves",
                                                        "min_k_blocks") if f in rule)
        head = f"rule M {rule['m_min']}-{rule['m_max']} ({bounds}) -> {rule['variant']}"
        if not gains:
            print(f"{head}: no rows")
            continue
        g = geomean([x for x, _ in gains])
        worst, (n, k, layout, m) = min(gains)
        ok = g >= MIN_GAIN and worst >= MAX_ROW_LOSS
        failed |= not ok
        shapes = len({key[:3] for _, key in gains})
        print(f"{head}: {len(gains)} rows of {shapes} (N, K, layout), gain over dispatch geomean "
              f"{g:.3f}, worst {worst:.3f} ({n}x{k} {layout} M={m}){'' if ok else '  MISSES THE BAR'}")
    return 1 if failed else 0


def device_sms(paths):
    """The SM count the runs' copy rows name (132 when none does)."""
    for path in paths:
        with open(path) as f:
            for line in f:
                if line.startswith("{") and '"sms"' in line:
                    return json.loads(line)["sms"]
    return 132


def write_csv(best, path):
    with open(path, "w") as f:
        f.write("N,K,b_layout,M,best_variant,best_ms,cublas_ms,dispatch_ms,best_launch\n")
        for (n, k, layout, m), variant, row, cublas, disp in best:
            disp_ms = f"{disp['ours_ms']:.6g}" if disp is not None else ""
            f.write(f"{n},{k},{layout},{m},{variant},{row['ours_ms']:.6g},{cublas:.6g},{disp_ms},"
                    f"\"{row.get('ours', '')}\"\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="m_sweep-<variant>.jsonl files")
    ap.add_argument("--csv", help="also write the per-row choice as CSV to this file")
    ap.add_argument("--rules", action="store_true",
                    help="score the rule set RULES against the dispatch instead")
    args = ap.parse_args()
    rows = load(args.files)
    if args.rules:
        return score_rules(rows, RULES, device_sms(args.files))
    best = best_rows(rows)
    if not best:
        print("no valid m_sweep rows in", " ".join(args.files))
        return 1
    report(best)
    by_m(rows)
    if args.csv:
        write_csv(best, args.csv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
