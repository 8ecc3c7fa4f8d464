// SPDX-License-Identifier: Apache-2.0
// gather along attribute `axis` (default 0): for data [A..., V, D...] (A: the axes before `axis`)
// and indices of any shape I, Y [A..., I..., D...] = data[a..., indices[i...], d...]. Axis 0 is
// nn.Embedding's lookup; another axis is a tensor index (`x[:, 0]`, ViT's class token).
// gather_grad: dData = sum over i with indices[i] = v of dY[a, i, :].
// Indices are validated by the data source (tokens < vocabulary); one out of [-V, V) still never
// reads or writes out of bounds: its row of Y is zero and it adds nothing to the gradient.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

// Rows, row length and index width shared by both kernels.
struct GatherShape {
  int64_t outer = 1, vocab = 0, row = 1, count = 0;
  bool wide = true;  // int64 indices (else int32)

  int64_t index(const void* indices, int64_t i) const {
    const int64_t v = wide ? static_cast<const int64_t*>(indices)[i] : static_cast<const int32_t*>(indices)[i];
    return v < 0 ? v + vocab : v;
  }
};

GatherShape gather_shape(const KernelConfig& cfg, const char* name, const Shape& table, const TensorDesc& indices,
                         const Shape& rows) {
  GatherShape s;
  if (table.empty()) fail(where_of(cfg), "{}: the table is a scalar", name);
  if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
    fail(where_of(cfg), "{}: indices have dtype {}, expected int64 or int32", name, dtype_name(indices.dtype));
  const int64_t axis = cfg.attrs.get_int("axis", 0);
  if (axis < 0 || axis >= int64_t(table.size()))
    fail(where_of(cfg), "{}: axis {} is out of range for the table {}", name, axis, shape_str(table));
  Shape want(table.begin(), table.begin() + axis);
  want.insert(want.end(), indices.shape.begin(), indices.shape.end());
  want.insert(want.end(), table.begin() + axis + 1, table.end());
  if (rows != want) fail(where_of(cfg), "{}: rows {} do not match indices {} and table {} along axis {}", name, shape_str(rows), shape_str(indices.shape), shape_str(table), axis);
  for (int64_t k = 0; k < axis; ++k) s.outer *= table[size_t(k)];
  s.vocab = table[size_t(axis)];
  for (size_t k = size_t(axis) + 1; k < table.size(); ++k) s.row *= table[k];
  s.count = numel(indices.shape);
  s.wide = indices.dtype == DType::i64;
  return s;
}

class Gather final : public Kernel {
 public:
  Gather(const KernelConfig& cfg) {
    check_arity(cfg, "gather", 2, 2, 1);
    if (cfg.inputs[0].dtype != DType::f32 || cfg.outputs[0].dtype != DType::f32) fail(where_of(cfg), "gather: data must be f32");
    s_ = gather_shape(cfg, "gather", cfg.inputs[0].shape, cfg.inputs[1], cfg.outputs[0].shape);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    auto* y = static_cast<float*>(out[0]);
    const size_t bytes = size_t(s_.row) * sizeof(float);
    for (int64_t a = 0; a < s_.outer; ++a) {
      const float* table = static_cast<const float*>(in[0]) + a * s_.vocab * s_.row;
      for (int64_t i = 0; i < s_.count; ++i, y += s_.row) {
        const int64_t v = s_.index(in[1], i);
        if (v >= 0 && v < s_.vocab) std::memcpy(y, table + v * s_.row, bytes);
        else std::memset(y, 0, bytes);
      }
    }
  }

 private:
  GatherShape s_;
};

class GatherGrad final : public Kernel {
 public:
  GatherGrad(const KernelConfig& cfg) {
    check_arity(cfg, "gather_grad", 2, 2, 1);
    if (cfg.inputs[0].dtype != DType::f32 || cfg.outputs[0].dtype != DType::f32) fail(where_of(cfg), "gather_grad: dY must be f32");
    s_ = gather_shape(cfg, "gather_grad", cfg.outputs[0].shape, cfg.inputs[1], cfg.inputs[0].shape);
  }
  void run(const RunCtx&, const void* const* in, void* const* out) override {
    const auto* dy = static_cast<const float*>(in[0]);
    std::memset(out[0], 0, size_t(s_.outer * s_.vocab * s_.row) * sizeof(float));
    for (int64_t a = 0; a < s_.outer; ++a) {
      float* table = static_cast<float*>(out[0]) + a * s_.vocab * s_.row;
      for (int64_t i = 0; i < s_.count; ++i, dy += s_.row) {
        const int64_t v = s_.index(in[1], i);
        if (v < 0 || v >= s_.vocab) continue;
        float* dst = table + v * s_.row;
        for (int64_t k = 0; k < s_.row; ++k) dst[k] += dy[k];
      }
    }
  }

 private:
  GatherShape s_;
};

}  // namespace

std::unique_ptr<Kernel> make_gather(const KernelConfig& cfg) { return std::make_unique<Gather>(cfg); }
std::unique_ptr<Kernel> make_gather_grad(const KernelConfig& cfg) { return std::make_unique<GatherGrad>(cfg); }

}  // namespace of::kernels::cpu
