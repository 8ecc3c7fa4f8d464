// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/step_time.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <memory_resource>
#include <queue>

#include "common/error.h"
#include "kernels/kernel_work.h"
#include "schemas/task_state.h"

namespace of::compiler {

namespace {

using plan::InputKind;
using plan::Plan;
using plan::Regst;
using plan::Task;
using plan::TaskKind;

TensorDesc input_desc(const PlayedPlan& pp, const plan::TaskInput& in) {
  const Plan& p = pp.plan;
  // ofc's plan has no tensor table yet (the plan writer adds it): variables by the graph's values.
  if (in.kind != InputKind::variable) return plan::input_desc(p, in);
  const size_t t = size_t(p.variables[size_t(in.id)].tensor);
  OF_ASSERT(t < pp.tensors.size(), "a variable's tensor has no description");
  return pp.tensors[t];
}

uint64_t out_bytes(const Plan& p, const Task& t) {
  uint64_t b = 0;
  for (plan::RegstId r : t.out_regsts)
    for (const plan::Blob& blob : p.regsts[size_t(r)].blobs) b += blob.bytes;
  return b;
}

}  // namespace

double act_seconds(const PlayedPlan& pp, const Task& t, const MachineCosts& c, bool shared) {
  const Plan& p = pp.plan;
  double s = c.task_overhead_s;
  const double copy_bytes_per_s = shared ? c.shared_copy_bytes_per_s : c.copy_bytes_per_s;
  switch (t.kind) {
    case TaskKind::source: return s + double(out_bytes(p, t)) / copy_bytes_per_s;
    case TaskKind::sink:
    case TaskKind::snapshot: return s;
    case TaskKind::transfer: {
      const Regst& from = p.regsts[size_t(t.in_regsts.at(0))];
      const plan::DeviceRef& there = p.devices[size_t(p.tasks[size_t(from.producer)].device)];
      const plan::DeviceRef& here = p.devices[size_t(t.device)];
      const double bytes = double(out_bytes(p, t));
      if (there.rank != here.rank) return s + c.rank_latency_s + bytes / c.rank_bytes_per_s;
      return s + bytes / (there.kind != here.kind ? c.host_bytes_per_s : copy_bytes_per_s);  // h2d, d2h or within a kind
    }
    case TaskKind::collective: {
      double bytes = double(out_bytes(p, t));
      for (const plan::TaskInput& in : t.inputs) bytes += double(input_desc(pp, in).bytes());
      return s + bytes / copy_bytes_per_s;
    }
    case TaskKind::compute: break;
  }
  std::vector<TensorDesc> in;
  for (const plan::TaskInput& i : t.inputs) in.push_back(input_desc(pp, i));
  const std::vector<TensorDesc> out = plan::output_descs(p, t);
  const std::map<std::string, double>& shapes = shared ? c.shared_shapes : c.shapes;
  if (!shapes.empty())  // measured on these very shapes
    if (auto it = shapes.find(kernel_shape_key(t.kernel, t.attrs, in, out)); it != shapes.end()) return s + it->second;
  const kernels::KernelWork w = kernels::kernel_work(t.kernel, t.attrs, in, out);
  // Not measured beside the others: its time alone, slowed as its kind of work is.
  const double slowed = shared ? c.rates[size_t(w.kind)] / c.shared_rates[size_t(w.kind)] : 1.0;
  if (shared && !c.shapes.empty())
    if (auto it = c.shapes.find(kernel_shape_key(t.kernel, t.attrs, in, out)); it != c.shapes.end()) return s + it->second * slowed;
  const double work = w.measure();
  if (auto it = c.kernels.find(t.kernel); it != c.kernels.end()) return s + (it->second.fixed_s + work / it->second.rate) * slowed;
  return s + work / c.rates[size_t(w.kind)] * slowed;
}

namespace {

// The play: every task's protocol (schemas/task_state.h, the runtime's own) with actions that
// complete late, at the time their device finishes them. Devices run acts in the order they were
// asked for; messages arrive when they are sent.
class Play {
 public:
  Play(const PlayedPlan& pp, const MachineCosts& costs, int64_t pieces) : pp_(pp), task_free_(pp.plan.tasks.size(), 0.0) {
    const Plan& p = pp.plan;
    // A rank's CPU devices share its workers, one per device (ofrun --threads D in a process of D
    // devices); a GPU is its own worker (its stream), beside them.
    int32_t ranks = 0;
    for (const plan::DeviceRef& d : p.devices) ranks = std::max(ranks, d.rank + 1);
    workers_.resize(size_t(ranks));
    for (const plan::DeviceRef& d : p.devices) {
      worker_of_.push_back(d.kind == 0 ? d.rank : int32_t(workers_.size()));
      if (d.kind != 0) workers_.emplace_back();
      workers_[size_t(worker_of_.back())].push_back(0.0);
    }
    cost_.reserve(p.tasks.size());
    for (const Task& t : p.tasks) cost_.push_back(act_seconds(pp, t, costs));
    // Acts of a rank's CPU devices slow each other down (shared memory bandwidth and caches) when
    // the costs say by how much: their cost beside every other core busy.
    if (costs.shared_cores > 1) {
      shared_others_ = double(costs.shared_cores - 1);
      shared_cost_.assign(p.tasks.size(), 0.0);
      for (const Task& t : p.tasks)
        if (p.devices[size_t(t.device)].kind == 0 && workers_[size_t(worker_of_[size_t(t.device)])].size() > 1)
          shared_cost_[size_t(t.id)] = act_seconds(pp, t, costs, true);
    }
    busy_.assign(p.devices.size(), 0.0);
    // Reserved once: the states keep pointers to their actions, the queue's messages ids.
    actions_.reserve(p.tasks.size());
    tasks_.reserve(p.tasks.size());
    for (const Task& t : p.tasks) {
      actions_.emplace_back(*this, t.id);
      tasks_.emplace_back(p, t.id, &actions_.back(), nullptr, std::numeric_limits<int32_t>::max(), pieces, 0, nullptr, nullptr, &memory_);
    }
  }

