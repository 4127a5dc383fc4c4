#!/usr/bin/env bash
# Installs the Debian 12 packages gemm-service builds and tests with. Does nothing when they are
# already installed. CUDA is optional: when /usr/local/cuda/bin/nvcc exists the GPU code is built too.
# clang 14 with its runtimes (libFuzzer, sanitizers) and llvm-symbolizer build and run the fuzz
# targets (scripts/fuzz.sh); GCC's sanitizer runtimes come with build-essential.
set -euo pipefail
pkgs=(
  build-essential cmake ninja-build pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev prometheus-cpp-dev libopenblas-dev libgoogle-perftools-dev
  python3-grpcio python3-grpc-tools python3-numpy python3-venv python3-setuptools python3-wheel
  python3-pip universal-ctags yamllint
  clang-14 libclang-rt-14-dev llvm-14
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#pkgs[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
