// SPDX-License-Identifier: Apache-2.0
// When two buffers of an arena may share bytes: the one rule ofc builds to (compiler/passes/
// share_memory.cpp) and ofrun checks before it trusts a plan (runtime/plan/load.cpp).
//
// Actors work on different pieces at once, so a buffer is live for the whole run unless the plan
// orders its uses. A share group does: its tasks (compute tasks of one device) have an order in
// which consecutive tasks are joined by a streamed register, so within a piece each acts after
// the one before it has completed; and its frame register joins the first task to the last with
// at most `slots` slots, so the first task starts piece n + slots only after the last has
// completed piece n. Every register of the group has `slots` slots, and piece n uses slot
// n mod slots (the producer's ring), so slot j of every register of the group belongs to frame j.
// Inside a frame a register lives from its producer's place in the order to its last reader's.
// Two buffers may then share bytes only when both are slot j of registers of one group and their
// lifetimes do not overlap: the later one's producer acts after the earlier one's readers within
// a piece, and the next piece in that frame starts after both have left it. `ofrun --slots`
// lowers every register's and the frame's slot count alike, which keeps both properties.
#pragma once

#include <string>
#include <vector>

#include "schemas/plan_model.h"

namespace of::plan {

// A register's lifetime in its group's order: the producer's place and its last reader's.
struct Lifetime {
  int32_t first = 0;
  int32_t last = 0;
};

// Each task's place in group `g`'s order, -1 for tasks not in it; sized to the plan's tasks.
std::vector<int32_t> places_in_group(const Plan& p, const ShareGroup& g);
Lifetime lifetime_in_group(const Regst& r, const std::vector<int32_t>& places);

// Refuses, in one line naming the file and field, a plan whose share groups are not ordered as
// above or whose buffers share bytes the rule does not allow. Needs task and register ids that
// have been checked to be in range.
void check_shared_memory(const Plan& p, const std::string& path);

}  // namespace of::plan
