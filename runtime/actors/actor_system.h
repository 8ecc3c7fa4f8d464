// SPDX-License-Identifier: Apache-2.0
// Runs a set of TaskStates as CAF actors, one actor per task, until every task is done or one
// fails. The only runtime header that knows CAF exists is messages.h; this one does not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/actors/protocol.h"

namespace of::runtime {

struct SchedulerOptions {
  int threads = 0;          // CAF worker threads; 0: one per core
  std::string policy = "sharing";  // or "stealing"
  // > 0: a run in which no task handles a message for this long has stalled (a plan whose slots
  // can never free): it is stopped and fails naming the tasks not done. 0: never (a kernel may
  // legitimately run for minutes).
  double stall_seconds = 0;
};

struct ActorRunResult {
  std::string error;   // the first failure's message; empty on success
  double seconds = 0;  // from the start messages to the last actor's exit (no system start-up)
};

// Blocks until all tasks finished or one failed.
// `tasks` are every task of `plan`, by id (a stall is reported with the plan's task names).
ActorRunResult run_actors(const plan::Plan& plan, std::vector<std::unique_ptr<TaskState>>& tasks, const SchedulerOptions& options);

}  // namespace of::runtime
