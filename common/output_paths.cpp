// SPDX-License-Identifier: Apache-2.0
#include "common/output_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.h"

namespace of {

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (a.empty() || b.empty() || ::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void refuse_outputs_over_inputs(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs) {
  for (const auto& [out, out_what] : outputs)
    for (const auto& [in, in_what] : inputs)
      if (same_file(out, in)) fail({.file = out}, "{} would overwrite {} ({}); write it elsewhere", out_what, in_what, in);
}

void check_can_create(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) fail({.file = path}, "{} is a folder, not a file", what);
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string probe = (parent.empty() ? std::filesystem::path(".") : parent).string() + "/.of-probe-" + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) fail({.file = path}, "cannot write {} here: {}", what, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace of
