// SPDX-License-Identifier: Apache-2.0
// ofdump's views of a plan: a summary and task table for people, JSON for programs (field names
// are stable: tests and scripts depend on them), and Graphviz DOT.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schemas/plan_model.h"

namespace of::runtime {

std::string dump_text(const plan::Plan& p, const std::string& path);
std::string dump_json(const plan::Plan& p);
// The predicted step time and, for ofc --auto, the strategies weighed ("" when not predicted).
std::string dump_prediction(const plan::Plan& p);
std::string dump_dot(const plan::Plan& p);
// Every logical tensor's placement and SBP, and every boxing the compiler inserted, with why.
std::string dump_sbp(const plan::Plan& p);
// Per device: its arena's bytes (the most the run ever holds there: every slot has its place).
std::string dump_memory(const plan::Plan& p);
// Per arena: the end of its highest slot or variable (what a run that uses every slot touches).
std::vector<uint64_t> arena_peaks(const plan::Plan& p);
// Pipeline stages: their devices, ops (forward and backward), tasks and memory.
std::string dump_stages(const plan::Plan& p);
// What changed from plan `a` to plan `b`: tasks, registers, memory per device, SBP of tensors
// (empty: none of these).
std::string dump_diff(const plan::Plan& a, const plan::Plan& b);

}  // namespace of::runtime
