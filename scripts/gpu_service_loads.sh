#!/usr/bin/env bash
# Service loads other than decode, on GPU 0, each against a fresh server at its defaults unless
# said otherwise. LOADS (default "large moe"):
#   large  4096x4096x4096 with A and B in every request (64 MiB in, 32 MiB out): over the gRPC
#          messages (8 callers, unary RPCs, 2% of answers checked) and through a POSIX
#          shared-memory region (4 callers, packed streams, 1% checked)
#   moe    mixture-of-experts decode steps: each request a group of 2 of 8 resident experts (one
#          token each), Mixtral-like up (1x28672x4096) and down (1x4096x14336) projections,
#          64 callers on 8 channels, batching off and at the defaults
# Records large-messages, large-shm and moe-messages in $RESULTS_DIR/<gpu>-service.json;
# reports and server logs under $OUT.
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
# shellcheck source=lib/decode_run.sh
source "$here/lib/decode_run.sh"
decode_machine
LOADS=${LOADS:-large moe}
record() { python3 "$here/lib/service_results.py" "$RESULTS_DIR" "$@"; }
if [[ " $LOADS " == *" large "* ]]; then
  decode_run large-messages --shm=false --shapes=4096x4096x4096 --b=inline --b_layout=kn \
    --concurrency=8 --channels=1 --rpc=unary --verify_fraction=0.02 --
  record --load large-messages --command "LOADS=large scripts/gpu_service_loads.sh" \
    --what "4096x4096x4096, A and B in every request (64 MiB in, 32 MiB out), 8 closed-loop callers, unary RPCs; 2% of answers checked" \
    --point="callers-8:$OUT/large-messages.json:"
  decode_run large-shm --shapes=4096x4096x4096 --b=inline --b_layout=kn --concurrency=4 \
    --rpc=packed --streams_per_channel=1 --verify_fraction=0.01 --
  record --load large-shm --command "LOADS=large scripts/gpu_service_loads.sh" \
    --what "4096x4096x4096, A and B read from and D written to a POSIX shared-memory region, 4 closed-loop callers, packed streams; 1% of answers checked" \
    --point="callers-4:$OUT/large-shm.json:"
fi
if [[ " $LOADS " == *" moe "* ]]; then
  points=()
  for proj in up:1x28672x4096 down:1x4096x14336; do
    name=${proj%%:*}
    for mode in off default; do
      flags=()
      [ "$mode" = off ] && flags=(--batching=false)
      decode_run "moe-$name-$mode" --shm=false --shapes="${proj#*:}" --experts=8:2 \
        --rpc=unary --verify_fraction=0.01 -- "${flags[@]}"
      points+=("--point=$name-$mode:$OUT/moe-$name-$mode.json:${flags[*]}")
    done
  done
  record --load moe-messages --command "LOADS=moe scripts/gpu_service_loads.sh" \
    --what "mixture-of-experts decode steps: each request a group of 2 of 8 resident experts (one token each), Mixtral-like up (1x28672x4096) and down (1x4096x14336) projections, 64 closed-loop callers on 8 channels; 1% of answers checked" \
    "${points[@]}"
fi
