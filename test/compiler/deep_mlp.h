// SPDX-License-Identifier: Apache-2.0
// A test model built in the test: an MLP of Gemm + Relu layers, as an ONNX file.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

namespace of::compiler {

// An MLP of `layers` Gemm + Relu layers of width `width`, as an ONNX file in the temp folder.
inline std::string write_deep_mlp(int layers, int64_t width, int64_t batch) {
  onnx::ModelProto m;
  m.set_ir_version(7);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("deep_mlp");
  auto value = [&](onnx::ValueInfoProto* v, const std::string& name) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(batch);
    t->mutable_shape()->add_dim()->set_dim_value(width);
  };
  value(g->add_input(), "x");
  std::string cur = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string w = "l" + std::to_string(i) + ".weight", b = "l" + std::to_string(i) + ".bias";
    for (const std::string& name : {w, b}) {
      onnx::TensorProto* t = g->add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT);
      std::vector<float> data(name == w ? size_t(width * width) : size_t(width));
      for (size_t k = 0; k < data.size(); ++k) data[k] = (name == w && k % size_t(width + 1) == 0) ? 1.0f : 0.0f;
      if (name == w) t->add_dims(width);
      t->add_dims(width);
      t->set_raw_data(data.data(), data.size() * sizeof(float));
    }
    onnx::NodeProto* gemm = g->add_node();
    gemm->set_op_type("Gemm");
    gemm->set_name("gemm" + std::to_string(i));
    gemm->add_input(cur);
    gemm->add_input(w);
    gemm->add_input(b);
    gemm->add_output("h" + std::to_string(i));
    onnx::AttributeProto* trans = gemm->add_attribute();
    trans->set_name("transB");
    trans->set_type(onnx::AttributeProto::INT);
    trans->set_i(1);
    onnx::NodeProto* relu = g->add_node();
    relu->set_op_type("Relu");
    relu->set_name("relu" + std::to_string(i));
    relu->add_input("h" + std::to_string(i));
    cur = i + 1 == layers ? "y" : "a" + std::to_string(i);
    relu->add_output(cur);
  }
  value(g->add_output(), "y");
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("of_deep_mlp_{}x{}x{}_{}.onnx", layers, width, batch, ::getpid())).string();
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
  return path;
}

}  // namespace of::compiler
