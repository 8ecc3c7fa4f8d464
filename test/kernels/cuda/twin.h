// SPDX-License-Identifier: Apache-2.0
// Runs one kernel on the CPU and its CUDA twin from the same config and inputs, and compares
// every output with tolerance |got - ref| <= atol + rtol * |ref|, printing the first mismatches
// with their index (llm.c's check). Integer outputs must match exactly.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "common/attrs.h"
#include "common/shape.h"

namespace of::kernels::testing {

struct HostTensor {
  TensorDesc desc;
  std::vector<char> bytes;  // desc.bytes() of them
};

HostTensor f32_tensor(const Shape& shape, const std::vector<float>& values);
HostTensor i64_tensor(const Shape& shape, const std::vector<int64_t>& values);
HostTensor i32_tensor(const Shape& shape, const std::vector<int32_t>& values);
HostTensor bool_tensor(const Shape& shape, const std::vector<uint8_t>& values);
HostTensor random_f32(const Shape& shape, unsigned seed, float lo = -1.0f, float hi = 1.0f);

struct Tolerance {
  double atol = 1e-5, rtol = 1e-4;
};

// An output written over an input (in place), as a kernel's file comment allows.
struct Alias {
  int output, input;
};

// Prepares `kernel` on both devices (outputs described by `outputs`), runs it `acts` times (act a
// reads input 0 scaled by a + 1, so acts differ), and CHECKs every output after the last act.
// `aliases` (with acts == 1) give an output the buffer of an input. Returns the CUDA outputs.
std::vector<HostTensor> check_twin(const std::string& kernel, const Attrs& attrs, const std::vector<HostTensor>& inputs,
                                   const std::vector<TensorDesc>& outputs, Tolerance tol = {}, int acts = 1,
                                   const std::vector<Alias>& aliases = {});

}  // namespace of::kernels::testing
