// SPDX-License-Identifier: Apache-2.0
// ofrun --calibrate: measures this machine's costs (common/machine_costs.h) once, for ofc --costs.
// Kernels run on one thread each (the configuration ofc's predicted step time assumes: a worker
// thread per device and --kernel-threads 1): a matrix product, a convolution, an LSTM and an
// element-wise add, each costed in the units kernels/kernel_work.h gives them, so that a rate
// here is what the compiler divides by. A copy stands for transfers between devices, and a
// message round trip between two CAF actors for what an act costs beyond its kernel. Links
// between ranks are not measured here (they need two processes): those keep the built-in
// figures, and the file says so. Given a plan, the kernels of that plan are measured as it runs
// them, which is what makes a prediction of that model's plans close (shapes matter: a
// convolution of 3 input channels runs at a fraction of one of 64). Each rate is also measured
// with every core of the host running a copy at once (MachineCosts::shared_*): a rank's devices
// share the memory bandwidth and caches.
#pragma once

#include "common/machine_costs.h"
#include "schemas/plan_model.h"

namespace of::runtime {

// `seconds`: about how long each measurement may take (the medians of repeats within it).
MachineCosts calibrate(double seconds = 0.5);

// Also measures each compute task's kernel of `p` on its own shapes (zeroed buffers: every index
// is 0, in range; a shape that several tasks share, once), records each in c.shapes and fits, per
// kernel name, an act's time to fixed_s + work / rate over that kernel's shapes (least squares; a
// plain rate where the fit is not positive). Kernels that plan does not have keep what `c` had.
// Each shape is also timed with c.shared_cores threads running a copy of it at once
// (c.shared_shapes; shapes whose copies would pass 2 GiB are not). Returns how many shapes were measured.
int64_t calibrate_kernels(const plan::Plan& p, MachineCosts& c, double seconds_per_task = 0.02);

}  // namespace of::runtime
