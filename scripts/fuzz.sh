#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (preset "fuzz": clang 14, ASan + UBSan, in
# build-fuzz/) and runs each for a bounded time, starting from its seed corpus in
# tests/fuzz/corpus/<target>. Exits nonzero when a target crashes, leaks, runs out of memory or
# breaks one of its checked properties.
#   scripts/fuzz.sh [TARGET...]          (default: every target)
# Environment: FUZZ_SECONDS per target (default 30), FUZZ_RSS_MB (memory limit per target,
# default 2048), FUZZ_BUILD=0 to skip the build.
# A failing input is saved as tests/fuzz/crashes/<target>-<kind>-<sha1>; replay it with
#   build-fuzz/tests/fuzz/<target>_fuzzer tests/fuzz/crashes/<file>
# Inputs a run finds that reach new code go to build-fuzz/corpus/<target> (the checked-in seeds
# are never modified); logs to build-fuzz/logs/<target>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
rss_mb=${FUZZ_RSS_MB:-2048}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(request packed_stream matrix_registry shm_registry npy safetensors received_message)

if [ "${FUZZ_BUILD:-1}" != 0 ]; then
  cmake --preset fuzz >/dev/null || exit 1
  cmake --build --preset fuzz -j "${GEMM_BUILD_JOBS:-$(nproc)}" || exit 1
fi

# Symbolized stack traces in the reports.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  ASAN_SYMBOLIZER_PATH=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
  export ASAN_SYMBOLIZER_PATH
fi

mkdir -p tests/fuzz/crashes build-fuzz/logs
failed=()
for t in "${targets[@]}"; do
  bin=build-fuzz/tests/fuzz/${t}_fuzzer
  work=build-fuzz/corpus/$t
  log=build-fuzz/logs/$t.log
  mkdir -p "$work"
  start=$SECONDS
  # The first corpus directory receives new inputs; the seeds are only read. An input that runs
  # longer than -timeout counts as a failure, so the run ends after about FUZZ_SECONDS.
  "$bin" -max_total_time="$seconds" -rss_limit_mb="$rss_mb" -timeout=20 -print_final_stats=1 \
    -artifact_prefix="tests/fuzz/crashes/$t-" "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1 &
  pid=$!
  wait "$pid"
  rc=$?
  # Shared-memory objects a crashed target could not unlink (named after its pid, see
  # fuzz_support.h).
  rm -f /dev/shm/gemm_fuzz_"$pid"_*
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  if [ "$rc" = 0 ]; then
    echo "fuzz: $t: ok, ${runs:-?} inputs in $((SECONDS - start)) s"
  else
    echo "fuzz: $t: FAILED (exit $rc) after $((SECONDS - start)) s ($log):"
    grep -A1 -E 'FUZZ_CHECK failed|runtime error|ERROR: [A-Za-z]*Sanitizer|ERROR: libFuzzer' \
      "$log" | head -n 6 | sed 's/^/  /'
    grep -E 'Test unit written to' "$log" | sed 's/^/  /'
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets passed"
