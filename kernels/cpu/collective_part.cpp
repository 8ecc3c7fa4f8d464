// SPDX-License-Identifier: Apache-2.0
// collective_part: one device's part of a collective (all-reduce, reduce-scatter, all-gather,
// all-to-all) between devices of one process, reading the other devices' registers directly.
// The output is made of summands, each tiled by boxes cut from the inputs; summand 0 is copied
// in, every later one added on, in order. That is the order the point-to-point boxing it
// replaces adds in (compiler/parallel/boxing.cpp), so both give the same bits.
//
// Attribute "pieces": per box, 2 + 3 * rank ints: summand, input, the box's start in that
// input, its start in the output, its extent. Boxes are listed by summand, from 0.
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

// A box as contiguous runs: `len` elements from each (src, dst) offset pair.
struct Box {
  int32_t input;
  bool add;  // a later summand: added onto what is there
  int64_t len;
  std::vector<std::pair<int64_t, int64_t>> runs;
};

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t a = s.size(); a-- > 1;) st[a - 1] = st[a] * s[a];
  return st;
}

class CollectivePart final : public Kernel {
 public:
  explicit CollectivePart(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  size_t elem_;
  std::vector<Box> boxes_;
};

CollectivePart::CollectivePart(const KernelConfig& cfg) {
  constexpr std::string_view kName = "collective_part";
  if (cfg.inputs.empty() || cfg.outputs.size() != 1)
    fail(where_of(cfg), "{}: expected >= 1 inputs and 1 output, got {} and {}", kName, cfg.inputs.size(), cfg.outputs.size());
  const TensorDesc& y = cfg.outputs[0];
  for (size_t k = 0; k < cfg.inputs.size(); ++k)
    if (cfg.inputs[k].dtype != y.dtype || cfg.inputs[k].shape.size() != y.shape.size())
      fail(where_of(cfg), "{}: input {} ({} {}) does not match the output's dtype and rank ({} {})", kName, k,
           dtype_name(cfg.inputs[k].dtype), shape_str(cfg.inputs[k].shape), dtype_name(y.dtype), shape_str(y.shape));
  elem_ = size_t(dtype_size(y.dtype));
  const size_t rank = y.shape.size();
  const std::vector<int64_t> pieces = cfg.attrs.get_ints("pieces");
  const size_t per = 2 + 3 * rank;
  if (pieces.empty() || pieces.size() % per != 0)
    fail(where_of(cfg), "{}: attribute 'pieces' has {} ints, not a positive multiple of {}", kName, pieces.size(), per);
  const std::vector<int64_t> y_st = strides_of(y.shape);
  int64_t summand = -1, covered = 0;
  std::vector<std::vector<int64_t>> lo, hi;  // the current summand's boxes in the output, to refuse overlaps
  for (size_t p = 0; p < pieces.size(); p += per) {
    const int64_t s = pieces[p];
    const int64_t input = pieces[p + 1];
    const int64_t* src = pieces.data() + p + 2;  // one past the end for a scalar: never read
    const int64_t* dst = src + rank;
    const int64_t* size = dst + rank;
    if (s < 0 || (s != summand && s != summand + 1))
      fail(where_of(cfg), "{}: box {} is of summand {} after summand {}; boxes go by summand from 0", kName, p / per, s, summand);
    if (s != summand) {
      if (summand >= 0 && covered != numel(y.shape))
        fail(where_of(cfg), "{}: summand {} covers {} of the output's {} elements", kName, summand, covered, numel(y.shape));
      if (s > 0 && y.dtype != DType::f32) fail(where_of(cfg), "{}: only f32 parts are summed, not {}", kName, dtype_name(y.dtype));
      summand = s;
      covered = 0;
      lo.clear();
      hi.clear();
    }
    if (input < 0 || size_t(input) >= cfg.inputs.size())
      fail(where_of(cfg), "{}: box {} reads input {} of {}", kName, p / per, input, cfg.inputs.size());
    const Shape& x = cfg.inputs[size_t(input)].shape;
    int64_t n = 1;
    for (size_t a = 0; a < rank; ++a) {
      if (size[a] < 0 || src[a] < 0 || dst[a] < 0 || src[a] > x[a] - size[a] || dst[a] > y.shape[a] - size[a])
        fail(where_of(cfg), "{}: box {} (axis {}: from {}, to {}, {} long) lies outside input {} or the output {}", kName, p / per,
             a, src[a], dst[a], size[a], shape_str(x), shape_str(y.shape));
      n *= size[a];
    }
    std::vector<int64_t> b(dst, dst + rank), e(rank);
    for (size_t a = 0; a < rank; ++a) e[a] = dst[a] + size[a];
    for (size_t o = 0; o < lo.size(); ++o) {
      bool overlap = n > 0;
      for (size_t a = 0; a < rank && overlap; ++a) overlap = b[a] < hi[o][a] && lo[o][a] < e[a];
      if (overlap) fail(where_of(cfg), "{}: box {} overlaps another box of summand {}", kName, p / per, s);
    }
    lo.push_back(b);
    hi.push_back(e);
    covered += n;
    // Contiguous runs: the trailing axes the box spans whole in both tensors, plus the next one.
    Box box{.input = int32_t(input), .add = s > 0, .len = 1, .runs = {}};
    size_t t = rank;
    while (t > 0) {
      --t;
      box.len *= size[t];
      if (!(size[t] == x[t] && size[t] == y.shape[t])) break;
    }
    if (n > 0) {
      const std::vector<int64_t> x_st = strides_of(x);
      std::vector<int64_t> idx(t, 0);  // over the axes before t
      const int64_t outer = rank == 0 ? 1 : n / box.len;
      for (int64_t r = 0; r < outer; ++r) {
        int64_t so = 0, d = 0;
        for (size_t a = 0; a < t; ++a) {
          so += (src[a] + idx[a]) * x_st[a];
          d += (dst[a] + idx[a]) * y_st[a];
        }
        if (t < rank) {
          so += src[t] * x_st[t];
          d += dst[t] * y_st[t];
        }
        box.runs.emplace_back(so, d);
        for (size_t a = t; a-- > 0;) {
          if (++idx[a] < size[a]) break;
          idx[a] = 0;
        }
      }
    }
    boxes_.push_back(std::move(box));
  }
  if (covered != numel(y.shape))
    fail(where_of(cfg), "{}: summand {} covers {} of the output's {} elements", kName, summand, covered, numel(y.shape));
}

void CollectivePart::run(const RunCtx&, const void* const* in, void* const* out) {
  auto* y = static_cast<uint8_t*>(out[0]);
  for (const Box& box : boxes_) {
    const auto* x = static_cast<const uint8_t*>(in[box.input]);
    if (!box.add) {
      const size_t bytes = size_t(box.len) * elem_;
      for (const auto& [s, d] : box.runs) std::memcpy(y + size_t(d) * elem_, x + size_t(s) * elem_, bytes);
      continue;
    }
    for (const auto& [s, d] : box.runs) {
      const float* a = reinterpret_cast<const float*>(x) + s;
      float* b = reinterpret_cast<float*>(y) + d;
      for (int64_t i = 0; i < box.len; ++i) b[i] += a[i];
    }
  }
}

}  // namespace

std::unique_ptr<Kernel> make_collective_part(const KernelConfig& cfg) { return std::make_unique<CollectivePart>(cfg); }

}  // namespace of::kernels::cpu
