// SPDX-License-Identifier: Apache-2.0
#include "common/attrs.h"

namespace of {

Attr& Attrs::slot(const std::string& name) {
  for (Attr& a : attrs_)
    if (a.name == name) return a = Attr{name, {}, {}, {}};
  attrs_.push_back(Attr{name, {}, {}, {}});
  return attrs_.back();
}

void Attrs::set_ints(const std::string& name, std::vector<int64_t> v) { slot(name).ints = std::move(v); }
void Attrs::set_floats(const std::string& name, std::vector<float> v) { slot(name).floats = std::move(v); }
void Attrs::set_str(const std::string& name, std::string v) { slot(name).str = std::move(v); }

const Attr* Attrs::find(const std::string& name) const {
  for (const Attr& a : attrs_)
    if (a.name == name) return &a;
  return nullptr;
}

int64_t Attrs::get_int(const std::string& name, int64_t fallback) const {
  const Attr* a = find(name);
  return a && !a->ints.empty() ? a->ints[0] : fallback;
}

float Attrs::get_float(const std::string& name, float fallback) const {
  const Attr* a = find(name);
  return a && !a->floats.empty() ? a->floats[0] : fallback;
}

std::vector<int64_t> Attrs::get_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const Attr* a = find(name);
  return a ? a->ints : fallback;
}

std::vector<float> Attrs::get_floats(const std::string& name, std::vector<float> fallback) const {
  const Attr* a = find(name);
  return a ? a->floats : fallback;
}

std::string Attrs::get_str(const std::string& name, std::string fallback) const {
  const Attr* a = find(name);
  return a ? a->str : fallback;
}

}  // namespace of
