#!/usr/bin/env bash
# Session 22 (one GPU), on d242b1d: the server's allocator under the decode load with CUDA IPC
# operands (a profile of the polling thread, profile_b.sh, was mostly malloc and free: objects
# made on gRPC threads are freed on the executor's). glibc against jemalloc 5.3 and tcmalloc
# (gperftools 2.10, minimal) preloaded into the server only, three rounds, alternating order:
# batching off, delay 20 / idle 2, the defaults.
NAME=alloc_i
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
JE=$PWD/.device-bundle-s/lib/libjemalloc.so.2
TC=$PWD/.device-bundle-s/lib/libtcmalloc_minimal.so.4
gemm_server() { LD_PRELOAD=${ALLOC:-} exec "$B/gemm_server" "$@"; }
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001 --shm_device=0"
for r in 1 2 3; do
  for a in glibc je tc; do
    case $a in glibc) p="" ;; je) p=$JE ;; tc) p=$TC ;; esac
    [ $a = tc ] || ALLOC=$p decode_run off-$a-r$r $DS -- --batching=false
    ALLOC=$p decode_run d20i2-$a-r$r $DS -- --max_queue_delay_us=20 --idle_units_per_device=2
    [ $a = tc ] || ALLOC=$p decode_run default-$a-r$r $DS --
  done
done
python3 scripts/lib/decode_summary.py "$L" >"$L/decode_summary.txt" 2>&1
date -u >"$L/end.txt"
head -24 "$L/decode_summary.txt"
cd "$L/.." && tar czf "$(basename "$L").tgz" "$(basename "$L")" && rm -rf "$L"
