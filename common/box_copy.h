// SPDX-License-Identifier: Apache-2.0
// Copying a box (a sub-tensor given by its start and extent) out of or into a whole row-major
// tensor: how weights split over devices are cut from the weights file and put back together
// for checkpoints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/shape.h"

namespace of {

// whole[begin + i] -> box[i] for every index i of `box_shape`.
void copy_box_out(const uint8_t* whole, const Shape& whole_shape, const std::vector<int64_t>& begin,
                  const Shape& box_shape, size_t elem_bytes, uint8_t* box);
// box[i] -> whole[begin + i].
void copy_box_in(const uint8_t* box, const Shape& box_shape, const std::vector<int64_t>& begin,
                 const Shape& whole_shape, size_t elem_bytes, uint8_t* whole);

}  // namespace of
