// SPDX-License-Identifier: Apache-2.0
// Copies: how a plan file stores the entries that repeat on every device once. A data-parallel
// plan on D devices holds each op's task, register, tensor and variable D times, alike but for
// their ids, device and name suffix ("fc1@0", "fc1@1", ...); the file keeps the first of such a
// run of consecutive entries with a count and, per reference it holds, the step each copy adds
// (copy k of a task reads register r + k * step, runs on device d + k * step, is named
// "fc1@" + (n + k * name_step)).
// The encoder folds a run only where shifting its first entry gives each following entry
// exactly, so decoding gives back the very plan encoded, and the runtime's verifier then checks
// the expanded plan as any other. Only the codec uses this: in memory a plan is always whole.
#pragma once

#include <cstdint>
#include <vector>

#include "schemas/plan_model.h"

namespace of::plan {

// The kinds of reference an entry holds, in the order each_ref (plan_copies.cpp) visits them:
// a task's id, device, inputs, in_regsts, out_regsts; a register's id, producer, consumers,
// arena, blobs' tensors, share group; a variable's id, tensor, arena; an arena's id, device; a
// share group's tasks, frames. A tensor holds none (its name and box advance).
enum class Ref : int32_t { tasks = 0, regsts, variables, arenas, tensors, devices, share_groups };

struct Copies {
  int64_t count = 1;                // entries this one stands for, itself first
  std::vector<int64_t> steps;       // per reference, in each_ref's order: what each copy adds
  int64_t name_step = 0;            // what each copy adds to the number after the name's last '@'
  std::vector<int64_t> shard_step;  // tensors: what each copy adds to shard_begin (else empty)
};

// A run: entries [first, first + copies.count) of a table, each the first shifted.
struct Run {
  size_t first = 0;
  Copies copies;
};

// The runs a table folds into, in order, covering it (a lone entry is a run of one).
std::vector<Run> find_runs(const std::vector<Task>& entries);
std::vector<Run> find_runs(const std::vector<Regst>& entries);
std::vector<Run> find_runs(const std::vector<Variable>& entries);
std::vector<Run> find_runs(const std::vector<Arena>& entries);
std::vector<Run> find_runs(const std::vector<LogicalTensor>& entries);
std::vector<Run> find_runs(const std::vector<ShareGroup>& entries);

// About the bytes an entry holds in memory (itself and what its vectors and strings hold): what
// decoding a run of copies costs, bounded before it is expanded.
uint64_t held_bytes(const Task& e);
uint64_t held_bytes(const Regst& e);
uint64_t held_bytes(const Variable& e);
uint64_t held_bytes(const Arena& e);
uint64_t held_bytes(const LogicalTensor& e);
uint64_t held_bytes(const ShareGroup& e);

// Copy k of `first`: every reference advanced by k times its step. Returns false (and leaves
// `out` unspecified) where a shifted reference leaves the range of an int32 or a name's number.
bool shifted(const Task& first, int64_t k, const Copies& c, Task& out);
bool shifted(const Regst& first, int64_t k, const Copies& c, Regst& out);
bool shifted(const Variable& first, int64_t k, const Copies& c, Variable& out);
bool shifted(const Arena& first, int64_t k, const Copies& c, Arena& out);
bool shifted(const LogicalTensor& first, int64_t k, const Copies& c, LogicalTensor& out);
bool shifted(const ShareGroup& first, int64_t k, const Copies& c, ShareGroup& out);

}  // namespace of::plan
