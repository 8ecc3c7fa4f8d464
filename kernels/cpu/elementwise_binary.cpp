// SPDX-License-Identifier: Apache-2.0
// add, sub, mul, div, max, min, prelu, pow_tensor, mod, fmod with numpy (multidirectional) broadcasting (add, sub and mul
// of int64 too: ids shifted or combined at run time, wrapping as torch's do); and the
// comparisons greater, greater_or_equal, less, less_or_equal, equal (f32 or i64 operands) and
// logical_and, logical_or (bool operands), whose results are bool (a byte, 0 or 1). The factory collapses adjacent
// dimensions that both operands walk contiguously (or both broadcast), so identical shapes,
// scalar operands and the trailing case ([M,N] op [N]) become one or two flat, vectorizable loops.
#include <algorithm>
#include <array>
#include <cmath>

#include <omp.h>

#include "kernels/cpu/check.h"
#include "kernels/cpu/parallel_split.h"
#include "kernels/cpu/factories.h"

namespace of::kernels::cpu {

namespace {

constexpr size_t max_rank = 8;

// On int64 in unsigned arithmetic: an overflow wraps (two's complement), as torch's does, where
// signed overflow would be undefined.
struct AddOp {
  float operator()(float a, float b) const { return a + b; }
  int64_t operator()(int64_t a, int64_t b) const { return int64_t(uint64_t(a) + uint64_t(b)); }
};
struct SubOp {
  float operator()(float a, float b) const { return a - b; }
  int64_t operator()(int64_t a, int64_t b) const { return int64_t(uint64_t(a) - uint64_t(b)); }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
  int64_t operator()(int64_t a, int64_t b) const { return int64_t(uint64_t(a) * uint64_t(b)); }
};
struct DivOp {
  float operator()(float a, float b) const { return a / b; }
};
// torch.maximum / torch.minimum: a NaN on either side gives NaN (std::max would drop one), equal
// values give b (the same value; +0 and -0 alike compare equal). Selects, so the rows vectorize.
struct MaxOp {
  float operator()(float a, float b) const { return a > b || a != a ? a : b; }
};
struct MinOp {
  float operator()(float a, float b) const { return a < b || a != a ? a : b; }
};
// Remainders of int64 ids (the hashing trick's `ids % buckets`): mod takes the divisor's sign
// (torch's % and torch.remainder, Python's), fmod the dividend's (torch.fmod; C++'s %). A zero
// divisor gives 0 (torch raises; the runtime cannot), and INT64_MIN by -1 gives 0, where C++'s
// would overflow. fmod of floats is std::fmod, as torch's.
inline int64_t truncated_remainder(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
struct ModOp {
  int64_t operator()(int64_t a, int64_t b) const {
    const int64_t r = truncated_remainder(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
  }
};
struct FmodOp {
  float operator()(float a, float b) const { return std::fmod(a, b); }
  int64_t operator()(int64_t a, int64_t b) const { return truncated_remainder(a, b); }
};
// torch.pow(a, b) with a tensor exponent (GeM pooling's learned p): std::pow, as torch's.
struct PowOp {
  float operator()(float a, float b) const { return std::pow(a, b); }
};
// nn.PReLU: x where x > 0, else slope * x (a NaN x stays NaN).
struct PreluOp {
  float operator()(float x, float slope) const { return x > 0.0f ? x : slope * x; }
};

// Comparisons as torch's (a NaN compares false, except not-equal), bytes out.
struct GreaterOp {
  template <class T> uint8_t operator()(T a, T b) const { return a > b; }
};
struct GreaterOrEqualOp {
  template <class T> uint8_t operator()(T a, T b) const { return a >= b; }
};
struct LessOp {
  template <class T> uint8_t operator()(T a, T b) const { return a < b; }
};
struct LessOrEqualOp {
  template <class T> uint8_t operator()(T a, T b) const { return a <= b; }
};
struct EqualOp {
  template <class T> uint8_t operator()(T a, T b) const { return a == b; }
};
struct AndOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a != 0 && b != 0; }
};
struct OrOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a != 0 || b != 0; }
};

// One row of the innermost dimension; the stride pairs (1,1), (1,0), (0,1) get their own loops
// so that the compiler vectorizes them.
template <class Op, class TIn, class TOut>
void row(const TIn* a, int64_t sa, const TIn* b, int64_t sb, TOut* y, int64_t n) {
  const Op op;
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const TIn bv = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const TIn av = *a;
    for (int64_t i = 0; i < n; ++i) y[i] = op(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i * sa], b[i * sb]);
  }
}