  // Runs to the end; false if some task never finished (check-plan refuses such plans first).
  bool run() {
    for (auto& t : tasks_) t.start(out_);
    while (!out_.q.empty() || !events_.empty()) {
      if (!out_.q.empty()) {
        const Queue::Message m = out_.q.front();
        out_.q.pop_front();
        protocol::TaskState& s = tasks_[size_t(m.to)];
        if (m.kind == 'r') s.on_ready(m.regst, m.slot, m.piece, out_);
        else if (m.kind == 'f') s.on_free(m.regst, m.slot, out_);
        else s.on_eos(m.regst, out_);
        continue;
      }
      const Event e = events_.top();
      events_.pop();
      now_ = e.at;
      tasks_[size_t(e.task)].on_completed(out_);
    }
    return std::all_of(tasks_.begin(), tasks_.end(), [](const auto& t) { return t.done(); });
  }

  // Per sink, when each of its acts ended (the run's progress as ofrun's sink sees it).
  const std::vector<std::vector<double>>& sink_ends() const { return sink_ends_; }
  const std::vector<double>& busy() const { return busy_; }

 private:
  struct Queue final : protocol::Outbox {
    struct Message {
      char kind;
      plan::TaskId to;
      plan::RegstId regst;
      int32_t slot;
      int64_t piece;
    };
    void ready(plan::TaskId to, plan::RegstId regst, int32_t slot, int64_t piece) override { q.push_back({'r', to, regst, slot, piece}); }
    void free(plan::TaskId to, plan::RegstId regst, int32_t slot) override { q.push_back({'f', to, regst, slot, 0}); }
    void eos(plan::TaskId to, plan::RegstId regst) override { q.push_back({'e', to, regst, 0, 0}); }
    std::deque<Message> q;
  };
  struct Event {
    double at;
    int64_t seq;  // ties in the order acts were asked for
    plan::TaskId task;
    bool operator>(const Event& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  class TimedAction final : public protocol::Action {
   public:
    TimedAction(Play& play, plan::TaskId task) : play_(play), task_(task) {}
    void act(int64_t, const void* const*, void* const*) override { play_.submit(task_); }
    bool completes_late() const override { return true; }

   private:
    Play& play_;
    plan::TaskId task_;
  };

  void submit(plan::TaskId task) {
    const Task& t = pp_.plan.tasks[size_t(task)];
    // The worker that frees first runs it, once the task's own act before it has ended.
    auto& workers = workers_[size_t(worker_of_[size_t(t.device)])];
    std::pop_heap(workers.begin(), workers.end(), std::greater<>());
    const double start = std::max({now_, workers.back(), task_free_[size_t(task)]});
    double cost = cost_[size_t(task)];
    if (!shared_cost_.empty() && shared_cost_[size_t(task)] > cost) {
      // Beside k busy workers of its rank, k / (shared_cores - 1) of the way to its shared cost.
      // (Weighing each by how long its act overlaps this one predicted worse: acts that start
      // later are not foreseen, so devices in step saw half the contention they have.)
      double busy = 0;
      for (size_t w = 0; w + 1 < workers.size(); ++w) busy += workers[w] > start ? 1 : 0;
      cost += (shared_cost_[size_t(task)] - cost) * std::min(1.0, busy / shared_others_);
    }
    const double end = start + cost;
    workers.back() = end;
    std::push_heap(workers.begin(), workers.end(), std::greater<>());
    task_free_[size_t(task)] = end;
    busy_[size_t(t.device)] += cost;
    events_.push(Event{end, seq_++, task});
    if (t.kind == TaskKind::sink) {
      if (sink_of_.empty()) sink_of_.assign(pp_.plan.tasks.size(), -1);
      if (sink_of_[size_t(task)] < 0) {
        sink_of_[size_t(task)] = int32_t(sink_ends_.size());
        sink_ends_.emplace_back();
      }
      sink_ends_[size_t(sink_of_[size_t(task)])].push_back(end);
    }
  }

  const PlayedPlan& pp_;
  std::vector<double> cost_, task_free_, busy_;
  std::vector<double> shared_cost_;  // per task beside every other core busy; empty: not modelled
  double shared_others_ = 1;         // MachineCosts::shared_cores - 1
  // Per rank (its CPU devices) and per GPU, when each of its workers is free (a min-heap by
  // std::push_heap: a submit also counts the busy ones).
  std::vector<std::vector<double>> workers_;
  std::vector<int32_t> worker_of_;  // per device, its entry in workers_
  // The task states' lists, released at once with the play (a plan at scale has millions).
  std::pmr::monotonic_buffer_resource memory_;
  std::vector<TimedAction> actions_;
  std::vector<protocol::TaskState> tasks_;
  Queue out_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  double now_ = 0;
  int64_t seq_ = 0;
  std::vector<int32_t> sink_of_;
  std::vector<std::vector<double>> sink_ends_;
};

}  // namespace

StepPrediction predict_step(const PlayedPlan& pp, const MachineCosts& costs, int steps) {
  OF_ASSERT(steps >= 2, "a steady step needs two steps played");
  const int64_t k = std::max<int64_t>(1, pp.pieces_per_step);
  // Steps before the window fill the slots; steps after it keep the source from running dry
  // (a source that has emitted everything no longer competes for its device).
  const int64_t before = 1, after = 1, played = before + steps + after;
  Play play(pp, costs, k * played);
  OF_ASSERT(play.run(), "the plan stalls when played (check-plan should have refused it)");
  StepPrediction out;
  // A step ends when the sink has its last piece; the prediction is the mean over the window.
  for (const std::vector<double>& ends : play.sink_ends()) {
    const int64_t per_step = int64_t(ends.size()) / played;  // the loss per micro-batch, or one per step
    if (per_step < 1) continue;
    const double first = ends[size_t(before * per_step - 1)], last = ends[size_t((before + steps) * per_step - 1)];
    out.step_seconds = std::max(out.step_seconds, (last - first) / double(steps));
  }
  out.busy_seconds = play.busy();
  for (double& b : out.busy_seconds) b /= double(played);
  return out;
}

}  // namespace of::compiler
