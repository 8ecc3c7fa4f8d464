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
  bool sbp = false, memory = false;
  app.add_flag("--sbp", sbp, "every logical tensor's placement and SBP, and every boxing and why (with --json: the full JSON)")->excludes(d);
  app.add_flag("--memory", memory, "per-device arena size")->excludes(d)->excludes(j);
  CLI11_PARSE(app, argc, argv);
  return of::cli::guarded_main("ofdump", [&] {
    of::plan::Plan p = of::runtime::load_plan(path);
    std::string out = json     ? of::runtime::dump_json(p)
                      : dot    ? of::runtime::dump_dot(p)
                      : sbp    ? of::runtime::dump_sbp(p)
                      : memory ? of::runtime::dump_memory(p)
                               : of::runtime::dump_text(p, path);
    fmt::print("{}", out);
    return 0;
  });
}
