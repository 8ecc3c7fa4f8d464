// SPDX-License-Identifier: Apache-2.0
// Reads ONNX protobuf into Graph: initializers and Constant nodes become constant values, graph
// inputs (minus initializers) become fed inputs, every node must name a supported operator.
#include "compiler/import/onnx_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "common/error.h"
#include "common/file_util.h"
#include "compiler/ops/registry.h"

namespace of::compiler {
namespace {

constexpr int64_t kMinOpset = 13;
// The newest opset whose forms of our operators are implemented: 18 moved ReduceMean's axes to an
// input and gave Split num_outputs (both handled). Newer opsets change ops we support in ways not
// reviewed here (AveragePool dilations in 19, new types for Cast, Reshape and others in 19 to 23).
constexpr int64_t kMaxOpset = 18;
// The metadata key under which scripts/of_export.py lists the parameters that require grad.
constexpr const char* kRequiresGradKey = "of.requires_grad";
// ... and the padding rows of the model's embeddings (nn.Embedding's padding_idx).
constexpr const char* kPaddingIdxKey = "of.padding_idx";
// ... and the BatchNorms whose running statistics are a cumulative average (momentum=None).
constexpr const char* kBatchNormCumulativeKey = "of.batch_norm_cumulative";

DType dtype_of(int32_t onnx_type, const Where& where) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::BFLOAT16: return DType::bf16;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::INT8: return DType::i8;
    case onnx::TensorProto::BOOL: return DType::bool_;
    default: fail(where, "unsupported element type {} (ONNX TensorProto.DataType)", onnx_type);
  }
}

// Copies a TensorProto's contents (raw_data or the typed repeated fields) after checking sizes.
std::vector<uint8_t> tensor_bytes(const onnx::TensorProto& t, const TensorDesc& desc, const Where& where) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    fail(where, "tensor '{}' keeps its data in an external file, which is not supported", t.name());
  const int64_t n = numel(desc.shape);
  const size_t bytes = size_t(n * dtype_size(desc.dtype));
  // Sizes are checked against the data present before anything is allocated for them.
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      fail(where, "tensor '{}' has {} bytes of data, shape {} needs {}", t.name(), t.raw_data().size(), shape_str(desc.shape), bytes);
    return std::vector<uint8_t>(t.raw_data().begin(), t.raw_data().end());
  }
  std::vector<uint8_t> out;
  auto take = [&](const auto& field, auto as) {
    if (int64_t(field.size()) != n)
      fail(where, "tensor '{}' has {} values, shape {} needs {}", t.name(), field.size(), shape_str(desc.shape), n);
    out.resize(bytes);
    for (int64_t i = 0; i < n; ++i) {
      auto v = static_cast<decltype(as)>(field.Get(int(i)));
      std::memcpy(out.data() + i * sizeof v, &v, sizeof v);
    }
  };
  switch (desc.dtype) {
    case DType::f32: take(t.float_data(), float{}); break;
    case DType::i64: take(t.int64_data(), int64_t{}); break;
    case DType::i32: take(t.int32_data(), int32_t{}); break;
    default: fail(where, "tensor '{}': {} data must be stored as raw_data", t.name(), dtype_name(desc.dtype));
  }
  return out;
}

// A NaN poisons every output: refused where it enters. Infinities are a mask buffer's (-inf
// above a causal mask's diagonal, added to attention scores); a tensor that would train with one
// is refused by autodiff (trainable_weights).
void check_no_nan(const std::vector<uint8_t>& data, const TensorDesc& desc, const Where& where) {
  if (desc.dtype != DType::f32) return;
  for (size_t i = 0; i < data.size() / 4; ++i) {
    float x;
    std::memcpy(&x, data.data() + 4 * i, 4);
    if (std::isnan(x)) fail(where, "holds {} at flat index {}", x, i);
  }
}

