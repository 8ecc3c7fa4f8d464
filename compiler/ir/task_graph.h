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
using plan::Task;
using plan::TaskId;
using plan::TaskInput;
using plan::TaskKind;
using plan::Variable;
using plan::VariableId;
using plan::align_up;
using TaskGraph = plan::Plan;

}  // namespace of::compiler
