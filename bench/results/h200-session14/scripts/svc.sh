#!/usr/bin/env bash
# Service decode load (scripts/gpu_decode_completion.sh, one round) on the final build.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/service; mkdir -p $L
date -u > $L/start.txt
OUT=$L ROUNDS=1 timeout 560 scripts/gpu_decode_completion.sh > $L/summary.txt 2>&1; echo "rc=$?" >> $L/summary.txt
date -u > $L/end.txt
cd $OUT && tar czf service.tgz service && rm -rf service
