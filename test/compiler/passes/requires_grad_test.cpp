// SPDX-License-Identifier: Apache-2.0
// Which float initializers train: the model's own list of the parameters that require grad
// (metadata of.requires_grad, scripts/of_export.py), infinities only in what does not train, and
// without a list, the tensors a buffer could be, named for ofc's note.
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/import/onnx_import.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/requires_grad.h"
#include "train_proto.h"

using namespace of::compiler;

namespace {

std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

onnx::ModelProto mlp() { return testing::fixture_proto("mlp.onnx"); }  // fc1..fc3, Gemm each

void list_parameters(onnx::ModelProto& m, const std::string& names) {
  auto* p = m.add_metadata_props();
  p->set_key("of.requires_grad");
  p->set_value(names);
}

ValueId value(Graph& g, const std::string& name, bool initializer = false) {
  const ValueId v = g.add_value(name);
  g.values[size_t(v)].initializer = initializer;
  return v;
}

ValueId node(Graph& g, const std::string& op, std::vector<ValueId> inputs) {
  const ValueId out = g.add_value(op + "_" + std::to_string(g.nodes.size()));
  g.nodes.push_back(Node{.name = op + std::to_string(g.nodes.size()), .op_type = op, .inputs = std::move(inputs), .outputs = {out}});
  return out;
}

std::vector<std::string> names(const Graph& g, const std::vector<ValueId>& vs) {
  std::vector<std::string> out;
  for (ValueId v : vs) out.push_back(g.values[size_t(v)].name);
  return out;
}

}  // namespace

TEST_CASE("requires_grad: the model's list is read sorted, once, and given twice it is refused", "[compiler]") {
  onnx::ModelProto m = mlp();
  list_parameters(m, "fc2.weight\n\nfc2.bias\nfc2.weight\n");
  std::string bytes = m.SerializeAsString();
  const Graph g = import_onnx_bytes(bytes.data(), bytes.size(), "m.onnx");
  REQUIRE(g.requires_grad);
  CHECK(*g.requires_grad == std::vector<std::string>{"fc2.bias", "fc2.weight"});
  CHECK(!import_onnx_file(fixture("mlp.onnx")).requires_grad);
  list_parameters(m, "fc3.bias");
  bytes = m.SerializeAsString();
  REQUIRE_THROWS_WITH(import_onnx_bytes(bytes.data(), bytes.size(), "m.onnx"),
                      "m.onnx: metadata 'of.requires_grad': is given twice");
}

TEST_CASE("requires_grad: only the listed parameters train, the others stay, as buffers and frozen parameters do", "[compiler]") {
  onnx::ModelProto m = mlp();
  list_parameters(m, "fc3.weight\nfc3.bias\nunused.weight");  // torch's exporter drops unused parameters
  const Compilation c = testing::train_proto(m);
  CHECK(testing::trained_names(c) == std::vector<std::string>{"fc3.bias", "fc3.weight"});
  CHECK(c.training.frozen == 4);
  CHECK(c.training.unsure.empty());
  CHECK(testing::trained_names(testing::train_proto(mlp())).size() == 6);  // no list: every parameter the model names
}

TEST_CASE("requires_grad: a list that names none of the model's tensors is refused", "[compiler]") {
  onnx::ModelProto m = mlp();
  list_parameters(m, "encoder.weight\nhead.weight");
  REQUIRE_THROWS_WITH(testing::train_proto(m), Catch::EndsWith("metadata 'of.requires_grad': names none of the model's initializers "
                                                "(the first: 'encoder.weight'): was it written for another model?"));
}

TEST_CASE("requires_grad: an infinity may sit in a tensor that does not train, not in one that does", "[compiler]") {
  onnx::ModelProto m = mlp();
  for (onnx::TensorProto& t : *m.mutable_graph()->mutable_initializer()) {
    if (t.name() != "fc3.bias") continue;
    REQUIRE(t.has_raw_data());
    const float inf = -std::numeric_limits<float>::infinity();
    std::string raw = t.raw_data();
    std::memcpy(raw.data() + 4 * 2, &inf, 4);
    t.set_raw_data(raw);
  }
  REQUIRE_THROWS_WITH(testing::train_proto(m), Catch::EndsWith("initializer 'fc3.bias': holds -inf at flat index 2 and would train: a "
                                                "buffer (a mask) must not (scripts/of_export.py lists the parameters; or "
                                                "--freeze it)"));
  list_parameters(m, "fc1.weight\nfc1.bias\nfc2.weight\nfc2.bias\nfc3.weight");
  CHECK(testing::trained_names(testing::train_proto(m)).size() == 5);
}

