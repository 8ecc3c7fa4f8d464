// SPDX-License-Identifier: Apache-2.0
#include "common/box_copy.h"

#include <cstring>

namespace of {
namespace {

// Calls f(whole offset, box offset, bytes) for each contiguous row of the box.
template <typename F>
void for_each_row(const Shape& whole, const std::vector<int64_t>& begin, const Shape& box, size_t elem, F f) {
  if (whole.empty()) {
    f(size_t(0), size_t(0), elem);
    return;
  }
  const size_t rank = whole.size();
  const size_t row = size_t(box[rank - 1]) * elem;
  int64_t rows = row == 0 ? 0 : 1;
  for (size_t k = 0; k + 1 < rank; ++k) rows *= box[k];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < rows; ++i) {
    int64_t offset = 0;
    for (size_t k = 0; k < rank; ++k) offset = offset * whole[k] + begin[k] + idx[k];
    f(size_t(offset) * elem, size_t(i) * row, row);
    for (size_t k = rank - 1; k-- > 0;) {
      if (++idx[k] < box[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

void copy_box_out(const uint8_t* whole, const Shape& whole_shape, const std::vector<int64_t>& begin,
                  const Shape& box_shape, size_t elem_bytes, uint8_t* box) {
  for_each_row(whole_shape, begin, box_shape, elem_bytes,
               [&](size_t w, size_t b, size_t n) { std::memcpy(box + b, whole + w, n); });
}

void copy_box_in(const uint8_t* box, const Shape& box_shape, const std::vector<int64_t>& begin,
                 const Shape& whole_shape, size_t elem_bytes, uint8_t* whole) {
  for_each_row(whole_shape, begin, box_shape, elem_bytes,
               [&](size_t w, size_t b, size_t n) { std::memcpy(whole + w, box + b, n); });
}

}  // namespace of
