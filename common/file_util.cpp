// SPDX-License-Identifier: Apache-2.0
#include "common/file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>

#include "common/error.h"

namespace of {

namespace {

uint64_t machine_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : ~uint64_t(0);
}

}  // namespace

std::vector<uint8_t> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail({.file = path}, "cannot open: {}", std::strerror(errno));
  auto refuse = [&](const std::string& why) {
    ::close(fd);
    fail({.file = path}, "{}", why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) refuse(fmt::format("cannot stat: {}", std::strerror(errno)));
  // A directory or a device (/dev/zero never ends) is not a file to read whole; pipes are
  // read, but no file may grow past this machine's memory.
  if (S_ISDIR(st.st_mode)) refuse("is a directory, not a file");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) refuse("not a regular file");
  const uint64_t limit = machine_memory();
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > limit)
    refuse(fmt::format("is {} bytes, more than this machine's memory ({} bytes)", uint64_t(st.st_size), limit));
  std::vector<uint8_t> out;
  uint8_t chunk[1 << 16];
  try {
    if (S_ISREG(st.st_mode)) out.reserve(size_t(st.st_size));
    for (;;) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) refuse(fmt::format("read failed: {}", std::strerror(errno)));
      if (n == 0) break;
      if (out.size() + size_t(n) > limit) refuse(fmt::format("grows past this machine's memory ({} bytes) without ending", limit));
      out.insert(out.end(), chunk, chunk + n);
    }
  } catch (const std::bad_alloc&) {
    refuse(fmt::format("out of memory after reading {} bytes", out.size()));
  }
  ::close(fd);
  return out;
}

void write_file_atomic(const std::string& path, const void* data, size_t size) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail({.file = path}, "cannot create {}: {}", tmp, std::strerror(errno));
  const auto* p = static_cast<const uint8_t*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail({.file = path}, "write failed: {}", std::strerror(err));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail({.file = path}, "write failed: {}", std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail({.file = path}, "cannot rename {} into place: {}", tmp, std::strerror(err));
  }
  // The rename itself is durable only once the directory entry is on disk.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

uint32_t crc32_of(const void* data, size_t size) {
  // zlib's crc32 takes uInt lengths: feed large buffers in chunks.
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (size > 0) {
    uInt n = size > (1u << 30) ? (1u << 30) : static_cast<uInt>(size);
    crc = ::crc32(crc, p, n);
    p += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace of
