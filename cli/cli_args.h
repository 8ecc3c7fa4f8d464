// SPDX-License-Identifier: Apache-2.0
// What every tool's command line does the same way, as good Unix tools do:
//   --help           the usage on stdout, exit 0
//   --version        "ofX <version> (plan format N, <build>)" on stdout, exit 0
//   a bad argument   one line "ofX: error: ..." on stderr, exit 2 (usage errors; 1 is a failed run)
// and validators whose messages a person reads ("must be at least 1", not CLI11's
// "not in range 0.000000 to 1.797693e+308").
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "schemas/plan_format.h"

#ifndef OF_VERSION_STRING
#define OF_VERSION_STRING "unknown"
#endif
#ifndef OF_BUILD_STRING
#define OF_BUILD_STRING "unknown build"
#endif

namespace of::cli {

// The exit status of a command-line (usage) error.
inline constexpr int kUsageError = 2;

inline std::string version_line(const char* tool) {
  return fmt::format("{} {} (plan format {}, {})", tool, OF_VERSION_STRING, of::plan_format::kVersion, OF_BUILD_STRING);
}

// Adds --version. Call before parse().
inline void add_version(CLI::App& app, const char* tool) {
  app.set_version_flag("--version", version_line(tool), "print the version (project, plan format, build) and exit");
}

// Parses argv. Returns an exit status when the tool must stop now (help, version, a usage
// error already reported in one line), nothing when it should run.
inline std::optional<int> parse(CLI::App& app, const char* tool, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion& e) {
    std::fprintf(stdout, "%s\n", e.what());
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n' || c == '\r') c = ' ';
    while (!what.empty() && what.back() == ' ') what.pop_back();
    std::fprintf(stderr, "%s: error: %s (see %s --help)\n", tool, what.c_str(), tool);
    return kUsageError;
  }
}

// An integer option's bounds, phrased for people.
inline CLI::Validator at_least(int64_t lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return fmt::format("'{}' is not an integer", s);
        if (v < lo) return fmt::format("must be at least {}, got {}", lo, v);
        return {};
      },
      fmt::format(">= {}", lo));
}

inline CLI::Validator between(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        int64_t v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return fmt::format("'{}' is not an integer", s);
        if (v < lo || v > hi) return fmt::format("must be from {} to {}, got {}", lo, hi, v);
        return {};
      },
      fmt::format("{}..{}", lo, hi));
}

// A positive real number (seconds, rates), phrased for people.
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v)) return fmt::format("'{}' is not a number", s);
        if (!(v > 0) || v > 1e12) return fmt::format("must be a positive number, got {}", s);
        return {};
      },
      "> 0");
}

}  // namespace of::cli
