// SPDX-License-Identifier: Apache-2.0
#include "runtime/plan/dump.h"

#include "runtime/plan/memory_kinds.h"
#include "schemas/plan_copies.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

namespace of::runtime {
namespace {

const char* kind_name(plan::TaskKind k) {
  switch (k) {
    case plan::TaskKind::source: return "source";
    case plan::TaskKind::compute: return "compute";
    case plan::TaskKind::sink: return "sink";
    case plan::TaskKind::snapshot: return "snapshot";
    case plan::TaskKind::transfer: return "transfer";
    case plan::TaskKind::collective: return "collective";
  }
  return "?";
}

std::string device_name(const plan::DeviceRef& d) {
  return fmt::format("rank{}/{}:{}", d.rank, d.kind == 0 ? "cpu" : "cuda", d.index);
}

std::string human_bytes(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (1u << 20)) return fmt::format("{:.1f} KiB", double(b) / 1024);
  if (b < (1u << 30)) return fmt::format("{:.1f} MiB", double(b) / (1 << 20));
  return fmt::format("{:.2f} GiB", double(b) / (1 << 30));
}

std::string input_name(const plan::TaskInput& in) {
  switch (in.kind) {
    case plan::InputKind::variable: return fmt::format("v{}", in.id);
    case plan::InputKind::own: return fmt::format("=r{}.{}", in.id, in.blob);  // updated in place
    case plan::InputKind::regst: break;
  }
  // A view reads the blob as another shape: "r3.0[8,40]".
  return in.view.empty() ? fmt::format("r{}.{}", in.id, in.blob) : fmt::format("r{}.{}[{}]", in.id, in.blob, fmt::join(in.view, ","));
}

const char* job_name(plan::JobKind k) {
  switch (k) {
    case plan::JobKind::infer: return "infer";
    case plan::JobKind::train: return "train";
    case plan::JobKind::eval: return "eval";
  }
  return "?";
}

const char* input_kind_name(plan::InputKind k) {
  switch (k) {
    case plan::InputKind::variable: return "variable";
    case plan::InputKind::own: return "own";
    case plan::InputKind::regst: break;
  }
  return "regst";
}

}  // namespace

std::string dump_prediction(const plan::Plan& p) {
  const plan::Prediction& pr = p.prediction;
  if (pr.step_seconds <= 0) return "";
  std::string out = fmt::format("predicted step time {:.3f} ms (costs: {})\n", 1e3 * pr.step_seconds, pr.costs);
  if (pr.candidates.empty()) return out;
  // ofc --auto: what it weighed, best first; the first one weighed is the plan.
  out += fmt::format("auto     {} strategies weighed (the plan is the first that fits):\n", pr.candidates.size());
  for (const plan::Candidate& k : pr.candidates) {
    if (k.refused.empty())
      out += fmt::format("  {:<36} {:>10.3f} ms   largest device {}\n", k.flags, 1e3 * k.step_seconds, human_bytes(k.peak_bytes));
    else
      out += fmt::format("  {:<36} {:>10}      {}\n", k.flags, "-", k.refused);
  }
  return out;
}

