// SPDX-License-Identifier: Apache-2.0
// collective_part: a device's part of an all-reduce, reduce-scatter, all-gather and all-to-all,
// against an element-by-element reference; sums in summand order, as point-to-point boxing adds
// (bit for bit); bad piece lists refused naming the node.
#include "kernel_test_util.h"

namespace of::kernels {
namespace {

// One box: summand, input, start in the input, start in the output, extent.
struct Piece {
  int64_t summand, input;
  std::vector<int64_t> src, dst, size;
};

Attrs pieces_attr(const std::vector<Piece>& pieces) {
  std::vector<int64_t> flat;
  for (const Piece& p : pieces) {
    flat.push_back(p.summand);
    flat.push_back(p.input);
    flat.insert(flat.end(), p.src.begin(), p.src.end());
    flat.insert(flat.end(), p.dst.begin(), p.dst.end());
    flat.insert(flat.end(), p.size.begin(), p.size.end());
  }
  Attrs a;
  a.set_ints("pieces", flat);
  return a;
}

// The reference: every output element is its summand-0 box's element, plus each later
// summand's, added one after another in float (the order point-to-point boxing's Adds use).
std::vector<float> reference(const std::vector<Piece>& pieces, const std::vector<Shape>& in_shapes,
                             const std::vector<std::vector<float>>& in, const Shape& y_shape) {
  std::vector<float> y(size_t(numel(y_shape)), 0.0f);
  const auto y_st = testing::strides_of(y_shape);
  for (const Piece& p : pieces) {
    const auto x_st = testing::strides_of(in_shapes[size_t(p.input)]);
    for (int64_t i = 0; i < numel(p.size); ++i) {
      const auto idx = testing::unravel(i, p.size);
      int64_t xs = 0, ys = 0;
      for (size_t a = 0; a < idx.size(); ++a) {
        xs += (p.src[a] + idx[a]) * x_st[a];
        ys += (p.dst[a] + idx[a]) * y_st[a];
      }
      const float v = in[size_t(p.input)][size_t(xs)];
      y[size_t(ys)] = p.summand == 0 ? v : y[size_t(ys)] + v;
    }
  }
  return y;
}

void check_part(const std::vector<Piece>& pieces, const std::vector<Shape>& in_shapes, const Shape& y_shape) {
  std::mt19937 rng(7);
  std::vector<std::vector<float>> in;
  for (const Shape& s : in_shapes) in.push_back(testing::random_floats(numel(s), rng));
  const std::vector<float> want = reference(pieces, in_shapes, in, y_shape);
  CHECK(testing::run_f32("collective_part", pieces_attr(pieces), in_shapes, in, y_shape) == want);  // bit for bit
}

TEST_CASE("collective_part: a device's part of an all-reduce sums every summand in order", "[kernels]") {
  // Three devices' partial sums of a [4, 6] tensor, whole.
  const Shape s{4, 6};
  check_part({{0, 0, {0, 0}, {0, 0}, s}, {1, 1, {0, 0}, {0, 0}, s}, {2, 2, {0, 0}, {0, 0}, s}}, {s, s, s}, s);
  // Summation order matters in float: ((a + b) + c), not a + (b + c).
  Attrs attrs = pieces_attr({{0, 0, {0}, {0}, {1}}, {1, 1, {0}, {0}, {1}}, {2, 2, {0}, {0}, {1}}});
  const std::vector<float> y = testing::run_f32("collective_part", attrs, {{1}, {1}, {1}}, {{1e8f}, {-1e8f}, {1.0f}}, {1});
  CHECK(y[0] == 1.0f);
}

TEST_CASE("collective_part: reduce-scatter, all-gather and all-to-all parts cut and place boxes", "[kernels]") {
  // Reduce-scatter along axis 1 (runs of 2 of every row): device 1 of 3 sums columns [2, 4).
  check_part({{0, 0, {0, 2}, {0, 0}, {4, 2}}, {1, 1, {0, 2}, {0, 0}, {4, 2}}, {2, 2, {0, 2}, {0, 0}, {4, 2}}},
             {{4, 6}, {4, 6}, {4, 6}}, {4, 2});
  // All-gather along axis 0 (contiguous blocks) and along axis 2 of a 3-D tensor.
  check_part({{0, 0, {0, 0}, {0, 0}, {2, 3}}, {0, 1, {0, 0}, {2, 0}, {2, 3}}}, {{2, 3}, {2, 3}}, {4, 3});
  check_part({{0, 0, {0, 0, 0}, {0, 0, 0}, {2, 3, 1}}, {0, 1, {0, 0, 0}, {0, 0, 1}, {2, 3, 3}}}, {{2, 3, 1}, {2, 3, 3}}, {2, 3, 4});
  // All-to-all S(0) -> S(1) on two devices: device 0 takes columns [0, 2) of both row halves.
  check_part({{0, 0, {0, 0}, {0, 0}, {2, 2}}, {0, 1, {0, 0}, {2, 0}, {2, 2}}}, {{2, 4}, {2, 4}}, {4, 2});
  // A scalar, and i64 boxes placed (token ids gathered).
  check_part({{0, 0, {}, {}, {}}, {1, 1, {}, {}, {}}}, {{}, {}}, {});
  const std::vector<int64_t> ids = testing::run_any<int64_t>(
      "collective_part", DType::i64, pieces_attr({{0, 0, {0}, {0}, {2}}, {0, 1, {0}, {2}, {2}}}), {{2}, {2}}, {{7, 8}, {9, 10}}, {4});
  CHECK(ids == std::vector<int64_t>{7, 8, 9, 10});
}

TEST_CASE("collective_part: refuses piece lists that do not tile the output, naming the node", "[kernels]") {
  const Shape s{2, 2};
  // Summand 0 covers half the output.
  testing::check_rejects("collective_part", pieces_attr({{0, 0, {0, 0}, {0, 0}, {1, 2}}}), {s}, {s});
  // Two boxes of one summand overlap.
  testing::check_rejects("collective_part", pieces_attr({{0, 0, {0, 0}, {0, 0}, {2, 2}}, {0, 0, {0, 0}, {0, 0}, {1, 1}}}), {s}, {s});
  // A box outside its input, an input that does not exist, summands out of order.
  testing::check_rejects("collective_part", pieces_attr({{0, 0, {1, 0}, {0, 0}, {2, 2}}}), {s}, {s});
  testing::check_rejects("collective_part", pieces_attr({{0, 3, {0, 0}, {0, 0}, {2, 2}}}), {s}, {s});
  testing::check_rejects("collective_part", pieces_attr({{1, 0, {0, 0}, {0, 0}, {2, 2}}}), {s}, {s});
  // No pieces at all, and a ragged list.
  testing::check_rejects("collective_part", Attrs{}, {s}, {s});
  Attrs ragged;
  ragged.set_ints("pieces", {0, 0, 0});
  testing::check_rejects("collective_part", ragged, {s}, {s});
}

}  // namespace
}  // namespace of::kernels
