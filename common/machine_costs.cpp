// SPDX-License-Identifier: Apache-2.0
#include "common/machine_costs.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_util.h"

namespace of {

namespace {

constexpr const char* kRateNames[4] = {"matrix_flops_per_s", "convolution_flops_per_s", "recurrent_flops_per_s", "memory_bytes_per_s"};

// `field` of `j` (absent: nothing), an object of kernel_shape_key -> seconds of one act.
void read_shapes(const nlohmann::json& j, const std::string& path, const std::string& name, std::map<std::string, double>& out) {
  if (!j.contains(name)) return;
  if (!j[name].is_object()) fail({.file = path, .field = name}, "not an object of kernel shapes and seconds");
  constexpr size_t kMaxShapes = 1 << 20, kMaxKey = 4096;
  if (j[name].size() > kMaxShapes) fail({.file = path, .field = name}, "more than {} entries", kMaxShapes);
  for (const auto& item : j[name].items()) {
    const std::string key = item.key();
    if (key.empty() || key.size() > kMaxKey) fail({.file = path, .field = name}, "a key of {} characters (1 to {})", key.size(), kMaxKey);
    const std::string field = name + "." + key.substr(0, key.find(' '));
    if (!item.value().is_number()) fail({.file = path, .field = field}, "not a number (seconds of one act)");
    const double v = item.value().get<double>();
    if (!std::isfinite(v) || v < 0 || v > 10) fail({.file = path, .field = field}, "{} is outside [0, 10] seconds", v);
    out[key] = v;
  }
}

}  // namespace

std::string kernel_shape_key(std::string_view kernel, const Attrs& attrs, const std::vector<TensorDesc>& in,
                             const std::vector<TensorDesc>& out) {
  std::string key(kernel);
  for (const Attr& a : attrs.all()) {
    key += fmt::format(" {}=", a.name);
    if (!a.str.empty()) key += a.str;
    if (!a.ints.empty()) key += fmt::format("{}", fmt::join(a.ints, ","));
    if (!a.floats.empty()) key += fmt::format("{}", fmt::join(a.floats, ","));
  }
  key += " :";
  auto tensors = [&](const std::vector<TensorDesc>& v) {
    for (const TensorDesc& d : v) key += fmt::format(" {}{}", dtype_name(d.dtype), shape_str(d.shape));
  };
  tensors(in);
  key += " ->";
  tensors(out);
  return key;
}

MachineCosts builtin_costs() {
  MachineCosts c;
  c.source = "built-in";
  return c;
}

MachineCosts builtin_cuda_costs() {
  MachineCosts c;
  c.rates = {5e13, 4e13, 1e13, 2.5e12};
  c.task_overhead_s = 8e-6;  // an actor's act and a kernel launch
  c.copy_bytes_per_s = 3e11;
  c.rank_bytes_per_s = 4e10;
  c.rank_latency_s = 1e-5;
  c.host_bytes_per_s = 4e10;
  c.shared_rates = c.rates;  // GPUs share nothing a rate would show (shared_cores 1: unused)
  c.shared_copy_bytes_per_s = c.copy_bytes_per_s;
  c.source = "built-in (cuda)";
  return c;
}

MachineCosts read_machine_costs(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file(path);
  const nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) fail({.file = path}, "not a JSON object (expected a file ofrun --calibrate wrote)");
  if (j.value("format", "") != "of-costs") fail({.file = path, .field = "format"}, "expected \"of-costs\" (a file ofrun --calibrate wrote)");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() != 1)
    fail({.file = path, .field = "version"}, "expected 1");
  auto number = [&](const char* field, double lo, double hi) {
    if (!j.contains(field) || !j[field].is_number()) fail({.file = path, .field = field}, "missing or not a number");
    const double v = j[field].get<double>();
    if (!std::isfinite(v) || v < lo || v > hi) fail({.file = path, .field = field}, "{} is outside [{:g}, {:g}]", v, lo, hi);
    return v;
  };
  MachineCosts c;
  for (size_t k = 0; k < c.rates.size(); ++k) c.rates[k] = number(kRateNames[k], 1e3, 1e18);
  c.task_overhead_s = number("task_overhead_s", 0, 1);
  c.copy_bytes_per_s = number("copy_bytes_per_s", 1e3, 1e15);
  c.rank_bytes_per_s = number("rank_bytes_per_s", 1e3, 1e15);
  c.rank_latency_s = number("rank_latency_s", 0, 10);
  c.host_bytes_per_s = j.contains("host_bytes_per_s") ? number("host_bytes_per_s", 1e3, 1e15) : c.copy_bytes_per_s;
  if (j.contains("kernels")) {
    if (!j["kernels"].is_object()) fail({.file = path, .field = "kernels"}, "not an object of kernel names");
    for (const auto& item : j["kernels"].items()) {
      // Plain references: clang refuses a lambda capturing a structured binding.
      const std::string name = item.key();
      const nlohmann::json& k = item.value();
      const std::string field = "kernels." + name;
      if (name.empty() || name.size() > 64 || !k.is_object()) fail({.file = path, .field = field}, "expected {{\"rate\": R, \"fixed_s\": S}}");
      auto value = [&](const char* key, double lo, double hi) {
        if (!k.contains(key) || !k[key].is_number()) fail({.file = path, .field = field + "." + key}, "missing or not a number");
        const double v = k[key].get<double>();
        if (!std::isfinite(v) || v < lo || v > hi) fail({.file = path, .field = field + "." + key}, "{} is outside [{:g}, {:g}]", v, lo, hi);
        return v;
      };
      c.kernels[name] = KernelRate{value("rate", 1e3, 1e18), value("fixed_s", 0, 1)};
    }
  }
  read_shapes(j, path, "shapes", c.shapes);
  // Contention (files before it have none: nothing is slowed). Sharing cores never speeds work up.
  if (j.contains("shared_cores")) {
    if (!j["shared_cores"].is_number_integer()) fail({.file = path, .field = "shared_cores"}, "not an integer");
    const int64_t n = j["shared_cores"].get<int64_t>();
    if (n < 1 || n > 4096) fail({.file = path, .field = "shared_cores"}, "{} is outside [1, 4096]", n);
    c.shared_cores = int32_t(n);
    for (size_t k = 0; k < c.rates.size(); ++k) {
      const std::string field = std::string("shared_") + kRateNames[k];
      c.shared_rates[k] = number(field.c_str(), 1e3, c.rates[k]);
    }
    c.shared_copy_bytes_per_s = number("shared_copy_bytes_per_s", 1e3, c.copy_bytes_per_s);
  } else {
    c.shared_rates = c.rates;
    c.shared_copy_bytes_per_s = c.copy_bytes_per_s;
  }
  read_shapes(j, path, "shared_shapes", c.shared_shapes);
  if (j.contains("measured_on") && j["measured_on"].is_string()) c.measured_on = j["measured_on"].get<std::string>();
  c.source = path;
  return c;
}

