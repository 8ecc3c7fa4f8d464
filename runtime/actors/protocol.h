// SPDX-License-Identifier: Apache-2.0
// The actor protocol (schemas/task_state.h) under the names the runtime uses.
#pragma once

#include "schemas/task_state.h"

namespace of::runtime {

using protocol::Action;
using protocol::Completion;
using protocol::ActRecord;
using protocol::Outbox;
using protocol::TaskState;

}  // namespace of::runtime
