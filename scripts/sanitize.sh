#!/usr/bin/env bash
# Builds the server and the integration suite with sanitizers and runs the suite against the
# sanitized server (the tests start the gemm_server of their own build directory):
#   asan  AddressSanitizer + UBSan (preset asan, build-asan/, Debug)
#   tsan  ThreadSanitizer (preset tsan, build-tsan/)
#   scripts/sanitize.sh [asan|tsan]...     (default: asan tsan)
# A report fails the run: the server and the tests abort on their first one (halt_on_error), so
# the test that met it fails, and the log is scanned for reports as well.
# Environment: SANITIZE_FILTER (gtest filter for integration_test; default: every test),
# SANITIZE_CHAOS=1 to run the chaos test too, GEMM_BUILD_JOBS (default: nproc).
# Logs: build-<preset>/sanitize.log.
set -uo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(asan tsan)
filter=${SANITIZE_FILTER:-*}
targets=(gemm_server gemm_client integration_test)
[ "${SANITIZE_CHAOS:-0}" = 1 ] && targets+=(chaos_test)

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:history_size=4:second_deadlock_stack=1:suppressions=$PWD/scripts/lib/tsan.supp}

failed=()
for preset in "${presets[@]}"; do
  dir=build-$preset
  log=$dir/sanitize.log
  start=$SECONDS
  cmake --preset "$preset" >/dev/null || exit 1
  cmake --build "$dir" -j "${GEMM_BUILD_JOBS:-$(nproc)}" --target "${targets[@]}" || exit 1
  built=$SECONDS
  (
    "$dir/tests/integration_test" --gtest_filter="$filter"
    rc=$?
    tests/integration/cli_test.sh "$dir/server/gemm_server" "$dir/client/gemm_client" || rc=1
    if [ "${SANITIZE_CHAOS:-0}" = 1 ]; then "$dir/tests/chaos_test" || rc=1; fi
    exit "$rc"
  ) >"$log" 2>&1
  rc=$?
  reports=$(grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$log")
  echo "sanitize: $preset: build $((built - start)) s, run $((SECONDS - built)) s," \
    "exit $rc, $reports sanitizer reports ($log)"
  if [ "$rc" != 0 ] || [ "$reports" != 0 ]; then
    grep -E -A3 'ERROR: (Address|Leak)Sanitizer|runtime error:|WARNING: ThreadSanitizer|^\[  FAILED' \
      "$log" | head -n 40 | sed 's/^/  /'
    failed+=("$preset")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "sanitize: failed: ${failed[*]}"
  exit 1
fi
echo "sanitize: ${presets[*]}: no reports"