std::string dump_text(const plan::Plan& p, const std::string& path) {
  std::string out;
  auto line = [&out](const std::string& s) { out += s + "\n"; };
  line(fmt::format("plan     {} (version {})", path, p.version));
  line(fmt::format("model    {}", p.model));
  line(fmt::format("job      {}, batch {}, pieces {}", job_name(p.job.kind), p.job.batch,
                   p.job.pieces > 0 ? std::to_string(p.job.pieces) : "as fed"));
  if (p.job.kind == plan::JobKind::train)
    line(fmt::format("train    label '{}', optimizer {}, schedule {}, micro-batches {}, eval plan {}", p.job.label, p.job.optimizer,
                     p.job.schedule, p.job.micro_batches, p.job.eval_plan.empty() ? "-" : p.job.eval_plan));
  std::vector<std::string> devices;
  for (const auto& d : p.devices) devices.push_back(device_name(d));
  line(fmt::format("devices  {} ({})", p.devices.size(), fmt::join(devices, ", ")));
  uint64_t weight_bytes = 0;
  for (const auto& v : p.variables) weight_bytes += v.bytes;
  line(fmt::format("tasks    {}   registers {}   variables {} ({})", p.tasks.size(), p.regsts.size(), p.variables.size(),
                   human_bytes(weight_bytes)));
  // Copies of one op on many devices are stored once (schemas/plan_copies.h).
  const size_t stored_tasks = plan::find_runs(p.tasks).size(), stored_regsts = plan::find_runs(p.regsts).size();
  if (stored_tasks < p.tasks.size() || stored_regsts < p.regsts.size())
    line(fmt::format("stored   {} tasks and {} registers in the file: the rest are their copies on other devices", stored_tasks, stored_regsts));
  line(fmt::format("weights  {} ({} bytes)", p.weights, p.weights_bytes));
  // Model tensors no task reads: checkpoints carry them so that load_state_dict finds them.
  auto names = [](const std::vector<std::string>& v) {
    const size_t shown = std::min<size_t>(v.size(), 6);
    std::string s = fmt::format("{}", fmt::join(v.begin(), v.begin() + long(shown), ", "));
    return v.size() > shown ? fmt::format("{}, ... ({} in all)", s, v.size()) : s;
  };
  if (!p.buffers.empty()) line(fmt::format("buffers  {} folded into the plan's constants: {}", p.buffers.size(), names(p.buffers)));
  if (!p.carried.empty()) line(fmt::format("carried  {} model tensors this plan does not read: {}", p.carried.size(), names(p.carried)));
  for (const auto& a : p.arenas)
    line(fmt::format("arena {}  {}: {} bytes ({})", a.id, device_name(p.devices[size_t(a.device)]), a.bytes, human_bytes(a.bytes)));
  out += dump_prediction(p);
  line("");
  line(fmt::format("{:>4}  {:<10} {:<20} {:<18} {:<14} {:<28} {}", "id", "kind", "op", "name", "device", "inputs", "outputs"));
  for (const auto& t : p.tasks) {
    std::vector<std::string> ins;
    for (const auto& in : t.inputs) ins.push_back(input_name(in));
    std::vector<std::string> outs;
    for (plan::RegstId r : t.out_regsts) {
      const plan::Regst& regst = p.regsts[size_t(r)];
      outs.push_back(fmt::format("r{} {}{}x{}", r, regst.persistent ? "persistent " : "", regst.slots, human_bytes(regst.slot_bytes)));
    }
    std::string name = t.name.size() > 18 ? t.name.substr(0, 17) + "~" : t.name;
    std::string io = t.io_names.empty() ? "" : fmt::format(" [{}]", fmt::join(t.io_names, ", "));
    line(fmt::format("{:>4}  {:<10} {:<20} {:<18} {:<14} {:<28} {}{}", t.id, kind_name(t.kind), t.op, name,
                     device_name(p.devices[size_t(t.device)]), ins.empty() ? "-" : fmt::format("{}", fmt::join(ins, ",")),
                     outs.empty() ? "-" : fmt::format("{}", fmt::join(outs, ", ")), io));
  }
  return out;
}

