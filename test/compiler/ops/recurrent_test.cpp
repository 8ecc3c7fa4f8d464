// SPDX-License-Identifier: Apache-2.0
// LSTM / GRU / RNN shape rules: the outputs torch's export leaves out are added, training adds the saved
// gates and states, the kernel learns which optional inputs exist, and what torch never writes is
// refused naming the node and the attribute or input.
#include <catch2/catch.hpp>

#include "compiler/ops/ops.h"
#include "op_test_util.h"

namespace of::compiler::test {

TEST_CASE("lstm: a bidirectional layer gets Y, Y_h, Y_c and, in training, its saved gates and cells", "[compiler]") {
  // X [seq 5, batch 2, input 3], hidden 4: W [2, 16, 3], R [2, 16, 4], B [2, 32].
  OneNode t(lstm_def(), {f32({5, 2, 3}), f32({2, 16, 3}), f32({2, 16, 4}), f32({2, 32}), absent(), f32({2, 2, 4})},
            A().i("hidden_size", 4).s("direction", "bidirectional").s("activations", "Sigmoid,Tanh,Tanh,Sigmoid,Tanh,Tanh"),
            1, /*training=*/true);
  CHECK(t.kernel() == "lstm");
  REQUIRE(t.node().outputs.size() == 5);
  CHECK(t.shape(0) == Shape{5, 2, 2, 4});
  CHECK(t.shape(1) == Shape{2, 2, 4});
  CHECK(t.shape(2) == Shape{2, 2, 4});
  CHECK(t.shape(3) == Shape{2, 5, 2, 16});
  CHECK(t.shape(4) == Shape{2, 5, 2, 4});
  CHECK(t.int_attr("has_bias") == 1);
  CHECK(t.int_attr("has_h0") == 1);
  CHECK(t.int_attr("has_c0") == 0);
  CHECK(t.int_attr("reverse") == 0);
}

TEST_CASE("gru: inference writes Y and Y_h only and a reverse layer says so to the kernel", "[compiler]") {
  OneNode t(gru_def(), {f32({5, 2, 3}), f32({1, 12, 3}), f32({1, 12, 4})},
            A().i("hidden_size", 4).s("direction", "reverse").i("linear_before_reset", 1), 2);
  CHECK(t.kernel() == "gru");
  REQUIRE(t.node().outputs.size() == 2);
  CHECK(t.shape(0) == Shape{5, 1, 2, 4});
  CHECK(t.int_attr("has_bias") == 0);
  CHECK(t.int_attr("reverse") == 1);
}

TEST_CASE("rnn: Tanh or Relu tells the kernel, and training saves nothing besides Y", "[compiler]") {
  // nn.RNN(3, 4, nonlinearity="relu", bidirectional=True): W [2, 4, 3], R [2, 4, 4], B [2, 8].
  OneNode t(rnn_def(), {f32({5, 2, 3}), f32({2, 4, 3}), f32({2, 4, 4}), f32({2, 8})},
            A().i("hidden_size", 4).s("direction", "bidirectional").s("activations", "Relu,Relu"), 2, /*training=*/true);
  CHECK(t.kernel() == "rnn");
  REQUIRE(t.node().outputs.size() == 2);
  CHECK(t.shape(0) == Shape{5, 2, 2, 4});
  CHECK(t.shape(1) == Shape{2, 2, 4});
  CHECK(t.int_attr("relu") == 1);
  CHECK(t.int_attr("has_bias") == 1);
  OneNode tanh(rnn_def(), {f32({5, 2, 3}), f32({1, 4, 3}), f32({1, 4, 4})}, A().i("hidden_size", 4).s("activations", "Tanh"), 2);
  CHECK(tanh.int_attr("relu") == 0);
  REQUIRE_THROWS_WITH(OneNode(rnn_def(), {f32({5, 2, 3}), f32({1, 4, 3}), f32({1, 4, 4})},
                              A().i("hidden_size", 4).s("activations", "Sigmoid"), 2),
                      Catch::Contains("node 'RNN_0' (RNN)") && Catch::Contains("'Tanh' or 'Relu'"));
  REQUIRE_THROWS_WITH(OneNode(rnn_def(), {f32({5, 2, 3}), f32({2, 4, 3}), f32({2, 4, 4})},
                              A().i("hidden_size", 4).s("direction", "bidirectional").s("activations", "Relu,Tanh"), 2),
                      Catch::Contains("activations is 'Relu,Tanh'"));
}

TEST_CASE("lstm and gru: what torch never exports is refused by name", "[compiler]") {
  const std::vector<In> lstm_in = {f32({5, 2, 3}), f32({1, 16, 3}), f32({1, 16, 4})};
  auto lstm_fails = [&](std::vector<In> in, Attrs a, const std::string& why) {
    REQUIRE_THROWS_WITH(OneNode(lstm_def(), std::move(in), a, 3), Catch::Contains("node 'LSTM_0' (LSTM)") && Catch::Contains(why));
  };
  const A hidden = A().i("hidden_size", 4);
  lstm_fails(lstm_in, A(hidden).i("layout", 1), "layout = 1");
  lstm_fails(lstm_in, A(hidden).f("clip", 3.0f), "clip");
  lstm_fails(lstm_in, A(hidden).i("input_forget", 1), "input_forget");
  lstm_fails(lstm_in, A(hidden).s("activations", "Relu,Tanh,Tanh"), "activations");
  lstm_fails(lstm_in, A(hidden).s("direction", "sideways"), "direction is 'sideways'");
  lstm_fails(lstm_in, A().i("hidden_size", 5), "input 1 (W) has shape [1,16,3], expected [1,20,3]");
  std::vector<In> with_lens = lstm_in;
  with_lens.push_back(absent());
  with_lens.push_back(typed({2}, DType::i32));
  lstm_fails(with_lens, hidden, "sequence_lens");
  std::vector<In> with_p = {f32({5, 2, 3}), f32({1, 16, 3}), f32({1, 16, 4}), absent(), absent(), absent(), absent(), f32({1, 12})};
  lstm_fails(with_p, hidden, "peephole");
  REQUIRE_THROWS_WITH(OneNode(gru_def(), {f32({5, 2, 3}), f32({1, 12, 3}), f32({1, 12, 4})}, A().i("hidden_size", 4), 2),
                      Catch::Contains("node 'GRU_0' (GRU)") && Catch::Contains("linear_before_reset = 0"));
}

}  // namespace of::compiler::test
