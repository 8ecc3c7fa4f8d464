// SPDX-License-Identifier: Apache-2.0
// Memory sharing (plan-memory, share_memory.h): registers whose uses one device orders share
// bytes; the plan carries the order as registers, and the rule ofrun checks (schemas/
// shared_memory.h) refuses a plan whose sharing nothing orders.
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <unistd.h>

#include "common/error.h"
#include "compiler/compile.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/share_memory.h"
#include "schemas/plan_codec.h"
#include "schemas/shared_memory.h"
#include "compiler/deep_mlp.h"

using namespace of::compiler;

namespace {

uint64_t variable_bytes(const TaskGraph& tg, int32_t arena) {
  uint64_t bytes = 0;
  for (const Variable& v : tg.variables)
    if (v.arena == arena) bytes = add_aligned(bytes, v.bytes);
  return bytes;
}

// The most bytes one piece needs at once: a task's inputs and outputs, for the task needing most.
uint64_t live_set_of_one_piece(const TaskGraph& tg) {
  uint64_t most = 0;
  for (const Task& t : tg.tasks) {
    uint64_t bytes = 0;
    for (const auto* regsts : {&t.in_regsts, &t.out_regsts})
      for (RegstId r : *regsts)
        if (!tg.regsts[size_t(r)].persistent) bytes = add_aligned(bytes, tg.regsts[size_t(r)].slot_bytes);
    most = std::max(most, bytes);
  }
  return most;
}

std::string refusal(const TaskGraph& tg) {
  try {
    of::plan::check_shared_memory(tg, "p.ofp");
  } catch (const of::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("share memory: a 1000-layer inference MLP's activations take at most 4x one piece's live set", "[compiler]") {
  const std::string model = write_deep_mlp(1000, 64, 32);
  CompileOptions o;
  const Compilation c = compile_model(model, o);  // the deadlock check and the sharing rule passed
  const TaskGraph& tg = c.tasks;
  REQUIRE(tg.share_groups.size() == 1);
  const uint64_t activations = tg.arenas[0].bytes - variable_bytes(tg, 0);
  const uint64_t live = live_set_of_one_piece(tg);
  INFO("activations " << activations << " bytes, one piece's live set " << live);
  CHECK(live == 2 * 32 * 64 * 4);
  CHECK(activations <= 4 * live);

  o.share_memory = false;
  const Compilation apart = compile_model(model, o);
  CHECK(apart.tasks.share_groups.empty());
  CHECK(apart.tasks.arenas[0].bytes - variable_bytes(apart.tasks, 0) >= 400 * live);
  std::filesystem::remove(model);
}

TEST_CASE("share memory: a chain too long for one group's order check shares in windows", "[compiler]") {
  // Training a 2500-layer MLP: its forward and backward chain is one candidate group of more
  // than kMaxShareGroupTasks tasks. That used to share nothing at all; now consecutive windows of
  // it each form a group, within the plan's order bits, and the rule ofrun checks holds.
  const std::string model = write_deep_mlp(2500, 16, 8);
  CompileOptions o;
  o.loss = "mse";
  o.train = true;
  o.optimizer = "sgd";
  const Compilation c = compile_model(model, o);  // the deadlock check and the sharing rule passed
  REQUIRE(c.tasks.tasks.size() > 2 * of::plan::kMaxShareGroupTasks);
  CHECK(c.tasks.share_groups.size() >= 2);
  for (const ShareGroup& g : c.tasks.share_groups) CHECK(g.tasks.size() <= of::plan::kMaxShareGroupTasks);
  CHECK(refusal(c.tasks).empty());
  o.share_memory = false;
  const Compilation apart = compile_model(model, o);
  const uint64_t shared = c.tasks.arenas[0].bytes - variable_bytes(c.tasks, 0);
  const uint64_t alone = apart.tasks.arenas[0].bytes - variable_bytes(apart.tasks, 0);
  INFO("activations " << shared << " bytes shared, " << alone << " apart");
  CHECK(shared * 4 < alone * 3);  // measured: 6.6 MB against 9.3 MB; before the windows, equal
  std::filesystem::remove(model);
}

TEST_CASE("share memory: training plans share, in one device and parallel plans alike, and pass the deadlock check", "[compiler]") {
  struct Case {
    int32_t devices, dp, tp, pp, micro;
    bool collectives = true;
  };
  // With collective tasks, a gradient or partial sum the other devices' parts read in place
  // shares bytes too: each such part hands a control register to a task here after this
  // device's part (its proxy), which orders the reuse.
  // The tight order (ofc --share-order tight): every group that gains anything keeps its order, so
  // this small MLP's parallel plans share too (by default, a group gaining under an eighth of
  // its bytes keeps none: checked below).
  for (const Case& k : {Case{1, 1, 1, 1, 1}, Case{1, 1, 1, 1, 4}, Case{2, 2, 1, 1, 1}, Case{2, 1, 2, 1, 1}, Case{2, 1, 2, 1, 1, false},
                        Case{2, 1, 1, 2, 4}, Case{4, 1, 1, 4, 4}, Case{4, 2, 2, 1, 1}}) {
    INFO("devices " << k.devices << " dp " << k.dp << " tp " << k.tp << " pp " << k.pp << " micro-batches " << k.micro
                    << (k.collectives ? "" : " point to point"));
    CompileOptions o;
    o.share_order = ShareOrder::tight;
    o.collectives = k.collectives;
    o.loss = "cross_entropy";
    o.train = true;
    o.devices = k.devices;
    o.dp = k.dp;
    o.tp = k.tp;
    o.pp = k.pp;
    o.micro_batches = k.micro;
    const Compilation shared = compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);
    o.share_memory = false;
    const Compilation apart = compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);
    CHECK(!shared.tasks.share_groups.empty());
    uint64_t with = 0, without = 0;
    for (const Arena& a : shared.tasks.arenas) with += a.bytes;
    for (const Arena& a : apart.tasks.arenas) without += a.bytes;
    CHECK(with < without);
    CHECK(refusal(shared.tasks).empty());
    // Every register sharing adds is a control register inside one group: from its first task
    // (to the group's other sources, and its frames), or an order edge to a later task; or from
    // another device's collective part to its proxy in a group.
    bool order_edge = false, proxy = false;
    for (const Regst& r : shared.tasks.regsts) {
      if (r.id < RegstId(apart.tasks.regsts.size())) continue;
      CHECK(r.blobs.empty());
      REQUIRE(r.consumers.size() == 1);
      CHECK(r.consumers[0] > r.producer);
      const Task& from = shared.tasks.tasks[size_t(r.producer)];
      const Task& to = shared.tasks.tasks[size_t(r.consumers[0])];
      if (from.device != to.device) {
        CHECK(from.kind == TaskKind::collective);
        proxy = true;
      }
      CHECK(std::any_of(shared.tasks.share_groups.begin(), shared.tasks.share_groups.end(), [&](const ShareGroup& g) {
        auto in = [&](TaskId t) { return std::binary_search(g.tasks.begin(), g.tasks.end(), t); };
        return (in(r.producer) || from.device != to.device) && in(r.consumers[0]);
      }));
      order_edge = order_edge || std::none_of(shared.tasks.share_groups.begin(), shared.tasks.share_groups.end(),
                                              [&](const ShareGroup& g) { return g.tasks.front() == r.producer; });
    }
    // A weight gradient's GEMM feeds only its update: an order edge makes it precede a later task
    // of the backward pass, so that the activation it reads can give its bytes to later ones.
    if (k.devices == 1 && k.micro == 1) CHECK(order_edge);
    // dp and tp with collective tasks: gradients and partial sums the other device's part reads
    // in place share bytes, ordered by proxies.
    if ((k.dp > 1 || k.tp > 1) && k.collectives && k.pp == 1) CHECK(proxy);
  }
}

TEST_CASE("share memory: at dp=2 the backward pass does not wait for a gradient's reduction, unless the order is tight", "[compiler]") {
  // What dp's speed is made of: the all-reduce of a layer's weight gradient runs while the
  // backward pass goes on to the layers before it. Measured before this order: the MLP at dp=2
  // ran 20% slower with its reductions and updates ordered three tasks into the backward pass.
  const std::string model = write_deep_mlp(12, 128, 32);
  CompileOptions o;
  o.loss = "mse";
  o.train = true;
  o.optimizer = "sgd:lr=0.01,momentum=0.9";
  o.devices = o.dp = 2;
  o.bucket_bytes = 0;  // each gradient reduced alone, as a large one is (these are 64 KiB)
  const Compilation overlapped = compile_model(model, o);
  o.share_order = ShareOrder::tight;
  const Compilation tight = compile_model(model, o);
  o.share_order = ShareOrder::loose;
  const Compilation loose = compile_model(model, o);
  o.share_memory = false;
  const Compilation apart = compile_model(model, o);
  std::filesystem::remove(model);
  // How many of the 8 compute tasks of device 0 after the first weight gradient's all-reduce
  // (updates aside: they read it) wait for it, through data and control registers alike.
  auto waiting = [](const TaskGraph& tg) {
    TaskId reduction = -1;
    for (const Task& t : tg.tasks)
      if (t.device == 0 && t.op == "AllReduce" && t.name.find("GemmGrad") != std::string::npos) {
        reduction = t.id;
        break;
      }
    REQUIRE(reduction >= 0);
    std::vector<uint8_t> reached(tg.tasks.size());
    reached[size_t(reduction)] = 1;
    for (size_t t = size_t(reduction); t < tg.tasks.size(); ++t)  // ids are topological
      if (reached[t])
        for (RegstId r : tg.tasks[t].out_regsts)
          for (TaskId c : tg.regsts[size_t(r)].consumers) reached[size_t(c)] = 1;
    int count = 0, seen = 0;
    for (const Task& t : tg.tasks) {
      if (t.id <= reduction || t.device != 0 || t.kind != TaskKind::compute || t.op.find("Update") != std::string::npos) continue;
      count += reached[size_t(t.id)];
      if (++seen == 8) break;
    }
    return count;
  };
  uint64_t with = 0, tighter = 0, looser = 0, without = 0;
  for (const Arena& a : overlapped.tasks.arenas) with = std::max(with, a.bytes);
  for (const Arena& a : loose.tasks.arenas) looser = std::max(looser, a.bytes);
  for (const Arena& a : tight.tasks.arenas) tighter = std::max(tighter, a.bytes);
  for (const Arena& a : apart.tasks.arenas) without = std::max(without, a.bytes);
  INFO("largest device: " << with << " bytes shared, " << tighter << " tight, " << looser << " loose, " << without << " apart");
  CHECK(!overlapped.tasks.share_groups.empty());
  CHECK(waiting(apart.tasks) == 0);
  CHECK(waiting(overlapped.tasks) == 0);
  CHECK(waiting(loose.tasks) == 0);
  CHECK(waiting(tight.tasks) > 0);
  // The tight order buys its memory with that wait; the loose one lets a device's own weight
  // gradients and updates run beside the chain too, for more.
  CHECK(tighter < with);
  CHECK(with <= looser);
  CHECK(looser < without);
}

TEST_CASE("share memory: a register another device's part reads in place shares bytes only through that part's proxy", "[compiler]") {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.devices = 2;
  o.dp = 2;
  o.optimizer = "sgd:lr=0.01,momentum=0.9";
  o.share_order = ShareOrder::tight;  // by default this small MLP's dp groups gain too little to keep
  const Compilation c = compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);
  const TaskGraph& tg = c.tasks;
  REQUIRE(refusal(tg).empty());
  // The shared gradients the other device's all-reduce part reads, each with the proxy control
  // register that part hands to a task of the gradient's group.
  std::vector<std::pair<RegstId, RegstId>> proxied;
  for (const Regst& r : tg.regsts) {
    if (r.share_group < 0 || r.blobs.empty()) continue;
    const int32_t device = tg.arenas[size_t(r.arena)].device;
    for (TaskId c : r.consumers) {
      if (tg.tasks[size_t(c)].device == device) continue;
      for (RegstId out : tg.tasks[size_t(c)].out_regsts) {
        const Regst& x = tg.regsts[size_t(out)];
        if (x.blobs.empty() && x.consumers.size() == 1 && tg.tasks[size_t(x.consumers[0])].device == device) proxied.emplace_back(r.id, out);
      }
    }
  }
  REQUIRE(!proxied.empty());
  bool ordered = false;  // some later register of the group may take such a gradient's bytes
  for (const auto& [gradient, control] : proxied) {
    const Regst& x = tg.regsts[size_t(gradient)];
    const of::plan::GroupOrder order(tg, tg.share_groups[size_t(x.share_group)].tasks);
    CHECK(order.in_group(tg.regsts[size_t(control)].consumers[0]));
    CHECK(order.proxied(tg.regsts[size_t(control)].producer));
    for (const Regst& y : tg.regsts)
      if (y.share_group == x.share_group && y.id != x.id && order.before(x, y)) ordered = true;
    // The row frame placement compares with says, for every task of the group, what the rule
    // says from first principles: each reader here reaches the task, each reader elsewhere
    // hands a register to a task here that is or reaches it.
    const std::vector<uint64_t> row = order.read_before_row(x);
    for (TaskId t : tg.share_groups[size_t(x.share_group)].tasks) {
      bool all_read = !x.consumers.empty();
      for (TaskId c : x.consumers) {
        bool done = order.in_group(c) && order.reaches(c, t);
        if (!order.in_group(c))
          for (RegstId out : tg.tasks[size_t(c)].out_regsts)
            for (TaskId d : tg.regsts[size_t(out)].consumers)
              if (!tg.regsts[size_t(out)].persistent && tg.regsts[size_t(out)].acts_per_piece == 1 && order.in_group(d) && (d == t || order.reaches(d, t))) done = true;
        all_read = all_read && done;
      }
      CHECK(order.row_has(row, t) == all_read);
      CHECK(order.read_before_task(x, t) == all_read);
    }
  }
  CHECK(ordered);
  // Without the proxy's control register the other device's read is unordered: refused.
  TaskGraph bad = tg;
  const RegstId control = proxied[0].second;
  Regst& ctl = bad.regsts[size_t(control)];
  std::vector<RegstId>& ins = bad.tasks[size_t(ctl.consumers[0])].in_regsts;
  ins.erase(std::remove(ins.begin(), ins.end(), control), ins.end());
  ctl.consumers.clear();
  CHECK_THAT(refusal(bad), Catch::Contains("nor hands a streamed register to a task of it"));
}

