// SPDX-License-Identifier: Apache-2.0
// OpCtx helpers shared by every OpDef, and the shared shape rules.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "compiler/ops/const_eval.h"
#include "compiler/ops/op_def.h"

namespace of::compiler {

const TensorDesc& OpCtx::in(size_t i) const {
  if (!has_in(i)) fail("input {} is required but absent", i);
  const Value& v = g_.values[node_.inputs[i]];
  OF_ASSERT(v.known, "input shape unknown before infer: " + v.name);
  return v.desc;
}

const std::vector<uint8_t>* OpCtx::const_data(size_t i) const {
  if (!has_in(i)) return nullptr;
  const Value& v = g_.values[node_.inputs[i]];
  return v.contents();
}

bool OpCtx::parameter(size_t i) const { return has_in(i) && is_parameter(g_, g_.values[node_.inputs[i]]); }

std::vector<int64_t> OpCtx::const_ints(size_t i) const {
  const std::vector<uint8_t>* d = const_data(i);
  if (!d) fail("input {} must be a constant (an initializer or a Constant node)", i);
  const TensorDesc& desc = in(i);
  std::vector<int64_t> out(size_t(numel(desc.shape)));
  if (out.empty()) return out;  // no bytes to copy (and memcpy may not take a null pointer)
  if (desc.dtype == DType::i64) {
    std::memcpy(out.data(), d->data(), out.size() * 8);
  } else if (desc.dtype == DType::i32) {
    for (size_t k = 0; k < out.size(); ++k) {
      int32_t x;
      std::memcpy(&x, d->data() + 4 * k, 4);
      out[k] = x;
    }
  } else {
    fail("input {} must hold integers, has {}", i, dtype_name(desc.dtype));
  }
  return out;
}

TensorDesc& OpCtx::out(size_t i) {
  if (i >= node_.outputs.size()) fail("output {} requested but the node has {}", i, node_.outputs.size());
  Value& v = g_.values[node_.outputs[i]];
  v.known = true;
  return v.desc;
}

bool OpCtx::drop_output_if_unused(size_t i) {
  if (i >= node_.outputs.size()) return true;
  Value& v = g_.values[node_.outputs[i]];
  if (!v.consumers.empty() || v.graph_output) return false;
  v.producer = -1;
  v.known = true;  // an orphan nothing reads; its desc stays empty
  node_.outputs.erase(node_.outputs.begin() + long(i));
  return true;
}

ValueId OpCtx::add_output(const std::string& suffix, TensorDesc desc) {
  // A node a composite emits (ExpandCtx) joins the graph later, and relink gives its outputs
  // their producer then.
  const std::less<const Node*> before;
  const bool in_graph = !before(&node_, g_.nodes.data()) && before(&node_, g_.nodes.data() + g_.nodes.size());
  const ValueId v = g_.add_value(node_.name + "/" + suffix);  // node_ stays valid: values grow, nodes do not
  g_.values[size_t(v)].desc = std::move(desc);
  g_.values[size_t(v)].known = true;
  g_.values[size_t(v)].producer = in_graph ? NodeId(&node_ - g_.nodes.data()) : NodeId(-1);
  node_.outputs.push_back(v);
  return v;
}

void OpCtx::expect_arity(size_t lo, size_t hi, size_t max_out) const {
  size_t n = node_.inputs.size();
  while (n > 0 && node_.inputs[n - 1] == kNoValue) --n;
  if (n < lo || n > hi) {
    if (lo == hi) fail("expects {} inputs, has {}", lo, n);
    fail("expects {} to {} inputs, has {}", lo, hi, n);
  }
  if (node_.outputs.empty() || node_.outputs.size() > max_out)
    fail("expects {} output{}, has {}", max_out == 1 ? "1" : fmt::format("1 to {}", max_out),
         max_out == 1 ? "" : "s", node_.outputs.size());
}

void OpCtx::expect_float(size_t i) const {
  if (in(i).dtype != DType::f32) fail("input {} has dtype {}, only f32 is supported", i, dtype_name(in(i).dtype));
}

int64_t OpCtx::axis(int64_t a, int64_t rank, std::string_view what) const {
  if (a < -rank || a >= rank) fail("{} {} is out of range for rank {}", what, a, rank);
  return a < 0 ? a + rank : a;
}

void OpCtx::set_kernel(std::string name, Attrs attrs) {
  node_.kernel = std::move(name);
  node_.kernel_attrs = std::move(attrs);
  node_.runtime_inputs.clear();
  for (ValueId v : node_.inputs)
    if (v != kNoValue) node_.runtime_inputs.push_back(v);
}

void OpCtx::set_runtime_inputs(std::vector<size_t> input_indices) {
  node_.runtime_inputs.clear();
  for (size_t i : input_indices) node_.runtime_inputs.push_back(node_.inputs.at(i));
}

void check_attrs(const OpDef& def, const OpCtx& ctx) {
  for (const AttrRule& rule : def.attrs) {
    const Attr* a = ctx.attrs().find(std::string(rule.name));
    if (!a) continue;
    // "in [lo, hi]", or only the side that was crossed when the other is loose.
    auto range = [&rule](double v) {
      const bool real = rule.kind == AttrRule::Kind::real;
      auto num = [real](double x) { return real ? fmt::format("{}", x) : fmt::format("{}", int64_t(x)); };
      if (v < rule.lo && rule.hi >= kMaxDim) return ">= " + num(rule.lo);
      if (v > rule.hi && rule.lo <= -kMaxDim) return "<= " + num(rule.hi);
      return fmt::format("in [{}, {}]", num(rule.lo), num(rule.hi));
    };
    switch (rule.kind) {
      case AttrRule::Kind::boolean:
      case AttrRule::Kind::integer: {
        if (a->ints.size() != 1 || !a->floats.empty() || !a->str.empty())
          ctx.fail("attribute {} must be one integer", rule.name);
        const int64_t v = a->ints[0];
        if (double(v) < rule.lo || double(v) > rule.hi) {
          if (rule.kind == AttrRule::Kind::boolean) ctx.fail("attribute {} = {} must be 0 or 1", rule.name, v);
          ctx.fail("attribute {} = {} must be {}", rule.name, v, range(double(v)));
        }
        break;
      }
      case AttrRule::Kind::integers:
        if (!a->floats.empty() || !a->str.empty()) ctx.fail("attribute {} must be a list of integers", rule.name);
        for (int64_t v : a->ints)
          if (double(v) < rule.lo || double(v) > rule.hi)
            ctx.fail("attribute {} = [{}] must hold values {}", rule.name, fmt::join(a->ints, ","), range(double(v)));
        break;
      case AttrRule::Kind::real: {
        if (a->floats.size() != 1 || !a->ints.empty() || !a->str.empty()) ctx.fail("attribute {} must be one float", rule.name);
        const float v = a->floats[0];
        if (!std::isfinite(v)) ctx.fail("attribute {} = {} must be a finite number", rule.name, v);
        if (double(v) < rule.lo || double(v) > rule.hi) ctx.fail("attribute {} = {} must be {}", rule.name, v, range(double(v)));
        break;
      }
    }
  }
}

bool is_composite(const OpDef& def, const OpCtx& node) { return def.expand && (!def.expands || def.expands(node)); }

void lower_composite(OpCtx&) {}

Shape broadcast_shapes(const OpCtx& ctx, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes {} and {} do not broadcast (axis {}: {} vs {})", shape_str(a), shape_str(b), k, da, db);
    out[k] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace of::compiler
