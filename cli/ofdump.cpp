// SPDX-License-Identifier: Apache-2.0
// ofdump: show what a plan holds (verified first, exactly as ofrun would load it).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/cli_main.h"
#include "runtime/plan/dump.h"
#include "runtime/plan/load.h"

int main(int argc, char** argv) {
  CLI::App app{"ofdump: show an of plan"};
  std::string path;
  bool json = false, dot = false;
  app.add_option("plan", path, "plan file written by ofc")->required();
  auto* j = app.add_flag("--json", json, "machine-readable JSON (stable field names)");
  auto* d = app.add_flag("--dot", dot, "Graphviz DOT of the task graph")->excludes(j);
  bool sbp = false, memory = false, stages = false;
  std::string diff_with;
  app.add_flag("--stages", stages, "pipeline stages: their ops, devices and memory")->excludes(d)->excludes(j);
  app.add_option("--diff", diff_with, "what changed from this plan to the positional one (ofdump --diff a.ofp b.ofp)")->excludes(d)->excludes(j);
  app.add_flag("--sbp", sbp, "every logical tensor's placement and SBP, and every boxing and why (with --json: the full JSON)")->excludes(d);
  app.add_flag("--memory", memory, "per-device arena size")->excludes(d)->excludes(j);
  CLI11_PARSE(app, argc, argv);
  return of::cli::guarded_main("ofdump", [&] {
    of::plan::Plan p = of::runtime::load_plan(path);
    if (!diff_with.empty()) {
      fmt::print("{}", of::runtime::dump_diff(of::runtime::load_plan(diff_with), p));
      return 0;
    }
    std::string out = stages ? of::runtime::dump_stages(p)
                      : json     ? of::runtime::dump_json(p)
                      : dot    ? of::runtime::dump_dot(p)
                      : sbp    ? of::runtime::dump_sbp(p)
                      : memory ? of::runtime::dump_memory(p)
                               : of::runtime::dump_text(p, path);
    fmt::print("{}", out);
    return 0;
  });
}
