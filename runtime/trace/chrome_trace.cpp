// SPDX-License-Identifier: Apache-2.0
#include "runtime/trace/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/file_util.h"

namespace of::runtime {

void write_chrome_trace(const std::string& path, const plan::Plan& p,
                        const std::vector<std::unique_ptr<TaskState>>& tasks) {
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const auto& t : tasks)
    for (const ActRecord& r : t->trace()) t0 = std::min(t0, r.begin_ns);
  // Streamed by hand: a trace holds pieces x tasks slices, too many for a JSON DOM.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  for (const auto& t : tasks) {
    const plan::Task& task = p.tasks[size_t(t->id())];
    std::string label = nlohmann::json(fmt::format("{} {}", task.id, task.name)).dump();
    sep();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":0,\"tid\":{},\"args\":{{\"name\":{}}}}}", task.id, label);
    sep();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":0,\"tid\":{},\"args\":{{\"sort_index\":{}}}}}", task.id, task.id);
    std::string name = nlohmann::json(fmt::format("{} {}", task.id, task.op)).dump();
    for (const ActRecord& r : t->trace()) {
      sep();
      out += fmt::format("{{\"ph\":\"X\",\"name\":{},\"pid\":0,\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},\"args\":{{\"piece\":{}}}}}",
                         name, task.id, double(r.begin_ns - t0) / 1e3, double(r.end_ns - r.begin_ns) / 1e3, r.piece);
    }
  }
  out += "\n]}\n";
  write_file_atomic(path, out.data(), out.size());
}

}  // namespace of::runtime