std::string dump_json(const plan::Plan& p) {
  using nlohmann::json;
  auto device = [](const plan::DeviceRef& d) { return json{{"rank", d.rank}, {"kind", d.kind == 0 ? "cpu" : "cuda"}, {"index", d.index}}; };
  json j;
  j["version"] = p.version;
  j["stored"] = {{"tasks", plan::find_runs(p.tasks).size()}, {"regsts", plan::find_runs(p.regsts).size()}};
  j["model"] = p.model;
  j["job"] = {{"kind", job_name(p.job.kind)}, {"batch", p.job.batch}, {"pieces", p.job.pieces}, {"seed", p.job.seed},
              {"label", p.job.label}, {"micro_batches", p.job.micro_batches}, {"optimizer", p.job.optimizer},
              {"lr", p.job.lr}, {"schedule", p.job.schedule}, {"eval_plan", p.job.eval_plan}};
  j["devices"] = json::array();
  for (const auto& d : p.devices) j["devices"].push_back(device(d));
  j["weights"] = {{"file", p.weights}, {"bytes", p.weights_bytes}, {"crc32", p.weights_crc32}};
  j["buffers"] = p.buffers;
  j["carried"] = p.carried;
  j["arenas"] = json::array();
  const std::vector<uint64_t> peak = arena_peaks(p);
  const std::vector<ArenaKinds> kinds = memory_by_kind(p);
  for (const auto& a : p.arenas) {
    json by_kind = json::object();
    for (size_t k = 0; k < kMemoryKindNames.size(); ++k) by_kind[kMemoryKindNames[k]] = kinds[size_t(a.id)].bytes[k];
    j["arenas"].push_back({{"id", a.id}, {"device", device(p.devices[size_t(a.device)])}, {"bytes", a.bytes}, {"peak", peak[size_t(a.id)]},
                           {"kinds", std::move(by_kind)}});
  }
  j["tensors"] = json::array();
  for (const auto& t : p.tensors) {
    json tj{{"name", t.name}, {"shape", t.desc.shape}, {"dtype", dtype_name(t.desc.dtype)}};
    if (!t.full_shape.empty()) {
      tj["full_shape"] = t.full_shape;
      tj["shard_begin"] = t.shard_begin;
    }
    j["tensors"].push_back(std::move(tj));
  }
  j["layouts"] = json::array();
  for (const auto& t : p.layouts)
    j["layouts"].push_back({{"name", t.name}, {"shape", t.desc.shape}, {"dtype", dtype_name(t.desc.dtype)}, {"placement", t.placement},
                            {"sbp", t.sbp}, {"stage", t.stage}});
  j["boxings"] = json::array();
  for (const auto& b : p.boxings)
    j["boxings"].push_back({{"tensor", b.tensor}, {"kind", b.kind}, {"from", b.from}, {"to", b.to}, {"consumer", b.consumer},
                            {"bytes", b.bytes}, {"backward", b.backward}});
  j["variables"] = json::array();
  for (const auto& v : p.variables)
    j["variables"].push_back({{"id", v.id}, {"tensor", v.tensor}, {"key", v.key}, {"arena", v.arena}, {"offset", v.offset}, {"bytes", v.bytes}});
  j["regsts"] = json::array();
  for (const auto& r : p.regsts) {
    json blobs = json::array();
    for (const auto& b : r.blobs)
      blobs.push_back({{"tensor", b.tensor}, {"shape", b.desc.shape}, {"dtype", dtype_name(b.desc.dtype)}, {"offset", b.offset}, {"bytes", b.bytes}});
    j["regsts"].push_back({{"id", r.id}, {"producer", r.producer}, {"consumers", r.consumers}, {"slots", r.slots},
                           {"slot_bytes", r.slot_bytes}, {"arena", r.arena}, {"offsets", r.offsets}, {"blobs", blobs}, {"persistent", r.persistent},
                           {"acts_per_piece", r.acts_per_piece}, {"pieces_per_version", r.pieces_per_version}, {"share_group", r.share_group}});
  }
  j["prediction"] = {{"step_seconds", p.prediction.step_seconds}, {"costs", p.prediction.costs}, {"candidates", json::array()}};
  for (const auto& k : p.prediction.candidates)
    j["prediction"]["candidates"].push_back({{"flags", k.flags}, {"step_seconds", k.step_seconds}, {"peak_bytes", k.peak_bytes}, {"refused", k.refused}});
  j["memory_options"] = json::array();
  for (const auto& m : p.memory_options) j["memory_options"].push_back({{"flags", m.flags}, {"peaks", m.peaks}});
  j["share_groups"] = json::array();
  for (const auto& g : p.share_groups) j["share_groups"].push_back({{"slots", g.slots}, {"tasks", g.tasks}, {"frames", g.frames}});
  j["tasks"] = json::array();
  for (const auto& t : p.tasks) {
    json inputs = json::array();
    for (const auto& in : t.inputs) {
      json ij{{"kind", input_kind_name(in.kind)}, {"id", in.id}, {"blob", in.blob}};
      if (!in.view.empty()) ij["view"] = in.view;
      inputs.push_back(std::move(ij));
    }
    json attrs = json::object();
    for (const Attr& a : t.attrs.all())
      attrs[a.name] = !a.floats.empty() ? json(a.floats) : !a.str.empty() ? json(a.str) : json(a.ints);
    j["tasks"].push_back({{"id", t.id}, {"kind", kind_name(t.kind)}, {"name", t.name}, {"op", t.op}, {"kernel", t.kernel},
                          {"device", device(p.devices[size_t(t.device)])}, {"stream", t.stream}, {"inputs", inputs},
                          {"in_regsts", t.in_regsts}, {"out_regsts", t.out_regsts}, {"attrs", attrs}, {"io_names", t.io_names}, {"stage", t.stage},
                          {"once_per_version", t.once_per_version}});
  }
  return j.dump(2) + "\n";
}

