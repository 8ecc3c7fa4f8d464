// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/sbp.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace of::compiler {

std::string Sbp::str() const {
  switch (kind) {
    case Kind::broadcast: return "B";
    case Kind::split: return fmt::format("S({})", axis);
    case Kind::partial: return "P";
  }
  return "?";
}

std::string sbp_str(const NdSbp& s) {
  if (s.size() == 1) return s[0].str();
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].str();
  return out + ")";
}

std::vector<int64_t> Placement::coords(size_t j) const {
  std::vector<int64_t> c(hierarchy.size());
  auto rest = int64_t(j);
  for (size_t l = hierarchy.size(); l-- > 0;) {
    c[l] = rest % hierarchy[l];
    rest /= hierarchy[l];
  }
  return c;
}

std::string Placement::str() const {
  std::string out = fmt::format("cpu:{}", devices.front());
  if (devices.size() > 1) out += fmt::format("-{}", devices.back());
  if (hierarchy.size() > 1) out += fmt::format(" [{}]", fmt::join(hierarchy, ","));
  return out;
}

int64_t Region::numel() const {
  int64_t n = 1;
  for (int64_t s : size) n *= s;
  return n;
}

bool splits_evenly(const Shape& shape, const Placement& p, const NdSbp& sbp) {
  Shape local = shape;
  for (size_t l = 0; l < sbp.size(); ++l) {
    if (!sbp[l].is_split()) continue;
    const auto a = size_t(sbp[l].axis);
    if (a >= local.size() || local[a] % p.hierarchy[l] != 0) return false;
    local[a] /= p.hierarchy[l];
  }
  return true;
}

Region local_region(const Shape& shape, const Placement& p, const NdSbp& sbp, size_t j) {
  Region r{std::vector<int64_t>(shape.size(), 0), shape};
  const std::vector<int64_t> c = p.coords(j);
  for (size_t l = 0; l < sbp.size(); ++l) {
    if (!sbp[l].is_split()) continue;
    const auto a = size_t(sbp[l].axis);
    r.size[a] /= p.hierarchy[l];
    r.begin[a] += c[l] * r.size[a];
  }
  return r;
}

int64_t partial_index(const Placement& p, const NdSbp& sbp, size_t j) {
  const std::vector<int64_t> c = p.coords(j);
  int64_t index = 0;
  for (size_t l = 0; l < sbp.size(); ++l)
    if (sbp[l].is_partial()) index = index * p.hierarchy[l] + c[l];
  return index;
}

}  // namespace of::compiler
