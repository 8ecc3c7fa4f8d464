// SPDX-License-Identifier: Apache-2.0
// Command-line specs of the form "kind[:key=value,key=value]" (ofc --optimizer, --schedule).
// Parsing checks the keys against what the kind accepts and the values are numbers, so a typo
// fails with the spec and the key named, never silently falling back to a default.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace of {

class OptionSpec {
 public:
  // `flag` names the option in errors (e.g. "--optimizer").
  OptionSpec(const std::string& text, std::string flag);

  const std::string& kind() const { return kind_; }
  // Fails unless every key given is one of `allowed`.
  void allow(const std::vector<std::string>& allowed) const;
  bool has(const std::string& key) const;
  // The value as a finite number in [lo, hi], or `fallback` when absent.
  double number(const std::string& key, double fallback, double lo, double hi) const;
  // A 0|1 switch (nesterov=1): any other value fails, so amsgrad=0.5 is not read as off.
  bool flag(const std::string& key, bool fallback) const;
  // The value of `key` as written, or `fallback` when not given.
  std::string text(const std::string& key, std::string fallback) const;

 private:
  std::string text_, flag_, kind_;
  std::vector<std::pair<std::string, std::string>> values_;
};

}  // namespace of
