#!/usr/bin/env bash
# gemm_server's command line: --help lists the serving, limits and batching flags, grouped, and
# exits 0 without the tuning flags; --helpfull lists those too and names no build path; an unknown
# flag, a bad value or a stray argument is a usage error (exit 2) that says what was wrong.
# Usage: server_cli_test.sh <gemm_server> <source tree>
set -euo pipefail
server=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

refute() {  # fails when the command succeeds (a bare `! cmd` does not stop a `set -e` script)
  if "$@"; then echo "unexpected success: $*" >&2; return 1; fi
}
expect_usage_error() {  # <message part> <gemm_server args...>
  local want=$1 rc
  shift
  set +e
  "$server" "$@" >/dev/null 2>"$work/err"; rc=$?
  set -e
  [ "$rc" -eq 2 ] && grep -qF -- "$want" "$work/err" || { echo "rc=$rc"; cat "$work/err"; return 1; }
}

# (One check per line: `set -e` does not stop on the first command of an && list.)
"$server" --help >"$work/help"
for group in serving limits batching; do
  grep -q "Flags from server/options/${group}_flags.cc:" "$work/help"
done
for flag in host port metrics_port backend drain_timeout_s max_connection_age_s reuse_port \
    max_connections cpu_workers max_dim max_request_bytes max_response_bytes max_message_bytes \
    max_in_flight_bytes max_resident_bytes max_shared_memory_bytes max_shared_memory_regions \
    max_problems upload_idle_timeout_s max_stream_answer_bytes max_answer_bytes \
    max_queue_delay_us max_batch_rows queue_capacity batching dispatch_when_idle; do
  grep -q -- "--$flag " "$work/help" || { echo "--help lacks --$flag" >&2; exit 1; }
done
# Tuning flags (transport, allocator, CUDA) are not in --help.
for flag in grpc_arg reuse_large_buffers staging_bytes gpu_timing_every self_test \
    idle_units_per_device; do
  refute grep -q -- "--$flag " "$work/help"
done
refute grep -q "Flags from absl/" "$work/help"

"$server" --helpfull >"$work/helpfull"
grep -q -- "--grpc_arg " "$work/helpfull"
grep -q -- "--reuse_large_buffers " "$work/helpfull"
grep -q -- "--port " "$work/helpfull"
# The CUDA flags exist in every build (a build without CUDA ignores them).
grep -q "Flags from server/options/cuda_flags.cc:" "$work/helpfull"
grep -q -- "--staging_bytes " "$work/helpfull"
grep -q -- "--gpu_timing_every " "$work/helpfull"
refute grep -E "Flags from (/|\.\./)" "$work/helpfull"
refute grep -qF -- "$source_dir/" "$work/helpfull"

expect_usage_error "Unknown command line flag 'no_such_flag'" --no_such_flag=1
expect_usage_error "Illegal value 'abc' specified for flag 'port'" --port=abc
expect_usage_error "unexpected argument 'serve'" serve
echo "server_cli_test: all checks passed"
