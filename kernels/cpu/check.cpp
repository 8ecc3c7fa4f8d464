// SPDX-License-Identifier: Apache-2.0
// Config checks shared by the CPU kernel factories (see check.h).
#include "kernels/cpu/check.h"

#include <fmt/format.h>

namespace of::kernels::cpu {

void check_arity(const KernelConfig& cfg, std::string_view kernel, int min_in, int max_in,
                 int n_out) {
  const int n_in = static_cast<int>(cfg.inputs.size());
  if (n_in < min_in || n_in > max_in) {
    if (min_in == max_in)
      fail(where_of(cfg), "{}: expected {} inputs, got {}", kernel, min_in, n_in);
    fail(where_of(cfg), "{}: expected {} to {} inputs, got {}", kernel, min_in, max_in, n_in);
  }
  if (static_cast<int>(cfg.outputs.size()) != n_out)
    fail(where_of(cfg), "{}: expected {} outputs, got {}", kernel, n_out, cfg.outputs.size());
}

void check_dtypes(const KernelConfig& cfg, std::string_view kernel, DType t) {
  for (size_t i = 0; i < cfg.inputs.size(); ++i)
    if (cfg.inputs[i].dtype != t)
      fail(where_of(cfg), "{}: input {} has dtype {}, expected {}", kernel, i,
           dtype_name(cfg.inputs[i].dtype), dtype_name(t));
  for (size_t i = 0; i < cfg.outputs.size(); ++i)
    if (cfg.outputs[i].dtype != t)
      fail(where_of(cfg), "{}: output {} has dtype {}, expected {}", kernel, i,
           dtype_name(cfg.outputs[i].dtype), dtype_name(t));
}

void check_dtypes(const KernelConfig& cfg, std::string_view kernel, const std::vector<DType>& in,
                  const std::vector<DType>& out) {
  OF_ASSERT(in.size() == cfg.inputs.size() && out.size() == cfg.outputs.size(),
            "check_dtypes: dtype lists do not match the checked arity");
  for (size_t i = 0; i < in.size(); ++i)
    if (cfg.inputs[i].dtype != in[i])
      fail(where_of(cfg), "{}: input {} has dtype {}, expected {}", kernel, i,
           dtype_name(cfg.inputs[i].dtype), dtype_name(in[i]));
  for (size_t i = 0; i < out.size(); ++i)
    if (cfg.outputs[i].dtype != out[i])
      fail(where_of(cfg), "{}: output {} has dtype {}, expected {}", kernel, i,
           dtype_name(cfg.outputs[i].dtype), dtype_name(out[i]));
}

void check_input_shape(const KernelConfig& cfg, std::string_view kernel, int i,
                       std::string_view what, const Shape& s) {
  if (cfg.inputs[i].shape != s)
    fail(where_of(cfg), "{}: input {} ({}) has shape {}, expected {}", kernel, i, what,
         shape_str(cfg.inputs[i].shape), shape_str(s));
}

void check_output_shape(const KernelConfig& cfg, std::string_view kernel, int i, const Shape& s) {
  if (cfg.outputs[i].shape != s)
    fail(where_of(cfg), "{}: output {} has shape {}, expected {}", kernel, i,
         shape_str(cfg.outputs[i].shape), shape_str(s));
}

std::vector<int64_t> get_ints_n(const KernelConfig& cfg, std::string_view kernel, const char* name,
                                size_t n, std::vector<int64_t> fallback) {
  std::vector<int64_t> v = cfg.attrs.get_ints(name, std::move(fallback));
  if (v.size() != n)
    fail(where_of(cfg), "{}: attribute '{}' has {} values, expected {}", kernel, name, v.size(), n);
  return v;
}

}  // namespace of::kernels::cpu

namespace of::kernels::cpu {

AxisView axis_view(const KernelConfig& cfg, std::string_view kernel, const Shape& s) {
  const int64_t axis = cfg.attrs.get_int("axis", static_cast<int64_t>(s.size()) - 1);
  if (axis < 0 || axis >= static_cast<int64_t>(s.size()))
    fail(where_of(cfg), "{}: axis {} out of range for shape {}", kernel, axis, shape_str(s));
  AxisView v;
  for (int64_t i = 0; i < axis; ++i) v.outer *= s[size_t(i)];
  v.n = s[size_t(axis)];
  for (size_t i = size_t(axis) + 1; i < s.size(); ++i) v.inner *= s[i];
  return v;
}

bool fused_relu(const KernelConfig& cfg, std::string_view kernel) {
  const Attr* a = cfg.attrs.find("activation");
  if (!a) return false;
  if (a->str != "relu") fail(where_of(cfg), "{}: fused activation '{}' is not supported (only relu)", kernel, a->str);
  return true;
}

void relu_inplace(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = !(y[i] <= 0.0f) ? y[i] : 0.0f;  // NaN stays NaN, as torch.relu
}

}  // namespace of::kernels::cpu
