# shellcheck shell=bash
# Source it: thread_cpu PID SECS prints the CPU each thread name of process PID used over SECS
# seconds (percent of one core, summed over the threads of that name, busiest first) and how
# many of the machine's cores were busy meanwhile. Reads /proc only; Linux.
_thread_cpu_snap() {
  local t c s
  for t in /proc/"$1"/task/*; do
    [ -r "$t/stat" ] || continue
    c=$(tr ' ' '_' <"$t/comm" 2>/dev/null)
    s=$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{print $12 + $13}')  # utime + stime
    echo "$(basename "$t") $c $s"
  done
}
thread_cpu() {
  local pid=$1 secs=$2 hz a b s0 s1
  hz=$(getconf CLK_TCK)
  a=$(_thread_cpu_snap "$pid" | sort)
  s0=$(head -1 /proc/stat)
  sleep "$secs"
  b=$(_thread_cpu_snap "$pid" | sort)
  s1=$(head -1 /proc/stat)
  join <(echo "$a") <(echo "$b") | awk -v hz="$hz" -v s="$secs" '
    { n[$2]++; u[$2] += $5 - $3 }
    END { for (k in u) if (u[k] > 0) printf "  %-18s threads %3d  cpu %6.1f%%\n", k, n[k], 100 * u[k] / hz / s }' |
    sort -k5 -nr
  echo "$s0 $s1" | awk -v hz="$hz" -v s="$secs" -v n="$(nproc)" '{
    b0 = $2 + $3 + $4 + $7 + $8 + $9; b1 = $13 + $14 + $15 + $18 + $19 + $20
    printf "  machine: %.2f of %d cores busy\n", (b1 - b0) / hz / s, n }'
}
