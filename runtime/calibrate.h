// SPDX-License-Identifier: Apache-2.0
// ofrun --calibrate: measures this machine's costs (common/machine_costs.h) once, for ofc --costs.
// Kernels run on one thread each (the configuration ofc's predicted step time assumes: a worker
// thread per device and --kernel-threads 1): a matrix product, a convolution, an LSTM and an
// element-wise add, each costed in the units kernels/kernel_work.h gives them, so that a rate
// here is what the compiler divides by. A copy stands for transfers between devices, and a
// message round trip between two CAF actors for what an act costs beyond its kernel. Links
// between ranks are not measured here (they need two processes): those keep the built-in
// figures, and the file says so.
#pragma once

#include "common/machine_costs.h"

namespace of::runtime {

// `seconds`: about how long each measurement may take (the medians of repeats within it).
MachineCosts calibrate(double seconds = 0.5);

}  // namespace of::runtime
