// SPDX-License-Identifier: Apache-2.0
// SBP and placement: how one logical tensor is laid out over a set of devices. A placement is a
// list of devices viewed as a hierarchy (e.g. [dp, tp]); an NdSbp says, per hierarchy level,
// whether the tensor is split along an axis (S), broadcast (B) or a partial sum (P) there.
// Level 0 splits first, each later level splits the part the earlier ones left.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/shape.h"

namespace of::compiler {

struct Sbp {
  enum class Kind : int8_t { broadcast = 0, split = 1, partial = 2 };
  Kind kind = Kind::broadcast;
  int32_t axis = 0;  // for split

  static Sbp B() { return {}; }
  static Sbp S(int64_t axis) { return {Kind::split, int32_t(axis)}; }
  static Sbp P() { return {Kind::partial, 0}; }
  bool is_split() const { return kind == Kind::split; }
  bool is_partial() const { return kind == Kind::partial; }
  bool operator==(const Sbp&) const = default;
  std::string str() const;  // "B", "S(1)", "P"
};

using NdSbp = std::vector<Sbp>;  // one per hierarchy level
std::string sbp_str(const NdSbp& s);  // "(S(0), B)"; one level: "S(0)"

struct Placement {
  std::vector<int32_t> devices;    // indices into the plan's device list
  std::vector<int64_t> hierarchy;  // product == devices.size()
  bool operator==(const Placement&) const = default;
  size_t size() const { return devices.size(); }
  // Device j's coordinate at each level (row-major: the last level varies fastest).
  std::vector<int64_t> coords(size_t j) const;
  std::string str() const;  // "cpu:0-3 [2,2]"
};

// The box of a tensor one device holds: begin and extent per axis.
struct Region {
  std::vector<int64_t> begin;
  std::vector<int64_t> size;
  bool operator==(const Region&) const = default;
  int64_t numel() const;
};

// Whether `sbp` lays `shape` out on `p` with every split even (the only splits we make).
bool splits_evenly(const Shape& shape, const Placement& p, const NdSbp& sbp);
// The region device j of `p` holds (a partial sum holds the whole of its region).
Region local_region(const Shape& shape, const Placement& p, const NdSbp& sbp, size_t j);
// Device j's index among the summands: its coordinates at the partial-sum levels (0 when none).
int64_t partial_index(const Placement& p, const NdSbp& sbp, size_t j);

}  // namespace of::compiler
