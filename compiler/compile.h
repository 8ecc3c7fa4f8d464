// SPDX-License-Identifier: Apache-2.0
// ofc's library entry: model file in, plan and weights files out.
#pragma once

#include <string>

#include "compiler/passes/pass.h"

namespace of::compiler {

// Imports the model and runs the pass pipeline; throws of::Error for bad input.
Compilation compile_model(const std::string& model_path, const CompileOptions& options);
// The passes before parallelize only: the graph every split of the devices starts from.
Compilation compile_before_parallelize(const std::string& model_path, const CompileOptions& options);

// Within a rank each device's collective task lists every peer's register (plans grow with the
// square of a rank's devices); across ranks, all-reduces go by recursive halving and doubling
// (boxing_route), so plans grow with R log R. The total is what has been measured (bench_compile).
inline constexpr int64_t kMaxDevices = 1024;
inline constexpr int64_t kMaxDevicesPerRank = 64;

// --devices: "N:KIND" (N devices on one rank) or "RxD:KIND" (R ranks of D devices each), KIND
// cpu or cuda.
struct DeviceSpec {
  int32_t ranks = 1;
  int32_t devices = 1;  // in all: ranks x devices per rank, at most kMaxDevices (kMaxDevicesPerRank per rank)
  int8_t kind = 0;      // plan::DeviceRef's kind: 0 cpu, 1 cuda
};
// Fails naming --devices for anything else.
DeviceSpec parse_devices(const std::string& spec);

// "512MiB", "16GB", "1000000" -> bytes; fails naming `option` for anything else.
uint64_t parse_bytes(const std::string& text, const std::string& option);

}  // namespace of::compiler
