// SPDX-License-Identifier: Apache-2.0
// Every CUDA kernel against its CPU twin (twin.h) on random inputs, including the shapes that
// take the special paths: broadcasts, fused ReLU, transposed operands, empty tensors, labels out
// of range, momentum's first step, several acts of a stateful kernel.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "twin.h"

namespace of::kernels::testing {
namespace {

std::vector<TensorDesc> f32(const std::vector<Shape>& shapes) {
  std::vector<TensorDesc> d;
  for (const Shape& s : shapes) d.push_back({s, DType::f32});
  return d;
}

Attrs ints(std::initializer_list<std::pair<const char*, int64_t>> kv) {
  Attrs a;
  for (auto& [k, v] : kv) a.set_int(k, v);
  return a;
}

TEST_CASE("cuda twin: activations and their gradients match the CPU kernels", "[cuda]") {
  for (const char* name : {"relu", "sigmoid", "tanh", "gelu"}) {
    INFO(name);
    check_twin(name, {}, {random_f32({37, 129}, 1, -8, 8)}, f32({{37, 129}}));
    check_twin(name, {}, {random_f32({0, 5}, 1)}, f32({{0, 5}}));
  }
  for (const char* name : {"relu_grad", "sigmoid_grad", "tanh_grad", "gelu_grad"}) {
    INFO(name);
    check_twin(name, {}, {random_f32({1000, 3}, 2), random_f32({1000, 3}, 3)}, f32({{1000, 3}}));
  }
  // NaN stays NaN through relu, and relu_grad passes dy where y is NaN, as torch does.
  check_twin("relu", {}, {f32_tensor({4}, {NAN, -1.0f, 0.0f, 2.0f})}, f32({{4}}));
  check_twin("relu_grad", {}, {f32_tensor({2}, {1.5f, 2.5f}), f32_tensor({2}, {NAN, 0.0f})}, f32({{2}}));
  // In place: dx over dy, and over y.
  check_twin("tanh_grad", {}, {random_f32({300}, 2), random_f32({300}, 3)}, f32({{300}}), {}, 1, {{0, 0}});
  check_twin("relu_grad", {}, {random_f32({300}, 2), random_f32({300}, 3)}, f32({{300}}), {}, 1, {{0, 1}});
}

TEST_CASE("cuda twin: add, sub, mul, div, max, min, prelu and pow_tensor broadcast as numpy does", "[cuda]") {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{64, 100}, {64, 100}}, {{64, 100}, {100}}, {{64, 1}, {1, 100}}, {{2, 3, 4, 5}, {3, 1, 5}}, {{}, {7, 3}}, {{0, 4}, {4}}};
  for (const char* name : {"add", "sub", "mul", "div", "max", "min", "prelu"})
    for (const auto& [a, b] : shapes) {
      INFO(name << " " << shape_str(a) << " " << shape_str(b));
      Shape y = a.size() >= b.size() ? a : b;
      const size_t r = y.size();
      for (size_t i = 0; i < r; ++i) {
        const int64_t da = i + a.size() >= r ? a[i + a.size() - r] : 1;
        const int64_t db = i + b.size() >= r ? b[i + b.size() - r] : 1;
        y[i] = da == 1 ? db : da;
      }
      check_twin(name, {}, {random_f32(a, 4), random_f32(b, 5, 0.5f, 2.0f)}, f32({y}));
    }
  // pow_tensor (a tensor exponent) on positive bases: powf against std::pow
  check_twin("pow_tensor", {}, {random_f32({64, 100}, 6, 0.1f, 2.0f), random_f32({1}, 7, -2.0f, 3.0f)}, f32({{64, 100}}));
  check_twin("pow_tensor", {}, {random_f32({2, 3, 4}, 8, 0.1f, 2.0f), random_f32({3, 1}, 9, -2.0f, 3.0f)}, f32({{2, 3, 4}}));
  // NaN on either side wins, as torch.maximum / torch.minimum; ties give the same value.
  for (const char* name : {"max", "min"})
    check_twin(name, {}, {f32_tensor({4}, {NAN, 1.0f, 2.0f, -3.0f}), f32_tensor({4}, {1.0f, NAN, 2.0f, 3.0f})}, f32({{4}}));
}

TEST_CASE("cuda twin: gemm with transposes, broadcast C, alpha, beta and a fused ReLU", "[cuda]") {
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      const int64_t m = 33, k = 70, n = 45;
      const Shape a = ta ? Shape{k, m} : Shape{m, k};
      const Shape b = tb ? Shape{n, k} : Shape{k, n};
      Attrs attrs = ints({{"trans_a", ta}, {"trans_b", tb}});
      check_twin("gemm", attrs, {random_f32(a, 6), random_f32(b, 7)}, f32({{m, n}}));
      attrs.set_float("alpha", 0.5f);
      attrs.set_float("beta", 2.0f);
      check_twin("gemm", attrs, {random_f32(a, 6), random_f32(b, 7), random_f32({n}, 8)}, f32({{m, n}}));
      check_twin("gemm", attrs, {random_f32(a, 6), random_f32(b, 7), random_f32({m, 1}, 9)}, f32({{m, n}}));
      attrs.set_str("activation", "relu");
      check_twin("gemm", attrs, {random_f32(a, 6), random_f32(b, 7), random_f32({m, n}, 10)}, f32({{m, n}}));
    }
  // An empty inner dimension gives beta*C, or zeros.
  check_twin("gemm", {}, {random_f32({4, 0}, 1), random_f32({0, 3}, 2)}, f32({{4, 3}}));
  check_twin("gemm", {}, {random_f32({4, 0}, 1), random_f32({0, 3}, 2), random_f32({3}, 3)}, f32({{4, 3}}));
}

TEST_CASE("cuda twin: where broadcasts its condition and both branches", "[cuda]") {
  std::vector<uint8_t> bits(128 * 128);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = (i % 128) <= (i / 128) ? 1 : 0;  // a causal mask
  check_twin("where", {}, {bool_tensor({128, 128}, bits), random_f32({2, 4, 128, 128}, 42), f32_tensor({}, {-1e9f})}, f32({{2, 4, 128, 128}}));
  check_twin("where", {}, {bool_tensor({3, 1}, {1, 0, 1}), random_f32({3, 1}, 43), random_f32({1, 5}, 44)},
             f32({{3, 5}}));
}

TEST_CASE("cuda twin: matmul broadcasts batches as numpy does, matmul_tb reads B transposed", "[cuda]") {
  struct Case {
    Shape a, b, y;
  };
  const std::vector<Case> cases = {
      {{5, 7}, {7, 3}, {5, 3}},                // one product
      {{4, 5, 7}, {7, 3}, {4, 5, 3}},          // a shared B: the batch folds into M
      {{3, 5, 7}, {3, 7, 2}, {3, 5, 2}},       // even strides: one strided-batched call
      {{1, 5, 7}, {3, 7, 2}, {3, 5, 2}},       // A broadcast (stride 0)
      {{2, 4, 5, 7}, {4, 7, 3}, {2, 4, 5, 3}},  // B repeats every 4 batches: one call per batch
      {{7}, {7, 3}, {3}},                      // 1-D operands are promoted, then squeezed
      {{5, 7}, {7}, {5}},
      {{2, 5, 0}, {2, 0, 3}, {2, 5, 3}}};      // an empty sum is zeros
  for (const Case& c : cases) {
    INFO(shape_str(c.a) << " x " << shape_str(c.b));
    check_twin("matmul", {}, {random_f32(c.a, 23), random_f32(c.b, 24)}, f32({c.y}));
  }
  check_twin("matmul_tb", {}, {random_f32({2, 5, 70}, 25), random_f32({33, 70}, 26)}, f32({{2, 5, 33}}));
  // Operands read transposed (autodiff's A^T dY and dY B^T): strided-batched and per batch.
  for (int ta : {0, 1})
    for (int tb : {0, 1}) {
      INFO("trans_a " << ta << " trans_b " << tb);
      Attrs attrs = ints({{"trans_a", ta}, {"trans_b", tb}});
      const Shape a = ta ? Shape{3, 4, 7, 5} : Shape{3, 4, 5, 7}, b = tb ? Shape{3, 4, 2, 7} : Shape{3, 4, 7, 2};
      check_twin("matmul", attrs, {random_f32(a, 27), random_f32(b, 28)}, f32({{3, 4, 5, 2}}));
      const Shape b_rep = tb ? Shape{4, 2, 7} : Shape{4, 7, 2};
      check_twin("matmul", attrs, {random_f32(a, 29), random_f32(b_rep, 30)}, f32({{3, 4, 5, 2}}));
    }
}

