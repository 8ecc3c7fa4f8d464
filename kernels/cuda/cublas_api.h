// SPDX-License-Identifier: Apache-2.0
// cuBLAS, loaded when first asked for (dlopen) rather than linked: a linked libcublas costs every
// process that loads of_kernels 0.3 s and 200 MB at start (its relocations), measured here on
// `ofrun --version`, CPU-only runs included. Only the entry points the kernels call are resolved.
#pragma once

#include <cublas_v2.h>

namespace of::kernels::cuda {

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
};

// The loaded library's entry points; throws of::Error naming the library or symbol it could not
// find. The first call (a StreamOwner's construction) loads it; later calls return at once.
const CublasApi& cublas();

}  // namespace of::kernels::cuda
