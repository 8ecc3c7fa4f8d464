// SPDX-License-Identifier: Apache-2.0
// ofc --auto's bound on a candidate's size (CompileOptions::max_parallel_nodes): parallelize stops
// as soon as the physical graph passes it, with one line --auto records as the refusal, before a
// candidate far larger than the first fills the memory.
#include <catch2/catch.hpp>

#include <filesystem>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/deep_mlp.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

TEST_CASE("parallelize: a plan past max_parallel_nodes stops at once with one line", "[compiler]") {
  const std::string model = write_deep_mlp(4, 64, 64);
  CompileOptions o;
  o.loss = "mse";
  o.train = true;
  o.devices = o.dp = 4;
  const Compilation whole = compile_model(model, o);
  o.max_parallel_nodes = 40;
  std::string message;
  try {
    compile_model(model, o);
  } catch (const of::Error& e) {
    message = e.what();
  }
  std::filesystem::remove(model);
  INFO(message);
  CHECK(whole.graph.nodes.size() > 40);
  CHECK(message.find("--auto") != std::string::npos);
  CHECK(message.find("beyond the bound of 40") != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}
