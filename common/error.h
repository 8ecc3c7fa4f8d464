// SPDX-License-Identifier: Apache-2.0
// The one error type users see (of::Error: what and where, one line) and the internal-invariant
// check OF_ASSERT, which reports "internal error at file:line" instead of a user-facing cause.
#pragma once

#include <fmt/core.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace of {

// Where a failure happened. Empty fields are omitted from the message.
struct Where {
  std::string file;   // model, plan, data or checkpoint path
  std::string node;   // graph node or task name
  std::string op;     // operator type
  int rank = -1;      // -1: not rank-specific
  std::string field;  // e.g. "tasks[17].inputs[0]"
};

class Error : public std::runtime_error {
 public:
  Error(Where where, const std::string& message)
      : std::runtime_error(format(where, message)), where_(std::move(where)) {}
  explicit Error(const std::string& message) : Error(Where{}, message) {}

  const Where& where() const { return where_; }

 private:
  static std::string format(const Where& w, const std::string& message);
  Where where_;
};

// Throws of::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(Where where, fmt::format_string<Args...> f, Args&&... args) {
  throw Error(std::move(where), fmt::format(f, std::forward<Args>(args)...));
}

[[noreturn]] void internal_error(const char* file, int line, const std::string& message);

}  // namespace of

#define OF_ASSERT(cond, msg)                                                   \
  do {                                                                         \
    if (!(cond)) ::of::internal_error(__FILE__, __LINE__, std::string(msg));   \
  } while (0)
