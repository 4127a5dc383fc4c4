#!/usr/bin/env bash
# H200: gRPC transport arguments (--grpc_arg, same on server and load generator) on the loads
# whose operands travel in the messages: 4096^3 inline (64 MiB in, 32 MiB out per request, 4
# callers on 1 or 4 channels) and decode 16x8192x8192 with A and D in the messages.
rm -rf .device-bundle-s; tar xJf .device-bundle-pack/s.txz; source .device-bundle-s/env.sh
B=$PWD/.device-bundle-s/bin; export PATH=$B:$PATH
L=$OUT/transport; mkdir -p $L; export OUT=$L
date -u > $L/start.txt
source scripts/lib/decode_run.sh
decode_machine
declare -A V
V[base]=""
V[frame]="grpc.http2.max_frame_size=4194304"
V[window]="grpc.http2.lookahead_bytes=67108864"
V[read]="grpc.experimental.tcp_read_chunk_size=1048576,grpc.experimental.tcp_min_read_chunk_size=262144,grpc.experimental.tcp_max_read_chunk_size=16777216"
V[wbuf]="grpc.http2.write_buffer_size=16777216"
V[all]="${V[frame]},${V[window]},${V[read]},${V[wbuf]}"
LG="--shapes=4096x4096x4096 --b=inline --shm=false --concurrency=4 --verify_fraction=0.05"
DM="--shapes=16x8192x8192 --verify_fraction=0.01 --rpc=packed --streams_per_channel=1 --shm=false"
for r in 1 2; do
  for v in base frame window read wbuf all; do
    a=${V[$v]}; ga=(); [ -n "$a" ] && ga=(--grpc_arg=$a)
    decode_run "large1-$v-r$r" $LG --channels=1 "${ga[@]}" -- "${ga[@]}"
  done
done
for v in base all; do
  a=${V[$v]}; ga=(); [ -n "$a" ] && ga=(--grpc_arg=$a)
  decode_run "large4-$v" $LG --channels=4 "${ga[@]}" -- "${ga[@]}"
  decode_run "decmsg-$v" $DM "${ga[@]}" -- --max_queue_delay_us=50 "${ga[@]}"
done
for f in $L/*.txt; do grep -q "^point" $f || continue; echo "== $(basename $f)"; grep -A1 "^point" $f | sed -n '2p;5p'; done > $L/points.txt
python3 scripts/lib/decode_summary.py $L > $L/decode_summary.txt 2>&1
date -u > $L/end.txt
cd $L/.. && tar czf transport.tgz transport && rm -rf transport
