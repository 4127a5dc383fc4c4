# syntax=docker/dockerfile:1
# gemm-server container image: multi-stage, multi-arch (linux/amd64 for H100/H200 nodes,
# linux/arm64 for GB200's Grace CPUs). Build and deploy steps: docs/deploy.md.
#
#   docker buildx build --platform linux/amd64,linux/arm64 -t REGISTRY/gemm-server:TAG --push .
#
# The build stage runs the same scripts CI runs (scripts/install_deps.sh, scripts/build.sh), so a
# change that breaks the image build breaks CI first. The kernels are compiled for sm_90a (Hopper)
# and sm_100a (Blackwell) and the build fails if either is missing from the binary.

ARG CUDA_VERSION=13.0.2
ARG UBUNTU_VERSION=24.04

# ---------------------------------------------------------------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION} AS build

# CMake preset passed to scripts/build.sh and the build directory it writes; GEMM_CMAKE_ARGS are
# extra configure arguments (e.g. -DGEMM_BUILD_TESTS=OFF for a faster image build).
ARG BUILD_PRESET=default
ARG BUILD_DIR=build
ARG GEMM_CMAKE_ARGS=""
# 1 runs scripts/test.sh (unit + loopback integration tests, CPU backend) inside the build.
ARG GEMM_RUN_TESTS=0
# GPU architectures the server binary must carry code for (empty: no check).
ARG GEMM_REQUIRE_SM="90a 100a"
# Client tools shipped next to the server when the build produced them (in-cluster load tests).
ARG GEMM_IMAGE_TOOLS="gemm_client gemm_loadgen gemm_bench"

ENV DEBIAN_FRONTEND=noninteractive
# Architectures for CUDA targets that do not set their own (the kernel library sets 90a;100a).
ENV CUDAARCHS="90a;100a"
WORKDIR /src

# Dependencies first, in their own layer: it is rebuilt only when the script changes.
COPY scripts/install_deps.sh scripts/install_deps.sh
RUN bash scripts/install_deps.sh && rm -rf /var/lib/apt/lists/*

COPY . .
# GEMM_CMAKE_ARGS unquoted on purpose: it is a list of arguments.
RUN bash scripts/build.sh "${BUILD_PRESET}" ${GEMM_CMAKE_ARGS}
RUN if [ "${GEMM_RUN_TESTS}" = "1" ]; then bash scripts/test.sh; fi

# Fail the image build when a fat binary lacks an architecture (a kernel file dropped from
# the build, a CMake change that narrowed CUDA_ARCHITECTURES): the server, and gemm_qualify, the
# kernel qualification child the server runs before serving (its own build of the kernels).
RUN set -eu; \
    if [ -n "${GEMM_REQUIRE_SM}" ]; then \
      for bin in gemm_server gemm_qualify; do \
        elfs="$(cuobjdump --list-elf "${BUILD_DIR}/server/${bin}")"; \
        for sm in ${GEMM_REQUIRE_SM}; do \
          echo "${elfs}" | grep -Eq "sm_${sm}([^0-9a-z]|\$)" \
            || { echo "${bin} carries no sm_${sm} code" >&2; exit 1; }; \
        done; \
      done; \
    fi

# Stage what the runtime image gets: the server, gemm_qualify next to it (where the server looks
# for it by default; required in a CUDA build), the tools, the entrypoint, and the list of apt
# packages that own the binaries' shared libraries (no versioned package names in this file).
RUN set -eu; \
    mkdir -p /stage/bin /stage/share; \
    install -m 0755 "${BUILD_DIR}/server/gemm_server" /stage/bin/; \
    if [ -x "${BUILD_DIR}/server/gemm_qualify" ]; then \
      install -m 0755 "${BUILD_DIR}/server/gemm_qualify" /stage/bin/; \
    elif [ -n "${GEMM_REQUIRE_SM}" ]; then \
      echo "the CUDA build produced no gemm_qualify" >&2; exit 1; \
    fi; \
    for tool in ${GEMM_IMAGE_TOOLS}; do \
      found="$(find "${BUILD_DIR}" -type f -name "${tool}" -perm -u+x | head -n 1)"; \
      if [ -n "${found}" ]; then install -m 0755 "${found}" /stage/bin/; fi; \
    done; \
    if [ -f /stage/bin/gemm_bench ] && [ -d bench/shapes ]; then \
      mkdir -p /stage/share/bench && cp -r bench/shapes /stage/share/bench/; \
    fi; \
    install -m 0755 deploy/docker/entrypoint.sh deploy/docker/runtime-deps.sh /stage/bin/; \
    bash deploy/docker/runtime-deps.sh packages /stage/bin/gemm_* \
      > /stage/share/runtime-packages.txt; \
    cat /stage/share/runtime-packages.txt

# ---------------------------------------------------------------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION} AS runtime

ARG VERSION=dev
LABEL org.opencontainers.image.title="gemm-server" \
      org.opencontainers.image.description="gRPC service multiplying BF16 matrices on NVIDIA GPUs" \
      org.opencontainers.image.version="${VERSION}"

ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /stage/ /opt/gemm/
RUN set -eu; \
    apt-get update; \
    xargs -r -a /opt/gemm/share/runtime-packages.txt \
      apt-get install -y --no-install-recommends; \
    rm -rf /var/lib/apt/lists/*; \
    /opt/gemm/bin/runtime-deps.sh check /opt/gemm/bin/gemm_*; \
    groupadd --system --gid 10001 gemm; \
    useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gemm

# The NVIDIA container toolkit mounts the driver; compute is all the server needs (utility gives
# nvidia-smi for debugging). CUDA's JIT cache goes to /tmp: the root filesystem is read-only in
# the Kubernetes manifests.
ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    CUDA_CACHE_PATH=/tmp/cuda-cache \
    PATH=/opt/gemm/bin:${PATH}

# Numeric so that Kubernetes' runAsNonRoot can verify it.
USER 10001:10001
WORKDIR /tmp

# gRPC (--port) and Prometheus /metrics (--metrics_port): the server's flag defaults.
# tests/deploy/check_deploy.py compares these with `gemm_server --helpfull`.
EXPOSE 50051/tcp 9464/tcp

# gemm_server drains on SIGTERM for --drain_timeout_s (default 30 s): give `docker stop` more
# time than that (docker stop -t 45); Kubernetes uses terminationGracePeriodSeconds.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/opt/gemm/bin/entrypoint.sh"]
