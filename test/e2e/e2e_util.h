// SPDX-License-Identifier: Apache-2.0
// Helpers for end-to-end tests that drive the ofc/ofrun/ofdump binaries as a user would.
#pragma once

#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>

#include "common/npy.h"

extern char** environ;

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

// Starts `cmd` in the background (its stdout and stderr to bg.out and bg.err in `dir`); the pid
// is the command's own (sh execs it), so signals reach it.
inline pid_t spawn(const std::string& cmd, const TempDir& dir) {
  std::string sh = "exec " + cmd + " >" + (dir / "bg.out") + " 2>" + (dir / "bg.err");
  const char* argv[] = {"/bin/sh", "-c", sh.c_str(), nullptr};
  pid_t pid = 0;
  // Never a pid <= 0: kill() would signal a process group or every process.
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0 || pid <= 0) std::abort();
  return pid;
}

// The exit status of a spawned command, or -signal when a signal ended it.
inline int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

// The checkpoint folder's `latest` pointer ("" when there is none).
inline std::string latest_pointer(const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/latest";
  return std::filesystem::exists(path) ? slurp(path) : "";
}

// Waits (however slow the machine, e.g. under ASan: up to a minute) until `latest` differs from
// `before`, i.e. a background run has saved. Returns whether it did.
inline bool wait_for_new_latest(const std::string& checkpoint_dir, const std::string& before) {
  for (int waited = 0; waited < 1200; ++waited) {
    const std::string now = latest_pointer(checkpoint_dir);
    if (!now.empty() && now != before) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

inline std::string bin(const std::string& tool) { return std::string(OF_BIN_DIR) + "/" + tool; }
inline std::string fixture(const std::string& name) { return std::string(OF_FIXTURES_DIR) + "/" + name; }

// max |a-b| / max |b|: the relative error the issues specify. Infinite (so any tolerance fails)
// when the arrays differ in dtype or shape, are not f32, or either holds a NaN.
inline double relative_error(const NpyArray& got, const NpyArray& want) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (got.dtype != DType::f32 || want.dtype != DType::f32 || got.shape != want.shape || got.data.size() != want.data.size() ||
      want.data.size() % 4 != 0)
    return kInf;
  const auto* a = reinterpret_cast<const float*>(got.data.data());
  const auto* b = reinterpret_cast<const float*>(want.data.data());
  size_t n = want.data.size() / 4;
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return kInf;  // std::max would drop it
    max_diff = std::max(max_diff, std::abs(double(a[i]) - double(b[i])));
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
