#!/usr/bin/python3
"""Tests of the Python client (client/python/gemm_client) against a real gemm_server (CPU
backend), plus its BF16 conversion against an exact reference.

  /usr/bin/python3 tests/python/test_gemm_client.py --server build/server/gemm_server
"""

import argparse
import fractions
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_test_server import REPO, Server, backend  # noqa: E402

import grpc  # noqa: E402

import gemm_client  # noqa: E402
from gemm_client import GemmClient, GemmError, from_bf16, round_to_bf16, to_bf16  # noqa: E402
from gemm_client._proto import gemm_service_pb2 as pb  # noqa: E402

SERVER_BINARY = None
SERVER = None  # started by ClientTest


def exact_bf16(x: float) -> int:
    """Reference: the BF16 bit pattern of float x rounded to nearest even, from exact rationals."""
    if math.isnan(x):
        return 0x7FC0 if math.copysign(1, x) > 0 else 0xFFC0
    sign = 0x8000 if math.copysign(1, x) < 0 else 0
    a = abs(x)
    if math.isinf(a):
        return sign | 0x7F80
    if a == 0:
        return sign
    q = fractions.Fraction(a)
    # BF16: 8 significant bits, exponent >= -126 for normals; subnormal quantum 2^-133.
    e = max(math.frexp(a)[1] - 1, -126)
    quantum = fractions.Fraction(2) ** (e - 7)
    n = q / quantum
    r = math.floor(n)
    rem = n - r
    if rem > fractions.Fraction(1, 2) or (rem == fractions.Fraction(1, 2) and r % 2 == 1):
        r += 1
    value = r * quantum
    if value >= 2 ** 128:
        return sign | 0x7F80
    f32 = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    return sign | (f32 >> 16)


def reference(a, b, b_layout="kn"):
    a64 = round_to_bf16(a).astype(np.float64)
    b64 = round_to_bf16(b).astype(np.float64)
    return a64 @ (b64 if b_layout == "kn" else b64.T)


def assert_close(test, got, ref, output_dtype="bf16"):
    test.assertEqual(got.shape, ref.shape)
    test.assertEqual(got.dtype, np.float32)
    scale = np.abs(ref).max() + 1e-30
    rel = 2.0 ** -7 if output_dtype == "bf16" else 1e-5
    err = np.abs(got.astype(np.float64) - ref)
    test.assertLessEqual(float(err.max()), rel * scale + 1e-3 * math.sqrt(ref.size),
                         f"max error {err.max()} vs scale {scale}")


class Bf16Test(unittest.TestCase):
    def test_ties_round_to_even(self):
        # 1 + 2^-8 is halfway between 1 and 1+2^-7: even is 1. 1 + 3*2^-8: even is 1 + 2^-6.
        for dtype in (np.float32, np.float64):
            x = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8)], dtype=dtype)
            self.assertEqual(list(to_bf16(x)), [0x3F80, 0x3F82, 0xBF80])

    def test_special_values(self):
        x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3.4e38, 1e-45], dtype=np.float32)
        bits = to_bf16(x)
        self.assertTrue(np.isnan(from_bf16(bits[:1]))[0])
        self.assertEqual(list(bits[1:]), [0x7F80, 0xFF80, 0x0000, 0x8000, 0x7F80, 0x0000])

    def test_matches_exact_reference(self):
        rng = np.random.default_rng(1)
        xs = list(rng.standard_normal(3000) * 10.0 ** rng.integers(-40, 39, 3000))
        # Double-rounding traps: just above/below a BF16 midpoint, closer than a float32 ulp.
        for base in (1.0, 3.0, 1e-3, 7e30):
            f = np.float32(base)
            u = int(np.array([f]).view(np.uint32)[0]) & ~0xFFFF
            mid = float(np.array([u | 0x8000], dtype=np.uint32).view(np.float32)[0])
            ulp64 = math.ulp(mid)
            xs += [mid, mid + 64 * ulp64, mid - 64 * ulp64, -mid - 64 * ulp64]
        xs += [1e-40, -3e-39, 2.0 ** -133, 3.3961e38, 3.3895e38, 1e300]
        x64 = np.array(xs, dtype=np.float64)
        got = to_bf16(x64)
        want = [exact_bf16(v) for v in xs]
        bad = [(v, hex(g), hex(w)) for v, g, w in zip(xs, got, want) if g != w]
        self.assertEqual(bad, [])
        with np.errstate(over="ignore"):
            x32 = x64.astype(np.float32)
        got32 = to_bf16(x32)
        want32 = [exact_bf16(float(v)) for v in x32]
        self.assertEqual([hex(v) for v in got32], [hex(v) for v in want32])

    def test_round_trip_is_exact(self):
        bits = np.arange(0, 1 << 16, dtype=np.uint32).astype(np.uint16)
        finite = np.isfinite(from_bf16(bits))
        np.testing.assert_array_equal(to_bf16(from_bf16(bits))[finite], bits[finite])


