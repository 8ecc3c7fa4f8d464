// SPDX-License-Identifier: Apache-2.0
// LSTM, GRU and RNN as torch exports nn.LSTM, nn.GRU and nn.RNN (layout 0: X [seq, batch, input];
// one layer per node, forward, reverse or bidirectional; the default activations, and the RNN's
// Tanh or Relu; GRU with linear_before_reset = 1). What torch never writes is refused by name:
// peepholes, sequence_lens, clip, input_forget, other activations, layout 1, GRU's
// linear_before_reset = 0. Each runs as one kernel per node (kernels/cpu/lstm.cpp, gru.cpp,
// rnn.cpp); in training the LSTM and GRU kernels also write their gates and one state per step,
// which the backward kernel (through time) reads; the RNN's backward needs only Y.
#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

struct Recurrent {
  const char* type;
  const char* kernel;
  int64_t gates;
  size_t max_inputs, outputs;   // ONNX's: LSTM X W R B sequence_lens initial_h initial_c P; GRU up to initial_h
  const char* activations;      // the default, per direction
  bool saves = true;            // training saves gates and per-step states (the RNN: Y is all it needs)
};

constexpr Recurrent kLstm{"LSTM", "lstm", 4, 8, 3, "Sigmoid,Tanh,Tanh"};
constexpr Recurrent kGru{"GRU", "gru", 3, 6, 2, "Sigmoid,Tanh"};
constexpr Recurrent kRnn{"RNN", "rnn", 1, 6, 2, "Tanh", false};

// Saved outputs follow the model's (padded to all of them): gates, then the per-step state.
size_t saved_at(const Recurrent& r) { return r.outputs; }

int64_t directions(OpCtx& c) {
  const std::string dir = c.attrs().get_str("direction", "forward");
  if (dir == "forward" || dir == "reverse") return 1;
  if (dir == "bidirectional") return 2;
  c.fail("attribute direction is '{}', expected forward, reverse or bidirectional", dir);
}

void infer_recurrent(OpCtx& c, const Recurrent& r) {
  c.expect_arity(3, r.max_inputs, r.outputs);
  for (size_t i : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(5), size_t(6)})
    if (i < r.max_inputs && c.has_in(i)) c.expect_float(i);
  if (c.has_in(4)) c.fail("input 4 (sequence_lens) is given: sequences of different lengths are not supported");
  if (r.max_inputs > 7 && c.has_in(7)) c.fail("input 7 (P, peepholes) is given: peephole connections are not supported");
  if (c.attrs().has("clip")) c.fail("attribute clip is set: cell clipping is not supported");
  if (c.attrs().get_int("input_forget", 0) != 0) c.fail("attribute input_forget = 1 is not supported");
  if (c.attrs().get_int("layout", 0) != 0) c.fail("attribute layout = 1 (batch first) is not supported; torch exports layout 0");
  if (r.gates == 3 && c.attrs().get_int("linear_before_reset", 0) != 1)
    c.fail("attribute linear_before_reset = 0 is not supported (torch's nn.GRU exports 1)");
  const int64_t dirs = directions(c);
  std::string want = r.activations;
  if (dirs == 2) want += std::string(",") + r.activations;
  // nn.RNN(nonlinearity="relu") writes Relu for each direction
  const std::string relu = dirs == 2 ? "Relu,Relu" : "Relu";
  if (c.attrs().has("activations") && c.attrs().get_str("activations") != want && !(r.gates == 1 && c.attrs().get_str("activations") == relu))
    c.fail("attribute activations is '{}'; only {} is supported", c.attrs().get_str("activations"),
           r.gates == 1 ? fmt::format("'{}' or '{}'", want, relu) : fmt::format("the default '{}'", want));
  if (c.attrs().has("activation_alpha") || c.attrs().has("activation_beta"))
    c.fail("attributes activation_alpha / activation_beta are not supported");
  const Shape x = c.in(0).shape;  // a copy: add_output below grows the graph's values
  if (x.size() != 3) c.fail("input 0 (X) has shape {}, expected [seq, batch, input]", shape_str(x));
  const int64_t hidden = c.attrs().get_int("hidden_size", 0);
  if (hidden <= 0) c.fail("attribute hidden_size is {}, expected a positive size", hidden);
  const int64_t gh = r.gates * hidden;
  auto expect_shape = [&](size_t i, const char* what, const Shape& want_shape) {
    if (c.has_in(i) && c.in(i).shape != want_shape)
      c.fail("input {} ({}) has shape {}, expected {}", i, what, shape_str(c.in(i).shape), shape_str(want_shape));
  };
  expect_shape(1, "W", {dirs, gh, x[2]});
  expect_shape(2, "R", {dirs, gh, hidden});
  expect_shape(3, "B", {dirs, 2 * gh});
  expect_shape(5, "initial_h", {dirs, x[1], hidden});
  if (r.gates == 4) expect_shape(6, "initial_c", {dirs, x[1], hidden});
  const TensorDesc state{{dirs, x[1], hidden}, DType::f32};
  // The kernel writes every output: the ones the model leaves out are added (nothing reads them).
  static constexpr const char* kNames[] = {"Y", "Y_h", "Y_c"};
  while (c.num_outputs() < r.outputs) c.add_output(kNames[c.num_outputs()], state);
  c.out(0) = TensorDesc{{x[0], dirs, x[1], hidden}, DType::f32};
  for (size_t o = 1; o < r.outputs; ++o) c.out(o) = state;
  if (c.training() && r.saves) {
    c.add_output("saved_gates", TensorDesc{{dirs, x[0], x[1], gh}, DType::f32});
    c.add_output("saved_state", TensorDesc{{dirs, x[0], x[1], hidden}, DType::f32});
  }
}

