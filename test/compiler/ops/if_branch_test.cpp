// SPDX-License-Identifier: Apache-2.0
// If nodes, as torch's exporter writes them for squeeze(dim) of a size it could not tell: the
// condition folds when compiling and the taken branch takes the If's place (its constants, outer
// values it reads, an output passed through); a condition computed at run time, a nested If and
// an op of two outputs inside a branch are refused in one line naming the node.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include <onnx/onnx_pb.h>

namespace of::compiler {
namespace {

// GCC 12 warns -Wrestrict inside protobuf's inlined string setters (a false positive, GCC bug
// 105329): silenced for the model builders below, as in onnx_import_test.cpp.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wrestrict"

enum class Condition { shape_equal, run_time };
enum class Else { negate, pass_through, nested_if, two_outputs };

onnx::NodeProto* node(onnx::GraphProto* g, const char* op, std::vector<std::string> in, std::string out, const char* name = "") {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& i : in) n->add_input(i);
  n->add_output(out);
  return n;
}

void int_constant(onnx::GraphProto* g, const std::string& out, int64_t v) {
  onnx::AttributeProto* a = node(g, "Constant", {}, out)->add_attribute();
  a->set_name("value_int");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void declare(onnx::ValueInfoProto* v, const std::string& name) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_value(2);
  t->mutable_shape()->add_dim()->set_dim_value(3);
}

// y = If(cond, then: Relu(x * 2.0), else: ...) on x [2, 3]; cond: Shape(x)[1] == `size` (folds),
// or ReduceSum(x) > 0 (known only at run time).
std::string if_model(Condition condition, int64_t size, Else otherwise) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(14);
  onnx::GraphProto* g = m.mutable_graph();
  declare(g->add_input(), "x");
  declare(g->add_output(), "y");
  if (condition == Condition::shape_equal) {
    node(g, "Shape", {"x"}, "s");
    int_constant(g, "one", 1);
    node(g, "Gather", {"s", "one"}, "d");
    int_constant(g, "size", size);
    node(g, "Equal", {"d", "size"}, "cond");
  } else {
    node(g, "ReduceSum", {"x"}, "total")->add_attribute()->set_name("keepdims");
    g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
    g->mutable_node(g->node_size() - 1)->mutable_attribute(0)->set_i(0);
    onnx::AttributeProto* zero = node(g, "Constant", {}, "zero")->add_attribute();
    zero->set_name("value_float");
    zero->set_type(onnx::AttributeProto::FLOAT);
    zero->set_f(0);
    node(g, "Greater", {"total", "zero"}, "cond");
  }
  onnx::NodeProto* branch = node(g, "If", {"cond"}, "y", "/If");
  onnx::AttributeProto* then_branch = branch->add_attribute();
  then_branch->set_name("then_branch");
  then_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* t = then_branch->mutable_g();
  onnx::AttributeProto* two = node(t, "Constant", {}, "two")->add_attribute();
  two->set_name("value_float");
  two->set_type(onnx::AttributeProto::FLOAT);
  two->set_f(2);
  node(t, "Mul", {"x", "two"}, "doubled", "/then/Mul");
  node(t, "Relu", {"doubled"}, "then_out", "/then/Relu");
  declare(t->add_output(), "then_out");
  onnx::AttributeProto* else_branch = branch->add_attribute();
  else_branch->set_name("else_branch");
  else_branch->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* e = else_branch->mutable_g();
  switch (otherwise) {
    case Else::negate:
      node(e, "Neg", {"x"}, "else_out", "/else/Neg");
      declare(e->add_output(), "else_out");
      break;
    case Else::pass_through: declare(e->add_output(), "x"); break;
    case Else::nested_if:
      node(e, "If", {"cond"}, "else_out", "/else/If");
      declare(e->add_output(), "else_out");
      break;
    case Else::two_outputs:
      node(e, "Split", {"x"}, "a", "/else/Split")->add_output("b");
      declare(e->add_output(), "a");
      break;
  }
  return m.SerializeAsString();
}

#pragma GCC diagnostic pop

std::string write_model(const std::string& bytes, const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() / ("of_if_" + name + ".onnx")).string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> ops;
  for (const Node& n : g.nodes) ops.push_back(n.op_type);
  return ops;
}

TEST_CASE("if: a condition known when compiling puts the taken branch in the If's place", "[compiler]") {
  // Shape(x)[1] is 3: then (x * 2, a constant of the branch, then Relu), writing y.
  Compilation taken = compile_model(write_model(if_model(Condition::shape_equal, 3, Else::negate), "then"), CompileOptions{});
  CHECK(op_types(taken.graph) == std::vector<std::string>{"Mul", "Relu"});
  CHECK(taken.graph.values[size_t(taken.graph.nodes.back().outputs[0])].name == "y");
  CHECK(taken.graph.values[size_t(taken.graph.outputs[0])].desc.shape == Shape{2, 3});
  // Shape(x)[1] is not 2: else (Neg).
  Compilation other = compile_model(write_model(if_model(Condition::shape_equal, 2, Else::negate), "else"), CompileOptions{});
  CHECK(op_types(other.graph) == std::vector<std::string>{"Neg"});
  // A branch that passes an outer value on: an Identity of it.
  Compilation passed = compile_model(write_model(if_model(Condition::shape_equal, 2, Else::pass_through), "pass"), CompileOptions{});
  CHECK(op_types(passed.graph) == std::vector<std::string>{"Identity"});
  CHECK(passed.graph.nodes[0].inputs[0] == passed.graph.inputs[0]);
}

TEST_CASE("if: a condition computed at run time, a nested If and an op of two outputs in a branch are refused naming the node", "[compiler]") {
  const std::string run_time = write_model(if_model(Condition::run_time, 3, Else::negate), "run_time");
  REQUIRE_THROWS_WITH(compile_model(run_time, CompileOptions{}),
                      Catch::Contains("of_if_run_time.onnx") && Catch::Contains("/If") && Catch::Contains("computed at run time"));
  REQUIRE_THROWS_WITH(compile_model(write_model(if_model(Condition::shape_equal, 2, Else::nested_if), "nested"), CompileOptions{}),
                      Catch::Contains("/else/If") && Catch::Contains("an If inside an If's branch"));
  REQUIRE_THROWS_WITH(compile_model(write_model(if_model(Condition::shape_equal, 2, Else::two_outputs), "two"), CompileOptions{}),
                      Catch::Contains("/else/Split") && Catch::Contains("one output"));
}

}  // namespace
}  // namespace of::compiler
