// SPDX-License-Identifier: Apache-2.0
// For tests that edit a fixture's ONNX model in memory (its metadata, its nodes) and compile it
// for training as `ofc --train --loss cross_entropy` would the file: read it, compile it through a
// file of this process's own, and name the tensors that train.
#pragma once

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/file_util.h"
#include "compiler/compile.h"

namespace of::compiler::testing {

// OF_FIXTURES_DIR/<relative>, parsed.
inline onnx::ModelProto fixture_proto(const std::string& relative) {
  onnx::ModelProto m;
  const std::vector<uint8_t> bytes = of::read_file(std::string(OF_FIXTURES_DIR) + "/" + relative);
  REQUIRE(m.ParseFromArray(bytes.data(), int(bytes.size())));
  return m;
}

// `m` compiled for SGD training with cross-entropy on its output.
inline Compilation train_proto(const onnx::ModelProto& m) {
  const auto path = std::filesystem::temp_directory_path() / ("of_train_proto_" + std::to_string(::getpid()) + ".onnx");
  {
    std::ofstream out(path, std::ios::binary);
    REQUIRE(m.SerializeToOstream(&out));
  }
  struct Remove {
    std::filesystem::path p;
    ~Remove() { std::filesystem::remove(p); }
  } remove{path};
  CompileOptions o;
  o.train = true;
  o.loss = "cross_entropy";
  return compile_model(path.string(), o);
}

// The names of the tensors that train, sorted.
inline std::vector<std::string> trained_names(const Compilation& c) {
  std::vector<std::string> names;
  for (const auto& [w, dw] : c.training.weights) names.push_back(c.graph.values[size_t(w)].name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace of::compiler::testing
