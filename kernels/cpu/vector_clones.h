// SPDX-License-Identifier: Apache-2.0
// OF_VECTOR_CLONES before a function with a hot loop compiles it for AVX-512, AVX2 and the
// baseline x86-64, and the loader picks the widest the machine has (GCC's target_clones); our
// binaries are built for the baseline, where GCC cannot vectorize selects (no blend, no masked
// store) and where exp needs 64-bit integer lanes. GCC 12 vectorizes some selects of floats only
// without trapping math (vector_exp.cpp's clamps, pool_grad.cpp's argmax: kernels/CMakeLists.txt
// compiles them with -fno-trapping-math) and others only with it (pool.cpp's NaN-keeping max):
// check with -fopt-info-vec. Plain functions elsewhere (sanitizer builds, other compilers).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define OF_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define OF_VECTOR_CLONES
#endif
