// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <algorithm>

#include "compiler/ops/registry.h"

namespace of::compiler::test {

TEST_CASE("registry: ONNX ops are listed alphabetically, custom ops last", "[compiler]") {
  const std::vector<OpDef>& ops = all_ops();
  std::vector<std::string_view> onnx;
  for (const OpDef& op : ops)
    if (op.onnx_type.find('.') == std::string_view::npos) onnx.push_back(op.onnx_type);
  CHECK(std::is_sorted(onnx.begin(), onnx.end()));
  CHECK(ops.back().onnx_type == "of.test.Delay");
  CHECK(ops[ops.size() - 2].onnx_type == "of.StopGradient");
  CHECK(ops[ops.size() - 3].onnx_type == "of.SoftmaxCrossEntropy");
  CHECK(ops[ops.size() - 4].onnx_type == "of.MatMulTransB");
  CHECK(ops[ops.size() - 5].onnx_type == "of.MaskedSoftmax");
  CHECK(ops[ops.size() - 6].onnx_type == "of.GatherElements");
  CHECK(ops[ops.size() - 7].onnx_type.find('.') == std::string_view::npos);
  for (const OpDef& op : ops) {
    CHECK(op.infer != nullptr);
    CHECK(op.lower != nullptr);
  }
}

TEST_CASE("registry: find_op resolves the default domain and custom domains", "[compiler]") {
  REQUIRE(find_op("", "Conv") != nullptr);
  CHECK(find_op("ai.onnx", "MaxPool")->onnx_type == "MaxPool");
  REQUIRE(find_op("of.test", "Delay") != nullptr);
  REQUIRE(find_op("of", "MatMulTransB") != nullptr);  // what fuse-transposed-weights makes
  REQUIRE(find_op("of", "MaskedSoftmax") != nullptr);  // what fuse-masked-softmax makes
  REQUIRE(find_op("of", "SoftmaxCrossEntropy") != nullptr);  // what SoftmaxCrossEntropyLoss expands to
  REQUIRE(find_op("of", "StopGradient") != nullptr);  // .detach(), as scripts/of_export.py writes it
  CHECK(find_op("", "StopGradient") == nullptr);
  CHECK(find_op("", "MatMulTransB") == nullptr);
  CHECK(find_op("", "Delay") == nullptr);
  CHECK(find_op("", "Gelu") != nullptr);  // opset 20's, and what fuse-gelu makes
  CHECK(find_op("", "NoSuchOp") == nullptr);
  CHECK(supported_op_list().find("AveragePool, BatchNormalization") != std::string::npos);
}

}  // namespace of::compiler::test
