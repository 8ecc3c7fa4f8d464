// SPDX-License-Identifier: Apache-2.0
#include "runtime/train/checkpoint_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "common/error.h"

namespace of::runtime::train {
namespace fs = std::filesystem;
namespace {

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20)); }

// The pid a lock file names, or "unknown".
std::string holder_of(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  std::string s(buf, n > 0 ? size_t(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s.empty() || s.find_first_not_of("0123456789") != std::string::npos ? "unknown" : s;
}

}  // namespace

uint64_t checkpoint_bytes(const PlanInstance& inst) {
  uint64_t bytes = 1 << 16;  // state.json and two safetensors headers, generously
  for (const StoredTensor& t : inst.stored())
    if (t.persistent || t.weight) bytes += t.bytes + 256;
  return bytes;
}

CheckpointWriter::CheckpointWriter(std::string dir, bool resume, bool overwrite, int64_t keep) : dir_(std::move(dir)), keep_(keep) {
  // The checkpoint `latest` named before a save must survive it (see the header): at least 2.
  if (keep_ < 2) fail({.field = "--keep-checkpoints"}, "must be at least 2, is {}", keep_);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail({.file = dir_}, "cannot create the checkpoint folder: {}", ec.message());
  const std::string lock_path = (fs::path(dir_) / ".lock").string();
  lock_fd_ = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) fail({.file = dir_}, "cannot write the checkpoint folder: {}", std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = holder_of(lock_fd_);
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK)
      fail({.file = dir_}, "checkpoint folder is in use by another run (pid {}); wait for it to end or choose another --checkpoint", holder);
    fail({.file = lock_path}, "cannot lock: {}", std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size()))
    fail({.file = lock_path}, "cannot write: {}", std::strerror(errno));

  // Under the lock nobody else writes here: every partial save is a killed run's.
  uint64_t removed = 0, removed_bytes = 0;
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(".partial-", 0) != 0 && name.find(".tmp.") == std::string::npos) continue;
    for (const auto& f : fs::recursive_directory_iterator(e.path(), ec))
      if (f.is_regular_file(ec)) removed_bytes += f.file_size(ec);
    if (e.is_regular_file(ec)) removed_bytes += e.file_size(ec);
    fs::remove_all(e.path(), ec);
    ++removed;
  }
  if (removed > 0)
    fmt::print(stderr, "ofrun: note: {}: removed {} unfinished save(s) of killed runs ({})\n", dir_, removed, mib(removed_bytes));

  const std::string latest = latest_name(dir_);
  const std::vector<std::string> steps = step_folders(dir_);
  if (!resume && !overwrite && (!latest.empty() || !steps.empty()))
    fail({.file = dir_}, "holds checkpoints (latest {}): --resume continues them, --overwrite starts over and replaces them",
         latest.empty() ? steps.back() : latest);
  // A resumed line is the step folders up to the latest (newer ones are of a line that was
  // resumed from an older checkpoint: they go at the first save); a run that starts over has none.
  if (resume)
    for (const std::string& s : steps)
      if (s <= latest) line_.push_back(s);
}

CheckpointWriter::~CheckpointWriter() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

void CheckpointWriter::check_space(uint64_t bytes) const {
  struct statvfs st {};
  if (::statvfs(dir_.c_str(), &st) != 0) return;  // unknown: the save itself reports a full disk
  const uint64_t free_bytes = uint64_t(st.f_bavail) * uint64_t(st.f_frsize);
  if (free_bytes < bytes) fail({.file = dir_}, "{} free, one checkpoint needs {}", mib(free_bytes), mib(bytes));
}

std::string CheckpointWriter::save(CheckpointImage& image, const CheckpointState& state, const std::function<bool()>& abandoned) {
  const std::string folder = commit_checkpoint(dir_, image, state, abandoned);
  const std::string name = fs::path(folder).filename().string();
  // The newest `keep_` of the line stay; a run that started over removes the rest at its first
  // save (until then they were DIR's latest).
  if (line_.empty() || line_.back() != name) line_.push_back(name);  // the same step saved again
  while (int64_t(line_.size()) > keep_) line_.pop_front();
  std::error_code ec;
  for (const std::string& s : step_folders(dir_))
    if (std::find(line_.begin(), line_.end(), s) == line_.end()) fs::remove_all(fs::path(dir_) / s, ec);
  return folder;
}

}  // namespace of::runtime::train