TEST_CASE("share memory: the rule refuses sharing nothing orders, naming the field", "[compiler]") {
  const std::string model = write_deep_mlp(8, 64, 32);
  const Compilation c = compile_model(model, CompileOptions{});
  std::filesystem::remove(model);
  REQUIRE(c.tasks.share_groups.size() == 1);
  REQUIRE(refusal(c.tasks).empty());
  const ShareGroup& g = c.tasks.share_groups[0];

  SECTION("two shared registers live at once, given the same bytes") {
    TaskGraph tg = c.tasks;
    // The registers of the group's first two tasks: the second reads the first's.
    RegstId a = tg.tasks[size_t(g.tasks[0])].out_regsts[0], b = tg.tasks[size_t(g.tasks[1])].out_regsts[0];
    REQUIRE(tg.regsts[size_t(a)].share_group == 0);
    REQUIRE(tg.regsts[size_t(b)].share_group == 0);
    tg.regsts[size_t(b)].offsets = tg.regsts[size_t(a)].offsets;
    CHECK_THAT(refusal(tg), Catch::Contains("p.ofp") && Catch::Contains("overlaps") && Catch::Contains("nothing orders their uses"));
  }
  SECTION("a register that leaves its group keeps sharing bytes") {
    TaskGraph tg = c.tasks;
    for (Regst& r : tg.regsts)
      if (r.share_group == 0) {
        r.share_group = -1;
        break;
      }
    CHECK_THAT(refusal(tg), Catch::Contains("overlaps"));
  }
  SECTION("slot j of one register shares with slot k of another") {
    TaskGraph tg = c.tasks;
    RegstId a = tg.tasks[size_t(g.tasks[0])].out_regsts[0], far = tg.tasks[size_t(g.tasks[4])].out_regsts[0];
    tg.regsts[size_t(far)].offsets[1] = tg.regsts[size_t(a)].offsets[0];
    CHECK_THAT(refusal(tg), Catch::Contains("overlaps"));
  }
  SECTION("a frame lets more pieces in than the group has slots") {
    TaskGraph tg = c.tasks;
    tg.regsts[size_t(g.frames[0])].slots = g.slots + 1;
    CHECK_THAT(refusal(tg), Catch::Contains("share_groups[0].frames[0]"));
  }
  SECTION("a group without frames: its pieces are not bounded") {
    TaskGraph tg = c.tasks;
    tg.share_groups[0].frames.clear();
    CHECK_THAT(refusal(tg), Catch::Contains("reaches no frame register's end"));
  }
  SECTION("a group's tasks out of order") {
    TaskGraph tg = c.tasks;
    std::swap(tg.share_groups[0].tasks[1], tg.share_groups[0].tasks[2]);
    CHECK_THAT(refusal(tg), Catch::Contains("share_groups[0].tasks[2]") && Catch::Contains("ascending"));
  }
  SECTION("groups whose orders would take unbounded memory to check") {
    TaskGraph tg = c.tasks;
    tg.share_groups.assign(9, ShareGroup{.slots = 2, .tasks = std::vector<TaskId>(of::plan::kMaxShareGroupTasks + 1, 0), .frames = {}});
    CHECK_THAT(refusal(tg), Catch::Contains("p.ofp: share_groups: its groups' orders would take"));
  }
  SECTION("a register naming a share group that does not exist") {
    TaskGraph tg = c.tasks;
    tg.regsts[size_t(tg.tasks[size_t(g.tasks[0])].out_regsts[0])].share_group = 5;
    CHECK_THAT(refusal(tg), Catch::Contains("share group 5 does not exist"));
  }
}

