// SPDX-License-Identifier: Apache-2.0
// An Outbox that keeps what a TaskState sends, for tests that step the protocol by hand.
#pragma once

#include <deque>

#include "runtime/actors/protocol.h"

namespace of::runtime::testing {

struct Msg {
  char kind;  // 'r' ready, 'f' free, 'e' eos
  plan::TaskId to;
  plan::RegstId regst;
  int32_t slot;
  int64_t piece;
  bool operator==(const Msg&) const = default;
};

struct Recorder final : Outbox {
  std::deque<Msg> sent;
  void ready(plan::TaskId to, plan::RegstId r, int32_t s, int64_t p) override { sent.push_back({'r', to, r, s, p}); }
  void free(plan::TaskId to, plan::RegstId r, int32_t s) override { sent.push_back({'f', to, r, s, -1}); }
  void eos(plan::TaskId to, plan::RegstId r) override { sent.push_back({'e', to, r, -1, -1}); }
};

}  // namespace of::runtime::testing
