#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command; CI runs it on a fresh machine (.ci/run). Sets up the Debian
# packages, then: the Release build and every test; the same suite under ASan + UBSan; each
# libFuzzer target for FUZZ_SECONDS (default 60). OF_QUICK=1 stops after the Release suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

echo "== Release build and tests"
# The CUDA backend compiles here (no GPU runs it: its tests report themselves skipped).
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOF_REQUIRE_CUDA=ON
cmake --build build -j"$jobs"
# On every core; the checks that time themselves or start several processes run alone
# (RUN_SERIAL: test/CMakeLists.txt, test/serial_tests.cmake).
ctest --test-dir build --output-on-failure -j"$jobs"
[ "${OF_QUICK:-0}" = 1 ] && exit 0

echo "== ASan + UBSan build and tests"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOF_SANITIZE=address -DOF_ENABLE_CUDA=OFF
cmake --build build-asan -j"$jobs"
# Leaks: protobuf and CAF keep process-lifetime allocations; halt on any other report. The GPT's
# parallel plans (minutes under ASan) are left to the Release suite; the MLP's cover the same code.
ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "gpt_parallel:parallel"

echo "== Fuzzers"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
