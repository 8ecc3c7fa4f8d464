// SPDX-License-Identifier: Apache-2.0
// Compile-time folding of the exporter's shape arithmetic; parameters are never folded.
#include <catch2/catch.hpp>

#include <algorithm>

#include <climits>
#include <cstring>
#include <set>

#include "compiler/compile.h"
#include "compiler/ops/const_eval.h"

using namespace of::compiler;
using of::TensorDesc;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

static std::multiset<std::string> ops_of(const Graph& g) {
  std::multiset<std::string> ops;
  for (const Node& n : g.nodes)
    if (n.forward < 0 && n.inplace.empty()) ops.insert(n.op_type);
  return ops;
}

TEST_CASE("const_eval: shape arithmetic from x.shape folds away, the parameter still trains", "[compiler]") {
  CompileOptions o;
  o.loss = "mse";
  o.train = true;
  Compilation c = compile_model(fixture("export/shape_arith.onnx"), o);
  // Before: Shape, Gather, Unsqueeze x9, Concat x3, ConstantOfShape, Mul, Equal, Where, Expand,
  // Reshape x3, Add. After: what touches data at run time.
  const std::multiset<std::string> ops = ops_of(c.graph);
  for (const char* gone : {"Shape", "Concat", "ConstantOfShape", "Equal", "Where", "Mul"}) {
    INFO(gone);
    CHECK(ops.count(gone) == 0);
  }
  // The one Unsqueeze of data (the gathered rows, not a shape) is read as a view (reshape-views).
  CHECK(ops.count("Unsqueeze") == 0);
  CHECK(std::count_if(c.graph.nodes.begin(), c.graph.nodes.end(), [](const Node& n) {
          return std::any_of(n.runtime_views.begin(), n.runtime_views.end(), [](const of::Shape& v) { return !v.empty(); });
        }) >= 1);
  CHECK(ops.count("Gather") == 1);  // the parameter pos, indexed by the folded arange
  CHECK(ops.count("Expand") == 1);
  CHECK(ops.count("Add") == 1);
  REQUIRE(c.training.weights.size() == 1);
  CHECK(c.graph.values[size_t(c.training.weights[0].first)].name == "pos");
}

TEST_CASE("const_eval: a parameter's Transpose is not folded, a constant's is", "[compiler]") {
  Graph g;
  const ValueId w = g.add_value("fc.weight");
  g.values[size_t(w)].desc = TensorDesc{{2, 3}, of::DType::f32};
  g.values[size_t(w)].known = true;
  g.values[size_t(w)].initializer = true;
  g.values[size_t(w)].data = std::vector<uint8_t>(24, 0);
  const ValueId out = g.add_value("t");
  Node n{.name = "T", .op_type = "Transpose", .inputs = {w}, .outputs = {out}};
  g.nodes.push_back(n);
  CHECK_FALSE(try_fold(g, g.nodes[0]));
  CHECK(is_parameter(g, g.values[size_t(w)]));
  g.values[size_t(w)].name = "/Constant_output_0";  // an exporter's constant
  REQUIRE(try_fold(g, g.nodes[0]));
  CHECK(g.values[size_t(out)].desc.shape == of::Shape{3, 2});
}

