// SPDX-License-Identifier: Apache-2.0
// share-memory (part of plan-memory). Why groups are shaped this way:
// - Only registers whose producer and readers are compute tasks of the register's own device
//   share: their uses are ordered by that device's tasks alone. A register read by a transfer (or
//   landed by one from another rank), a source, a sink or a snapshot keeps its own bytes.
// - A group holds registers of one slot count, so that slot j of each is used by the same pieces.
//   Tasks joined by such registers form one group; registers of other slot counts (a pipeline
//   stage's activations kept for the backward pass, pp - s + 1 slots) do not join them, so the
//   forward and the backward of a stage stay separate groups whose frames bound only the pieces
//   in each, not the pieces the pipeline keeps between them.
// - Two registers share bytes only where the plan's registers order them (one's readers reach
//   the other's producer). Sharing adds two kinds of order. Order edges inside a piece: each task
//   precedes the third spine task after it (add_order_edges), so that a branch off the chain (a
//   weight gradient) lets its inputs go, while independent branches (a layer's weight and input
//   gradients) still run at once. And the frame: the group's first task precedes its other
//   sources, and waits for the group's ends of piece n before it starts piece n + slots.
//   Measured on the GPT (anchors' shape, Adam): 234.8 -> 208.8 MiB, samples/s within noise (one
//   task of slack, 204.8 MiB, ran slower).
#include "compiler/passes/share_memory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>

#include "compiler/passes/memory_planner.h"
#include "schemas/shared_memory.h"

