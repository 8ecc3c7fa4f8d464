// SPDX-License-Identifier: Apache-2.0
// Runs a set of TaskStates as CAF actors, one actor per task, until every task is done or one
// fails. The only runtime header that knows CAF exists is messages.h; this one does not.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/actors/protocol.h"
#include "runtime/transport/bootstrap.h"
#include "runtime/transport/routes.h"

namespace of::runtime {

// One rank of a multi-process run: `tasks` holds this rank's tasks (null for the others'), and
// messages to other ranks' tasks go over UCX. Ranks meet (bootstrap) before the first message
// and again after the last; a failure anywhere, or a rank whose connection closes, stops every
// rank, each naming the rank that failed first.
struct RemoteRun {
  const transport::RankRoutes* routes = nullptr;
  const std::vector<std::vector<uint8_t*>>* landing = nullptr;  // PlanInstance::landing()
  uint8_t* const* arenas = nullptr;                               // where this rank's slots are
  transport::BootstrapOptions boot;
};

struct SchedulerOptions {
  int threads = 0;          // CAF worker threads; 0: one per core
  std::string policy = "sharing";  // or "stealing"
  // > 0: a run in which no task handles a message for this long has stalled (a plan whose slots
  // can never free): it is stopped and fails naming the tasks not done. 0: never (a kernel may
  // legitimately run for minutes).
  double stall_seconds = 0;
  const RemoteRun* remote = nullptr;  // null: every task of the plan runs in this process
  // Set at the first failure, for what waits outside the actors on their behalf (a checkpoint
  // commit waiting for another rank's shard must give up, or the act that saves next blocks).
  std::atomic<bool>* failed = nullptr;
};

struct ActorRunResult {
  std::string error;   // the first failure's message; empty on success
  double seconds = 0;  // from the start messages to the last actor's exit (no system start-up)
};

// Blocks until all tasks finished or one failed.
// `tasks` are every task of `plan`, by id (a stall is reported with the plan's task names); in a
// multi-process run, null for the tasks of other ranks.
ActorRunResult run_actors(const plan::Plan& plan, std::vector<std::unique_ptr<TaskState>>& tasks, const SchedulerOptions& options);

}  // namespace of::runtime
