// SPDX-License-Identifier: Apache-2.0
// conv (im2col + sgemm) against a direct 2-D convolution in double: padding, strides,
// dilations, groups, depthwise, bias, and the 1x1 path that skips im2col.
#include "kernel_test_util.h"
#include "kernels/cpu/factories.h"
#include "kernels/registry.h"

namespace of::kernels {
namespace {

struct ConvCase {
  Shape x, w;  // [N,C,H,W], [M,C/g,kH,kW]
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
  bool bias;
};

void check_conv(const ConvCase& c) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], w = c.x[3];
  const int64_t m = c.w[0], cg = c.w[1], kh = c.w[2], kw = c.w[3], mg = m / c.group;
  const int64_t oh = (h + c.pads[0] + c.pads[2] - c.dilations[0] * (kh - 1) - 1) / c.strides[0] + 1;
  const int64_t ow = (w + c.pads[1] + c.pads[3] - c.dilations[1] * (kw - 1) - 1) / c.strides[1] + 1;
  std::mt19937 rng(17);
  std::vector<Shape> shapes{c.x, c.w};
  std::vector<std::vector<float>> data{testing::random_floats(numel(c.x), rng),
                                       testing::random_floats(numel(c.w), rng)};
  if (c.bias) {
    shapes.push_back({m});
    data.push_back(testing::random_floats(m, rng));
  }
  const auto& xv = data[0];
  const auto& wv = data[1];
  std::vector<double> ref;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double s = c.bias ? data[2][oc] : 0.0;
          const int64_t g = oc / mg;
          for (int64_t ic = 0; ic < cg; ++ic)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = y * c.strides[0] - c.pads[0] + i * c.dilations[0];
                const int64_t ix = x * c.strides[1] - c.pads[1] + j * c.dilations[1];
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                s += double(xv[((b * ch + g * cg + ic) * h + iy) * w + ix]) *
                     wv[((oc * cg + ic) * kh + i) * kw + j];
              }
          ref.push_back(s);
        }
  Attrs attrs;
  attrs.set_ints("strides", c.strides);
  attrs.set_ints("pads", c.pads);
  attrs.set_ints("dilations", c.dilations);
  attrs.set_int("group", c.group);
  testing::check_close(testing::run_f32("conv", attrs, shapes, data, {n, m, oh, ow}), ref);
}

