// SPDX-License-Identifier: Apache-2.0
// Catch2's main, alone in its translation unit so that it compiles once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
