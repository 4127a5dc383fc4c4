#!/usr/bin/env bash
# Container entrypoint for gemm_server: maps GEMM_* environment variables to the server's flags
# and execs the server, so it runs as PID 1 and receives SIGTERM itself (graceful drain).
#
#   docker run ... gemm-server                      server with defaults + GEMM_* env
#   docker run ... gemm-server --max_dim=16384      extra flags are appended (win over env)
#   docker run ... gemm-server gemm_loadgen ...     any other command runs as is
#
# An unset or empty variable passes no flag, so the server's own default applies. Unknown flags
# are the server's to reject. GEMM_EXTRA_ARGS is split on whitespace and appended after the
# mapped flags. GEMM_SERVER_BIN overrides the binary (tests use it).
set -euo pipefail

# Environment variable -> server flag. tests/deploy/check_deploy.py reads this table and checks
# that every flag exists in `gemm_server --helpfull`, so keep one "VAR:flag" pair per line.
readonly FLAG_MAP=(
  GEMM_HOST:host
  GEMM_PORT:port
  GEMM_METRICS_PORT:metrics_port
  GEMM_BACKEND:backend
  GEMM_DRAIN_TIMEOUT_S:drain_timeout_s
  GEMM_MAX_DIM:max_dim
  GEMM_MAX_REQUEST_BYTES:max_request_bytes
  GEMM_MAX_MESSAGE_BYTES:max_message_bytes
  GEMM_MAX_QUEUE_DELAY_US:max_queue_delay_us
  GEMM_MAX_BATCH_ROWS:max_batch_rows
  GEMM_QUEUE_CAPACITY:queue_capacity
  GEMM_MAX_PROBLEMS:max_problems
  GEMM_MAX_RESIDENT_BYTES:max_resident_bytes
  GEMM_BATCHING:batching
  GEMM_DISPATCH_WHEN_IDLE:dispatch_when_idle
  GEMM_CPU_WORKERS:cpu_workers
  GEMM_POOL_CAP_BYTES:pool_cap_bytes
  GEMM_STAGING_BYTES:staging_bytes
  GEMM_STAGING_SLAB_BYTES:staging_slab_bytes
  GEMM_PINNED_HEAP_BYTES:pinned_heap_bytes
  GEMM_HOST_COPY_THREADS:host_copy_threads
  GEMM_STREAMS_PER_DEVICE:streams_per_device
  GEMM_REPLICATE_RESIDENT:replicate_resident
  GEMM_SELF_TEST:self_test
  GEMM_REUSE_LARGE_BUFFERS:reuse_large_buffers
  GEMM_METRICS_HOST:metrics_host
  GEMM_HEALTH_PORT:health_port
  GEMM_TLS_CERT:tls_cert
  GEMM_TLS_KEY:tls_key
  GEMM_TLS_CLIENT_CA:tls_client_ca
  GEMM_AUTH_TOKENS_FILE:auth_tokens_file
  GEMM_AUTH_CERT_ROLES:auth_cert_roles
  GEMM_REFLECTION:reflection
  GEMM_WEIGHTS:weights
  GEMM_WEIGHTS_LAYOUT:weights_layout
  GEMM_WEIGHTS_STRICT:weights_strict
  GEMM_WEIGHTS_POLL_S:weights_poll_s
)
# Values checked here, so a typo fails before the GPU is touched.
readonly NUMERIC_VARS=" GEMM_PORT GEMM_METRICS_PORT GEMM_DRAIN_TIMEOUT_S GEMM_MAX_DIM \
GEMM_MAX_REQUEST_BYTES GEMM_MAX_MESSAGE_BYTES GEMM_MAX_QUEUE_DELAY_US GEMM_MAX_BATCH_ROWS \
GEMM_QUEUE_CAPACITY GEMM_MAX_PROBLEMS GEMM_MAX_RESIDENT_BYTES GEMM_CPU_WORKERS \
GEMM_POOL_CAP_BYTES GEMM_STAGING_BYTES GEMM_STAGING_SLAB_BYTES GEMM_PINNED_HEAP_BYTES \
GEMM_HOST_COPY_THREADS GEMM_STREAMS_PER_DEVICE GEMM_HEALTH_PORT GEMM_WEIGHTS_POLL_S "
readonly BOOL_VARS=" GEMM_BATCHING GEMM_DISPATCH_WHEN_IDLE GEMM_REPLICATE_RESIDENT GEMM_SELF_TEST \
GEMM_REUSE_LARGE_BUFFERS GEMM_REFLECTION GEMM_WEIGHTS_STRICT "

server="${GEMM_SERVER_BIN:-/opt/gemm/bin/gemm_server}"

# A first argument that is not a flag is a command of its own (a shell, the load generator, ...).
if [[ $# -gt 0 && "$1" != -* ]]; then
  exec "$@"
fi

args=()
for entry in "${FLAG_MAP[@]}"; do
  var="${entry%%:*}"
  flag="${entry#*:}"
  value="${!var:-}"
  [[ -n "$value" ]] || continue
  if [[ "$NUMERIC_VARS" == *" $var "* && ! "$value" =~ ^[0-9]+$ ]]; then
    echo "entrypoint: $var must be a non-negative integer, got '$value'" >&2
    exit 64
  fi
  if [[ "$BOOL_VARS" == *" $var "* && ! "$value" =~ ^(true|false)$ ]]; then
    echo "entrypoint: $var must be true or false, got '$value'" >&2
    exit 64
  fi
  args+=("--${flag}=${value}")
done

if [[ -n "${GEMM_EXTRA_ARGS:-}" ]]; then
  # Deliberate word splitting: GEMM_EXTRA_ARGS="--max_dim=8192 --queue_capacity=512".
  read -r -a extra <<<"$GEMM_EXTRA_ARGS"
  args+=("${extra[@]}")
fi

exec "$server" "${args[@]}" "$@"
