// SPDX-License-Identifier: Apache-2.0
// The signature rules, one family per group of kernels. A rule only lists signatures that are
// exact for the kernel's arithmetic; splits that do not divide evenly are dropped later.
#include "compiler/parallel/signatures.h"

#include <algorithm>
#include <string_view>

namespace of::compiler {
namespace {

using Sig = Signature;

const Shape& shape_of(const Graph& g, ValueId v) { return g.values[size_t(v)].desc.shape; }

Sig all_broadcast(const Node& n) {
  return Sig{std::vector<Sbp>(n.inputs.size(), Sbp::B()), std::vector<Sbp>(n.outputs.size(), Sbp::B())};
}

bool is(std::string_view kernel, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), kernel) != names.end();
}

// Elementwise (numpy broadcasting): split any output axis; an input that is broadcast along it
// (missing or of size 1 there) is B. `linear`: partial sums pass through (P,...,P -> P). The last
// axis comes first: where costs tie (after a partial sum), a feature split lets the next matmul
// split its reduction, not its rows.
void elementwise(const Graph& g, const Node& n, bool linear, std::vector<Sig>& out) {
  const Shape& y = shape_of(g, n.outputs[0]);
  for (size_t a = y.size(); a-- > 0;) {
    if (y[a] <= 1) continue;
    Sig s{{}, {Sbp::S(int64_t(a))}, Sig::Tweak::none, true};
    for (ValueId v : n.inputs) {
      if (v == kNoValue) {
        s.in.push_back(Sbp::B());
        continue;
      }
      const Shape& x = shape_of(g, v);
      const int64_t ax = int64_t(a) - int64_t(y.size() - x.size());
      s.in.push_back(ax >= 0 && x[size_t(ax)] == y[a] ? Sbp::S(ax) : Sbp::B());
    }
    out.push_back(std::move(s));
  }
  if (!linear) return;
  for (ValueId v : n.inputs)
    if (v == kNoValue || shape_of(g, v) != y) return;
  out.push_back(Sig{std::vector<Sbp>(n.inputs.size(), Sbp::P()), {Sbp::P()}, Sig::Tweak::none, true});
}

// Reshape (a copy): a split of input axis a is a split of output axis b when the elements before
// them are the same count and one of the two dims is a multiple of the other (the split cuts the
// outer factor: [B,T,C] S(2) -> [B,T,H,D] S(2), heads; [B,T,C] S(0) -> [B*T,C] S(0), rows).
// Partial sums stay partial.
void reshape(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const Shape& x = shape_of(g, n.inputs[0]);
  const Shape& y = shape_of(g, n.outputs[0]);
  int64_t before_x = 1;
  for (size_t a = 0; a < x.size(); before_x *= x[a], ++a) {
    if (x[a] <= 1) continue;
    int64_t before_y = 1;
    for (size_t b = 0; b < y.size() && before_y <= before_x; before_y *= y[b], ++b)
      if (before_y == before_x && y[b] > 1 && (x[a] % y[b] == 0 || y[b] % x[a] == 0)) {
        out.push_back(Sig{{Sbp::S(int64_t(a))}, {Sbp::S(int64_t(b))}, Sig::Tweak::none, true});
        break;
      }
  }
  out.push_back(Sig{{Sbp::P()}, {Sbp::P()}, Sig::Tweak::none, true});
}

// gemm: Y = act(alpha * op(A) op(B) + beta * C), op(A) [M,K], op(B) [K,N], C broadcast to [M,N].
void gemm(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const bool ta = n.kernel_attrs.get_int("trans_a", 0) != 0, tb = n.kernel_attrs.get_int("trans_b", 0) != 0;
  const bool has_c = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  const Shape c = has_c ? shape_of(g, n.inputs[2]) : Shape{};
  const Shape& y = shape_of(g, n.outputs[0]);
  const int64_t m_a = ta ? 1 : 0, k_a = ta ? 0 : 1, k_b = tb ? 1 : 0, n_b = tb ? 0 : 1;
  auto with_c = [&](std::vector<Sbp> ab, Sbp c_sbp) {
    if (has_c) ab.push_back(c_sbp);
    return ab;
  };
  // C along M: only a [M,N] or [M,1] bias is split with the rows.
  const Sbp c_rows = c.size() == 2 && c[0] == y[0] && y[0] > 1 ? Sbp::S(0) : Sbp::B();
  const Sbp c_cols = !c.empty() && c.back() == y[1] && y[1] > 1 ? Sbp::S(int64_t(c.size()) - 1) : Sbp::B();
  out.push_back(Sig{with_c({Sbp::S(m_a), Sbp::B()}, c_rows), {Sbp::S(0)}, Sig::Tweak::none, true});
  out.push_back(Sig{with_c({Sbp::B(), Sbp::S(n_b)}, c_cols), {Sbp::S(1)}, Sig::Tweak::none, true});
  // Splitting K gives partial sums, which an activation would not survive.
  if (n.kernel_attrs.get_str("activation").empty())
    out.push_back(Sig{with_c({Sbp::S(k_a), Sbp::S(k_b)}, Sbp::B()), {Sbp::P()}, has_c ? Sig::Tweak::first_adds_bias : Sig::Tweak::none, true});
}