TensorDesc tensor_desc(const onnx::TensorProto& t, const Where& where) {
  TensorDesc d;
  d.dtype = dtype_of(t.data_type(), where);
  for (int64_t dim : t.dims()) {
    if (dim < 0) fail(where, "tensor '{}' has a negative dimension {}", t.name(), dim);
    d.shape.push_back(dim);
  }
  // Reject shapes whose element count overflows before anything is sized from them. A zero
  // dim does not excuse the others: [0, 2^62, 4] would overflow strides and loop bounds, so
  // the product is taken over every dim (zeros counted as ones).
  int64_t n = 1;
  for (int64_t dim : d.shape) {
    const int64_t f = std::max<int64_t>(dim, 1);
    if (n > std::numeric_limits<int64_t>::max() / 8 / f) fail(where, "tensor '{}' is too large", t.name());
    n *= f;
  }
  return d;
}

void import_attrs(const onnx::NodeProto& node, Attrs& attrs, const Where& where) {
  for (const onnx::AttributeProto& a : node.attribute()) {
    switch (a.type()) {
      case onnx::AttributeProto::INT: attrs.set_int(a.name(), a.i()); break;
      case onnx::AttributeProto::FLOAT: attrs.set_float(a.name(), a.f()); break;
      case onnx::AttributeProto::STRING: attrs.set_str(a.name(), a.s()); break;
      case onnx::AttributeProto::INTS: attrs.set_ints(a.name(), {a.ints().begin(), a.ints().end()}); break;
      case onnx::AttributeProto::FLOATS: attrs.set_floats(a.name(), {a.floats().begin(), a.floats().end()}); break;
      case onnx::AttributeProto::STRINGS:  // LSTM's activations: one string, comma-separated
        attrs.set_str(a.name(), fmt::format("{}", fmt::join(a.strings(), ",")));
        break;
      case onnx::AttributeProto::TENSOR: {
        // A one-element tensor (ConstantOfShape's value): its number and its dtype.
        const TensorDesc d = tensor_desc(a.t(), where);
        if (numel(d.shape) != 1) fail(where, "attribute '{}' holds a tensor of {} elements; only one is supported", a.name(), numel(d.shape));
        const std::vector<uint8_t> bytes = tensor_bytes(a.t(), d, where);
        double x = 0;
        switch (d.dtype) {
          case DType::f32: { float f; std::memcpy(&f, bytes.data(), 4); x = f; break; }
          case DType::i64: { int64_t i; std::memcpy(&i, bytes.data(), 8); x = double(i); break; }
          case DType::i32: { int32_t i; std::memcpy(&i, bytes.data(), 4); x = i; break; }
          case DType::bool_: case DType::u8: x = bytes[0]; break;
          default: fail(where, "attribute '{}' holds a {} tensor, which is not supported", a.name(), dtype_name(d.dtype));
        }
        attrs.set_floats(a.name(), {float(x)});
        attrs.set_int(a.name() + "_dtype", int64_t(d.dtype));
        if (d.dtype == DType::i64 || d.dtype == DType::i32) attrs.set_int(a.name() + "_int", int64_t(x));
        break;
      }
      default: fail(where, "attribute '{}' has a type (AttributeProto {}) that is not supported", a.name(), int(a.type()));
    }
  }
}

// A float64 constant's values as float32: what Cast(to FLOAT) of it gives. Sizes are checked
// against the data present before anything is allocated for them.
std::vector<uint8_t> doubles_as_floats(const onnx::TensorProto& t, int64_t n, const Where& where) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) fail(where, "tensor keeps its data in an external file, which is not supported");
  if (t.has_raw_data() ? t.raw_data().size() != size_t(n) * 8 : int64_t(t.double_data_size()) != n)
    fail(where, "tensor holds {} float64 values' data, its shape needs {}", t.has_raw_data() ? t.raw_data().size() / 8 : size_t(t.double_data_size()), n);
  std::vector<double> d(static_cast<size_t>(n));
  if (t.has_raw_data()) std::memcpy(d.data(), t.raw_data().data(), t.raw_data().size());
  else
    for (int64_t i = 0; i < n; ++i) d[size_t(i)] = t.double_data(int(i));
  std::vector<uint8_t> out(size_t(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    const auto f = float(d[size_t(i)]);
    std::memcpy(out.data() + i * 4, &f, 4);
  }
  return out;
}