// TIn, TOut: the element types (float, int64_t; uint8_t for bool), checked against the config's
// dtypes `in`, `out`.
template <class Op, class TIn = float, class TOut = float>
class Binary final : public Kernel {
 public:
  Binary(const KernelConfig& cfg, const char* name, DType in = DType::f32, DType out = DType::f32);
  void run(const RunCtx&, const void* const* in, void* const* out) override;

 private:
  // Collapsed iteration space: dims_[0..rank_) with per-operand strides (0 = broadcast).
  size_t rank_ = 0;
  std::array<int64_t, max_rank> dims_{}, a_strides_{}, b_strides_{};
  int64_t total_ = 0;
};

template <class Op, class TIn, class TOut>
Binary<Op, TIn, TOut>::Binary(const KernelConfig& cfg, const char* name, DType in, DType out) {
  check_arity(cfg, name, 2, 2, 1);
  check_dtypes(cfg, name, {in, in}, {out});
  const Shape& a = cfg.inputs[0].shape;
  const Shape& b = cfg.inputs[1].shape;
  const size_t rank = std::max(a.size(), b.size());
  if (rank > max_rank) fail(where_of(cfg), "{}: rank {} exceeds {}", name, rank, max_rank);

  // Right-align both shapes, broadcast, and compute element strides (0 along broadcast axes).
  Shape y(rank);
  std::vector<int64_t> sa(rank), sb(rank);
  int64_t ta = 1, tb = 1;
  for (size_t i = rank; i-- > 0;) {
    const size_t off_a = rank - a.size(), off_b = rank - b.size();
    const int64_t da = i >= off_a ? a[i - off_a] : 1;
    const int64_t db = i >= off_b ? b[i - off_b] : 1;
    if (da != db && da != 1 && db != 1)
      fail(where_of(cfg), "{}: shapes {} and {} do not broadcast", name, shape_str(a),
           shape_str(b));
    y[i] = da == 1 ? db : da;
    sa[i] = da == 1 ? 0 : ta;
    sb[i] = db == 1 ? 0 : tb;
    ta *= da;
    tb *= db;
  }
  check_output_shape(cfg, name, 0, y);
  total_ = numel(y);

  // Drop size-1 dims, then merge dim i into i+1 when both operands step through them as one.
  for (size_t i = 0; i < rank; ++i) {
    if (y[i] == 1) continue;
    if (rank_ > 0) {
      const size_t j = rank_ - 1;
      if (a_strides_[j] == sa[i] * y[i] && b_strides_[j] == sb[i] * y[i]) {
        dims_[j] *= y[i];
        a_strides_[j] = sa[i];
        b_strides_[j] = sb[i];
        continue;
      }
    }
    dims_[rank_] = y[i];
    a_strides_[rank_] = sa[i];
    b_strides_[rank_] = sb[i];
    ++rank_;
  }
  if (rank_ == 0) {  // a single element
    dims_[0] = 1;
    rank_ = 1;
  }
}

template <class Op, class TIn, class TOut>
void Binary<Op, TIn, TOut>::run(const RunCtx&, const void* const* in, void* const* out) {
  const auto* a = static_cast<const TIn*>(in[0]);
  const auto* b = static_cast<const TIn*>(in[1]);
  auto* y = static_cast<TOut*>(out[0]);
  if (total_ == 0) return;
  // Same shapes (or a scalar side): one row, split between the kernel threads in contiguous runs
  // when long enough; every element as on one thread.
  if (rank_ == 1 && total_ >= kParallelElements && omp_get_max_threads() > 1) {
    const int64_t sa = a_strides_[0], sb = b_strides_[0];
#pragma omp parallel
    {
      const auto [lo, hi] = thread_share(total_);
      if (hi > lo) row<Op, TIn, TOut>(a + lo * sa, sa, b + lo * sb, sb, y + lo, hi - lo);
    }
    return;
  }
  // Broadcasts: rows of the last axis, contiguous runs of them per kernel thread, each thread's
  // odometer started at its first row.
  const size_t last = rank_ - 1;
  const int64_t n = dims_[last], rows = total_ / n;
  const int threads = split_threads(rows, total_);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const auto [begin, end] = thread_share(rows);
    std::array<int64_t, max_rank> idx = odometer_at(begin, dims_, last);
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < last; ++i) {
      oa += idx[i] * a_strides_[i];
      ob += idx[i] * b_strides_[i];
    }
    for (int64_t r = begin; r < end; ++r) {
      row<Op, TIn, TOut>(a + oa, a_strides_[last], b + ob, b_strides_[last], y + r * n, n);
      for (size_t i = last; i-- > 0;) {  // odometer over the outer dims
        oa += a_strides_[i];
        ob += b_strides_[i];
        if (++idx[i] < dims_[i]) break;
        oa -= a_strides_[i] * dims_[i];
        ob -= b_strides_[i] * dims_[i];
        idx[i] = 0;
      }
    }
  }
}

}  // namespace