// matmul: [..., M, K] x [..., K, N] (B may be 2-D and then is shared by every batch).
void matmul(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const Shape& a = shape_of(g, n.inputs[0]);
  const Shape& b = shape_of(g, n.inputs[1]);
  const Shape& y = shape_of(g, n.outputs[0]);
  if (a.size() < 2 || b.size() < 2) return;
  const auto ra = int64_t(a.size()), rb = int64_t(b.size()), ry = int64_t(y.size());
  for (int64_t d = 0; d < ry - 2; ++d) {  // batch axes
    const int64_t da = d - (ry - ra), db = d - (ry - rb);
    const Sbp sa = da >= 0 && a[size_t(da)] == y[size_t(d)] ? Sbp::S(da) : Sbp::B();
    const Sbp sb = db >= 0 && b[size_t(db)] == y[size_t(d)] ? Sbp::S(db) : Sbp::B();
    out.push_back(Sig{{sa, sb}, {Sbp::S(d)}, Sig::Tweak::none, true});
  }
  out.push_back(Sig{{Sbp::S(ra - 2), Sbp::B()}, {Sbp::S(ry - 2)}, Sig::Tweak::none, true});
  out.push_back(Sig{{Sbp::B(), Sbp::S(rb - 1)}, {Sbp::S(ry - 1)}, Sig::Tweak::none, true});
  if (rb == 2) out.push_back(Sig{{Sbp::S(ra - 1), Sbp::S(0)}, {Sbp::P()}, Sig::Tweak::none, true});
}

void reduce_sum(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const Shape& x = shape_of(g, n.inputs[0]);
  const std::vector<int64_t> axes = n.kernel_attrs.get_ints("axes");
  const bool keep = n.kernel_attrs.get_int("keepdims", 1) != 0;
  for (int64_t a = 0; a < int64_t(x.size()); ++a) {
    const bool reduced = axes.empty() || std::count(axes.begin(), axes.end(), a) > 0;
    if (reduced) {
      out.push_back(Sig{{Sbp::S(a)}, {Sbp::P()}, Sig::Tweak::none, true});
      continue;
    }
    int64_t ya = a;
    if (!keep)
      for (int64_t r : axes) ya -= r < a ? 1 : 0;
    out.push_back(Sig{{Sbp::S(a)}, {Sbp::S(ya)}, Sig::Tweak::none, true});
  }
  out.push_back(Sig{{Sbp::P()}, {Sbp::P()}, Sig::Tweak::none, true});
}

// Kernels that treat the rows of a batch independently: `batched` says which inputs (and outputs)
// are split along axis 0; the rest are per-model tensors (weights, scalars) and stay B. With
// `out_partial`, the outputs are sums over the batch (a weight gradient): P.
void batch_rows(const Node& n, std::vector<bool> batched, bool out_partial, Sig::Tweak tweak, std::vector<Sig>& out) {
  batched.resize(n.inputs.size(), false);
  Sig s{{}, {}, tweak, true};
  for (size_t i = 0; i < n.inputs.size(); ++i) s.in.push_back(batched[i] ? Sbp::S(0) : Sbp::B());
  for (size_t o = 0; o < n.outputs.size(); ++o) s.out.push_back(out_partial ? Sbp::P() : Sbp::S(0));
  out.push_back(std::move(s));
}

// An optimizer update: the weight, its gradient and state are split alike (or all B); the step's
// scalars (learning rate, step) are B. Outputs are the weight and state, written in place.
void update(const Graph& g, const Node& n, std::vector<Sig>& out) {
  const Shape& w = shape_of(g, n.inputs[0]);
  for (size_t a = 0; a < w.size(); ++a) {
    if (w[a] <= 1) continue;
    Sig s{{}, std::vector<Sbp>(n.outputs.size(), Sbp::S(int64_t(a))), Sig::Tweak::none, true};
    for (ValueId v : n.inputs) s.in.push_back(v != kNoValue && shape_of(g, v) == w ? Sbp::S(int64_t(a)) : Sbp::B());
    out.push_back(std::move(s));
  }
}

void transpose(const Node& n, std::vector<Sig>& out) {
  const std::vector<int64_t> perm = n.kernel_attrs.get_ints("perm");
  for (size_t o = 0; o < perm.size(); ++o) out.push_back(Sig{{Sbp::S(perm[o])}, {Sbp::S(int64_t(o))}, Sig::Tweak::none, true});
}

