// SPDX-License-Identifier: Apache-2.0
// ofc and ofdump on big plans: have glibc's malloc back the heap with transparent huge pages.
#pragma once

namespace of::cli {

// Restarts the program (the same binary, the same arguments) with GLIBC_TUNABLES set to
// glibc.malloc.hugetlb=1, unless GLIBC_TUNABLES is already set (the user's choice, or this is the
// restarted run). Returns, doing nothing else, where it cannot restart.
//
// Why: a plan for a thousand devices builds graphs and task lists of millions of entries, and
// most of ofc's time there went to page faults on fresh memory (4 KiB each; on a virtual
// machine each costs far more). With huge pages, the GPT on 128x8 devices compiles in 54 s
// instead of 92 s (benchmarks/README.md). The tunable is read only at startup, hence the restart;
// machines with transparent huge pages off ("never") run as before.
void restart_with_huge_pages(char** argv);

}  // namespace of::cli
