// SPDX-License-Identifier: Apache-2.0
// Model bytes -> ONNX import -> the whole pass pipeline (no files written), as ofc does: once for
// inference, then once as a training plan (autodiff, add-optimizer and, for some inputs,
// parallelize), with options picked from the input's last byte so that a crash replays.
#include <string>

#include "common/error.h"
#include "compiler/import/onnx_import.h"
#include "compiler/passes/pass.h"

namespace {

struct TrainConfig {
  const char* loss;
  const char* optimizer;
  int32_t devices, dp, tp, pp, micro_batches;
};

// As `ofc --train --loss L --optimizer O [--devices N:cpu --dp/--tp/--pp K] [--micro-batches M]`.
constexpr TrainConfig kTrain[] = {
    {"cross_entropy", "sgd:lr=0.01,momentum=0.9", 1, 1, 1, 1, 1},
    {"mse", "adam", 1, 1, 1, 1, 2},
    {"cross_entropy", "adamw:weight_decay=0.1", 2, 2, 1, 1, 1},
    {"cross_entropy", "sgd:lr=0.1", 2, 1, 2, 1, 1},
    {"mse", "sgd:lr=0.01", 2, 1, 1, 2, 2},
};

void compile(const of::compiler::Graph& g, const of::compiler::CompileOptions& options) {
  try {
    of::compiler::Compilation c{.graph = g, .logical = {}, .parallel = {}, .tasks = {}, .options = options};
    c.graph.training = options.train || options.gradients;
    of::compiler::build_pipeline(c.options).run(c);
  } catch (const of::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  of::compiler::Graph g;
  try {
    g = of::compiler::import_onnx_bytes(data, size, "fuzz.onnx");
  } catch (const of::Error&) {
    return 0;
  }
  compile(g, {});
  const TrainConfig& t = kTrain[data[size - 1] % (sizeof kTrain / sizeof kTrain[0])];  // size > 0: it imported
  of::compiler::CompileOptions train;
  train.loss = t.loss;
  train.train = true;
  train.optimizer = t.optimizer;
  train.devices = t.devices;
  train.dp = t.dp;
  train.tp = t.tp;
  train.pp = t.pp;
  train.micro_batches = t.micro_batches;
  train.folded = "train";  // the exporter's folded initializers train too (else most exports are refused)
  compile(g, train);
  return 0;
}