TEST_CASE("share memory: with the tight order a weight gradient gives its bytes back once its update has run in the backward pass", "[compiler]") {
  // 8 layers of 256x256 weights on a batch of 8: each weight gradient (256 KiB) dwarfs the
  // activations (8 KiB). add-optimizer places each update right after its gradient (and the
  // last reader of its weight), so the tight order's edges free a gradient once its update has
  // run: a few are live at once, not all eight until the step's end. (By default the updates
  // run beside the backward pass and their gradients' bytes go 16 tasks on: see the dp=2 case.)
  const std::string model = write_deep_mlp(8, 256, 8);
  CompileOptions o;
  o.loss = "mse";
  o.train = true;
  o.optimizer = "sgd:lr=0.01,momentum=0.9";
  o.share_order = ShareOrder::tight;
  const Compilation c = compile_model(model, o);  // the deadlock check and the sharing rule passed
  std::filesystem::remove(model);
  const TaskGraph& tg = c.tasks;
  REQUIRE(tg.arenas.size() == 1);
  uint64_t persistent = 0;
  for (const Regst& r : tg.regsts)
    if (r.persistent) persistent = add_aligned(persistent, r.slot_bytes);
  const uint64_t streamed = tg.arenas[0].bytes - persistent - variable_bytes(tg, 0);
  const uint64_t gradient = 256 * 256 * 4;
  INFO("streamed bytes " << streamed);
  CHECK(streamed < 3 * gradient);
  // In task order, layer i's update comes before the gradients of layer i - 1 are computed.
  auto task_named = [&](const std::string& name) {
    const auto it = std::find_if(tg.tasks.begin(), tg.tasks.end(), [&](const Task& t) { return t.name == name; });
    REQUIRE(it != tg.tasks.end());
    return it->id;
  };
  for (int i = 1; i < 8; ++i) {
    const TaskId update = task_named("update/l" + std::to_string(i) + ".weight");
    const TaskId previous = task_named("update/l" + std::to_string(i - 1) + ".weight");
    CHECK(update < previous);
  }
}

