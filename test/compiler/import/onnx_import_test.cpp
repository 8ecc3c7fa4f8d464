// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <catch2/catch.hpp>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include <onnx/onnx_pb.h>

using namespace of::compiler;

static std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

TEST_CASE("onnx_import: the MLP becomes 5 nodes with constant weights", "[compiler]") {
  Graph g = import_onnx_file(fixture("mlp.onnx"));
  REQUIRE(g.inputs.size() == 1);
  CHECK(g.values[g.inputs[0]].name == "input");
  CHECK(g.values[g.inputs[0]].desc.shape == of::Shape{64, 784});
  REQUIRE(g.nodes.size() == 5);
  CHECK(g.nodes[0].op_type == "Gemm");
  CHECK(g.nodes[1].op_type == "Relu");
  int constants = 0;
  for (const Value& v : g.values) constants += v.data.has_value();
  CHECK(constants == 6);
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.values[g.outputs[0]].name == "logits");
}

TEST_CASE("onnx_import: Constant nodes become constant values, not nodes", "[compiler]") {
  Graph g = import_onnx_file(fixture("ops/constant_add.onnx"));
  REQUIRE(g.nodes.size() == 1);
  CHECK(g.nodes[0].op_type == "Add");
  CHECK(g.values[g.nodes[0].inputs[1]].data.has_value());
}

TEST_CASE("onnx_import: bytes that are not ONNX are refused by name", "[compiler]") {
  std::string junk = "definitely not a protobuf \x01\x02";
  REQUIRE_THROWS_WITH(import_onnx_bytes(junk.data(), junk.size(), "junk.onnx"),
                      Catch::Contains("junk.onnx") && Catch::Contains("not an ONNX model"));
}

TEST_CASE("onnx_import: an unsupported operator names type, node and the supported list", "[compiler]") {
  REQUIRE_THROWS_WITH(import_onnx_file(fixture("unsupported.onnx")),
                      Catch::Contains("Hardmax") && Catch::Contains("supported: Abs, Add, And, ArgMax, ArgMin, AveragePool"));
}

TEST_CASE("compile: infer-shapes and lowering give every task a kernel", "[compiler]") {
  Compilation c = compile_model(fixture("cnn.onnx"), CompileOptions{});
  CHECK(c.tasks.tasks.size() == c.graph.nodes.size() + 2);
  for (const Task& t : c.tasks.tasks)
    if (t.kind == TaskKind::compute) CHECK_FALSE(t.kernel.empty());
  // Every register slot and variable got a place inside the arena.
  for (const Regst& r : c.tasks.regsts) {
    REQUIRE(r.offsets.size() == size_t(r.slots));
    for (uint64_t off : r.offsets) CHECK(off + r.slot_bytes <= c.tasks.arenas[0].bytes);
  }
  CHECK(c.tasks.variables.size() == 8);
  // Only registers of a share group share bytes (the rule: schemas/shared_memory.h); every other
  // slot and every variable is live for the whole run, so none of them may share a byte.
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const Regst& r : c.tasks.regsts)
    if (r.share_group < 0)
      for (uint64_t off : r.offsets) spans.emplace_back(off, off + r.slot_bytes);
  for (const Variable& v : c.tasks.variables) spans.emplace_back(v.offset, v.offset + v.bytes);
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) CHECK(spans[i - 1].second <= spans[i].first);
}

TEST_CASE("compile: --slots sets every register's slot count", "[compiler]") {
  Compilation c = compile_model(fixture("mlp.onnx"), CompileOptions{.slots = 3});
  for (const Regst& r : c.tasks.regsts) CHECK(r.slots == 3);
}

// GCC 12 warns -Wrestrict inside protobuf's inlined string setters here (a false positive, GCC
// bug 105329); the warning is silenced for this function only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wrestrict"
// x + Cast(c) where c is a float64 Constant (torch writes F.normalize's eps so in training
// exports); `also_added`: c is also read by an Add directly.
static std::string float64_constant_model(bool also_added) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto* g = m.mutable_graph();
  auto declare = [](onnx::ValueInfoProto* v, const char* name) {
    v->mutable_name()->assign(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(2);
  };
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  onnx::NodeProto* c = g->add_node();
  c->set_op_type("Constant");
  c->add_output("c");
  onnx::AttributeProto* value = c->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::DOUBLE);
  value->mutable_t()->add_double_data(1e-12);
  onnx::NodeProto* cast = g->add_node();
  cast->set_op_type("Cast");
  cast->add_input("c");
  cast->add_output("cf");
  onnx::AttributeProto* to = cast->add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  onnx::NodeProto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("x");
  add->add_input(also_added ? "c" : "cf");
  add->add_output("y");
  return m.SerializeAsString();
}
#pragma GCC diagnostic pop

