// SPDX-License-Identifier: Apache-2.0
// The one error boundary of every tool: of::Error becomes "tool: error: <what and where>",
// anything else "tool: internal error: ...", each one line with a non-zero exit status (2 for
// a usage error, 1 for a failed run).
#pragma once

#include <cstdio>
#include <exception>
#include <stdexcept>

#include "common/error.h"

namespace of::cli {

// A command-line mistake found after parsing (a binding given twice): exit status 2, as for the
// errors the parser finds, so that a script can tell "called wrongly" (2) from "failed" (1).
class UsageError : public of::Error {
 public:
  using of::Error::Error;
};

template <typename Fn>
int guarded_main(const char* tool, Fn&& fn) {
  try {
    return fn();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 2;
  } catch (const of::Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "%s: error: out of memory\n", tool);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: internal error: %s\n", tool, e.what());
    return 70;  // EX_SOFTWARE: a bug of ours, not of the input
  }
}

}  // namespace of::cli
