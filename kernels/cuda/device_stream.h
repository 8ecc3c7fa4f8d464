// SPDX-License-Identifier: Apache-2.0
// A CUDA device stream as kernels see it (RunCtx::stream): the device, the stream, that stream's
// cuBLAS handle and its planned workspace. run() never throws: a failed launch or library call is
// recorded here (the first one wins) and whoever completes the act checks it and names the task.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace of::kernels {

struct DeviceStream {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;  // bound to `stream`; one per stream, as cuBLAS asks
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // The first failure seen by a kernel on this stream, as "what: code"; empty while none.
  std::string failure;

  // Records `what` unless a failure is already recorded (no allocation once one is: run() paths
  // call this only on the error path, which stops the run).
  void note_failure(const char* what, int code);
  // After each launch: records a launch error (bad configuration), if any.
  void check_launch(const char* kernel);
};

namespace cuda {

// CUDA devices this process can use; 0 when there is no driver or no device (never throws).
int device_count();

// Throws of::Error naming `what` unless status is cudaSuccess (prepare and set-up paths only).
void check(cudaError_t status, const char* what);
void check(cublasStatus_t status, const char* what);

// Owns a stream and its cuBLAS handle on `device` (tests and the runtime's devices).
class StreamOwner {
 public:
  explicit StreamOwner(int device = 0);
  ~StreamOwner();
  StreamOwner(const StreamOwner&) = delete;
  StreamOwner& operator=(const StreamOwner&) = delete;

  DeviceStream& get() { return s_; }
  // Waits for the stream and throws of::Error with the first recorded or asynchronous failure.
  void synchronize();

 private:
  void release();
  DeviceStream s_;
};

// Device memory allocated at prepare time (a kernel's private scratch), freed with the kernel.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

}  // namespace cuda
}  // namespace of::kernels