TEST_CASE("const_eval: Shape, Gather, Unsqueeze, Concat, Slice and Range on constants", "[compiler]") {
  Graph g;
  auto input = [&](const std::string& name, of::Shape shape) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = TensorDesc{shape, of::DType::f32};
    g.values[size_t(v)].known = true;
    g.values[size_t(v)].graph_input = true;
    return v;
  };
  auto i64 = [&](const std::string& name, std::vector<int64_t> xs) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = TensorDesc{{int64_t(xs.size())}, of::DType::i64};
    g.values[size_t(v)].known = true;
    g.values[size_t(v)].data = std::vector<uint8_t>(xs.size() * 8);
    std::memcpy(g.values[size_t(v)].data->data(), xs.data(), xs.size() * 8);
    return v;
  };
  auto ints = [&](ValueId v) {
    std::vector<int64_t> out(g.values[size_t(v)].data->size() / 8);
    std::memcpy(out.data(), g.values[size_t(v)].data->data(), out.size() * 8);
    return out;
  };
  auto run = [&](const std::string& op, std::vector<ValueId> in, of::Attrs attrs = {}) {
    const ValueId out = g.add_value(op + "_out");
    g.nodes.push_back(Node{.name = op, .op_type = op, .inputs = std::move(in), .outputs = {out}, .attrs = std::move(attrs)});
    REQUIRE(try_fold(g, g.nodes.back()));
    return out;
  };
  const ValueId x = input("x", {4, 5, 16});
  const ValueId shape = run("Shape", {x});
  CHECK(ints(shape) == std::vector<int64_t>{4, 5, 16});
  of::Attrs axis0;
  axis0.set_int("axis", 0);
  const ValueId t = run("Gather", {shape, i64("one", {1})}, axis0);
  CHECK(ints(t) == std::vector<int64_t>{5});
  const ValueId cat = run("Concat", {i64("m1", {-1}), t}, axis0);
  CHECK(ints(cat) == std::vector<int64_t>{-1, 5});
  const ValueId sl = run("Slice", {shape, i64("s", {-2}), i64("e", {INT64_MAX})});
  CHECK(ints(sl) == std::vector<int64_t>{5, 16});
  const ValueId r = run("Range", {i64("a", {0}), i64("b", {3}), i64("d", {1})});
  CHECK(ints(r) == std::vector<int64_t>{0, 1, 2});
  // Split of a constant (repeat_interleave's index arithmetic): by sizes, and in equal parts.
  const ValueId parts[] = {g.add_value("p0"), g.add_value("p1"), g.add_value("q0"), g.add_value("q1")};
  g.nodes.push_back(Node{.name = "S", .op_type = "Split", .inputs = {i64("five", {1, 2, 3, 4, 5}), i64("sizes", {2, 3})},
                         .outputs = {parts[0], parts[1]}});
  REQUIRE(try_fold(g, g.nodes.back()));
  CHECK(ints(parts[0]) == std::vector<int64_t>{1, 2});
  CHECK(ints(parts[1]) == std::vector<int64_t>{3, 4, 5});
  g.nodes.push_back(Node{.name = "S2", .op_type = "Split", .inputs = {i64("four", {1, 2, 3, 4})}, .outputs = {parts[2], parts[3]}});
  REQUIRE(try_fold(g, g.nodes.back()));
  CHECK(ints(parts[3]) == std::vector<int64_t>{3, 4});
  const ValueId wrong[] = {g.add_value("w0"), g.add_value("w1")};
  g.nodes.push_back(Node{.name = "S3", .op_type = "Split", .inputs = {i64("three", {1, 2, 3}), i64("sizes2", {2, 2})},
                         .outputs = {wrong[0], wrong[1]}});
  REQUIRE_THROWS_WITH(try_fold(g, g.nodes.back()), Catch::Contains("node 'S3' (Split)") && Catch::Contains("summing to 4"));
  // An index out of range is an error naming the node, not a silent wrong shape.
  const ValueId bad = g.add_value("bad");
  g.nodes.push_back(Node{.name = "G2", .op_type = "Gather", .inputs = {shape, i64("nine", {9})}, .outputs = {bad}, .attrs = axis0});
  REQUIRE_THROWS_WITH(try_fold(g, g.nodes.back()), Catch::Contains("node 'G2' (Gather)") && Catch::Contains("index 9 is out of range"));
}

TEST_CASE("const_eval: hostile constants fail by node instead of reading out of bounds", "[compiler]") {
  Graph g;
  auto i64 = [&](const std::string& name, std::vector<int64_t> xs, of::Shape shape) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = TensorDesc{shape, of::DType::i64};
    g.values[size_t(v)].known = true;
    g.values[size_t(v)].data = std::vector<uint8_t>(xs.size() * 8);
    if (!xs.empty()) std::memcpy(g.values[size_t(v)].data->data(), xs.data(), xs.size() * 8);
    return v;
  };
  auto node = [&](const std::string& op, std::vector<ValueId> in) -> Node& {
    const ValueId out = g.add_value(op + "_out" + std::to_string(g.nodes.size()));
    g.nodes.push_back(Node{.name = op, .op_type = op, .inputs = std::move(in), .outputs = {out}});
    return g.nodes.back();
  };
  // Unsqueeze of a scalar with a repeated axis.
  const ValueId scalar = i64("s", {7}, {});
  REQUIRE_THROWS_WITH(try_fold(g, node("Unsqueeze", {scalar, i64("axes", {1, 1}, {2})})), Catch::Contains("axes repeat an axis"));
  // A negative step on an empty axis takes nothing.
  Node& empty = node("Slice", {i64("e", {}, {0}), i64("st", {-1}, {1}), i64("en", {-1}, {1}), i64("ax", {0}, {1}), i64("sp", {-1}, {1})});
  REQUIRE(try_fold(g, empty));
  CHECK(g.values[size_t(g.nodes.back().outputs[0])].desc.shape == of::Shape{0});
  // A zero-size tensor with a huge other dim is not folded (no 2^60-step loops).
  const ValueId wide = i64("w", {}, {int64_t(1) << 60, 0});
  CHECK_FALSE(try_fold(g, node("Transpose", {wide})));
}

