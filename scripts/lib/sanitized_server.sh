#!/usr/bin/env bash
# gemm_server under compute-sanitizer memcheck, for tests that start the server themselves
# (GEMM_SERVER_BINARY=this script): runs `compute-sanitizer --tool memcheck SERVER ARGS` in the
# background and hands a SIGTERM or SIGINT to the server process itself, so the server shuts
# down cleanly and the sanitizer writes its summary and exits with the server's status (9 when it
# found errors). Sending the signal to the sanitizer instead killed it without a summary (143),
# and sanitizing the test process too (--target-processes all) changes how its exported CUDA IPC
# allocations look to the server. NOTE: compute-sanitizer 2025.3 reports "couldn't find exit
# code" for the server stopped this way and exits 1 although the server returned 0 from main; with
# that line and "ERROR SUMMARY: 0 errors" in the log this script exits 0 (the same test without
# the sanitizer checks the server's own exit status). Environment: SANITIZED_SERVER (the gemm_server binary),
# SANITIZER_LOG (the sanitizer's log file; default /tmp/memcheck-server-<pid>.log),
# SANITIZED_SERVER_FLAGS (added before the test's flags, e.g. --self_test=false).
set -u
log=${SANITIZER_LOG:-/tmp/memcheck-server-$$.log}
compute-sanitizer --tool memcheck --error-exitcode 9 \
  --log-file "$log" "${SANITIZED_SERVER:?}" \
  ${SANITIZED_SERVER_FLAGS:-} "$@" &
san=$!
trap 'pkill -TERM -P "$san" -f "$SANITIZED_SERVER" || kill -TERM "$san"' TERM INT
while true; do
  wait "$san"
  rc=$?
  kill -0 "$san" 2>/dev/null || break
done
if [ "$rc" != 0 ] && grep -q "couldn't find exit code" "$log" &&
  grep -q "ERROR SUMMARY: 0 errors" "$log"; then
  echo "sanitized_server.sh: no memcheck errors; the sanitizer did not see the exit code" >&2
  rc=0
fi
exit "$rc"
