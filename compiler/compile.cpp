// SPDX-License-Identifier: Apache-2.0
#include "compiler/compile.h"

#include "common/error.h"
#include "compiler/import/onnx_import.h"

namespace of::compiler {

Compilation compile_model(const std::string& model_path, const CompileOptions& options) {
  Compilation c{.graph = import_onnx_file(model_path), .logical = {}, .parallel = {}, .tasks = {}, .options = options};
  build_pipeline(options).run(c);
  return c;
}

int32_t parse_devices(const std::string& spec) {
  const auto colon = spec.find(':');
  const std::string count = spec.substr(0, colon), kind = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind != "cpu") fail({.field = "--devices"}, "'{}': expected N:cpu (only CPU devices so far)", spec);
  int64_t n = 0;
  for (char ch : count) {
    if (ch < '0' || ch > '9' || n > 4096) fail({.field = "--devices"}, "'{}': expected N:cpu with 1 <= N <= 4096", spec);
    n = n * 10 + (ch - '0');
  }
  if (n < 1 || n > 4096) fail({.field = "--devices"}, "'{}': expected N:cpu with 1 <= N <= 4096", spec);
  return int32_t(n);
}

}  // namespace of::compiler
