// SPDX-License-Identifier: Apache-2.0
// The one list of kernels this build has. Nothing registers itself: adding a kernel means adding
// a line here, in name order, so one screen shows everything that exists.
#include "kernels/registry.h"

#include <cblas.h>

#include <omp.h>

#include <utility>

#include "common/error.h"
#include "kernels/cpu/factories.h"

namespace of::kernels {

namespace {

std::string_view device_name(DeviceKind d) { return d == DeviceKind::cpu ? "cpu" : "cuda"; }

}  // namespace

const std::vector<KernelEntry>& all_kernels() {
  static const std::vector<KernelEntry> entries = {
      {"accumulate", DeviceKind::cpu, DType::f32, &cpu::make_accumulate},
      {"adam_update", DeviceKind::cpu, DType::f32, &cpu::make_adam_update},
      {"add", DeviceKind::cpu, DType::f32, &cpu::make_add},
      {"average_pool", DeviceKind::cpu, DType::f32, &cpu::make_average_pool},
      {"average_pool_grad", DeviceKind::cpu, DType::f32, &cpu::make_average_pool_grad},
      {"batch_norm", DeviceKind::cpu, DType::f32, &cpu::make_batch_norm},
      {"batch_norm_stats_update", DeviceKind::cpu, DType::f32, &cpu::make_batch_norm_stats_update},
      {"batch_norm_train", DeviceKind::cpu, DType::f32, &cpu::make_batch_norm_train},
      {"batch_norm_train_grad", DeviceKind::cpu, DType::f32, &cpu::make_batch_norm_train_grad},
      {"classify_metrics", DeviceKind::cpu, DType::f32, &cpu::make_classify_metrics},
      {"clip", DeviceKind::cpu, DType::f32, &cpu::make_clip},
      {"clip_grad", DeviceKind::cpu, DType::f32, &cpu::make_clip_grad},
      {"concat", DeviceKind::cpu, DType::f32, &cpu::make_concat},
      {"concat", DeviceKind::cpu, DType::i64, &cpu::make_concat},
      {"conv", DeviceKind::cpu, DType::f32, &cpu::make_conv},
      {"conv_grad_data", DeviceKind::cpu, DType::f32, &cpu::make_conv_grad_data},
      {"conv_grad_weight", DeviceKind::cpu, DType::f32, &cpu::make_conv_grad_weight},
      {"copy", DeviceKind::cpu, DType::f32, &cpu::make_copy},
      {"copy", DeviceKind::cpu, DType::i64, &cpu::make_copy},
      {"delay", DeviceKind::cpu, DType::f32, &cpu::make_delay},
      {"div", DeviceKind::cpu, DType::f32, &cpu::make_div},
      {"dropout", DeviceKind::cpu, DType::f32, &cpu::make_dropout},
      {"dropout_grad", DeviceKind::cpu, DType::f32, &cpu::make_dropout_grad},
      {"erf", DeviceKind::cpu, DType::f32, &cpu::make_erf},
      {"erf_grad", DeviceKind::cpu, DType::f32, &cpu::make_erf_grad},
      {"exp", DeviceKind::cpu, DType::f32, &cpu::make_exp},
      {"expand", DeviceKind::cpu, DType::f32, &cpu::make_expand},
      {"expand", DeviceKind::cpu, DType::i64, &cpu::make_expand},
      {"gather", DeviceKind::cpu, DType::f32, &cpu::make_gather},
      {"gather_grad", DeviceKind::cpu, DType::f32, &cpu::make_gather_grad},
      {"gemm", DeviceKind::cpu, DType::f32, &cpu::make_gemm},
      {"global_average_pool", DeviceKind::cpu, DType::f32, &cpu::make_global_average_pool},
      {"global_average_pool_grad", DeviceKind::cpu, DType::f32, &cpu::make_global_average_pool_grad},
      {"gru", DeviceKind::cpu, DType::f32, &cpu::make_gru},
      {"gru_grad", DeviceKind::cpu, DType::f32, &cpu::make_gru_grad},
      {"hard_sigmoid", DeviceKind::cpu, DType::f32, &cpu::make_hard_sigmoid},
      {"hard_sigmoid_grad", DeviceKind::cpu, DType::f32, &cpu::make_hard_sigmoid_grad},
      {"hard_swish", DeviceKind::cpu, DType::f32, &cpu::make_hard_swish},
      {"hard_swish_grad", DeviceKind::cpu, DType::f32, &cpu::make_hard_swish_grad},
      {"layer_norm", DeviceKind::cpu, DType::f32, &cpu::make_layer_norm},
      {"layer_norm_grad", DeviceKind::cpu, DType::f32, &cpu::make_layer_norm_grad},
      {"layer_norm_scale_grad", DeviceKind::cpu, DType::f32, &cpu::make_layer_norm_scale_grad},
      {"leaky_relu", DeviceKind::cpu, DType::f32, &cpu::make_leaky_relu},
      {"leaky_relu_grad", DeviceKind::cpu, DType::f32, &cpu::make_leaky_relu_grad},
      {"log_softmax", DeviceKind::cpu, DType::f32, &cpu::make_log_softmax},
      {"log_softmax_grad", DeviceKind::cpu, DType::f32, &cpu::make_log_softmax_grad},
      {"lstm", DeviceKind::cpu, DType::f32, &cpu::make_lstm},
      {"lstm_grad", DeviceKind::cpu, DType::f32, &cpu::make_lstm_grad},
      {"matmul", DeviceKind::cpu, DType::f32, &cpu::make_matmul},
      {"max_pool", DeviceKind::cpu, DType::f32, &cpu::make_max_pool},
      {"max_pool_grad", DeviceKind::cpu, DType::f32, &cpu::make_max_pool_grad},
      {"mse_loss", DeviceKind::cpu, DType::f32, &cpu::make_mse_loss},
      {"mse_loss_grad", DeviceKind::cpu, DType::f32, &cpu::make_mse_loss_grad},
      {"mul", DeviceKind::cpu, DType::f32, &cpu::make_mul},
      {"neg", DeviceKind::cpu, DType::f32, &cpu::make_neg},
      {"pow", DeviceKind::cpu, DType::f32, &cpu::make_pow},
      {"pow_grad", DeviceKind::cpu, DType::f32, &cpu::make_pow_grad},
      {"reciprocal", DeviceKind::cpu, DType::f32, &cpu::make_reciprocal},
      {"reduce_sum", DeviceKind::cpu, DType::f32, &cpu::make_reduce_sum},
      {"relu", DeviceKind::cpu, DType::f32, &cpu::make_relu},
      {"relu_grad", DeviceKind::cpu, DType::f32, &cpu::make_relu_grad},
      {"sgd_update", DeviceKind::cpu, DType::f32, &cpu::make_sgd_update},
      {"sigmoid", DeviceKind::cpu, DType::f32, &cpu::make_sigmoid},
      {"sigmoid_grad", DeviceKind::cpu, DType::f32, &cpu::make_sigmoid_grad},
      {"slice", DeviceKind::cpu, DType::f32, &cpu::make_slice},
      {"slice", DeviceKind::cpu, DType::i64, &cpu::make_slice},
      {"softmax", DeviceKind::cpu, DType::f32, &cpu::make_softmax},
      {"softmax_cross_entropy", DeviceKind::cpu, DType::f32, &cpu::make_softmax_cross_entropy},
      {"softmax_cross_entropy_grad", DeviceKind::cpu, DType::f32, &cpu::make_softmax_cross_entropy_grad},
      {"softmax_grad", DeviceKind::cpu, DType::f32, &cpu::make_softmax_grad},
      {"split", DeviceKind::cpu, DType::f32, &cpu::make_split},
      {"split", DeviceKind::cpu, DType::i64, &cpu::make_split},
      {"sqrt", DeviceKind::cpu, DType::f32, &cpu::make_sqrt},
      {"sub", DeviceKind::cpu, DType::f32, &cpu::make_sub},
      {"tanh", DeviceKind::cpu, DType::f32, &cpu::make_tanh},
      {"tanh_grad", DeviceKind::cpu, DType::f32, &cpu::make_tanh_grad},
      {"transpose", DeviceKind::cpu, DType::f32, &cpu::make_transpose},
      {"transpose", DeviceKind::cpu, DType::i64, &cpu::make_transpose},
      {"where", DeviceKind::cpu, DType::f32, &cpu::make_where},
  };
  return entries;
}

const KernelEntry* find_kernel(std::string_view name, DeviceKind device, DType dtype) {
  for (const KernelEntry& e : all_kernels())
    if (e.name == name && e.device == device && e.dtype == dtype) return &e;
  return nullptr;
}

std::unique_ptr<Kernel> make_kernel(std::string_view name, DeviceKind device, DType dtype,
                                    const KernelConfig& cfg) {
  const KernelEntry* e = find_kernel(name, device, dtype);
  if (!e) {
    Where where;  // not Where{.node = ..}: -Wextra flags the omitted fields
    where.node = cfg.node;
    fail(std::move(where), "no kernel '{}' for {}:{}", name, device_name(device),
         dtype_name(dtype));
  }
  return e->make(cfg);
}

void set_kernel_threads(int n) {
  omp_set_num_threads(n < 1 ? 1 : n);
  openblas_set_num_threads(n < 1 ? 1 : n);  // process-wide in OpenBLAS; every worker sets the same
}

}  // namespace of::kernels
