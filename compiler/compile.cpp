// SPDX-License-Identifier: Apache-2.0
#include "compiler/compile.h"

#include "common/error.h"
#include "compiler/import/onnx_import.h"

namespace of::compiler {

namespace {

Compilation compile_to(const std::string& model_path, const CompileOptions& options, const std::string& stop_before) {
  Compilation c{.graph = import_onnx_file(model_path), .logical = {}, .parallel = {}, .tasks = {}, .options = options};
  c.graph.training = options.train || options.gradients;
  c.graph.train_folded = options.folded == "train";
  build_pipeline(options).run(c, stop_before);
  return c;
}

}  // namespace

Compilation compile_model(const std::string& model_path, const CompileOptions& options) { return compile_to(model_path, options, {}); }

Compilation compile_before_parallelize(const std::string& model_path, const CompileOptions& options) {
  return compile_to(model_path, options, "parallelize");
}

uint64_t parse_bytes(const std::string& text, const std::string& option) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string unit = text.substr(end);
  const std::pair<const char*, double> units[] = {{"", 1},          {"B", 1},         {"KB", 1e3},  {"MB", 1e6},  {"GB", 1e9},
                                                  {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const auto& [name, scale] : units)
    if (end > 0 && unit == name && value > 0 && value * scale < 1.8e19) return uint64_t(value * scale);
  fail({.field = option}, "'{}': expected a positive size such as 512MiB or 16GB", text);
}

DeviceSpec parse_devices(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string count = spec.substr(0, colon), kind = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind != "cpu" && kind != "cuda") fail({.field = "--devices"}, "'{}': expected N:cpu, RxD:cpu, N:cuda or RxD:cuda", spec);
  auto number = [&](const std::string& digits) {
    int64_t n = 0;
    for (char ch : digits) {
      if (ch < '0' || ch > '9' || n > 4096) n = -1;
      if (n < 0) break;
      n = n * 10 + (ch - '0');
    }
    if (n < 1 || n > 4096)
      fail({.field = "--devices"}, "'{}': expected N:{} or RxD:{} (R ranks of D devices) with numbers in [1, 4096]", spec, kind, kind);
    return n;
  };
  const auto x = count.find('x');
  const int64_t ranks = x == std::string::npos ? 1 : number(count.substr(0, x));
  const int64_t n = ranks * number(x == std::string::npos ? count : count.substr(x + 1));
  // Between ranks, an all-reduce (the gradients of dp, also over dp x tp) halves and doubles
  // across ranks pairwise (boxing_route's tree route), so a plan grows with R log R: the GPT over
  // 128x8 devices (dp 1024, batch 1024) is 1.4M tasks, a 0.88 GB plan, 137 s of ofc. Within a rank, each
  // device's collective task lists every peer's register: a rank of 128 devices is a 408 MB plan.
  // Other conversions between ranks (all-to-alls, ZeRO's gathers) are still point to point.
  if (n > kMaxDevices)
    fail({.field = "--devices"}, "'{}': at most {} devices per plan for now", spec, kMaxDevices);
  if (n / ranks > kMaxDevicesPerRank)
    fail({.field = "--devices"}, "'{}': at most {} devices per rank for now (a rank's collectives grow with the square of its devices)",
         spec, kMaxDevicesPerRank);
  return DeviceSpec{.ranks = int32_t(ranks), .devices = int32_t(n), .kind = int8_t(kind == "cuda" ? 1 : 0)};
}

}  // namespace of::compiler