TEST_CASE("cuda twin: softmax and log_softmax with their gradients, on the last and on inner axes", "[cuda]") {
  struct Case {
    Shape x;
    int64_t axis;
  };
  for (const Case& c : std::vector<Case>{{{6, 130}, 1}, {{4, 2000}, 1}, {{4, 5, 6}, 1}, {{4, 5, 6}, 0}, {{3, 0}, 1}}) {
    INFO(shape_str(c.x) << " axis " << c.axis);
    const Attrs attrs = ints({{"axis", c.axis}});
    for (const char* name : {"softmax", "log_softmax"}) {
      INFO(name);
      const auto y = check_twin(name, attrs, {random_f32(c.x, 27, -5, 5)}, f32({c.x}));
      const std::string grad = std::string(name) + "_grad";
      check_twin(grad, attrs, {random_f32(c.x, 28), y[0]}, f32({c.x}));
      // In place: y over x, dx over dy.
      check_twin(name, attrs, {random_f32(c.x, 27, -5, 5)}, f32({c.x}), {}, 1, {{0, 0}});
      check_twin(grad, attrs, {random_f32(c.x, 28), y[0]}, f32({c.x}), {}, 1, {{0, 0}});
      check_twin(grad, attrs, {random_f32(c.x, 28), y[0]}, f32({c.x}), {}, 1, {{0, 1}});
      // Logits far from zero: log_softmax must subtract the max before adding log(sum).
      check_twin(name, attrs, {random_f32(c.x, 29, 1e4f, 1e4f + 10)}, f32({c.x}));
    }
  }
}

TEST_CASE("cuda twin: masked_softmax and its gradient with a causal mask broadcast over batch and heads, kept where true or false", "[cuda]") {
  std::vector<uint8_t> causal(130 * 130);
  for (size_t i = 0; i < causal.size(); ++i) causal[i] = (i % 130) > (i / 130) ? 1 : 0;  // above the diagonal
  causal[5] = 7;  // nonzero is true
  for (int masked : {1, 0}) {
    INFO("masked " << masked);
    const Attrs attrs = ints({{"masked", masked}});
    const auto y = check_twin("masked_softmax", attrs, {random_f32({2, 3, 130, 130}, 31, -5, 5), bool_tensor({1, 1, 130, 130}, causal)},
                              f32({{2, 3, 130, 130}}));
    check_twin("masked_softmax_grad", attrs, {random_f32({2, 3, 130, 130}, 32), y[0], bool_tensor({130, 130}, causal)}, f32({{2, 3, 130, 130}}));
  }
}

TEST_CASE("cuda twin: pad and pad_grad in constant, reflect and edge modes on three axes of four", "[cuda]") {
  for (const char* mode : {"constant", "reflect", "edge"}) {
    INFO(mode);
    Attrs attrs;
    attrs.set_ints("pads", {0, 1, 3, 2, 0, 2, 1, 3});
    attrs.set_str("mode", mode);
    attrs.set_float("value", 0.25f);
    // Both devices sum each element's readers in pad_grad_at's order: the same bits.
    check_twin("pad", attrs, {random_f32({2, 3, 5, 4}, 41)}, f32({{2, 6, 9, 9}}), Tolerance{0, 0});
    check_twin("pad_grad", attrs, {random_f32({2, 6, 9, 9}, 42)}, f32({{2, 3, 5, 4}}), Tolerance{0, 0});
  }
}

TEST_CASE("cuda twin: strided_slice (f32, i64) and its gradient, steps on outer and inner axes, negative steps", "[cuda]") {
  Attrs attrs;
  attrs.set_ints("starts", {0, 1, 0, 2});
  attrs.set_ints("steps", {1, 2, 3, 1});
  check_twin("strided_slice", attrs, {random_f32({2, 9, 8, 5}, 43)}, f32({{2, 4, 3, 3}}), Tolerance{0, 0});
  check_twin("strided_slice_grad", attrs, {random_f32({2, 4, 3, 3}, 44)}, f32({{2, 9, 8, 5}}), Tolerance{0, 0});
  std::vector<int64_t> ids(2 * 9 * 8 * 5);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int64_t(i) * 1000003;
  check_twin("strided_slice", attrs, {i64_tensor({2, 9, 8, 5}, ids)}, {TensorDesc{{2, 4, 3, 3}, DType::i64}}, Tolerance{0, 0});
  Attrs back;  // negative steps (torch.flip)
  back.set_ints("starts", {1, 8, 0, 4});
  back.set_ints("steps", {-1, -2, 3, -1});
  check_twin("strided_slice", back, {random_f32({2, 9, 8, 5}, 45)}, f32({{2, 5, 3, 5}}), Tolerance{0, 0});
  check_twin("strided_slice_grad", back, {random_f32({2, 5, 3, 5}, 46)}, f32({{2, 9, 8, 5}}), Tolerance{0, 0});
}

TEST_CASE("cuda twin: resize and resize_grad, nearest, linear and cubic, up and down, 2-D and 1-D", "[cuda]") {
  struct Case {
    Shape x, y;
    std::vector<float> scales;
  };
  for (const Case& c : {Case{{2, 3, 5, 4}, {2, 3, 10, 8}, {2, 2}}, Case{{2, 3, 9, 7}, {2, 3, 4, 3}, {0.5f, 0.5f}}, Case{{1, 2, 6}, {1, 2, 15}, {2.5f}}})
    for (const char* mode : {"nearest", "linear", "cubic"})
      for (const char* coord : {"asymmetric", "pytorch_half_pixel", "align_corners"}) {
        INFO(mode << " " << coord << " " << shape_str(c.x));
        Attrs a;
        a.set_str("mode", mode);
        a.set_str("coord", coord);
        a.set_str("nearest_mode", "floor");
        a.set_floats("scales", c.scales);
        check_twin("resize", a, {random_f32(c.x, 52)}, f32({c.y}), {1e-6, 1e-5});
        check_twin("resize_grad", a, {random_f32(c.y, 53)}, f32({c.x}), {1e-6, 1e-5});
      }
}

TEST_CASE("cuda twin: instance_norm and its two gradients (GroupNorm's and InstanceNorm's), rows short and long", "[cuda]") {
  Attrs eps;
  eps.set_float("epsilon", 1e-5f);
  for (const Shape& x : {Shape{3, 4, 5, 6}, Shape{2, 3, 1000}}) {
    INFO(shape_str(x));
    const Shape c{x[1]};
    const HostTensor xv = random_f32(x, 54, -3, 5), dy = random_f32(x, 55), scale = random_f32(c, 56, 0.5f, 2), bias = random_f32(c, 57);
    check_twin("instance_norm", eps, {xv, scale, bias}, f32({x}), {1e-5, 1e-4});
    check_twin("instance_norm_grad", eps, {dy, xv, scale}, f32({x}), {1e-5, 1e-4});
    check_twin("instance_norm_scale_grad", eps, {dy, xv}, f32({c}), {1e-4, 1e-4});
  }
}

TEST_CASE("cuda twin: reduce_max and its gradient over inner, outer and several axes", "[cuda]") {
  const Shape x{3, 40, 50};
  for (const auto& [axes, y] : std::vector<std::pair<std::vector<int64_t>, Shape>>{{{2}, {3, 40}}, {{0}, {40, 50}}, {{0, 2}, {40}}}) {
    INFO(shape_str(y));
    Attrs a;
    a.set_ints("axes", axes);
    a.set_int("keepdims", 0);
    const HostTensor xv = random_f32(x, 58);
    const auto out = check_twin("reduce_max", a, {xv}, f32({y}), Tolerance{0, 0});
    check_twin("reduce_max_grad", a, {random_f32(y, 59), xv, out[0]}, f32({x}), Tolerance{0, 0});
  }
}

