// SPDX-License-Identifier: Apache-2.0
#include "schemas/plan_copies.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace of::plan {
namespace {

#if defined(__GLIBCXX__) && __SIZEOF_POINTER__ == 8
// Each struct's size as `same` and `each_ref` know it (64-bit libstdc++): a new field changes it,
// and a field they do not compare would let two different entries fold into one.
static_assert(sizeof(Task) == 240 && sizeof(Regst) == 120 && sizeof(Variable) == 64 && sizeof(LogicalTensor) == 120 &&
                  sizeof(Blob) == 56 && sizeof(TaskInput) == 40 && sizeof(Arena) == 16 && sizeof(Attr) == 112 &&
                  sizeof(ShareGroup) == 56,
              "plan_model.h changed: compare and shift the new field in schemas/plan_copies.cpp, then update these sizes");
#endif

// Calls f(Ref, reference) for every reference the entry holds, always in the same order (the
// entry may be const: then f sees const references).
template <class T, class F>
  requires std::is_same_v<std::remove_const_t<T>, Task>
void each_ref(T& t, F&& f) {
  f(Ref::tasks, t.id);
  f(Ref::devices, t.device);
  for (auto& in : t.inputs) f(in.kind == InputKind::variable ? Ref::variables : Ref::regsts, in.id);
  for (auto& r : t.in_regsts) f(Ref::regsts, r);
  for (auto& r : t.out_regsts) f(Ref::regsts, r);
}
template <class T, class F>
  requires std::is_same_v<std::remove_const_t<T>, Regst>
void each_ref(T& r, F&& f) {
  f(Ref::regsts, r.id);
  f(Ref::tasks, r.producer);
  for (auto& c : r.consumers) f(Ref::tasks, c);
  f(Ref::arenas, r.arena);
  for (auto& b : r.blobs) f(Ref::tensors, b.tensor);
  f(Ref::share_groups, r.share_group);
}
template <class T, class F>
  requires std::is_same_v<std::remove_const_t<T>, Variable>
void each_ref(T& v, F&& f) {
  f(Ref::variables, v.id);
  f(Ref::tensors, v.tensor);
  f(Ref::arenas, v.arena);
}
template <class T, class F>
  requires std::is_same_v<std::remove_const_t<T>, Arena>
void each_ref(T& a, F&& f) {
  f(Ref::arenas, a.id);
  f(Ref::devices, a.device);
}
template <class T, class F>
  requires std::is_same_v<std::remove_const_t<T>, LogicalTensor>
void each_ref(T&, F&&) {}
template <class T, class F>
  requires std::is_same_v<std::remove_const_t<T>, ShareGroup>
void each_ref(T& g, F&& f) {
  for (auto& t : g.tasks) f(Ref::tasks, t);
  for (auto& r : g.frames) f(Ref::regsts, r);
}

// The entry's name, where it has one a copy renames.
const std::string* name_of(const Task& t) { return &t.name; }
const std::string* name_of(const LogicalTensor& t) { return &t.name; }
template <class T>
const std::string* name_of(const T&) { return nullptr; }
std::string* name_of(Task& t) { return &t.name; }
std::string* name_of(LogicalTensor& t) { return &t.name; }
template <class T>
std::string* name_of(T&) { return nullptr; }

// Where the number after a name's last '@' begins, and its value; npos where there is none or it
// is not written as to_string writes it (a leading zero), which a copy could not reproduce.
size_t name_number(const std::string& s, int64_t& value) {
  const size_t at = s.rfind('@');
  if (at == std::string::npos || at + 1 >= s.size() || (s[at + 1] == '0' && at + 2 < s.size())) return std::string::npos;
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data() + at + 1, end, value);
  return ec == std::errc() && ptr == end && value >= 0 ? at + 1 : std::string::npos;
}

