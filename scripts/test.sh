#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Set up (Debian packages), build (Release, ccache, Ninja) and run every test. The README's test
# command; CI runs it on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
# Serially: the streaming test measures wall time.
ctest --test-dir build --output-on-failure