TEST_CASE("cuda twin: concat and split along the first, a middle and the last axis, unequal and empty parts", "[cuda]") {
  for (int64_t axis : {0, 1, 2}) {
    INFO("axis " << axis);
    std::vector<Shape> parts = {{4, 5, 6}, {4, 5, 6}, {4, 5, 6}};
    parts[1][size_t(axis)] = 3;
    parts[2][size_t(axis)] = 0;  // an empty part
    Shape whole = parts[0];
    whole[size_t(axis)] += parts[1][size_t(axis)];
    const Attrs attrs = ints({{"axis", axis}});
    check_twin("concat", attrs, {random_f32(parts[0], 52), random_f32(parts[1], 53), random_f32(parts[2], 54)},
               f32({whole}));
    check_twin("split", attrs, {random_f32(whole, 55)}, f32({parts[0], parts[1], parts[2]}));
  }
  std::vector<int64_t> a(12), b(6);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int64_t(i) << 33;
  for (size_t i = 0; i < b.size(); ++i) b[i] = -int64_t(i);
  const Attrs axis1 = ints({{"axis", 1}});
  check_twin("concat", axis1, {i64_tensor({3, 4}, a), i64_tensor({3, 2}, b)}, {{{3, 6}, DType::i64}});
  check_twin("split", axis1, {i64_tensor({3, 4}, a)}, {{{3, 1}, DType::i64}, {{3, 3}, DType::i64}});
}

TEST_CASE("cuda twin: transpose permutes f32 and i64 tensors", "[cuda]") {
  Attrs perm;
  perm.set_ints("perm", {2, 0, 1});
  check_twin("transpose", perm, {random_f32({2, 3, 4}, 29)}, f32({{4, 2, 3}}));
  check_twin("transpose", {}, {random_f32({64, 48}, 30)}, f32({{48, 64}}));  // default: reversed
  perm.set_ints("perm", {3, 2, 1, 0});
  check_twin("transpose", perm, {random_f32({1, 5, 1, 3}, 31)}, f32({{3, 1, 5, 1}}));
  std::vector<int64_t> v(60);
  for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(i) * 1000003;
  perm.set_ints("perm", {1, 0, 2});
  check_twin("transpose", perm, {i64_tensor({3, 4, 5}, v)}, {{{4, 3, 5}, DType::i64}});
}

TEST_CASE("cuda twin: layer_norm and its gradients, with and without bias", "[cuda]") {
  for (const Shape& x : std::vector<Shape>{{8, 256}, {2, 3, 1000}, {5, 1}}) {
    INFO(shape_str(x));
    const Attrs attrs = ints({{"axis", int64_t(x.size()) - 1}});
    const Shape row{x.back()};
    const HostTensor in = random_f32(x, 32, -3, 3), dy = random_f32(x, 33), scale = random_f32(row, 34, 0.5f, 1.5f);
    check_twin("layer_norm", attrs, {in, scale, random_f32(row, 35)}, f32({x}));
    check_twin("layer_norm", attrs, {in, scale}, f32({x}));
    check_twin("layer_norm_grad", attrs, {dy, in, scale}, f32({x}));
    check_twin("layer_norm_scale_grad", attrs, {dy, in}, f32({row}));
  }
  // Normalizing over two trailing axes.
  check_twin("layer_norm", ints({{"axis", 1}}), {random_f32({4, 6, 7}, 36), random_f32({6, 7}, 37)}, f32({{4, 6, 7}}));
}

TEST_CASE("cuda twin: gather and gather_grad, int64 and int32 indices, negative and out of range", "[cuda]") {
  // An embedding lookup: table [50, 16], indices [4, 9] with repeats, a negative and a bad one.
  std::vector<int64_t> idx(36);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i * 7) % 50;
  idx[3] = -1;   // the last row
  idx[5] = 50;   // out of range: a zero row, no gradient
  idx[6] = idx[7] = 11;  // repeats sum in the gradient
  const HostTensor table = random_f32({50, 16}, 38), indices = i64_tensor({4, 9}, idx);
  const auto y = check_twin("gather", {}, {table, indices}, f32({{4, 9, 16}}));
  check_twin("gather_grad", {}, {random_f32({4, 9, 16}, 39), indices}, f32({{50, 16}}));
  check_twin("gather_grad", ints({{"padding_idx", 11}}), {random_f32({4, 9, 16}, 39), indices}, f32({{50, 16}}));
  // int32 indices, and axis 1 (x[:, i]).
  const HostTensor i32 = i32_tensor({3}, {2, 0, 2});
  const Attrs axis1 = ints({{"axis", 1}});
  check_twin("gather", axis1, {random_f32({5, 3, 4}, 40), i32}, f32({{5, 3, 4}}));
  check_twin("gather_grad", axis1, {random_f32({5, 3, 4}, 41), i32}, f32({{5, 3, 4}}));
}

Attrs conv_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides, std::vector<int64_t> pads,
                 std::vector<int64_t> dilations, int64_t group) {
  Attrs a;
  a.set_ints("kernel_shape", kernel);
  a.set_ints("strides", strides);
  a.set_ints("pads", pads);
  a.set_ints("dilations", dilations);
  if (group > 0) a.set_int("group", group);
  return a;
}

TEST_CASE("cuda twin: conv and its two gradients, with strides, pads, dilations, groups, 1x1, 1-D and 3-D", "[cuda]") {
  struct Case {
    Shape x, w, y;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 3, 9, 9}, {4, 3, 3, 3}, {2, 4, 5, 5}, conv_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1)},
      {{2, 4, 8, 8}, {6, 2, 3, 3}, {2, 6, 8, 8}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2)},         // groups
      {{2, 8, 5, 5}, {16, 8, 1, 1}, {2, 16, 5, 5}, conv_attrs({1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1)},      // direct
      {{1, 2, 10, 9}, {3, 2, 3, 2}, {1, 3, 7, 9}, conv_attrs({3, 2}, {1, 1}, {0, 1, 1, 0}, {2, 1}, 1)},       // asym. pads, dilation
      {{3, 4, 6, 6}, {4, 1, 3, 3}, {3, 4, 2, 2}, conv_attrs({3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}, 4)},        // depthwise, stride 3
      {{2, 4, 11, 10}, {6, 2, 3, 3}, {2, 6, 5, 3}, conv_attrs({3, 3}, {2, 3}, {2, 0, 1, 1}, {2, 1}, 2)},     // all at once
      {{0, 3, 9, 9}, {4, 3, 3, 3}, {0, 4, 9, 9}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)},       // empty batch
      {{2, 3, 11}, {5, 3, 3}, {2, 5, 6}, conv_attrs({1, 3}, {1, 2}, {0, 1, 0, 2}, {1, 1}, 1)},                 // 1-D (Conv1d)
      {{2, 3, 4, 9, 9}, {4, 3, 3, 7, 7}, {2, 4, 4, 5, 5},
       conv_attrs({3, 7, 7}, {1, 2, 2}, {1, 3, 3, 1, 3, 3}, {1, 1, 1}, 1)},                                      // 3-D (r3d_18's stem)
      {{1, 4, 5, 6, 5}, {6, 2, 2, 3, 2}, {1, 6, 2, 6, 3},
       conv_attrs({2, 3, 2}, {2, 1, 2}, {0, 1, 1, 1, 1, 0}, {2, 1, 1}, 2)}};                                   // 3-D, groups, dilation
  for (const Case& c : cases) {
    INFO("X " << shape_str(c.x) << " W " << shape_str(c.w));
    const HostTensor x = random_f32(c.x, 45), w = random_f32(c.w, 46), dy = random_f32(c.y, 47);
    check_twin("conv", c.attrs, {x, w}, f32({c.y}), {1e-4, 1e-4});
    check_twin("conv", c.attrs, {x, w, random_f32({c.w[0]}, 48)}, f32({c.y}), {1e-4, 1e-4});  // bias alone
    Attrs fused = c.attrs;
    fused.set_str("activation", "relu");
    check_twin("conv", fused, {x, w, random_f32({c.w[0]}, 48)}, f32({c.y}), {1e-4, 1e-4});
    check_twin("conv_grad_data", c.attrs, {dy, w}, f32({c.x}), {1e-4, 1e-4});
    check_twin("conv_grad_data", c.attrs, {dy, w, random_f32({c.x[1]}, 51)}, f32({c.x}), {1e-4, 1e-4});  // ConvTranspose's bias
    check_twin("conv_grad_weight", c.attrs, {dy, x}, f32({c.w}), {1e-4, 1e-4});
  }
}

