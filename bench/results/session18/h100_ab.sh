#!/usr/bin/env bash
# H100: decode over --shm at 64 callers, the server before idle dispatch (e746b82,
# gemm_server_old) against the final one (0e7b42c, gemm_server), 50 us delay, three rounds in
# alternating order (final.sh had read 44.0k req/s there against session 17's 58.7k).
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
mkdir -p $PWD/.old-bin && ln -sf $B/gemm_server_old $PWD/.old-bin/gemm_server
OPATH=$PWD/.old-bin:$PATH
L=$OUT/h100-ab; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1"
for R in 1 2 3; do
  if [ $((R % 2)) = 1 ]; then
    PATH=$OPATH decode_run c64d50-old-r$R $DS -- --max_queue_delay_us=50
    decode_run c64d50-new-r$R $DS -- --max_queue_delay_us=50
  else
    decode_run c64d50-new-r$R $DS -- --max_queue_delay_us=50
    PATH=$OPATH decode_run c64d50-old-r$R $DS -- --max_queue_delay_us=50
  fi
done
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cat $L/decode_summary.txt | head -8
cd $L/.. && tar czf h100-ab.tgz h100-ab && rm -rf h100-ab
