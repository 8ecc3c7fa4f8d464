// SPDX-License-Identifier: Apache-2.0
// make_dataset: the `--data` spec grammar, KIND:ARG[,ARG...] with key=value options after the
// positional arguments.
#include "runtime/data/dataset.h"

#include <string_view>
#include <vector>

#include "common/error.h"
#include "runtime/data/idx.h"
#include "runtime/data/npy_dataset.h"
#include "runtime/data/tokens.h"

namespace of::runtime::data {
namespace {

constexpr const char* kGrammar =
    "idx:DIR[,split=train|test], npy:FEATURES.npy,LABELS.npy, tokens:FILE[,dtype=uint16|uint32]";

std::vector<std::string> split_commas(std::string_view s) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t comma = s.find(',', start);
    parts.emplace_back(s.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return parts;
    start = comma + 1;
  }
}

struct Spec {
  std::string text;                  // the whole spec, for errors
  std::vector<std::string> args;     // positional
  std::vector<std::pair<std::string, std::string>> options;  // key=value, in order

  [[noreturn]] void error(const std::string& message) const {
    throw Error(fmt::format("--data '{}': {}", text, message));
  }
  // The value of option `key` (the last one given wins), or `fallback`.
  std::string option(const std::string& key, const std::string& fallback) const {
    std::string value = fallback;
    for (const auto& [k, v] : options)
      if (k == key) value = v;
    return value;
  }
  // Every option must be one of `known`.
  void allow_only(std::initializer_list<std::string_view> known) const {
    for (const auto& [k, v] : options) {
      bool ok = false;
      for (std::string_view n : known) ok = ok || k == n;
      if (!ok) error(fmt::format("unknown option '{}'", k));
    }
  }
};

}  // namespace

std::unique_ptr<Dataset> make_dataset(const std::string& spec_text, const DataOptions& options) {
  Spec spec{spec_text, {}, {}};
  size_t colon = spec_text.find(':');
  if (colon == std::string::npos) spec.error(fmt::format("expected KIND:ARGS ({})", kGrammar));
  std::string kind = spec_text.substr(0, colon);
  for (std::string& part : split_commas(std::string_view(spec_text).substr(colon + 1))) {
    size_t eq = part.find('=');
    if (eq != std::string::npos) {
      spec.options.emplace_back(part.substr(0, eq), part.substr(eq + 1));
    } else if (!spec.options.empty()) {
      spec.error(fmt::format("'{}' follows an option (positional arguments come first)", part));
    } else if (part.empty()) {
      spec.error("empty argument");
    } else {
      spec.args.push_back(part);
    }
  }

  if (kind == "idx") {
    if (spec.args.size() != 1) spec.error(fmt::format("idx takes one directory, got {} arguments", spec.args.size()));
    spec.allow_only({"split"});
    std::string split = spec.option("split", "train");
    if (split != "train" && split != "test") spec.error(fmt::format("split '{}' is not 'train' or 'test'", split));
    return open_idx(spec.args[0], split, options.num_classes, options.ignore_label);
  }
  if (kind == "npy") {
    if (spec.args.size() != 2)
      spec.error(fmt::format("npy takes FEATURES.npy,LABELS.npy, got {} arguments", spec.args.size()));
    spec.allow_only({});
    return open_npy_dataset(spec.args[0], spec.args[1], options.num_classes, options.ignore_label);
  }
  if (kind == "tokens") {
    if (spec.args.size() != 1) spec.error(fmt::format("tokens takes one file, got {} arguments", spec.args.size()));
    spec.allow_only({"dtype"});
    std::string dtype = spec.option("dtype", "uint16");
    TokenWidth width = TokenWidth::u16;
    if (dtype == "uint32") {
      width = TokenWidth::u32;
    } else if (dtype != "uint16") {
      spec.error(fmt::format("dtype '{}' is not uint16 or uint32", dtype));
    }
    if (options.seq <= 0) spec.error("tokens need a sequence length > 0 (seq)");
    return open_tokens(spec.args[0], width, options.seq, options.vocab);
  }
  spec.error(fmt::format("unknown kind '{}' (idx, npy, tokens)", kind));
}

}  // namespace of::runtime::data
