// SPDX-License-Identifier: Apache-2.0
// Einsum (torch.einsum) of one or two operands, a composite: written as the ops a person would
// write by hand, so that their gradients, SBP rules and kernels serve it. Letters only one
// operand has and the output lacks are summed first (ReduceSum); then each operand is transposed
// to [batch, free, contracted] (its own free letters: rows of the left operand, columns of the
// right), reshaped to three dims and multiplied (MatMul), and the product is reshaped and
// transposed to the output's order. One operand: sums and a transpose. "..." stands for the same
// leading dims in every operand that has it (and the output); a letter twice in one operand (a
// diagonal, a trace), more than two operands and dims that differ in size (broadcasting) are refused.
#include <algorithm>
#include <map>
#include <numeric>

#include "compiler/ops/ops.h"

namespace of::compiler {
namespace {

struct Equation {
  std::vector<std::string> operands;  // one label per dim (ellipsis dims as '0'..'9', 'A'..)
  std::string output;
};

// Parses "ab,bc->ac" for operands of the given ranks; the implicit form ("ab,bc") outputs the
// letters that occur once, in alphabetical order, after the ellipsis dims.
template <class Ctx>
Equation parse(const Ctx& c, const std::string& text, const std::vector<size_t>& ranks) {
  std::string eq;
  for (char ch : text)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  const std::string lhs = eq.substr(0, arrow);
  size_t from = 0;
  for (size_t comma; (comma = lhs.find(',', from)) != std::string::npos; from = comma + 1) terms.push_back(lhs.substr(from, comma - from));
  terms.push_back(lhs.substr(from));
  if (terms.size() != ranks.size()) c.fail("equation '{}' names {} operands, the node has {}", text, terms.size(), ranks.size());
  // Ellipsis dims get labels that letters cannot be: digits, as many as the widest ellipsis.
  size_t widest = 0;
  Equation out;
  for (size_t k = 0; k < terms.size(); ++k) {
    const std::string& t = terms[k];
    const size_t dots = t.find("...");
    const size_t letters = t.size() - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos ? letters != ranks[k] : letters > ranks[k])
      c.fail("equation '{}': operand {} has rank {}, its term '{}' does not fit it", text, k, ranks[k], t);
    std::string labels;
    for (size_t i = 0; i < t.size(); ++i) {
      if (dots != std::string::npos && i == dots) {
        const size_t n = ranks[k] - letters;
        if (n > 10) c.fail("equation '{}': an ellipsis of more than 10 dims", text);
        widest = std::max(widest, n);
        for (size_t d = 0; d < n; ++d) labels += char('0' + (10 - n + d));  // right-aligned: the last dim is '9'
        i += 2;
        continue;
      }
      const char ch = t[i];
      if (!std::isalpha(static_cast<unsigned char>(ch))) c.fail("equation '{}': '{}' is not a letter", text, ch);
      labels += ch;
    }
    out.operands.push_back(labels);
  }
  if (arrow != std::string::npos) {
    const std::string rhs = eq.substr(arrow + 2);
    const size_t dots = rhs.find("...");
    for (size_t i = 0; i < rhs.size(); ++i) {
      if (dots != std::string::npos && i == dots) {
        for (size_t d = 0; d < widest; ++d) out.output += char('0' + (10 - widest + d));
        i += 2;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(rhs[i]))) c.fail("equation '{}': '{}' is not a letter", text, rhs[i]);
      out.output += rhs[i];
    }
  } else {
    for (size_t d = 0; d < widest; ++d) out.output += char('0' + (10 - widest + d));
    std::map<char, int> count;
    for (const std::string& o : out.operands)
      for (char ch : o)
        if (std::isalpha(static_cast<unsigned char>(ch))) ++count[ch];
    for (const auto& [ch, n] : count)
      if (n == 1) out.output += ch;
  }
  for (size_t k = 0; k < out.operands.size(); ++k) {
    std::string sorted = out.operands[k];
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      c.fail("equation '{}': operand {} repeats a letter (a diagonal or trace), which is not supported", text, k);
  }
  std::string sorted = out.output;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) c.fail("equation '{}': the output repeats a letter", text);
  for (char ch : out.output)
    if (std::none_of(out.operands.begin(), out.operands.end(), [&](const std::string& o) { return o.find(ch) != std::string::npos; }))
      c.fail("equation '{}': output letter '{}' is in no operand", text, ch);
  return out;
}

// Each label's size; the same label must have the same size everywhere.
template <class Ctx>
std::map<char, int64_t> label_sizes(const Ctx& c, const Equation& e, const std::vector<Shape>& shapes) {
  std::map<char, int64_t> size;
  for (size_t k = 0; k < e.operands.size(); ++k)
    for (size_t i = 0; i < e.operands[k].size(); ++i) {
      const char ch = e.operands[k][i];
      const auto [it, fresh] = size.try_emplace(ch, shapes[k][i]);
      if (!fresh && it->second != shapes[k][i])
        c.fail("equation '{}': {} is {} in one operand and {} in another (broadcasting is not supported)", c.attrs().get_str("equation"),
               std::isdigit(static_cast<unsigned char>(ch)) ? std::string("a dim of '...'") : fmt::format("'{}'", ch), it->second,
               shapes[k][i]);
    }
  return size;
}

