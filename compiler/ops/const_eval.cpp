// SPDX-License-Identifier: Apache-2.0
// Compile-time evaluation of the shape arithmetic exporters emit (Shape, Gather, Unsqueeze,
// Concat, Slice, Cast, Range, Equal, Where, Expand, ...): plans have static shapes, so a node
// whose inputs are all known at compile time becomes a constant. Parameters are never folded
// (they change every step); true constants, shapes and buffers that are not floats are.
// Values are evaluated as doubles: exact for the integers shapes hold (|x| < 2^53) and for f32.
#include "compiler/ops/const_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <limits>

#include "common/error.h"

namespace of::compiler {
namespace {

// Folding is for small tensors (shapes, masks, index ranges); a large one stays a run-time op.
constexpr int64_t kMaxFoldElements = int64_t(1) << 22;
constexpr int64_t kMaxFoldRank = 64;

struct Ct {
  Shape shape;
  DType dtype = DType::i64;
  std::vector<double> v;
  int64_t n() const { return int64_t(v.size()); }
};

bool readable(DType t) {
  return t == DType::f32 || t == DType::i64 || t == DType::i32 || t == DType::bool_ || t == DType::u8 || t == DType::i8;
}

Ct read(const Value& val) {
  Ct c{val.desc.shape, val.desc.dtype, {}};
  const int64_t n = numel(c.shape);
  c.v.resize(size_t(n));
  const uint8_t* p = val.data->data();
  for (int64_t i = 0; i < n; ++i) {
    switch (c.dtype) {
      case DType::f32: { float x; std::memcpy(&x, p + 4 * i, 4); c.v[i] = x; break; }
      case DType::i64: { int64_t x; std::memcpy(&x, p + 8 * i, 8); c.v[i] = double(x); break; }
      case DType::i32: { int32_t x; std::memcpy(&x, p + 4 * i, 4); c.v[i] = x; break; }
      case DType::i8: c.v[i] = double(int8_t(p[i])); break;
      default: c.v[i] = p[i]; break;  // bool, u8
    }
  }
  return c;
}

int64_t to_i64(double x) {
  // INT64_MAX/MIN (Slice's "to the end") do not survive a double round trip: clamp. NaN (a
  // hostile fmod) has no integer value; 0 keeps the conversion defined.
  if (std::isnan(x)) return 0;
  if (x >= 9.2e18) return std::numeric_limits<int64_t>::max();
  if (x <= -9.2e18) return std::numeric_limits<int64_t>::min();
  return int64_t(x);
}

std::vector<uint8_t> bytes_of(const Ct& c) {
  std::vector<uint8_t> out(size_t(c.n() * dtype_size(c.dtype)));
  for (int64_t i = 0; i < c.n(); ++i) {
    switch (c.dtype) {
      case DType::f32: { float x = float(c.v[i]); std::memcpy(out.data() + 4 * i, &x, 4); break; }
      case DType::i64: { int64_t x = to_i64(c.v[i]); std::memcpy(out.data() + 8 * i, &x, 8); break; }
      case DType::i32: {
        auto x = int32_t(std::clamp<int64_t>(to_i64(c.v[i]), INT32_MIN, INT32_MAX));
        std::memcpy(out.data() + 4 * i, &x, 4);
        break;
      }
      case DType::bool_: out[i] = c.v[i] != 0 ? 1 : 0; break;
      default: out[i] = uint8_t(to_i64(c.v[i])); break;
    }
  }
  return out;
}

std::vector<int64_t> ints(const Ct& c) {
  std::vector<int64_t> out;
  for (double x : c.v) out.push_back(to_i64(x));
  return out;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// The element count of `shape`, failing (through bad) past kMaxFoldElements or for a negative dim.
int64_t checked_numel(const Shape& shape, const std::function<void(const std::string&)>& bad) {
  int64_t n = 1;
  if (int64_t(shape.size()) > kMaxFoldRank) bad(fmt::format("rank {} is more than {}", shape.size(), kMaxFoldRank));
  for (int64_t d : shape) {
    if (d < 0) bad(fmt::format("shape {} has a negative dimension", shape_str(shape)));
    // Every dim is bounded too: [0, 2^62] has no elements but overflows strides and loops.
    if (d > kMaxFoldElements) bad(fmt::format("shape {} is too large to fold", shape_str(shape)));
    if (d > 0 && n > kMaxFoldElements / d) bad(fmt::format("shape {} is too large to fold", shape_str(shape)));
    n *= d;
  }
  return n;
}

// Broadcasts every input to the common shape and applies f element-wise.
Ct broadcast_map(const std::vector<Ct>& in, DType out_dtype, const std::function<double(const double*)>& f,
                 const std::function<void(const std::string&)>& bad) {
  size_t rank = 0;
  for (const Ct& c : in) rank = std::max(rank, c.shape.size());
  Shape out(rank, 1);
  for (const Ct& c : in)
    for (size_t i = 0; i < c.shape.size(); ++i) {
      int64_t& o = out[rank - c.shape.size() + i];
      const int64_t d = c.shape[i];
      if (o == 1) o = d;
      else if (d != 1 && d != o) bad("shapes do not broadcast");
    }
  Ct r{out, out_dtype, std::vector<double>(size_t(checked_numel(out, bad)))};
  const std::vector<int64_t> ost = strides_of(out);
  std::vector<double> args(in.size());
  for (int64_t flat = 0; flat < r.n(); ++flat) {
    for (size_t k = 0; k < in.size(); ++k) {
      const Ct& c = in[k];
      int64_t idx = 0, stride = 1;
      for (size_t i = c.shape.size(); i-- > 0;) {
        const int64_t coord = (flat / ost[rank - c.shape.size() + i]) % out[rank - c.shape.size() + i];
        if (c.shape[i] != 1) idx += coord * stride;
        stride *= c.shape[i];
      }
      args[k] = c.v[size_t(idx)];
    }
    r.v[size_t(flat)] = f(args.data());
  }
  return r;
}

int64_t norm_axis(int64_t axis, int64_t rank, const std::function<void(const std::string&)>& bad) {
  if (axis < -rank || axis >= rank) bad(fmt::format("axis {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

DType onnx_to_dtype(int64_t to, const std::function<void(const std::string&)>& bad) {
  switch (to) {
    case 1: return DType::f32;
    case 3: return DType::i8;
    case 2: return DType::u8;
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 9: return DType::bool_;
    default: bad(fmt::format("Cast to ONNX type {} is not supported", to));
  }
  return DType::f32;
}

// The evaluator proper: nullopt when the op is not one it knows.
std::optional<std::vector<Ct>> evaluate(const Node& node, const std::vector<Ct>& in, const std::vector<const Value*>& vals,
                                        const std::function<void(const std::string&)>& bad) {
  const std::string& op = node.op_type;
  const Attrs& a = node.attrs;
  auto one = [](Ct c) { return std::optional<std::vector<Ct>>(std::vector<Ct>{std::move(c)}); };
  auto has = [&](size_t i) { return i < in.size() && vals[i] != nullptr; };
  // Inputs every op below reads without checking; a malformed node fails here by name.
  static const std::vector<std::pair<std::string, size_t>> kMinInputs = {
      {"Shape", 1}, {"Identity", 1}, {"Cast", 1}, {"Not", 1}, {"Neg", 1}, {"Sqrt", 1}, {"Reciprocal", 1}, {"Unsqueeze", 1}, {"Squeeze", 1}, {"Reshape", 2}, {"Concat", 1}, {"Gather", 2},
      {"Slice", 3}, {"Expand", 2}, {"ConstantOfShape", 1}, {"Range", 3}, {"Transpose", 1}, {"Trilu", 1}, {"Mod", 2}, {"ScatterND", 3}, {"ScatterElements", 3}, {"ReduceProd", 1}, {"Split", 1}};
  for (const auto& [name, need] : kMinInputs)
    if (op == name)
      for (size_t i = 0; i < need; ++i)
        if (!has(i)) bad(fmt::format("input {} is required", i));
  auto scalar = [&](size_t i) {
    if (in[i].v.size() != 1) bad(fmt::format("input {} must hold one value, has {}", i, in[i].v.size()));
    if (!std::isfinite(in[i].v[0])) bad(fmt::format("input {} is not finite", i));
    return in[i].v[0];
  };
  if (op == "Shape") {
    const Shape& s = vals[0]->desc.shape;
    const auto rank = int64_t(s.size());
    int64_t start = a.get_int("start", 0), end = a.get_int("end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    Ct r{{end - start}, DType::i64, {}};
    for (int64_t i = start; i < end; ++i) r.v.push_back(double(s[size_t(i)]));
    return one(r);
  }
  if (op == "Identity") return one(in[0]);
  if (op == "Cast") {
    Ct r = in[0];
    r.dtype = onnx_to_dtype(a.get_int("to", 1), bad);
    for (double& x : r.v) {
      if (r.dtype == DType::bool_) x = x != 0 ? 1 : 0;
      else if (r.dtype == DType::i64 && !(x >= -0x1p63 && x < 0x1p63)) x = -0x1p63;  // as the cast kernel: INT64_MIN
      else if (r.dtype != DType::f32) x = std::trunc(x);
      else x = double(float(x));
    }
    return one(r);
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Equal" || op == "Less" ||
      op == "Greater" || op == "And" || op == "Or" || op == "Max" || op == "Min" || op == "GreaterOrEqual" || op == "LessOrEqual") {
    if (in.size() != 2 || !has(0) || !has(1)) bad("expects 2 inputs");
    const bool integer = in[0].dtype != DType::f32;
    const bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or" || op == "GreaterOrEqual" ||
                         op == "LessOrEqual";
    std::function<double(const double*)> f;
    if (op == "Add") f = [](const double* x) { return x[0] + x[1]; };
    else if (op == "Sub") f = [](const double* x) { return x[0] - x[1]; };
    else if (op == "Mul") f = [](const double* x) { return x[0] * x[1]; };
    else if (op == "Div") f = [integer](const double* x) { return integer ? std::trunc(x[0] / x[1]) : x[0] / x[1]; };
    else if (op == "Pow") f = [](const double* x) { return std::pow(x[0], x[1]); };
    else if (op == "Max") f = [](const double* x) { return x[0] > x[1] || std::isnan(x[0]) ? x[0] : x[1]; };  // the kernel's rule
    else if (op == "Min") f = [](const double* x) { return x[0] < x[1] || std::isnan(x[0]) ? x[0] : x[1]; };
    else if (op == "Equal") f = [](const double* x) { return double(x[0] == x[1]); };
    else if (op == "Less") f = [](const double* x) { return double(x[0] < x[1]); };
    else if (op == "LessOrEqual") f = [](const double* x) { return double(x[0] <= x[1]); };
    else if (op == "GreaterOrEqual") f = [](const double* x) { return double(x[0] >= x[1]); };
    else if (op == "Greater") f = [](const double* x) { return double(x[0] > x[1]); };
    else if (op == "And") f = [](const double* x) { return double(x[0] != 0 && x[1] != 0); };
    else f = [](const double* x) { return double(x[0] != 0 || x[1] != 0); };  // Or
    if (integer && op == "Div")
      for (double d : in[1].v)
        if (d == 0) bad("integer division by zero");
    Ct r = broadcast_map(in, compare ? DType::bool_ : in[0].dtype, f, bad);
    if (!compare && r.dtype == DType::f32)
      for (double& x : r.v) x = double(float(x));  // f32 arithmetic, as at run time
    return one(r);
  }
  if (op == "Mod") {  // x % y: fmod = 0 (integers) takes the divisor's sign, as Python's %; fmod = 1 the dividend's
    const bool fmod = a.get_int("fmod", 0) != 0;
    if (in[0].dtype == DType::f32 && !fmod) bad("Mod of floats needs fmod = 1");
    if (in[0].dtype != DType::f32)
      for (double d : in[1].v)
        if (d == 0) bad("integer modulo by zero");
    Ct r = broadcast_map(in, in[0].dtype, [fmod](const double* x) {
      double m = std::fmod(x[0], x[1]);
      if (!fmod && m != 0 && (m < 0) != (x[1] < 0)) m += x[1];
      return m;
    }, bad);
    if (r.dtype == DType::f32)
      for (double& x : r.v) x = double(float(x));
    return one(r);
  }
  if (op == "ScatterND") {  // data with the slices `indices` names set to (or combined with) `updates`
    const Ct &data = in[0], &idx = in[1], &upd = in[2];
    const std::string reduction = a.get_str("reduction", "none");
    if (reduction != "none" && reduction != "add" && reduction != "mul") bad(fmt::format("reduction '{}' is not supported", reduction));
    if (idx.shape.empty()) bad("indices must have rank >= 1");
    const int64_t k = idx.shape.back(), rank = int64_t(data.shape.size());
    if (k < 1 || k > rank) bad(fmt::format("indices address {} axes of data of rank {}", k, rank));
    // updates' shape: indices' leading dims, then data's dims after the first k.
    Shape want(idx.shape.begin(), idx.shape.end() - 1);
    want.insert(want.end(), data.shape.begin() + k, data.shape.end());
    if (upd.shape != want) bad(fmt::format("updates have shape {}, expected {}", shape_str(upd.shape), shape_str(want)));
    const std::vector<int64_t> st = strides_of(data.shape);
    const int64_t slice = k == rank ? 1 : st[size_t(k - 1)];
    Ct r = data;
    for (int64_t t = 0; t < idx.n() / k; ++t) {
      int64_t off = 0;
      for (int64_t d = 0; d < k; ++d) {
        int64_t j = to_i64(idx.v[size_t(t * k + d)]);
        const int64_t dim = data.shape[size_t(d)];
        if (j < 0) j += dim;
        if (j < 0 || j >= dim) bad(fmt::format("index {} is out of range for axis {} of size {}", to_i64(idx.v[size_t(t * k + d)]), d, dim));
        off += j * st[size_t(d)];
      }
      for (int64_t e = 0; e < slice; ++e) {
        double& o = r.v[size_t(off + e)];
        const double u = upd.v[size_t(t * slice + e)];
        o = reduction == "add" ? o + u : reduction == "mul" ? o * u : u;
      }
    }
    if (r.dtype == DType::f32)
      for (double& x : r.v) x = double(float(x));
    return one(r);
  }
  if (op == "ScatterElements") {  // of constants (Tensor.index_fill's index arithmetic on a shape)
    const Ct &data = in[0], &idx = in[1], &upd = in[2];
    const std::string reduction = a.get_str("reduction", "none");
    if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" && reduction != "min")
      bad(fmt::format("reduction '{}' is not supported", reduction));
    const auto rank = int64_t(data.shape.size());
    if (rank < 1 || int64_t(idx.shape.size()) != rank) bad("indices must have data's rank (>= 1)");
    if (upd.shape != idx.shape) bad(fmt::format("updates have shape {}, indices {}", shape_str(upd.shape), shape_str(idx.shape)));
    const int64_t axis = norm_axis(a.get_int("axis", 0), rank, bad);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && idx.shape[size_t(d)] > data.shape[size_t(d)])
        bad(fmt::format("indices' axis {} ({}) is longer than data's ({})", d, idx.shape[size_t(d)], data.shape[size_t(d)]));
    const std::vector<int64_t> st = strides_of(data.shape), ist = strides_of(idx.shape);
    Ct r = data;
    for (int64_t e = 0; e < idx.n(); ++e) {
      int64_t off = 0;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t j = (e / ist[size_t(d)]) % idx.shape[size_t(d)];
        if (d == axis) {
          j = to_i64(idx.v[size_t(e)]);
          const int64_t dim = data.shape[size_t(axis)];
          if (j < 0) j += dim;
          if (j < 0 || j >= dim) bad(fmt::format("index {} is out of range for axis {} of size {}", to_i64(idx.v[size_t(e)]), axis, dim));
        }
        off += j * st[size_t(d)];
      }
      double& o = r.v[size_t(off)];
      const double u = upd.v[size_t(e)];
      o = reduction == "add" ? o + u : reduction == "mul" ? o * u : reduction == "max" ? std::max(o, u) : reduction == "min" ? std::min(o, u) : u;
    }
    if (r.dtype == DType::f32)
      for (double& x : r.v) x = double(float(x));
    return one(r);
  }
  if (op == "Not" || op == "Neg" || op == "Sqrt" || op == "Reciprocal") {
    Ct r = in[0];
    for (double& x : r.v) {
      if (op == "Not") x = x == 0 ? 1 : 0;
      else if (op == "Neg") x = -x;
      else if (op == "Sqrt") x = double(std::sqrt(float(x)));
      else x = double(1.0f / float(x));  // Reciprocal
    }
    return one(r);
  }
  if (op == "Where") {
    if (in.size() != 3 || !has(0) || !has(1) || !has(2)) bad("expects 3 inputs");
    return one(broadcast_map(in, in[1].dtype, [](const double* x) { return x[0] != 0 ? x[1] : x[2]; }, bad));
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    Ct r = in[0];
    std::vector<int64_t> axes = has(1) ? ints(in[1]) : a.get_ints("axes");
    if (op == "Unsqueeze") {
      const auto rank = int64_t(r.shape.size() + axes.size());
      if (rank > kMaxFoldRank) bad(fmt::format("unsqueeze to rank {} (more than {})", rank, kMaxFoldRank));
      for (int64_t& ax : axes) ax = norm_axis(ax, rank, bad);
      std::sort(axes.begin(), axes.end());
      if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) bad("axes repeat an axis");
      for (int64_t ax : axes) r.shape.insert(r.shape.begin() + ax, 1);
    } else {
      const auto rank = int64_t(r.shape.size());
      if (axes.size() > size_t(kMaxFoldRank)) bad(fmt::format("squeezes {} axes", axes.size()));
      for (int64_t ax : axes) norm_axis(ax, rank, bad);
      Shape out;
      for (int64_t i = 0; i < rank; ++i) {
        bool drop = axes.empty() ? r.shape[size_t(i)] == 1 : false;
        for (int64_t ax : axes) drop = drop || norm_axis(ax, rank, bad) == i;
        if (drop && r.shape[size_t(i)] != 1) bad(fmt::format("cannot squeeze axis {} of size {}", i, r.shape[size_t(i)]));
        if (!drop) out.push_back(r.shape[size_t(i)]);
      }
      r.shape = out;
    }
    return one(r);
  }
  if (op == "Reshape") {
    Ct r = in[0];
    std::vector<int64_t> want = ints(in[1]);
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] == 0 && a.get_int("allowzero", 0) == 0) {
        if (i >= in[0].shape.size()) bad("reshape copies a dimension the input lacks");
        want[i] = in[0].shape[i];
      }
      if (want[i] == -1) {
        if (infer >= 0) bad("reshape has two -1 dimensions");
        infer = int64_t(i);
        continue;
      }
      if (want[i] < 0 || (want[i] > 0 && known > kMaxFoldElements / want[i])) bad("reshape to an invalid shape");
      known *= want[i];
    }
    if (infer >= 0) want[size_t(infer)] = known == 0 ? 0 : r.n() / known;
    if (checked_numel(want, bad) != r.n()) bad("reshape changes the element count");
    r.shape = want;
    return one(r);
  }
  if (op == "Concat") {
    const auto rank = int64_t(in[0].shape.size());
    const int64_t axis = norm_axis(a.get_int("axis", 0), rank, bad);
    Ct r{in[0].shape, in[0].dtype, {}};
    r.shape[size_t(axis)] = 0;
    for (const Ct& c : in) {
      if (c.shape.size() != in[0].shape.size()) bad("inputs differ in rank");
      for (size_t d = 0; d < c.shape.size(); ++d)
        if (int64_t(d) != axis && c.shape[d] != in[0].shape[d]) bad("inputs differ off the concat axis");
      r.shape[size_t(axis)] += c.shape[size_t(axis)];
    }
    checked_numel(r.shape, bad);
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= r.shape[size_t(i)];
    for (int64_t o = 0; o < outer; ++o)
      for (const Ct& c : in) {
        const int64_t chunk = c.n() / std::max<int64_t>(outer, 1);
        r.v.insert(r.v.end(), c.v.begin() + o * chunk, c.v.begin() + (o + 1) * chunk);
      }
    return one(r);
  }
  if (op == "Split") {  // of a constant (x.repeat_interleave(k)'s index arithmetic): sizes from input 1, attribute split, or equal parts
    const Ct& x = in[0];
    const auto rank = int64_t(x.shape.size());
    const int64_t axis = norm_axis(a.get_int("axis", 0), rank, bad);
    const int64_t dim = x.shape[size_t(axis)], parts = int64_t(node.outputs.size());
    std::vector<int64_t> sizes;
    if (has(1)) {
      for (double d : in[1].v) sizes.push_back(int64_t(d));
    } else if (a.has("split")) {
      sizes = a.get_ints("split");
    } else {  // equal parts, the last smaller when they do not divide (opset 18's num_outputs)
      const int64_t chunk = parts > 0 ? (dim + parts - 1) / parts : 0;
      for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::clamp<int64_t>(dim - k * chunk, 0, chunk));
    }
    int64_t total = 0;
    for (int64_t z : sizes) {
      if (z < 0) bad(fmt::format("split size {} is negative", z));
      total += z;
    }
    if (int64_t(sizes.size()) != parts || total != dim)
      bad(fmt::format("{} split sizes summing to {} for {} outputs along an axis of {}", sizes.size(), total, parts, dim));
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= x.shape[size_t(i)];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= x.shape[size_t(i)];
    std::vector<Ct> outs;
    int64_t begin = 0;
    for (int64_t z : sizes) {
      Ct r{x.shape, x.dtype, {}};
      r.shape[size_t(axis)] = z;
      for (int64_t o = 0; o < outer; ++o) {
        const auto from = x.v.begin() + (o * dim + begin) * inner;
        r.v.insert(r.v.end(), from, from + z * inner);
      }
      outs.push_back(std::move(r));
      begin += z;
    }
    return outs;
  }
  if (op == "Gather") {
    const Ct& data = in[0];
    const auto rank = int64_t(data.shape.size());
    const int64_t axis = norm_axis(a.get_int("axis", 0), rank, bad);
    Shape out(data.shape.begin(), data.shape.begin() + axis);
    out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
    out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= data.shape[size_t(i)];
    for (int64_t i = axis + 1; i < rank; ++i) inner *= data.shape[size_t(i)];
    const int64_t dim = data.shape[size_t(axis)];
    checked_numel(out, bad);
    Ct r{out, data.dtype, {}};
    for (int64_t o = 0; o < outer; ++o)
      for (double idx : in[1].v) {
        int64_t k = to_i64(idx);
        if (k < 0) k += dim;
        if (k < 0 || k >= dim) bad(fmt::format("index {} is out of range for axis {} of size {}", to_i64(idx), axis, dim));
        r.v.insert(r.v.end(), data.v.begin() + (o * dim + k) * inner, data.v.begin() + (o * dim + k + 1) * inner);
      }
    return one(r);
  }
  if (op == "Slice") {
    const Ct& data = in[0];
    const auto rank = int64_t(data.shape.size());
    std::vector<int64_t> starts = ints(in[1]), ends = ints(in[2]);
    std::vector<int64_t> axes = has(3) ? ints(in[3]) : std::vector<int64_t>();
    std::vector<int64_t> steps = has(4) ? ints(in[4]) : std::vector<int64_t>(starts.size(), 1);
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
      bad("starts, ends, axes and steps differ in length");
    std::vector<int64_t> begin(size_t(rank), 0), step(size_t(rank), 1);
    Shape out = data.shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t ax = norm_axis(axes[i], rank, bad), dim = data.shape[size_t(ax)];
      if (steps[i] == 0) bad("Slice step 0");
      // A step longer than the axis takes one element, as any such step does; clamping keeps the
      // size arithmetic below from overflowing.
      const int64_t st = std::clamp<int64_t>(steps[i], -(dim + 1), dim + 1);
      if (dim == 0) {  // nothing to take, whatever the bounds
        out[size_t(ax)] = 0;
        continue;
      }
      int64_t s = starts[i], e = ends[i];
      if (s < 0) s += dim;
      if (e < 0 && e > std::numeric_limits<int64_t>::min()) e += dim;
      if (st > 0) {
        s = std::clamp<int64_t>(s, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        out[size_t(ax)] = std::max<int64_t>(0, (e - s + st - 1) / st);
      } else {
        s = std::clamp<int64_t>(s, 0, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        out[size_t(ax)] = std::max<int64_t>(0, (s - e - st - 1) / -st);
      }
      begin[size_t(ax)] = s;
      step[size_t(ax)] = st;
    }
    Ct r{out, data.dtype, std::vector<double>(size_t(checked_numel(out, bad)))};
    const std::vector<int64_t> ist = strides_of(data.shape), ost = strides_of(out);
    for (int64_t flat = 0; flat < r.n(); ++flat) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d) src += (begin[size_t(d)] + (flat / ost[size_t(d)]) % out[size_t(d)] * step[size_t(d)]) * ist[size_t(d)];
      r.v[size_t(flat)] = data.v[size_t(src)];
    }
    return one(r);
  }
  if (op == "Expand") {
    const std::vector<int64_t> shape = ints(in[1]);
    Ct target{shape, in[0].dtype, std::vector<double>(size_t(checked_numel(shape, bad)), 0)};
    return one(broadcast_map({in[0], target}, in[0].dtype, [](const double* x) { return x[0]; }, bad));
  }
  if (op == "ConstantOfShape") {
    const std::vector<int64_t> shape = ints(in[0]);
    const DType t = DType(a.get_int("value_dtype", int64_t(DType::f32)));
    const std::vector<float> value = a.get_floats("value", {0.0f});
    const std::vector<int64_t> exact = a.get_ints("value_int");  // integers kept exactly
    if (!readable(t)) bad("value has an unsupported dtype");
    const double fill = !exact.empty() ? double(exact[0]) : value.empty() ? 0.0 : double(value[0]);
    Ct r{shape, t, std::vector<double>(size_t(checked_numel(shape, bad)), fill)};
    return one(r);
  }
  if (op == "Range") {
    const double start = scalar(0), limit = scalar(1), delta = scalar(2);
    if (delta == 0) bad("Range delta 0");
    const double count = std::max(0.0, std::ceil((limit - start) / delta));
    if (!(count <= double(kMaxFoldElements))) bad("Range too long");
    const auto n = int64_t(count);
    Ct r{{n}, in[0].dtype, {}};
    for (int64_t i = 0; i < n; ++i) r.v.push_back(start + double(i) * delta);
    return one(r);
  }
  if (op == "Trilu") {  // torch.triu / tril of a constant (a causal mask built in forward)
    Ct r = in[0];
    const auto rank = r.shape.size();
    if (rank < 2) bad("Trilu needs a tensor of rank 2 or more");
    const double kd = has(1) ? scalar(1) : 0.0;
    const int64_t rows = r.shape[rank - 2], cols = r.shape[rank - 1];
    if (!(std::fabs(kd) <= double(rows + cols))) bad("Trilu's k is out of range");  // also NaN; beyond it all or nothing is kept
    const auto k = int64_t(kd);
    const bool upper = a.get_int("upper", 1) != 0;
    for (int64_t flat = 0; flat < r.n(); ++flat) {
      const int64_t i = (flat / cols) % rows, j = flat % cols;
      if (upper ? j - i < k : j - i > k) r.v[size_t(flat)] = 0;
    }
    return one(r);
  }
  if (op == "ReduceProd") {  // the element count of a shape (x.std(dim)'s divisor, as the exporter writes it)
    const Ct& x = in[0];
    const auto rank = int64_t(x.shape.size());
    std::vector<int64_t> axes = has(1) ? ints(in[1]) : a.get_ints("axes");
    if (axes.empty() && a.get_int("noop_with_empty_axes", 0) == 0)
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    std::vector<bool> reduced(size_t(rank), false);
    for (int64_t ax : axes) {
      const int64_t n = norm_axis(ax, rank, bad);
      if (reduced[size_t(n)]) bad("axes repeat an axis");
      reduced[size_t(n)] = true;
    }
    const bool keep = a.get_int("keepdims", 1) != 0;
    Shape out, kept_dims;
    for (int64_t i = 0; i < rank; ++i) {
      if (!reduced[size_t(i)]) kept_dims.push_back(x.shape[size_t(i)]);
      if (!reduced[size_t(i)] || keep) out.push_back(reduced[size_t(i)] ? 1 : x.shape[size_t(i)]);
    }
    Ct r{out, x.dtype, std::vector<double>(size_t(checked_numel(out, bad)), 1.0)};
    const std::vector<int64_t> st = strides_of(x.shape), kst = strides_of(kept_dims);
    for (int64_t flat = 0; flat < x.n(); ++flat) {
      int64_t o = 0;
      for (int64_t d = 0, k = 0; d < rank; ++d)
        if (!reduced[size_t(d)]) o += (flat / st[size_t(d)]) % x.shape[size_t(d)] * kst[size_t(k++)];
      r.v[size_t(o)] *= x.v[size_t(flat)];
    }
    if (r.dtype == DType::f32)
      for (double& v : r.v) v = double(float(v));
    return one(r);
  }
  if (op == "Transpose") {
    const Ct& x = in[0];
    const auto rank = int64_t(x.shape.size());
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) perm[size_t(i)] = rank - 1 - i;
    perm = a.get_ints("perm", perm);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    bool ok = int64_t(perm.size()) == rank;
    for (size_t i = 0; ok && i < perm.size(); ++i) {
      ok = perm[i] >= 0 && perm[i] < rank && !seen[size_t(perm[i])];
      if (ok) seen[size_t(perm[i])] = true;
    }
    if (!ok) bad("perm is not a permutation of the input's axes");
    Shape out(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) out[size_t(i)] = x.shape[size_t(perm[size_t(i)])];
    Ct r{out, x.dtype, std::vector<double>(size_t(x.n()))};
    const std::vector<int64_t> ist = strides_of(x.shape), ost = strides_of(out);
    for (int64_t flat = 0; flat < r.n(); ++flat) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d) src += (flat / ost[size_t(d)]) % out[size_t(d)] * ist[size_t(perm[size_t(d)])];
      r.v[size_t(flat)] = x.v[size_t(src)];
    }
    return one(r);
  }
  return std::nullopt;
}

}  // namespace

