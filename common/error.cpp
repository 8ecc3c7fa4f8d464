// SPDX-License-Identifier: Apache-2.0
// Formats of::Error messages: "file: node 'n' (Op): rank r: field: message".
#include "common/error.h"

namespace of {

std::string Error::format(const Where& w, const std::string& message) {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (part.empty()) return;
    out += part;
    out += ": ";
  };
  add(w.file);
  if (!w.node.empty()) {
    add(w.op.empty() ? fmt::format("node '{}'", w.node) : fmt::format("node '{}' ({})", w.node, w.op));
  } else if (!w.op.empty()) {
    add(fmt::format("op {}", w.op));
  }
  if (w.rank >= 0) add(fmt::format("rank {}", w.rank));
  add(w.field);
  return out + message;
}

void internal_error(const char* file, int line, const std::string& message) {
  throw std::logic_error(fmt::format("internal error at {}:{}: {}", file, line, message));
}

}  // namespace of
