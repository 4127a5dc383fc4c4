#!/usr/bin/env bash
# H200: the server before the executor split (40cc7ee, as gemm_server_pre) against the split
# (gemm_server), alternating with the split first (the order reversed against refactor_ab.sh), two rounds.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
mkdir -p $PWD/.pre-bin && ln -sf $B/gemm_server_pre $PWD/.pre-bin/gemm_server
PREPATH=$PWD/.pre-bin:$PATH
L=$OUT/refactor-ba; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
UP="--shapes=1x28672x4096 --verify_fraction=0.01 --experts=8:2 --shm=false"
for r in 1 2; do
  decode_run msg-nobatch-new-r$r $DM -- --batching=false
  PATH=$PREPATH decode_run msg-nobatch-pre-r$r $DM -- --batching=false
  decode_run shm-new-r$r $DS -- --max_queue_delay_us=50
  PATH=$PREPATH decode_run shm-pre-r$r $DS -- --max_queue_delay_us=50
  decode_run up-new-r$r $UP -- --max_queue_delay_us=50
  PATH=$PREPATH decode_run up-pre-r$r $UP -- --max_queue_delay_us=50
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf refactor-ba.tgz refactor-ba && rm -rf refactor-ba
