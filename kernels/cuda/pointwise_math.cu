// SPDX-License-Identifier: Apache-2.0
// The pointwise ops of kernels/pointwise_ops.h on the GPU: one thread per element (grid-stride),
// each applying the very functor the CPU kernel applies, compiled for the device.
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

template <class Op>
__global__ void map_kernel(Op op, const float* x, float* y, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) y[i] = op(x[i]);
}

template <class Op>
__global__ void map_grad_kernel(Op op, const float* dy, const float* x, float* dx, int64_t n) {
  for (int64_t i = first_index(); i < n; i += grid_stride()) dx[i] = op(dy[i], x[i]);
}

}  // namespace

template <class Op>
void launch_map(const Op& op, const float* x, float* y, int64_t n, cudaStream_t stream) {
  if (n > 0) map_kernel<Op><<<blocks_for(n), kThreads, 0, stream>>>(op, x, y, n);
}

template <class Op>
void launch_map_grad(const Op& op, const float* dy, const float* x, float* dx, int64_t n, cudaStream_t stream) {
  if (n > 0) map_grad_kernel<Op><<<blocks_for(n), kThreads, 0, stream>>>(op, dy, x, dx, n);
}

#define OF_MAP(Op) template void launch_map<pointwise::Op>(const pointwise::Op&, const float*, float*, int64_t, cudaStream_t);
#define OF_MAP_GRAD(Op) \
  template void launch_map_grad<pointwise::Op>(const pointwise::Op&, const float*, const float*, float*, int64_t, cudaStream_t);
OF_MAP(ErfOp)
OF_MAP(SqrtOp)
OF_MAP(ReciprocalOp)
OF_MAP(ExpOp)
OF_MAP(NegOp)
OF_MAP(IdentityOp)
OF_MAP(SquareOp)
OF_MAP(CubeOp)
OF_MAP(PowOp)
OF_MAP(ClipOp)
OF_MAP(LeakyReluOp)
OF_MAP(HardSigmoidOp)
OF_MAP(HardSwishOp)
OF_MAP(LogOp)
OF_MAP(AbsOp)
OF_MAP(SignOp)
OF_MAP(FloorOp)
OF_MAP(CeilOp)
OF_MAP(RoundOp)
OF_MAP(SinOp)
OF_MAP(CosOp)
OF_MAP(SoftplusOp)
OF_MAP(EluOp)
OF_MAP_GRAD(ErfGradOp)
OF_MAP_GRAD(ZeroGradOp)
OF_MAP_GRAD(PassGradOp)
OF_MAP_GRAD(SquareGradOp)
OF_MAP_GRAD(CubeGradOp)
OF_MAP_GRAD(SqrtGradOp)
OF_MAP_GRAD(PowGradOp)
OF_MAP_GRAD(ClipGradOp)
OF_MAP_GRAD(LeakyReluGradOp)
OF_MAP_GRAD(HardSigmoidGradOp)
OF_MAP_GRAD(HardSwishGradOp)
OF_MAP_GRAD(LogGradOp)
OF_MAP_GRAD(AbsGradOp)
OF_MAP_GRAD(SinGradOp)
OF_MAP_GRAD(CosGradOp)
OF_MAP_GRAD(SoftplusGradOp)
OF_MAP_GRAD(EluGradOp)
#undef OF_MAP
#undef OF_MAP_GRAD

}  // namespace of::kernels::cuda
