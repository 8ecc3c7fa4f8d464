// SPDX-License-Identifier: Apache-2.0
// sgd_update, adam_update, rmsprop_update and adagrad_update on the GPU: torch.optim's rules, element for element the CPU twin's
// (kernels/cpu/optimizers.cpp), including its per-act scalars in double. lr and step live on the
// device (the task's inputs); outputs may alias inputs (each element is read before written).
#include "kernels/cuda/grid.cuh"
#include "kernels/cuda/launch.h"

namespace of::kernels::cuda {

namespace {

__global__ void sgd_kernel(SgdParams p, const float* param, const float* grad, const float* buf, const float* lr_in,
                           const float* step_in, float* param_out, float* buf_out, int64_t n) {
  const float lr = *lr_in;
  const bool first = *step_in < 1.5f;  // step counts from 1
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float pi = param[i];
    float g = grad[i] + p.weight_decay * pi;
    if (p.momentum != 0.0f) {
      const float b = first ? g : p.momentum * buf[i] + p.keep * g;
      buf_out[i] = b;
      g = p.nesterov ? g + p.momentum * b : b;
    } else if (buf && buf_out != buf) {
      buf_out[i] = buf[i];  // a velocity given with momentum 0 passes through (older plans)
    }
    param_out[i] = pi - lr * g;
  }
}

__global__ void adam_kernel(AdamParams p, const float* param, const float* grad, const float* m, const float* v, const float* vmax,
                            const float* lr_in, const float* step_in, float* param_out, float* m_out, float* v_out, float* vmax_out,
                            int64_t n) {
  const float lr = *lr_in;
  const double t = fmax(1.0, double(*step_in));
  const float step_size = float(lr / (1.0 - pow(double(p.beta1), t)));
  const float inv_bc2_sqrt = float(1.0 / sqrt(1.0 - pow(double(p.beta2), t)));
  const float l2 = p.decoupled ? 0.0f : p.weight_decay;
  const float shrink = p.decoupled ? 1.0f - lr * p.weight_decay : 1.0f;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float pi = param[i] * shrink;
    const float g = grad[i] + l2 * param[i];
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * g;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * g * g;
    m_out[i] = mi;
    v_out[i] = vi;
    float denom_v = vi;
    if (p.amsgrad) {
      denom_v = fmaxf(vmax[i], vi);
      vmax_out[i] = denom_v;
    }
    param_out[i] = pi - step_size * mi / (sqrtf(denom_v) * inv_bc2_sqrt + p.eps);
  }
}

__global__ void rmsprop_kernel(RmspropParams p, const float* param, const float* grad, const float* sq, const float* buf,
                               const float* ga, const float* lr_in, float* param_out, float* sq_out, float* buf_out, float* ga_out,
                               int64_t n) {
  const float lr = *lr_in;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float pi = param[i];
    const float g = grad[i] + p.weight_decay * pi;
    const float s = p.alpha * sq[i] + (1.0f - p.alpha) * (g * g);
    sq_out[i] = s;
    float avg;
    if (p.centered) {
      const float a = p.alpha * ga[i] + (1.0f - p.alpha) * g;
      ga_out[i] = a;
      avg = sqrtf(s - a * a) + p.eps;
    } else {
      avg = sqrtf(s) + p.eps;
    }
    if (p.momentum > 0.0f) {
      const float b = p.momentum * buf[i] + g / avg;
      buf_out[i] = b;
      param_out[i] = pi - lr * b;
    } else {
      param_out[i] = pi - lr * (g / avg);
    }
  }
}

__global__ void adagrad_kernel(AdagradParams p, const float* param, const float* grad, const float* sum, const float* lr_in,
                               const float* step_in, float* param_out, float* sum_out, int64_t n) {
  const double step = fmax(1.0, double(*step_in));
  const float clr = float(double(*lr_in) / (1.0 + (step - 1.0) * double(p.lr_decay)));
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const float pi = param[i];
    const float g = grad[i] + p.weight_decay * pi;
    const float s = sum[i] + g * g;
    sum_out[i] = s;
    param_out[i] = pi - clr * (g / (sqrtf(s) + p.eps));
  }
}

}  // namespace

void launch_rmsprop_update(const RmspropParams& p, const float* param, const float* grad, const float* sq, const float* buf,
                           const float* ga, const float* lr, const float*, float* param_out, float* sq_out, float* buf_out,
                           float* ga_out, int64_t n, cudaStream_t stream) {
  if (n > 0)
    rmsprop_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, param, grad, sq, buf, ga, lr, param_out, sq_out, buf_out, ga_out, n);
}

void launch_adagrad_update(const AdagradParams& p, const float* param, const float* grad, const float* sum, const float* lr,
                           const float* step, float* param_out, float* sum_out, int64_t n, cudaStream_t stream) {
  if (n > 0) adagrad_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, param, grad, sum, lr, step, param_out, sum_out, n);
}

void launch_sgd_update(const SgdParams& p, const float* param, const float* grad, const float* buf, const float* lr,
                       const float* step, float* param_out, float* buf_out, int64_t n, cudaStream_t stream) {
  if (n > 0) sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, param, grad, buf, lr, step, param_out, buf_out, n);
}

void launch_adam_update(const AdamParams& p, const float* param, const float* grad, const float* m, const float* v, const float* vmax,
                        const float* lr, const float* step, float* param_out, float* m_out, float* v_out, float* vmax_out, int64_t n,
                        cudaStream_t stream) {
  if (n > 0)
    adam_kernel<<<blocks_for(n), kThreads, 0, stream>>>(p, param, grad, m, v, vmax, lr, step, param_out, m_out, v_out, vmax_out, n);
}

}  // namespace of::kernels::cuda
