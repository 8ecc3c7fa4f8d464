// SPDX-License-Identifier: Apache-2.0
// What one act of a kernel costs, in the units a machine's costs are measured in: floating-point
// operations for the kernels bounded by arithmetic (matrix products, convolutions, recurrent
// layers), bytes read and written for everything else. The compiler's cost model (SBP choice,
// pipeline balancing, the predicted step time) and ofrun --calibrate share this one estimate, so
// that a calibrated rate means the same thing to both. It lives beside the catalog because it
// describes a kernel without running it: the compiler links it, not the kernels themselves.
#pragma once

#include <string_view>
#include <vector>

#include "common/attrs.h"
#include "common/shape.h"

namespace of::kernels {

enum class WorkKind : int8_t {
  matrix = 0,     // gemm, matmul: bounded by multiply-adds
  convolution = 1,  // conv and its gradients
  recurrent = 2,  // lstm, gru, rnn and their gradients: many small products
  memory = 3,     // everything else: bounded by the bytes it moves
};
inline constexpr int kWorkKinds = 4;

struct KernelWork {
  WorkKind kind = WorkKind::memory;
  double flops = 0;  // multiply-adds count 2
  double bytes = 0;  // inputs read plus outputs written
  // What a rate of this kind divides: flops, or bytes for memory-bound kernels.
  double measure() const { return kind == WorkKind::memory ? bytes : flops; }
};

// `inputs` in the op's input order, an absent optional input as an empty shape.
KernelWork kernel_work(std::string_view kernel, const Attrs& attrs, const std::vector<TensorDesc>& inputs,
                       const std::vector<TensorDesc>& outputs);

std::string_view work_kind_name(WorkKind k);

}  // namespace of::kernels
