// SPDX-License-Identifier: Apache-2.0
#include "schemas/plan_codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "common/file_util.h"
#include "schemas/plan_copies.h"
#include "schemas/plan_format.h"
#include "schemas/plan_generated.h"

namespace of::plan {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

fb::Device device_of(const DeviceRef& d) { return fb::Device(d.rank, fb::DeviceKind(d.kind), d.index); }
DeviceRef device_from(const fb::Device& d) { return DeviceRef{d.rank(), int8_t(d.kind()), d.index()}; }

// Decoding helpers: a missing field fails naming it.
struct Reader {
  const std::string& path;
  uint64_t limit;  // decode's memory_limit

  template <typename T>
  const T* need(const T* p, const std::string& field) const {
    if (!p) fail({.file = path, .field = field}, "missing");
    return p;
  }
  std::string str(const flatbuffers::String* s, const std::string& field) const { return need(s, field)->str(); }
  template <typename T>
  std::vector<T> vec(const flatbuffers::Vector<T>* v, const std::string& field) const {
    need(v, field);
    // The FlatBuffers 2.0 verifier aligns a vector's length, not its elements: a corrupt plan can
    // place 8-byte numbers at an address no encoder would, and reading them is undefined. (An
    // empty vector may sit anywhere; nothing is read from it.)
    if (v->size() > 0 && reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) != 0)
      fail({.file = path, .field = field}, "misaligned {}-byte numbers: the plan is corrupt", sizeof(T));
    return std::vector<T>(v->begin(), v->end());
  }
  DType dtype(fb::DType t, const std::string& field) const {
    if (!dtype_valid(int(t))) fail({.file = path, .field = field}, "unknown dtype {}", int(t));
    return DType(t);
  }
  Shape shape(const flatbuffers::Vector<int64_t>* v, const std::string& field) const {
    Shape s = vec(v, field);
    for (int64_t d : s)
      if (d < 0) fail({.file = path, .field = field}, "negative dimension {}", d);
    return s;
  }
};

// "1.5 GiB", for the memory limit in messages.
std::string human_size(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(bytes) / double(uint64_t(1) << 30));
  return fmt::format("{} MiB", bytes >> 20);
}

// The runs of copies of a table (schemas/plan_copies.h): `write(run, copies)` stores each run's
// first entry, with its Copies where it stands for more than itself.
template <class T, class W>
void write_runs(FlatBufferBuilder& b, const std::vector<T>& entries, W write) {
  for (const Run& run : find_runs(entries)) {
    Offset<fb::Copies> copies = 0;
    if (run.copies.count > 1)
      copies = fb::CreateCopies(b, run.copies.count, b.CreateVector(run.copies.steps), run.copies.name_step,
                                run.copies.shard_step.empty() ? 0 : b.CreateVector(run.copies.shard_step));
    write(entries[run.first], copies);
  }
}

// Whether an entry's device (tasks and arenas have one) is an index into cluster.devices: the
// stored entry's is by construction, a copy's only if its step keeps it there.
bool device_in(const Task& t, size_t devices) { return t.device >= 0 && size_t(t.device) < devices; }
bool device_in(const Arena& a, size_t devices) { return a.device >= 0 && size_t(a.device) < devices; }
template <class T>
bool device_in(const T&, size_t) {
  return true;
}

// Appends the entries a stored one stands for: itself, and its copies (plan_copies.h). `left` is
// how many bytes of memory the plan may still take (decode's memory_limit): whether a plan fits
// depends on what it holds, not on how its file stores it, and a corrupt count fails before its
// copies are made.
template <class T>
void expand(std::vector<T>& out, T first, const fb::Copies* c, const Reader& r, const std::string& field, uint64_t& left, size_t devices) {
  const uint64_t each = held_bytes(first);
  if (!c) {
    if (each > left) fail({.file = r.path, .field = field}, "the plan takes more than {} in memory, its limit here", human_size(r.limit));
    left -= each;
    out.push_back(std::move(first));
    return;
  }
  Copies copies;
  copies.count = c->count();
  copies.steps = r.vec(c->steps(), field + ".copies.steps");
  copies.name_step = c->name_step();
  if (c->shard_step()) copies.shard_step = r.vec(c->shard_step(), field + ".copies.shard_step");
  if (copies.count < 1) fail({.file = r.path, .field = field + ".copies.count"}, "{} copies: not a count", copies.count);
  if (uint64_t(copies.count) > left / each)
    fail({.file = r.path, .field = field + ".copies.count"}, "{} copies of {} bytes: the plan would take more than {} in memory, its limit here",
         copies.count, each, human_size(r.limit));
  left -= uint64_t(copies.count) * each;
  for (int64_t k = 0; k < copies.count; ++k) {
    T copy;
    if (!shifted(first, k, copies, copy))
      fail({.file = r.path, .field = field + ".copies"}, "copy {} of {}: its steps are not one per reference, or shift one or its name out of range: the plan is corrupt", k, copies.count);
    if (!device_in(copy, devices))
      fail({.file = r.path, .field = field + ".copies"}, "copy {} of {} is on a device past the {} of cluster.devices: the plan is corrupt", k,
           copies.count, devices);
    out.push_back(std::move(copy));
  }
}

}  // namespace