// A Constant node's value: the `value` tensor or one of the value_* shorthands. A float64 value
// that only Casts to float32 and Where read is taken as float32 values: torch writes a Python
// float so (F.normalize's eps in training exports; `torch.where(mask, x, 0.0)`, a Where of an f32
// tensor and a float64 scalar, where torch's result is f32). Other float64 tensors are refused.
void import_constant(Graph& g, const onnx::NodeProto& node, const Where& where, bool only_cast_to_float) {
  if (node.output_size() != 1) fail(where, "expects 1 output");
  ValueId v = g.add_value(node.output(0));
  Value& val = g.values[v];
  val.known = true;
  for (const onnx::AttributeProto& a : node.attribute()) {
    if (a.name() == "value" && a.t().data_type() == onnx::TensorProto::DOUBLE && only_cast_to_float) {
      onnx::TensorProto as_float = a.t();
      as_float.set_data_type(onnx::TensorProto::FLOAT);  // for its shape and size checks
      val.desc = tensor_desc(as_float, where);
      val.data = doubles_as_floats(a.t(), numel(val.desc.shape), where);
      return;
    }
    if (a.name() == "value") {
      val.desc = tensor_desc(a.t(), where);
      val.data = tensor_bytes(a.t(), val.desc, where);
      return;
    }
    if (a.name() == "value_float" || a.name() == "value_floats") {
      std::vector<float> f = a.name() == "value_float" ? std::vector<float>{a.f()} : std::vector<float>(a.floats().begin(), a.floats().end());
      val.desc = {a.name() == "value_float" ? Shape{} : Shape{int64_t(f.size())}, DType::f32};
      val.data = std::vector<uint8_t>(f.size() * 4);
      std::memcpy(val.data->data(), f.data(), f.size() * 4);
      return;
    }
    if (a.name() == "value_int" || a.name() == "value_ints") {
      std::vector<int64_t> i = a.name() == "value_int" ? std::vector<int64_t>{a.i()} : std::vector<int64_t>(a.ints().begin(), a.ints().end());
      val.desc = {a.name() == "value_int" ? Shape{} : Shape{int64_t(i.size())}, DType::i64};
      val.data = std::vector<uint8_t>(i.size() * 8);
      std::memcpy(val.data->data(), i.data(), i.size() * 8);
      return;
    }
  }
  fail(where, "Constant without a supported value attribute (value, value_float(s), value_int(s))");
}

// The non-empty lines of the model's metadata entry `key`, or nullopt when it has none; an entry
// given twice is refused.
std::optional<std::vector<std::string_view>> metadata_lines(const onnx::ModelProto& model, const char* key, const Where& where) {
  std::optional<std::vector<std::string_view>> lines;
  for (const onnx::StringStringEntryProto& p : model.metadata_props()) {
    if (p.key() != key) continue;
    if (lines) fail(where, "is given twice");
    lines.emplace();
    std::string_view rest = p.value();
    while (!rest.empty()) {
      const size_t end = std::min(rest.find('\n'), rest.size());
      if (end > 0) lines->push_back(rest.substr(0, end));
      rest.remove_prefix(std::min(end + 1, rest.size()));
    }
  }
  return lines;
}

