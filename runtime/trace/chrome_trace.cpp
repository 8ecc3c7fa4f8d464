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
    if (t)
      for (const ActRecord& r : t->trace()) t0 = std::min(t0, r.begin_ns);
  // Streamed by hand: a trace holds pieces x tasks slices, too many for a JSON DOM.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  // One process row per rank (a multi-process run writes this rank's tasks only).
  std::vector<int32_t> ranks;
  for (const auto& t : tasks)
    if (t) {
      const int32_t rank = p.devices[size_t(p.tasks[size_t(t->id())].device)].rank;
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
    }
  for (int32_t rank : ranks) {
    sep();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"rank {}\"}}}}", rank, rank);
  }
  for (const auto& t : tasks) {
    if (!t) continue;
    const plan::Task& task = p.tasks[size_t(t->id())];
    const int32_t pid = p.devices[size_t(task.device)].rank;
    // A row per task (a CPU device runs several at once), named by its device first and sorted
    // device by device, so that each device's tasks sit together.
    const plan::DeviceRef& device = p.devices[size_t(task.device)];
    std::string label = nlohmann::json(fmt::format("{}:{} · {} {}", device.kind == 0 ? "cpu" : "cuda", device.index, task.id, task.name)).dump();
    sep();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":{}}}}}", pid, task.id, label);
    sep();
    out += fmt::format("{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_index\":{}}}}}", pid, task.id,
                       int64_t(device.index) * int64_t(p.tasks.size()) + task.id);
    std::string name = nlohmann::json(fmt::format("{} {}", task.id, task.op)).dump();
    for (const ActRecord& r : t->trace()) {
      sep();
      out += fmt::format("{{\"ph\":\"X\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},\"args\":{{\"piece\":{}}}}}",
                         name, pid, task.id, double(r.begin_ns - t0) / 1e3, double(r.end_ns - r.begin_ns) / 1e3, r.piece);
    }
  }
  out += "\n]}\n";
  write_file_atomic(path, out.data(), out.size());
}

}  // namespace of::runtime
