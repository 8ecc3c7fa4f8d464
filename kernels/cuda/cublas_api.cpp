// SPDX-License-Identifier: Apache-2.0
#include "kernels/cuda/cublas_api.h"

#include <dlfcn.h>

#include "common/error.h"

namespace of::kernels::cuda {

namespace {

constexpr const char* kLibrary = "libcublas.so.13";  // the major version the toolkit here builds against

template <class Fn>
void resolve(void* lib, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!fn) fail({}, "cuda: {} has no symbol {}", kLibrary, symbol);
}

CublasApi load() {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);  // kept loaded for the process's life
  if (!lib) fail({}, "cuda: cannot load {}: {}", kLibrary, dlerror());
  CublasApi api;
  resolve(lib, "cublasCreate_v2", api.create);
  resolve(lib, "cublasDestroy_v2", api.destroy);
  resolve(lib, "cublasSetStream_v2", api.set_stream);
  resolve(lib, "cublasSetMathMode", api.set_math_mode);
  resolve(lib, "cublasSgemm_v2", api.sgemm);
  resolve(lib, "cublasSgemmStridedBatched", api.sgemm_strided_batched);
  return api;
}

}  // namespace

const CublasApi& cublas() {
  static const CublasApi api = load();  // a throwing load leaves it unset: the next call tries again
  return api;
}

}  // namespace of::kernels::cuda
