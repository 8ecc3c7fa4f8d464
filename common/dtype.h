// SPDX-License-Identifier: Apache-2.0
// Element types shared by compiler, runtime and kernels. The numbering matches schemas/plan.fbs.
#pragma once

#include <cstdint>
#include <string_view>

namespace of {

enum class DType : int8_t { f32 = 0, f16 = 1, bf16 = 2, i32 = 3, i64 = 4, u8 = 5, i8 = 6, bool_ = 7 };

inline int64_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: case DType::i32: return 4;
    case DType::f16: case DType::bf16: return 2;
    case DType::i64: return 8;
    case DType::u8: case DType::i8: case DType::bool_: return 1;
  }
  return 0;
}

inline std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::u8: return "u8";
    case DType::i8: return "i8";
    case DType::bool_: return "bool";
  }
  return "?";
}

inline bool dtype_valid(int v) { return v >= 0 && v <= 7; }

}  // namespace of
