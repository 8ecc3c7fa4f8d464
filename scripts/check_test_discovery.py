#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Fails unless ctest has one entry for every test case each Catch2 binary lists.

  check_test_discovery.py BUILD_DIR BINARY [BINARY ...]

Why: catch_discover_tests passes names through CMake lists, so a name with `;` splits into two
entries and one with an unbalanced `[` swallows the names after it; their filters then match
nothing, Catch2 reports "No tests ran" and ctest counts a pass. The suites also run with
`-w NoTests` (an empty match fails), and this check names every case that would be lost.
"""
import os
import re
import subprocess
import sys

SERIAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "serial_tests.cmake")


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build, binaries = sys.argv[1], sys.argv[2:]
    listed = subprocess.run(["ctest", "--test-dir", build, "-N"], capture_output=True, text=True, check=True).stdout
    registered = set()
    for line in listed.splitlines():
        # "  Test  #12: kernels_tests:gemm: ..." -> "kernels_tests:gemm: ..." (CMake drops the
        # space that ends TEST_PREFIX)
        head, sep, name = line.partition(": ")
        if sep and head.strip().startswith("Test"):
            registered.add(name)
    missing, bad, failed = [], [], []
    total = 0
    for binary in binaries:
        suite = binary.rsplit("/", 1)[-1]
        try:
            run = subprocess.run([binary, "--list-test-names-only"], capture_output=True, text=True)
        except OSError as e:  # a binary that is not there lists nothing: that is no pass
            run = subprocess.CompletedProcess([binary], -1, "", str(e))
        out = run.stdout
        # Catch2 v2 exits with the number of names it listed (mod 256): only a crash (a negative
        # status) or an empty list says the listing failed.
        if run.returncode < 0 or not out.strip():
            failed.append(f"{suite}: listing its test cases failed (exit {run.returncode}): {run.stderr.strip()[-200:]}")
        for case in out.splitlines():
            if not case.strip():
                continue
            total += 1
            if any(c in case for c in "[];"):
                bad.append(f"{suite}: {case}")
            if f"{suite}:{case}" not in registered and f"{suite}: {case}" not in registered:
                missing.append(f"{suite}: {case}")
    # test/serial_tests.cmake gives discovered cases RUN_SERIAL; ctest ignores a name it lacks.
    with open(SERIAL) as f:
        serial = re.findall(r'"([^"]+)"', f.read().split("set(of_serial_tests", 1)[1].split(")", 1)[0])
    unknown = [n for n in serial if n not in registered]
    for name in unknown:
        print(f"check_test_discovery: test/serial_tests.cmake names no ctest entry (it would run beside others): {name}")
    for name in bad:
        print(f"check_test_discovery: test name has '[', ']' or ';', which discovery mangles: {name}")
    for name in missing:
        print(f"check_test_discovery: not registered with ctest (it would never run): {name}")
    for line in failed:
        print(f"check_test_discovery: {line}")
    if bad or missing or failed or unknown or not serial:
        return 1
    print(f"check_test_discovery: all {total} test cases of {len(binaries)} binaries are ctest entries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
