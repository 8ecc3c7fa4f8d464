// SPDX-License-Identifier: Apache-2.0
// split-batch-norm on a PyTorch export (Linear -> BatchNorm1d -> ReLU -> Linear, train mode): the
// training BatchNorm becomes batch_norm_stats then batch_norm_apply, the ReLU fuses into the
// apply, and the backward pass and the running-statistics update read the statistics' register,
// never the normalized activation's: so that register is not kept for the backward pass.
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/compile.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

Compilation compile_bn_mlp(int32_t dp) {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.optimizer = "sgd";
  o.devices = dp;
  o.dp = dp;
  return compile_model(fixture("export/bn_mlp_train.onnx"), o);
}

const Task* producer_of(const TaskGraph& tg, RegstId r) { return &tg.tasks[size_t(tg.regsts[size_t(r)].producer)]; }

}  // namespace

TEST_CASE("split batch norm: the training BatchNorm is stats then apply, its ReLU fused into the apply", "[compiler]") {
  for (int32_t dp : {1, 2}) {
    INFO("dp " << dp);
    const Compilation c = compile_bn_mlp(dp);
    const TaskGraph& tg = c.tasks;
    size_t stats = 0, apply = 0, relus = 0;
    for (const Task& t : tg.tasks) {
      CHECK(t.kernel != "batch_norm_train");
      stats += t.kernel == "batch_norm_stats";
      relus += t.kernel == "relu";
      if (t.kernel != "batch_norm_apply") continue;
      ++apply;
      CHECK(t.attrs.get_str("activation", "") == "relu");
      // Its register is read forward only: by the second Linear and by the ReLU's gradient,
      // never by BatchNorm's gradient or its running-statistics update.
      for (TaskId reader : tg.regsts[size_t(t.out_regsts[0])].consumers) {
        const std::string& k = tg.tasks[size_t(reader)].kernel;
        CHECK(k != "batch_norm_train_grad");
        CHECK(k != "batch_norm_stats_update");
      }
    }
    CHECK(stats == size_t(dp));
    CHECK(apply == size_t(dp));
    CHECK(relus == 0);
    // The gradient and the update read the statistics.
    size_t grads = 0;
    for (const Task& t : tg.tasks) {
      if (t.kernel != "batch_norm_train_grad" && t.kernel != "batch_norm_stats_update") continue;
      ++grads;
      bool reads_stats = false;
      for (const TaskInput& in : t.inputs)
        if (in.kind == InputKind::regst) reads_stats = reads_stats || producer_of(tg, in.id)->kernel == "batch_norm_stats";
      CHECK(reads_stats);
    }
    CHECK(grads == size_t(2 * dp));
  }
}
