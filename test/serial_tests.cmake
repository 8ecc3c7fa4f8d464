# SPDX-License-Identifier: Apache-2.0
# Read by ctest after the discovered Catch2 tests (TEST_INCLUDE_FILES, appended after theirs):
# the discovered test cases that must run alone under `ctest -j N` (scripts/test.sh runs the
# suite on every core). The streaming check times 20 ms delay stages against wall-clock bounds.
# ctest ignores properties given to a name it does not know: scripts/check_test_discovery.py
# fails for a name here that is not a test.
set(of_serial_tests
  "e2e_tests:streaming: 4 delay stages overlap with 2 slots and not with 1")
set_tests_properties(${of_serial_tests} PROPERTIES RUN_SERIAL TRUE)