TEST_CASE("requires_grad: without a list, tensors that only arithmetic reads are named as possible buffers", "[compiler]") {
  Graph g;
  const ValueId tokens = value(g, "tokens");
  const ValueId emb = value(g, "embedding.weight", true), pe = value(g, "pos.pe", true);
  const ValueId w = value(g, "fc.weight", true), b = value(g, "fc.bias", true);
  const ValueId gn_w = value(g, "gn.weight", true), gn_b = value(g, "gn.bias", true);
  const ValueId lstm_w = value(g, "rnn.weight_ih_l0", true), token = value(g, "class_token", true);
  const ValueId sqrt_d = value(g, "/Constant_output_0");  // a Constant node's scalar: not an initializer
  // Embeddings times sqrt(d), plus a positional encoding sliced to the sequence (the tutorial's).
  const ValueId x = node(g, "Add", {node(g, "Mul", {node(g, "Gather", {emb, tokens}), sqrt_d}), node(g, "Slice", {pe})});
  // A 3-D nn.Linear: a product, then its bias.
  const ValueId h = node(g, "Add", {node(g, "MatMul", {x, node(g, "Transpose", {w})}), b});
  // GroupNorm as torch writes it: InstanceNormalization, reshaped, times the weight, plus the bias.
  const ValueId n = node(g, "Reshape", {node(g, "InstanceNormalization", {h})});
  const ValueId gn = node(g, "Add", {node(g, "Mul", {n, node(g, "Unsqueeze", {gn_w})}), node(g, "Unsqueeze", {gn_b})});
  // An LSTM's weights cut into gates and put together in ONNX's order.
  const ValueId r = node(g, "LSTM", {gn, node(g, "Unsqueeze", {node(g, "Concat", {node(g, "Slice", {lstm_w}), node(g, "Slice", {lstm_w})})})});
  // A ViT's class token (a parameter, which the model file cannot tell from a buffer).
  node(g, "Concat", {node(g, "Expand", {token}), r});
  relink(g);
  const std::vector<ValueId> weights{emb, pe, w, b, gn_w, gn_b, lstm_w, token};
  CHECK(names(g, unsure_parameters(g, weights)) == std::vector<std::string>{"pos.pe", "class_token"});
}

TEST_CASE("requires_grad: an embedding's padding row reaches its Gather's gradient, and bad lines and rows are refused", "[compiler]") {
  auto with_padding = [](const std::string& lines) {
    onnx::ModelProto m = mlp();
    auto* p = m.add_metadata_props();
    p->set_key("of.padding_idx");
    p->set_value(lines);
    return m.SerializeAsString();
  };
  std::string bytes = with_padding("wte.weight 0\n\nblocks.0.tok emb.weight 17\n");
  const Graph g = import_onnx_bytes(bytes.data(), bytes.size(), "m.onnx");
  CHECK(g.padding_rows == std::vector<std::pair<std::string, int64_t>>{{"wte.weight", 0}, {"blocks.0.tok emb.weight", 17}});
  for (const std::string bad : {"wte.weight", "wte.weight -1", "wte.weight 3x", " 3"}) {
    bytes = with_padding("a.weight 1\n" + bad);
    REQUIRE_THROWS_WITH(import_onnx_bytes(bytes.data(), bytes.size(), "m.onnx"),
                        "m.onnx: metadata 'of.padding_idx': line 2 ('" + bad + "') is not 'NAME INDEX' with an index >= 0");
  }

  Graph e;
  const ValueId table = value(e, "wte.weight", true), ids = value(e, "ids");
  e.values[size_t(table)].desc = of::TensorDesc{{10, 4}, of::DType::f32};
  node(e, "Gather", {table, ids});
  node(e, "Gather", {ids, ids});  // not the table
  e.padding_rows = {{"wte.weight", 9}, {"missing.weight", 3}};
  mark_padding_rows(e);
  CHECK(e.nodes[0].kernel_attrs.get_int("padding_idx", -1) == 9);
  CHECK(!e.nodes[1].kernel_attrs.has("padding_idx"));
  e.padding_rows = {{"wte.weight", 10}};
  CHECK_THROWS_WITH(mark_padding_rows(e), Catch::Contains("padding row 10 of 'wte.weight' is outside its 10 rows"));
}

namespace {

// The MLP fixture with `op`(fc1's output, the float parameter `name` = [value]) between fc1 and
// its ReLU: Pow's exponent, or Pad's constant value (pads all 0).
onnx::ModelProto with_parameter_input(const std::string& op, const std::string& name, float value) {
  onnx::ModelProto m = mlp();
  onnx::GraphProto* g = m.mutable_graph();
  onnx::TensorProto* p = g->add_initializer();
  p->set_name(name);
  p->set_data_type(onnx::TensorProto::FLOAT);
  if (op == "Pow") p->add_dims(1);
  p->add_float_data(value);
  std::vector<std::string> inputs = {"/fc1/Gemm_output_0"};
  if (op == "Pad") {
    onnx::TensorProto* pads = g->add_initializer();
    pads->set_name("pads");
    pads->set_data_type(onnx::TensorProto::INT64);
    pads->add_dims(4);
    for (int k = 0; k < 4; ++k) pads->add_int64_data(0);
    inputs.push_back("pads");
  }
  inputs.push_back(name);
  onnx::NodeProto n;
  n.set_name("/inserted/" + op);
  n.set_op_type(op);
  for (const std::string& i : inputs) n.add_input(i);
  n.add_output("/inserted_output");
  g->mutable_node(1)->set_input(0, "/inserted_output");  // the ReLU reads it
  *g->mutable_node()->Add() = n;
  // Nodes in topological order: the inserted one right after fc1.
  for (int k = g->node_size() - 1; k > 1; --k) g->mutable_node()->SwapElements(k, k - 1);
  return m;
}

}  // namespace

TEST_CASE("requires_grad: a parameter read as an exponent trains, one read only when compiling is refused", "[compiler]") {
  const Compilation pow = testing::train_proto(with_parameter_input("Pow", "gem.p", 1.0f));
  const std::vector<std::string> trained = testing::trained_names(pow);
  CHECK(std::count(trained.begin(), trained.end(), "gem.p") == 1);
  REQUIRE_THROWS_WITH(testing::train_proto(with_parameter_input("Pad", "pad.value", 0.5f)),
                      Catch::Contains("node '/inserted/Pad' (Pad): reads parameter 'pad.value' (input 2) as a constant when compiling") &&
                          Catch::Contains("--freeze pad.value keeps it at its value"));
}
