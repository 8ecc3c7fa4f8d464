// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/dnnl_util.h"

#include <cstdint>

#include "kernels/cpu/thread_workspace.h"

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

DnnlSequence::DnnlSequence() : stream_(cpu_engine()) {}

dnnl::memory DnnlSequence::transient(const dnnl::memory::desc& md) {
  dnnl::memory m(md, cpu_engine(), DNNL_MEMORY_NONE);
  const size_t bytes = (md.get_size() + kWorkspaceAlignment - 1) / kWorkspaceAlignment * kWorkspaceAlignment;
  transients_.emplace_back(m, workspace_bytes_);
  workspace_bytes_ += bytes;
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

void DnnlSequence::run(const RunCtx& ctx) { run(transients_.empty() ? nullptr : act_workspace(ctx, workspace_bytes_)); }

void DnnlSequence::run(void* base) {
  if (!transients_.empty()) {
    if (base != bound_) {
      for (const auto& [m, offset] : transients_) dnnl_memory_set_data_handle(m.get(), static_cast<uint8_t*>(base) + offset);
      bound_ = base;
    }
  }
  for (const std::vector<Step>* list : {&steps_, &after_})
    for (const Step& s : *list) dnnl_primitive_execute(s.prim.get(), stream_.get(), int(s.args.size()), s.args.data());
}

}  // namespace of::kernels::cpu
