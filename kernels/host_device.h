// SPDX-License-Identifier: Apache-2.0
// OF_HOST_DEVICE marks a function that the CPU kernels and their CUDA twins both compile (one
// definition of the math: pointwise_ops.h, philox.h): __host__ __device__ under nvcc, nothing
// for the host compiler.
#pragma once

#ifdef __CUDACC__
#define OF_HOST_DEVICE __host__ __device__
#else
#define OF_HOST_DEVICE
#endif
