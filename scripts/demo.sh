#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main command: set up, build, then compile the PyTorch-exported MLP and stream
# 1000 pieces through it on CPU actors, checking the first piece against PyTorch's output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target ofc ofrun ofdump
out=build/demo
mkdir -p "$out"
build/cli/ofc test/fixtures/mlp.onnx -o "$out/mlp.ofp"
build/cli/ofdump "$out/mlp.ofp" | head -8
build/cli/ofrun "$out/mlp.ofp" --input input=test/fixtures/mlp_input.npy --output logits="$out/logits.npy" \
  --pieces 1000 --trace "$out/trace.json"
/usr/bin/python3 - "$out/logits.npy" test/fixtures/mlp_output.npy <<'PY'
import sys, numpy as np
got, want = np.load(sys.argv[1])[:64], np.load(sys.argv[2])
print(f"max relative error vs PyTorch: {np.abs(got - want).max() / np.abs(want).max():.2e}")
PY
echo "trace: $out/trace.json (open in https://ui.perfetto.dev or chrome://tracing)"
