#!/usr/bin/env python3
"""Example: multiply numpy matrices on a gemm-service server, with and without a resident weight.

  pip install ./client/python
  python3 client/python/examples/matmul_example.py --target localhost:50051
"""

import argparse
import sys

import numpy as np

from gemm_client import GemmClient, round_to_bf16


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="localhost:50051")
    args = parser.parse_args()
    rng = np.random.default_rng(0)

    with GemmClient(args.target) as client:
        info = client.server_info()
        print(f"server {info.version}, backend {info.backend}")

        # One GEMM: numpy in, numpy out (inputs are rounded to BF16, the output is BF16 widened).
        a = rng.standard_normal((64, 256)).astype(np.float32)
        b = rng.standard_normal((256, 128)).astype(np.float32)
        d = client.matmul(a, b)
        ref = round_to_bf16(a).astype(np.float64) @ round_to_bf16(b).astype(np.float64)
        err = np.abs(d - ref).max() / np.abs(ref).max()
        t = client.last_timing
        compute = "not timed" if t.gpu_timing_skipped else f"{t.compute_us} us"
        print(f"matmul {a.shape} @ {b.shape} -> {d.shape}, max rel error {err:.2e}, "
              f"server compute {compute} on {client.last_kernel}")

        # A resident weight ([N,K] like torch.nn.Linear): upload once, then send activations only.
        w = rng.standard_normal((512, 256)).astype(np.float32)
        with client.register(w, layout="nk", name="example-weight") as weight:
            xs = [rng.standard_normal((16, 256)).astype(np.float32) for _ in range(8)]
            ys = client.matmul_many([(x, weight) for x in xs])  # one stream, pipelined
            ref_w = round_to_bf16(w).astype(np.float64)
            worst = max(np.abs(y - round_to_bf16(x).astype(np.float64) @ ref_w.T).max() /
                        np.abs(round_to_bf16(x).astype(np.float64) @ ref_w.T).max()
                        for x, y in zip(xs, ys))
            print(f"{len(xs)} requests against resident {weight.handle}: max rel error {worst:.2e}")

        ok = err < 1e-2 and worst < 1e-2
        print("OK" if ok else "FAILED")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