TEST_CASE("onnx_import: a float64 Constant only Cast to float32 reads becomes float32, others are refused", "[compiler]") {
  const std::string cast_only = float64_constant_model(false);
  Graph g = import_onnx_bytes(cast_only.data(), cast_only.size(), "f64.onnx");
  const auto c = std::find_if(g.values.begin(), g.values.end(), [](const Value& v) { return v.name == "c"; });
  REQUIRE(c != g.values.end());
  CHECK(c->desc.dtype == of::DType::f32);
  REQUIRE(c->data.has_value());
  float f = 0;
  std::memcpy(&f, c->data->data(), 4);
  CHECK(f == float(1e-12));
  const std::string read_as_double = float64_constant_model(true);
  REQUIRE_THROWS_WITH(import_onnx_bytes(read_as_double.data(), read_as_double.size(), "f64.onnx"),
                      Catch::Contains("f64.onnx") && Catch::Contains("unsupported element type 11"));
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wrestrict"
// A graph input or output `name` of ONNX element type `type` and shape [2].
static void declare_pair(onnx::ValueInfoProto* v, const char* name, int type) {
  v->mutable_name()->assign(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  t->mutable_shape()->add_dim()->set_dim_value(2);
}

// out = Cast(in, to=`to`), appended to `g`.
static void add_cast(onnx::GraphProto* g, const char* in, const char* out, int to) {
  onnx::NodeProto* c = g->add_node();
  c->set_op_type("Cast");
  c->add_input(in);
  c->add_output(out);
  onnx::AttributeProto* a = c->add_attribute();
  a->set_name("to");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(to);
}

// y = IsInf(Cast(x, to=DOUBLE)), as torch writes torch.isinf(x); `also_read`: the cast's output is
// also a graph output.
static std::string isinf_of_double_model(bool also_read) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto* g = m.mutable_graph();
  declare_pair(g->add_input(), "x", onnx::TensorProto::FLOAT);
  declare_pair(g->add_output(), "y", onnx::TensorProto::BOOL);
  if (also_read) declare_pair(g->add_output(), "xd", onnx::TensorProto::DOUBLE);
  add_cast(g, "x", "xd", onnx::TensorProto::DOUBLE);
  onnx::NodeProto* test = g->add_node();
  test->set_op_type("IsInf");
  test->add_input("xd");
  test->add_output("y");
  return m.SerializeAsString();
}
#pragma GCC diagnostic pop

TEST_CASE("onnx_import: a Cast to float64 that only IsInf or IsNaN reads becomes a Cast to float32", "[compiler]") {
  const std::string tested = isinf_of_double_model(false);
  Graph g = import_onnx_bytes(tested.data(), tested.size(), "isinf.onnx");
  const auto cast = std::find_if(g.nodes.begin(), g.nodes.end(), [](const Node& n) { return n.op_type == "Cast"; });
  REQUIRE(cast != g.nodes.end());
  CHECK(cast->attrs.get_int("to", 0) == 1);
  const std::string also_read = isinf_of_double_model(true);
  Graph kept = import_onnx_bytes(also_read.data(), also_read.size(), "isinf.onnx");
  const auto as_double = std::find_if(kept.nodes.begin(), kept.nodes.end(), [](const Node& n) { return n.op_type == "Cast"; });
  REQUIRE(as_double != kept.nodes.end());
  CHECK(as_double->attrs.get_int("to", 0) == 11);  // read as float64 elsewhere: left for infer-shapes to refuse
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wrestrict"
// y = Cast(Cast(x > 0, to=INT32), to=FLOAT), as torch writes `(x > 0).int()` that a float
// multiplies; `also_read`: the int32 value is also a graph output.
static std::string int32_cast_model(bool also_read) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto* g = m.mutable_graph();
  declare_pair(g->add_input(), "x", onnx::TensorProto::FLOAT);
  declare_pair(g->add_output(), "y", onnx::TensorProto::FLOAT);
  if (also_read) declare_pair(g->add_output(), "xi", onnx::TensorProto::INT32);
  add_cast(g, "x", "xi", onnx::TensorProto::INT32);
  add_cast(g, "xi", "y", onnx::TensorProto::FLOAT);
  return m.SerializeAsString();
}
#pragma GCC diagnostic pop

TEST_CASE("onnx_import: a Cast to int32 that only Casts read goes through int64", "[compiler]") {
  auto cast_to = [](const Graph& g, size_t n) { return g.nodes.at(n).attrs.get_int("to", 0); };
  const std::string only_cast = int32_cast_model(false);
  const Graph g = import_onnx_bytes(only_cast.data(), only_cast.size(), "int32.onnx");
  REQUIRE(g.nodes.size() == 2);
  CHECK(cast_to(g, 0) == onnx::TensorProto::INT64);
  CHECK(cast_to(g, 1) == onnx::TensorProto::FLOAT);
  const std::string also_read = int32_cast_model(true);
  const Graph kept = import_onnx_bytes(also_read.data(), also_read.size(), "int32.onnx");
  CHECK(cast_to(kept, 0) == onnx::TensorProto::INT32);  // a graph output: left for infer-shapes to refuse
}