std::string dump_sbp(const plan::Plan& p) {
  if (p.layouts.empty()) return "one device: every tensor is whole on cpu:0 (compile with --devices N:cpu for a parallel plan)\n";
  std::string out = fmt::format("{:<40} {:<16} {:<16} {:>5}  {}\n", "tensor", "shape", "placement", "stage", "sbp");
  for (const auto& t : p.layouts)
    out += fmt::format("{:<40} {:<16} {:<16} {:>5}  {}\n", t.name, shape_str(t.desc.shape), t.placement, t.stage, t.sbp);
  out += fmt::format("\nboxing ({}): where a consumer needs another layout than its producer gives\n", p.boxings.size());
  for (const auto& b : p.boxings)
    out += fmt::format("  {:<14} {:<32} {} -> {}  for {}{}, {} moved\n", b.kind, b.tensor, b.from, b.to, b.consumer,
                       b.backward ? " (backward)" : "", human_bytes(b.bytes));
  return out;
}

std::vector<uint64_t> arena_peaks(const plan::Plan& p) {
  std::vector<uint64_t> peak(p.arenas.size(), 0);
  for (const auto& v : p.variables) peak[size_t(v.arena)] = std::max(peak[size_t(v.arena)], v.offset + v.bytes);
  for (const auto& r : p.regsts)
    for (uint64_t off : r.offsets) peak[size_t(r.arena)] = std::max(peak[size_t(r.arena)], off + r.slot_bytes);
  return peak;
}

