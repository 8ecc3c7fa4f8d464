// SPDX-License-Identifier: Apache-2.0
// infer-shapes expands composite ops in place: on run-time inputs into the ordinary ops they
// stand for (in topological order, each lowered), on constants folded as those ops would be.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/compile.h"
#include "compiler/ir/graph.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

long count(const Graph& g, const std::string& op) {
  return long(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op_type == op; }));
}

ValueId constant_i64(Graph& g, const std::string& name, const std::vector<int64_t>& v) {
  const ValueId id = g.add_value(name);
  Value& val = g.values[size_t(id)];
  val.desc = of::TensorDesc{{int64_t(v.size())}, of::DType::i64};
  val.data = std::vector<uint8_t>(v.size() * 8);
  std::memcpy(val.data->data(), v.data(), v.size() * 8);
  val.known = true;
  return id;
}

// y = x + Tile(c, [1, 2]) + Einsum("ij->ji", Einsum("ji->ij", x)), x a [2, 6] input, c [2, 3] constant.
Graph graph_with_composites() {
  Graph g;
  g.name = "composites";
  const ValueId x = g.add_value("x");
  g.values[size_t(x)].desc = of::TensorDesc{{2, 6}, of::DType::f32};
  g.values[size_t(x)].known = true;
  g.values[size_t(x)].graph_input = true;
  g.inputs = {x};
  const ValueId c = g.add_value("c");
  g.values[size_t(c)].desc = of::TensorDesc{{2, 3}, of::DType::f32};
  const std::vector<float> cv = {1, 2, 3, 4, 5, 6};
  g.values[size_t(c)].data = std::vector<uint8_t>(24);
  std::memcpy(g.values[size_t(c)].data->data(), cv.data(), 24);
  g.values[size_t(c)].known = true;
  const ValueId reps = constant_i64(g, "repeats", {1, 2});
  const ValueId tiled = g.add_value("tiled"), xt = g.add_value("xt"), back = g.add_value("back"), sum = g.add_value("sum"),
                y = g.add_value("y");
  of::Attrs to_t, from_t;
  to_t.set_str("equation", "ij->ji");
  from_t.set_str("equation", "ji->ij");
  g.nodes.push_back(Node{.name = "tile", .op_type = "Tile", .inputs = {c, reps}, .outputs = {tiled}});
  g.nodes.push_back(Node{.name = "t", .op_type = "Einsum", .inputs = {x}, .outputs = {xt}, .attrs = to_t});
  g.nodes.push_back(Node{.name = "t_back", .op_type = "Einsum", .inputs = {xt}, .outputs = {back}, .attrs = from_t});
  g.nodes.push_back(Node{.name = "add", .op_type = "Add", .inputs = {x, tiled}, .outputs = {sum}});
  g.nodes.push_back(Node{.name = "add2", .op_type = "Add", .inputs = {sum, back}, .outputs = {y}});
  g.values[size_t(y)].graph_output = true;
  g.outputs = {y};
  relink(g);
  return g;
}

}  // namespace

TEST_CASE("composites: expanded into lowered ordinary ops on run-time inputs, folded on constants", "[compiler]") {
  Compilation c{.graph = graph_with_composites()};
  REQUIRE(InferShapes().run(c));
  verify(c.graph, "infer-shapes");
  const Graph& g = c.graph;
  CHECK(count(g, "Tile") == 0);
  CHECK(count(g, "Einsum") == 0);
  CHECK(count(g, "Expand") == 0);  // Tile's expansion folded: its input is a constant
  CHECK(count(g, "Transpose") == 2);
  for (const Node& n : g.nodes) CHECK_FALSE(n.kernel.empty());
  const auto add = std::find_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.name == "add"; });
  REQUIRE(add != g.nodes.end());
  const Value& tiled = g.values[size_t(add->inputs[1])];
  REQUIRE(tiled.contents());
  CHECK(tiled.desc.shape == of::Shape{2, 6});
  std::vector<float> t(12);
  std::memcpy(t.data(), tiled.contents()->data(), 48);
  CHECK(t == std::vector<float>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6});
  const auto first = std::find_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "Transpose"; });
  CHECK(first->name.rfind("t/", 0) == 0);  // named after the composite it came from
}

