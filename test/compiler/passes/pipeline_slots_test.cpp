// SPDX-License-Identifier: Apache-2.0
// Pipeline slots by need: with --pp, a forward output the backward pass reads (an activation kept
// for it) gets a slot per micro-batch the later stages may still hold, plus one; an output only
// the forward pass reads gets the streaming slots. The plan still passes the deadlock check.
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "compiler/passes/pass.h"

using namespace of::compiler;

namespace {

// The physical node a task runs, by name (transfers have none).
const Node* node_of(const Graph& g, const Task& t) {
  for (const Node& n : g.nodes)
    if (n.name == t.name) return &n;
  return nullptr;
}

bool backward(const Node* n) { return n && (n->forward >= 0 || !n->inplace.empty()); }

// Whether a backward or update task reads register r, directly or through transfers.
bool read_by_backward(const Compilation& c, RegstId r) {
  for (TaskId t : c.tasks.regsts[size_t(r)].consumers) {
    const Task& task = c.tasks.tasks[size_t(t)];
    if (backward(node_of(c.graph, task))) return true;
    if (task.kind == TaskKind::transfer && read_by_backward(c, task.out_regsts[0])) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("pipeline slots: only activations the backward pass reads are held for the micro-batches in flight", "[compiler]") {
  for (int32_t pp : {2, 4}) {
    INFO("pp " << pp);
    CompileOptions o;
    o.loss = "cross_entropy";
    o.train = true;
    o.devices = pp;
    o.pp = pp;
    o.micro_batches = 4;
    const Compilation c = compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);  // the deadlock check passed
    int held = 0, streamed = 0;
    for (const Task& t : c.tasks.tasks) {
      const Node* n = node_of(c.graph, t);
      if (t.kind != TaskKind::compute || !n || backward(n) || n->kernel == "accumulate") continue;
      const int32_t stage = c.parallel.stage_of_device[size_t(t.device)];
      for (RegstId r : t.out_regsts) {
        const Regst& regst = c.tasks.regsts[size_t(r)];
        if (regst.persistent) continue;
        INFO("task " << t.name << " stage " << stage);
        if (read_by_backward(c, r)) {
          CHECK(regst.slots == std::max(o.slots, pp - stage + 1));
          ++held;
        } else {
          CHECK(regst.slots == o.slots);
          ++streamed;
        }
      }
    }
    CHECK(held > 0);
    CHECK(streamed > 0);  // the logits, which only the loss reads
  }
}
