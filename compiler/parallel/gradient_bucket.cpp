// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/gradient_bucket.h"

#include "common/error.h"

namespace of::compiler {

bool bucketable(uint64_t bytes, size_t hops, const Layout& from, const Layout& want) {
  if (bytes > kBucketBytesPerHop * hops || !(from.placement == want.placement) || from.sbp.size() != want.sbp.size()) return false;
  bool partial = false;
  for (size_t l = 0; l < from.sbp.size(); ++l) {
    if (from.sbp[l].is_split() || want.sbp[l].kind != Sbp::Kind::broadcast) return false;
    partial = partial || from.sbp[l].is_partial();
  }
  return partial;
}

int64_t bucket_tail(int64_t elements, int64_t devices) {
  OF_ASSERT(devices > 0, "a bucket on no devices");
  return (devices - elements % devices) % devices;
}

ValueId pack_bucket(Graph& g, const std::vector<ValueId>& grads, int64_t tail, int32_t device, const std::string& name) {
  OF_ASSERT(!grads.empty(), "an empty gradient bucket: " + name);
  int64_t elements = tail;
  std::vector<Shape> views;
  for (ValueId v : grads) {
    const int64_t n = numel(g.values[size_t(v)].desc.shape);
    views.push_back({n});
    elements += n;
  }
  Attrs attrs;
  attrs.set_int("axis", 0);
  if (tail > 0) attrs.set_int("tail", tail);
  const DType dtype = g.values[size_t(grads[0])].desc.dtype;
  const ValueId out = add_device_node(g, name, "Concat", "concat", std::move(attrs), grads, TensorDesc{{elements}, dtype}, device);
  g.nodes.back().runtime_views = std::move(views);
  return out;
}

std::vector<ValueId> unpack_bucket(Graph& g, ValueId bucket, const std::vector<int64_t>& sizes, int64_t tail, int32_t device,
                                   const std::string& name) {
  const ValueId first = add_device_node(g, name, "Split", "split", {}, {bucket}, TensorDesc{{sizes.at(0)}, g.values[size_t(bucket)].desc.dtype},
                                        device);
  const auto id = NodeId(g.nodes.size() - 1);
  Node& split = g.nodes.back();
  split.kernel_attrs.set_int("axis", 0);
  if (tail > 0) split.kernel_attrs.set_int("tail", tail);
  std::vector<ValueId> parts{first};
  for (size_t k = 1; k < sizes.size(); ++k) {
    const ValueId v = g.add_value(name + ":" + std::to_string(k));
    Value& part = g.values[size_t(v)];
    part.desc = TensorDesc{{sizes[k]}, g.values[size_t(bucket)].desc.dtype};
    part.known = true;
    part.producer = id;
    g.nodes[size_t(id)].outputs.push_back(v);
    parts.push_back(v);
  }
  return parts;
}

}  // namespace of::compiler