TEST_CASE("cuda twin: comparisons (f32, i64), logical ops, not and cast", "[cuda]") {
  const HostTensor a = f32_tensor({2, 3}, {1.0f, 2.0f, NAN, -1.0f, 0.0f, 3.0f}), b = f32_tensor({3}, {2.0f, 2.0f, 1.0f});
  for (const char* name : {"greater", "greater_or_equal", "less", "less_or_equal", "equal"}) {
    INFO(name);
    check_twin(name, {}, {a, b}, {TensorDesc{{2, 3}, DType::bool_}}, Tolerance{0, 0});
    check_twin(name, {}, {i64_tensor({4, 1}, {0, 5, -3, 7}), i64_tensor({1, 2}, {0, 7})}, {TensorDesc{{4, 2}, DType::bool_}}, Tolerance{0, 0});
  }
  const HostTensor m = bool_tensor({2, 2}, {0, 1, 0, 1}), n = bool_tensor({1, 2}, {1, 0});
  check_twin("logical_and", {}, {m, n}, {TensorDesc{{2, 2}, DType::bool_}}, Tolerance{0, 0});
  check_twin("logical_or", {}, {m, n}, {TensorDesc{{2, 2}, DType::bool_}}, Tolerance{0, 0});
  check_twin("logical_not", {}, {m}, {TensorDesc{{2, 2}, DType::bool_}}, Tolerance{0, 0});
  check_twin("cast", {}, {m}, f32({{2, 2}}), Tolerance{0, 0});
  check_twin("cast", {}, {f32_tensor({4}, {0.0f, -0.0f, NAN, 2.5f})}, {TensorDesc{{4}, DType::bool_}}, Tolerance{0, 0});
  check_twin("cast", {}, {i64_tensor({2}, {3, -2})}, f32({{2}}), Tolerance{0, 0});
  check_twin("cast", {}, {m}, {TensorDesc{{2, 2}, DType::i64}}, Tolerance{0, 0});
  // int64 ids: add, sub, mul broadcast (wrapping), clip_int
  const HostTensor ids = i64_tensor({2, 3}, {1, -2, 3, INT64_MAX, 5, 6}), step = i64_tensor({3}, {10, 20, 30});
  for (const char* op : {"add", "sub", "mul"}) check_twin(op, {}, {ids, step}, {TensorDesc{{2, 3}, DType::i64}}, Tolerance{0, 0});
  check_twin("clip_int", ints({{"min", 0}, {"max", 4}}), {ids}, {TensorDesc{{2, 3}, DType::i64}}, Tolerance{0, 0});
  // remainders: mod (the divisor's sign) and fmod (the dividend's) of int64, zero and -1 divisors; fmod of floats
  const HostTensor dividend = i64_tensor({8}, {7, -7, 7, -7, 5, INT64_MIN, 0, 9}), divisor = i64_tensor({8}, {3, 3, -3, -3, 0, -1, 4, 1});
  for (const char* op : {"mod", "fmod"}) check_twin(op, {}, {dividend, divisor}, {TensorDesc{{8}, DType::i64}}, Tolerance{0, 0});
  check_twin("mod", {}, {ids, i64_tensor({}, {5})}, {TensorDesc{{2, 3}, DType::i64}}, Tolerance{0, 0});
  check_twin("fmod", {}, {random_f32({64, 10}, 10, -8.0f, 8.0f), random_f32({10}, 11, 0.5f, 3.0f)}, f32({{64, 10}}), Tolerance{0, 0});
  // float to int64: truncated toward zero; NaN, infinities and out-of-range values INT64_MIN
  check_twin("cast", {}, {f32_tensor({8}, {2.9f, -2.9f, -0.5f, NAN, INFINITY, -INFINITY, 1e19f, -9.2233720e18f})},
             {TensorDesc{{8}, DType::i64}}, Tolerance{0, 0});
}

TEST_CASE("cuda twin: argmax along each axis, ties first or last, a NaN", "[cuda]") {
  for (int64_t axis : {0, 1, 2})
    for (int64_t last : {0, 1}) {
      Attrs a = ints({{"keepdims", 0}, {"select_last_index", last}});
      a.set_ints("axes", {axis});
      Shape y = {3, 40, 7};
      y.erase(y.begin() + axis);
      HostTensor x = random_f32({3, 40, 7}, 50);
      for (size_t i = 0; i < 20; ++i) reinterpret_cast<float*>(x.bytes.data())[i * 37 % 840] = 0.5f;  // ties
      reinterpret_cast<float*>(x.bytes.data())[100] = NAN;
      check_twin("argmax", a, {x}, {TensorDesc{y, DType::i64}}, Tolerance{0, 0});
    }
}

TEST_CASE("cuda twin: random draws the CPU's uniform and normal numbers for the same key", "[cuda]") {
  for (int64_t normal : {0, 1}) {
    INFO("normal " << normal);
    Attrs a = ints({{"normal", normal}, {"stream", 12345}});
    a.set_float("a", normal ? 0.5f : -1.0f);
    a.set_float("b", normal ? 2.0f : 3.0f);
    check_twin("random", a, {}, {TensorDesc{{1000, 33}, DType::f32}}, Tolerance{1e-5, 1e-5});
  }
}

TEST_CASE("cuda twin: topk and topk_grad along each axis, largest and smallest, ties and a NaN", "[cuda]") {
  for (int64_t axis : {0, 1, 2})
    for (int64_t largest : {0, 1}) {
      INFO("axis " << axis << " largest " << largest);
      Attrs a = ints({{"axis", axis}, {"k", 3}, {"largest", largest}});
      Shape y = {4, 40, 7};
      y[size_t(axis)] = 3;
      HostTensor x = random_f32({4, 40, 7}, 51);
      for (size_t i = 0; i < 20; ++i) reinterpret_cast<float*>(x.bytes.data())[i * 37 % 1120] = 0.5f;  // ties
      reinterpret_cast<float*>(x.bytes.data())[100] = NAN;
      const std::vector<HostTensor> top = check_twin("topk", a, {x}, {TensorDesc{y, DType::f32}, TensorDesc{y, DType::i64}}, Tolerance{0, 0});
      check_twin("topk_grad", a, {random_f32(y, 52), top[1]}, {TensorDesc{{4, 40, 7}, DType::f32}}, Tolerance{0, 0});
    }
}

TEST_CASE("cuda twin: max_pool and max_pool_grad, overlapping and padded windows, ties and NaN", "[cuda]") {
  struct Case {
    Shape x, y;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 3, 4, 4}, conv_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0)},
      {{2, 3, 9, 9}, {2, 3, 5, 5}, conv_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0)},  // overlapping, padded
      {{1, 2, 9, 8}, {1, 2, 5, 4}, conv_attrs({3, 2}, {1, 2}, {0, 0, 0, 0}, {2, 1}, 0)},  // dilation
      {{1, 2, 3, 3}, {1, 2, 3, 3}, conv_attrs({1, 1}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0)},  // corner windows all padding
      {{1, 2, 5, 5}, {1, 2, 3, 3}, conv_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0)},  // ceil mode
      {{0, 2, 4, 4}, {0, 2, 2, 2}, conv_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0)},  // empty batch
      {{2, 3, 9}, {2, 3, 5}, conv_attrs({1, 3}, {1, 2}, {0, 1, 0, 1}, {1, 1}, 0)}};     // 1-D (MaxPool1d)
  const Tolerance exact{0, 0};  // a max moves values: no rounding, nothing to tolerate
  for (const Case& c : cases) {
    INFO(shape_str(c.x));
    check_twin("max_pool", c.attrs, {random_f32(c.x, 49)}, f32({c.y}), exact);
    check_twin("max_pool_grad", c.attrs, {random_f32(c.y, 50), random_f32(c.x, 49)}, f32({c.x}), exact);
    // Ties (small integers) go to the first maximum; a NaN takes the window.
    std::vector<float> ties(size_t(numel(c.x)));
    for (size_t i = 0; i < ties.size(); ++i) ties[i] = float((i * 7) % 3);
    if (ties.size() > 5) ties[5] = NAN;
    const HostTensor tx = f32_tensor(c.x, ties);
    check_twin("max_pool", c.attrs, {tx}, f32({c.y}), exact);
    check_twin("max_pool_grad", c.attrs, {random_f32(c.y, 51), tx}, f32({c.x}), exact);
  }
}