namespace {

// y_k = op_k(x) for IsNaN and IsInf (both signs, +inf only, -inf only), x [4] a run-time input
// or, with `constant`, the constant [1, NaN, inf, -inf].
Graph special_values_graph(bool constant) {
  Graph g;
  g.name = "special_values";
  const ValueId x = g.add_value("x");
  g.values[size_t(x)].desc = of::TensorDesc{{4}, of::DType::f32};
  g.values[size_t(x)].known = true;
  if (constant) {
    const std::vector<float> v = {1.0f, NAN, INFINITY, -INFINITY};
    g.values[size_t(x)].data = std::vector<uint8_t>(16);
    std::memcpy(g.values[size_t(x)].data->data(), v.data(), 16);
  } else {
    g.values[size_t(x)].graph_input = true;
    g.inputs = {x};
  }
  auto add = [&](const std::string& name, const std::string& op, of::Attrs a) {
    const ValueId y = g.add_value(name);
    g.nodes.push_back(Node{.name = name, .op_type = op, .inputs = {x}, .outputs = {y}, .attrs = std::move(a)});
    g.values[size_t(y)].graph_output = true;
    g.outputs.push_back(y);
  };
  of::Attrs positive, negative;
  positive.set_int("detect_negative", 0);
  negative.set_int("detect_positive", 0);
  add("nan", "IsNaN", {});
  add("inf", "IsInf", {});
  add("pos", "IsInf", positive);
  add("neg", "IsInf", negative);
  relink(g);
  return g;
}

}  // namespace

TEST_CASE("composites: IsNaN and IsInf compare at run time and fold on constants", "[compiler]") {
  Compilation run_time{.graph = special_values_graph(false)};
  REQUIRE(InferShapes().run(run_time));
  verify(run_time.graph, "infer-shapes");
  CHECK(count(run_time.graph, "IsNaN") == 0);
  CHECK(count(run_time.graph, "IsInf") == 0);
  CHECK(count(run_time.graph, "Equal") == 5);  // x == x; x == inf or x == -inf; x == inf; x == -inf
  CHECK(count(run_time.graph, "Not") == 1);
  CHECK(count(run_time.graph, "Or") == 1);
  for (ValueId y : run_time.graph.outputs) {
    CHECK(run_time.graph.values[size_t(y)].desc.shape == of::Shape{4});
    CHECK(run_time.graph.values[size_t(y)].desc.dtype == of::DType::bool_);
  }

  Compilation folded{.graph = special_values_graph(true)};
  REQUIRE(InferShapes().run(folded));
  const std::vector<std::vector<uint8_t>> want = {{0, 1, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 0}, {0, 0, 0, 1}};
  for (size_t k = 0; k < want.size(); ++k) {
    const Value& y = folded.graph.values[size_t(folded.graph.outputs[k])];
    INFO("output " << y.name);
    REQUIRE(y.contents());
    CHECK(*y.contents() == want[k]);
  }
}

namespace {

// y = op(x) over x [2, 3, 5, 8, 8] (a video clip's features), and a 2-D pooling beside it.
Graph pooling_graph(const std::string& op, of::Attrs a3) {
  Graph g;
  g.name = "pool_3d";
  auto input = [&](const std::string& name, of::Shape s) {
    const ValueId v = g.add_value(name);
    g.values[size_t(v)].desc = of::TensorDesc{std::move(s), of::DType::f32};
    g.values[size_t(v)].known = true;
    g.values[size_t(v)].graph_input = true;
    g.inputs.push_back(v);
    return v;
  };
  const ValueId x = input("x", {2, 3, 5, 8, 8}), image = input("image", {2, 3, 8, 8});
  auto add = [&](const std::string& name, ValueId in, of::Attrs a) {
    const ValueId y = g.add_value(name);
    g.nodes.push_back(Node{.name = name, .op_type = op, .inputs = {in}, .outputs = {y}, .attrs = std::move(a)});
    g.values[size_t(y)].graph_output = true;
    g.outputs.push_back(y);
  };
  add("clip", x, std::move(a3));
  of::Attrs a2;
  a2.set_ints("kernel_shape", {2, 2});
  add("frame", image, a2);
  relink(g);
  return g;
}

const Node& node_named(const Graph& g, const std::string& op, size_t k) {
  size_t seen = 0;
  for (const Node& n : g.nodes)
    if (n.op_type == op && seen++ == k) return n;
  FAIL("no " << op << " number " << k);
  return g.nodes.front();
}

}  // namespace