bool same_floats(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}
bool same(const TaskInput& a, const TaskInput& b) { return a.kind == b.kind && a.id == b.id && a.blob == b.blob && a.view == b.view; }
bool same(const Blob& a, const Blob& b) { return a.tensor == b.tensor && a.desc.shape == b.desc.shape && a.desc.dtype == b.desc.dtype && a.offset == b.offset && a.bytes == b.bytes; }
template <class T>
bool same_each(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}
bool same(const Task& a, const Task& b) {
  if (a.id != b.id || a.kind != b.kind || a.name != b.name || a.op != b.op || a.kernel != b.kernel || a.device != b.device ||
      a.stream != b.stream || !same_each(a.inputs, b.inputs) || a.in_regsts != b.in_regsts || a.out_regsts != b.out_regsts ||
      a.io_names != b.io_names || a.stage != b.stage || a.once_per_version != b.once_per_version)
    return false;
  const std::vector<Attr>& x = a.attrs.all();
  const std::vector<Attr>& y = b.attrs.all();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].name != y[i].name || x[i].ints != y[i].ints || !same_floats(x[i].floats, y[i].floats) || x[i].str != y[i].str) return false;
  return true;
}
bool same(const Regst& a, const Regst& b) {
  return a.id == b.id && a.producer == b.producer && a.consumers == b.consumers && a.slots == b.slots && a.slot_bytes == b.slot_bytes &&
         a.arena == b.arena && a.offsets == b.offsets && same_each(a.blobs, b.blobs) && a.persistent == b.persistent &&
         a.acts_per_piece == b.acts_per_piece && a.pieces_per_version == b.pieces_per_version && a.share_group == b.share_group;
}
bool same(const Variable& a, const Variable& b) {
  return a.id == b.id && a.tensor == b.tensor && a.key == b.key && a.arena == b.arena && a.offset == b.offset && a.bytes == b.bytes;
}
bool same(const Arena& a, const Arena& b) { return a.id == b.id && a.device == b.device && a.bytes == b.bytes; }
bool same(const LogicalTensor& a, const LogicalTensor& b) {
  return a.name == b.name && a.desc.shape == b.desc.shape && a.desc.dtype == b.desc.dtype && a.full_shape == b.full_shape && a.shard_begin == b.shard_begin && a.model == b.model &&
         a.zeros == b.zeros;
}
bool same(const ShareGroup& a, const ShareGroup& b) { return a.slots == b.slots && a.tasks == b.tasks && a.frames == b.frames; }

// x + k * step, or false where that overflows an int64 (the steps come from a file).
bool advanced(int64_t x, int64_t k, int64_t step, int64_t& out) {
  int64_t by = 0;
  return !__builtin_mul_overflow(k, step, &by) && !__builtin_add_overflow(x, by, &out);
}

template <class T>
bool shift(const T& first, int64_t k, const Copies& c, T& out) {
  out = first;
  if (k == 0) return true;
  bool fits = true;
  size_t i = 0;
  each_ref(out, [&](Ref, int32_t& r) {
    int64_t v = 0;
    if (i >= c.steps.size() || !advanced(r, k, c.steps[i], v) || v < std::numeric_limits<int32_t>::min() ||
        v > std::numeric_limits<int32_t>::max())
      fits = false;
    else
      r = int32_t(v);
    ++i;
  });
  if (!fits || i != c.steps.size()) return false;  // one step per reference, each landing in an int32
  if (std::string* name = name_of(out); name && c.name_step != 0) {
    int64_t n = 0, v = 0;
    const size_t at = name_number(*name, n);
    if (at == std::string::npos || !advanced(n, k, c.name_step, v) || v < 0) return false;
    name->replace(at, std::string::npos, std::to_string(v));
  }
  if constexpr (std::is_same_v<T, LogicalTensor>) {
    if (!c.shard_step.empty()) {
      if (c.shard_step.size() != out.shard_begin.size()) return false;
      for (size_t a = 0; a < out.shard_begin.size(); ++a)
        if (!advanced(out.shard_begin[a], k, c.shard_step[a], out.shard_begin[a])) return false;
    }
  }
  return true;
}

// The steps that make b from a, if b is a copy of a (the check of the whole entry, shift then
// same, decides whether it is).
template <class T>
bool steps_between(const T& a, const T& b, Copies& c) {
  std::vector<std::pair<Ref, int32_t>> ra, rb;
  each_ref(a, [&](Ref kind, const int32_t& r) { ra.emplace_back(kind, r); });
  each_ref(b, [&](Ref kind, const int32_t& r) { rb.emplace_back(kind, r); });
  if (ra.size() != rb.size()) return false;
  for (size_t i = 0; i < ra.size(); ++i) {
    if (ra[i].first != rb[i].first) return false;
    c.steps.push_back(int64_t(rb[i].second) - ra[i].second);
  }
  if (const std::string* na = name_of(a)) {
    int64_t x = 0, y = 0;
    if (name_number(*na, x) != std::string::npos && name_number(*name_of(b), y) != std::string::npos) c.name_step = y - x;
  }
  if constexpr (std::is_same_v<T, LogicalTensor>) {
    if (a.shard_begin.size() != b.shard_begin.size()) return false;
    for (size_t i = 0; i < a.shard_begin.size(); ++i) {
      int64_t step = 0;
      if (__builtin_sub_overflow(b.shard_begin[i], a.shard_begin[i], &step)) return false;  // a decoded file's boxes may be anything
      c.shard_step.push_back(step);
    }
    if (std::all_of(c.shard_step.begin(), c.shard_step.end(), [](int64_t s) { return s == 0; })) c.shard_step.clear();
  }
  return true;
}