TEST_CASE("cuda twin: reduce_sum and reduce_l2 over leading, trailing, inner and all axes", "[cuda]") {
  struct Case {
    Shape x;
    std::vector<int64_t> axes;
    int64_t keepdims;
    Shape y;
  };
  const std::vector<Case> cases = {{{512, 300}, {0}, 0, {300}},      {{300, 512}, {1}, 1, {300, 1}},
                                   {{4, 5, 6, 7}, {1, 3}, 0, {4, 6}}, {{4, 5, 6}, {0, 1, 2}, 0, {}},
                                   {{3, 1, 4}, {1}, 0, {3, 4}},       {{0, 4}, {0}, 0, {4}}};
  for (const Case& c : cases) {
    INFO(shape_str(c.x));
    Attrs attrs = ints({{"keepdims", c.keepdims}});
    attrs.set_ints("axes", c.axes);
    check_twin("reduce_sum", attrs, {random_f32(c.x, 11)}, f32({c.y}), {1e-4, 1e-4});
    check_twin("reduce_l2", attrs, {random_f32(c.x, 11)}, f32({c.y}), {1e-4, 1e-4});
  }
  Attrs mean = ints({{"keepdims", 0}});
  mean.set_ints("axes", {1});
  mean.set_float("divisor", 6.0f);
  check_twin("reduce_sum", mean, {random_f32({5, 6}, 12)}, f32({{5}}));
}

TEST_CASE("cuda twin: softmax cross-entropy and its gradient, labels out of range, class weights and sums included", "[cuda]") {
  for (int64_t c : {10, 1000, 5000}) {
    INFO("classes " << c);
    const int64_t n = 64;
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = (i * 7919) % c;
    labels[3] = -1;
    labels[5] = c;  // both contribute 0, as on the CPU
    const HostTensor x = random_f32({n, c}, 13, -6, 6);
    const auto fwd = check_twin("softmax_cross_entropy", {}, {x, i64_tensor({n}, labels)}, f32({{}, {n, c}}));
    Attrs scaled;
    scaled.set_float("scale", 0.5f);
    check_twin("softmax_cross_entropy", scaled, {x, i64_tensor({n}, labels)}, f32({{}, {n, c}}));
    Attrs smooth;
    smooth.set_float("label_smoothing", 0.1f);
    check_twin("softmax_cross_entropy", smooth, {x, i64_tensor({n}, labels)}, f32({{}, {n, c}}));
    check_twin("softmax_cross_entropy_grad", smooth, {f32_tensor({}, {0.5f}), fwd[1], i64_tensor({n}, labels)}, f32({{n, c}}));
    Attrs ignore;
    ignore.set_int("ignore_index", labels[0]);  // every row of that label counts nowhere
    check_twin("softmax_cross_entropy", ignore, {x, i64_tensor({n}, labels)}, f32({{}, {n, c}}));
    check_twin("softmax_cross_entropy_grad", ignore, {f32_tensor({}, {0.5f}), fwd[1], i64_tensor({n}, labels)}, f32({{n, c}}));
    check_twin("softmax_cross_entropy_grad", {}, {f32_tensor({}, {1.0f}), fwd[1], i64_tensor({n}, labels)},
               f32({{n, c}}));
    // Class weights (torch's weight=), a sum (reduction='sum'), both, and a split batch's scale.
    const HostTensor w = random_f32({c}, 21, 0.1f, 2.0f);
    Attrs sum;
    sum.set_int("sum", 1);
    for (const Attrs& a : {Attrs{}, sum, scaled}) {
      check_twin("softmax_cross_entropy", a, {x, i64_tensor({n}, labels), w}, f32({{}, {n, c}}));
      check_twin("softmax_cross_entropy_grad", a, {f32_tensor({}, {0.5f}), fwd[1], i64_tensor({n}, labels), w}, f32({{n, c}}));
    }
    check_twin("softmax_cross_entropy", sum, {x, i64_tensor({n}, labels)}, f32({{}, {n, c}}));
    check_twin("softmax_cross_entropy_grad", sum, {f32_tensor({}, {0.5f}), fwd[1], i64_tensor({n}, labels)}, f32({{n, c}}));
    // In place, as plans may run them: prob over the logits, dlogits over prob.
    check_twin("softmax_cross_entropy", {}, {x, i64_tensor({n}, labels)}, f32({{}, {n, c}}), {}, 1, {{1, 0}});
    check_twin("softmax_cross_entropy_grad", {}, {f32_tensor({}, {0.5f}), fwd[1], i64_tensor({n}, labels)},
               f32({{n, c}}), {}, 1, {{0, 1}});
  }
}

TEST_CASE("cuda twin: sgd_update (momentum, nesterov, weight decay, first step) and adam_update", "[cuda]") {
  const Shape p{257, 33};
  for (float step : {1.0f, 2.0f, 7.0f}) {
    INFO("step " << step);
    const HostTensor lr = f32_tensor({}, {0.05f}), st = f32_tensor({}, {step});
    check_twin("sgd_update", {}, {random_f32(p, 14), random_f32(p, 15), lr, st}, f32({p}));
    Attrs mom;
    mom.set_float("momentum", 0.9f);
    mom.set_float("weight_decay", 0.01f);
    check_twin("sgd_update", mom, {random_f32(p, 14), random_f32(p, 15), random_f32(p, 16), lr, st}, f32({p, p}));
    mom.set_int("nesterov", 1);
    check_twin("sgd_update", mom, {random_f32(p, 14), random_f32(p, 15), random_f32(p, 16), lr, st}, f32({p, p}));
    for (int decoupled : {0, 1}) {
      Attrs adam = ints({{"decoupled", decoupled}});
      adam.set_float("weight_decay", 0.1f);
      check_twin("adam_update", adam,
                 {random_f32(p, 17), random_f32(p, 18), random_f32(p, 19), random_f32(p, 20, 0.0f, 1.0f), lr, st},
                 f32({p, p, p}));
      // In place, as plans run updates: param, m and v over their inputs.
      check_twin("adam_update", adam,
                 {random_f32(p, 17), random_f32(p, 18), random_f32(p, 19), random_f32(p, 20, 0.0f, 1.0f), lr, st},
                 f32({p, p, p}), {}, 1, {{0, 0}, {1, 2}, {2, 3}});
      Attrs ams = adam;  // amsgrad: vmax, the largest v so far, beside m and v
      ams.set_int("amsgrad", 1);
      check_twin("adam_update", ams,
                 {random_f32(p, 17), random_f32(p, 18), random_f32(p, 19), random_f32(p, 20, 0.0f, 1.0f), random_f32(p, 23, 0.0f, 1.0f), lr,
                  st},
                 f32({p, p, p, p}), {}, 1, {{0, 0}, {1, 2}, {2, 3}, {3, 4}});
      // ZeRO 1/2: (m', v', param'), the states in place, param' into a buffer of its own.
      adam.set_int("param_last", 1);
      check_twin("adam_update", adam,
                 {random_f32(p, 17), random_f32(p, 18), random_f32(p, 19), random_f32(p, 20, 0.0f, 1.0f), lr, st},
                 f32({p, p, p}), {}, 1, {{0, 2}, {1, 3}});
    }
    check_twin("sgd_update", mom, {random_f32(p, 14), random_f32(p, 15), random_f32(p, 16), lr, st}, f32({p, p}), {}, 1,
               {{0, 0}, {1, 2}});
    mom.set_int("param_last", 1);
    check_twin("sgd_update", mom, {random_f32(p, 14), random_f32(p, 15), random_f32(p, 16), lr, st}, f32({p, p}), {}, 1,
               {{0, 2}});
  }
}

