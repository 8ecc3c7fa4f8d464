// SPDX-License-Identifier: Apache-2.0
// The fixture MLP (test/fixtures/mlp.onnx: 784-1024-1024-10, batch 64) compiled for training on
// dp x tp x pp devices of `ranks` ranks, as the parallel pass tests compile it.
#pragma once

#include <string>

#include "compiler/compile.h"

namespace of::compiler {

inline Compilation compile_fixture_mlp(const std::string& optimizer, int32_t ranks, int32_t dp, int32_t tp, int32_t pp) {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.optimizer = optimizer;
  o.ranks = ranks;
  o.devices = dp * tp * pp;
  o.dp = dp;
  o.tp = tp;
  o.pp = pp;
  o.micro_batches = pp > 1 ? pp : 1;
  return compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);
}

}  // namespace of::compiler
