// SPDX-License-Identifier: Apache-2.0
// The physical task graph the compiler builds is the plan model itself (schemas/plan_model.h).
#pragma once

#include "schemas/plan_model.h"

namespace of::compiler {

using plan::Arena;
using plan::Blob;
using plan::DeviceRef;
using plan::InputKind;
using plan::kAlignment;
using plan::Regst;
using plan::RegstId;
using plan::ShareGroup;
using plan::Task;
using plan::TaskId;
using plan::TaskInput;
using plan::TaskKind;
using plan::Variable;
using plan::VariableId;
using plan::align_up;
using TaskGraph = plan::Plan;

// offset + bytes rounded up to the alignment, saturating at 2^64 - 1 instead of wrapping: a model
// with huge tensors then gets an arena check-plan refuses, not a small wrapped one.
inline uint64_t add_aligned(uint64_t offset, uint64_t bytes) {
  constexpr uint64_t kMax = ~uint64_t(0);
  if (bytes > kMax - offset || offset + bytes > kMax - plan::kAlignment) return kMax;
  return align_up(offset + bytes);
}

}  // namespace of::compiler