TEST_CASE("cuda twin: rmsprop_update (momentum, centered, weight decay) and adagrad_update (lr decay), in place too", "[cuda]") {
  const Shape p{257, 33};
  for (float step : {1.0f, 3.0f}) {
    INFO("step " << step);
    const HostTensor lr = f32_tensor({}, {0.01f}), st = f32_tensor({}, {step});
    const HostTensor sq = random_f32(p, 21, 0.1f, 1.0f);
    check_twin("rmsprop_update", {}, {random_f32(p, 14), random_f32(p, 15), sq, lr, st}, f32({p, p}));
    Attrs all;
    all.set_float("momentum", 0.9f);
    all.set_float("weight_decay", 1e-5f);
    all.set_float("alpha", 0.9f);
    all.set_float("eps", 0.0316f);
    check_twin("rmsprop_update", all, {random_f32(p, 14), random_f32(p, 15), sq, random_f32(p, 16), lr, st}, f32({p, p, p}));
    all.set_int("centered", 1);  // grad_avg small beside square_avg: sq - ga^2 stays positive
    check_twin("rmsprop_update", all,
               {random_f32(p, 14), random_f32(p, 15), sq, random_f32(p, 16), random_f32(p, 22, -0.1f, 0.1f), lr, st},
               f32({p, p, p, p}), {}, 1, {{0, 0}, {1, 2}, {2, 3}, {3, 4}});
    Attrs ada;
    ada.set_float("lr_decay", 0.1f);
    ada.set_float("weight_decay", 0.01f);
    check_twin("adagrad_update", ada, {random_f32(p, 17), random_f32(p, 18), random_f32(p, 19, 0.0f, 1.0f), lr, st}, f32({p, p}));
    check_twin("adagrad_update", ada, {random_f32(p, 17), random_f32(p, 18), random_f32(p, 19, 0.0f, 1.0f), lr, st}, f32({p, p}), {}, 1,
               {{0, 0}, {1, 2}});
  }
}

// Act a reads the gradient times a + 1 (twin.h), so a kernel that kept only the last act, or
// scaled by anything but 1/k, would differ from the CPU.
TEST_CASE("cuda twin: accumulate sums k micro-batches and passes the step's scalars on", "[cuda]") {
  const Shape g{100, 7};
  for (int k : {1, 3}) {
    INFO("micro_batches " << k);
    check_twin("accumulate", ints({{"micro_batches", k}}),
               {random_f32(g, 21), f32_tensor({}, {0.1f}), f32_tensor({}, {4.0f})}, f32({g, {}, {}}), {}, k);
  }
}

TEST_CASE("cuda twin: copy moves the bytes of f32 and i64 tensors, assign overwrites its state in place", "[cuda]") {
  check_twin("copy", {}, {random_f32({31, 17}, 22)}, f32({{31 * 17}}));
  check_twin("copy", {}, {i64_tensor({3}, {1, -2, 1LL << 40})}, {{{3}, DType::i64}});
  check_twin("assign", {}, {random_f32({9, 11}, 23), random_f32({9, 11}, 24)}, f32({{9, 11}}), {}, 1, {{0, 0}});
}

TEST_CASE("cuda twin: slice along the first, a middle and the last axis, f32 and i64", "[cuda]") {
  for (int64_t axis : {0, 1, 2}) {
    INFO("axis " << axis);
    Shape part = {4, 5, 6};
    part[size_t(axis)] = 2;
    Attrs attrs = ints({{"axis", axis}, {"start", 1}});
    check_twin("slice", attrs, {random_f32({4, 5, 6}, 60 + unsigned(axis))}, f32({part}));
  }
  std::vector<int64_t> v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = int64_t(i) << 35;
  check_twin("slice", ints({{"axis", 1}, {"start", 2}}), {i64_tensor({3, 4}, v)}, {{{3, 2}, DType::i64}});
}

TEST_CASE("cuda twin: collective_part copies and sums boxes in summand order", "[cuda]") {
  // An all-reduce part of device 1 of 2 over a [4, 6] tensor split by rows: its rows 2..3 of both
  // inputs summed, then an all-gather part: both halves copied in.
  Attrs reduce;
  reduce.set_ints("pieces", {0, 0, 2, 0, 0, 0, 2, 6, 1, 1, 2, 0, 0, 0, 2, 6});
  check_twin("collective_part", reduce, {random_f32({4, 6}, 70), random_f32({4, 6}, 71)}, f32({{2, 6}}));
  Attrs gather;
  gather.set_ints("pieces", {0, 0, 0, 0, 0, 0, 2, 6, 0, 1, 0, 0, 2, 0, 2, 6});
  check_twin("collective_part", gather, {random_f32({2, 6}, 72), random_f32({2, 6}, 73)}, f32({{4, 6}}));
  // Boxes cut across the inner axis (an all-to-all's), i64.
  std::vector<int64_t> a(12), b(12);
  for (size_t i = 0; i < a.size(); ++i) a[i] = int64_t(i) << 33, b[i] = -int64_t(i);
  Attrs swap;
  swap.set_ints("pieces", {0, 0, 0, 0, 0, 0, 3, 2, 0, 1, 0, 2, 0, 2, 3, 2});
  check_twin("collective_part", swap, {i64_tensor({3, 4}, a), i64_tensor({3, 4}, b)}, {{{3, 4}, DType::i64}});
}

TEST_CASE("cuda twin: classify_metrics, labels out of range and a NaN row included", "[cuda]") {
  const int64_t n = 40, c = 13;
  std::vector<int64_t> labels(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) labels[size_t(i)] = (i * 7) % c;
  labels[3] = -1;
  labels[5] = c;
  HostTensor x = random_f32({n, c}, 80, -4, 4);
  reinterpret_cast<float*>(x.bytes.data())[2 * c + 4] = std::numeric_limits<float>::quiet_NaN();
  check_twin("classify_metrics", {}, {x, i64_tensor({n}, labels)}, f32({{n}, {n}, {n}}));
  labels[7] = -100;  // torch's ignore_index
  check_twin("classify_metrics", {}, {x, i64_tensor({n}, labels)}, f32({{n}, {n}, {n}}));
  Attrs ignore;
  ignore.set_int("ignore_index", labels[9]);
  check_twin("classify_metrics", ignore, {x, i64_tensor({n}, labels)}, f32({{n}, {n}, {n}}));
}