namespace of::compiler {
namespace {

// A group too big for one order check is cut into windows of about this many tasks: small
// enough that a 77k-task chain's windows fit the plan's order bits (plan::kMaxShareOrderBits)
// together, large enough that each spans many layers.
constexpr size_t kWindowTasks = 4096;

bool streamed_per_piece(const Regst& r) { return !r.persistent && r.acts_per_piece == 1; }

// A compute or collective task of `device`.
bool local_compute(const TaskGraph& tg, TaskId t, int32_t device) {
  const Task& task = tg.tasks[size_t(t)];
  return (task.kind == TaskKind::compute || task.kind == TaskKind::collective) && task.device == device;
}

int32_t rank_of(const TaskGraph& tg, int32_t device) {
  return size_t(device) < tg.devices.size() ? tg.devices[size_t(device)].rank : 0;
}

// For `outside`, another device's collective part that reads register r in place: a task of r's
// device that may wait for it (the shared-memory rule's proxy), or -1. That is a reader of what
// r's own device's part makes of r (the update or accumulation after a reduction), which waits
// for that part anyway; it must come after `outside` in id order, which plans keep
// topological, so the wait closes no cycle. Only within one rank: across ranks the reader reads
// a landed copy.
TaskId proxy_of(const TaskGraph& tg, const Regst& r, TaskId outside) {
  const int32_t device = tg.arenas[size_t(r.arena)].device;
  const Task& o = tg.tasks[size_t(outside)];
  if (o.kind != TaskKind::collective || o.device == device || rank_of(tg, o.device) != rank_of(tg, device)) return -1;
  TaskId best = -1;
  for (TaskId part : r.consumers) {
    if (!local_compute(tg, part, device) || tg.tasks[size_t(part)].kind != TaskKind::collective) continue;
    for (RegstId out : tg.tasks[size_t(part)].out_regsts) {
      const Regst& x = tg.regsts[size_t(out)];
      if (x.producer != part || !streamed_per_piece(x) || x.blobs.empty()) continue;
      for (TaskId d : x.consumers)
        if (d > outside && local_compute(tg, d, device) && (best < 0 || d < best)) best = d;
    }
  }
  return best;
}

bool may_share(const TaskGraph& tg, const Regst& r) {
  if (!streamed_per_piece(r) || r.slot_bytes == 0 || r.blobs.empty() || r.consumers.empty()) return false;
  const int32_t device = tg.arenas[size_t(r.arena)].device;
  if (!local_compute(tg, r.producer, device)) return false;
  return std::all_of(r.consumers.begin(), r.consumers.end(),
                     [&](TaskId c) { return local_compute(tg, c, device) || proxy_of(tg, r, c) >= 0; });
}

// Disjoint sets of tasks. One per plan, emptied between devices by undoing only what was joined
// (a device's joins touch its own tasks; a fresh array per device was a gigabyte-sized memset
// at 1024 devices).
struct Sets {
  std::vector<int32_t> parent;
  std::vector<int32_t> touched;
  explicit Sets(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t x) {
    while (parent[size_t(x)] != x) {
      touched.push_back(x);
      x = parent[size_t(x)] = parent[size_t(parent[size_t(x)])];
    }
    return x;
  }
  void join(int32_t a, int32_t b) {
    const int32_t ra = find(a);
    touched.push_back(ra);
    parent[size_t(ra)] = find(b);
  }
  void clear() {
    for (int32_t x : touched) parent[size_t(x)] = x;
    touched.clear();
  }
};

// A control register: orders `to` after `from` for each piece, carrying nothing.
RegstId add_control(TaskGraph& tg, TaskId from, TaskId to, int32_t slots, int32_t arena) {
  Regst c;
  c.id = RegstId(tg.regsts.size());
  c.producer = from;
  c.consumers = {to};
  c.slots = slots;
  c.arena = arena;
  tg.regsts.push_back(c);
  tg.tasks[size_t(from)].out_regsts.push_back(c.id);
  tg.tasks[size_t(to)].in_regsts.push_back(c.id);
  return c.id;
}

// Order edges: each task of the group precedes a later task (in id order) of the group's spine
// (its tasks whose streamed outputs other tasks of the group read), unless it already does. A task
// that precedes nothing (a weight gradient on its way to its update, the update) would keep every
// register it reads live together with every later one; preceding a spine task some way on lets
// its inputs' bytes go to what comes after that. Ids follow node order, so an edge to a later id
// never closes a cycle.
//
// How far on: the group's chain is a longest path through it (the forward pass, the loss, the
// input gradients back to the first layer). A task on it precedes the kOrderSlack-th spine task
// after it (tasks on paths as long run abreast). Off it, what ShareOrder says: beside the chain
// means the kBranchSlack-th chain task on, so the chain does not wait for it soon. A reduction
// over devices waits for the other devices, and running beside the backward pass is what
// overlaps it (ShareOrder::overlap, the default: the MLP at dp=2 ran 20% slower than with its
// registers apart when its reductions and updates went 3 tasks on; the GPT of gpt_parallel.py
// at dp=2 takes 63.7 MiB, against 61.8 tight). A device's own off-chain tasks (a weight
// gradient, an update) run beside the chain only when the device runs several tasks at once
// (ofrun --threads above the devices on CPU): ShareOrder::loose, for speed (that GPT on one
// device 73.2 -> 80.7 MiB, the one-device MLP at its speed with registers apart, 18% faster).
constexpr size_t kOrderSlack = 3;
constexpr size_t kBranchSlack = 16;
// Unless the order is tight, a group keeps its order only if it saves at least 1/kLeastGain of
// its registers' bytes: the order costs overlap (the MLP at dp=2, its groups saving 4%, ran 5%
// slower than with its registers apart).
constexpr uint64_t kLeastGain = 8;

void add_order_edges(TaskGraph& tg, const std::vector<TaskId>& tasks, ShareOrder how, int32_t slots, int32_t arena) {
  const plan::GroupOrder order(tg, tasks);
  auto index = [&](TaskId t) { return size_t(std::lower_bound(tasks.begin(), tasks.end(), t) - tasks.begin()); };
  // The group's readers of task i's streamed outputs (later tasks only: ids are topological).
  auto readers = [&](size_t i) {
    std::vector<size_t> out;
    const Task& t = tg.tasks[size_t(tasks[i])];
    for (RegstId r : t.out_regsts) {
      const Regst& x = tg.regsts[size_t(r)];
      if (x.producer != t.id || !streamed_per_piece(x)) continue;
      for (TaskId c : x.consumers)
        if (order.in_group(c) && c > t.id) out.push_back(index(c));
    }
    return out;
  };
  // The chain: the tasks on a longest path (counted in tasks; ids are topological).
  std::vector<size_t> from_start(tasks.size()), to_end(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i)
    for (size_t c : readers(i)) from_start[c] = std::max(from_start[c], from_start[i] + 1);
  for (size_t i = tasks.size(); i-- > 0;)
    for (size_t c : readers(i)) to_end[i] = std::max(to_end[i], to_end[c] + 1);
  size_t longest = 0;
  for (size_t i = 0; i < tasks.size(); ++i) longest = std::max(longest, from_start[i] + to_end[i]);
  auto on_chain = [&](size_t i) { return from_start[i] + to_end[i] == longest; };
  // Off the chain and beside it: a reduction over devices (or, loose, any task) and what it feeds.
  std::vector<uint8_t> beside(tasks.size());
  for (size_t i = 0; i < tasks.size() && how != ShareOrder::tight; ++i) {
    if (on_chain(i)) continue;
    if (how == ShareOrder::loose || tg.tasks[size_t(tasks[i])].kind == TaskKind::collective) beside[i] = 1;
    if (beside[i])
      for (size_t c : readers(i))
        if (!on_chain(c)) beside[c] = 1;
  }
  std::vector<size_t> spine;  // indices into tasks
  for (size_t i = 0; i < tasks.size(); ++i)
    if (!beside[i] && !readers(i).empty()) spine.push_back(i);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const size_t slack = beside[i] ? kBranchSlack : kOrderSlack;
    const auto next = std::upper_bound(spine.begin(), spine.end(), i);
    if (size_t(spine.end() - next) < slack) continue;
    const TaskId to = tasks[*(next + (slack - 1))];
    if (!order.reaches(tasks[i], to)) add_control(tg, tasks[i], to, slots, arena);
  }
}

// Undoes the control registers made since `first` (a group that gains too little keeps no order).
void remove_regsts_from(TaskGraph& tg, size_t first) {
  for (size_t r = tg.regsts.size(); r-- > first;) {
    const Regst& x = tg.regsts[r];
    std::vector<RegstId>& outs = tg.tasks[size_t(x.producer)].out_regsts;
    outs.erase(std::remove(outs.begin(), outs.end(), RegstId(r)), outs.end());
    for (TaskId c : x.consumers) {
      std::vector<RegstId>& ins = tg.tasks[size_t(c)].in_regsts;
      ins.erase(std::remove(ins.begin(), ins.end(), RegstId(r)), ins.end());
    }
    tg.regsts.pop_back();
  }
}

// Offsets in one frame: two registers are live together unless one is ordered before the other.
MemoryPlan place_in_frame(const TaskGraph& tg, const plan::GroupOrder& order, const std::vector<RegstId>& members) {
  std::vector<uint64_t> bytes;
  // Best fit compares every pair: each register's readers are summed up once, as a row of the
  // tasks they have all completed before (order.before(x, y) is y's producer's bit in x's row).
  std::vector<std::vector<uint64_t>> read_before;
  std::vector<int32_t> producer;  // the index of each register's producer among the group's tasks
  for (RegstId r : members) {
    bytes.push_back(tg.regsts[size_t(r)].slot_bytes);
    read_before.push_back(order.read_before_row(tg.regsts[size_t(r)]));
    producer.push_back(order.index_of(tg.regsts[size_t(r)].producer));
  }
  return place_best_fit(bytes, [&](size_t a, size_t b) {
    return !plan::GroupOrder::has_bit(read_before[a], producer[b]) && !plan::GroupOrder::has_bit(read_before[b], producer[a]);
  });
}

}  // namespace