bool is_parameter(const Graph& g, const Value& v) {
  if (!v.initializer || v.desc.dtype != DType::f32 || v.comparison_only) return false;
  // Told to train the exporter's folded copies too, those are parameters as well.
  return !exporter_named(v.name) || (g.train_folded && numel(v.desc.shape) > 1);
}

namespace {

// Whatever its inputs, the node's outputs are not floats: no gradient flows through it.
bool ends_float_paths(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  static const std::set<std::string> ops = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Xor",
                                            "IsNaN", "IsInf", "Shape", "Size", "ArgMax", "ArgMin", "NonZero"};
  if (ops.count(n.op_type)) return true;
  if (n.op_type != "Cast") return false;
  // ONNX TensorProto data types: FLOAT 1, FLOAT16 10, DOUBLE 11, BFLOAT16 16.
  const int64_t to = n.attrs.get_int("to", 1);
  return to != 1 && to != 10 && to != 11 && to != 16;
}

}  // namespace

void mark_comparison_only(Graph& g) {
  std::vector<bool> reaches(g.values.size(), false);  // a path of float values leads to an output
  for (ValueId v : g.outputs) reaches[size_t(v)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const Node& n = g.nodes[i];
    if (ends_float_paths(n)) continue;
    bool any = false;
    for (ValueId o : n.outputs) any = any || (o != kNoValue && reaches[size_t(o)]);
    if (!any) continue;
    for (ValueId in : n.inputs)
      if (in != kNoValue) reaches[size_t(in)] = true;
  }
  for (size_t v = 0; v < g.values.size(); ++v) {
    Value& val = g.values[v];
    val.comparison_only = val.initializer && val.desc.dtype == DType::f32 && !val.consumers.empty() && !reaches[v];
  }
}