TEST_CASE("cuda twin: the pointwise math erf, sqrt, reciprocal, exp, neg, pow, clip, leaky_relu, hard_sigmoid, hard_swish and their gradients", "[cuda]") {
  const Shape shape = {7, 129};
  const HostTensor x = random_f32(shape, 90, -4, 4), dy = random_f32(shape, 91);
  const HostTensor positive = random_f32(shape, 92, 0.05f, 4);  // sqrt, reciprocal, fractional powers
  Attrs none;
  // log, abs, sin, cos, softplus (both sides of its threshold), elu and their gradients.
  const HostTensor wide = random_f32(shape, 93, -30, 30);
  for (const char* k : {"abs", "sin", "cos", "elu"}) {
    INFO(k);
    check_twin(k, none, {x}, f32({shape}));
    check_twin(std::string(k) + "_grad", none, {dy, x}, f32({shape}));
  }
  check_twin("softplus", none, {wide}, f32({shape}));
  check_twin("softplus_grad", none, {dy, wide}, f32({shape}));
  // sign, floor, ceil, round (no gradients of their own: zeros, by pow_grad); ties and zeros included.
  std::vector<float> values(size_t(numel(shape)));
  std::mt19937 rng(94);
  std::uniform_real_distribution<float> u(-8, 8);
  for (size_t i = 0; i < values.size(); ++i) values[i] = i % 3 == 0 ? std::round(u(rng) * 2) / 2 : u(rng);  // halves: the even rule
  const HostTensor ties = f32_tensor(shape, values);
  for (const char* k : {"sign", "floor", "ceil", "round"}) {
    INFO(k);
    check_twin(k, none, {ties}, f32({shape}), {0, 0});
  }
  check_twin("log", none, {positive}, f32({shape}));
  check_twin("log_grad", none, {dy, positive}, f32({shape}));
  for (const char* k : {"erf", "exp", "neg", "hard_swish"}) {
    INFO(k);
    check_twin(k, none, {x}, f32({shape}));
  }
  for (const char* k : {"sqrt", "reciprocal"}) {
    INFO(k);
    check_twin(k, none, {positive}, f32({shape}));
  }
  check_twin("erf_grad", none, {dy, x}, f32({shape}));
  check_twin("hard_swish_grad", none, {dy, x}, f32({shape}));
  for (float p : {2.0f, 1.0f, 0.5f, 3.0f, 0.0f, 1.7f, -1.5f}) {
    INFO("exponent " << p);
    Attrs e;
    e.set_floats("exponent", {p});
    if (p != 0.0f) check_twin("pow", e, {positive}, f32({shape}));
    check_twin("pow_grad", e, {dy, positive}, f32({shape}));
  }
  Attrs clip;
  clip.set_float("min", -1.0f);
  clip.set_float("max", 2.0f);
  check_twin("clip", clip, {x}, f32({shape}));
  check_twin("clip_grad", clip, {dy, x}, f32({shape}));
  Attrs leaky;
  leaky.set_float("alpha", 0.1f);
  check_twin("leaky_relu", leaky, {x}, f32({shape}));
  check_twin("leaky_relu_grad", leaky, {dy, x}, f32({shape}));
  Attrs hard;  // torch.nn.Hardsigmoid's export, then another form
  hard.set_float("alpha", 1.0f / 6.0f);
  hard.set_float("beta", 0.5f);
  check_twin("hard_sigmoid", hard, {x}, f32({shape}));
  check_twin("hard_sigmoid_grad", hard, {dy, x}, f32({shape}));
  hard.set_float("alpha", 0.2f);
  check_twin("hard_sigmoid", hard, {x}, f32({shape}));
  check_twin("hard_sigmoid_grad", hard, {dy, x}, f32({shape}));
  // A NaN stays NaN through clip on both devices (torch.clamp), in place.
  HostTensor nan = x;
  reinterpret_cast<float*>(nan.bytes.data())[5] = std::numeric_limits<float>::quiet_NaN();
  check_twin("clip", clip, {nan}, f32({shape}), {}, 1, {{0, 0}});
}

TEST_CASE("cuda twin: the batch norm family: statistics, apply with and without ReLU, train, its gradient, the running update, inference", "[cuda]") {
  for (const Shape& x_shape : std::vector<Shape>{{8, 6, 5, 7}, {16, 10}, {2, 3, 300}}) {
    INFO(shape_str(x_shape));
    const int64_t c = x_shape[1];
    const HostTensor x = random_f32(x_shape, 100, -3, 5), dy = random_f32(x_shape, 101);
    const HostTensor scale = random_f32({c}, 102, 0.5f, 1.5f), bias = random_f32({c}, 103);
    Attrs eps;
    eps.set_float("epsilon", 1e-5f);
    const auto stats = check_twin("batch_norm_stats", eps, {x}, f32({{c}, {c}, {c}}));
    check_twin("batch_norm_train", eps, {x, scale, bias}, f32({x_shape, {c}, {c}, {c}}), {3e-5, 3e-4});
    check_twin("batch_norm_apply", {}, {x, scale, bias, stats[0], stats[1]}, f32({x_shape}));
    Attrs relu;
    relu.set_str("activation", "relu");
    check_twin("batch_norm_apply", relu, {x, scale, bias, stats[0], stats[1]}, f32({x_shape}));
    check_twin("batch_norm_train_grad", {}, {dy, x, scale, stats[0], stats[1]}, f32({x_shape, {c}, {c}}), {1e-4, 1e-3});
    const HostTensor var = random_f32({c}, 104, 0.5f, 2);
    check_twin("batch_norm", eps, {x, scale, bias, stats[0], var}, f32({x_shape}));
    Attrs momentum;
    momentum.set_float("momentum", 0.1f);
    check_twin("batch_norm_stats_update", momentum, {stats[0], stats[2], random_f32({c}, 105), var, i64_tensor({}, {41})},
               {{{c}, DType::f32}, {{c}, DType::f32}, {{}, DType::i64}});
    Attrs cumulative;  // momentum=None: the factor 1/42 comes from the count on the device
    cumulative.set_int("cumulative", 1);
    check_twin("batch_norm_stats_update", cumulative, {stats[0], stats[2], random_f32({c}, 105), var, i64_tensor({}, {41})},
               {{{c}, DType::f32}, {{c}, DType::f32}, {{}, DType::i64}});
    // A module called twice a step (a Siamese encoder): both calls' statistics, blended in turn.
    for (const Attrs& a : {momentum, cumulative})
      check_twin("batch_norm_stats_update", a,
                 {stats[0], stats[2], random_f32({c}, 106), random_f32({c}, 107, 0.5f, 2), random_f32({c}, 105), var,
                  i64_tensor({}, {41})},
                 {{{c}, DType::f32}, {{c}, DType::f32}, {{}, DType::i64}});
  }
}

TEST_CASE("cuda twin: global_average_pool and its gradient, 2-D and 1-D planes", "[cuda]") {
  for (const Shape& x_shape : std::vector<Shape>{{4, 8, 7, 7}, {3, 5, 1000}, {2, 3, 1, 1}}) {
    INFO(shape_str(x_shape));
    Shape y_shape(x_shape.size(), 1);
    y_shape[0] = x_shape[0];
    y_shape[1] = x_shape[1];
    check_twin("global_average_pool", {}, {random_f32(x_shape, 110)}, f32({y_shape}));
    check_twin("global_average_pool_grad", {}, {random_f32(y_shape, 111)}, f32({x_shape}));
  }
}

TEST_CASE("cuda twin: dropout and its gradient draw the CPU's mask from the same Philox counters, bit for bit", "[cuda]") {
  for (int64_t offset : {0, 3, 1001}) {
    INFO("offset " << offset);
    Attrs a;
    a.set_float("ratio", 0.3f);
    a.set_int("offset", offset);
    a.set_int("stream", 7);
    const Shape shape = {5, 333};
    check_twin("dropout", a, {random_f32(shape, 120)}, f32({shape}), {0, 0}, 3);
    check_twin("dropout_grad", a, {random_f32(shape, 121)}, f32({shape}), {0, 0}, 3);
  }
}

TEST_CASE("cuda twin: expand broadcasts f32 and i64 tensors, mse_loss and its gradient", "[cuda]") {
  check_twin("expand", {}, {random_f32({3, 1, 5}, 130)}, f32({{2, 3, 4, 5}}));
  check_twin("expand", {}, {random_f32({1}, 131)}, f32({{6, 7}}));
  check_twin("expand", {}, {random_f32({4, 1}, 132)}, f32({{4, 9}}));
  check_twin("expand", {}, {i64_tensor({2, 1}, {1LL << 40, -3})}, {{{2, 3}, DType::i64}});
  const Shape shape = {33, 17};
  const HostTensor p = random_f32(shape, 133), t = random_f32(shape, 134);
  check_twin("mse_loss", {}, {p, t}, f32({{}}));
  check_twin("mse_loss_grad", {}, {f32_tensor({}, {0.5f}), p, t}, f32({shape}));
}

TEST_CASE("cuda twin: average_pool and its gradient, padded windows with and without the padding counted, ceil mode, bit for bit", "[cuda]") {
  struct Case {
    Shape x, y;
    Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{2, 3, 8, 8}, {2, 3, 4, 4}, conv_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0)},
      {{2, 3, 9, 9}, {2, 3, 5, 5}, conv_attrs({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0)},  // overlapping, padded
      {{1, 2, 7, 6}, {1, 2, 4, 3}, conv_attrs({3, 2}, {2, 2}, {1, 0, 1, 0}, {1, 1}, 0)},
      {{1, 2, 5, 5}, {1, 2, 3, 3}, conv_attrs({2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0)}};  // ceil mode
  const Tolerance exact{0, 0};  // the same sums in the same order
  for (const Case& c : cases)
    for (int64_t include_pad : {0, 1}) {
      INFO(shape_str(c.x) << " count_include_pad " << include_pad);
      Attrs a = c.attrs;
      a.set_int("count_include_pad", include_pad);
      check_twin("average_pool", a, {random_f32(c.x, 140)}, f32({c.y}), exact);
      check_twin("average_pool_grad", a, {random_f32(c.y, 141)}, f32({c.x}), exact);
    }
}


