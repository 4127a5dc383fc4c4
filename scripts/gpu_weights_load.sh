#!/usr/bin/env bash
# Weight repository load rate on a GPU machine, against the disk's sequential read rate measured
# in the same run. Writes a repository of SIZE_GIB (default 8) GiB of BF16 safetensors files
# (1 GiB each, four [8192, 16384] tensors) under WEIGHTS_DIR (default /tmp/gemm-weights-repository,
# outside $OUT so the files never travel back with the results), evicts them
# from the page cache (posix_fadvise DONTNEED; no root needed), reads them once with dd (the
# disk's rate), evicts them again and starts gemm_server --weights on them; the server's log line
# "weights: ... read X in Y s (Z GB/s)" gives the load rate. Then checks the placement: with
# every visible GPU (CUDA_VISIBLE_DEVICES, e.g. 0,1,2,3) and --replicate_resident, every tensor
# must list every GPU; without it, the tensors must be spread over the GPUs.
# Records the entry "weights-load" in $RESULTS_DIR/<gpu>-service.json; logs and summary.txt
# under $OUT.
#   scripts/gpu_weights_load.sh                      (SIZE_GIB=8, every visible GPU)
#   SIZE_GIB=16 KEEP_WEIGHTS=1 scripts/gpu_weights_load.sh
set -uo pipefail
here=$(dirname "$0")
# shellcheck source=lib/gpu_env.sh
source "$here/lib/gpu_env.sh"
SIZE_GIB=${SIZE_GIB:-8}
WEIGHTS_DIR=${WEIGHTS_DIR:-/tmp/gemm-weights-repository}
port=50270
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee "$OUT/gpu.txt"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
df -h "$(dirname "$WEIGHTS_DIR")" | tee "$OUT/disk.txt"