bool exporter_named(const std::string& name) { return name.rfind("onnx::", 0) == 0 || name.rfind('/', 0) == 0; }

bool try_fold(Graph& g, Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  // Shape needs only its input's shape; every other op needs the contents of all its inputs.
  const bool shape_only = node.op_type == "Shape";
  std::vector<const Value*> vals;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == kNoValue) {
      vals.push_back(nullptr);
      continue;
    }
    const Value& v = g.values[size_t(node.inputs[i])];
    if (!v.known) return false;
    if (!shape_only) {
      if (!v.contents() || is_parameter(g, v) || !readable(v.desc.dtype) || numel(v.desc.shape) > kMaxFoldElements) return false;
      if (int64_t(v.desc.shape.size()) > kMaxFoldRank) return false;
      for (int64_t d : v.desc.shape)
        if (d > kMaxFoldElements) return false;
    }
    vals.push_back(&v);
  }
  if (vals.empty()) return false;
  std::vector<Ct> in;
  for (const Value* v : vals) in.push_back(v && !shape_only ? read(*v) : Ct{});
  while (!in.empty() && vals[in.size() - 1] == nullptr) in.pop_back();  // trailing absent optionals
  auto bad = [&](const std::string& why) {
    throw Error(Where{.file = g.source_file, .node = node.name, .op = node.op_type}, "at compile time: " + why);
  };
  std::optional<std::vector<Ct>> out = evaluate(node, in, vals, bad);
  if (!out) return false;
  if (out->size() != node.outputs.size()) return false;
  if (!shape_only)
    for (ValueId in : node.inputs)
      if (in != kNoValue) g.values[size_t(in)].folded_into_plan = true;
  for (size_t k = 0; k < out->size(); ++k) {
    Value& v = g.values[size_t(node.outputs[k])];
    v.desc = TensorDesc{(*out)[k].shape, (*out)[k].dtype};
    v.data = bytes_of((*out)[k]);
    v.known = true;
  }
  return true;
}

}  // namespace of::compiler
