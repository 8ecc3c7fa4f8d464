// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/eval_sink.h"

#include <algorithm>

namespace of::runtime::train {

void EvalSinkAction::act(int64_t piece, const void* const* in, void* const*) {
  const int64_t real = std::clamp<int64_t>(samples_ - piece * batch_, 0, batch_);
  if (!per_sample_) {
    loss_ += double(*static_cast<const float*>(in[0])) * double(real);
    counted_ += real;
    return;
  }
  const auto* nll = static_cast<const float*>(in[0]);
  const auto* correct = static_cast<const float*>(in[1]);
  const auto* count = static_cast<const float*>(in[2]);
  for (int64_t r = 0; r < real; ++r) {
    loss_ += double(nll[r]);
    correct_ += double(correct[r]);
    labels_ += double(count[r]);
  }
  counted_ += real;
}

}  // namespace of::runtime::train
