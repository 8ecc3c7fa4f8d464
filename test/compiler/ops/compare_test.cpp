// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("compare: run-time comparisons broadcast into bool, logical ops take bool", "[compiler]") {
  OneNode gt(greater_def(), {f32({4, 8}), f32({})});
  CHECK(gt.shape() == Shape{4, 8});
  CHECK(gt.kernel() == "greater");
  CHECK(gt.g.values[size_t(gt.node().outputs[0])].desc.dtype == DType::bool_);
  CHECK(OneNode(equal_def(), {typed({4}, DType::i64), typed({}, DType::i64)}).kernel() == "equal");
  CHECK(OneNode(greater_or_equal_def(), {f32({2}), f32({2})}).kernel() == "greater_or_equal");
  CHECK(OneNode(less_or_equal_def(), {f32({2}), f32({2})}).kernel() == "less_or_equal");
  CHECK(OneNode(and_def(), {typed({2, 3}, DType::bool_), typed({3}, DType::bool_)}).kernel() == "logical_and");
  CHECK(OneNode(not_def(), {typed({3}, DType::bool_)}).kernel() == "logical_not");
  REQUIRE_THROWS_WITH(OneNode(less_def(), {f32({2}), typed({2}, DType::i64)}),
                      Catch::Contains("(Less)") && Catch::Contains("compares f32 with i64"));
  REQUIRE_THROWS_WITH(OneNode(or_def(), {f32({2}), typed({2}, DType::bool_)}), Catch::Contains("(Or)") && Catch::Contains("takes bool tensors"));
}

TEST_CASE("compare: Cast at run time between f32, i64 and bool, other types refused", "[compiler]") {
  OneNode to_float(cast_def(), {typed({4}, DType::bool_)}, A().i("to", 1));
  CHECK(to_float.kernel() == "cast");
  CHECK(to_float.g.values[size_t(to_float.node().outputs[0])].desc.dtype == DType::f32);
  CHECK(OneNode(cast_def(), {f32({4})}, A().i("to", 1)).kernel() == "copy");
  CHECK(OneNode(cast_def(), {typed({4}, DType::bool_)}, A().i("to", 9)).kernel() == "cast");  // no bool copy: cast
  CHECK(OneNode(cast_def(), {f32({4})}, A().i("to", 7)).kernel() == "cast");  // x.long()
  REQUIRE_THROWS_WITH(OneNode(cast_def(), {f32({4})}, A().i("to", 11)),
                      Catch::Contains("(Cast)") && Catch::Contains("to ONNX type 11"));
}

}  // namespace of::compiler::test
