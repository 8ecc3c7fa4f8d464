// SPDX-License-Identifier: Apache-2.0
#include "kernels/cpu/dnnl_util.h"

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

}  // namespace of::kernels::cpu
