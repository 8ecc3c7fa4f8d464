#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages `of` builds, tests and benchmarks with. Idempotent.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libcaf-dev libflatbuffers-dev flatbuffers-compiler libcli11-dev libspdlog-dev libfmt-dev
  catch2 libucx-dev libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev libopenblas-dev nlohmann-json3-dev zlib1g-dev
  python3-torch python3-torchvision python3-onnx python3-numpy graphviz
)
# Multi-process runs: ucx-utils has ucx_perftest (benchmarks/bench_transport.py's reference),
# openmpi-bin the mpirun that test/e2e/ranks_check.py launches ranks with.
packages+=(ucx-utils openmpi-bin)
# Training data for the README's main command (issue 3); small and Debian-packaged.
packages+=(dataset-fashion-mnist)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
