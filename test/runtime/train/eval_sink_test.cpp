// SPDX-License-Identifier: Apache-2.0
// ofrun --eval's sink: per-sample sums of losses, hits and counted labels, the padding of a last
// partial batch left out, means over the labels that count.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "runtime/train/eval_sink.h"

using of::runtime::train::EvalSinkAction;

namespace {

void act(EvalSinkAction& sink, int64_t piece, const std::vector<float>& nll, const std::vector<float>& correct,
         const std::vector<float>& count) {
  const void* in[] = {nll.data(), correct.data(), count.data()};
  sink.act(piece, in, nullptr);
}

}  // namespace

TEST_CASE("eval sink: means over every counted label of the real samples", "[runtime]") {
  // Batches of 2, 3 samples: the second batch's second row is padding.
  EvalSinkAction sink(true, 2, 3);
  act(sink, 0, {3.0f, 1.0f}, {2.0f, 0.0f}, {3.0f, 1.0f});  // sample 0: 3 labels, sample 1: 1 (the rest ignored)
  act(sink, 1, {2.0f, 100.0f}, {1.0f, 100.0f}, {2.0f, 100.0f});
  CHECK(sink.counted() == 3);
  CHECK(sink.mean_loss() == Approx(6.0 / 6.0));
  CHECK(sink.accuracy() == Approx(3.0 / 6.0));
}

TEST_CASE("eval sink: no counted label gives NaN, as torch's mean, and a mean loss plan weighs batches by their samples", "[runtime]") {
  EvalSinkAction none(true, 2, 2);
  act(none, 0, {0.0f, 0.0f}, {0.0f, 0.0f}, {0.0f, 0.0f});
  CHECK(std::isnan(none.mean_loss()));
  EvalSinkAction mean(false, 4, 6);
  const float first = 2.0f, second = 5.0f;
  const void* a[] = {&first};
  const void* b[] = {&second};
  mean.act(0, a, nullptr);
  mean.act(1, b, nullptr);
  CHECK(mean.counted() == 6);
  CHECK(mean.mean_loss() == Approx((2.0 * 4 + 5.0 * 2) / 6));
}
