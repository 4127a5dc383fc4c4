#!/usr/bin/env bash
# End-to-end test of the gemm_client CLI against a real gemm_server (CPU backend): random and
# .npy operands with --verify (shapes taken from the files, mismatches naming each file's shape),
# batch, group, resident register/use/list/release, --help and usage errors (exit 2), error exit
# codes, --grpc_arg and the transport flags (accepted and refused).
# Usage: cli_test.sh <gemm_server> <gemm_client>
set -euo pipefail
server=$1
client=$2
work=$(mktemp -d)
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# A malformed transport argument stops the server at start-up, saying what was wrong.
set +e
"$server" --backend=cpu --host=127.0.0.1 --port="$port" --metrics_port=0 --grpc_arg=oops \
  2>"$work/bad_arg.log"; rc=$?
set -e
# (One check per line: `set -e` does not stop on the first command of an && list.)
[ "$rc" -eq 1 ]
grep -q "grpc_arg: 'oops' is not name=value" "$work/bad_arg.log"
set +e
"$server" --backend=cpu --host=127.0.0.1 --port="$port" --metrics_port=0 \
  --http2_max_frame_bytes=1000 2>"$work/bad_frame.log"; rc=$?
set -e
[ "$rc" -eq 1 ]
grep -q "max_frame_bytes: must be 0 or in \[16384, 16777215\], got 1000" "$work/bad_frame.log"
# The server under test runs with transport settings (4 MiB HTTP/2 frames, a 64 MiB window, no
# BDP probing, 1 MiB write buffer and socket reads) and the clients below with the same ones.
"$server" --backend=cpu --host=127.0.0.1 --port="$port" --metrics_port=0 \
  --grpc_arg=grpc.http2.max_frame_size=4194304,grpc.http2.lookahead_bytes=67108864 \
  --http2_bdp_probe=false --http2_write_buffer_bytes=1048576 --tcp_read_chunk_bytes=1048576 \
  2>"$work/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
C() {
  "$client" --target=127.0.0.1:"$port" --http2_max_frame_bytes=4194304 \
    --http2_stream_window_bytes=67108864 --http2_bdp_probe=false "$@"
}
for _ in $(seq 100); do C info >/dev/null 2>&1 && break; sleep 0.1; done

C --m=33 --n=17 --k=65 --verify | grep -q "verify: .*OK"
C --m=8 --n=40 --k=24 --b_layout=nk --out_dtype=fp32 --alpha=2 --beta=0.5 --verify | grep -q OK
C --batch=4 --m=5 --n=6 --k=7 --verify | grep -q OK
C --group=3x4x5,16x8x32,1x64x9 --verify | grep -q OK

# numpy operands in, numpy result out, compared with numpy's own product.
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
w = sys.argv[1]
rng = np.random.default_rng(0)
np.save(f"{w}/a.npy", rng.uniform(-1, 1, (12, 20)).astype(np.float32))
np.save(f"{w}/b.npy", rng.uniform(-1, 1, (20, 9)).astype(np.float32))
PY
C --m=12 --n=9 --k=20 --a_npy="$work/a.npy" --b_npy="$work/b.npy" --out_dtype=fp32 \
  --out_npy="$work/d.npy" --verify | grep -q OK
# The shapes come from the files when no --m/--n/--k is given.
C --a_npy="$work/a.npy" --b_npy="$work/b.npy" --out_dtype=fp32 --out_npy="$work/d.npy" \
  --verify | grep -q OK
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
w = sys.argv[1]
def bf16(x):  # round to nearest even, as the client does
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7fff + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)
a, b, d = (np.load(f"{w}/{n}.npy") for n in "abd")
ref = bf16(a).astype(np.float64) @ bf16(b).astype(np.float64)
err = np.linalg.norm(d - ref) / np.linalg.norm(ref)
assert d.shape == (12, 9) and err < 1e-5, (d.shape, err)
rng = np.random.default_rng(1)
np.save(f"{w}/a32x64.npy", rng.uniform(-1, 1, (32, 64)).astype(np.float32))
np.save(f"{w}/b64x48.npy", rng.uniform(-1, 1, (64, 48)).astype(np.float32))
np.save(f"{w}/b48x64.npy", rng.uniform(-1, 1, (48, 64)).astype(np.float32))
PY
# A 32x64 and a 64x48 file: D is 32x48, whatever --m/--n/--k default to.
C --a_npy="$work/a32x64.npy" --b_npy="$work/b64x48.npy" --out_npy="$work/d.npy" --verify |
  grep -q OK