TEST_CASE("const_eval: Trilu keeps torch.triu / torch.tril of a constant, k above or below the diagonal", "[compiler]") {
  Graph g;
  auto i64 = [&](const std::string& name, std::vector<int64_t> xs, of::Shape shape) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = TensorDesc{shape, of::DType::i64};
    g.values[size_t(v)].known = true;
    g.values[size_t(v)].data = std::vector<uint8_t>(xs.size() * 8);
    std::memcpy(g.values[size_t(v)].data->data(), xs.data(), xs.size() * 8);
    return v;
  };
  auto trilu = [&](std::vector<ValueId> in, int64_t upper) {
    const ValueId out = g.add_value("t" + std::to_string(g.nodes.size()));
    of::Attrs a;
    a.set_int("upper", upper);
    g.nodes.push_back(Node{.name = "Trilu", .op_type = "Trilu", .inputs = std::move(in), .outputs = {out}, .attrs = a});
    REQUIRE(try_fold(g, g.nodes.back()));
    std::vector<int64_t> v(g.values[size_t(out)].data->size() / 8);
    std::memcpy(v.data(), g.values[size_t(out)].data->data(), v.size() * 8);
    return v;
  };
  // [2, 3, 3] of ones: the last two axes are the matrix, the first a batch.
  const ValueId ones = i64("ones", std::vector<int64_t>(18, 1), {2, 3, 3});
  const std::vector<int64_t> triu1 = {0, 1, 1, 0, 0, 1, 0, 0, 0};  // torch.triu(x, 1): a causal mask
  std::vector<int64_t> want = triu1;
  want.insert(want.end(), triu1.begin(), triu1.end());
  CHECK(trilu({ones, i64("k1", {1}, {})}, 1) == want);
  const std::vector<int64_t> tril0 = {1, 0, 0, 1, 1, 0, 1, 1, 1};  // torch.tril(x), k absent
  want = tril0;
  want.insert(want.end(), tril0.begin(), tril0.end());
  CHECK(trilu({ones}, 0) == want);
  const ValueId wide = i64("wide", std::vector<int64_t>(6, 1), {2, 3});
  CHECK(trilu({wide, i64("km1", {-1}, {})}, 0) == std::vector<int64_t>{0, 0, 0, 1, 0, 0});
  // A vector has no diagonal.
  const ValueId vec = i64("vec", {1, 2}, {2});
  g.nodes.push_back(Node{.name = "T1", .op_type = "Trilu", .inputs = {vec}, .outputs = {g.add_value("bad")}});
  REQUIRE_THROWS_WITH(try_fold(g, g.nodes.back()), Catch::Contains("node 'T1' (Trilu)") && Catch::Contains("rank 2"));
}

