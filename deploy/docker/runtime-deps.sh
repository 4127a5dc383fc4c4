#!/usr/bin/env bash
# Works out what the runtime image needs for the binaries built in the build stage, so the
# Dockerfile names no versioned library package (libgrpc++1.51t64 & co differ between releases
# and architectures) and the runtime image gets exactly the shared libraries the server links.
#
#   runtime-deps.sh packages BIN...   (build stage) print the apt packages owning BIN's shared
#                                     libraries, one per line, minus those every image has
#   runtime-deps.sh check BIN...      (runtime stage) fail if a shared library of BIN does not
#                                     resolve; the driver libraries are exempt, the NVIDIA
#                                     container toolkit mounts them when the container starts
set -euo pipefail

# Injected by the NVIDIA container toolkit at run time, never part of an image.
readonly DRIVER_LIBS_RE='^(libcuda\.so|libnvidia-ml\.so|libnvidia-ptxjitcompiler\.so)'
# Present in the CUDA runtime base image already (or part of the toolkit under /usr/local/cuda).
readonly BASE_PKGS_RE='^(libc6|libstdc\+\+6|libgcc-s1|cuda-.*|libcublas-.*|libnvjitlink-.*)$'

usage() {
  echo "usage: $0 packages|check BIN..." >&2
  exit 64
}

# Prints "soname path" for each shared library of the given binaries ("soname not-found" when
# the library does not resolve).
libs_of() {
  local bin
  for bin in "$@"; do
    [[ -x "$bin" ]] || { echo "runtime-deps: $bin is not an executable" >&2; exit 66; }
    local out
    if ! out="$(ldd "$bin" 2>&1)"; then
      # A static binary or a script has no shared libraries; anything else is an error.
      grep -q "not a dynamic executable" <<<"$out" && continue
      echo "runtime-deps: ldd $bin failed: $out" >&2
      exit 66
    fi
    awk '
      $2 == "=>" && $3 == "not" { print $1, "not-found"; next }
      $2 == "=>" && $3 ~ /^\//  { print $1, $3 }' <<<"$out"
  done | sort -u
}

cmd="${1:-}"
[[ $# -ge 2 ]] || usage
shift
case "$cmd" in
  packages)
    libs_of "$@" | while read -r soname path; do
      [[ "$soname" =~ $DRIVER_LIBS_RE ]] && continue
      if [[ "$path" == not-found ]]; then
        echo "runtime-deps: $soname does not resolve in the build stage" >&2
        exit 65
      fi
      [[ "$path" == /usr/local/cuda* ]] && continue
      real="$(readlink -f "$path")"
      # dpkg -S prints "pkg:arch: /path"; either the link or its target is the owned file.
      owner="$(dpkg -S "$real" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)"
      if [[ -z "$owner" ]]; then
        echo "runtime-deps: no package owns $path ($soname)" >&2
        exit 65
      fi
      pkg="${owner%%:*}"
      [[ "$pkg" =~ $BASE_PKGS_RE ]] || echo "$pkg"
    done | sort -u
    ;;
  check)
    missing="$(libs_of "$@" | awk '$2 == "not-found" { print $1 }' \
      | grep -Ev "$DRIVER_LIBS_RE" || true)"
    if [[ -n "$missing" ]]; then
      echo "runtime-deps: unresolved shared libraries in the runtime image:" >&2
      echo "$missing" >&2
      exit 65
    fi
    echo "runtime-deps: all shared libraries of $* resolve (driver libraries come from the host)"
    ;;
  *) usage ;;
esac