// The parameters torch trains, as scripts/of_export.py lists them in the model's metadata: one
// state_dict name per line. Absent when the model carries no list (torch.onnx.export alone).
std::optional<std::vector<std::string>> requires_grad_names(const onnx::ModelProto& model, const std::string& path) {
  const auto lines = metadata_lines(model, kRequiresGradKey, {.file = path, .field = std::string("metadata '") + kRequiresGradKey + "'"});
  if (!lines) return std::nullopt;
  std::vector<std::string> names(lines->begin(), lines->end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// The padding rows of the model's embeddings, as scripts/of_export.py lists them: "NAME INDEX"
// per line.
std::vector<std::pair<std::string, int64_t>> padding_rows(const onnx::ModelProto& model, const std::string& path) {
  const Where w{.file = path, .field = std::string("metadata '") + kPaddingIdxKey + "'"};
  std::vector<std::pair<std::string, int64_t>> rows;
  const auto lines = metadata_lines(model, kPaddingIdxKey, w);
  for (size_t i = 0; lines && i < lines->size(); ++i) {
    const std::string_view text = (*lines)[i];
    const size_t space = text.rfind(' ');
    int64_t index = -1;
    const char* digits = space == std::string_view::npos ? text.data() + text.size() : text.data() + space + 1;
    const auto [last, ec] = std::from_chars(digits, text.data() + text.size(), index);
    if (space == std::string_view::npos || space == 0 || ec != std::errc() || last != text.data() + text.size() || index < 0)
      fail(w, "line {} ('{}') is not 'NAME INDEX' with an index >= 0", i + 1, text.substr(0, 80));
    rows.emplace_back(std::string(text.substr(0, space)), index);
  }
  return rows;
}

// The running means of the BatchNorms made with momentum=None, as scripts/of_export.py lists
// them: one state_dict name per line.
std::vector<std::string> cumulative_batch_norms(const onnx::ModelProto& model, const std::string& path) {
  const auto lines =
      metadata_lines(model, kBatchNormCumulativeKey, {.file = path, .field = std::string("metadata '") + kBatchNormCumulativeKey + "'"});
  std::vector<std::string> names;
  if (lines) names.assign(lines->begin(), lines->end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Per value name that some node reads: whether every node that reads it passes `reader` (a graph
// output never does: the user reads it).
template <typename Reader>
std::unordered_map<std::string, bool> read_only_by(const onnx::GraphProto& gp, Reader reader) {
  std::unordered_map<std::string, bool> only;
  for (const onnx::NodeProto& np : gp.node()) {
    const bool passes = reader(np);
    for (const std::string& in : np.input()) {
      auto [it, fresh] = only.try_emplace(in, passes);
      if (!fresh) it->second = it->second && passes;
    }
  }
  for (const onnx::ValueInfoProto& out : gp.output()) only[out.name()] = false;
  return only;
}

// Imports an If's branch `bg` into g.branches and returns its index. What the branch reads from
// outside it (values `find` knows, and its own Constants, which become values of `g`) is added to
// the If node's inputs (each once). Inside a branch: ops of one output, no nested If.
template <typename Find>
int64_t import_branch(Graph& g, const onnx::GraphProto& bg, const std::string& label, Node& if_node, const Where& w, Find& find) {
  Branch b;
  std::unordered_map<std::string, BranchRef> local;  // the names the branch defines
  auto capture = [&](ValueId v) {
    auto at = std::find(if_node.inputs.begin(), if_node.inputs.end(), v);
    if (at == if_node.inputs.end()) at = if_node.inputs.insert(if_node.inputs.end(), v);
    return BranchRef{false, int32_t(at - if_node.inputs.begin())};
  };
  auto ref = [&](const std::string& in, const Where& where) {
    if (in.empty()) return BranchRef{false, -1};
    if (auto it = local.find(in); it != local.end()) return it->second;
    const ValueId v = find(in);
    if (v == kNoValue) fail(where, "{}: '{}' is made neither earlier in the branch nor outside it", label, in);
    return capture(v);
  };
  if (bg.initializer_size() > 0) fail(w, "{} has initializers, which are not supported inside an If's branch", label);
  int index = 0;
  for (const onnx::NodeProto& np : bg.node()) {
    const std::string name = np.name().empty() ? fmt::format("{}/{}_{}", label, np.op_type(), index) : np.name();
    ++index;
    const Where bw{.file = w.file, .node = name, .op = np.op_type()};
    if (np.output_size() != 1 || np.output(0).empty() || local.count(np.output(0)) || find(np.output(0)) != kNoValue)
      fail(bw, "inside an If's branch, an op needs one output with a new name (this one has {})", np.output_size());
    const bool standard = np.domain().empty() || np.domain() == "ai.onnx";
    if (np.op_type() == "Constant" && standard) {
      import_constant(g, np, bw, false);
      local[np.output(0)] = capture(ValueId(g.values.size() - 1));
      continue;
    }
    if (np.op_type() == "If" && standard) fail(bw, "an If inside an If's branch is not supported");
    if (!find_op(np.domain(), np.op_type())) fail(bw, "unsupported operator type inside an If's branch");
    BranchNode n{.name = name, .op_type = np.op_type(), .domain = np.domain(), .output = np.output(0)};
    import_attrs(np, n.attrs, bw);
    for (const std::string& in : np.input()) n.inputs.push_back(ref(in, bw));
    local[np.output(0)] = BranchRef{true, int32_t(b.nodes.size())};
    b.nodes.push_back(std::move(n));
  }
  for (const onnx::ValueInfoProto& out : bg.output()) {
    if (out.name().empty()) fail(w, "{} has an unnamed output", label);
    b.outputs.push_back(ref(out.name(), w));
  }
  g.branches.push_back(std::move(b));
  return int64_t(g.branches.size()) - 1;
}

}  // namespace

Graph import_onnx_bytes(const void* data, size_t size, const std::string& path) {
  const Where file{.file = path};
  onnx::ModelProto model;
  if (size > size_t(std::numeric_limits<int>::max()))
    fail(file, "model is larger than 2 GiB; external-data models are not supported");
  if (!model.ParseFromArray(data, int(size)) || !model.has_graph() || model.ir_version() <= 0)
    fail(file, "not an ONNX model (it does not parse as an ONNX ModelProto)");

  int64_t opset = -1;
  for (const onnx::OperatorSetIdProto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset >= 0 && opset < kMinOpset)
    fail(file, "opset {} is not supported; export with opset_version >= {}", opset, kMinOpset);
  if (opset > kMaxOpset)
    fail(file, "opset {} is newer than this ofc knows ({}..{}); export with opset_version <= {}", opset, kMinOpset, kMaxOpset, kMaxOpset);

  const onnx::GraphProto& gp = model.graph();
  Graph g;
  // Name lookups go through a hash map: models reach tens of thousands of values.
  std::unordered_map<std::string, ValueId> by_name;
  auto find = [&by_name](const std::string& n) {
    auto it = by_name.find(n);
    return it == by_name.end() ? kNoValue : it->second;
  };
  auto add = [&](const std::string& n) { return by_name[n] = g.add_value(n); };
  g.name = gp.name().empty() ? "model" : gp.name();
  g.source_file = path;
  g.requires_grad = requires_grad_names(model, path);
  g.padding_rows = padding_rows(model, path);
  g.cumulative_batch_norms = cumulative_batch_norms(model, path);

  for (const onnx::TensorProto& t : gp.initializer()) {
    Where w{.file = path, .field = "initializer '" + t.name() + "'"};
    if (find(t.name()) != kNoValue) fail(w, "defined twice");
    ValueId v = add(t.name());
    g.values[v].desc = tensor_desc(t, w);
    g.values[v].data = tensor_bytes(t, g.values[v].desc, w);
    g.values[v].known = true;
    g.values[v].initializer = true;
    check_no_nan(*g.values[v].data, g.values[v].desc, w);
  }
  for (const onnx::ValueInfoProto& in : gp.input()) {
    if (find(in.name()) != kNoValue) continue;  // older exporters list initializers as inputs
    Where w{.file = path, .field = "input '" + in.name() + "'"};
    if (!in.type().has_tensor_type()) fail(w, "is not a tensor");
    const auto& tt = in.type().tensor_type();
    ValueId v = add(in.name());
    Value& val = g.values[v];
    val.desc.dtype = dtype_of(tt.elem_type(), w);
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value())
        fail(w, "dimension '{}' is dynamic; export with fixed sizes (no dynamic_axes)", d.dim_param());
      if (d.dim_value() < 0) fail(w, "has a negative dimension {}", d.dim_value());
      val.desc.shape.push_back(d.dim_value());
    }
    // The first dimension is the batch ofrun streams: a plan of 0 samples can never run.
    if (!val.desc.shape.empty() && val.desc.shape[0] == 0)
      fail(w, "has shape {}: a batch of 0 samples (dimension 0) can never run", shape_str(val.desc.shape));
    int64_t n = 1;  // as for initializers: the element count (zeros counted as ones) must fit
    for (int64_t dim : val.desc.shape) {
      const int64_t f = std::max<int64_t>(dim, 1);
      if (n > std::numeric_limits<int64_t>::max() / 8 / f) fail(w, "is too large ({})", shape_str(val.desc.shape));
      n *= f;
    }
    val.known = true;
    val.graph_input = true;
    g.inputs.push_back(v);
  }
  if (g.inputs.empty()) fail(file, "the graph has no inputs to feed");

  // Values that only Cast(to FLOAT) and Where nodes read (see import_constant).
  const auto only_cast_to_float = read_only_by(gp, [](const onnx::NodeProto& np) {
    if (np.domain().empty() && np.op_type() == "Where") return true;
    bool to_float = np.op_type() == "Cast" && np.domain().empty();
    for (const onnx::AttributeProto& a : np.attribute())
      if (to_float && a.name() == "to") to_float = a.i() == onnx::TensorProto::FLOAT;
    return to_float;
  });
  // Values that only IsInf and IsNaN read (see the Cast to DOUBLE below).
  const auto only_tested_special = read_only_by(
      gp, [](const onnx::NodeProto& np) { return (np.op_type() == "IsInf" || np.op_type() == "IsNaN") && np.domain().empty(); });
  // Values that only Cast nodes read (see the Cast to INT32 below).
  const auto only_cast = read_only_by(gp, [](const onnx::NodeProto& np) { return np.op_type() == "Cast" && np.domain().empty(); });

  struct Unsupported {
    std::string type;
    std::string first_node;
    int64_t count;
  };
  std::vector<Unsupported> unsupported;  // in order of first appearance
  int index = 0;
  for (const onnx::NodeProto& np : gp.node()) {
    std::string name = np.name().empty() ? fmt::format("{}_{}", np.op_type(), index) : np.name();
    ++index;
    Where w{.file = path, .node = name, .op = np.op_type()};
    if (np.op_type() == "Constant" && (np.domain().empty() || np.domain() == "ai.onnx")) {
      if (np.output_size() != 1 || find(np.output(0)) != kNoValue) fail(w, "needs one output with a new name");
      const auto cast_only = only_cast_to_float.find(np.output(0));
      import_constant(g, np, w, cast_only != only_cast_to_float.end() && cast_only->second);
      by_name[np.output(0)] = ValueId(g.values.size() - 1);
      continue;
    }
    // torch's exporter stores equal initializers once and names the others by Identity nodes
    // (every zero bias of a model, say): each name gets its own copy, so each trains on its own.
    if (np.op_type() == "Identity" && np.domain().empty() && np.input_size() == 1 && np.output_size() == 1) {
      const ValueId src = find(np.input(0));
      if (src != kNoValue && g.values[src].data && !g.values[src].graph_input) {
        if (find(np.output(0)) != kNoValue) fail(w, "output '{}' is defined twice", np.output(0));
        const Value copy = g.values[src];
        const ValueId v = add(np.output(0));
        g.values[v].desc = copy.desc;
        g.values[v].known = copy.known;
        g.values[v].data = copy.data;
        g.values[v].initializer = copy.initializer;
        continue;
      }
    }
    if (!find_op(np.domain(), np.op_type())) {
      // Keep reading, so that one line can name every unsupported type; its outputs get names
      // (no producer) so that later nodes still resolve their inputs.
      const std::string type = np.domain().empty() ? np.op_type() : np.domain() + "." + np.op_type();
      auto it = std::find_if(unsupported.begin(), unsupported.end(), [&](const Unsupported& u) { return u.type == type; });
      if (it == unsupported.end()) unsupported.push_back({type, name, 1});
      else ++it->count;
      for (const std::string& out : np.output())
        if (!out.empty() && find(out) == kNoValue) add(out);
      continue;
    }
    Node node{.name = name, .op_type = np.op_type(), .domain = np.domain()};
    const bool is_if = np.op_type() == "If" && np.domain().empty();
    if (!is_if) import_attrs(np, node.attrs, w);  // an If's are its branches (below)
    // torch writes torch.isinf(x) as IsInf(Cast(x, to=DOUBLE)), which would need float64 at run
    // time: a float32's infinities and NaNs stay what they are in float64 and no finite float32
    // becomes one, so such a cast, read by nothing else, is imported as one to FLOAT.
    if (np.op_type() == "Cast" && np.domain().empty() && np.output_size() == 1 &&
        node.attrs.get_int("to", 0) == onnx::TensorProto::DOUBLE) {
      const auto tested = only_tested_special.find(np.output(0));
      if (tested != only_tested_special.end() && tested->second) node.attrs.set_int("to", onnx::TensorProto::FLOAT);
    }
    // torch writes `x * (x > 0).int()` as Cast(Cast(x > 0, to=INT32), to=FLOAT) (its type
    // promotion): int32 at run time, which ofc has not. A cast to int32 that only casts read goes
    // through int64 instead: the same values for everything int32 holds (beyond it, a float's
    // cast to int32 is undefined anyway).
    if (np.op_type() == "Cast" && np.domain().empty() && np.output_size() == 1 && node.attrs.get_int("to", 0) == onnx::TensorProto::INT32) {
      const auto cast = only_cast.find(np.output(0));
      if (cast != only_cast.end() && cast->second) node.attrs.set_int("to", onnx::TensorProto::INT64);
    }
    const auto self = NodeId(g.nodes.size());
    for (const std::string& in : np.input()) {
      if (in.empty()) {
        node.inputs.push_back(kNoValue);
        continue;
      }
      ValueId v = find(in);
      if (v == kNoValue) fail(w, "input '{}' is not produced before this node (nodes must be topologically sorted)", in);
      g.values[v].consumers.push_back(self);
      node.inputs.push_back(v);
    }
    if (is_if) {
      if (np.input_size() != 1 || node.inputs[0] == kNoValue) fail(w, "expects 1 input (the condition)");
      for (const onnx::AttributeProto& a : np.attribute()) {
        if (a.type() != onnx::AttributeProto::GRAPH || (a.name() != "then_branch" && a.name() != "else_branch"))
          fail(w, "attribute '{}' is not then_branch or else_branch", a.name());
        const size_t captured = node.inputs.size();
        node.attrs.set_int(a.name(), import_branch(g, a.g(), name + "/" + a.name(), node, w, find));
        for (size_t i = captured; i < node.inputs.size(); ++i) g.values[node.inputs[i]].consumers.push_back(self);
        if (g.branches.back().outputs.size() != size_t(np.output_size()))
          fail(w, "its {} has {} outputs, the If {}", a.name(), g.branches.back().outputs.size(), np.output_size());
      }
      if (!node.attrs.has("then_branch") || !node.attrs.has("else_branch")) fail(w, "needs both then_branch and else_branch");
    }
    // Unused optional outputs are named "" by exporters: drop trailing ones.
    int n_out = np.output_size();
    while (n_out > 0 && np.output(n_out - 1).empty()) --n_out;
    for (int k = 0; k < n_out; ++k) {
      const std::string& out = np.output(k);
      if (out.empty()) fail(w, "output {} is unnamed; only trailing optional outputs may be omitted", k);
      if (find(out) != kNoValue) fail(w, "output '{}' is defined twice", out);
      ValueId v = add(out);
      g.values[v].producer = self;
      node.outputs.push_back(v);
    }
    g.nodes.push_back(std::move(node));
  }
  if (!unsupported.empty()) {
    std::vector<std::string> parts;
    int64_t nodes = 0;
    for (const Unsupported& u : unsupported) {
      parts.push_back(fmt::format("{} x{} (first: node '{}')", u.type, u.count, u.first_node));
      nodes += u.count;
    }
    fail(file, "{} unsupported operator type{} in {} node{}: {}; supported: {}", unsupported.size(),
         unsupported.size() == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", fmt::join(parts, ", "), supported_op_list());
  }
  for (const onnx::ValueInfoProto& out : gp.output()) {
    ValueId v = find(out.name());
    if (v == kNoValue) fail({.file = path, .field = "output '" + out.name() + "'"}, "is never produced");
    g.values[v].graph_output = true;
    g.outputs.push_back(v);
  }
  if (g.outputs.empty()) fail(file, "the graph has no outputs");
  verify(g, "import");
  return g;
}

Graph import_onnx_file(const std::string& path) {
  std::vector<uint8_t> bytes = read_file(path);
  return import_onnx_bytes(bytes.data(), bytes.size(), path);
}

}  // namespace of::compiler