TEST_CASE("const_eval: Mod as Python's % and as fmod, ReduceProd of a shape, ScatterND filling a mask by slices, ScatterElements", "[compiler]") {
  Graph g;
  auto i64 = [&](const std::string& name, std::vector<int64_t> xs, of::Shape shape) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = TensorDesc{shape, of::DType::i64};
    g.values[size_t(v)].known = true;
    g.values[size_t(v)].data = std::vector<uint8_t>(xs.size() * 8);
    std::memcpy(g.values[size_t(v)].data->data(), xs.data(), xs.size() * 8);
    return v;
  };
  auto fold = [&](const std::string& op, std::vector<ValueId> in, of::Attrs attrs = {}) {
    const ValueId out = g.add_value(op + std::to_string(g.nodes.size()));
    g.nodes.push_back(Node{.name = op, .op_type = op, .inputs = std::move(in), .outputs = {out}, .attrs = std::move(attrs)});
    REQUIRE(try_fold(g, g.nodes.back()));
    std::vector<int64_t> v(g.values[size_t(out)].data->size() / 8);
    std::memcpy(v.data(), g.values[size_t(out)].data->data(), v.size() * 8);
    return v;
  };
  // Swin's padding to whole windows: (window - W % window) % window, W = 7, 8 and -3.
  const ValueId w = i64("w", {7, 8, -3}, {3});
  const ValueId four = i64("four", {4}, {});
  CHECK(fold("Mod", {w, four}) == std::vector<int64_t>{3, 0, 1});  // -3 % 4 = 1, as in Python
  of::Attrs fmod;
  fmod.set_int("fmod", 1);
  CHECK(fold("Mod", {w, four}, fmod) == std::vector<int64_t>{3, 0, -3});  // C's fmod keeps the dividend's sign
  g.nodes.push_back(Node{.name = "M0", .op_type = "Mod", .inputs = {w, i64("zero", {0}, {})}, .outputs = {g.add_value("m0")}});
  REQUIRE_THROWS_WITH(try_fold(g, g.nodes.back()), Catch::Contains("node 'M0' (Mod)") && Catch::Contains("modulo by zero"));
  // x.std(dim=1)'s element count: the product of the gathered dims, keepdims 0.
  of::Attrs prod;
  prod.set_int("keepdims", 0);
  CHECK(fold("ReduceProd", {i64("dims", {4, 5, 6}, {3})}, prod) == std::vector<int64_t>{120});
  of::Attrs prod_axis;
  prod_axis.set_ints("axes", {1});
  CHECK(fold("ReduceProd", {i64("m", {1, 2, 3, 4, 5, 6}, {2, 3})}, prod_axis) == std::vector<int64_t>{6, 120});
  // img_mask[:, 0:2, :] = 1 then [:, 2:3, :] = 2 on a [1, 3, 2] mask, as the exporter writes it:
  // indices [1, 3, 1] (one row of the second axis each) and updates [1, 3, 2].
  const ValueId mask = i64("mask", std::vector<int64_t>(6, 0), {1, 3, 2});
  const ValueId idx = i64("idx", {0, 0, 0, 1, 0, 2}, {3, 2});  // (0,0), (0,1), (0,2)
  const ValueId upd = i64("upd", {1, 1, 1, 1, 2, 2}, {3, 2});
  CHECK(fold("ScatterND", {mask, idx, upd}) == std::vector<int64_t>{1, 1, 1, 1, 2, 2});
  of::Attrs add;
  add.set_str("reduction", "add");
  CHECK(fold("ScatterND", {i64("ones", std::vector<int64_t>(6, 1), {1, 3, 2}), i64("i1", {0, 2}, {1, 2}), i64("u1", {5, 7}, {1, 2})},
             add) == std::vector<int64_t>{1, 1, 1, 1, 6, 8});
  g.nodes.push_back(Node{.name = "S0", .op_type = "ScatterND", .inputs = {mask, i64("far", {0, 3}, {1, 2}), i64("u2", {1, 1}, {1, 2})},
                         .outputs = {g.add_value("s0")}});
  REQUIRE_THROWS_WITH(try_fold(g, g.nodes.back()), Catch::Contains("node 'S0' (ScatterND)") && Catch::Contains("index 3 is out of range"));
  // ScatterElements along axis 1 of [2,3] (Tensor.index_fill's index arithmetic): row r's
  // column idx[r][c] takes upd[r][c]; a negative index counts from the end; add and max combine.
  const ValueId base = i64("base", {0, 0, 0, 5, 5, 5}, {2, 3});
  const ValueId cols = i64("cols", {2, 0, -1, 1}, {2, 2});
  const ValueId vals = i64("vals", {7, 8, 9, 4}, {2, 2});
  of::Attrs axis1;
  axis1.set_int("axis", 1);
  CHECK(fold("ScatterElements", {base, cols, vals}, axis1) == std::vector<int64_t>{8, 0, 7, 5, 4, 9});
  of::Attrs add1 = axis1, max1 = axis1;
  add1.set_str("reduction", "add");
  max1.set_str("reduction", "max");
  CHECK(fold("ScatterElements", {base, cols, vals}, add1) == std::vector<int64_t>{8, 0, 7, 5, 9, 14});
  CHECK(fold("ScatterElements", {base, cols, vals}, max1) == std::vector<int64_t>{8, 0, 7, 5, 5, 9});
  g.nodes.push_back(Node{.name = "E0", .op_type = "ScatterElements", .inputs = {base, i64("c3", {3}, {1, 1}), i64("v3", {1}, {1, 1})},
                         .outputs = {g.add_value("e0")}, .attrs = axis1});
  REQUIRE_THROWS_WITH(try_fold(g, g.nodes.back()), Catch::Contains("node 'E0' (ScatterElements)") && Catch::Contains("index 3 is out of range"));
}