TEST_CASE("composites: 3-D pooling is a 2-D pooling over height and width, then one over the depth", "[compiler]") {
  of::Attrs a;
  a.set_ints("kernel_shape", {3, 3, 3});
  a.set_ints("strides", {2, 2, 2});
  a.set_ints("pads", {1, 1, 1, 1, 1, 1});
  a.set_int("ceil_mode", 1);
  Compilation c{.graph = pooling_graph("MaxPool", a)};
  REQUIRE(InferShapes().run(c));
  verify(c.graph, "infer-shapes");
  CHECK(count(c.graph, "MaxPool") == 3);  // the clip's two stages and the frame's own
  CHECK(count(c.graph, "Reshape") == 3);
  const Node& plane = node_named(c.graph, "MaxPool", 0);
  CHECK(c.graph.values[size_t(plane.inputs[0])].desc.shape == of::Shape{2, 15, 8, 8});
  CHECK(c.graph.values[size_t(plane.outputs[0])].desc.shape == of::Shape{2, 15, 5, 5});  // ceil((8+2-3)/2)+1
  CHECK(plane.kernel_attrs.get_ints("strides") == std::vector<int64_t>{2, 2});
  const Node& depth = node_named(c.graph, "MaxPool", 1);
  CHECK(c.graph.values[size_t(depth.inputs[0])].desc.shape == of::Shape{2, 3, 5, 25});
  CHECK(depth.kernel_attrs.get_ints("kernel_shape") == std::vector<int64_t>{3, 1});
  CHECK(depth.kernel_attrs.get_ints("pads") == std::vector<int64_t>{1, 0, 1, 0});
  CHECK(c.graph.values[size_t(c.graph.outputs[0])].desc.shape == of::Shape{2, 3, 3, 5, 5});
  CHECK(c.graph.values[size_t(c.graph.outputs[1])].desc.shape == of::Shape{2, 3, 7, 7});

  // A window of one frame pools only the planes; count_include_pad reaches the stage.
  of::Attrs frames;
  frames.set_ints("kernel_shape", {1, 3, 3});
  frames.set_ints("strides", {1, 2, 2});
  frames.set_ints("pads", {0, 1, 1, 0, 1, 1});
  frames.set_int("count_include_pad", 1);
  Compilation avg{.graph = pooling_graph("AveragePool", frames)};
  REQUIRE(InferShapes().run(avg));
  CHECK(count(avg.graph, "AveragePool") == 2);
  CHECK(node_named(avg.graph, "AveragePool", 0).kernel_attrs.get_int("count_include_pad", 0) == 1);
  CHECK(avg.graph.values[size_t(avg.graph.outputs[0])].desc.shape == of::Shape{2, 3, 5, 4, 4});
}

TEST_CASE("composites: 3-D resizing is a 2-D resize over height and width, then one over the depth", "[compiler]") {
  Graph g;
  g.name = "resize_3d";
  const ValueId x = g.add_value("x");
  g.values[size_t(x)].desc = of::TensorDesc{{2, 3, 4, 5, 6}, of::DType::f32};
  g.values[size_t(x)].known = true;
  g.values[size_t(x)].graph_input = true;
  g.inputs = {x};
  const ValueId sizes = constant_i64(g, "sizes", {2, 3, 8, 7, 12});
  const ValueId y = g.add_value("y");
  of::Attrs a;
  a.set_str("mode", "linear");
  g.nodes.push_back(Node{.name = "up", .op_type = "Resize", .inputs = {x, kNoValue, kNoValue, sizes}, .outputs = {y}, .attrs = a});
  g.values[size_t(y)].graph_output = true;
  g.outputs = {y};
  relink(g);
  Compilation c{.graph = std::move(g)};
  REQUIRE(InferShapes().run(c));
  verify(c.graph, "infer-shapes");
  REQUIRE(count(c.graph, "Resize") == 2);
  const Node& plane = node_named(c.graph, "Resize", 0);
  CHECK(c.graph.values[size_t(plane.outputs[0])].desc.shape == of::Shape{2, 12, 7, 12});
  CHECK(plane.kernel_attrs.get_str("mode") == "linear");
  const std::vector<float> plane_scales = plane.kernel_attrs.get_floats("scales");
  CHECK(plane_scales == std::vector<float>{7.0f / 5.0f, 2.0f});  // output over input, as the sizes give
  const Node& depth = node_named(c.graph, "Resize", 1);
  CHECK(c.graph.values[size_t(depth.inputs[0])].desc.shape == of::Shape{2, 3, 4, 84});
  CHECK(depth.kernel_attrs.get_floats("scales") == std::vector<float>{2.0f, 1.0f});
  CHECK(c.graph.values[size_t(c.graph.outputs[0])].desc.shape == of::Shape{2, 3, 8, 7, 12});
}