TEST_CASE("conv: 3x3 pad 1 stride 2 matches direct reference", "[kernels]") {
  check_conv({{2, 3, 9, 8}, {4, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, true});
  check_conv({{1, 3, 7, 7}, {5, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, false});
}

TEST_CASE("conv: 1x1 stride 1 (no im2col) matches direct reference", "[kernels]") {
  check_conv({{2, 8, 5, 6}, {16, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true});
  check_conv({{1, 8, 5, 6}, {6, 4, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2, false});
}

TEST_CASE("conv: groups, depthwise, dilations and asymmetric pads match direct reference",
          "[kernels]") {
  check_conv({{2, 4, 8, 8}, {6, 2, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2, true});
  check_conv({{1, 6, 10, 9}, {6, 1, 3, 3}, {1, 2}, {1, 0, 2, 1}, {1, 1}, 6, true});  // depthwise
  check_conv({{1, 2, 11, 12}, {3, 2, 3, 2}, {1, 1}, {2, 2, 2, 2}, {2, 3}, 1, false});
  check_conv({{1, 3, 6, 7}, {2, 3, 5, 5}, {3, 2}, {0, 3, 1, 0}, {1, 1}, 1, true});
  check_conv({{1, 1, 4, 4}, {1, 1, 3, 3}, {1, 1}, {4, 4, 4, 4}, {1, 1}, 1, true});  // pad > kernel
  check_conv({{1, 2, 3, 3}, {2, 2, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true});  // 1x1 output
}

TEST_CASE("conv: bad configs throw of::Error", "[kernels]") {
  Attrs none;
  testing::check_rejects("conv", none, {{1, 3, 5, 5}, {4, 3, 3, 3}}, {{1, 4, 4, 4}});  // out shape
  testing::check_rejects("conv", none, {{1, 3, 5, 5}, {4, 2, 3, 3}}, {{1, 4, 3, 3}});  // C/group
  testing::check_rejects("conv", none, {{1, 3, 5, 5}, {4, 3, 3, 3}, {3}}, {{1, 4, 3, 3}});  // bias
  testing::check_rejects("conv", none, {{1, 3, 5}, {4, 3, 3, 3}}, {{1, 4, 3}});             // 1-D X, 2-D W
  testing::check_rejects("conv", none, {{1, 3, 2, 2}, {4, 3, 3, 3}}, {{1, 4, 0, 0}});  // too small
  Attrs g2;
  g2.set_int("group", 2);
  testing::check_rejects("conv", g2, {{1, 3, 5, 5}, {4, 1, 3, 3}}, {{1, 4, 3, 3}});  // 3 % 2
  Attrs bad_pads;
  bad_pads.set_ints("pads", {1, 1});
  testing::check_rejects("conv", bad_pads, {{1, 3, 5, 5}, {4, 3, 3, 3}}, {{1, 4, 3, 3}});
}

}  // namespace
}  // namespace of::kernels

TEST_CASE("conv: a fused relu equals relu(conv)", "[kernels]") {
  using namespace of;
  using namespace of::kernels;
  std::mt19937 rng(5);
  const Shape xs{2, 4, 6, 6}, ws{6, 2, 3, 3}, ys{2, 6, 6, 6};
  auto x = testing::random_floats(numel(xs), rng), w = testing::random_floats(numel(ws), rng), b = testing::random_floats(6, rng);
  Attrs attrs;
  attrs.set_ints("strides", {1, 1});
  attrs.set_ints("pads", {1, 1, 1, 1});
  attrs.set_ints("dilations", {1, 1});
  attrs.set_int("group", 2);
  auto plain = testing::run_f32("conv", attrs, {xs, ws, {6}}, {x, w, b}, ys);
  attrs.set_str("activation", "relu");
  auto fused = testing::run_f32("conv", attrs, {xs, ws, {6}}, {x, w, b}, ys);
  std::vector<double> want;
  for (float v : plain) want.push_back(v > 0 ? v : 0);
  testing::check_close(fused, want);
  attrs.set_str("activation", "gelu");
  testing::check_rejects("conv", attrs, {xs, ws, {6}}, {ys});
}

TEST_CASE("conv: a constant weight with >= 16 channels (oneDNN primitive) matches im2col", "[kernels]") {
  using namespace of;
  using namespace of::kernels;
  struct Case {
    Shape x, w;
    std::vector<int64_t> strides, pads, dilations;
    bool bias, relu;
  };
  const Case cases[] = {
      {{2, 16, 9, 9}, {8, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true},
      {{1, 32, 10, 7}, {5, 32, 3, 2}, {2, 1}, {0, 1, 1, 0}, {1, 1}, false, false},
      {{2, 16, 11, 11}, {4, 16, 3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 2}, true, false},
  };
  for (const Case& c : cases) {
    std::mt19937 rng(11);
    auto out_dim = [&](int i) {
      return (c.x[2 + i] + c.pads[i] + c.pads[i + 2] - c.dilations[i] * (c.w[2 + i] - 1) - 1) / c.strides[i] + 1;
    };
    const Shape ys{c.x[0], c.w[0], out_dim(0), out_dim(1)};
    Attrs attrs;
    attrs.set_ints("strides", c.strides);
    attrs.set_ints("pads", c.pads);
    attrs.set_ints("dilations", c.dilations);
    attrs.set_int("group", 1);
    if (c.relu) attrs.set_str("activation", "relu");
    auto x = testing::random_floats(numel(c.x), rng), w = testing::random_floats(numel(c.w), rng),
         b = testing::random_floats(c.w[0], rng);
    std::vector<Shape> shapes{c.x, c.w};
    std::vector<std::vector<float>> data{x, w};
    if (c.bias) shapes.push_back({c.w[0]}), data.push_back(b);
    auto im2col = testing::run_f32("conv", attrs, shapes, data, ys);

    KernelConfig cfg{attrs, testing::f32_descs(shapes), testing::f32_descs({ys}), "test_node"};
    cfg.constants = {nullptr, w.data(), nullptr};
    REQUIRE(cpu::make_dnnl_conv(cfg) != nullptr);  // the oneDNN path is the one under test
    auto kernel = make_kernel("conv", DeviceKind::cpu, DType::f32, cfg);
    std::vector<float> y(size_t(numel(ys)));
    const void* ins[] = {x.data(), w.data(), b.data()};
    void* outs[] = {y.data()};
    kernel->run({}, ins, outs);
    kernel->run({}, ins, outs);  // twice: the preset arguments must stay valid
    testing::check_close(y, std::vector<double>(im2col.begin(), im2col.end()));
  }
}

namespace of::kernels {
namespace {

// conv (forward) and conv_grad_weight of `attrs` on two kernel threads, where each thread takes
// whole images, against one thread: the forward bit for bit (each output is one thread's
// product either way), the weight gradient to float rounding (its images are summed in runs).
void check_split_by_images(const Shape& x, const Shape& w, const Attrs& attrs, const Shape& y) {
  std::mt19937 rng(29);
  const std::vector<float> xv = testing::random_floats(numel(x), rng), wv = testing::random_floats(numel(w), rng),
                           dy = testing::random_floats(numel(y), rng);
  std::vector<float> one, two, grad_one, grad_two;
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    (threads == 1 ? one : two) = testing::run_f32("conv", attrs, {x, w}, {xv, wv}, y);
    (threads == 1 ? grad_one : grad_two) = testing::run_f32("conv_grad_weight", attrs, {y, x}, {dy, xv}, w);
  }
  set_kernel_threads(1);
  INFO("x " << shape_str(x) << " w " << shape_str(w));
  CHECK(one == two);
  REQUIRE(grad_one.size() == grad_two.size());
  for (size_t i = 0; i < grad_one.size(); ++i) CHECK(grad_two[i] == Approx(grad_one[i]).epsilon(1e-5).margin(1e-5));
}

}  // namespace

TEST_CASE("conv: on two kernel threads the images of a batch split between them, with one thread's results", "[kernels]") {
  Attrs pad1;
  pad1.set_ints("pads", {1, 1, 1, 1});
  check_split_by_images({9, 3, 10, 12}, {8, 3, 3, 3}, pad1, {9, 8, 10, 12});  // odd batch, im2col
  Attrs grouped = pad1;
  grouped.set_int("group", 2);
  check_split_by_images({8, 4, 7, 7}, {6, 2, 3, 3}, grouped, {8, 6, 7, 7});
  check_split_by_images({6, 5, 6, 6}, {4, 5, 1, 1}, Attrs{}, {6, 4, 6, 6});  // 1x1: no columns
  check_split_by_images({3, 3, 6, 6}, {4, 3, 3, 3}, pad1, {3, 4, 6, 6});     // too few images to split
}

}  // namespace of::kernels
