// SPDX-License-Identifier: Apache-2.0
// Helpers for the CPU kernel tests: random inputs, preparing and running a kernel by name, and
// the tolerance check (max abs error <= 1e-4 * max(1, max|ref|)) against double references.
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "kernels/registry.h"

namespace of::kernels::testing {

inline std::vector<float> random_floats(int64_t n, std::mt19937& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<TensorDesc> f32_descs(const std::vector<Shape>& shapes) {
  std::vector<TensorDesc> d;
  for (const Shape& s : shapes) d.push_back({s, DType::f32});
  return d;
}

inline std::unique_ptr<Kernel> prepare(const std::string& name, const Attrs& attrs,
                                       const std::vector<Shape>& in,
                                       const std::vector<Shape>& out) {
  return make_kernel(name, DeviceKind::cpu, DType::f32,
                     KernelConfig{attrs, f32_descs(in), f32_descs(out), "test_node"});
}

// Prepares `name` for cpu:f32 with the inputs' shapes and out_shape, runs it once, returns Y.
inline std::vector<float> run_f32(const std::string& name, const Attrs& attrs,
                                  const std::vector<Shape>& in_shapes,
                                  const std::vector<std::vector<float>>& in_data,
                                  const Shape& out_shape) {
  auto kernel = prepare(name, attrs, in_shapes, {out_shape});
  std::vector<float> y(static_cast<size_t>(numel(out_shape)), std::nanf(""));
  std::vector<const void*> ins;
  for (const auto& d : in_data) ins.push_back(d.data());
  void* outs[] = {y.data()};
  kernel->run({}, ins.data(), outs);
  return y;
}

// Expects `name` to reject this config with an of::Error that names the node.
inline void check_rejects(const std::string& name, const Attrs& attrs, const std::vector<Shape>& in,
                          const std::vector<Shape>& out) {
  try {
    prepare(name, attrs, in, out);
    FAIL("expected of::Error for " << name);
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_node"));
  }
}

// rtol: 1e-4 for forward kernels against their references; grad_check.h passes 1e-3.
inline void check_close(const std::vector<float>& got, const std::vector<double>& ref,
                        double rtol = 1e-4) {
  REQUIRE(got.size() == ref.size());
  double max_ref = 0.0, max_err = 0.0;
  size_t worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    max_ref = std::max(max_ref, std::fabs(ref[i]));
    const double err = std::fabs(static_cast<double>(got[i]) - ref[i]);
    if (!(err <= max_err)) {  // also catches NaN
      max_err = std::isnan(err) ? INFINITY : err;
      worst = i;
    }
  }
  INFO("worst index " << worst << ": got " << (got.empty() ? 0.0f : got[worst]) << ", expected "
                      << (ref.empty() ? 0.0 : ref[worst]));
  CHECK(max_err <= rtol * std::max(1.0, max_ref));
}

// Pooled length along one axis, floor or ceil mode, as PyTorch/ONNX size it: in ceil mode the
// last window must start inside the input or the begin padding.
inline int64_t pool_out_size(int64_t in, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d,
                             bool ceil) {
  const double span = double(in + pb + pe - d * (k - 1) - 1) / double(s);
  int64_t out = static_cast<int64_t>(ceil ? std::ceil(span) : std::floor(span)) + 1;
  if (ceil && (out - 1) * s >= in + pb) --out;
  return out;
}

// Row-major strides of a shape, in elements.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Multi-index of flat index `flat` in shape s.
inline std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t i = s.size(); i-- > 0;) {
    idx[i] = flat % s[i];
    flat /= s[i];
  }
  return idx;
}

// Distinct, recognisable values of any element type (i64 ones beyond 2^30).
template <class T>
std::vector<T> iota_data(int64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<T>(i * 3 + 1000000007LL * (sizeof(T) == 8));
  return v;
}

// Runs `name` for cpu:dtype on element type T (for the byte-moving kernels).
template <class T>
std::vector<T> run_any(const std::string& name, DType dtype, const Attrs& attrs,
                       const std::vector<Shape>& in_shapes,
                       const std::vector<std::vector<T>>& in_data, const Shape& out_shape) {
  std::vector<TensorDesc> ins;
  for (const Shape& s : in_shapes) ins.push_back({s, dtype});
  auto kernel = make_kernel(name, DeviceKind::cpu, dtype,
                            KernelConfig{attrs, ins, {{out_shape, dtype}}, "test_node"});
  std::vector<T> y(static_cast<size_t>(numel(out_shape)), T(-1));
  std::vector<const void*> in;
  for (const auto& d : in_data) in.push_back(d.data());
  void* out[] = {y.data()};
  kernel->run({}, in.data(), out);
  return y;
}

}  // namespace of::kernels::testing
