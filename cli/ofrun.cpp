// SPDX-License-Identifier: Apache-2.0
// ofrun: stream a plan on CPU actors, feeding .npy inputs and collecting .npy outputs.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/cli_main.h"
#include "runtime/run.h"

namespace {

// "NAME=FILE" -> {NAME, FILE}
std::pair<std::string, std::string> split_binding(const std::string& s, const char* flag) {
  size_t eq = s.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == s.size())
    throw of::Error(fmt::format("{} '{}' must look like NAME=FILE.npy", flag, s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ofrun: run an of plan"};
  of::runtime::RunOptions o;
  std::vector<std::string> inputs, outputs;
  app.add_option("plan", o.plan_path, "plan file written by ofc")->required();
  app.add_option("--input", inputs, "feed a graph input: NAME=FILE.npy (k x batch rows stream as k pieces)");
  app.add_option("--output", outputs, "write a graph output: NAME=FILE.npy (pieces concatenated)");
  app.add_option("--pieces", o.pieces, "pieces to stream (inputs repeat as needed)")->check(CLI::PositiveNumber);
  app.add_option("--slots", o.slots, "use at most this many slots per register")->check(CLI::PositiveNumber);
  app.add_option("--threads", o.threads, "actor worker threads (default: one per core)")->check(CLI::PositiveNumber);
  app.add_option("--kernel-threads", o.kernel_threads, "threads each kernel may use")->check(CLI::PositiveNumber);
  app.add_option("--scheduler", o.policy, "CAF scheduling policy")->check(CLI::IsMember({"sharing", "stealing"}));
  app.add_option("--trace", o.trace_path, "write a Chrome-trace JSON of actor activity");
  CLI11_PARSE(app, argc, argv);
  return of::cli::guarded_main("ofrun", [&] {
    for (const std::string& s : inputs) o.inputs.push_back(split_binding(s, "--input"));
    for (const std::string& s : outputs) o.outputs.push_back(split_binding(s, "--output"));
    of::runtime::RunResult r = of::runtime::run(o);
    fmt::print("ofrun: {} pieces, {:.3f} s, {:.1f} pieces/s\n", r.pieces, r.seconds, double(r.pieces) / r.seconds);
    return 0;
  });
}
