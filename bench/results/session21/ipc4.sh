#!/usr/bin/env bash
# Session 21, one GPU, ninth call: the bar's ratio with CUDA IPC operands, repeated. Batching off
# three times (first, middle, last) and, in two rounds of opposite order, the settings that led
# ipc3.sh: --max_queue_delay_us 10 or 20 with --idle_units_per_device 2 or 3, and 2 launch
# threads; the same on host shared memory once. 0.1% of answers verified. Same build as ipc2.sh.
NAME=ipc4
source scripts/lib/device_call.sh
source scripts/lib/decode_run.sh
decode_machine
DS="--shapes=16x8192x8192 --rpc=packed --streams_per_channel=1 --verify_fraction=0.001"
IPC="--shm_device=0"
decode_run nobatch-r1 $DS $IPC -- --batching=false
decode_run d10-i2-r1 $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=2
decode_run d10-i2-l2-r1 $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=2 --launch_threads_per_device=2
decode_run d20-i2-r1 $DS $IPC -- --max_queue_delay_us=20 --idle_units_per_device=2
decode_run d10-i3-r1 $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=3
decode_run nobatch-r2 $DS $IPC -- --batching=false
decode_run d10-i3-r2 $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=3
decode_run d20-i2-r2 $DS $IPC -- --max_queue_delay_us=20 --idle_units_per_device=2
decode_run d10-i2-l2-r2 $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=2 --launch_threads_per_device=2
decode_run d10-i2-r2 $DS $IPC -- --max_queue_delay_us=10 --idle_units_per_device=2
decode_run nobatch-r3 $DS $IPC -- --batching=false
decode_run host-nobatch $DS -- --batching=false
decode_run host-d10-i2 $DS -- --max_queue_delay_us=10 --idle_units_per_device=2
python3 scripts/lib/decode_summary.py $L >$L/decode_summary.txt 2>&1
date -u >$L/end.txt
cat $L/decode_summary.txt | head -16
cd $L/.. && tar czf $(basename $L).tgz $(basename $L) && rm -rf $L
