// SPDX-License-Identifier: Apache-2.0
// The element-wise CUDA kernels' host side: relu, sigmoid, tanh, gelu, their gradients from (dy, y) (gelu: (dy, x)),
// add/sub/mul/div/max/min/prelu, the comparisons and logical ops, and where with numpy broadcasting;
// cast, clip_int and logical_not. Configs are checked as the CPU twins check them.
#include "kernels/cpu/check.h"
#include "kernels/cuda/device_stream.h"
#include "kernels/cuda/factories.h"
#include "kernels/cuda/launch.h"
#include "kernels/rules.h"

namespace of::kernels::cuda {

namespace {

using cpu::check_arity;
using cpu::check_dtypes;
using cpu::check_input_shape;
using cpu::check_output_shape;
using cpu::where_of;

class Unary final : public Kernel {
 public:
  Unary(const KernelConfig& cfg, const char* name, UnaryOp op) : op_(op), n_(unary_count(cfg, name)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_unary(op_, static_cast<const float*>(in[0]), static_cast<float*>(out[0]), n_, ctx.stream->stream);
    ctx.stream->check_launch("unary");
  }

 private:
  UnaryOp op_;
  int64_t n_ = 0;
};

// dx = op(dy, y), y the forward output (x, the input, for gelu); dx may alias dy or y.
class UnaryGrad final : public Kernel {
 public:
  UnaryGrad(const KernelConfig& cfg, const char* name, UnaryGradOp op, const char* second = "y")
      : op_(op), n_(unary_grad_count(cfg, name, second)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_unary_grad(op_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                      static_cast<float*>(out[0]), n_, ctx.stream->stream);
    ctx.stream->check_launch("unary_grad");
  }

