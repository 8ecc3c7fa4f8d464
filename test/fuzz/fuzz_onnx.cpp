// SPDX-License-Identifier: Apache-2.0
// Model bytes -> ONNX import -> the whole pass pipeline (no files written), as ofc does.
#include "common/error.h"
#include "compiler/import/onnx_import.h"
#include "compiler/passes/pass.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    of::compiler::Compilation c{.graph = of::compiler::import_onnx_bytes(data, size, "fuzz.onnx")};
    of::compiler::build_pipeline(c.options).run(c);
  } catch (const of::Error&) {
  }
  return 0;
}
