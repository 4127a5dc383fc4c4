#!/usr/bin/env bash
# compute-sanitizer over the final build (scripts/gpu_sanitize.sh).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/sanitize; mkdir -p $L
date -u > $L/start.txt
OUT=$L timeout 540 scripts/gpu_sanitize.sh > $L/stdout.txt 2>&1; echo "sanitize rc=$?" >> $L/rc.txt
date -u > $L/end.txt
cd $OUT && tar czf sanitize.tgz sanitize && rm -rf sanitize
