// SPDX-License-Identifier: Apache-2.0
// Tile (x.repeat) and DepthToSpace (nn.PixelShuffle, F.pixel_shuffle): composites that only move
// elements, written as Reshape, Expand and Transpose (their gradients sum the copies back or move
// them back). Tile: x [d0, d1, ...] as [1, d0, 1, d1, ...], expanded to [r0, d0, r1, d1, ...],
// then [r0 d0, r1 d1, ...]. DepthToSpace with blocksize b: [N, C b b, H, W] as [N, C, b, b, H, W]
// (mode CRD, torch's) or [N, b, b, C, H, W] (DCR), to [N, C, H, b, W, b], then [N, C, H b, W b].
#include <fmt/format.h>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

std::vector<int64_t> tile_repeats(OpCtx& c) {
  const std::vector<int64_t> r = c.const_ints(1);
  if (r.size() != c.in(0).shape.size()) c.fail("repeats has {} values, input 0 {} has rank {}", r.size(), shape_str(c.in(0).shape), c.in(0).shape.size());
  for (int64_t k : r)
    if (k < 0) c.fail("repeats [{}] has a negative count", fmt::join(r, ","));
  return r;
}

void infer_tile(OpCtx& c) {
  c.expect_arity(2, 2);
  c.expect_float(0);
  const std::vector<int64_t> r = tile_repeats(c);
  Shape out;
  int64_t n = 1;
  for (size_t i = 0; i < r.size(); ++i) {
    const int64_t d = c.in(0).shape[i];
    if (r[i] > 0 && d > (int64_t(1) << 40) / r[i]) c.fail("tiles input 0 {} to a tensor too large to hold", shape_str(c.in(0).shape));
    out.push_back(d * r[i]);
    n *= std::max<int64_t>(out.back(), 1);
    if (n > (int64_t(1) << 40)) c.fail("tiles input 0 {} to a tensor too large to hold", shape_str(c.in(0).shape));
  }
  c.out(0) = TensorDesc{out, DType::f32};
}


void expand_tile(ExpandCtx& c) {
  const Shape x = c.shape(c.input(0));
  const Shape out = c.shape(c.output(0));
  std::vector<int64_t> spaced, wide;
  for (size_t i = 0; i < x.size(); ++i) {
    spaced.insert(spaced.end(), {1, x[i]});
    wide.insert(wide.end(), {out[i] / std::max<int64_t>(x[i], 1), x[i]});
  }
  const ValueId s = c.emit("Reshape", {c.input(0), c.ints(spaced)});
  const ValueId e = c.emit("Expand", {s, c.ints(wide)});
  c.emit("Reshape", {e, c.ints(out)}, {}, c.output(0));
}

int64_t block_of(OpCtx& c) { return c.attrs().get_int("blocksize", 0); }

void infer_depth_to_space(OpCtx& c) {
  c.expect_arity(1, 1);
  c.expect_float(0);
  const Shape& x = c.in(0).shape;
  const int64_t b = block_of(c);
  const std::string mode = c.attrs().get_str("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") c.fail("mode '{}' is not DCR or CRD", mode);
  if (x.size() != 4) c.fail("input 0 {} is not [N, C, H, W]", shape_str(x));
  if (x[1] % (b * b) != 0) c.fail("input 0 {} has {} channels, not a multiple of blocksize^2 = {}", shape_str(x), x[1], b * b);
  c.out(0) = TensorDesc{{x[0], x[1] / (b * b), x[2] * b, x[3] * b}, DType::f32};
}

void expand_depth_to_space(ExpandCtx& c) {
  const Shape x = c.shape(c.input(0));
  const int64_t b = c.attrs().get_int("blocksize", 0), ch = x[1] / (b * b);
  const bool crd = c.attrs().get_str("mode", "DCR") == "CRD";
  const ValueId split = c.emit("Reshape", {c.input(0), c.ints(crd ? std::vector<int64_t>{x[0], ch, b, b, x[2], x[3]}
                                                                      : std::vector<int64_t>{x[0], b, b, ch, x[2], x[3]})});
  Attrs perm;
  perm.set_ints("perm", crd ? std::vector<int64_t>{0, 1, 4, 2, 5, 3} : std::vector<int64_t>{0, 3, 4, 1, 5, 2});
  const ValueId moved = c.emit("Transpose", {split}, perm);
  c.emit("Reshape", {moved, c.ints({x[0], ch, x[2] * b, x[3] * b})}, {}, c.output(0));
}

}  // namespace

OpDef tile_def() {
  OpDef d{"Tile", infer_tile, lower_composite};
  d.expand = expand_tile;
  return d;
}

OpDef depth_to_space_def() {
  OpDef d{"DepthToSpace", infer_depth_to_space, lower_composite, nullptr, {int_attr("blocksize", 1, kMaxDim)}};
  d.expand = expand_depth_to_space;
  return d;
}

}  // namespace of::compiler
