// SPDX-License-Identifier: Apache-2.0
// What work costs in time on one machine: the rates the compiler's predicted step time uses.
// `ofrun --calibrate FILE` measures them (kernels on one core, copies, an actor's act; with a
// plan, also each of its kernels on its own shapes) and writes this file; `ofc --costs FILE` reads it. Without a file the compiler uses builtin_costs(), rough
// figures for one x86 core. The file is untrusted input: every field is checked before use.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/attrs.h"
#include "common/shape.h"

namespace of {

// One kernel's cost measured on a plan's own shapes (ofrun PLAN --calibrate FILE): an act takes
// fixed_s plus its work (kernels/kernel_work.h: flops or bytes) over rate.
struct KernelRate {
  double rate = 1;
  double fixed_s = 0;
};

struct MachineCosts {
  // Per kernels::WorkKind (matrix, convolution, recurrent: flop/s; memory: bytes/s), one core.
  std::array<double, 4> rates = {2e10, 1e10, 5e9, 4e9};
  double task_overhead_s = 5e-6;    // an actor's act beyond its kernel: messages, scheduling
  double copy_bytes_per_s = 5e9;    // a copy between devices of one process (transfer, collective)
  double rank_bytes_per_s = 2e9;    // between processes (UCX): bandwidth ...
  double rank_latency_s = 2e-5;     // ... and the latency of one message
  // Between a host and its GPUs (PCIe: a cuda plan's h2d and d2h transfers); optional in the file,
  // whose readers before it have none: copy_bytes_per_s then.
  double host_bytes_per_s = 5e9;
  // Kernels measured by name; others cost their work at rates[kind].
  std::map<std::string, KernelRate> kernels;
  // Seconds of one act of a kernel on exact shapes and attributes (kernel_shape_key), measured on
  // a plan's own tasks: what a rate cannot say (a product of 32 rows is not half the time of one
  // of 64: the weight is read and packed whole either way). Looked up before `kernels`.
  std::map<std::string, double> shapes;
  // The same work with `shared_cores` cores of the host each running a copy of it at once, as a
  // rank's CPU devices do (data parallelism: every device updates its own replica of the weights
  // in step with the others): they share the memory bandwidth and the last-level cache, and an
  // optimizer's update, memory-bound, ran 2.5x slower beside its twin on this 2-core machine.
  // shared_cores 1: not measured, nothing is slowed. An act beside k busy devices of its rank
  // costs its time alone plus min(1, k / (shared_cores - 1)) of the difference
  // (compiler/parallel/step_time.h). Rates per kernels::WorkKind; shapes as `shapes`.
  int32_t shared_cores = 1;
  std::array<double, 4> shared_rates = rates;
  double shared_copy_bytes_per_s = copy_bytes_per_s;
  std::map<std::string, double> shared_shapes;
  std::string source;               // "built-in" or the file it came from (for people)
  std::string measured_on;          // calibration's host name and date; empty for the built-in
};

MachineCosts builtin_costs();

// The key of MachineCosts::shapes: the kernel, its attributes and its tensors, e.g.
// "gemm trans_b=1 : f32[64,1024] f32[1024,1024] -> f32[64,1024]".
std::string kernel_shape_key(std::string_view kernel, const Attrs& attrs, const std::vector<TensorDesc>& in,
                             const std::vector<TensorDesc>& out);
// Rough figures for one datacenter GPU (an H100's float32 without TF32, HBM3, NVLink between the
// GPUs of a rank, a 400 Gb/s NIC between ranks, PCIe 5 to the host), for plans on cuda devices
// without --costs; a GPU run's calibration replaces them.
MachineCosts builtin_cuda_costs();

// Fails naming the file and the field for anything but a complete file of positive, finite rates.
MachineCosts read_machine_costs(const std::string& path);
// Writes atomically; the format ("of-costs", version 1) is what read_machine_costs accepts.
void write_machine_costs(const MachineCosts& c, const std::string& path);

}  // namespace of
