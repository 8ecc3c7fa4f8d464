// SPDX-License-Identifier: Apache-2.0
// The CUDA kernel factories kernels/registry.cpp lists (the `cuda` lines of kernel_list.def), the
// twins of kernels/cpu/factories.h under the same names. Each validates its config by the rules
// it shares with its CPU twin (kernels/rules.h, cpu/check.h) and prepares launches; run()
// enqueues on RunCtx::stream.
#pragma once

#include <memory>

#include "kernels/kernel.h"

namespace of::kernels::cuda {

std::unique_ptr<Kernel> make_accumulate(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_adam_update(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_adagrad_update(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_add(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_assign(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_average_pool(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_average_pool_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_batch_norm(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_batch_norm_apply(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_batch_norm_stats(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_batch_norm_stats_update(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_batch_norm_train(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_batch_norm_train_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_classify_metrics(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_clip(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_clip_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_collective_part(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_concat(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_conv(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_conv_grad_data(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_conv_grad_weight(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_copy(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_div(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_max(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_min(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_prelu(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_pow_tensor(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_mod(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_fmod(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_greater(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_greater_or_equal(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_less(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_less_or_equal(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_equal(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_logical_and(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_logical_or(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_logical_not(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_cast(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_clip_int(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_dropout(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_dropout_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_erf(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_erf_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_exp(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_expand(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gather(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gather_elements(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_scatter_elements(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gather_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gelu(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gelu_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gemm(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_global_average_pool(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_global_average_pool_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gru(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_gru_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_rnn(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_rnn_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_hard_sigmoid(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_hard_sigmoid_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_hard_swish(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_hard_swish_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_instance_norm(const KernelConfig& cfg);  // layer_norm.cpp
std::unique_ptr<Kernel> make_instance_norm_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_instance_norm_scale_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_layer_norm(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_layer_norm_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_layer_norm_scale_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_leaky_relu(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_leaky_relu_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_log_softmax(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_log_softmax_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_lstm(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_lstm_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_masked_softmax(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_masked_softmax_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_matmul(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_matmul_tb(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_max_pool(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_max_pool_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_mse_loss(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_mse_loss_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_mul(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_neg(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_pow(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_pow_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_reciprocal(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_reduce_l2(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_reduce_sum(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_relu(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_relu_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_rmsprop_update(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_sgd_update(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_sigmoid(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_sigmoid_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_random(const KernelConfig& cfg);  // random.cpp
std::unique_ptr<Kernel> make_topk(const KernelConfig& cfg);  // topk.cpp
std::unique_ptr<Kernel> make_topk_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_abs(const KernelConfig& cfg);  // pointwise
std::unique_ptr<Kernel> make_sign(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_floor(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_ceil(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_round(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_abs_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_cos(const KernelConfig& cfg);  // pointwise
std::unique_ptr<Kernel> make_cos_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_elu(const KernelConfig& cfg);  // pointwise
std::unique_ptr<Kernel> make_elu_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_log(const KernelConfig& cfg);  // pointwise
std::unique_ptr<Kernel> make_log_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_sin(const KernelConfig& cfg);  // pointwise
std::unique_ptr<Kernel> make_sin_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_softplus(const KernelConfig& cfg);  // pointwise
std::unique_ptr<Kernel> make_softplus_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_pad(const KernelConfig& cfg);  // pad.cpp
std::unique_ptr<Kernel> make_pad_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_argmax(const KernelConfig& cfg);      // reduce_max.cpp
std::unique_ptr<Kernel> make_reduce_max(const KernelConfig& cfg);  // reduce_max.cpp
std::unique_ptr<Kernel> make_reduce_max_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_resize(const KernelConfig& cfg);  // resize.cpp
std::unique_ptr<Kernel> make_resize_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_slice(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_softmax(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_softmax_cross_entropy(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_softmax_cross_entropy_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_softmax_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_split(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_strided_slice(const KernelConfig& cfg);  // strided_slice.cpp
std::unique_ptr<Kernel> make_strided_slice_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_sqrt(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_sub(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_tanh(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_tanh_grad(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_transpose(const KernelConfig& cfg);
std::unique_ptr<Kernel> make_where(const KernelConfig& cfg);

}  // namespace of::kernels::cuda
