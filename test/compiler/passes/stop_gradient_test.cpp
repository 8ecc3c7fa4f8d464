// SPDX-License-Identifier: Apache-2.0
// .detach() in a forward, as scripts/of_export.py writes it (of.StopGradient): no gradient passes
// it, so a network read only through it does not train; and a BatchNorm module called on two views
// gets one running-statistics update that blends both calls' statistics (fixture:
// export/siamese_detach_train.onnx, test/fixtures/make_export_fixtures.py).
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "train_proto.h"

using namespace of::compiler;
using testing::train_proto;
using testing::trained_names;

namespace {

onnx::ModelProto siamese() { return testing::fixture_proto("export/siamese_detach_train.onnx"); }

}  // namespace

TEST_CASE("stop gradient: a network read only through .detach() does not train", "[compiler]") {
  onnx::ModelProto m = siamese();
  const auto stops = std::count_if(m.graph().node().begin(), m.graph().node().end(),
                                   [](const onnx::NodeProto& n) { return n.domain() == "of" && n.op_type() == "StopGradient"; });
  REQUIRE(stops == 2);  // z2.detach() and target(x).detach()
  const std::vector<std::string> encoder_and_head = {"encoder.0.bias", "encoder.0.weight", "encoder.1.bias", "encoder.1.weight",
                                                     "head.bias", "head.weight"};
  CHECK(trained_names(train_proto(m)) == encoder_and_head);
  // The same file with each stop written as torch.onnx.export alone writes it: the target trains.
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == "StopGradient") {
      n.set_op_type("Identity");
      n.set_domain("");
    }
  std::vector<std::string> all = encoder_and_head;
  all.insert(all.end(), {"target.bias", "target.weight"});
  std::sort(all.begin(), all.end());
  CHECK(trained_names(train_proto(m)) == all);
}

TEST_CASE("stop gradient: a BatchNorm called on two views updates its running statistics with both calls, in call order", "[compiler]") {
  const Compilation c = train_proto(siamese());
  std::vector<const Task*> updates;
  for (const Task& t : c.tasks.tasks)
    if (t.kernel == "batch_norm_stats_update") updates.push_back(&t);
  REQUIRE(updates.size() == 1);
  // (mean, variance) of each call, then running_mean, running_var and num_batches_tracked.
  CHECK(updates[0]->inputs.size() == 7);
}
