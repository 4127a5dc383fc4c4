#!/usr/bin/env bash
# H200: main's server (gemm_server) against the executor split of exp/unit-plan-split
# (gemm_server_split), three rounds in alternating order, on the two loads where session 17 saw
# the split slower (decode over --shm batched; expert steps in the messages).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
mkdir -p $PWD/.split-bin && ln -sf $B/gemm_server_split $PWD/.split-bin/gemm_server
SPATH=$PWD/.split-bin:$PATH
L=$OUT/split-ab; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
UP="--shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false"
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then
    decode_run shm-main-r$r $DS -- --max_queue_delay_us=50
    PATH=$SPATH decode_run shm-split-r$r $DS -- --max_queue_delay_us=50
    decode_run up-main-r$r $UP -- --max_queue_delay_us=50
    PATH=$SPATH decode_run up-split-r$r $UP -- --max_queue_delay_us=50
  else
    PATH=$SPATH decode_run shm-split-r$r $DS -- --max_queue_delay_us=50
    decode_run shm-main-r$r $DS -- --max_queue_delay_us=50
    PATH=$SPATH decode_run up-split-r$r $UP -- --max_queue_delay_us=50
    decode_run up-main-r$r $UP -- --max_queue_delay_us=50
  fi
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cat $L/decode_summary.txt
