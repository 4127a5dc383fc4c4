# Preamble of a device-call script (source it first, from the repository root, with $OUT set by
# the device tool): unpacks the bundle carried as .device-bundle-pack/s.txz, puts its binaries on
# PATH ($B), makes $L = $OUT/NAME-<gpu> the call's log folder (and $OUT with it, for
# scripts/lib/decode_run.sh) and defines `suite TEST_BINARY [ENV=VALUE...]`, which runs one test
# binary (240 s at most) into $L/TEST_BINARY.log and appends its result line to $L/summary.txt.
# Use: NAME=mycall; source scripts/lib/device_call.sh
rm -rf .device-bundle-s
tar xJf .device-bundle-pack/s.txz
source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin
export PATH=$B:$PATH
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -cs 'A-Za-z0-9' '-' |
  sed 's/-$//' | tr 'A-Z' 'a-z')
L=$OUT/${NAME:-call}-$gpu
mkdir -p "$L"
export OUT=$L
date -u >"$L/start.txt"
suite() {
  local t=$1
  shift
  env "$@" timeout 240 "$t" >"$L/$t.log" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/$t.log" | tr '\n' ' ')" >>"$L/summary.txt"
}