/usr/bin/python3 -c "import sys, numpy as np; assert np.load(sys.argv[1]).shape == (32, 48)" \
  "$work/d.npy"
# [N,K] B of the same file read with --b_layout=nk.
C --a_npy="$work/a32x64.npy" --b_npy="$work/b48x64.npy" --b_layout=nk --verify | grep -q OK
# Shapes that disagree: a usage error naming each file's real shape.
refute() {  # fails when the command succeeds (a bare `! cmd` does not stop a `set -e` script)
  if "$@"; then echo "unexpected success: $*" >&2; return 1; fi
}
expect_usage_error() {  # <message part> <gemm_client args...>
  local want=$1 rc
  shift
  set +e
  C "$@" >/dev/null 2>"$work/err"; rc=$?
  set -e
  [ "$rc" -eq 2 ] && grep -qF -- "$want" "$work/err" || { cat "$work/err"; return 1; }
}
expect_usage_error "a32x64.npy (32x64 as [M,K]) gives 64, $work/b48x64.npy (48x64 as [K,N]) gives 48" \
  --a_npy="$work/a32x64.npy" --b_npy="$work/b48x64.npy"
expect_usage_error "M differs: --m gives 16, $work/a32x64.npy (32x64 as [M,K]) gives 32" \
  --a_npy="$work/a32x64.npy" --m=16
expect_usage_error "a32x64.npy: shape 32x64 does not fit [2,M,K]" --a_npy="$work/a32x64.npy" --batch=2
# register takes rows and cols from the file; a disagreeing --rows names the file's shape.
hn=$(C register --b_npy="$work/b48x64.npy" --b_layout=nk --name=from-npy)
C --b_handle="$hn" --m=5 --n=48 --k=64 | grep -q "kernel="
C list | grep "$hn" | grep -q '"rows":"48","cols":"64"'
C release --handle="$hn"
expect_usage_error "rows differs: --rows gives 3, $work/b48x64.npy (48x64 as [rows,cols]) gives 48" \
  register --b_npy="$work/b48x64.npy" --rows=3
# --help lists the client's flags; --helpfull names no build path; usage errors exit 2.
C --help >"$work/help"
grep -q -- "--target" "$work/help"
grep -q -- "--a_npy" "$work/help"
refute grep -q "No flags matched" "$work/help"
C --helpfull >"$work/helpfull"
grep -q "Flags from client/gemm_cli.cc:" "$work/helpfull"
refute grep -E "Flags from (/|\.\./)" "$work/helpfull"
expect_usage_error "Unknown command line flag 'no_such_flag'" --no_such_flag=1
expect_usage_error "Illegal value 'many' specified for flag 'batch'" --batch=many

h=$(C register --rows=32 --cols=16 --b_layout=nk --name=w0)
[[ $h == mat-* ]]
C list | grep -q "$h"
C --b_handle="$h" --m=3 --n=32 --k=16 | grep -q "kernel="
C release --handle="$h"
set +e
C release --handle="$h" 2>"$work/err"; rc=$?
set -e
[ "$rc" -eq 1 ]
grep -q NOT_FOUND "$work/err"
set +e
C --m=0 2>"$work/err"; rc=$?
set -e
[ "$rc" -eq 1 ]
grep -q "problem.m" "$work/err"
set +e
C bogus 2>/dev/null; rc=$?
set -e
[ "$rc" -eq 2 ]
# Server reflection lists the service (what grpcurl uses), raw bytes: no reflection stubs needed.
/usr/bin/python3 - "$port" <<'PY'
import sys, grpc
ch = grpc.insecure_channel(f"127.0.0.1:{sys.argv[1]}")
call = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
# ServerReflectionRequest{list_services = ""} (field 7, length-delimited)
replies = b"".join(call(iter([b"\x3a\x00"]), timeout=10))
assert b"gemm.v1.GemmService" in replies and b"grpc.health.v1.Health" in replies, replies
PY
echo "cli_test: all checks passed"