 private:
  UnaryGradOp op_;
  int64_t n_ = 0;
};

// Two operands' broadcast (numpy's rule) as the launch's space; the config's arity and dtypes
// (`in` both inputs, `out` the output) checked first.
BroadcastSpace broadcast_space(const KernelConfig& cfg, const char* name, DType in, DType out) {
  BroadcastSpace space;
  {
    check_arity(cfg, name, 2, 2, 1);
    check_dtypes(cfg, name, {in, in}, {out});
    const Shape& a = cfg.inputs[0].shape;
    const Shape& b = cfg.inputs[1].shape;
    const size_t rank = std::max(a.size(), b.size());
    if (rank > size_t(kMaxRank)) fail(where_of(cfg), "{}: rank {} exceeds {}", name, rank, kMaxRank);
    // Right-align both shapes; element strides are 0 along broadcast axes. Size-1 dims of the
    // result are dropped (they move no offset).
    Shape y(rank);
    int64_t sa = 1, sb = 1;
    std::vector<int64_t> dims, as, bs;
    for (size_t i = rank; i-- > 0;) {
      const size_t off_a = rank - a.size(), off_b = rank - b.size();
      const int64_t da = i >= off_a ? a[i - off_a] : 1;
      const int64_t db = i >= off_b ? b[i - off_b] : 1;
      if (da != db && da != 1 && db != 1)
        fail(where_of(cfg), "{}: shapes {} and {} do not broadcast", name, shape_str(a), shape_str(b));
      y[i] = da == 1 ? db : da;
      if (y[i] != 1) {
        dims.insert(dims.begin(), y[i]);
        as.insert(as.begin(), da == 1 ? 0 : sa);
        bs.insert(bs.begin(), db == 1 ? 0 : sb);
      }
      sa *= da;
      sb *= db;
    }
    check_output_shape(cfg, name, 0, y);
    space.rank = int(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      space.dims[d] = dims[d];
      space.a_strides[d] = as[d];
      space.b_strides[d] = bs[d];
    }
    space.total = numel(y);
  }
  return space;
}

// f32 operands, or int64 ones for add, sub and mul (as the CPU twin takes them).
class Binary final : public Kernel {
 public:
  Binary(const KernelConfig& cfg, const char* name, BinaryOp op)
      : op_(op), ints_((op == BinaryOp::add || op == BinaryOp::sub || op == BinaryOp::mul || op == BinaryOp::mod ||
                        op == BinaryOp::fmod) && !cfg.inputs.empty() && cfg.inputs[0].dtype == DType::i64),
        space_(broadcast_space(cfg, name, ints_ ? DType::i64 : DType::f32, ints_ ? DType::i64 : DType::f32)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    if (ints_)
      launch_int_binary(op_, space_, static_cast<const int64_t*>(in[0]), static_cast<const int64_t*>(in[1]),
                        static_cast<int64_t*>(out[0]), ctx.stream->stream);
    else
      launch_binary(op_, space_, static_cast<const float*>(in[0]), static_cast<const float*>(in[1]),
                    static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("binary");
  }

 private:
  BinaryOp op_;
  bool ints_;
  BroadcastSpace space_;
};

// cond ? a : b, all three broadcast (the CPU twin's rule: kernels/rules.h where_shape).
class Where final : public Kernel {
 public:
  Where(const KernelConfig& cfg) {
    const Shape y = where_shape(cfg);
    const size_t rank = y.size();
    for (size_t i = 0; i < rank; ++i) space_.dims[i] = y[i];
    for (size_t k = 0; k < 3; ++k) {
      const Shape& s = cfg.inputs[k].shape;
      int64_t t = 1;
      for (size_t i = s.size(); i-- > 0;) {
        space_.strides[k][i + rank - s.size()] = s[i] == 1 ? 0 : t;
        t *= s[i];
      }
    }
    space_.rank = int(rank);
    space_.total = numel(y);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_where(space_, static_cast<const uint8_t*>(in[0]), static_cast<const float*>(in[1]),
                 static_cast<const float*>(in[2]), static_cast<float*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("where");
  }

 private:
  WhereSpace space_;
};

}  // namespace

std::unique_ptr<Kernel> make_where(const KernelConfig& cfg) { return std::make_unique<Where>(cfg); }
std::unique_ptr<Kernel> make_relu(const KernelConfig& cfg) { return std::make_unique<Unary>(cfg, "relu", UnaryOp::relu); }
std::unique_ptr<Kernel> make_sigmoid(const KernelConfig& cfg) {
  return std::make_unique<Unary>(cfg, "sigmoid", UnaryOp::sigmoid);
}
std::unique_ptr<Kernel> make_tanh(const KernelConfig& cfg) { return std::make_unique<Unary>(cfg, "tanh", UnaryOp::tanh); }
std::unique_ptr<Kernel> make_relu_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad>(cfg, "relu_grad", UnaryGradOp::relu);
}
std::unique_ptr<Kernel> make_sigmoid_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad>(cfg, "sigmoid_grad", UnaryGradOp::sigmoid);
}
std::unique_ptr<Kernel> make_tanh_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad>(cfg, "tanh_grad", UnaryGradOp::tanh);
}
std::unique_ptr<Kernel> make_gelu(const KernelConfig& cfg) { return std::make_unique<Unary>(cfg, "gelu", UnaryOp::gelu); }
std::unique_ptr<Kernel> make_gelu_grad(const KernelConfig& cfg) {
  return std::make_unique<UnaryGrad>(cfg, "gelu_grad", UnaryGradOp::gelu, "x");
}
std::unique_ptr<Kernel> make_add(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "add", BinaryOp::add); }
std::unique_ptr<Kernel> make_sub(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "sub", BinaryOp::sub); }
std::unique_ptr<Kernel> make_mul(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "mul", BinaryOp::mul); }
std::unique_ptr<Kernel> make_div(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "div", BinaryOp::div); }
std::unique_ptr<Kernel> make_max(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "max", BinaryOp::max); }
std::unique_ptr<Kernel> make_min(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "min", BinaryOp::min); }
std::unique_ptr<Kernel> make_prelu(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "prelu", BinaryOp::prelu); }
std::unique_ptr<Kernel> make_pow_tensor(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "pow_tensor", BinaryOp::pow); }
std::unique_ptr<Kernel> make_mod(const KernelConfig& cfg) {
  if (cfg.inputs.empty() || cfg.inputs[0].dtype != DType::i64) fail(cpu::where_of(cfg), "mod: takes int64 operands (fmod takes floats)");
  return std::make_unique<Binary>(cfg, "mod", BinaryOp::mod);
}
std::unique_ptr<Kernel> make_fmod(const KernelConfig& cfg) { return std::make_unique<Binary>(cfg, "fmod", BinaryOp::fmod); }

