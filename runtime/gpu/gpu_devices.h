// SPDX-License-Identifier: Apache-2.0
// The GPUs a plan places on this process, as ofrun runs them (issue 15): each plan GPU gets a
// CUDA device of this machine, its arena in device memory (one cudaMalloc at load, none after),
// one stream with its cuBLAS handle, and a launcher: one thread that enqueues the acts of every
// task on that GPU in the order they come (runtime/actors/late_action.h's pool, without jitter).
// A GPU act only enqueues its kernel or copy and returns; a host callback on the stream reports
// its end to the task (the protocol's late completion), so the host never waits for the device
// and a slot is freed or passed on only once the stream has finished with it.
//
// Copies between host and GPU registers (transfer tasks) run on the GPU side's stream; host
// arenas are page-locked so that they are asynchronous. Collectives within a process read other
// GPUs' registers in place: peer access is enabled between every pair.
//
// No CUDA types here: in a build without the toolkit the same class exists and refuses to start
// in one line (gpu_devices_absent.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "runtime/actors/protocol.h"
#include "schemas/plan_model.h"

namespace of::runtime {

class LatePool;

class GpuDevices {
 public:
  // Maps the plan's GPUs that process `rank` runs (-1: every rank's) onto this machine's CUDA
  // devices in plan order. Fails naming the plan when CUDA is absent or there are too few GPUs.
  GpuDevices(const plan::Plan& p, int32_t rank, const std::string& plan_path);
  ~GpuDevices();
  GpuDevices(const GpuDevices&) = delete;
  GpuDevices& operator=(const GpuDevices&) = delete;

  // Whether plan device `device` is a GPU this process runs.
  bool holds(int32_t device) const;
  // Arena memory on GPU `device`, every byte set to `fill`; freed with this object.
  uint8_t* allocate(int32_t device, uint64_t bytes, uint8_t fill, const std::string& field);
  // Page-locks host memory that copies to or from a GPU read or write (unlocked with this object).
  void pin(uint8_t* host, uint64_t bytes);
  // Makes GPU `device` current on this thread (before preparing a kernel for it).
  void make_current(int32_t device) const;
  // The action of a compute or collective task on GPU `device` / of a transfer task whose GPU
  // side is `device` (blob i of the input copied into blob i of the output). Both complete late;
  // stream.cpp hands their acts to launcher(device).
  std::unique_ptr<protocol::Action> kernel_action(int32_t device, std::unique_ptr<kernels::Kernel> kernel, kernels::RunCtx base) const;
  std::unique_ptr<protocol::Action> copy_action(int32_t device, std::vector<uint64_t> blob_bytes) const;
  const std::shared_ptr<LatePool>& launcher(int32_t device) const;

 private:
  struct Gpu;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Copies between host memory and GPU memory (either side may be either), synchronously: for the
// paths off the actors' (loading weights, checkpoints), never for an act.
void gpu_copy(void* to, const void* from, uint64_t bytes);
void gpu_fill(void* at, uint8_t value, uint64_t bytes);

}  // namespace of::runtime
