// SPDX-License-Identifier: Apache-2.0
// What the oneDNN-primitive kernels (gemm_packed.cpp, conv_dnnl.cpp) share: the CPU engine,
// primitive attributes (user-owned scratchpad, optional fused ReLU) and packing a constant
// weight once into the layout a primitive chose. Included only by those kernels.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace of::kernels::cpu {

const dnnl::engine& cpu_engine();

// Scratchpad owned by the kernel (so run() allocates nothing). No ReLU post-op: oneDNN's
// eltwise_relu maps NaN to 0, so fused ReLUs run after the primitive (relu_inplace).
dnnl::primitive_attr primitive_attr();

// A new buffer in `packed` layout holding the weight at `data` (in `user` layout).
dnnl::memory pack_weights(const dnnl::memory::desc& user, const void* data, const dnnl::memory::desc& packed);

}  // namespace of::kernels::cpu
