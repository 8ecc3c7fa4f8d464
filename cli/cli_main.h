// SPDX-License-Identifier: Apache-2.0
// The one error boundary of every tool: of::Error becomes "tool: error: <what and where>",
// anything else "tool: internal error: ...", each one line with a non-zero exit status.
#pragma once

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "common/error.h"

namespace of::cli {

template <typename Fn>
int guarded_main(const char* tool, Fn&& fn) {
  try {
    return fn();
  } catch (const of::Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, e.what());
    return 2;
  }
}

}  // namespace of::cli
