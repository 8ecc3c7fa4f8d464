// SPDX-License-Identifier: Apache-2.0
// ofdump: show what a plan holds (verified first, exactly as ofrun would load it).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cli/cli_args.h"
#include "cli/cli_main.h"
#include "cli/huge_pages.h"
#include "common/file_util.h"
#include "runtime/plan/dump.h"
#include "runtime/plan/load.h"

int main(int argc, char** argv) {
  of::cli::restart_with_huge_pages(argv);
  CLI::App app{"ofdump: show an of plan"};
  std::string path;
  bool json = false, dot = false;
  app.add_option("plan", path, "plan file written by ofc")->required();
  auto* j = app.add_flag("--json", json, "machine-readable JSON (stable field names; with --sbp: the same)");
  auto* d = app.add_flag("--dot", dot, "Graphviz DOT of the task graph")->excludes(j);
  bool sbp = false, memory = false, stages = false;
  std::string diff_with;
  auto* st = app.add_flag("--stages", stages, "pipeline stages: their ops, devices and memory")->excludes(d)->excludes(j);
  auto* sb = app.add_flag("--sbp", sbp, "every logical tensor's placement and SBP, and every boxing and why (with --json: the full JSON)")->excludes(d);
  auto* me = app.add_flag("--memory", memory, "per-device arena size")->excludes(d)->excludes(j);
  app.add_option("--diff", diff_with, "what changed from this plan to the positional one (ofdump --diff a.ofp b.ofp); exit 1 when they differ, as diff does")
      ->excludes(d)->excludes(j)->excludes(st)->excludes(sb)->excludes(me);
  of::cli::add_version(app, "ofdump");
  if (auto status = of::cli::parse(app, "ofdump", argc, argv)) return *status;
  return of::cli::guarded_main("ofdump", [&] {
    of::plan::Plan p = of::runtime::load_plan(path);
    if (!diff_with.empty()) {
      const std::string diff = of::runtime::dump_diff(of::runtime::load_plan(diff_with), p);
      if (!diff.empty()) {
        fmt::print("{}", diff);
        return 1;
      }
      // Plans can differ where no view looks (attributes, names, the weights' checksum).
      if (of::read_file(diff_with) != of::read_file(path)) {
        fmt::print("the plans differ, but not in tasks, registers, memory or SBP (attributes, names or weights)\n");
        return 1;
      }
      fmt::print("the plans are identical\n");
      return 0;
    }
    if (json) {
      fmt::print("{}", of::runtime::dump_json(p));
      return 0;
    }
    if (dot) {
      fmt::print("{}", of::runtime::dump_dot(p));
      return 0;
    }
    // The text views combine, in this order; none asked for: the summary.
    std::vector<std::string> views;
    if (stages) views.push_back(of::runtime::dump_stages(p));
    if (sbp) views.push_back(of::runtime::dump_sbp(p));
    if (memory) views.push_back(of::runtime::dump_memory(p));
    if (views.empty()) views.push_back(of::runtime::dump_text(p, path));
    for (size_t i = 0; i < views.size(); ++i) fmt::print("{}{}", i ? "\n" : "", views[i]);
    return 0;
  });
}
