// SPDX-License-Identifier: Apache-2.0
// collective_part: one device's part of a collective (all-reduce, reduce-scatter, all-gather,
// all-to-all) between devices of one process, reading the other devices' registers directly.
// The output is made of summands, each tiled by boxes cut from the inputs; summand 0 is copied
// in, every later one added on, in order. That is the order the point-to-point boxing it
// replaces adds in (compiler/parallel/boxing.cpp), so both give the same bits.
//
// Attribute "pieces": per box, 2 + 3 * rank ints: summand, input, the box's start in that
// input, its start in the output, its extent. Boxes are listed by summand, from 0; the rule that
// checks them is shared with the CUDA twin (kernels/rules.h, collective_boxes).
#include <cstring>

#include "kernels/cpu/check.h"
#include "kernels/cpu/factories.h"
#include "kernels/rules.h"

namespace of::kernels::cpu {

namespace {

// A box as contiguous runs: `len` elements from each (src, dst) offset pair.
struct Box {
  int32_t input;
  bool add;  // a later summand: added onto what is there
  int64_t len;
  std::vector<std::pair<int64_t, int64_t>> runs;
};

class CollectivePart final : public Kernel {
 public:
  explicit CollectivePart(const KernelConfig& cfg);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  size_t elem_;
  std::vector<Box> boxes_;
};

CollectivePart::CollectivePart(const KernelConfig& cfg) : elem_(size_t(dtype_size(cfg.outputs.empty() ? DType::f32 : cfg.outputs[0].dtype))) {
  const std::vector<CollectiveBox> boxes = collective_boxes(cfg);  // checks cfg first
  const Shape& y = cfg.outputs[0].shape;
  const size_t rank = y.size();
  const std::vector<int64_t> y_st = strides_of(y);
  for (const CollectiveBox& c : boxes) {
    const Shape& x = cfg.inputs[size_t(c.input)].shape;
    int64_t n = 1;
    for (int64_t e : c.size) n *= e;
    // Contiguous runs: the trailing axes the box spans whole in both tensors, plus the next one.
    Box box{.input = c.input, .add = c.add, .len = 1, .runs = {}};
    size_t t = rank;
    while (t > 0) {
      --t;
      box.len *= c.size[t];
      if (!(c.size[t] == x[t] && c.size[t] == y[t])) break;
    }
    if (n > 0) {
      const std::vector<int64_t> x_st = strides_of(x);
      std::vector<int64_t> idx(t, 0);  // over the axes before t
      const int64_t outer = rank == 0 ? 1 : n / box.len;
      for (int64_t r = 0; r < outer; ++r) {
        int64_t so = 0, d = 0;
        for (size_t a = 0; a < t; ++a) {
          so += (c.src[a] + idx[a]) * x_st[a];
          d += (c.dst[a] + idx[a]) * y_st[a];
        }
        if (t < rank) {
          so += c.src[t] * x_st[t];
          d += c.dst[t] * y_st[t];
        }
        box.runs.emplace_back(so, d);
        for (size_t a = t; a-- > 0;) {
          if (++idx[a] < c.size[a]) break;
          idx[a] = 0;
        }
      }
    }
    boxes_.push_back(std::move(box));
  }
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