class TlsTokenTest(unittest.TestCase):
    """GemmClient(target, tls=Tls(...), token=...) against a server with TLS (a certificate made
    with openssl here) and a tokens file: the token's call succeeds, a call without one is
    UNAUTHENTICATED, a plaintext client gets no answer."""

    @classmethod
    def setUpClass(cls):
        if SERVER_BINARY is None:
            raise unittest.SkipTest("no --server given")
        cls.dir = tempfile.mkdtemp(prefix="gemm_tls_")
        d = cls.dir
        script = (
            "set -e; printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext; "
            "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
            "-subj /CN=py-ca -keyout ca.key -out ca.pem; "
            "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost "
            "-keyout server.key -out server.csr; "
            "openssl x509 -req -days 2 -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
            "-extfile san.ext -out server.pem")
        subprocess.run(["bash", "-c", script], cwd=d, check=True, capture_output=True)
        cls.token = "py-test-token-0123456789"
        with open(os.path.join(d, "tokens"), "w") as f:
            f.write(f"{cls.token} infer name=py\n")
        cls.tls = gemm_client.Tls(ca_file=os.path.join(d, "ca.pem"))
        cls.server = Server(SERVER_BINARY, [f"--tls_cert={d}/server.pem",
                                            f"--tls_key={d}/server.key",
                                            f"--auth_tokens_file={d}/tokens"],
                            credentials=grpc.composite_channel_credentials(
                                cls.tls.credentials(),
                                grpc.access_token_call_credentials(cls.token))).start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_token_over_tls_is_served(self):
        a = np.ones((2, 3), np.float32)
        b = np.ones((3, 4), np.float32)
        with GemmClient(self.server.target, tls=self.tls, token=self.token, timeout=30) as c:
            np.testing.assert_array_equal(c.matmul(a, b), np.full((2, 4), 3, np.float32))

    def test_no_token_is_unauthenticated(self):
        with GemmClient(self.server.target, tls=self.tls, timeout=30) as c:
            with self.assertRaises(GemmError) as e:
                c.server_info()
        self.assertEqual(e.exception.code, grpc.StatusCode.UNAUTHENTICATED)

    def test_plaintext_client_gets_no_answer(self):
        with GemmClient(self.server.target, timeout=5) as c:
            with self.assertRaises(GemmError) as e:
                c.server_info()
        self.assertEqual(e.exception.code, grpc.StatusCode.UNAVAILABLE)


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global SERVER
        if SERVER_BINARY is None:
            raise unittest.SkipTest("no --server given")
        SERVER = Server(SERVER_BINARY).start()
        cls.client = GemmClient(SERVER.target, timeout=30)
        cls.client.wait_ready()
        cls.rng = np.random.default_rng(7)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        SERVER.stop()

    def rand(self, *shape):
        return self.rng.uniform(-1, 1, shape).astype(np.float32)

    def test_server_info(self):
        info = self.client.server_info()
        self.assertEqual(info.backend, backend())
        self.assertTrue(info.version)

    def test_matmul_odd_shapes(self):
        for m, n, k in [(1, 1, 1), (3, 5, 7), (17, 33, 65), (64, 64, 64)]:
            a, b = self.rand(m, k), self.rand(k, n)
            assert_close(self, self.client.matmul(a, b), reference(a, b))

    def test_matmul_nk_fp32_and_float64_input(self):
        a = self.rng.standard_normal((9, 40))  # float64
        w = self.rng.standard_normal((12, 40))  # [N,K], a PyTorch weight
        got = self.client.matmul(a, w, b_layout="nk", output_dtype="fp32")
        assert_close(self, got, reference(a, w, "nk"), "fp32")
        self.assertEqual(self.client.last_kernel != "", True)
        self.assertGreaterEqual(self.client.last_timing.total_us, 0)

    def test_matmul_alpha_beta_c(self):
        a, b, c = self.rand(4, 8), self.rand(8, 6), self.rand(4, 6)
        got = self.client.matmul(a, b, alpha=2.0, beta=0.5, c=c, output_dtype="fp32")
        ref = 2.0 * reference(a, b) + 0.5 * c.astype(np.float64)
        assert_close(self, got, ref, "fp32")

    def test_leading_dimensions_are_flattened(self):
        a, b = self.rand(2, 3, 16), self.rand(16, 5)
        got = self.client.matmul(a, b)
        self.assertEqual(got.shape, (2, 3, 5))
        assert_close(self, got.reshape(6, 5), reference(a.reshape(6, 16), b))

    def test_matmul_through_shared_memory(self):
        w = self.rand(48, 96)  # [N,K]
        with self.client.shared_memory(1 << 20) as shm, \
                self.client.register(w, layout="nk") as rm:
            for m, fp32 in [(1, False), (5, True), (33, False)]:
                a = self.rand(m, 96)
                got = self.client.matmul(a, rm, shm=shm,
                                         output_dtype="fp32" if fp32 else "bf16")
                assert_close(self, got, reference(a, w, "nk"), "fp32" if fp32 else "bf16")
            regions = self.client._stub.ListSharedMemory(pb.ListSharedMemoryRequest()).regions
            self.assertEqual([r.name for r in regions], [shm.name])
            with self.assertRaises(ValueError):
                self.client.matmul(self.rand(4000, 96), rm, shm=shm)  # A + D do not fit
        # Unregistered on exit: a second close is a no-op.
        shm.close()

    def test_resident_matrix(self):
        w = self.rand(24, 32)  # [N,K]
        with self.client.register(w, layout="nk", name="py-test") as rm:
            self.assertEqual((rm.k, rm.n), (32, 24))
            self.assertIn(rm.handle, [i.handle for i in self.client.list_matrices()])
            x = self.rand(5, 32)
            assert_close(self, self.client.matmul(x, rm), reference(x, w, "nk"))
            assert_close(self, self.client.matmul(x, rm.handle), reference(x, w, "nk"))
            handle = rm.handle
        self.assertNotIn(handle, [i.handle for i in self.client.list_matrices()])
        with self.assertRaises(GemmError) as cm:
            self.client.matmul(x, handle)
        self.assertEqual(cm.exception.code, grpc.StatusCode.NOT_FOUND)

    def test_register_under_a_chosen_handle(self):
        w = self.rand(8, 16)  # [N,K]
        rm = self.client.register(w, layout="nk", handle="py/chosen")
        self.assertEqual(rm.handle, "py/chosen")
        again = self.client.register(w, layout="nk", handle="py/chosen")  # same content: no-op
        self.assertEqual(again.handle, "py/chosen")
        with self.assertRaises(GemmError) as cm:
            self.client.register(w * 2, layout="nk", handle="py/chosen")
        self.assertEqual(cm.exception.code, grpc.StatusCode.ALREADY_EXISTS)
        self.client.register(w * 2, layout="nk", handle="py/chosen", replace=True)
        x = self.rand(3, 16)
        assert_close(self, self.client.matmul(x, "py/chosen"), reference(x, w * 2, "nk"))
        self.client.release("py/chosen")

    def test_batch_shared_and_per_entry_b(self):
        a = self.rand(3, 4, 8)
        b_shared = self.rand(8, 5)
        got = self.client.matmul_batch(a, b_shared)
        self.assertEqual(got.shape, (3, 4, 5))
        for i in range(3):
            assert_close(self, got[i], reference(a[i], b_shared))
        b_each = self.rand(3, 8, 5)
        got = self.client.matmul_batch(a, b_each)
        for i in range(3):
            assert_close(self, got[i], reference(a[i], b_each[i]))

    def test_batch_with_resident_b(self):
        b = self.rand(8, 6)
        rm = self.client.register(b)
        try:
            a = self.rand(2, 3, 8)
            got = self.client.matmul_batch(a, rm)
            for i in range(2):
                assert_close(self, got[i], reference(a[i], b))
        finally:
            rm.release()

    def test_group_of_shapes(self):
        pairs = [(self.rand(2, 3), self.rand(3, 4)), (self.rand(5, 7), self.rand(7, 1))]
        outs = self.client.matmul_group(pairs)
        self.assertEqual([o.shape for o in outs], [(2, 4), (5, 1)])
        for (a, b), o in zip(pairs, outs):
            assert_close(self, o, reference(a, b))

    def test_stream_many(self):
        pairs = [(self.rand(1 + i, 16), self.rand(16, 3 + i)) for i in range(12)]
        outs = self.client.matmul_many(pairs)
        for (a, b), o in zip(pairs, outs):
            assert_close(self, o, reference(a, b))

    def test_stream_many_packed(self):
        pairs = [(self.rand(1 + i % 5, 16), self.rand(16, 3 + i)) for i in range(40)]
        outs = self.client.matmul_many(pairs, packed=True)
        self.assertEqual(len(outs), 40)
        for (a, b), o in zip(pairs, outs):
            assert_close(self, o, reference(a, b))
        # The server's per-request error inside a packed answer reaches the caller.
        with self.assertRaises(GemmError) as cm:
            self.client.matmul_many(pairs[:3], packed=True, kernel="no-such-kernel")
        self.assertEqual(cm.exception.code, grpc.StatusCode.INVALID_ARGUMENT)

    def test_packs_split_at_the_byte_limit(self):
        reqs = []
        for i in range(5):
            r = pb.GemmRequest(request_id=str(i))
            r.problem.a = b"x" * (30 << 20)
            reqs.append(r)
        packs = GemmClient._packs(reqs)
        self.assertEqual([len(p.requests) for p in packs], [2, 2, 1])
        self.assertEqual([r.request_id for p in packs for r in p.requests],
                         [str(i) for i in range(5)])

    def test_bad_input_is_rejected_before_sending(self):
        with self.assertRaises(ValueError):
            self.client.matmul(self.rand(2, 3), self.rand(4, 5))
        with self.assertRaises(ValueError):
            self.client.matmul(self.rand(2, 3), self.rand(3, 5), b_layout="kk")

    def test_server_errors_carry_status_codes(self):
        with self.assertRaises(GemmError) as cm:
            self.client.release("no-such-handle")
        self.assertEqual(cm.exception.code, grpc.StatusCode.NOT_FOUND)

    def test_cuda_memory_needs_the_cuda_backend(self):
        # The test server runs the CPU backend: GPU memory cannot be mapped there.
        with self.assertRaises(GemmError) as cm:
            self.client.register_cuda_memory("gpu", b"\1" * 64, 0, 0, 4096)
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNIMPLEMENTED)
        self.assertIn("cuda_ipc_handle", str(cm.exception))

    def test_unreachable_server(self):
        with GemmClient("127.0.0.1:1", timeout=5) as c:
            with self.assertRaises(GemmError) as cm:
                c.matmul(self.rand(2, 2), self.rand(2, 2))
            self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)

    def test_example_runs(self):
        # From the source tree (the installed package: tests/python/pip_install_test.py).
        example = os.path.join(REPO, "client", "python", "examples", "matmul_example.py")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "client", "python"))
        out = subprocess.run([sys.executable, example, "--target", SERVER.target],
                             capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("OK", out.stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", help="path of the gemm_server binary")
    args, rest = parser.parse_known_args()
    SERVER_BINARY = args.server
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