std::vector<uint8_t> encode(const Plan& p) {
  // Sized up front from the plan (about 0.7 KB per task with its registers): growing by doubling
  // copies the buffer each time, and a plan at scale is hundreds of MB. Pages the builder never
  // writes are never touched, so a guess on the high side costs nothing.
  const size_t guess = (size_t(1) << 16) + 512 * p.tasks.size() + 256 * p.regsts.size();
  FlatBufferBuilder b(std::min<size_t>(guess, size_t(1) << 30));
  std::vector<fb::Device> devices;
  for (const DeviceRef& d : p.devices) devices.push_back(device_of(d));
  auto cluster = fb::CreateCluster(b, 1, b.CreateVectorOfStructs(devices));

  // Physical tensors; their layouts are in `layouts`, as text for people.
  std::vector<Offset<fb::LogicalTensor>> tensors;
  write_runs(b, p.tensors, [&](const LogicalTensor& t, Offset<fb::Copies> copies) {
    tensors.push_back(fb::CreateLogicalTensor(b, b.CreateString(t.name), b.CreateVector(t.desc.shape), fb::DType(t.desc.dtype), 0, 0,
                                              b.CreateVector(t.full_shape), b.CreateVector(t.shard_begin), t.model, t.zeros, copies));
  });
  std::vector<Offset<fb::TensorLayout>> layouts;
  for (const TensorLayout& t : p.layouts)
    layouts.push_back(fb::CreateTensorLayout(b, b.CreateString(t.name), b.CreateVector(t.desc.shape), fb::DType(t.desc.dtype),
                                             b.CreateString(t.placement), b.CreateString(t.sbp), t.stage));
  std::vector<Offset<fb::Boxing>> boxings;
  for (const Boxing& x : p.boxings)
    boxings.push_back(fb::CreateBoxing(b, b.CreateString(x.tensor), b.CreateString(x.kind), b.CreateString(x.from), b.CreateString(x.to),
                                       b.CreateString(x.consumer), x.bytes, x.backward));
  std::vector<Offset<fb::Arena>> arenas;
  write_runs(b, p.arenas, [&](const Arena& a, Offset<fb::Copies> copies) {
    fb::Device d = device_of(p.devices.at(size_t(a.device)));
    arenas.push_back(fb::CreateArena(b, a.id, &d, a.bytes, copies));
  });
  std::vector<Offset<fb::Regst>> regsts;
  write_runs(b, p.regsts, [&](const Regst& r, Offset<fb::Copies> copies) {
    std::vector<Offset<fb::Blob>> blobs;
    for (const Blob& bl : r.blobs)
      blobs.push_back(fb::CreateBlob(b, bl.tensor, b.CreateVector(bl.desc.shape), fb::DType(bl.desc.dtype), bl.offset, bl.bytes));
    regsts.push_back(fb::CreateRegst(b, r.id, r.producer, b.CreateVector(r.consumers), r.slots, r.slot_bytes, r.arena,
                                     b.CreateVector(r.offsets), b.CreateVector(blobs), r.persistent, r.acts_per_piece,
                                     r.pieces_per_version, r.share_group, copies));
  });
  std::vector<Offset<fb::ShareGroup>> share_groups;
  write_runs(b, p.share_groups, [&](const ShareGroup& g, Offset<fb::Copies> copies) {
    share_groups.push_back(fb::CreateShareGroup(b, g.slots, b.CreateVector(g.tasks), b.CreateVector(g.frames), copies));
  });
  std::vector<Offset<fb::MemoryOption>> memory_options;
  for (const MemoryOption& m : p.memory_options)
    memory_options.push_back(fb::CreateMemoryOption(b, b.CreateString(m.flags), b.CreateVector(m.peaks)));
  std::vector<Offset<fb::Candidate>> candidates;
  for (const Candidate& k : p.prediction.candidates)
    candidates.push_back(fb::CreateCandidate(b, b.CreateString(k.flags), k.step_seconds, k.peak_bytes, b.CreateString(k.refused)));
  auto prediction = fb::CreatePrediction(b, p.prediction.step_seconds, b.CreateString(p.prediction.costs), b.CreateVector(candidates));
  std::vector<Offset<fb::Variable>> variables;
  write_runs(b, p.variables, [&](const Variable& v, Offset<fb::Copies> copies) {
    variables.push_back(fb::CreateVariable(b, v.id, v.tensor, b.CreateString(v.key), v.arena, v.offset, v.bytes, copies));
  });
  std::vector<Offset<fb::Task>> tasks;
  write_runs(b, p.tasks, [&](const Task& t, Offset<fb::Copies> copies) {
    std::vector<Offset<fb::TaskInput>> inputs;
    for (const TaskInput& in : t.inputs)
      inputs.push_back(fb::CreateTaskInput(b, fb::InputKind(in.kind), in.id, in.blob, in.view.empty() ? 0 : b.CreateVector(in.view)));
    std::vector<Offset<fb::Attr>> attrs;
    for (const Attr& a : t.attrs.all())
      attrs.push_back(fb::CreateAttr(b, b.CreateString(a.name), b.CreateVector(a.ints), b.CreateVector(a.floats),
                                     b.CreateString(a.str)));
    fb::Device d = device_of(p.devices.at(size_t(t.device)));
    tasks.push_back(fb::CreateTask(b, t.id, fb::TaskKind(t.kind), b.CreateString(t.name), b.CreateString(t.op),
                                   b.CreateString(t.kernel), &d, t.stream, b.CreateVector(inputs),
                                   b.CreateVector(t.in_regsts), b.CreateVector(t.out_regsts), b.CreateVector(attrs),
                                   b.CreateVectorOfStrings(t.io_names), t.stage, t.once_per_version, copies));
  });
  auto job = fb::CreateJob(b, fb::JobKind(p.job.kind), p.job.batch, p.job.pieces, p.job.seed, b.CreateString(p.job.label),
                           p.job.micro_batches, b.CreateString(p.job.optimizer), p.job.lr, b.CreateString(p.job.schedule),
                           b.CreateString(p.job.eval_plan));
  auto root = fb::CreatePlan(b, plan_format::kVersion, b.CreateString(p.model), job, cluster, b.CreateVector(tensors),
                             b.CreateVector(arenas), b.CreateVector(regsts), b.CreateVector(variables),
                             b.CreateVector(tasks), b.CreateString(p.weights), p.weights_bytes, p.weights_crc32,
                             b.CreateVector(layouts), b.CreateVector(boxings), b.CreateVectorOfStrings(p.buffers), b.CreateVectorOfStrings(p.carried),
                             b.CreateVector(share_groups), b.CreateVector(memory_options), prediction);
  fb::FinishPlanBuffer(b, root);
  if (b.GetSize() >= (1ull << 31) - 1) fail({}, "plan exceeds the FlatBuffers limit of 2 GiB");

  std::vector<uint8_t> file(plan_format::kHeaderBytes + b.GetSize());
  uint64_t size = b.GetSize();
  uint32_t crc = crc32_of(b.GetBufferPointer(), b.GetSize());
  uint32_t version = plan_format::kVersion;
  std::memcpy(file.data(), plan_format::kMagic, 8);
  std::memcpy(file.data() + 8, &size, 8);
  std::memcpy(file.data() + 16, &crc, 4);
  std::memcpy(file.data() + 20, &version, 4);
  std::memcpy(file.data() + plan_format::kHeaderBytes, b.GetBufferPointer(), b.GetSize());
  return file;
}