// Single-axis kernels (softmax family, concat, slice): any other axis may be split.
void other_axes(const Graph& g, const Node& n, int64_t axis, std::vector<Sig>& out) {
  const Shape& y = shape_of(g, n.outputs[0]);
  for (int64_t a = 0; a < int64_t(y.size()); ++a) {
    if (a == axis || y[size_t(a)] <= 1) continue;
    Sig s{std::vector<Sbp>(n.inputs.size(), Sbp::S(a)), std::vector<Sbp>(n.outputs.size(), Sbp::S(a)), Sig::Tweak::none, true};
    out.push_back(std::move(s));
  }
}

}  // namespace

std::vector<Signature> signatures_of(const Graph& g, const Node& n) {
  std::vector<Sig> out;
  const std::string& k = n.kernel;
  if (is(k, {"add", "sub"})) {
    elementwise(g, n, true, out);
  } else if (is(k, {"mul", "div", "relu", "relu_grad", "sigmoid", "sigmoid_grad", "tanh", "tanh_grad", "delay"})) {
    elementwise(g, n, false, out);
  } else if (k == "copy") {
    reshape(g, n, out);
  } else if (k == "gemm") {
    gemm(g, n, out);
  } else if (k == "matmul") {
    matmul(g, n, out);
  } else if (k == "reduce_sum") {
    reduce_sum(g, n, out);
  } else if (k == "softmax_cross_entropy") {
    batch_rows(n, {true, true}, false, Sig::Tweak::mean_over_parts, out);
    out.back().out[0] = Sbp::P();  // the mean loss; the probabilities stay split
  } else if (k == "softmax_cross_entropy_grad") {
    batch_rows(n, {false, true, true}, false, Sig::Tweak::mean_over_parts, out);
  } else if (k == "mse_loss") {
    batch_rows(n, {true, true}, true, Sig::Tweak::mean_over_parts, out);
  } else if (k == "mse_loss_grad") {
    batch_rows(n, {false, true, true}, false, Sig::Tweak::mean_over_parts, out);
  } else if (k == "classify_metrics") {
    batch_rows(n, {true, true}, false, Sig::Tweak::none, out);
  } else if (is(k, {"conv", "batch_norm", "max_pool", "average_pool", "global_average_pool", "average_pool_grad",
                    "global_average_pool_grad"})) {
    batch_rows(n, {true}, false, Sig::Tweak::none, out);
  } else if (is(k, {"conv_grad_data"})) {
    batch_rows(n, {true, false}, false, Sig::Tweak::none, out);
  } else if (is(k, {"max_pool_grad"})) {
    batch_rows(n, {true, true}, false, Sig::Tweak::none, out);
  } else if (k == "conv_grad_weight") {
    batch_rows(n, {true, true}, true, Sig::Tweak::none, out);
  } else if (k == "accumulate") {
    // Linear in the gradient: partial sums are summed as they come and reduced once per step.
    const Shape& g0 = shape_of(g, n.inputs[0]);
    for (size_t a = 0; a < g0.size(); ++a)
      if (g0[a] > 1) out.push_back(Sig{{Sbp::S(int64_t(a)), Sbp::B(), Sbp::B()}, {Sbp::S(int64_t(a)), Sbp::B(), Sbp::B()}, Sig::Tweak::none, true});
    out.push_back(Sig{{Sbp::P(), Sbp::B(), Sbp::B()}, {Sbp::P(), Sbp::B(), Sbp::B()}, Sig::Tweak::none, true});
  } else if (is(k, {"sgd_update", "adam_update"})) {
    update(g, n, out);
  } else if (k == "transpose") {
    transpose(n, out);
  } else if (is(k, {"softmax", "log_softmax", "softmax_grad", "log_softmax_grad", "concat", "slice"})) {
    other_axes(g, n, n.kernel_attrs.get_int("axis", -1), out);
  }
  // Rules above name the inputs that carry data; inputs after those (a Reshape's shape, an
  // Unsqueeze's axes: small constants) are broadcast. A rule that names more inputs or outputs
  // than the node has does not describe it and is dropped (all-broadcast always remains).
  std::vector<Sig> fitted;
  for (Sig& s : out) {
    if (s.in.size() > n.inputs.size() || s.out.size() != n.outputs.size()) continue;
    s.in.resize(n.inputs.size(), Sbp::B());
    fitted.push_back(std::move(s));
  }
  fitted.push_back(all_broadcast(n));
  return fitted;
}

void apply_tweak(const Signature& s, int64_t coord, int64_t parts, Attrs& attrs) {
  switch (s.tweak) {
    case Signature::Tweak::none: return;
    case Signature::Tweak::mean_over_parts: attrs.set_float("scale", attrs.get_float("scale", 1.0f) / float(parts)); return;
    case Signature::Tweak::first_adds_bias:
      if (coord != 0) attrs.set_float("beta", 0.0f);
      return;
  }
}

}  // namespace of::compiler