TEST_CASE("share memory: a kernel's scratch room lies in its group's bytes that nothing uses while it acts", "[compiler]") {
  const std::string model = write_deep_mlp(8, 64, 32);
  const Compilation c = compile_model(model, CompileOptions{});
  const TaskGraph& tg = c.tasks;
  REQUIRE(tg.share_groups.size() == 1);
  const of::plan::ShareGroup& group = tg.share_groups[0];
  const of::plan::GroupOrder order(tg, group.tasks);
  const uint64_t one = 32 * 64 * 4;  // one activation
  size_t found = 0;
  for (TaskId t : group.tasks) {
    for (uint64_t bytes : {uint64_t(64), one / 2, one}) {
      const auto room = of::plan::scratch_room(tg, order, 0, t, bytes);
      if (!room) continue;
      ++found;
      REQUIRE(room->size() == size_t(group.slots));
      for (size_t s = 0; s < room->size(); ++s) {
        const uint64_t begin = (*room)[s], end = begin + bytes;
        CHECK(begin % of::plan::kAlignment == 0);
        bool inside = false;
        for (const Regst& r : tg.regsts) {
          if (r.share_group != 0) continue;
          const uint64_t rb = r.offsets[s], re = rb + r.slot_bytes;
          if (rb <= begin && end <= re) inside = true;
          const bool unused = order.read_before_task(r, t) || (r.producer != t && order.reaches(t, r.producer));
          INFO("task " << t << " scratch [" << begin << ", " << end << ") register " << r.id << " [" << rb << ", " << re << ")");
          if (!unused) CHECK((end <= rb || re <= begin));
        }
        CHECK(inside);  // one dead register holds it here (activations of one size)
      }
    }
  }
  // Rooms given so far: a task that may act at once with one of them gets bytes apart from it.
  std::vector<of::plan::Scratch> placed;
  for (TaskId t : group.tasks) {
    const auto room = of::plan::scratch_room(tg, order, 0, t, 64, placed);
    if (!room) continue;
    for (const of::plan::Scratch& x : placed)
      if (!order.reaches(x.task, t) && !order.reaches(t, x.task))
        for (size_t s = 0; s < room->size(); ++s) CHECK(((*room)[s] + 64 <= x.offsets[s] || x.offsets[s] + x.bytes <= (*room)[s]));
    placed.push_back(of::plan::Scratch{t, 64, *room});
  }
  CHECK_FALSE(placed.empty());
  // A second room for the same task never takes its first one's bytes.
  const of::plan::Scratch first = placed.front();
  const auto again = of::plan::scratch_room(tg, order, 0, first.task, 64, {first});
  if (again) CHECK(((*again)[0] + 64 <= first.offsets[0] || first.offsets[0] + 64 <= (*again)[0]));
  // Deep in the chain the first layers' activations are dead: some tasks find room (a tight
  // frame has little to spare), and the checks above ran on each.
  CHECK(found > 0);
  // More than the whole arena, a task outside the group, no bytes: no room.
  CHECK_FALSE(of::plan::scratch_room(tg, order, 0, group.tasks[3], tg.arenas[0].bytes + 1));
  CHECK_FALSE(of::plan::scratch_room(tg, order, 0, group.tasks[3], 0));
  for (const Task& t : tg.tasks)
    if (!order.in_group(t.id)) CHECK_FALSE(of::plan::scratch_room(tg, order, 0, t.id, 64));
  std::filesystem::remove(model);
}

