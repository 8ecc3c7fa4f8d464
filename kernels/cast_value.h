// SPDX-License-Identifier: Apache-2.0
// One element of the cast kernel (ONNX Cast at run time), one definition for the CPU kernel
// (cpu/cast.cpp) and its CUDA twin (cuda/elementwise.cu). To bool: x != 0 (a NaN is true, as
// ONNX and torch say). Float to int64 truncates toward zero (torch's x.long()); a NaN, an
// infinity or a value outside int64's range, which C++ leaves undefined, gives INT64_MIN, what
// x86's conversion (and so torch on a CPU) gives them.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/host_device.h"

namespace of::kernels {

template <class From, class To>
OF_HOST_DEVICE inline To cast_value(From x) {
  if constexpr (std::is_same_v<To, uint8_t>) {
    return x != From(0) ? 1 : 0;  // bool
  } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, int64_t>) {
    constexpr float kTwo63 = 9223372036854775808.0f;  // 2^63, exact in float
    return x >= -kTwo63 && x < kTwo63 ? static_cast<int64_t>(x) : INT64_MIN;
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace of::kernels
