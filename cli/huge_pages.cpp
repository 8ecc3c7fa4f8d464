// SPDX-License-Identifier: Apache-2.0
#include "cli/huge_pages.h"

#include <unistd.h>

#include <cstdlib>

namespace of::cli {

void restart_with_huge_pages(char** argv) {
#if defined(__GLIBC__) && defined(__linux__)
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (::setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  ::unsetenv("GLIBC_TUNABLES");  // no restart (no /proc, or the binary is gone): go on as we are
#else
  (void)argv;
#endif
}

}  // namespace of::cli