Plan decode(const uint8_t* bytes, size_t size, const std::string& path, uint64_t memory_limit) {
  const Where file{.file = path};
  if (size < plan_format::kHeaderBytes || std::memcmp(bytes, plan_format::kMagic, 8) != 0)
    fail(file, "not an of plan (bad magic)");
  uint64_t fb_size;
  uint32_t crc, version;
  std::memcpy(&fb_size, bytes + 8, 8);
  std::memcpy(&crc, bytes + 16, 4);
  std::memcpy(&version, bytes + 20, 4);
  if (version != plan_format::kVersion)
    fail(file, "plan version {} is not supported (this ofrun reads version {}): compile the model again with this ofc", version, plan_format::kVersion);
  if (fb_size != size - plan_format::kHeaderBytes)
    fail(file, "truncated or padded: header says {} bytes of plan, file holds {}", fb_size, size - plan_format::kHeaderBytes);
  const uint8_t* buf = bytes + plan_format::kHeaderBytes;
  if (crc32_of(buf, fb_size) != crc) fail(file, "checksum mismatch: the plan is corrupt");
  // The buffer is copied so that FlatBuffers reads aligned data.
  std::vector<uint8_t> aligned(buf, buf + fb_size);
  // The verifier's default cap of a million tables (a guard against a buffer that claims more
  // than it can hold) is below what a plan over a thousand devices has; every table takes at
  // least 4 bytes, so the buffer's size bounds the count as well.
  flatbuffers::Verifier::Options options;
  options.max_tables = flatbuffers::uoffset_t(std::max<uint64_t>(options.max_tables, fb_size / 4));
  flatbuffers::Verifier verifier(aligned.data(), aligned.size(), options);
  if (!fb::VerifyPlanBuffer(verifier)) fail(file, "FlatBuffers verification failed: the plan is corrupt");
  const fb::Plan* root = fb::GetPlan(aligned.data());

  Reader r{path, memory_limit};
  Plan p;
  uint64_t left = memory_limit;
  // The body repeats the header's version; a body that disagrees is not a plan this reads.
  if (root->version() != plan_format::kVersion)
    fail(file, "version: the plan body says {}, its header {}: the plan is corrupt", root->version(), plan_format::kVersion);
  p.version = root->version();
  p.model = r.str(root->model(), "model");
  const fb::Job* job = r.need(root->job(), "job");
  auto opt_str = [](const flatbuffers::String* s) { return s ? s->str() : std::string(); };
  p.job = Job{.kind = JobKind(job->kind()), .batch = job->batch(), .pieces = job->pieces(), .seed = job->seed(),
              .label = opt_str(job->label()), .micro_batches = job->micro_batches(), .optimizer = opt_str(job->optimizer()),
              .lr = job->lr(), .schedule = opt_str(job->schedule()), .eval_plan = opt_str(job->eval_plan())};
  const fb::Cluster* cluster = r.need(root->cluster(), "cluster");
  for (const fb::Device* d : *r.need(cluster->devices(), "cluster.devices")) p.devices.push_back(device_from(*d));

  // Devices are stored by value; the model refers to them by index into the cluster's list.
  auto device_index = [&](const fb::Device* d, const std::string& field) {
    r.need(d, field);
    for (size_t k = 0; k < p.devices.size(); ++k)
      if (p.devices[k].rank == d->rank() && p.devices[k].kind == int8_t(d->kind()) && p.devices[k].index == d->index())
        return int32_t(k);
    fail({.file = path, .field = field}, "rank {} device {} is not in cluster.devices", d->rank(), d->index());
  };

  auto tensors = r.need(root->tensors(), "tensors");
  for (flatbuffers::uoffset_t i = 0; i < tensors->size(); ++i) {
    std::string f = fmt::format("tensors[{}]", i);
    const fb::LogicalTensor* t = tensors->Get(i);
    LogicalTensor lt{r.str(t->name(), f + ".name"), {r.shape(t->shape(), f + ".shape"), r.dtype(t->dtype(), f + ".dtype")}, {}, {}};
    if (t->full_shape() && t->full_shape()->size()) {
      lt.full_shape = r.shape(t->full_shape(), f + ".full_shape");
      lt.shard_begin = r.vec(t->shard_begin(), f + ".shard_begin");
    }
    lt.model = t->model();
    lt.zeros = t->zeros();
    expand(p.tensors, std::move(lt), t->copies(), r, f, left, p.devices.size());
  }
  auto arenas = r.need(root->arenas(), "arenas");
  for (flatbuffers::uoffset_t i = 0; i < arenas->size(); ++i) {
    const fb::Arena* a = arenas->Get(i);
    expand(p.arenas, Arena{a->id(), device_index(a->device(), fmt::format("arenas[{}].device", i)), a->bytes()}, a->copies(), r,
           fmt::format("arenas[{}]", i), left, p.devices.size());
  }
  auto regsts = r.need(root->regsts(), "regsts");
  for (flatbuffers::uoffset_t i = 0; i < regsts->size(); ++i) {
    std::string f = fmt::format("regsts[{}]", i);
    const fb::Regst* g = regsts->Get(i);
    Regst out{.id = g->id(), .producer = g->producer(), .consumers = r.vec(g->consumers(), f + ".consumers"),
              .slots = g->slots(), .slot_bytes = g->slot_bytes(), .arena = g->arena(),
              .offsets = r.vec(g->offsets(), f + ".offsets"), .blobs = {}, .persistent = g->persistent(),
              .acts_per_piece = g->acts_per_piece(), .pieces_per_version = g->pieces_per_version(),
              .share_group = g->share_group()};
    auto blobs = r.need(g->blobs(), f + ".blobs");
    for (flatbuffers::uoffset_t k = 0; k < blobs->size(); ++k) {
      std::string bf = fmt::format("{}.blobs[{}]", f, k);
      const fb::Blob* bl = blobs->Get(k);
      out.blobs.push_back(Blob{bl->tensor(), {r.shape(bl->shape(), bf + ".shape"), r.dtype(bl->dtype(), bf + ".dtype")},
                               bl->offset(), bl->bytes()});
    }
    expand(p.regsts, std::move(out), g->copies(), r, f, left, p.devices.size());
  }
  auto variables = r.need(root->variables(), "variables");
  for (flatbuffers::uoffset_t i = 0; i < variables->size(); ++i) {
    const fb::Variable* v = variables->Get(i);
    expand(p.variables, Variable{v->id(), v->tensor(), r.str(v->key(), fmt::format("variables[{}].key", i)), v->arena(), v->offset(), v->bytes()},
           v->copies(), r, fmt::format("variables[{}]", i), left, p.devices.size());
  }
  auto tasks = r.need(root->tasks(), "tasks");
  for (flatbuffers::uoffset_t i = 0; i < tasks->size(); ++i) {
    std::string f = fmt::format("tasks[{}]", i);
    const fb::Task* t = tasks->Get(i);
    if (int(t->kind()) < 0 || int(t->kind()) > 5) fail({.file = path, .field = f + ".kind"}, "unknown task kind {}", int(t->kind()));
    Task out{.id = t->id(), .kind = TaskKind(t->kind()), .name = r.str(t->name(), f + ".name"),
             .op = r.str(t->op(), f + ".op"), .kernel = r.str(t->kernel(), f + ".kernel"),
             .device = device_index(t->device(), f + ".device"),
             .stream = t->stream(), .in_regsts = r.vec(t->in_regsts(), f + ".in_regsts"),
             .out_regsts = r.vec(t->out_regsts(), f + ".out_regsts"), .stage = t->stage(),
             .once_per_version = t->once_per_version()};
    for (const fb::TaskInput* in : *r.need(t->inputs(), f + ".inputs"))
    {
      if (int(in->kind()) < 0 || int(in->kind()) > 2) fail({.file = path, .field = f + ".inputs"}, "unknown input kind {}", int(in->kind()));
      out.inputs.push_back(TaskInput{InputKind(in->kind()), in->id(), in->blob(), {}});
      if (in->view()) out.inputs.back().view = r.vec(in->view(), f + ".inputs.view");
    }
    for (const fb::Attr* a : *r.need(t->attrs(), f + ".attrs")) {
      std::string af = f + ".attrs";
      std::string name = r.str(a->name(), af + ".name");
      if (a->ints() && a->ints()->size()) out.attrs.set_ints(name, r.vec(a->ints(), af));
      else if (a->floats() && a->floats()->size()) out.attrs.set_floats(name, r.vec(a->floats(), af));
      else if (a->str() && a->str()->size()) out.attrs.set_str(name, a->str()->str());
      else out.attrs.set_ints(name, {});
    }
    for (const flatbuffers::String* s : *r.need(t->io_names(), f + ".io_names")) out.io_names.push_back(r.need(s, f + ".io_names")->str());
    expand(p.tasks, std::move(out), t->copies(), r, f, left, p.devices.size());
  }
  p.weights = r.str(root->weights(), "weights");
  p.weights_bytes = root->weights_bytes();
  p.weights_crc32 = root->weights_crc32();
  if (root->layouts())
    for (flatbuffers::uoffset_t i = 0; i < root->layouts()->size(); ++i) {
      const std::string f = fmt::format("layouts[{}]", i);
      const fb::TensorLayout* t = r.need(root->layouts()->Get(i), f);
      p.layouts.push_back(TensorLayout{r.str(t->name(), f + ".name"), {r.shape(t->shape(), f + ".shape"), r.dtype(t->dtype(), f + ".dtype")},
                                       r.str(t->placement(), f + ".placement"), r.str(t->sbp(), f + ".sbp"), t->stage()});
    }
  if (root->boxings())
    for (flatbuffers::uoffset_t i = 0; i < root->boxings()->size(); ++i) {
      const std::string f = fmt::format("boxings[{}]", i);
      const fb::Boxing* x = r.need(root->boxings()->Get(i), f);
      p.boxings.push_back(Boxing{r.str(x->tensor(), f + ".tensor"), r.str(x->kind(), f + ".kind"), r.str(x->from(), f + ".from"),
                                 r.str(x->to(), f + ".to"), r.str(x->consumer(), f + ".consumer"), x->bytes(), x->backward()});
    }
  if (root->buffers())
    for (flatbuffers::uoffset_t i = 0; i < root->buffers()->size(); ++i)
      p.buffers.push_back(r.str(root->buffers()->Get(i), fmt::format("buffers[{}]", i)));
  if (root->carried())
    for (flatbuffers::uoffset_t i = 0; i < root->carried()->size(); ++i)
      p.carried.push_back(r.str(root->carried()->Get(i), fmt::format("carried[{}]", i)));
  if (root->share_groups())
    for (flatbuffers::uoffset_t i = 0; i < root->share_groups()->size(); ++i) {
      const std::string f = fmt::format("share_groups[{}]", i);
      const fb::ShareGroup* g = r.need(root->share_groups()->Get(i), f);
      expand(p.share_groups, ShareGroup{g->slots(), r.vec(g->tasks(), f + ".tasks"), r.vec(g->frames(), f + ".frames")}, g->copies(), r, f, left, p.devices.size());
    }
  if (root->memory_options())
    for (flatbuffers::uoffset_t i = 0; i < root->memory_options()->size(); ++i) {
      const std::string f = fmt::format("memory_options[{}]", i);
      const fb::MemoryOption* m = r.need(root->memory_options()->Get(i), f);
      MemoryOption out{r.str(m->flags(), f + ".flags"), r.vec(m->peaks(), f + ".peaks")};
      if (out.peaks.size() != p.arenas.size())
        fail({.file = path, .field = f + ".peaks"}, "has {} peaks for {} arenas", out.peaks.size(), p.arenas.size());
      p.memory_options.push_back(std::move(out));
    }
  if (const fb::Prediction* pr = root->prediction()) {
    // For people only (ofdump, ofrun's closing line): a value no run depends on, still checked.
    p.prediction.step_seconds = pr->step_seconds();
    if (!std::isfinite(p.prediction.step_seconds) || p.prediction.step_seconds < 0)
      fail({.file = r.path, .field = "prediction.step_seconds"}, "{} is not a time in seconds", p.prediction.step_seconds);
    if (pr->costs()) p.prediction.costs = r.str(pr->costs(), "prediction.costs");
    if (pr->candidates())
      for (flatbuffers::uoffset_t i = 0; i < pr->candidates()->size(); ++i) {
        const std::string f = fmt::format("prediction.candidates[{}]", i);
        const fb::Candidate* k = r.need(pr->candidates()->Get(i), f);
        Candidate out{r.str(k->flags(), f + ".flags"), k->step_seconds(), k->peak_bytes(), k->refused() ? r.str(k->refused(), f + ".refused") : ""};
        if (!std::isfinite(out.step_seconds) || out.step_seconds < 0) fail({.file = r.path, .field = f + ".step_seconds"}, "{} is not a time in seconds", out.step_seconds);
        p.prediction.candidates.push_back(std::move(out));
      }
  }
  return p;
}

}  // namespace of::plan
