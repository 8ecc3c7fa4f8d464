// SPDX-License-Identifier: Apache-2.0
// SBP signatures: for one op (after lowering, so by its kernel and attributes), the ways it can
// run on one level of a placement: which SBP each input must have and which each output then
// has. Every kernel can run with all inputs and outputs broadcast (each device computes the
// whole op), so that signature is always last and always valid; the others are declared per
// kernel in signatures.cpp. The gradient and optimizer kernels that autodiff adds have no ONNX
// operator of their own, so the rules are keyed by kernel name rather than kept in compiler/ops.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/parallel/sbp.h"

namespace of::compiler {

struct Signature {
  std::vector<Sbp> in;   // per node input position (absent optional inputs: B)
  std::vector<Sbp> out;  // per output
  // What the kernel on a device must change when this signature splits the work over `parts`:
  // mean_over_parts: a loss over a split batch is a partial sum of local means divided by parts;
  // first_adds_bias: a partial-sum Gemm adds its bias (input 2) on the first summand only.
  enum class Tweak : int8_t { none, mean_over_parts, first_adds_bias } tweak = Tweak::none;
  bool splits_work = false;  // false only for the all-broadcast signature
};

std::vector<Signature> signatures_of(const Graph& g, const Node& node);

// The kernel attributes for the device at `coord` of `parts` on a level that uses `s`.
void apply_tweak(const Signature& s, int64_t coord, int64_t parts, Attrs& attrs);

}  // namespace of::compiler
