// SPDX-License-Identifier: Apache-2.0
// gather / gather_grad along axes 0, 1 and the last, int64 and int32 indices (negative ones count
// from the end), against an index-mapping reference; gather_grad must be gather's adjoint
// (<dY, gather(X)> = <gather_grad(dY), X>, repeated indices summed); an index out of range gives
// a zero row and no gradient; bad configs are refused.
#include <cstdint>

#include "kernel_test_util.h"

namespace of::kernels {
namespace {

struct GatherCase {
  Shape table;
  int64_t axis;
  Shape indices;
  std::vector<int64_t> index;  // the indices' values
};

Shape gathered_shape(const GatherCase& c) {
  Shape y(c.table.begin(), c.table.begin() + c.axis);
  y.insert(y.end(), c.indices.begin(), c.indices.end());
  y.insert(y.end(), c.table.begin() + c.axis + 1, c.table.end());
  return y;
}

// Y[a, i, d] = T[a, idx[i], d] with a, d the flattened axes before and after `axis`.
std::vector<double> gather_ref(const GatherCase& c, const std::vector<float>& t) {
  int64_t outer = 1, row = 1;
  for (int64_t k = 0; k < c.axis; ++k) outer *= c.table[size_t(k)];
  for (size_t k = size_t(c.axis) + 1; k < c.table.size(); ++k) row *= c.table[k];
  const int64_t v = c.table[size_t(c.axis)];
  std::vector<double> y;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t idx : c.index) {
      const int64_t r = idx < 0 ? idx + v : idx;
      for (int64_t d = 0; d < row; ++d) y.push_back(r >= 0 && r < v ? t[size_t((a * v + r) * row + d)] : 0.0);
    }
  return y;
}

template <class I>
std::vector<float> run_gather(const std::string& name, const GatherCase& c, DType idx_dtype, const Shape& in0,
                              const std::vector<float>& x, const Shape& out) {
  std::vector<I> idx(c.index.begin(), c.index.end());
  Attrs attrs;
  attrs.set_int("axis", c.axis);
  auto k = make_kernel(name, DeviceKind::cpu, DType::f32,
                       KernelConfig{attrs, {{in0, DType::f32}, {c.indices, idx_dtype}}, {{out, DType::f32}}, "test_node"});
  std::vector<float> y(size_t(numel(out)), std::nanf(""));
  const void* in[] = {x.data(), idx.data()};
  void* outs[] = {y.data()};
  k->run({}, in, outs);
  return y;
}

template <class I>
void check_gather(const GatherCase& c, DType idx_dtype) {
  std::mt19937 rng(7);
  const Shape y_shape = gathered_shape(c);
  const auto t = testing::random_floats(numel(c.table), rng);
  INFO(shape_str(c.table) << " axis " << c.axis << " indices " << shape_str(c.indices));
  testing::check_close(run_gather<I>("gather", c, idx_dtype, c.table, t, y_shape), gather_ref(c, t), 0.0);
  // The adjoint: <dY, gather(T)> = <gather_grad(dY), T> for every T, so for the unit vectors.
  const auto dy = testing::random_floats(numel(y_shape), rng);
  const auto dt = run_gather<I>("gather_grad", c, idx_dtype, y_shape, dy, c.table);
  std::vector<double> want(dt.size(), 0.0);
  for (size_t j = 0; j < want.size(); ++j) {
    std::vector<float> unit(dt.size(), 0.0f);
    unit[j] = 1.0f;
    const auto col = gather_ref(c, unit);
    for (size_t i = 0; i < col.size(); ++i) want[j] += col[i] * dy[i];
  }
  testing::check_close(dt, want, 1e-6);
}

TEST_CASE("gather: axes 0, 1 and last match an index reference and gather_grad is its adjoint", "[kernels]") {
  const std::vector<GatherCase> cases = {
      {{5, 3}, 0, {4}, {0, 4, 2, 4}},             // an embedding lookup, a repeated row
      {{6, 2, 2}, 0, {2, 2}, {-1, 0, 5, 3}},      // 2-D indices, a negative one
      {{2, 5, 3}, 1, {}, {0}},                    // x[:, 0]: a scalar index drops the axis
      {{3, 4, 2}, 1, {3}, {3, 3, -4}},
      {{2, 3, 4}, 2, {2}, {1, 3}},                // the last axis
      {{4, 3}, 0, {3}, {7, -9, 1}},               // out of range: zero rows, no gradient
  };
  for (const GatherCase& c : cases) {
    check_gather<int64_t>(c, DType::i64);
    check_gather<int32_t>(c, DType::i32);
  }
}

TEST_CASE("gather: gather_grad with padding_idx leaves that row zero, as nn.Embedding(padding_idx=k) does", "[kernels]") {
  const GatherCase c{{5, 3}, 0, {6}, {1, 0, 4, 0, -5, 1}};  // row 0 three times (one as -5), row 1 twice
  std::mt19937 rng(11);
  const auto dy = testing::random_floats(6 * 3, rng);
  Attrs attrs;
  attrs.set_int("axis", 0);
  attrs.set_int("padding_idx", 0);
  auto k = make_kernel("gather_grad", DeviceKind::cpu, DType::f32,
                       KernelConfig{attrs, {{{6, 3}, DType::f32}, {{6}, DType::i64}}, {{{5, 3}, DType::f32}}, "test_node"});
  std::vector<float> dt(15, std::nanf(""));
  const void* in[] = {dy.data(), c.index.data()};
  void* outs[] = {dt.data()};
  k->run({}, in, outs);
  std::vector<double> want(15, 0.0);
  for (int64_t d = 0; d < 3; ++d) {
    want[size_t(3 + d)] = double(dy[size_t(d)]) + double(dy[size_t(15 + d)]);  // row 1: items 0 and 5
    want[size_t(12 + d)] = dy[size_t(6 + d)];                                 // row 4: item 2
  }
  testing::check_close(dt, want, 1e-6);
  attrs.set_int("padding_idx", 5);
  CHECK_THROWS_WITH(make_kernel("gather_grad", DeviceKind::cpu, DType::f32,
                                KernelConfig{attrs, {{{6, 3}, DType::f32}, {{6}, DType::i64}}, {{{5, 3}, DType::f32}}, "test_node"}),
                    Catch::Contains("padding_idx 5 is outside the table's 5 rows"));
}

TEST_CASE("gather: bad configs throw of::Error", "[kernels]") {
  auto rejects = [](int64_t axis, const Shape& table, const Shape& idx, const Shape& out, DType idx_dtype) {
    Attrs attrs;
    attrs.set_int("axis", axis);
    for (const char* name : {"gather", "gather_grad"}) {
      const bool fwd = std::string(name) == "gather";
      try {
        make_kernel(name, DeviceKind::cpu, DType::f32,
                    KernelConfig{attrs, {{fwd ? table : out, DType::f32}, {idx, idx_dtype}}, {{fwd ? out : table, DType::f32}}, "test_node"});
        FAIL("expected of::Error for " << name << " axis " << axis);
      } catch (const Error& e) {
        CHECK_THAT(e.what(), Catch::Contains("test_node"));
      }
    }
  };
  rejects(2, {3, 4}, {2}, {3, 2}, DType::i64);      // axis past the rank
  rejects(-1, {3, 4}, {2}, {3, 2}, DType::i64);     // the kernel takes a normalized axis
  rejects(1, {3, 4}, {2}, {2, 4}, DType::i64);      // the shape of axis 0, not axis 1
  rejects(0, {3, 4}, {2}, {2, 4}, DType::f32);      // float indices
  rejects(0, {}, {2}, {2}, DType::i64);             // a scalar table
}

}  // namespace
}  // namespace of::kernels
