// SPDX-License-Identifier: Apache-2.0
#include "compiler/compile.h"

#include "compiler/import/onnx_import.h"

namespace of::compiler {

Compilation compile_model(const std::string& model_path, const CompileOptions& options) {
  Compilation c{.graph = import_onnx_file(model_path), .tasks = {}, .options = options};
  build_pipeline(options).run(c);
  return c;
}

}  // namespace of::compiler
