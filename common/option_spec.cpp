// SPDX-License-Identifier: Apache-2.0
#include "common/option_spec.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "common/error.h"

namespace of {

OptionSpec::OptionSpec(const std::string& text, std::string flag) : text_(text), flag_(std::move(flag)) {
  const size_t colon = text.find(':');
  kind_ = text.substr(0, colon);
  if (kind_.empty()) throw Error(fmt::format("{} '{}': missing the kind before ':'", flag_, text_));
  if (colon == std::string::npos) return;
  std::string rest = text.substr(colon + 1);
  size_t at = 0;
  while (at <= rest.size()) {
    size_t comma = rest.find(',', at);
    std::string item = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw Error(fmt::format("{} '{}': '{}' must look like key=value", flag_, text_, item));
    std::string key = item.substr(0, eq);
    if (has(key)) throw Error(fmt::format("{} '{}': '{}' is given twice", flag_, text_, key));
    values_.emplace_back(key, item.substr(eq + 1));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
}

void OptionSpec::allow(const std::vector<std::string>& allowed) const {
  for (const auto& [key, value] : values_) {
    bool ok = false;
    for (const std::string& a : allowed) ok = ok || a == key;
    if (!ok)
      throw Error(fmt::format("{} '{}': unknown key '{}' for {} (known: {})", flag_, text_, key, kind_, fmt::join(allowed, ", ")));
  }
}

bool OptionSpec::has(const std::string& key) const {
  for (const auto& kv : values_)
    if (kv.first == key) return true;
  return false;
}

double OptionSpec::number(const std::string& key, double fallback, double lo, double hi) const {
  for (const auto& [k, text] : values_) {
    if (k != key) continue;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(v))
      throw Error(fmt::format("{} '{}': {}={} is not a number", flag_, text_, key, text));
    if (v < lo || v > hi) throw Error(fmt::format("{} '{}': {}={} is outside [{}, {}]", flag_, text_, key, text, lo, hi));
    return v;
  }
  return fallback;
}

bool OptionSpec::flag(const std::string& key, bool fallback) const {
  for (const auto& [k, value] : values_)
    if (k == key) {
      if (value != "0" && value != "1") throw Error(fmt::format("{} '{}': {}={} is not 0 or 1", flag_, text_, key, value));
      return value == "1";
    }
  return fallback;
}

std::string OptionSpec::text(const std::string& key, std::string fallback) const {
  for (const auto& [k, value] : values_)
    if (k == key) return value;
  return fallback;
}

}  // namespace of