void write_machine_costs(const MachineCosts& c, const std::string& path) {
  nlohmann::json j;
  j["format"] = "of-costs";
  j["version"] = 1;
  j["measured_on"] = c.measured_on;
  for (size_t k = 0; k < c.rates.size(); ++k) j[kRateNames[k]] = c.rates[k];
  j["task_overhead_s"] = c.task_overhead_s;
  j["copy_bytes_per_s"] = c.copy_bytes_per_s;
  j["rank_bytes_per_s"] = c.rank_bytes_per_s;
  j["rank_latency_s"] = c.rank_latency_s;
  j["host_bytes_per_s"] = c.host_bytes_per_s;
  j["kernels"] = nlohmann::json::object();
  for (const auto& [name, k] : c.kernels) j["kernels"][name] = {{"rate", k.rate}, {"fixed_s", k.fixed_s}};
  j["shapes"] = nlohmann::json::object();
  for (const auto& [key, seconds] : c.shapes) j["shapes"][key] = seconds;
  if (c.shared_cores > 1) {  // else not measured: the reader takes the rates alone
    j["shared_cores"] = c.shared_cores;
    for (size_t k = 0; k < c.rates.size(); ++k) j[std::string("shared_") + kRateNames[k]] = c.shared_rates[k];
    j["shared_copy_bytes_per_s"] = c.shared_copy_bytes_per_s;
    j["shared_shapes"] = nlohmann::json::object();
    for (const auto& [key, seconds] : c.shared_shapes) j["shared_shapes"][key] = seconds;
  }
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(path, text.data(), text.size());
}

}  // namespace of
