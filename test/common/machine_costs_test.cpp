// SPDX-License-Identifier: Apache-2.0
// The costs file ofrun --calibrate writes and ofc --costs reads: a round trip, and every way a
// file can be wrong refused naming the file and the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/machine_costs.h"

namespace of {
namespace {

std::string temp_path(const std::string& name) { return (std::filesystem::temp_directory_path() / ("of_costs_" + name)).string(); }

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST_CASE("machine costs: written and read back", "[common]") {
  MachineCosts c = builtin_costs();
  c.rates = {1.5e10, 2.5e10, 3.5e9, 7e9};
  c.task_overhead_s = 3e-6;
  c.measured_on = "host, today";
  c.kernels["conv"] = KernelRate{3e10, 2e-5};
  c.shapes["gemm trans_b=1 : f32[64,1024] f32[1024,1024] -> f32[64,1024]"] = 7.5e-4;
  c.shapes["relu : f32[8] -> f32[8]"] = 0;
  const std::string path = temp_path("roundtrip.json");
  write_machine_costs(c, path);
  const MachineCosts r = read_machine_costs(path);
  CHECK(r.rates == c.rates);
  CHECK(r.task_overhead_s == c.task_overhead_s);
  CHECK(r.copy_bytes_per_s == c.copy_bytes_per_s);
  CHECK(r.rank_bytes_per_s == c.rank_bytes_per_s);
  CHECK(r.rank_latency_s == c.rank_latency_s);
  CHECK(r.host_bytes_per_s == c.host_bytes_per_s);
  CHECK(r.measured_on == "host, today");
  REQUIRE(r.kernels.size() == 1);
  CHECK(r.kernels.at("conv").rate == 3e10);
  CHECK(r.kernels.at("conv").fixed_s == 2e-5);
  CHECK(r.shapes == c.shapes);
  CHECK(r.shared_cores == 1);  // not measured: nothing slowed
  CHECK(r.shared_rates == r.rates);
  CHECK(r.shared_copy_bytes_per_s == r.copy_bytes_per_s);
  CHECK(r.source == path);
  c.shared_cores = 2;
  c.shared_rates = {1.2e10, 2.4e10, 3e9, 3.5e9};
  c.shared_copy_bytes_per_s = c.copy_bytes_per_s / 2;
  c.shared_shapes["sgd_update : f32[8] -> f32[8]"] = 2e-6;
  write_machine_costs(c, path);
  const MachineCosts s = read_machine_costs(path);
  CHECK(s.shared_cores == 2);
  CHECK(s.shared_rates == c.shared_rates);
  CHECK(s.shared_copy_bytes_per_s == c.shared_copy_bytes_per_s);
  CHECK(s.shared_shapes == c.shared_shapes);
  CHECK(builtin_costs().source == "built-in");
  std::filesystem::remove(path);
}

TEST_CASE("machine costs: a file without host_bytes_per_s (before GPU plans) reads it as copy_bytes_per_s", "[common]") {
  MachineCosts c = builtin_costs();
  c.copy_bytes_per_s = 7e9;
  c.host_bytes_per_s = 3e10;
  const std::string path = temp_path("host.json");
  write_machine_costs(c, path);
  CHECK(read_machine_costs(path).host_bytes_per_s == 3e10);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find("\"host_bytes_per_s\"");
  REQUIRE(at != std::string::npos);
  text.erase(at, text.find('\n', at) - at + 1);
  write_text(path, text);
  CHECK(read_machine_costs(path).host_bytes_per_s == 7e9);
  CHECK(builtin_cuda_costs().host_bytes_per_s < builtin_cuda_costs().copy_bytes_per_s);  // PCIe below NVLink
  // Files before contention was measured: not measured, and the rates alone stand in.
  CHECK(read_machine_costs(path).shared_cores == 1);
  CHECK(read_machine_costs(path).shared_rates == read_machine_costs(path).rates);
  std::filesystem::remove(path);
}

TEST_CASE("machine costs: a bad file is refused naming the field", "[common]") {
  const std::string path = temp_path("bad.json");
  MachineCosts c = builtin_costs();
  c.kernels["gemm"] = KernelRate{5e10, 1e-6};
  c.shapes["gemm : f32[2,2] f32[2,2] -> f32[2,2]"] = 2e-6;
  c.shared_cores = 2;
  c.shared_rates = c.rates;
  c.shared_copy_bytes_per_s = c.copy_bytes_per_s;
  c.shared_shapes["relu : f32[3] -> f32[3]"] = 4e-6;
  write_machine_costs(c, path);
  std::ifstream in(path);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto refused = [&](const std::string& text) {
    write_text(path, text);
    try {
      read_machine_costs(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK_THAT(refused("not json"), Catch::Contains(path) && Catch::Contains("not a JSON object"));
  CHECK_THAT(refused("{}"), Catch::Contains("format"));
  CHECK_THAT(refused(replaced("\"version\": 1", "\"version\": 2")), Catch::Contains("version"));
  CHECK_THAT(refused(replaced("\"matrix_flops_per_s\"", "\"matrix\"")), Catch::Contains("matrix_flops_per_s") && Catch::Contains("missing"));
  CHECK_THAT(refused(replaced("\"task_overhead_s\": ", "\"task_overhead_s\": -")), Catch::Contains("task_overhead_s") && Catch::Contains("outside"));
  CHECK_THAT(refused(replaced("\"memory_bytes_per_s\": ", "\"memory_bytes_per_s\": \"fast\", \"x\": ")), Catch::Contains("memory_bytes_per_s"));
  CHECK_THAT(refused(replaced("\"fixed_s\": ", "\"fixed_s\": 1e9, \"x\": ")), Catch::Contains("kernels.gemm.fixed_s") && Catch::Contains("outside"));
  CHECK_THAT(refused(replaced("\"rate\"", "\"speed\"")), Catch::Contains("kernels.gemm.rate") && Catch::Contains("missing"));
  CHECK_THAT(refused(replaced("-> f32[2,2]\": ", "-> f32[2,2]\": -")), Catch::Contains("shapes.gemm") && Catch::Contains("outside"));
  CHECK_THAT(refused(replaced("-> f32[2,2]\": ", "-> f32[2,2]\": \"soon\", \"y\": ")), Catch::Contains("shapes.gemm") && Catch::Contains("not a number"));
  CHECK_THAT(refused(replaced("\"shapes\": {", "\"shapes\": [], \"z\": {")), Catch::Contains("shapes") && Catch::Contains("not an object"));
  CHECK_THAT(refused(replaced("\"gemm : f32", "\"" + std::string(5000, 'g') + " : f32")), Catch::Contains("shapes") && Catch::Contains("characters (1 to 4096)"));
  CHECK_THAT(refused(replaced("\"shared_cores\": 2", "\"shared_cores\": 0")), Catch::Contains("shared_cores") && Catch::Contains("outside"));
  CHECK_THAT(refused(replaced("\"shared_cores\": 2", "\"shared_cores\": 2.5")), Catch::Contains("shared_cores") && Catch::Contains("not an integer"));
  // Sharing cores never speeds work up: a shared rate above the rate alone is a broken file.
  CHECK_THAT(refused(replaced("\"shared_memory_bytes_per_s\": ", "\"shared_memory_bytes_per_s\": 1e17, \"x\": ")),
             Catch::Contains("shared_memory_bytes_per_s") && Catch::Contains("outside"));
  CHECK_THAT(refused(replaced("\"shared_matrix_flops_per_s\"", "\"shared_matrix\"")), Catch::Contains("shared_matrix_flops_per_s") && Catch::Contains("missing"));
  CHECK_THAT(refused(replaced("-> f32[3]\": ", "-> f32[3]\": -")), Catch::Contains("shared_shapes.relu") && Catch::Contains("outside"));
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(read_machine_costs(path), Catch::Contains(path));
}

}  // namespace
}  // namespace of
