#!/usr/bin/env bash
# Runs the command blocks of README.md as a user would type them, on the CPU backend: every
# ```sh block, in order, in one bash session (variables and background servers carry over from
# block to block), failing on the first command that exits non-zero. A block is skipped when the
# paragraph right above it says "Not run by the README test" (visible in the rendered README,
# e.g. GPU-only commands). The blocks run from a directory that mirrors the repository root,
# with build/ pointing at BUILD_DIR (the tree that built gemm_server, e.g. build-cpu), and with
# the ports they name (50051-50059, 9464) changed to free loopback ports, so parallel tests
# cannot collide.
# Also checks that the README stays under 150 lines. Exit 77 (skip) without a README.
# Usage: readme_commands_test.sh REPO_ROOT BUILD_DIR   (DRY_RUN=1: print the commands, run nothing)
set -uo pipefail
root=$(cd "${1:?usage: readme_commands_test.sh REPO_ROOT BUILD_DIR}" && pwd)
build=$(cd "${2:?usage: readme_commands_test.sh REPO_ROOT BUILD_DIR}" && pwd)
readme=$root/README.md
[ -f "$readme" ] || { echo "readme_commands_test: no $readme"; exit 77; }
lines=$(wc -l <"$readme")
[ "$lines" -lt 150 ] || { echo "readme_commands_test: README.md has $lines lines (limit 150)"; exit 1; }

work=$(mktemp -d)
cleanup() {
  [ -n "${pgid:-}" ] && kill -TERM -- "-$pgid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# The blocks run from a directory that looks like the repository root, with build/ the build.
for entry in "$root"/* "$root"/.[!.]*; do
  name=$(basename "$entry")
  case $name in build | build-* | .git) continue ;; esac
  ln -s "$entry" "$work/$name"
done
ln -s "$build" "$work/build"

# The runnable blocks, in order; the skipped ones named on stderr.
awk -v script="$work/readme.sh" '
  BEGIN { print "trap '\''echo \"README command failed (exit $?): $BASH_COMMAND\" >&2'\'' ERR" > script }
  in_block && /^```/ { in_block = 0; next }
  in_block { if (!skip) print > script; next }
  /^```sh[[:space:]]*$/ {
    in_block = 1; blocks++
    above = (para != "" ? para : last)  # the paragraph right above the fence
    skip = (above ~ /Not run by the README test/)
    if (skip) { skipped++; printf "skipped block %d (line %d):%s\n", blocks, NR, above > "/dev/stderr" }
    else { runnable++; printf "\n# ---- README.md block %d, line %d\n", blocks, NR > script }
    para = ""; last = ""; next
  }
  /^```/ { para = ""; last = ""; next }  # other fenced blocks are not paragraphs
  /^[[:space:]]*$/ { if (para != "") last = para; para = ""; next }
  { para = para " " $0 }
  END { printf "README blocks: %d, run %d, skipped %d\n", blocks, runnable, skipped > "/dev/stderr"
        exit (runnable > 0 ? 0 : 1) }
' "$readme" || { echo "readme_commands_test: no runnable sh block in README.md"; exit 1; }

# Free ports for the ones the README names.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
for port in 50051 50052 50053 50054 50055 50056 50057 50058 50059 9464; do
  grep -q "\b$port\b" "$work/readme.sh" || continue
  sed -i "s/\b$port\b/$(free_port)/g" "$work/readme.sh"
done

echo "---- running (from $work):"
cat "$work/readme.sh"
echo "----"
[ -z "${DRY_RUN:-}" ] || exit 0
cd "$work" || exit 2
setsid timeout 240 bash -eo pipefail "$work/readme.sh" </dev/null &
pgid=$!
wait "$pgid"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "readme_commands_test: FAIL (exit $rc)"
  exit 1
fi
echo "readme_commands_test: OK"
