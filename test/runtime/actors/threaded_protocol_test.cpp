// SPDX-License-Identifier: Apache-2.0
// The slot protocol under real concurrency, without CAF: TaskStates driven by a small
// hand-written scheduler on several threads, with data flowing through the register slots.
// This is the test the TSan suite relies on: Debian's CAF is not instrumented, so TSan cannot
// check runs through CAF, but it can check everything of ours that runs concurrently here
// (TaskState, the actions, slot memory hand-offs).
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "runtime/actors/actions.h"
#include "runtime/actors/protocol.h"
#include "runtime/actors/chain_plan.h"
#include "runtime/actors/weight_plan.h"

using namespace of;
using namespace of::runtime;
using of::runtime::testing::AddOne;
using of::runtime::testing::chain;

namespace {

struct Msg {
  char kind;  // 'r' ready, 'f' free, 'e' eos, 's' start
  plan::RegstId regst;
  int32_t slot;
  int64_t piece;
};

// One mailbox per task; a task is run by at most one worker at a time (its `scheduled` flag),
// which is the guarantee CAF gives an actor.
class MiniScheduler {
 public:
  explicit MiniScheduler(std::vector<TaskState*> tasks) : tasks_(std::move(tasks)), boxes_(tasks_.size()) {}

  void post(plan::TaskId to, Msg m) {
    Box& b = boxes_[size_t(to)];
    std::lock_guard<std::mutex> lock(b.m);
    b.q.push_back(m);
    if (!b.scheduled) {
      b.scheduled = true;
      std::lock_guard<std::mutex> rq(run_m_);
      runnable_.push_back(to);
      run_cv_.notify_one();
    }
  }

  void run(int threads) {
    for (size_t t = 0; t < tasks_.size(); ++t) post(plan::TaskId(t), Msg{'s', 0, 0, 0});
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i) workers.emplace_back([this] { work(); });
    for (auto& w : workers) w.join();
  }

 private:
  struct Outbox final : runtime::Outbox {
    MiniScheduler* s;
    explicit Outbox(MiniScheduler* sched) : s(sched) {}
    void ready(plan::TaskId to, plan::RegstId r, int32_t slot, int64_t p) override { s->post(to, {'r', r, slot, p}); }
    void free(plan::TaskId to, plan::RegstId r, int32_t slot) override { s->post(to, {'f', r, slot, -1}); }
    void eos(plan::TaskId to, plan::RegstId r) override { s->post(to, {'e', r, -1, -1}); }
  };
  struct Box {
    std::mutex m;
    std::deque<Msg> q;
    bool scheduled = false;
  };

  void work() {
    Outbox out(this);
    for (;;) {
      plan::TaskId id;
      {
        std::unique_lock<std::mutex> lock(run_m_);
        run_cv_.wait(lock, [this] { return !runnable_.empty() || done_ == tasks_.size(); });
        if (runnable_.empty()) return;
        id = runnable_.front();
        runnable_.pop_front();
      }
      TaskState& task = *tasks_[size_t(id)];
      Box& b = boxes_[size_t(id)];
      for (;;) {
        Msg m;
        {
          std::lock_guard<std::mutex> lock(b.m);
          if (b.q.empty()) {
            b.scheduled = false;
            break;
          }
          m = b.q.front();
          b.q.pop_front();
        }
        bool was_done = task.done();
        switch (m.kind) {
          case 's': task.start(out); break;
          case 'r': task.on_ready(m.regst, m.slot, m.piece, out); break;
          case 'f': task.on_free(m.regst, m.slot, out); break;
          case 'e': task.on_eos(m.regst, out); break;
        }
        if (!was_done && task.done()) {
          std::lock_guard<std::mutex> lock(run_m_);
          ++done_;
          run_cv_.notify_all();
        }
      }
    }
  }

  std::vector<TaskState*> tasks_;
  std::vector<Box> boxes_;
  std::mutex run_m_;
  std::condition_variable run_cv_;
  std::deque<plan::TaskId> runnable_;
  size_t done_ = 0;
};

}  // namespace

TEST_CASE("task_state: a chain streams every piece in order on 1, 2 and 4 threads", "[runtime]") {
  const int stages = 6;
  const int64_t pieces = 300;
  for (int threads : {1, 2, 4}) {
    for (int32_t slots : {1, 2, 3}) {
      plan::Plan p = chain(stages, slots);
      std::vector<uint8_t> arena(p.arenas[0].bytes);
      uint8_t* arenas[] = {arena.data()};
      std::vector<float> inputs(pieces), outputs(pieces, -1.0f);
      for (int64_t i = 0; i < pieces; ++i) inputs[size_t(i)] = float(i);
      SourceAction source({SourceAction::Feed{reinterpret_cast<const uint8_t*>(inputs.data()), pieces, 4, 0, 4}});
      SinkAction sink({SinkAction::Collect{reinterpret_cast<uint8_t*>(outputs.data()), pieces, 4}});
      std::vector<AddOne> adds(stages);
      std::vector<std::unique_ptr<TaskState>> states;
      std::vector<TaskState*> raw;
      for (int t = 0; t <= stages + 1; ++t) {
        Action* a = t == 0 ? static_cast<Action*>(&source) : t == stages + 1 ? static_cast<Action*>(&sink) : &adds[size_t(t - 1)];
        states.push_back(std::make_unique<TaskState>(p, t, a, arenas, slots, pieces, 0));
        raw.push_back(states.back().get());
      }
      MiniScheduler(raw).run(threads);
      INFO("threads " << threads << ", slots " << slots);
      for (const auto& s : states) CHECK(s->done());
      for (int64_t i = 0; i < pieces; ++i) REQUIRE(outputs[size_t(i)] == float(i + stages));
    }
  }
}

TEST_CASE("task_state: persistent registers give every reader of piece n version n on 1, 2 and 4 threads", "[runtime]") {
  constexpr int64_t kPieces = 300;
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    testing::WeightRun run(kPieces);
    std::vector<TaskState*> raw;
    for (const auto& t : run.tasks) raw.push_back(t.get());
    MiniScheduler(raw).run(threads);
    CHECK(run.u.aliased);
    for (int64_t n = 0; n < kPieces; ++n) {
      INFO("piece " << n);
      REQUIRE(run.y[size_t(n)] == float(n));
      REQUIRE(run.z[size_t(n)] == float(n));
    }
    CHECK(run.weight() == float(kPieces));
    for (const auto& t : run.tasks) CHECK(t->done());
  }
}

TEST_CASE("task_state: with micro-batches every reader of a step's pieces sees that step's version, on 1, 2 and 4 threads", "[runtime]") {
  constexpr int64_t kPieces = 240;
  constexpr int32_t kMicro = 4;
  for (int threads : {1, 2, 4}) {
    INFO("threads " << threads);
    testing::WeightRun run(kPieces, kMicro);
    std::vector<TaskState*> raw;
    for (const auto& t : run.tasks) raw.push_back(t.get());
    MiniScheduler(raw).run(threads);
    for (int64_t n = 0; n < kPieces; ++n) {
      INFO("piece " << n);
      REQUIRE(run.y[size_t(n)] == float(kMicro * (n / kMicro)));
      REQUIRE(run.z[size_t(n)] == float(kMicro * (n / kMicro)));
    }
    CHECK(run.weight() == float(kPieces));  // one update per step, adding the step's k ones
    CHECK(run.tasks[3]->acts() == kPieces / kMicro);
    for (const auto& t : run.tasks) CHECK(t->done());
  }
}