TEST_CASE("cuda twin: lstm and gru forward (inference and training outputs) and backward, one and two directions, reverse, optional inputs", "[cuda]") {
  // Recurrences amplify rounding step by step (and cuBLAS sums in another order than OpenBLAS):
  // a looser tolerance than one product's.
  const Tolerance tol{1e-4, 1e-3};
  struct Layer {
    int64_t seq, batch, input, hidden, dirs;
    bool reverse, bias, h0;
  };
  for (const Layer& l : std::vector<Layer>{{5, 3, 4, 6, 1, false, true, true}, {7, 2, 5, 3, 2, false, true, false},
                                           {4, 3, 2, 5, 1, true, false, true}, {1, 1, 3, 2, 1, false, false, false}}) {
    INFO("seq " << l.seq << " batch " << l.batch << " input " << l.input << " hidden " << l.hidden << " dirs " << l.dirs
                << (l.reverse ? " reverse" : "") << (l.bias ? " bias" : "") << (l.h0 ? " h0" : ""));
    const Shape x{l.seq, l.batch, l.input}, state{l.dirs, l.batch, l.hidden}, y{l.seq, l.dirs, l.batch, l.hidden};
    for (const int64_t gates : {int64_t(4), int64_t(3)}) {
      const bool lstm = gates == 4;
      const std::string name = lstm ? "lstm" : "gru";
      INFO(name);
      const int64_t gh = gates * l.hidden;
      const Shape saved{l.dirs, l.seq, l.batch, gh}, per_step{l.dirs, l.seq, l.batch, l.hidden};
      Attrs fwd = ints({{"has_bias", l.bias}, {"has_h0", l.h0}, {"reverse", l.reverse}});
      if (lstm) fwd.set_int("has_c0", l.h0);
      std::vector<HostTensor> in = {random_f32(x, 60), random_f32({l.dirs, gh, l.input}, 61, -0.5f, 0.5f),
                                    random_f32({l.dirs, gh, l.hidden}, 62, -0.5f, 0.5f)};
      if (l.bias) in.push_back(random_f32({l.dirs, 2 * gh}, 63, -0.5f, 0.5f));
      if (l.h0) in.push_back(random_f32(state, 64));
      if (l.h0 && lstm) in.push_back(random_f32(state, 65));
      std::vector<TensorDesc> out = f32({y, state});
      if (lstm) out.push_back({state, DType::f32});
      check_twin(name, fwd, in, out, tol);
      for (const Shape& s : {saved, per_step}) out.push_back({s, DType::f32});
      // The training outputs, then the backward from them (the same forward outputs feed both twins).
      const std::vector<HostTensor> trained = check_twin(name, fwd, in, out, tol);
      Attrs bwd = ints({{"has_dy", 1}, {"has_dyh", 1}, {"has_h0", l.h0}, {"reverse", l.reverse}});
      if (lstm) bwd.set_int("has_dyc", l.h0), bwd.set_int("has_c0", l.h0);
      std::vector<HostTensor> grad_in = {in[0], in[1], in[2], trained[0], trained[lstm ? 3 : 2], trained[lstm ? 4 : 3],
                                         random_f32(y, 66), random_f32(state, 67)};
      if (lstm && l.h0) grad_in.push_back(random_f32(state, 68));
      if (l.h0) grad_in.push_back(in[3 + int(l.bias)]);
      if (l.h0 && lstm) grad_in.push_back(in[4 + int(l.bias)]);
      std::vector<TensorDesc> grad_out = f32({x, {l.dirs, gh, l.input}, {l.dirs, gh, l.hidden}, {l.dirs, 2 * gh}, state});
      if (lstm) grad_out.push_back({state, DType::f32});
      check_twin(name + "_grad", bwd, grad_in, grad_out, tol);
    }
  }
}

TEST_CASE("cuda twin: gather_elements and scatter_elements in every mode, repeated, negative and outside indices", "[cuda]") {
  // data [3, 4, 2], indices [3, 5, 2] along axis 1 in [-5, 4]: repeats, negatives, 4 outside.
  std::vector<int64_t> idx(30);
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = int64_t((k * 7) % 10) - 5;
  const HostTensor data = random_f32({3, 4, 2}, 80), indices = i64_tensor({3, 5, 2}, idx), updates = random_f32({3, 5, 2}, 81);
  const TensorDesc data_d{{3, 4, 2}, DType::f32};
  check_twin("gather_elements", ints({{"axis", 1}}), {data, indices}, f32({{3, 5, 2}}), Tolerance{0, 0});
  // One thread per line in the line's order: the same last writes and the same sums as the CPU.
  check_twin("scatter_elements", ints({{"axis", 1}, {"mode", 0}}), {data, indices, updates}, {data_d}, Tolerance{0, 0});
  check_twin("scatter_elements", ints({{"axis", 1}, {"mode", 1}}), {data, indices, updates}, {data_d}, Tolerance{0, 0});
  check_twin("scatter_elements", ints({{"axis", 1}, {"mode", 2}}), {indices, updates}, {data_d}, Tolerance{0, 0});
  check_twin("scatter_elements", ints({{"axis", 1}, {"mode", 3}}), {data, indices}, {data_d}, Tolerance{0, 0});
}

TEST_CASE("cuda twin: rnn tanh and relu forward and backward, one and two directions, reverse, optional inputs", "[cuda]") {
  const Tolerance tol{1e-4, 1e-3};  // as the lstm's: recurrences amplify rounding
  struct Layer {
    int64_t seq, batch, input, hidden, dirs;
    bool reverse, bias, h0;
  };
  for (const Layer& l : std::vector<Layer>{{5, 3, 4, 6, 1, false, true, true}, {7, 2, 5, 3, 2, false, true, false},
                                           {4, 3, 2, 5, 1, true, false, true}}) {
    for (const int relu : {0, 1}) {
      INFO("seq " << l.seq << " dirs " << l.dirs << (l.reverse ? " reverse" : "") << (l.bias ? " bias" : "") << (l.h0 ? " h0" : "")
                  << (relu ? " relu" : " tanh"));
      const Shape x{l.seq, l.batch, l.input}, state{l.dirs, l.batch, l.hidden}, y{l.seq, l.dirs, l.batch, l.hidden};
      const Attrs fwd = ints({{"has_bias", l.bias}, {"has_h0", l.h0}, {"reverse", l.reverse}, {"relu", relu}});
      std::vector<HostTensor> in = {random_f32(x, 70), random_f32({l.dirs, l.hidden, l.input}, 71, -0.5f, 0.5f),
                                    random_f32({l.dirs, l.hidden, l.hidden}, 72, -0.5f, 0.5f)};
      if (l.bias) in.push_back(random_f32({l.dirs, 2 * l.hidden}, 73, -0.5f, 0.5f));
      if (l.h0) in.push_back(random_f32(state, 74));
      const std::vector<HostTensor> fwd_out = check_twin("rnn", fwd, in, f32({y, state}), tol);
      const Attrs bwd = ints({{"has_dy", 1}, {"has_dyh", 1}, {"has_h0", l.h0}, {"reverse", l.reverse}, {"relu", relu}});
      std::vector<HostTensor> grad_in = {in[0], in[1], in[2], fwd_out[0], random_f32(y, 75), random_f32(state, 76)};
      if (l.h0) grad_in.push_back(in[3 + int(l.bias)]);
      check_twin("rnn_grad", bwd, grad_in,
                 f32({x, {l.dirs, l.hidden, l.input}, {l.dirs, l.hidden, l.hidden}, {l.dirs, 2 * l.hidden}, state}), tol);
    }
  }
}

}  // namespace
}  // namespace of::kernels::testing
