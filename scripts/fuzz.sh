#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (clang, ASan + UBSan), replays every input kept in
# test/fuzz/regressions/TARGET/ (a crash there fails the script before any fuzzing), then runs
# each target for SECONDS (default 60) on a corpus seeded from the test fixtures: models (hostile
# ones too), the inference, training, evaluation and parallel plans ofc makes of them, their
# weights and the safetensors of a checkpoint. A crash leaves its input in build-fuzz/artifacts/
# and fails the script; copy it into test/fuzz/regressions/TARGET/ (test/fuzz/regressions/README.md).
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]      targets: plan onnx safetensors npy idx wire
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(plan onnx safetensors npy idx wire)

# -O1 with line tables, as OSS-Fuzz builds: fast to compile, and enough for the reports.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DOF_FUZZ=ON -DOF_BUILD_TESTS=OFF -DOF_ENABLE_CUDA=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target ofc ofrun $(printf 'fuzz_%s ' "${targets[@]}")

# Inputs that once crashed a target run first, each once: a crash that came back fails here.
status=0
for t in "${targets[@]}"; do
  inputs=()
  for f in test/fuzz/regressions/"$t"/*; do [ -f "$f" ] && inputs+=("$f"); done
  [ ${#inputs[@]} -gt 0 ] || continue
  echo "== fuzz_$t: ${#inputs[@]} regression inputs"
  if ! ASAN_OPTIONS=detect_leaks=0 build-fuzz/test/fuzz/fuzz_$t -runs=1 -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 "${inputs[@]}" >build-fuzz/regressions_$t.log 2>&1; then
    status=1
    tail -40 build-fuzz/regressions_$t.log
  fi
done
[ $status = 0 ] || { echo "fuzz.sh: a regression input crashes again (see above)"; exit 1; }

# Seed corpora from the fixtures: small models, the plans and weights ofc makes of them, arrays.
seeds=build-fuzz/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{plan,onnx,safetensors,npy,idx,wire} build-fuzz/artifacts
for m in test/fixtures/ops/*.onnx test/fixtures/export/*.onnx test/fixtures/grad_ops/*.onnx test/fixtures/delay_chain.onnx \
    test/fixtures/unsupported.onnx; do
  name=$(basename "$m" .onnx)
  cp "$m" "$seeds/onnx/"
  if ASAN_OPTIONS=detect_leaks=0 build-fuzz/cli/ofc "$m" -o "$seeds/plan/$name.ofp" >/dev/null 2>&1; then
    mv "$seeds/plan/$name.safetensors" "$seeds/safetensors/"
  fi
done
# Models ofc refuses (test/fixtures/hostile/): near misses of a valid model.
cp test/fixtures/hostile/*.onnx "$seeds/onnx/"
# Training plans and their evaluation plans, one device and parallel (boxes of weights, boxing
# tasks, accumulators, weight versions per step, runs of copies on 4 data-parallel devices), and
# their weights.
for flags in "" "--optimizer adam" "--micro-batches 2" "--devices 2:cpu --dp 2" "--devices 2:cpu --tp 2" \
    "--devices 2:cpu --pp 2 --micro-batches 2" "--devices 4:cpu --dp 2 --tp 2" "--devices 4:cpu --dp 4"; do
  name=tiny_train$(echo "$flags" | tr -cd 'a-z0-9')
  ASAN_OPTIONS=detect_leaks=0 build-fuzz/cli/ofc test/fixtures/tiny_b16.onnx -o "$seeds/plan/$name.ofp" --train --loss cross_entropy $flags >/dev/null
  mv "$seeds/plan/$name.safetensors" "$seeds/safetensors/"
done
# A checkpoint's safetensors (model and optimizer state): two steps of the token model.
ASAN_OPTIONS=detect_leaks=0 build-fuzz/cli/ofc test/fixtures/lm.onnx -o build-fuzz/lm_train.ofp --train --loss cross_entropy \
  --optimizer adam >/dev/null
rm -rf build-fuzz/lm_ck
ASAN_OPTIONS=detect_leaks=0 build-fuzz/cli/ofrun build-fuzz/lm_train.ofp --data tokens:test/fixtures/lm_corpus.u16 --steps 2 \
  --checkpoint build-fuzz/lm_ck >/dev/null
found=0
for f in build-fuzz/lm_ck/step-*/*.safetensors; do
  [ -f "$f" ] || continue
  cp "$f" "$seeds/safetensors/checkpoint_$(basename "$(dirname "$f")")_$(basename "$f")"
  found=1
done
[ $found = 1 ] || { echo "fuzz.sh: the checkpoint run left no safetensors in build-fuzz/lm_ck"; exit 1; }
cp test/fixtures/ops/*.npy "$seeds/npy/"
# IDX seeds in fuzz_idx's layout (u16 images length, flags, images file, labels file): plain and gzipped.
python3 - "$seeds/idx" <<'PY'
import gzip, struct, sys
images = struct.pack(">IIII", 0x803, 3, 2, 2) + bytes(range(0, 240, 20))
labels = struct.pack(">II", 0x801, 3) + bytes([1, 9, 4])
for name, a, b, flags in [("plain", images, labels, 1), ("gzip", gzip.compress(images), gzip.compress(labels), 0)]:
    open(f"{sys.argv[1]}/{name}", "wb").write(struct.pack("<HB", len(a), flags) + a + b)
PY
# Wire seeds: a ready with its bytes, a free, an end of stream, a stop (fuzz_wire's layout:
# header, u32 payload length, payload), and a bootstrap hello.
python3 - "$seeds/wire" <<'PY'
import struct, sys
def header(kind, flags, fr, ft, tt, regst, slot, piece, seq):
    return struct.pack("<IBBxxiiiii4xqQ", 0x3177666F, kind, flags, fr, ft, tt, regst, slot, piece, seq)
msgs = {"ready": header(1, 1, 0, 0, 1, 0, 1, 3, 3) + struct.pack("<I", 256) + bytes(256),
        "free": header(2, 0, 1, 2, 0, 0, 0, 0, 0) + struct.pack("<I", 0),
        "eos": header(3, 0, 0, 0, 2, 0, 0, 0, 7) + struct.pack("<I", 0),
        "stop": header(4, 0, 1, -1, -1, -1, 0, 0, 0) + struct.pack("<I", 5) + b"boom!"}
hello = b"ofb1" + struct.pack("<II", 1, 2) + struct.pack("<I", 3) + b"tok" + struct.pack("<I", 4) + b"plan" + struct.pack("<I", 2) + b"ad"
msgs["hello"] = hello
for name, b in msgs.items():
    open(f"{sys.argv[1]}/{name}", "wb").write(b)
PY
# The regression inputs seed the corpus too: fuzzing starts from what once broke.
for t in "${targets[@]}"; do
  if [ -d "test/fuzz/regressions/$t" ]; then cp -r "test/fuzz/regressions/$t/." "$seeds/$t/"; fi
done

for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t
  mkdir -p "$corpus"
  echo "== fuzz_$t: ${seconds}s"
  # Leak checking is off: protobuf and CAF keep process-lifetime allocations on purpose.
  if ! ASAN_OPTIONS=detect_leaks=0 build-fuzz/test/fuzz/fuzz_$t "$corpus" "$seeds/$t" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
      -artifact_prefix=build-fuzz/artifacts/"$t"- -print_final_stats=1 2>build-fuzz/fuzz_$t.log; then
    status=1
    tail -40 build-fuzz/fuzz_$t.log
  fi
  grep -E "^Done|stat::number_of_executed_units" build-fuzz/fuzz_$t.log || true
done
exit $status