# The repository: SIZE_GIB files of four 256 MiB BF16 tensors (values 1.0 + file index / 256).
python3 - "$WEIGHTS_DIR" "$SIZE_GIB" <<'PY'
import json, os, struct, sys
folder, files = sys.argv[1], int(sys.argv[2])
os.makedirs(folder, exist_ok=True)
rows, cols, per_file = 8192, 16384, 4
tensor_bytes = rows * cols * 2
for f in range(files):
    path = os.path.join(folder, f"shard{f:03d}.safetensors")
    header = {f"t{t}": {"dtype": "BF16", "shape": [rows, cols],
                        "data_offsets": [t * tensor_bytes, (t + 1) * tensor_bytes]}
              for t in range(per_file)}
    blob = json.dumps(header).encode()
    blob += b" " * (-(8 + len(blob)) % 8)
    if os.path.exists(path) and os.path.getsize(path) == 8 + len(blob) + per_file * tensor_bytes:
        continue
    value = struct.pack("<H", 0x3f80 + f % 128)
    chunk = value * (64 << 19)  # 64 MiB
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(blob)) + blob)
        for _ in range(per_file * tensor_bytes // len(chunk)):
            out.write(chunk)
PY
sync

evict() {  # drops the repository's pages from the page cache
  python3 - "$WEIGHTS_DIR" <<'PY'
import os, sys
for name in sorted(os.listdir(sys.argv[1])):
    fd = os.open(os.path.join(sys.argv[1], name), os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}

# A = ones [16, 16384] as a float32 .npy (written without numpy).
python3 - "$OUT/ones.npy" <<'PY'
import struct, sys
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (16, 16384), }"
header += " " * (-(10 + len(header) + 1) % 64) + "\n"
with open(sys.argv[1], "wb") as out:
    out.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    out.write(struct.pack("<f", 1.0) * (16 * 16384))
PY

bytes=$(du -cb "$WEIGHTS_DIR"/*.safetensors | tail -1 | cut -f1)
evict
start=$(date +%s.%N)
for f in "$WEIGHTS_DIR"/*.safetensors; do dd if="$f" of=/dev/null bs=16M status=none; done
disk_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
disk_gbps=$(awk -v n="$bytes" -v s="$disk_s" 'BEGIN { printf "%.3f", n / s / 1e9 }')
echo "disk: $bytes bytes in $disk_s s = $disk_gbps GB/s (dd, 16 MiB reads, cold cache)" |
  tee "$OUT/summary.txt"

run_server() {  # run_server NAME FLAGS...: loads the repository, lists it, stops; log in $OUT
  local name=$1 pid
  shift
  evict
  port=$((port + 1))
  gemm_server --backend=cuda --host=127.0.0.1 --port=$port --metrics_port=0 \
    --weights="$WEIGHTS_DIR" "$@" >"$OUT/server-$name.log" 2>&1 &
  pid=$!
  if ! wait_for_server $port; then
    kill -KILL $pid 2>/dev/null
    tail -5 "$OUT/server-$name.log" >&2
    return 1
  fi
  gemm_client --target=127.0.0.1:$port list >"$OUT/list-$name.jsonl"
  # A Gemm by name: ones [16, 16384] times shard000/t0 (all 1.0, [N,K]) is 16384 everywhere.
  gemm_client --target=127.0.0.1:$port gemm --a_npy="$OUT/ones.npy" --b_handle=shard000/t0 \
    --b_layout=nk --n=8192 --out_npy="$OUT/d-$name.npy" >"$OUT/gemm-$name.txt" 2>&1
  python3 - "$OUT/d-$name.npy" "$name" <<'PY' | tee -a "$OUT/summary.txt"
import struct, sys
try:
    raw = open(sys.argv[1], "rb").read()
except OSError:
    raw = b"\0" * 10
start = 10 + struct.unpack("<H", raw[8:10])[0]
values = struct.unpack(f"<{(len(raw) - start) // 4}f", raw[start:])
print(f"{sys.argv[2]}: gemm by name: {len(values)} values, {'all 16384 (right)' if values and all(v == 16384 for v in values) else 'WRONG'}")
PY
  kill -TERM $pid
  wait $pid
  grep 'weights: [0-9]* tensors' "$OUT/server-$name.log" | tail -1 | sed "s/^/$name: /" |
    tee -a "$OUT/summary.txt"
}

run_server spread || exit 1
run_server replicated --replicate_resident || exit 1

python3 - "$OUT" "$RESULTS_DIR/$GPU_SLUG-service.json" "$bytes" "$disk_s" "$gpus" "$here/lib" \
  "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" <<'PY'
import json, re, sys, time
sys.path.insert(0, sys.argv[6])
from service_results import dumps  # noqa: E402
out, dest, size, disk_s, gpus = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
gpu_name = sys.argv[7]
result = {"repository_bytes": size, "disk_seconds": disk_s, "disk_gbps": size / disk_s / 1e9,
          "gpus": gpus, "runs": {}}
ok = True
for name in ("spread", "replicated"):
    log = open(f"{out}/server-{name}.log").read()
    m = re.findall(r"weights: (\d+) tensors.*read ([\d.]+) (\w+) in ([\d.]+) s", log)
    tensors, _, _, seconds = m[-1]
    devices = [json.loads(line)["devices"] for line in open(f"{out}/list-{name}.jsonl") if line.strip()]
    used = sorted({d for ds in devices for d in ds})
    run = {"tensors": int(tensors), "load_seconds": float(seconds),
           "load_gbps": size / float(seconds) / 1e9,
           "fraction_of_disk": (size / float(seconds)) / (size / disk_s),
           "gpus_used": used, "copies_per_tensor": sorted({len(ds) for ds in devices})}
    if name == "replicated":
        run["placement_ok"] = all(len(ds) == gpus for ds in devices)
    else:
        run["placement_ok"] = len(used) == min(gpus, len(devices))
    run["gemm_by_name_ok"] = f"{name}: gemm by name: " in open(f"{out}/summary.txt").read() and \
        "right" in [l for l in open(f"{out}/summary.txt") if l.startswith(f"{name}: gemm")][0]
    ok = ok and run["placement_ok"] and run["gemm_by_name_ok"] and len(devices) == int(tensors)
    result["runs"][name] = run
entry = {"what": f"a {size / 2**30:.0f} GiB repository of BF16 safetensors from a cold page cache "
                 f"against dd's read of the same files ({result['disk_gbps']:.2f} GB/s); "
                 f"{gpus} GPU(s), spread and replicated; a Gemm by a tensor's name checked",
         "command": "scripts/gpu_weights_load.sh", "date": time.strftime("%Y-%m-%d"),
         "points": [dict(point=name, disk_gbps=result["disk_gbps"], **run)
                    for name, run in result["runs"].items()]}
try:
    with open(dest) as f:
        current = json.load(f)
except (OSError, ValueError):
    current = {"gpu": gpu_name}
current.setdefault("loads", {})["weights-load"] = entry
with open(dest, "w") as f:
    f.write(dumps(current))
print(json.dumps(result, indent=2))
sys.exit(0 if ok else 1)
PY
status=$?
cat "$OUT/summary.txt"
[ "${KEEP_WEIGHTS:-0}" = 1 ] || rm -rf "$WEIGHTS_DIR"
exit $status