std::string dump_memory(const plan::Plan& p) {
  const std::vector<uint64_t> peak = arena_peaks(p);
  std::string out = fmt::format("{:<16} {:>14} {:>12} {:>10} {:>10} {:>8} {:>14}\n", "device", "peak bytes", "", "registers", "variables",
                                "shared", "apart");
  for (const auto& a : p.arenas) {
    size_t regsts = 0, vars = 0, shared = 0;
    uint64_t apart = 0;  // what the arena would hold if every slot had bytes of its own
    for (const auto& r : p.regsts) {
      if (r.arena != a.id) continue;
      ++regsts;
      shared += r.share_group >= 0;
      apart += plan::align_up(r.slot_bytes) * uint64_t(r.slots);
    }
    for (const auto& v : p.variables) {
      if (v.arena != a.id) continue;
      ++vars;
      apart += plan::align_up(v.bytes);
    }
    out += fmt::format("{:<16} {:>14} {:>12} {:>10} {:>10} {:>8} {:>14}\n", device_name(p.devices[size_t(a.device)]), peak[size_t(a.id)],
                       human_bytes(peak[size_t(a.id)]), regsts, vars, shared, human_bytes(apart));
  }
  out += "shared: registers whose slots share bytes with others' (share groups); apart: the arena if every slot had its own\n";
  // What the bytes hold, and the largest items.
  const std::vector<ArenaKinds> kinds = memory_by_kind(p);
  out += fmt::format("\n{:<16} {:>12} {:>16} {:>12} {:>12} {:>12}\n", "device", kMemoryKindNames[0], kMemoryKindNames[1], kMemoryKindNames[2],
                     kMemoryKindNames[3], kMemoryKindNames[4]);
  for (const auto& a : p.arenas) {
    const ArenaKinds& k = kinds[size_t(a.id)];
    out += fmt::format("{:<16} {:>12} {:>16} {:>12} {:>12} {:>12}\n", device_name(p.devices[size_t(a.device)]), human_bytes(k.bytes[0]),
                       human_bytes(k.bytes[1]), human_bytes(k.bytes[2]), human_bytes(k.bytes[3]), human_bytes(k.bytes[4]));
  }
  for (const auto& a : p.arenas) {
    std::vector<std::string> items;
    for (const ArenaItem& i : kinds[size_t(a.id)].largest)
      items.push_back(fmt::format("{} {} ({})", i.what, human_bytes(i.bytes), kMemoryKindNames[size_t(i.kind)]));
    out += fmt::format("largest on {}: {}\n", device_name(p.devices[size_t(a.device)]), items.empty() ? "-" : fmt::format("{}", fmt::join(items, ", ")));
  }
  out += "a kind's bytes are the arena ranges its buffers occupy; kinds that share bytes in turn each count them\n";
  // The gain of each memory option, where ofc compiled the plan again with it.
  if (p.memory_options.empty()) {
    if (p.job.kind == plan::JobKind::train)
      out += "\nofc --memory-options records here each device's peak with --recompute, --zero 3, --zero 1 and --share-order tight\n";
    return out;
  }
  out += fmt::format("\n{:<16} {:>14}", "device", "as compiled");
  for (const plan::MemoryOption& m : p.memory_options) out += fmt::format(" {:>24}", m.flags);
  out += "\n";
  for (size_t i = 0; i < p.arenas.size(); ++i) {
    const plan::Arena& a = p.arenas[i];
    out += fmt::format("{:<16} {:>14}", device_name(p.devices[size_t(a.device)]), human_bytes(a.bytes));
    for (const plan::MemoryOption& m : p.memory_options) {
      const uint64_t then = m.peaks[i];
      const double change = a.bytes ? 100.0 * (double(then) - double(a.bytes)) / double(a.bytes) : 0.0;
      out += fmt::format(" {:>24}", fmt::format("{} ({:+.0f}%)", human_bytes(then), change));
    }
    out += "\n";
  }
  out += "each option's column: the peak per device of this plan compiled again with those flags added (ofc --memory-options)\n";
  return out;
}

namespace {

// A task's op without its device suffix ("/fc1/Gemm@3" -> "/fc1/Gemm"); "" for boxing tasks.
std::string op_of(const plan::Task& t) {
  if (t.kind != plan::TaskKind::compute || t.name.find("/boxing/") != std::string::npos) return {};
  const auto at = t.name.rfind('@');
  return at == std::string::npos ? t.name : t.name.substr(0, at);
}

}  // namespace

