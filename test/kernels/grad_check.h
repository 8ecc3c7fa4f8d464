// SPDX-License-Identifier: Apache-2.0
// Helpers for the backward-kernel tests: central differences in double of L(x) = sum(f(x) * r)
// for a fixed random r (so dy = r), the gradient tolerance (max abs error <= 1e-3 * max(1,
// max|ref|)), and running kernels with several outputs or mixed dtypes.
#pragma once

#include <functional>

#include "kernel_test_util.h"

namespace of::kernels::testing {

using DoubleFn = std::function<std::vector<double>(const std::vector<double>&)>;

inline std::vector<double> to_double(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline std::vector<float> to_float(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// dL/dx by central differences, L(x) = sum_i f(x)_i * r_i. eps 1e-6 in double leaves a
// truncation error ~1e-12 * f''' and a rounding error ~1e-10 * |L|: far inside the tolerance.
inline std::vector<double> numeric_grad(const DoubleFn& f, std::vector<double> x,
                                        const std::vector<double>& r, double eps = 1e-6) {
  auto loss = [&](const std::vector<double>& at) {
    const std::vector<double> y = f(at);
    REQUIRE(y.size() == r.size());
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i) l += y[i] * r[i];
    return l;
  };
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + eps;
    const double up = loss(x);
    x[i] = keep - eps;
    const double down = loss(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * eps);
  }
  return g;
}

// The f32 kernel's gradient against the double finite differences.
inline void check_grad(const std::vector<float>& got, const std::vector<double>& ref) {
  check_close(got, ref, 1e-3);
}

// Prepares `name` for cpu:f32 with explicit descriptors (mixed dtypes, several outputs) and runs
// it once on the given buffers.
inline void run_kernel(const std::string& name, const Attrs& attrs,
                       const std::vector<TensorDesc>& in, const std::vector<TensorDesc>& out,
                       const std::vector<const void*>& in_ptrs,
                       const std::vector<void*>& out_ptrs) {
  auto kernel = make_kernel(name, DeviceKind::cpu, DType::f32,
                            KernelConfig{attrs, in, out, "test_node"});
  kernel->run({}, in_ptrs.data(), out_ptrs.data());
}

// Expects `name` to reject a config given by descriptors, with an of::Error naming the node.
inline void check_rejects_descs(const std::string& name, const Attrs& attrs,
                                const std::vector<TensorDesc>& in,
                                const std::vector<TensorDesc>& out) {
  try {
    make_kernel(name, DeviceKind::cpu, DType::f32, KernelConfig{attrs, in, out, "test_node"});
    FAIL("expected of::Error for " << name);
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("test_node"));
  }
}

}  // namespace of::kernels::testing