void infer_einsum(OpCtx& c) {
  if (c.num_inputs() < 1 || c.num_inputs() > 2)
    c.fail("Einsum of {} operands: only one or two are supported", c.num_inputs());
  c.expect_arity(1, 2);
  std::vector<size_t> ranks;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    c.expect_float(i);
    ranks.push_back(c.in(i).shape.size());
    shapes.push_back(c.in(i).shape);
  }
  const Equation e = parse(c, c.attrs().get_str("equation"), ranks);
  const std::map<char, int64_t> size = label_sizes(c, e, shapes);
  Shape out;
  for (char ch : e.output) out.push_back(size.at(ch));
  c.out(0) = TensorDesc{out, DType::f32};
}

void lower_einsum(OpCtx&) {}  // a composite: never lowered

// The labels of `from` in the order `want` lists them (those it has).
std::vector<int64_t> permutation(const std::string& from, const std::string& want) {
  std::vector<int64_t> perm;
  for (char ch : want) perm.push_back(int64_t(from.find(ch)));
  return perm;
}

bool identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i)) return false;
  return true;
}

// Sums x's labels that `keep` lacks (one ReduceSum); returns the value and its labels.
std::pair<ValueId, std::string> sum_away(ExpandCtx& c, ValueId x, const std::string& labels, const std::string& keep) {
  std::vector<int64_t> axes;
  std::string left;
  for (size_t i = 0; i < labels.size(); ++i)
    if (keep.find(labels[i]) == std::string::npos) axes.push_back(int64_t(i));
    else left += labels[i];
  if (axes.empty()) return {x, labels};
  Attrs a;
  a.set_ints("axes", axes);
  a.set_int("keepdims", 0);
  return {c.emit("ReduceSum", {x}, a), left};
}

ValueId transpose(ExpandCtx& c, ValueId x, const std::string& from, const std::string& to, ValueId into = kNoValue) {
  const std::vector<int64_t> perm = permutation(from, to);
  if (identity(perm) && into == kNoValue) return x;
  Attrs a;
  a.set_ints("perm", perm);
  return c.emit("Transpose", {x}, a, into);
}

ValueId reshape(ExpandCtx& c, ValueId x, const Shape& to, ValueId into = kNoValue) {
  if (c.shape(x) == to && into == kNoValue) return x;
  return c.emit("Reshape", {x, c.ints(to)}, {}, into);
}

void expand_einsum(ExpandCtx& c) {
  std::vector<size_t> ranks;
  std::vector<Shape> shapes;
  for (size_t i = 0; i < c.node().inputs.size(); ++i) {
    shapes.push_back(c.shape(c.input(i)));
    ranks.push_back(shapes.back().size());
  }
  const Equation e = parse(c, c.attrs().get_str("equation"), ranks);
  const std::map<char, int64_t> size = label_sizes(c, e, shapes);
  auto product = [&](const std::string& labels) {
    int64_t n = 1;
    for (char ch : labels) n *= size.at(ch);
    return n;
  };
  if (e.operands.size() == 1) {
    const auto [x, labels] = sum_away(c, c.input(0), e.operands[0], e.output);
    if (x == c.input(0) && labels == e.output) {
      c.emit("Identity", {x}, {}, c.output(0));
      return;
    }
    transpose(c, x, labels, e.output, c.output(0));
    return;
  }
  const std::string& other0 = e.operands[1];
  const std::string& other1 = e.operands[0];
  // What each operand keeps: letters of the output or of the other operand.
  auto kept = [&](const std::string& other) { return e.output + other; };
  auto [a, la] = sum_away(c, c.input(0), e.operands[0], kept(other0));
  auto [b, lb] = sum_away(c, c.input(1), e.operands[1], kept(other1));
  std::string batch, m, n, k;
  for (char ch : e.output) {
    const bool in_a = la.find(ch) != std::string::npos, in_b = lb.find(ch) != std::string::npos;
    if (in_a && in_b) batch += ch;
    else if (in_a) m += ch;
    else n += ch;
  }
  for (char ch : la)
    if (lb.find(ch) != std::string::npos && e.output.find(ch) == std::string::npos) k += ch;
  a = reshape(c, transpose(c, a, la, batch + m + k), {product(batch), product(m), product(k)});
  b = reshape(c, transpose(c, b, lb, batch + k + n), {product(batch), product(k), product(n)});
  const std::string product_labels = batch + m + n;
  Shape unflat;
  for (char ch : product_labels) unflat.push_back(size.at(ch));
  const bool reorder = !identity(permutation(product_labels, e.output));
  const bool reshaped = Shape{product(batch), product(m), product(n)} != unflat;
  ValueId y = c.emit("MatMul", {a, b}, {}, reshaped || reorder ? kNoValue : c.output(0));
  if (reshaped) y = reshape(c, y, unflat, reorder ? kNoValue : c.output(0));
  if (reorder) transpose(c, y, product_labels, e.output, c.output(0));
}

}  // namespace

OpDef einsum_def() {
  OpDef d{"Einsum", infer_einsum, lower_einsum};
  d.expand = expand_einsum;
  return d;
}

}  // namespace of::compiler
