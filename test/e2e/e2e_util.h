// SPDX-License-Identifier: Apache-2.0
// Helpers for end-to-end tests that drive the ofc/ofrun/ofdump binaries as a user would.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/npy.h"

namespace of::e2e {

struct CmdResult {
  int exit_code = -1;  // -1: killed by a signal (a crash)
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A fresh directory per test, removed at the end.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/of_e2e_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline CmdResult run_cmd(const std::string& cmd, const TempDir& dir) {
  std::string out = dir / ".stdout", err = dir / ".stderr";
  int status = std::system((cmd + " >" + out + " 2>" + err).c_str());
  CmdResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline std::string bin(const std::string& tool) { return std::string(OF_BIN_DIR) + "/" + tool; }
inline std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

// max |a-b| / max |b|: the relative error the issues specify.
inline double relative_error(const NpyArray& got, const NpyArray& want) {
  const auto* a = reinterpret_cast<const float*>(got.data.data());
  const auto* b = reinterpret_cast<const float*>(want.data.data());
  size_t n = want.data.size() / 4;
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < n; ++i) {
    max_diff = std::max(max_diff, double(std::abs(a[i] - b[i])));
    max_ref = std::max(max_ref, double(std::abs(b[i])));
  }
  return max_ref > 0 ? max_diff / max_ref : max_diff;
}

inline size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace of::e2e