Sharing share_memory(TaskGraph& tg, int32_t most_frames, ShareOrder how, const std::function<bool(size_t)>& keep) {
  Sharing out;
  out.regsts_before = tg.regsts.size();
  out.groups_before = tg.share_groups.size();
  uint64_t order_bits = 0;  // what ofrun's check of the groups' orders will take (shared_memory.h)
  // Candidate groups: by (device, slots), tasks joined by the registers they share.
  std::map<std::pair<int32_t, int32_t>, std::vector<RegstId>> by_kind;
  // The streamed per-piece registers of each device between its own tasks, gathered once (not
  // scanned whole per device: a plan has millions of registers on up to 1024 devices).
  std::vector<std::vector<RegstId>> streamed_on(tg.devices.size());
  for (const Regst& r : tg.regsts) {
    if (may_share(tg, r)) by_kind[{tg.arenas[size_t(r.arena)].device, r.slots}].push_back(r.id);
    const int32_t device = tg.arenas[size_t(r.arena)].device;
    if (streamed_per_piece(r) && local_compute(tg, r.producer, device)) streamed_on[size_t(device)].push_back(r.id);
  }
  std::vector<int32_t> arena_of(tg.devices.size(), -1);
  for (const Arena& a : tg.arenas)
    if (arena_of[size_t(a.device)] < 0) arena_of[size_t(a.device)] = a.id;
  Sets sets(tg.tasks.size());
  for (const auto& by : by_kind) {
    // Named copies, not structured bindings: the lambdas below capture them (clang before 16
    // cannot capture a structured binding).
    const std::pair<int32_t, int32_t> kind = by.first;
    const std::vector<RegstId>& regsts = by.second;
    sets.clear();
    // A register read by another device's part: its producer with its readers here and with
    // the proxies of those elsewhere (which join the group in their stead).
    auto local_readers = [&](RegstId r) {
      std::vector<TaskId> out;
      const Regst& x = tg.regsts[size_t(r)];
      for (TaskId c : x.consumers) out.push_back(local_compute(tg, c, kind.first) ? c : proxy_of(tg, x, c));
      return out;
    };
    for (RegstId r : regsts)
      for (TaskId c : local_readers(r)) sets.join(tg.regsts[size_t(r)].producer, c);
    // Tasks are also joined by the per-piece registers between them on this device that stay
    // apart (a gradient that other devices' collective parts read in place): the collective
    // part that reads it and the update that reads the part's output then join the backward
    // pass's group, so the part's output shares bytes too (its order follows those registers,
    // as the rule's does) instead of forming a group of its own that gains nothing.
    for (RegstId id : streamed_on[size_t(kind.first)]) {
      const Regst& x = tg.regsts[size_t(id)];
      for (TaskId c : x.consumers)
        if (local_compute(tg, c, kind.first)) sets.join(x.producer, c);
    }
    std::map<int32_t, std::vector<RegstId>> groups;
    for (RegstId r : regsts) groups[sets.find(tg.regsts[size_t(r)].producer)].push_back(r);
    // The tasks a group of these registers spans: their producers and readers, ascending.
    auto tasks_of = [&](const std::vector<RegstId>& members) {
      std::vector<TaskId> tasks;
      for (RegstId r : members) {
        tasks.push_back(tg.regsts[size_t(r)].producer);
        for (TaskId c : local_readers(r)) tasks.push_back(c);
      }
      std::sort(tasks.begin(), tasks.end());
      tasks.erase(std::unique(tasks.begin(), tasks.end()), tasks.end());
      return tasks;
    };
    auto form = [&](const std::vector<RegstId>& members) {
      const size_t candidate = out.candidates++;
      const std::vector<TaskId> tasks = tasks_of(members);
      const uint64_t bits = uint64_t(tasks.size()) * tasks.size();
      if (tasks.size() > plan::kMaxShareGroupTasks || order_bits + bits > plan::kMaxShareOrderBits || !keep(candidate)) return;
      const int32_t slots = most_frames > 0 ? std::min(kind.second, most_frames) : kind.second;
      const int32_t arena = arena_of[size_t(kind.first)];
      const size_t regsts_before = tg.regsts.size();
      // Each reader elsewhere hands its proxy a control register: the proxy acts after it.
      for (RegstId r : members)
        for (TaskId c : std::vector<TaskId>(tg.regsts[size_t(r)].consumers))
          if (!local_compute(tg, c, kind.first)) {
            const TaskId proxy = proxy_of(tg, tg.regsts[size_t(r)], c);
            const std::vector<RegstId>& outs = tg.tasks[size_t(c)].out_regsts;
            const bool joined = std::any_of(outs.begin(), outs.end(), [&](RegstId o) {
              const Regst& x = tg.regsts[size_t(o)];
              return x.producer == c && streamed_per_piece(x) && x.consumers == std::vector<TaskId>{proxy};
            });
            if (!joined) add_control(tg, c, proxy, slots, arena_of[size_t(tg.tasks[size_t(c)].device)]);
          }
      add_order_edges(tg, tasks, how, slots, arena);
      const plan::GroupOrder order(tg, tasks);
      MemoryPlan layout = place_in_frame(tg, order, members);
      uint64_t side_by_side = 0;
      for (RegstId r : members) side_by_side = add_aligned(side_by_side, tg.regsts[size_t(r)].slot_bytes);
      // Too little to gain for bounding these tasks' pieces and ordering them: the order costs
      // overlap (measured: an MLP at dp=2 whose groups saved 4% ran 5% slower).
      const uint64_t gain = side_by_side - std::min(layout.total, side_by_side);
      if (gain == 0 || (how != ShareOrder::tight && gain * kLeastGain < side_by_side)) {
        remove_regsts_from(tg, regsts_before);
        return;
      }

      // The first task reaches every other once it precedes the other sources; the frames end
      // where every task arrives.
      ShareGroup group{.slots = slots, .tasks = tasks, .frames = {}};
      for (TaskId s : order.sources())
        if (s != tasks.front()) add_control(tg, tasks.front(), s, group.slots, arena);
      for (TaskId e : order.ends()) group.frames.push_back(add_control(tg, tasks.front(), e, group.slots, arena));
      for (RegstId r : members) {
        out.taken.push_back({r, tg.regsts[size_t(r)].share_group, tg.regsts[size_t(r)].slots});
        tg.regsts[size_t(r)].share_group = int32_t(tg.share_groups.size());
        tg.regsts[size_t(r)].slots = group.slots;
      }
      tg.share_groups.push_back(std::move(group));
      order_bits += bits;
      out.frames.push_back(FrameLayout{members, layout.offsets, layout.total});
    };
    for (auto& [root, members] : groups) {
      if (tasks_of(members).size() <= plan::kMaxShareGroupTasks) {
        form(members);
        continue;
      }
      // Too many tasks for one group's order check (a deep model's whole chain): consecutive
      // windows of registers, by producer, each a group of at most kWindowTasks tasks. A register
      // shares bytes only inside its window, and the windows together stay within the plan's
      // order bits for many more tasks than one big group could have.
      std::sort(members.begin(), members.end(),
                [&](RegstId a, RegstId b) { return tg.regsts[size_t(a)].producer < tg.regsts[size_t(b)].producer; });
      std::vector<RegstId> window;
      size_t window_tasks = 0;
      for (RegstId r : members) {
        const size_t adds = 1 + tg.regsts[size_t(r)].consumers.size();  // at most; tasks_of counts exactly
        if (!window.empty() && window_tasks + adds > kWindowTasks) {
          form(window);
          window.clear();
          window_tasks = 0;
        }
        window.push_back(r);
        window_tasks += adds;
      }
      if (!window.empty()) form(window);
    }
  }
  return out;
}

void undo_sharing(TaskGraph& tg, const Sharing& s) {
  for (const Sharing::Taken& t : s.taken) {
    tg.regsts[size_t(t.regst)].share_group = t.share_group;
    tg.regsts[size_t(t.regst)].slots = t.slots;
  }
  tg.share_groups.resize(s.groups_before);
  remove_regsts_from(tg, s.regsts_before);
}

}  // namespace of::compiler