TEST_CASE("share memory: undo_sharing gives the task graph back as it was, for plan-memory's fall back", "[compiler]") {
  CompileOptions o;
  o.loss = "cross_entropy";
  o.train = true;
  o.devices = 2;
  o.dp = 2;
  o.optimizer = "sgd:lr=0.01,momentum=0.9";
  o.share_order = ShareOrder::tight;
  o.share_memory = false;  // the graph as plan-memory finds it, before any group
  Compilation c = compile_model(std::string(OF_FIXTURES_DIR) + "/mlp.onnx", o);
  TaskGraph& tg = c.tasks;
  const std::vector<uint8_t> before = of::plan::encode(tg);
  const Sharing all = share_memory(tg, 1, ShareOrder::tight, [](size_t) { return true; });
  REQUIRE(all.frames.size() >= 2);  // a group per device at least
  CHECK(of::plan::encode(tg) != before);
  undo_sharing(tg, all);
  CHECK(of::plan::encode(tg) == before);
  // One candidate at a time, as the fall back tries them: each undone leaves the graph as it was.
  for (size_t i = 0; i < all.candidates; ++i) {
    const Sharing one = share_memory(tg, 1, ShareOrder::tight, [&](size_t k) { return k == i; });
    undo_sharing(tg, one);
    CHECK(of::plan::encode(tg) == before);
  }
  // And sharing again after an undo makes the same groups as the first time.
  const Sharing again = share_memory(tg, 1, ShareOrder::tight, [](size_t) { return true; });
  CHECK(again.frames.size() == all.frames.size());
  CHECK(tg.share_groups.size() == all.frames.size());
}