namespace {

ElemType elem_type(DType t) { return t == DType::f32 ? ElemType::f32 : t == DType::i64 ? ElemType::i64 : ElemType::u8; }

// A comparison (f32 or i64 operands, as the first input's dtype says) or a logical op (bool).
class Compare final : public Kernel {
 public:
  Compare(const KernelConfig& cfg, const char* name, CompareOp op) : op_(op) {
    const bool logical = op == CompareOp::logical_and || op == CompareOp::logical_or;
    const DType in = logical ? DType::bool_ : !cfg.inputs.empty() && cfg.inputs[0].dtype == DType::i64 ? DType::i64 : DType::f32;
    space_ = broadcast_space(cfg, name, in, DType::bool_);
    in_ = elem_type(in);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_compare(op_, in_, space_, in[0], in[1], static_cast<uint8_t*>(out[0]), ctx.stream->stream);
    ctx.stream->check_launch("compare");
  }

 private:
  CompareOp op_;
  ElemType in_ = ElemType::f32;
  BroadcastSpace space_;
};

class Cast final : public Kernel {
 public:
  explicit Cast(const KernelConfig& cfg)
      : from_(elem_type(cfg.inputs.empty() ? DType::f32 : cfg.inputs[0].dtype)), n_(cast_elements(cfg)) {
    to_ = elem_type(cfg.outputs[0].dtype);
  }
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_cast(from_, to_, in[0], out[0], n_, ctx.stream->stream);
    ctx.stream->check_launch("cast");
  }

 private:
  ElemType from_ = ElemType::f32, to_ = ElemType::f32;
  int64_t n_ = 0;
};

class ClipInt final : public Kernel {
 public:
  explicit ClipInt(const KernelConfig& cfg) : b_(clip_int_bounds(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_clip_int(static_cast<const int64_t*>(in[0]), static_cast<int64_t*>(out[0]), b_.n, b_.lo, b_.hi, ctx.stream->stream);
    ctx.stream->check_launch("clip_int");
  }

 private:
  ClipIntBounds b_;
};

class LogicalNot final : public Kernel {
 public:
  explicit LogicalNot(const KernelConfig& cfg) : n_(logical_not_elements(cfg)) {}
  void run(const RunCtx& ctx, const void* const* in, void* const* out) override {
    launch_logical_not(static_cast<const uint8_t*>(in[0]), static_cast<uint8_t*>(out[0]), n_, ctx.stream->stream);
    ctx.stream->check_launch("logical_not");
  }

 private:
  int64_t n_ = 0;
};

}  // namespace

std::unique_ptr<Kernel> make_greater(const KernelConfig& cfg) { return std::make_unique<Compare>(cfg, "greater", CompareOp::greater); }
std::unique_ptr<Kernel> make_greater_or_equal(const KernelConfig& cfg) {
  return std::make_unique<Compare>(cfg, "greater_or_equal", CompareOp::greater_or_equal);
}
std::unique_ptr<Kernel> make_less(const KernelConfig& cfg) { return std::make_unique<Compare>(cfg, "less", CompareOp::less); }
std::unique_ptr<Kernel> make_less_or_equal(const KernelConfig& cfg) {
  return std::make_unique<Compare>(cfg, "less_or_equal", CompareOp::less_or_equal);
}
std::unique_ptr<Kernel> make_equal(const KernelConfig& cfg) { return std::make_unique<Compare>(cfg, "equal", CompareOp::equal); }
std::unique_ptr<Kernel> make_logical_and(const KernelConfig& cfg) {
  return std::make_unique<Compare>(cfg, "logical_and", CompareOp::logical_and);
}
std::unique_ptr<Kernel> make_logical_or(const KernelConfig& cfg) { return std::make_unique<Compare>(cfg, "logical_or", CompareOp::logical_or); }
std::unique_ptr<Kernel> make_cast(const KernelConfig& cfg) { return std::make_unique<Cast>(cfg); }
std::unique_ptr<Kernel> make_clip_int(const KernelConfig& cfg) { return std::make_unique<ClipInt>(cfg); }
std::unique_ptr<Kernel> make_logical_not(const KernelConfig& cfg) { return std::make_unique<LogicalNot>(cfg); }

}  // namespace of::kernels::cuda