void lower_recurrent(OpCtx& c, const Recurrent& r) {
  Attrs a;
  a.set_int("has_bias", c.has_in(3) ? 1 : 0);
  a.set_int("has_h0", c.has_in(5) ? 1 : 0);
  if (r.gates == 4) a.set_int("has_c0", c.has_in(6) ? 1 : 0);
  a.set_int("reverse", c.attrs().get_str("direction", "forward") == "reverse" ? 1 : 0);
  if (r.gates == 1) a.set_int("relu", c.attrs().get_str("activations", "Tanh").starts_with("Relu") ? 1 : 0);
  c.set_kernel(r.kernel, std::move(a));
}

// One backward kernel through time: it reads X, W, R, Y, the saved gates and states (where the
// kernel saves them), the output gradients that exist and the initial states, and writes every
// input's gradient.
void grad_recurrent(GradCtx& g, const Recurrent& r) {
  const size_t saved = saved_at(r);
  if (g.node().outputs.size() != saved + (r.saves ? 2 : 0)) g.fail("the forward kernel saved nothing for the backward pass");
  std::vector<ValueId> in = {g.in(0), g.in(1), g.in(2), g.out(0)};
  if (r.saves) in.insert(in.end(), {g.out(saved), g.out(saved + 1)});
  Attrs a;
  a.set_int("reverse", g.attrs().get_int("reverse", 0));
  if (r.gates == 1) a.set_int("relu", g.attrs().get_int("relu", 0));
  static constexpr const char* kGradFlags[] = {"has_dy", "has_dyh", "has_dyc"};
  for (size_t o = 0; o < r.outputs; ++o) {
    a.set_int(kGradFlags[o], g.out_grad(o) != kNoValue ? 1 : 0);
    if (g.out_grad(o) != kNoValue) in.push_back(g.out_grad(o));
  }
  const auto has = [&](size_t i) { return i < g.node().inputs.size() && g.in(i) != kNoValue; };
  a.set_int("has_h0", has(5) ? 1 : 0);
  if (has(5)) in.push_back(g.in(5));
  if (r.gates == 4) {
    a.set_int("has_c0", has(6) ? 1 : 0);
    if (has(6)) in.push_back(g.in(6));
  }
  const Shape& w = g.desc(g.in(1)).shape;
  const TensorDesc state = g.desc(g.out(1));
  std::vector<TensorDesc> descs = {g.desc(g.in(0)), g.desc(g.in(1)), g.desc(g.in(2)),
                                   TensorDesc{{w[0], 2 * w[1]}, DType::f32}, state};
  if (r.gates == 4) descs.push_back(state);
  const std::vector<ValueId> d = g.emit_n(std::string(r.type) + "Grad", std::string(r.kernel) + "_grad", in, a, descs);
  // d: dX, dW, dR, dB, d initial_h (, d initial_c): the inputs 0, 1, 2, 3, 5 (, 6).
  const size_t input_of[] = {0, 1, 2, 3, 5, 6};
  for (size_t k = 0; k < d.size(); ++k)
    if (has(input_of[k]) && g.wants(input_of[k])) g.add_in_grad(input_of[k], d[k]);
}