namespace {

// add, sub and mul of f32 or int64 operands (as the first input's dtype says).
template <class Op>
std::unique_ptr<Kernel> arithmetic(const KernelConfig& cfg, const char* name) {
  if (!cfg.inputs.empty() && cfg.inputs[0].dtype == DType::i64)
    return std::make_unique<Binary<Op, int64_t, int64_t>>(cfg, name, DType::i64, DType::i64);
  return std::make_unique<Binary<Op>>(cfg, name);
}

}  // namespace

std::unique_ptr<Kernel> make_add(const KernelConfig& cfg) { return arithmetic<AddOp>(cfg, "add"); }
std::unique_ptr<Kernel> make_sub(const KernelConfig& cfg) { return arithmetic<SubOp>(cfg, "sub"); }
std::unique_ptr<Kernel> make_mul(const KernelConfig& cfg) { return arithmetic<MulOp>(cfg, "mul"); }
std::unique_ptr<Kernel> make_div(const KernelConfig& cfg) {
  return std::make_unique<Binary<DivOp>>(cfg, "div");
}
std::unique_ptr<Kernel> make_max(const KernelConfig& cfg) {
  return std::make_unique<Binary<MaxOp>>(cfg, "max");
}
std::unique_ptr<Kernel> make_min(const KernelConfig& cfg) {
  return std::make_unique<Binary<MinOp>>(cfg, "min");
}
std::unique_ptr<Kernel> make_prelu(const KernelConfig& cfg) {
  return std::make_unique<Binary<PreluOp>>(cfg, "prelu");
}
std::unique_ptr<Kernel> make_mod(const KernelConfig& cfg) {
  return std::make_unique<Binary<ModOp, int64_t, int64_t>>(cfg, "mod", DType::i64, DType::i64);
}
std::unique_ptr<Kernel> make_fmod(const KernelConfig& cfg) {
  if (!cfg.inputs.empty() && cfg.inputs[0].dtype == DType::i64)
    return std::make_unique<Binary<FmodOp, int64_t, int64_t>>(cfg, "fmod", DType::i64, DType::i64);
  return std::make_unique<Binary<FmodOp>>(cfg, "fmod");
}
std::unique_ptr<Kernel> make_pow_tensor(const KernelConfig& cfg) {
  return std::make_unique<Binary<PowOp>>(cfg, "pow_tensor");
}

namespace {

// A comparison of f32 or i64 operands (as the first input's dtype says).
template <class Op>
std::unique_ptr<Kernel> compare(const KernelConfig& cfg, const char* name) {
  if (!cfg.inputs.empty() && cfg.inputs[0].dtype == DType::i64)
    return std::make_unique<Binary<Op, int64_t, uint8_t>>(cfg, name, DType::i64, DType::bool_);
  return std::make_unique<Binary<Op, float, uint8_t>>(cfg, name, DType::f32, DType::bool_);
}

}  // namespace

std::unique_ptr<Kernel> make_greater(const KernelConfig& cfg) { return compare<GreaterOp>(cfg, "greater"); }
std::unique_ptr<Kernel> make_greater_or_equal(const KernelConfig& cfg) { return compare<GreaterOrEqualOp>(cfg, "greater_or_equal"); }
std::unique_ptr<Kernel> make_less(const KernelConfig& cfg) { return compare<LessOp>(cfg, "less"); }
std::unique_ptr<Kernel> make_less_or_equal(const KernelConfig& cfg) { return compare<LessOrEqualOp>(cfg, "less_or_equal"); }
std::unique_ptr<Kernel> make_equal(const KernelConfig& cfg) { return compare<EqualOp>(cfg, "equal"); }
std::unique_ptr<Kernel> make_logical_and(const KernelConfig& cfg) {
  return std::make_unique<Binary<AndOp, uint8_t, uint8_t>>(cfg, "logical_and", DType::bool_, DType::bool_);
}
std::unique_ptr<Kernel> make_logical_or(const KernelConfig& cfg) {
  return std::make_unique<Binary<OrOp, uint8_t, uint8_t>>(cfg, "logical_or", DType::bool_, DType::bool_);
}

}  // namespace of::kernels::cpu
