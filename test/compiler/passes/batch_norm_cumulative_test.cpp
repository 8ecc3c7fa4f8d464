// SPDX-License-Identifier: Apache-2.0
// BatchNorms made with momentum=None: the model file's list (metadata of.batch_norm_cumulative,
// scripts/of_export.py) gives their running-statistics update the cumulative average; without
// any of_export list, a BatchNorm whose file says torch momentum 1.0 (what momentum=None exports)
// is named for ofc's note; a list naming no BatchNorm's running mean is refused.
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/compile.h"
#include "train_proto.h"

using namespace of::compiler;

namespace {

// The BatchNorm MLP fixture (fc1, bn, fc2; exported in training mode, momentum 0.1).
onnx::ModelProto bn_mlp() { return of::compiler::testing::fixture_proto("export/bn_mlp_train.onnx"); }

void set_metadata(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  auto* p = m.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

// What the export writes for momentum=None (and for momentum=1.0): ONNX momentum 0.
void export_momentum_none(onnx::ModelProto& m) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "BatchNormalization")
      for (auto& a : *n.mutable_attribute())
        if (a.name() == "momentum") a.set_f(0.0f);
}

const Task& stats_update(const Compilation& c) {
  for (const Task& t : c.tasks.tasks)
    if (t.kernel == "batch_norm_stats_update") return t;
  FAIL("no batch_norm_stats_update task");
  throw;
}

}  // namespace

TEST_CASE("batch norm cumulative: a listed BatchNorm averages every batch, and without lists momentum 1.0 is named", "[compiler]") {
  onnx::ModelProto m = bn_mlp();
  export_momentum_none(m);
  {
    const Compilation c = testing::train_proto(m);  // torch.onnx.export alone: momentum 1.0 as the file says, and a note
    CHECK(stats_update(c).attrs.get_int("cumulative", 0) == 0);
    CHECK(stats_update(c).attrs.get_float("momentum", 0) == 1.0f);
    CHECK(c.training.momentum_one == std::vector<std::string>{"bn.running_mean"});
  }
  set_metadata(m, "of.batch_norm_cumulative", "bn.running_mean\n");
  {
    const Compilation c = testing::train_proto(m);
    CHECK(stats_update(c).attrs.get_int("cumulative", 0) == 1);
    CHECK(c.training.momentum_one.empty());
  }
  onnx::ModelProto listed = bn_mlp();  // of_export's lists without a cumulative BatchNorm: momentum 1.0 was meant
  export_momentum_none(listed);
  set_metadata(listed, "of.requires_grad", "bn.bias\nbn.weight\nfc1.bias\nfc1.weight\nfc2.bias\nfc2.weight");
  {
    const Compilation c = testing::train_proto(listed);
    CHECK(stats_update(c).attrs.get_int("cumulative", 0) == 0);
    CHECK(c.training.momentum_one.empty());
  }
  onnx::ModelProto plain = bn_mlp();  // momentum 0.1: nothing to say
  CHECK(testing::train_proto(plain).training.momentum_one.empty());
}

TEST_CASE("batch norm cumulative: a list naming no BatchNorm's running mean is refused", "[compiler]") {
  onnx::ModelProto m = bn_mlp();
  set_metadata(m, "of.batch_norm_cumulative", "bn.running_mean\nlayer9.bn.running_mean");
  CHECK_THROWS_WITH(testing::train_proto(m), Catch::Contains("metadata 'of.batch_norm_cumulative': names 'layer9.bn.running_mean', which no training "
                                              "BatchNormalization reads as its running mean"));
}