// Sequences are independent: the batch splits (axis 1 of X and the states, axis 2 of Y and of the
// saved per-step tensors); the weights stay whole and their gradients are partial sums.
void forward_sbp(const Graph&, const Node& n, std::vector<Signature>& out) {
  std::vector<Sbp> in(n.inputs.size(), Sbp::B());
  in[0] = Sbp::S(1);
  for (size_t i : {size_t(5), size_t(6)})
    if (i < in.size()) in[i] = Sbp::S(1);
  std::vector<Sbp> outs(n.outputs.size(), Sbp::S(1));  // the final states
  outs[0] = Sbp::S(2);                                  // Y [seq, dirs, batch, hidden]
  if (outs.size() >= 4)                                 // training: the saved gates and states
    outs[outs.size() - 1] = outs[outs.size() - 2] = Sbp::S(2);
  out.push_back(Signature{in, outs, Signature::Tweak::none, true});
}

// (X, W, R, Y, gates, states (not the RNN's), then dY, dY_h, dY_c, initial_h, initial_c where
// present) -> (dX, dW, dR, dB, d initial_h, d initial_c).
void grad_sbp(const Graph&, const Node& n, std::vector<Signature>& out) {
  std::vector<Sbp> in = {Sbp::S(1), Sbp::B(), Sbp::B(), Sbp::S(2)};
  if (n.kernel != "rnn_grad") in.insert(in.end(), {Sbp::S(2), Sbp::S(2)});
  const std::pair<const char*, Sbp> optional[] = {{"has_dy", Sbp::S(2)}, {"has_dyh", Sbp::S(1)}, {"has_dyc", Sbp::S(1)},
                                                  {"has_h0", Sbp::S(1)}, {"has_c0", Sbp::S(1)}};
  for (const auto& [flag, sbp] : optional)
    if (n.kernel_attrs.get_int(flag, 0) != 0) in.push_back(sbp);
  std::vector<Sbp> outs = {Sbp::S(1), Sbp::P(), Sbp::P(), Sbp::P()};
  while (outs.size() < n.outputs.size()) outs.push_back(Sbp::S(1));
  out.push_back(Signature{in, outs, Signature::Tweak::none, true});
}

const std::vector<AttrRule> kRules = {int_attr("hidden_size", 1, kMaxDim), int_attr("input_forget", 0, 1),
                                      int_attr("layout", 0, 1), int_attr("linear_before_reset", 0, 1)};

}  // namespace

OpDef lstm_def() {
  return {"LSTM", [](OpCtx& c) { infer_recurrent(c, kLstm); }, [](OpCtx& c) { lower_recurrent(c, kLstm); },
          [](GradCtx& g) { grad_recurrent(g, kLstm); }, kRules,
          {sbp_rule("lstm", forward_sbp), sbp_rule("lstm_grad", grad_sbp)}};
}
OpDef gru_def() {
  return {"GRU", [](OpCtx& c) { infer_recurrent(c, kGru); }, [](OpCtx& c) { lower_recurrent(c, kGru); },
          [](GradCtx& g) { grad_recurrent(g, kGru); }, kRules,
          {sbp_rule("gru", forward_sbp), sbp_rule("gru_grad", grad_sbp)}};
}
OpDef rnn_def() {
  return {"RNN", [](OpCtx& c) { infer_recurrent(c, kRnn); }, [](OpCtx& c) { lower_recurrent(c, kRnn); },
          [](GradCtx& g) { grad_recurrent(g, kRnn); }, kRules,
          {sbp_rule("rnn", forward_sbp), sbp_rule("rnn_grad", grad_sbp)}};
}

}  // namespace of::compiler