namespace {

// y = op(x, extra...) over a run-time x [2, 3, 4] and constant or run-time extra inputs.
Graph one_op_graph(const std::string& op, std::vector<ValueId (*)(Graph&)> extras, of::Attrs a) {
  Graph g;
  g.name = "one_op";
  const ValueId x = g.add_value("x");
  g.values[size_t(x)].desc = of::TensorDesc{{2, 3, 4}, of::DType::f32};
  g.values[size_t(x)].known = true;
  g.values[size_t(x)].graph_input = true;
  g.inputs = {x};
  std::vector<ValueId> inputs = {x};
  for (auto make : extras) inputs.push_back(make(g));
  const ValueId y = g.add_value("y");
  g.nodes.push_back(Node{.name = op, .op_type = op, .inputs = inputs, .outputs = {y}, .attrs = std::move(a)});
  g.values[size_t(y)].graph_output = true;
  g.outputs = {y};
  relink(g);
  return g;
}

ValueId k_one(Graph& g) { return constant_i64(g, "k", {1}); }
ValueId runtime_bound(Graph& g) {
  const ValueId v = g.add_value("bound");
  g.values[size_t(v)].desc = of::TensorDesc{{}, of::DType::f32};
  g.values[size_t(v)].known = true;
  g.values[size_t(v)].graph_input = true;
  g.inputs.push_back(v);
  return v;
}

}  // namespace

TEST_CASE("composites: Trilu of run-time data is Where over a constant mask of the last two axes", "[compiler]") {
  of::Attrs upper;
  upper.set_int("upper", 1);
  Compilation c{.graph = one_op_graph("Trilu", {k_one}, upper)};
  REQUIRE(InferShapes().run(c));
  verify(c.graph, "infer-shapes");
  REQUIRE(count(c.graph, "Where") == 1);
  CHECK(count(c.graph, "Trilu") == 0);
  const Node& where = node_named(c.graph, "Where", 0);
  const Value& mask = c.graph.values[size_t(where.inputs[0])];
  REQUIRE(mask.contents());
  CHECK(mask.desc.shape == of::Shape{3, 4});
  CHECK(mask.desc.dtype == of::DType::bool_);
  // triu(k=1) of 3 x 4: kept where column - row >= 1
  CHECK(*mask.contents() == std::vector<uint8_t>{0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1});
  CHECK(c.graph.values[size_t(c.graph.outputs[0])].desc.shape == of::Shape{2, 3, 4});
}

TEST_CASE("composites: Clip with run-time bounds is two Wheres, with constant bounds the clip kernel", "[compiler]") {
  Compilation run_time{.graph = one_op_graph("Clip", {runtime_bound, runtime_bound}, {})};
  REQUIRE(InferShapes().run(run_time));
  verify(run_time.graph, "infer-shapes");
  CHECK(count(run_time.graph, "Clip") == 0);
  CHECK(count(run_time.graph, "Where") == 2);
  CHECK(count(run_time.graph, "Less") == 1);
  CHECK(count(run_time.graph, "Greater") == 1);
  Compilation lower_only{.graph = one_op_graph("Clip", {runtime_bound}, {})};
  REQUIRE(InferShapes().run(lower_only));
  CHECK(count(lower_only.graph, "Where") == 1);
  CHECK(count(lower_only.graph, "Greater") == 0);
}