template <class T>
std::vector<Run> runs_of(const std::vector<T>& e) {
  std::vector<Run> runs;
  T copy;
  for (size_t i = 0; i < e.size();) {
    Run run{.first = i, .copies = {}};
    Copies c;
    if (i + 1 < e.size() && steps_between(e[i], e[i + 1], c)) {
      int64_t n = 1;
      while (i + size_t(n) < e.size() && shift(e[i], n, c, copy) && same(copy, e[i + size_t(n)])) ++n;
      if (n > 1) {
        c.count = n;
        run.copies = std::move(c);
      }
    }
    i += size_t(run.copies.count);
    runs.push_back(std::move(run));
  }
  return runs;
}

template <class V>
uint64_t vector_bytes(const V& v) {
  return uint64_t(v.size()) * sizeof(typename V::value_type);
}

}  // namespace

uint64_t held_bytes(const Task& e) {
  uint64_t n = sizeof(Task) + e.name.size() + e.op.size() + e.kernel.size() + vector_bytes(e.inputs) + vector_bytes(e.in_regsts) +
               vector_bytes(e.out_regsts) + vector_bytes(e.io_names) + vector_bytes(e.attrs.all());
  for (const TaskInput& in : e.inputs) n += vector_bytes(in.view);
  for (const std::string& s : e.io_names) n += s.size();
  for (const Attr& a : e.attrs.all()) n += a.name.size() + vector_bytes(a.ints) + vector_bytes(a.floats) + a.str.size();
  return n;
}
uint64_t held_bytes(const Regst& e) {
  uint64_t n = sizeof(Regst) + vector_bytes(e.consumers) + vector_bytes(e.offsets) + vector_bytes(e.blobs);
  for (const Blob& b : e.blobs) n += vector_bytes(b.desc.shape);
  return n;
}
uint64_t held_bytes(const Variable& e) { return sizeof(Variable) + e.key.size(); }
uint64_t held_bytes(const Arena&) { return sizeof(Arena); }
uint64_t held_bytes(const LogicalTensor& e) {
  return sizeof(LogicalTensor) + e.name.size() + vector_bytes(e.desc.shape) + vector_bytes(e.full_shape) + vector_bytes(e.shard_begin);
}
uint64_t held_bytes(const ShareGroup& e) { return sizeof(ShareGroup) + vector_bytes(e.tasks) + vector_bytes(e.frames); }

std::vector<Run> find_runs(const std::vector<Task>& e) { return runs_of(e); }
std::vector<Run> find_runs(const std::vector<Regst>& e) { return runs_of(e); }
std::vector<Run> find_runs(const std::vector<Variable>& e) { return runs_of(e); }
std::vector<Run> find_runs(const std::vector<Arena>& e) { return runs_of(e); }
std::vector<Run> find_runs(const std::vector<LogicalTensor>& e) { return runs_of(e); }
std::vector<Run> find_runs(const std::vector<ShareGroup>& e) { return runs_of(e); }

bool shifted(const Task& f, int64_t k, const Copies& c, Task& out) { return shift(f, k, c, out); }
bool shifted(const Regst& f, int64_t k, const Copies& c, Regst& out) { return shift(f, k, c, out); }
bool shifted(const Variable& f, int64_t k, const Copies& c, Variable& out) { return shift(f, k, c, out); }
bool shifted(const Arena& f, int64_t k, const Copies& c, Arena& out) { return shift(f, k, c, out); }
bool shifted(const LogicalTensor& f, int64_t k, const Copies& c, LogicalTensor& out) { return shift(f, k, c, out); }
bool shifted(const ShareGroup& f, int64_t k, const Copies& c, ShareGroup& out) { return shift(f, k, c, out); }

}  // namespace of::plan
