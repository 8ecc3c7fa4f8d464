// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/dnnl_util.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace of::kernels::cpu {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::primitive_attr primitive_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory pack_weights(const dnnl::memory::desc& user, const void* data, const dnnl::memory::desc& packed) {
  dnnl::memory from(user, cpu_engine(), const_cast<void*>(data));
  dnnl::memory to(packed, cpu_engine());
  dnnl::stream stream(cpu_engine());
  dnnl::reorder(from, to).execute(stream, from, to);
  stream.wait();
  return to;
}

dnnl::memory user_memory(const dnnl::memory::desc& md) { return dnnl::memory(md, cpu_engine(), DNNL_MEMORY_NONE); }

namespace {

constexpr size_t kWorkspaceAlignment = 64;

// The most any sequence made so far needs: what each thread's workspace grows to.
std::atomic<size_t> workspace_needed{0};

struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
  ~Workspace() { std::free(data); }
};

// This thread's workspace, at least as large as every sequence made so far needs.
void* thread_workspace() {
  thread_local Workspace w;
  const size_t need = workspace_needed.load(std::memory_order_relaxed);
  if (w.bytes < need) {
    std::free(w.data);
    w.data = std::aligned_alloc(kWorkspaceAlignment, need);
    if (!w.data) throw std::bad_alloc();
    w.bytes = need;
  }
  return w.data;
}

}  // namespace

DnnlSequence::DnnlSequence() : stream_(cpu_engine()) {}

dnnl::memory DnnlSequence::transient(const dnnl::memory::desc& md) {
  dnnl::memory m(md, cpu_engine(), DNNL_MEMORY_NONE);
  const size_t bytes = (md.get_size() + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  transients_.emplace_back(m, workspace_bytes_);
  workspace_bytes_ += bytes;
  size_t most = workspace_needed.load(std::memory_order_relaxed);
  while (most < workspace_bytes_ && !workspace_needed.compare_exchange_weak(most, workspace_bytes_)) {
  }
  bound_ = nullptr;  // bind again at the next run
  return m;
}

DnnlSequence::Step DnnlSequence::reorder(const dnnl::memory& from, const dnnl::memory& to) {
  dnnl::reorder::primitive_desc pd(from, to, primitive_attr());
  Step s{dnnl::reorder(pd), {}, transient(pd.scratchpad_desc())};
  s.args = {{DNNL_ARG_FROM, from.get()}, {DNNL_ARG_TO, to.get()}, {DNNL_ARG_SCRATCHPAD, s.scratchpad.get()}};
  return s;
}

dnnl::memory DnnlSequence::input(const dnnl::memory& user, const dnnl::memory::desc& chosen) {
  if (chosen == user.get_desc()) return user;
  const dnnl::memory& own = owned_.emplace_back(transient(chosen));
  steps_.push_back(reorder(user, own));
  return own;
}

dnnl::memory DnnlSequence::output(const dnnl::memory& user, const dnnl::memory::desc& chosen) {
  if (chosen == user.get_desc()) return user;
  const dnnl::memory& own = owned_.emplace_back(transient(chosen));
  after_.push_back(reorder(own, user));
  return own;
}

const dnnl::memory& DnnlSequence::keep(dnnl::memory m) { return owned_.emplace_back(std::move(m)); }

void DnnlSequence::add(const dnnl::primitive& prim, std::vector<dnnl_exec_arg_t> args,
                       const dnnl::memory::desc& scratchpad) {
  Step s{prim, std::move(args), transient(scratchpad)};
  s.args.push_back({DNNL_ARG_SCRATCHPAD, s.scratchpad.get()});
  steps_.push_back(std::move(s));
}

void DnnlSequence::run() {
  if (!transients_.empty()) {
    void* base = thread_workspace();
    if (base != bound_) {
      for (const auto& [m, offset] : transients_) dnnl_memory_set_data_handle(m.get(), static_cast<uint8_t*>(base) + offset);
      bound_ = base;
    }
  }
  for (const std::vector<Step>* list : {&steps_, &after_})
    for (const Step& s : *list) dnnl_primitive_execute(s.prim.get(), stream_.get(), int(s.args.size()), s.args.data());
}

}  // namespace of::kernels::cpu
