#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command; CI runs it on a fresh machine (.ci/run). Sets up the Debian
# packages, then: the Release build and every test; the same suite under ASan + UBSan; each
# libFuzzer target for FUZZ_SECONDS (default 60). OF_QUICK=1 stops after the Release suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage says when it starts (minutes since the start): CI allows 90 minutes in all.
stage() { echo "== $1 (at $((SECONDS / 60))m$((SECONDS % 60))s)"; }
bash scripts/setup.sh
jobs=$(nproc)

stage "Release build and tests"
# The CUDA backend compiles here (no GPU runs it: its tests report themselves skipped).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOF_REQUIRE_CUDA=ON
cmake --build build -j"$jobs"
# On every core; the checks that time themselves or start several processes run alone
# (RUN_SERIAL: test/CMakeLists.txt, test/serial_tests.cmake).
ctest --test-dir build --output-on-failure -j"$jobs"
[ "${OF_QUICK:-0}" = 1 ] && exit 0

stage "ASan + UBSan build and tests"
# -O1 and line tables only (what ASan's reports need): half the compile time of -O2 -g, the
# longest stage of CI on 2 cores.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOF_SANITIZE=address -DOF_ENABLE_CUDA=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG"
cmake --build build-asan -j"$jobs"
# Leaks: protobuf and CAF keep process-lifetime allocations; halt on any other report. Left to the
# Release suite, as most of their time is PyTorch's (not instrumented) or repeats code the rest
# runs: the GPT's parallel plans (minutes under ASan; the MLP's and the zoo's dp2/zero3 cases
# cover the same code), the zoo's train-adamw cases (AdamW runs in its dp2, zero3 and opset cases
# and the unit tests) and resnet50 (resnet18 has its ops).
ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "^gpt_parallel:|^zoo:[^:]+:train-adamw$|^zoo:resnet50:"

stage "Fuzzers"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
stage "done"
