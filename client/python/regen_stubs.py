#!/usr/bin/python3
"""Regenerates the gRPC/protobuf stubs of the Python client from proto/gemm/v1/gemm_service.proto.

Uses Debian's /usr/bin/protoc and /usr/bin/grpc_python_plugin (packages protobuf-compiler and
protobuf-compiler-grpc). NOTE: not `python3 -m grpc_tools.protoc`: Debian 12's python3-grpc-tools
bundles protoc 3.5, which rejects proto3 `optional` fields used by the contract.

  /usr/bin/python3 client/python/regen_stubs.py          # rewrite gemm_client/_proto/*.py
  /usr/bin/python3 client/python/regen_stubs.py --check  # exit 1 if the committed stubs are stale
"""

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PROTO_ROOT = os.path.join(REPO, "proto")
PROTO = "gemm/v1/gemm_service.proto"
OUT_DIR = os.path.join(HERE, "gemm_client", "_proto")
FILES = ("gemm_service_pb2.py", "gemm_service_pb2_grpc.py")


def generate(dest: str) -> None:
    protoc = shutil.which("protoc") or "/usr/bin/protoc"
    plugin = shutil.which("grpc_python_plugin") or "/usr/bin/grpc_python_plugin"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [protoc, f"--proto_path={PROTO_ROOT}", f"--python_out={tmp}", f"--grpc_out={tmp}",
             f"--plugin=protoc-gen-grpc={plugin}", os.path.join(PROTO_ROOT, PROTO)],
            check=True)
        gen = os.path.join(tmp, "gemm", "v1")
        os.makedirs(dest, exist_ok=True)
        shutil.copyfile(os.path.join(gen, FILES[0]), os.path.join(dest, FILES[0]))
        with open(os.path.join(gen, FILES[1])) as f:
            grpc_src = f.read()
        # The plugin imports the messages as top-level package `gemm.v1`; make it package-relative.
        grpc_src = grpc_src.replace("from gemm.v1 import gemm_service_pb2",
                                    "from . import gemm_service_pb2")
        with open(os.path.join(dest, FILES[1]), "w") as f:
            f.write(grpc_src)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    args = parser.parse_args()
    if not args.check:
        generate(OUT_DIR)
        print(f"wrote {', '.join(FILES)} to {OUT_DIR}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        stale = [f for f in FILES
                 if not os.path.exists(os.path.join(OUT_DIR, f))
                 or not filecmp.cmp(os.path.join(tmp, f), os.path.join(OUT_DIR, f), shallow=False)]
    if stale:
        print(f"stale generated stubs: {', '.join(stale)}; run /usr/bin/python3 {__file__}",
              file=sys.stderr)
        return 1
    print("generated stubs are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
