#!/usr/bin/env python3
"""CPU tests of the m_sweep tools on synthetic gemm_bench --json lines:
  bench/plot_m_sweep.py   one well-formed SVG per (N, K), one polyline per B layout holding that
                          layout's valid rows, both axis labels; failed rows are left out
  bench/best_variants.py  the fastest variant whose result matched wins each row (and the M row
                          of the per-M table); a faster row with an error, a failed check, bad
                          outputs or a NaN error never does; --rules takes a rule's rows from
                          the variant it names, the rest from the dispatch, and fails a rule
                          that loses to the dispatch
  scripts/lib/batch_gpu_time.py  the batch sizes of a load become gemm_bench rows (sizes under
                          1% of the batches left out), and the service's compute is compared
                          with the better kernel at each M, weighted by batches
Use: bench_scripts_test.py --bench DIR (the bench/ folder of the tree)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

BENCH = None
SVG_NS = "{http://www.w3.org/2000/svg}"


def row(m, n, k, layout, ours_ms, cublas_ms, **extra):
    r = {"set": "m_sweep", "M": m, "N": n, "K": k, "batch": 1, "b_layout": layout,
         "ours_ms": ours_ms, "cublas_ms": cublas_ms, "ratio": cublas_ms / ours_ms,
         "rel_err": 1e-4, "bad": 0, "error": "", "ours": "Gemm(kSm90)",
         "device": "Test GPU", "date": "2000-01-01T00:00:00Z"}
    r.update(extra)
    return r


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps({"set": "copy", "copy_gbps": 4000.0, "device": "Test GPU"}) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")


class PlotMSweep(unittest.TestCase):
    def test_one_svg_per_weight_shape_one_polyline_per_layout(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = []
            for n, k in ((8192, 8192), (4096, 14336)):
                for layout in ("nk", "kn"):
                    for m in (1, 16, 272, 1024):
                        rows.append(row(m, n, k, layout, 0.05, 0.045))
            rows.append(row(512, 8192, 8192, "nk", 0.05, 0.05, error="timing: failed"))
            rows.append(row(64, 8192, 8192, "kn", 0.05, 0.05, ratio=None))
            rows.append({"set": "decode", "M": 1, "N": 1024, "K": 1024, "b_layout": "nk",
                         "ratio": 1.0})
            results = os.path.join(tmp, "test-gpu.jsonl")
            write_jsonl(results, rows)
            out = os.path.join(tmp, "img")
            subprocess.run([sys.executable, os.path.join(BENCH, "plot_m_sweep.py"), "--out", out,
                            results], check=True, capture_output=True)
            self.assertEqual(sorted(os.listdir(out)),
                             ["m_sweep-test-gpu-4096x14336.svg", "m_sweep-test-gpu-8192x8192.svg"])
            for name in os.listdir(out):
                root = ET.parse(os.path.join(out, name)).getroot()  # well-formed XML
                self.assertEqual(root.tag, SVG_NS + "svg")
                lines = root.findall(SVG_NS + "polyline")
                self.assertEqual(sorted(p.get("data-layout") for p in lines), ["kn", "nk"])
                for p in lines:  # the failed rows are not drawn
                    self.assertEqual(len(p.get("points").split()), 4, name)
                texts = " ".join(t.text or "" for t in root.iter(SVG_NS + "text"))
                self.assertIn("M (rows of A and D, log scale)", texts)
                self.assertIn("cuBLAS time / ours", texts)


class BestVariants(unittest.TestCase):
    def run_tool(self, files, tmp):
        csv = os.path.join(tmp, "best.csv")
        done = subprocess.run([sys.executable, os.path.join(BENCH, "best_variants.py"), "--csv",
                               csv, *files], check=True, capture_output=True, text=True)
        with open(csv, encoding="utf-8") as f:
            lines = f.read().splitlines()
        return done.stdout, {tuple(l.split(",")[:4]): l.split(",") for l in lines[1:]}

    def test_fastest_valid_variant_wins(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            variants = {
                "dispatch": [row(272, 8192, 8192, "nk", 0.080, 0.050),
                             row(2048, 8192, 8192, "nk", 0.200, 0.200)],
                "t64x256-c1": [row(272, 8192, 8192, "nk", 0.060, 0.052)],
                "t128x128-c1": [row(272, 8192, 8192, "nk", 0.040, 0.900, rel_err=0.5)],
                "t256x128-c1": [row(272, 8192, 8192, "nk", 0.030, 0.900, rel_err=None)],
                "t128x256-c2": [row(272, 8192, 8192, "nk", 0.020, 0.900, error="launch")],
                "t64x128-c1": [row(272, 8192, 8192, "nk", 0.035, 0.900, bad=3)],
            }
            for name, rows in variants.items():
                files.append(os.path.join(tmp, f"m_sweep-{name}.jsonl"))
                write_jsonl(files[-1], rows)
            out, best = self.run_tool(files, tmp)
            hole = best[("8192", "8192", "nk", "272")]
            self.assertEqual(hole[4], "t64x256-c1")
            self.assertAlmostEqual(float(hole[6]), 0.051)  # median of the valid rows' cuBLAS
            self.assertAlmostEqual(float(hole[7]), 0.080)
            self.assertEqual(best[("8192", "8192", "nk", "2048")][4], "dispatch")
            # dispatch ratios 0.051 / 0.08 (0.6375, printed 0.638) and 1.0; best 0.051 / 0.06 and 1.0
            self.assertIn("dispatch: geomean 0.798, min 0.638 over 2 rows", out)
            self.assertIn("geomean 0.922, min 0.850 over 2 rows", out)
            # The per-M table: the one variant measured on every weight shape that does best.
            self.assertRegex(out, r"\n\s*nk\s+272\s+0\.638\s+0\.850\s+0\.850\s+t64x256-c1\n")

    def score(self, rule_ms):
        """--rules over a shape inside RULES[0]'s band (rule variant at `rule_ms`, dispatch at
        0.080 ms), one with too short a K for it and one past every band."""
        sys.path.insert(0, BENCH)
        import best_variants  # pylint: disable=import-outside-toplevel
        rule = best_variants.RULES[0]
        m = rule["m_min"]
        with tempfile.TemporaryDirectory() as tmp:
            files = [os.path.join(tmp, "m_sweep-dispatch.jsonl"),
                     os.path.join(tmp, f"m_sweep-{rule['variant']}.jsonl")]
            write_jsonl(files[0], [row(m, 8192, 8192, "nk", 0.080, 0.040),
                                   row(m, 8192, 64, "nk", 0.010, 0.010),
                                   row(4096, 8192, 8192, "nk", 0.500, 0.500)])
            write_jsonl(files[1], [row(m, 8192, 8192, "nk", rule_ms, 0.040),
                                   row(m, 8192, 64, "nk", 0.005, 0.010)])
            return subprocess.run([sys.executable, os.path.join(BENCH, "best_variants.py"),
                                   "--rules", *files], capture_output=True, text=True)

    def test_rules_take_the_named_variant_inside_their_band(self):
        done = self.score(0.040)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        # dispatch: 0.5, 1.0, 1.0; rules: 1.0 (the rule's row), 1.0 (K too short: dispatch), 1.0
        self.assertIn("over 3 rows: dispatch geomean 0.794 min 0.500; rules geomean 1.000 min "
                      "1.000", done.stdout)
        self.assertRegex(done.stdout, r"1 rows of 1 \(N, K, layout\), gain over dispatch "
                                      r"geomean 2\.000, worst 2\.000")

    def test_a_rule_slower_than_the_dispatch_misses_the_bar(self):
        done = self.score(0.090)
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        self.assertIn("MISSES THE BAR", done.stdout)


class BatchGpuTime(unittest.TestCase):
    def run_tool(self, *args):
        tool = os.path.join(BENCH, "..", "scripts", "lib", "batch_gpu_time.py")
        return subprocess.run([sys.executable, tool, *args], capture_output=True, text=True)

    def test_rows_and_weighted_comparison(self):
        with tempfile.TemporaryDirectory() as d:
            report = os.path.join(d, "load.json")
            with open(report, "w", encoding="utf-8") as f:
                json.dump({"points": [{"compute_ms_by_batch_rows":
                                       [[16, 0.4, 0.1], [320, 60, 0.07], [336, 40, 0.08]]}]}, f)
            rows = self.run_tool("rows", report, "8192", "4096")
            self.assertEqual(rows.returncode, 0, rows.stderr)
            self.assertEqual([line for line in rows.stdout.splitlines() if not line.startswith("#")],
                             ["320 8192 4096 1", "336 8192 4096 1"])  # M = 16: 0.4% of batches
            bench = os.path.join(d, "bench.jsonl")
            write_jsonl(bench, [row(320, 8192, 4096, "nk", 0.06, 0.07),
                                row(336, 8192, 4096, "nk", 0.09, 0.08)])
            out = self.run_tool("compare", report, bench)
            self.assertEqual(out.returncode, 0, out.stderr)
            # (60 * 0.07 + 40 * 0.08) / (60 * 0.06 + 40 * 0.08) = 7.4 / 6.8 against the best;
            # 7.4 / (60 * 0.06 + 40 * 0.09) = 7.4 / 7.2 against ours.
            self.assertIn(f"service compute / best kernel {7.4 / 6.8:.3f}", out.stdout)
            self.assertIn(f"/ ours alone {7.4 / 7.2:.3f}", out.stdout)
            self.assertIn("100 of 100 batches", out.stdout)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    args, rest = ap.parse_known_args()
    BENCH = os.path.abspath(args.bench)
    unittest.main(argv=[sys.argv[0], *rest])
