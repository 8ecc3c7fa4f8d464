// SPDX-License-Identifier: Apache-2.0
// gemm, matmul and matmul_tb through oneDNN's matmul primitive on the tensors' own layouts (Y
// row-major), one product per batch. dnnl_sgemm packs its operands into buffers it mallocs on
// every call (measured: 1.8 MB for [64,784]x[784,1024]), outside any plan; the primitive packs
// into its scratchpad, which lies in the act's workspace (thread_workspace.h: the arena's room
// for it, where ofrun found some), and was faster besides (one core: 1.16 against 1.28 ms for
// that product, 1.0 against 1.7 ms for [32,4096]x[4096,256]; the MLP trains 10.4k -> 14.4k
// samples/s).
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/dnnl_util.h"

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/thread_workspace.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// gemm (gemm.cpp's geometry): Y = alpha * op(A) op(B) + beta * C, A and B row-major with their
// leading dimensions or read transposed. alpha is the primitive's output scale; beta * C is added
// once the product is whole, as an accumulation of that product would add it (the primitive's
// sum post-op would start its sums from C).
class DnnlGemm final : public Kernel {
 public:
  explicit DnnlGemm(const GemmGeometry& g) : g_(g) {
    // Row-major with leading dimensions lda / ldb, or read transposed.
    const memory::desc a({g.m, g.k}, dt::f32, g.trans_a ? memory::dims{1, g.lda} : memory::dims{g.lda, 1});
    const memory::desc b({g.k, g.n}, dt::f32, g.trans_b ? memory::dims{1, g.ldb} : memory::dims{g.ldb, 1});
    const memory::desc y({g.m, g.n}, dt::f32, tag::ab);
    dnnl::primitive_attr attr = primitive_attr();
    if (g.alpha != 1.0f) attr.set_output_scales(0, {g.alpha});
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, y), attr, cpu_engine());
    a_ = user_memory(a);
    b_ = user_memory(b);
    y_ = user_memory(y);
    seq_.add(dnnl::matmul(pd), {{DNNL_ARG_SRC, a_.get()}, {DNNL_ARG_WEIGHTS, b_.get()}, {DNNL_ARG_DST, y_.get()}}, pd.scratchpad_desc());
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    float* y = static_cast<float*>(out[0]);
    dnnl_memory_set_data_handle(a_.get(), const_cast<void*>(in[0]));
    dnnl_memory_set_data_handle(b_.get(), const_cast<void*>(in[1]));
    dnnl_memory_set_data_handle(y_.get(), y);
    seq_.run(ctx);
    if (g_.has_c) {  // Y (no input's buffer) += beta * C, after the whole product
      const float* c = static_cast<const float*>(in[2]);
      for (int64_t i = 0; i < g_.m; ++i) {
        const float* c_row = c + i * g_.c_row_stride;
        float* y_row = y + i * g_.n;
        for (int64_t j = 0; j < g_.n; ++j) y_row[j] += g_.beta * c_row[j * g_.c_col_stride];
      }
    }
    if (g_.relu) relu_inplace(y, g_.m * g_.n);
  }
  size_t workspace_bytes() const override { return seq_.workspace_bytes(); }

 private:
  GemmGeometry g_;
  DnnlSequence seq_;
  memory a_, b_, y_;
};

// The step between consecutive batches' offsets when every batch is one step on (0: all
// batches read the same operand, broadcast), or -1 when they are not so regular.
int64_t batch_step(const std::vector<int64_t>& offsets) {
  if (offsets.empty() || offsets[0] != 0) return -1;
  const int64_t step = offsets.size() > 1 ? offsets[1] : 0;
  for (size_t t = 0; t < offsets.size(); ++t)
    if (offsets[t] != int64_t(t) * step) return -1;
  return step;
}

