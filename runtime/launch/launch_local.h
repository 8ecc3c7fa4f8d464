// SPDX-License-Identifier: Apache-2.0
// ofrun --launch-local: every rank of a plan as a process of this machine. The coordinator's
// socket is opened here and handed to rank 0 (no port race), a fresh job token goes to every
// rank, each rank's lines come out prefixed "[rank R] ", a signal to the launcher goes to every
// rank once, and the launcher exits with the first failure's status.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace of::runtime::launch {

// `args`: the command line each rank runs (args[0] is the program, run as this executable);
// "--rank R --world W --coordinator 127.0.0.1:PORT" is appended. Returns the exit status:
// 0, or the first failed rank's (128 + signal for a killed one). `grace_s`: how long the
// others get to stop by themselves after a failure before they are killed.
int launch_local(int32_t world, const std::vector<std::string>& args, double grace_s = 30);

}  // namespace of::runtime::launch