std::string dump_stages(const plan::Plan& p) {
  int32_t stages = 1;
  for (const auto& t : p.tasks) stages = std::max(stages, t.stage + 1);
  const std::vector<uint64_t> peak = arena_peaks(p);
  std::string out;
  for (int32_t s = 0; s < stages; ++s) {
    std::vector<std::string> ops, devices;
    size_t tasks = 0, boxing = 0;
    uint64_t bytes = 0;
    std::vector<bool> seen_device(p.devices.size(), false);
    for (const auto& t : p.tasks) {
      if (t.stage != s) continue;
      ++tasks;
      seen_device[size_t(t.device)] = true;
      const std::string op = op_of(t);
      if (op.empty())
        boxing += t.kind == plan::TaskKind::compute || t.kind == plan::TaskKind::transfer || t.kind == plan::TaskKind::collective;
      else if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    }
    for (const auto& a : p.arenas)
      if (seen_device[size_t(a.device)]) {
        bytes += peak[size_t(a.id)];
        devices.push_back(fmt::format("{} {}", plan::device_label(p, a.device), human_bytes(peak[size_t(a.id)])));
      }
    out += fmt::format("stage {}: {} tasks ({} boxing), {} ops, {} on {}\n", s, tasks, boxing, ops.size(), human_bytes(bytes),
                       fmt::join(devices, ", "));
    for (const std::string& op : ops) out += fmt::format("  {}\n", op);
  }
  return out;
}

std::string dump_diff(const plan::Plan& a, const plan::Plan& b) {
  std::string out;
  auto line = [&](const char* what, auto x, auto y) {
    if (x != y) out += fmt::format("{:<12} {} -> {}\n", what, x, y);
  };
  line("devices", a.devices.size(), b.devices.size());
  line("tasks", a.tasks.size(), b.tasks.size());
  line("registers", a.regsts.size(), b.regsts.size());
  line("variables", a.variables.size(), b.variables.size());
  line("boxings", a.boxings.size(), b.boxings.size());
  const std::vector<uint64_t> pa = arena_peaks(a), pb = arena_peaks(b);
  for (size_t d = 0; d < std::max(pa.size(), pb.size()); ++d) {
    const std::string x = d < pa.size() ? human_bytes(pa[d]) : "-", y = d < pb.size() ? human_bytes(pb[d]) : "-";
    if (x != y) out += fmt::format("memory      cpu:{} {} -> {}\n", d, x, y);
  }
  auto layout_of = [](const plan::Plan& p, const std::string& name) -> std::string {
    for (const auto& t : p.layouts)
      if (t.name == name) return t.placement + " " + t.sbp;
    return p.layouts.empty() ? "cpu:0 B" : "-";
  };
  std::vector<std::string> names;
  for (const auto& t : a.layouts) names.push_back(t.name);
  for (const auto& t : b.layouts)
    if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  for (const std::string& n : names) {
    const std::string x = layout_of(a, n), y = layout_of(b, n);
    if (x != y) out += fmt::format("sbp         {}: {} -> {}\n", n, x, y);
  }
  auto ops = [](const plan::Plan& p) {
    std::vector<std::string> v;
    for (const auto& t : p.tasks)
      if (const std::string op = op_of(t); !op.empty() && std::find(v.begin(), v.end(), op) == v.end()) v.push_back(op);
    return v;
  };
  const std::vector<std::string> oa = ops(a), ob = ops(b);
  for (const std::string& o : oa)
    if (std::find(ob.begin(), ob.end(), o) == ob.end()) out += fmt::format("op removed  {}\n", o);
  for (const std::string& o : ob)
    if (std::find(oa.begin(), oa.end(), o) == oa.end()) out += fmt::format("op added    {}\n", o);
  return out;
}

std::string dump_dot(const plan::Plan& p) {
  auto quote = [](const std::string& s) { return nlohmann::json(s).dump(); };  // DOT accepts JSON-style escapes
  std::string out = "digraph plan {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  for (const auto& t : p.tasks) {
    const char* shape = t.kind == plan::TaskKind::compute ? "box" : "ellipse";
    out += fmt::format("  t{} [shape={}, label={}];\n", t.id, shape, quote(fmt::format("{} {}\\n{}", t.id, t.op, t.name)));
  }
  for (const auto& r : p.regsts)
    for (plan::TaskId c : r.consumers)
      out += fmt::format("  t{} -> t{} [label={}];\n", r.producer, c, quote(fmt::format("r{} x{} {}B", r.id, r.slots, r.slot_bytes)));
  out += "}\n";
  return out;
}

}  // namespace of::runtime
