#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's main command: set up, build, then train the PyTorch-exported MLP (784-1024-1024-10)
# on Fashion-MNIST on the CPU (batch 64, SGD lr 0.01 momentum 0.9, shuffled each epoch) and print
# its test accuracy. EPOCHS=N changes the 5 epochs; the checkpoint lands in build/demo/ckpt.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target ofc ofrun ofdump
out=build/demo
mkdir -p "$out"
build/cli/ofc test/fixtures/mlp.onnx -o "$out/train.ofp" --train --loss cross_entropy --label label \
  --optimizer sgd:lr=0.01,momentum=0.9
build/cli/ofdump "$out/train.ofp" | head -9
rm -rf "$out/ckpt"
build/cli/ofrun "$out/train.ofp" --data idx:/usr/share/datasets/fashion-mnist --epochs "${EPOCHS:-5}" --seed 1 \
  --checkpoint "$out/ckpt" --metrics "$out/metrics.jsonl" --log-every 937
build/cli/ofrun "$out/train.ofp" --data idx:/usr/share/datasets/fashion-mnist --eval --checkpoint "$out/ckpt"
echo "metrics: $out/metrics.jsonl; PyTorch-loadable weights: $out/ckpt/$(cat "$out/ckpt/latest")/model.safetensors"
