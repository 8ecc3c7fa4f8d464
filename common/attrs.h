// SPDX-License-Identifier: Apache-2.0
// Operator attributes as the plan stores them: a name with integers, floats or a string.
// The compiler fills them from ONNX; kernels read them when they are prepared (never per act).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace of {

struct Attr {
  std::string name;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string str;
};

class Attrs {
 public:
  void set_ints(const std::string& name, std::vector<int64_t> v);
  void set_int(const std::string& name, int64_t v) { set_ints(name, {v}); }
  void set_floats(const std::string& name, std::vector<float> v);
  void set_float(const std::string& name, float v) { set_floats(name, {v}); }
  void set_str(const std::string& name, std::string v);

  bool has(const std::string& name) const { return find(name) != nullptr; }
  const Attr* find(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> fallback = {}) const;
  std::string get_str(const std::string& name, std::string fallback = {}) const;

  const std::vector<Attr>& all() const { return attrs_; }

 private:
  Attr& slot(const std::string& name);
  std::vector<Attr> attrs_;  // few per op: a vector beats a map
};

}  // namespace of