// matmul / matmul_tb (matmul.cpp's geometry). Batches whose operands lie one after another (or
// one operand shared by all: broadcast) are one batched primitive, which splits the batches
// between the kernel threads: attention's [32] x [128,64] x [64,128] products ran at 40% of a
// large product's rate as 32 calls, each split between the threads. Other layouts (broadcasts
// over several axes) run the primitive on one batch's [M,K] x [K,N] once per batch.
class DnnlMatMul final : public Kernel {
 public:
  explicit DnnlMatMul(const MatMulGeometry& g) : g_(g) {
    const int64_t batches = int64_t(g.a_offsets.size());
    const int64_t sa = batch_step(g.a_offsets), sb = batch_step(g.b_offsets);
    batched_ = batches > 1 && (sa == 0 || sa == g.m * g.k) && (sb == 0 || sb == g.k * g.n) && (sa != 0 || sb != 0);
    dnnl::matmul::primitive_desc pd = [&] {
      if (!batched_) {
        const memory::desc a({g.m, g.k}, dt::f32, g.trans_a ? tag::ba : tag::ab);
        const memory::desc b({g.k, g.n}, dt::f32, g.trans_b ? tag::ba : tag::ab);
        const memory::desc y({g.m, g.n}, dt::f32, tag::ab);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, y), primitive_attr(), cpu_engine());
      }
      // A shared operand is a batch of one, which the primitive broadcasts.
      const memory::desc a({sa == 0 ? 1 : batches, g.m, g.k}, dt::f32, g.trans_a ? tag::acb : tag::abc);
      const memory::desc b({sb == 0 ? 1 : batches, g.k, g.n}, dt::f32, g.trans_b ? tag::acb : tag::abc);
      const memory::desc y({batches, g.m, g.n}, dt::f32, tag::abc);
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, y), primitive_attr(), cpu_engine());
    }();
    a_ = user_memory(pd.src_desc());
    b_ = user_memory(pd.weights_desc());
    y_ = user_memory(pd.dst_desc());
    seq_.add(dnnl::matmul(pd), {{DNNL_ARG_SRC, a_.get()}, {DNNL_ARG_WEIGHTS, b_.get()}, {DNNL_ARG_DST, y_.get()}}, pd.scratchpad_desc());
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    const float* a = static_cast<const float*>(in[0]);
    const float* b = static_cast<const float*>(in[1]);
    float* y = static_cast<float*>(out[0]);
    void* scratch = act_workspace(ctx, seq_.workspace_bytes());
    const size_t calls = batched_ ? 1 : g_.a_offsets.size();
    for (size_t t = 0; t < calls; ++t) {
      dnnl_memory_set_data_handle(a_.get(), const_cast<float*>(a + g_.a_offsets[t]));
      dnnl_memory_set_data_handle(b_.get(), const_cast<float*>(b + g_.b_offsets[t]));
      dnnl_memory_set_data_handle(y_.get(), y + int64_t(t) * g_.m * g_.n);
      seq_.run(scratch);
    }
  }
  size_t workspace_bytes() const override { return seq_.workspace_bytes(); }

 private:
  MatMulGeometry g_;
  bool batched_ = false;
  DnnlSequence seq_;
  memory a_, b_, y_;
};

}  // namespace

std::unique_ptr<Kernel> make_dnnl_matmul(const KernelConfig& cfg, const MatMulGeometry& g) {
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.a_offsets.empty()) return nullptr;
  for (const auto* list : {&cfg.inputs, &cfg.outputs})
    for (const TensorDesc& d : *list)
      if (d.dtype != DType::f32) return nullptr;
  return std::make_unique<DnnlMatMul>(g);
}

std::unique_ptr<Kernel> make_dnnl_gemm(const KernelConfig& cfg) {
  const GemmGeometry g = gemm_geometry(cfg);
  // Every gemm with a product to make takes the primitive, whatever its leading dimensions: one
  // kernel for all, so a product gives the same bits in every plan that makes it.
  if (g.m == 0 || g.n == 0 || g.k == 0) return nullptr;
  for (const auto* list : {&cfg.inputs, &cfg.outputs})
    for (const TensorDesc& d : *list)
      if (d.dtype != DType::f32) return nullptr;
  return std::make_unique<DnnlGemm>(g);
}

}  // namespace of::kernels::cpu
