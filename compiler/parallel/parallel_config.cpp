// SPDX-License-Identifier: Apache-2.0
#include "compiler/parallel/parallel_config.h"

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_util.h"

namespace of::compiler {
namespace {

Sbp parse_one(std::string s, const std::string& file, const std::string& field, const std::string& whole) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  if (s == "B") return Sbp::B();
  if (s == "P") return Sbp::P();
  if (s.size() >= 4 && s.rfind("S(", 0) == 0 && s.back() == ')') {
    const std::string digits = s.substr(2, s.size() - 3);
    if (!digits.empty() && digits.size() <= 2 && digits.find_first_not_of("0123456789") == std::string::npos)
      return Sbp::S(std::stoi(digits));
  }
  fail({.file = file, .field = field}, "'{}' is not an SBP (B, P, S(axis), or one per level: (S(0), B))", whole);
}

}  // namespace

NdSbp parse_nd_sbp(const std::string& text, const std::string& file, const std::string& field) {
  std::string body = text;
  if (!body.empty() && body.front() == '(' && body.back() == ')') body = body.substr(1, body.size() - 2);
  NdSbp out;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= body.size(); ++i) {
    if (i < body.size() && body[i] == '(') ++depth;
    if (i < body.size() && body[i] == ')') --depth;
    if (i == body.size() || (body[i] == ',' && depth == 0)) {
      out.push_back(parse_one(body.substr(start, i - start), file, field, text));
      start = i + 1;
    }
  }
  return out;
}

ParallelConfig read_parallel_config(const std::string& path, size_t levels) {
  const std::vector<uint8_t> bytes = read_file(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::exception& e) {
    fail({.file = path}, "not JSON: {}", e.what());
  }
  if (!j.is_object()) fail({.file = path}, "expected a JSON object with \"stages\" and/or \"sbp\"");
  ParallelConfig c;
  for (const auto& [key, value] : j.items()) {
    if (key == "stages") {
      if (!value.is_array()) fail({.file = path, .field = "stages"}, "expected a list of op names");
      for (const auto& s : value) {
        if (!s.is_string()) fail({.file = path, .field = "stages"}, "expected a list of op names");
        c.stage_starts.push_back(s.get<std::string>());
      }
    } else if (key == "sbp") {
      if (!value.is_object()) fail({.file = path, .field = "sbp"}, "expected an object: tensor name -> SBP");
      for (const auto& [tensor, sbp] : value.items()) {
        const std::string field = "sbp." + tensor;
        if (!sbp.is_string()) fail({.file = path, .field = field}, "expected a string such as \"S(0)\"");
        NdSbp s = parse_nd_sbp(sbp.get<std::string>(), path, field);
        if (s.size() != levels)
          fail({.file = path, .field = field}, "'{}' has {} levels; the placement has {} (dp and tp levels of size > 1)",
               sbp.get<std::string>(), s.size(), levels);
        c.sbp[tensor] = s;
      }
    } else {
      fail({.file = path, .field = key}, "unknown key (expected \"stages\" or \"sbp\")");
    }
  }
  return c;
}

}  // namespace of::compiler
