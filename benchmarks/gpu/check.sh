#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the GPU machine (the device tool), from the repository root: unpacks the archive
# bundle.sh made, points the loader at the carried libraries and at the machine's own CUDA
# libraries, prints the GPU, runs every CUDA kernel against its CPU twin (one line per test case),
# then times the kernels on the anchors' shapes beside their CPU twins and PyTorch on the same GPU,
# trains the MLP, CNN and small language model on the GPU against the CPU (train_check.py), and
# times training against PyTorch on the same GPU (bench_train.py --device cuda).
# Exit status: the kernel tests' (0 all passed; 77 would mean no device was seen), else the
# training check's.
#   bash benchmarks/gpu/check.sh build/gpu-bundle.tar.xz
set -uo pipefail
archive=${1:?usage: check.sh ARCHIVE}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$archive" || { echo "check.sh: cannot unpack $archive" >&2; exit 1; }
# CUDA 13's cudart and cuBLAS: wherever this machine keeps them (a toolkit, or PyTorch's wheels).
cuda_dirs=$(
  { ldconfig -p 2>/dev/null | awk '/libcublas\.so\.13|libcudart\.so\.13/ {print $NF}'
    find /usr/local /usr/lib /opt -maxdepth 12 \( -name 'libcublas.so.13' -o -name 'libcudart.so.13' \) 2>/dev/null
  } | xargs -r -n1 dirname | sort -u | paste -sd: -)
# Only our two binaries see the carried libraries (Debian's libstdc++, OpenBLAS...): PyTorch below
# keeps the machine's own.
lib_path="$work/bundle/lib${cuda_dirs:+:$cuda_dirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "== GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "(nvidia-smi absent)"
echo "== CUDA libraries from: ${cuda_dirs:-(none found; the loader decides)}"
missing=$(for b in "$work"/bundle/bin/*; do LD_LIBRARY_PATH="$lib_path" ldd "$b"; done | grep "not found" | sort -u)
[ -z "$missing" ] || { echo "check.sh: unresolved libraries:"; echo "$missing"; exit 1; }
# cuBLAS is opened at run time (kernels/cuda/cublas_api.h), so ldd does not see it.
echo "$cuda_dirs" | tr ':' '\n' | while read -r d; do [ -e "$d/libcublas.so.13" ] && echo found; done | grep -q found \
  || echo "check.sh: warning: no libcublas.so.13 found; the loader's defaults will have to find it"
echo "== CUDA kernels against their CPU twins (tolerance per case: atol + rtol*|cpu|, in the test)"
LD_LIBRARY_PATH="$lib_path" "$work/bundle/bin/kernels_cuda_tests" -r compact -d yes
status=$?
echo "== kernels_cuda_tests exit status $status"
echo "== each CUDA kernel against its CPU twin on the anchors' training shapes (median us of one call)"
LD_LIBRARY_PATH="$lib_path" "$work/bundle/bin/of_kernels_bench" 30
echo "== PyTorch on the same GPU, the same rows"
PYTHONUNBUFFERED=1 python3 "$(dirname "$0")/torch_kernels.py" 30
# ofc and ofrun see the carried libraries through wrappers; Python and PyTorch keep the machine's.
mkdir -p "$work/tools"
for tool in ofc ofrun; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$lib_path" "$work/bundle/bin/$tool" > "$work/tools/$tool"
  chmod +x "$work/tools/$tool"
done
echo "== training on the GPU against the same plan on the CPU (losses step by step, saved weights)"
PYTHONUNBUFFERED=1 python3 "$(dirname "$0")/train_check.py" --bin "$work/tools" --steps 20
train_status=$?
echo "== train_check.py exit status $train_status"
echo "== training throughput on the GPU: of against PyTorch eager, same GPU, same run"
PYTHONUNBUFFERED=1 python3 "$(dirname "$0")/../bench_train.py" --device cuda --bin "$work/tools" --models mlp,cnn,gpt --repeats 3 --seconds 2
[ "$status" -eq 0 ] && status=$train_status
exit $status
