// SPDX-License-Identifier: Apache-2.0
#include "kernels/cuda/device_stream.h"

#include <fmt/format.h>

#include "common/error.h"
#include "kernels/cuda/cublas_api.h"

namespace of::kernels {

void DeviceStream::note_failure(const char* what, int code) {
  if (failure.empty()) failure = fmt::format("{}: error {}", what, code);
}

void DeviceStream::check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess && failure.empty()) failure = fmt::format("{}: {}", kernel, cudaGetErrorString(e));
}

namespace cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // "no driver" is an answer here, not a sticky error
    return 0;
  }
  return n;
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail({}, "cuda: {}: {}", what, cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) fail({}, "cublas: {}: status {}", what, int(status));
}

StreamOwner::StreamOwner(int device) {
  s_.device = device;
  try {
    check(cudaSetDevice(device), "cudaSetDevice");
    check(cudaStreamCreateWithFlags(&s_.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    const CublasApi& blas = cublas();
    check(blas.create(&s_.blas), "cublasCreate");
    check(blas.set_stream(s_.blas, s_.stream), "cublasSetStream");
    // Plain fp32 products, as the CPU twin computes them (no TF32 unless a plan asks for it).
    check(blas.set_math_mode(s_.blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  } catch (...) {
    release();  // a throwing constructor runs no destructor
    throw;
  }
}

StreamOwner::~StreamOwner() { release(); }

void StreamOwner::release() {
  if (s_.blas || s_.stream) (void)cudaSetDevice(s_.device);  // the handle and stream belong to that device
  if (s_.blas) cublas().destroy(s_.blas);  // loaded: the handle came from it
  if (s_.stream) cudaStreamDestroy(s_.stream);
  s_.blas = nullptr;
  s_.stream = nullptr;
}

void StreamOwner::synchronize() {
  check(cudaStreamSynchronize(s_.stream), "cudaStreamSynchronize");
  if (!s_.failure.empty()) fail({}, "cuda: {}", s_.failure);
}

DeviceBuffer::DeviceBuffer(size_t bytes) {
  if (bytes > 0) check(cudaMalloc(&p_, bytes), "cudaMalloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (p_) cudaFree(p_);
}

}  // namespace cuda
}  // namespace of::kernels
