#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Packs what the GPU machine needs to check the CUDA backend into one archive (it is not Debian
# and has none of our libraries; a device call carries at most 64 MiB, and oneDNN plus OpenBLAS
# alone are 76 MB, so they travel xz-compressed): the CUDA kernel tests and benchmark, and every shared library
# it loads except glibc's and CUDA's own (the GPU machine has its driver's CUDA libraries), and
# ofc and ofrun for the training checks (train_check.py) and the benchmark against PyTorch.
#   bash benchmarks/gpu/bundle.sh [BUILD_DIR]     -> BUILD_DIR/gpu-bundle.tar.xz
# Then, from the device tool: run `bash benchmarks/gpu/check.sh build/gpu-bundle.tar.xz` with
# carry ["build/gpu-bundle.tar.xz"].
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
bins=("$build/test/kernels_cuda_tests" "$build/benchmarks/of_kernels_bench" "$build/cli/ofc" "$build/cli/ofrun")
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "bundle.sh: $b is missing: build with the CUDA toolkit (cmake --build $build --target kernels_cuda_tests of_kernels_bench ofc ofrun)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/bin" "$stage/bundle/lib"
cp "${bins[@]}" "$stage/bundle/bin/"
# glibc and the dynamic loader come from the GPU machine; so do CUDA's libraries (cudart, cuBLAS),
# which must match its driver.
for b in "${bins[@]}"; do ldd "$b"; done | awk '$3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libcuda*|libcublas*|libcudart*) continue ;;
  esac
  cp -L "$path" "$stage/bundle/lib/$name"
done
tar -C "$stage" -cJf "$build/gpu-bundle.tar.xz" bundle
ls -la "$build/gpu-bundle.tar.xz" | awk '{printf "bundle.sh: %s, %.1f MiB\n", $9, $5 / 1048576}'
