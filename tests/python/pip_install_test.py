#!/usr/bin/python3
"""`pip install ./client/python` into a fresh virtual environment, then the example prints OK
against a real gemm_server (CPU backend), run from outside the source tree so that gemm_client
comes from the installed package.

The environment is made with --system-site-packages so that Debian's python3-grpcio,
python3-numpy and python3-protobuf serve as the dependencies, and pip is kept off the network
(--no-index --no-deps --no-build-isolation: setuptools comes from python3-setuptools, venv from
python3-venv).

  /usr/bin/python3 tests/python/pip_install_test.py --server build/server/gemm_server \\
      --workdir /tmp/pip_install
"""

import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gemm_test_server import REPO, Server  # noqa: E402


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    print(out.stdout, out.stderr, sep="", flush=True)
    if out.returncode != 0:
        raise SystemExit(f"FAIL: exit {out.returncode}: {' '.join(cmd)}")
    return out.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True)
    parser.add_argument("--workdir", required=True)
    a = parser.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    # pip builds in the directory it is given: build a copy, so the source tree stays clean.
    src = os.path.join(a.workdir, "src")
    shutil.copytree(os.path.join(REPO, "client", "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    venv = os.path.join(a.workdir, "venv")
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    python = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-build-isolation", src],
        env=env)
    where = run([python, "-c", "import gemm_client; print(gemm_client.__file__)"],
                cwd=a.workdir, env=env)
    if not where.strip().startswith(venv):
        raise SystemExit(f"FAIL: gemm_client imported from {where.strip()}, not the venv")
    example = os.path.join(REPO, "client", "python", "examples", "matmul_example.py")
    with Server(a.server, log_path=os.path.join(a.workdir, "server.log")) as server:
        out = run([python, example, "--target", server.target], cwd=a.workdir, env=env)
    if "OK" not in out.splitlines()[-1:]:
        raise SystemExit("FAIL: the example did not print OK")
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
