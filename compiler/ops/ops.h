// SPDX-License-Identifier: Apache-2.0
// The OpDef constructors, one per supported operator; registry.cpp lists them alphabetically.
#pragma once

#include "compiler/ops/op_def.h"

namespace of::compiler {

OpDef add_def();                  // binary.cpp
OpDef sub_def();
OpDef mul_def();
OpDef depth_to_space_def();       // rearrange.cpp
OpDef tile_def();
OpDef cumsum_def();               // cumsum.cpp
OpDef celu_def();                 // scaled_elu.cpp
OpDef selu_def();
OpDef argmax_def();
OpDef argmin_def();
OpDef one_hot_def();              // one_hot.cpp
OpDef is_inf_def();               // is_nan_inf.cpp
OpDef scatter_elements_def();     // scatter_elements.cpp
OpDef gather_elements_kernel_def();  // of.GatherElements
OpDef is_nan_def();
OpDef topk_def();                 // topk.cpp
OpDef random_normal_def();        // random.cpp
OpDef random_normal_like_def();
OpDef random_uniform_def();
OpDef random_uniform_like_def();
// The Philox stream a random op (Dropout, Random*) draws from: a hash of its node's name.
int64_t random_stream(const std::string& node_name);               // reduce.cpp
OpDef div_def();
OpDef gather_elements_def();      // gather.cpp
OpDef greater_or_equal_def();     // compare.cpp
OpDef less_or_equal_def();
OpDef einsum_def();               // einsum.cpp
OpDef max_def();
OpDef min_def();
OpDef batch_norm_def();           // batch_norm.cpp
OpDef concat_def();               // concat.cpp
OpDef conv_def();                 // conv.cpp
OpDef conv_transpose_def();       // conv_transpose.cpp
OpDef negative_log_likelihood_loss_def();  // cross_entropy.cpp
OpDef softmax_cross_entropy_loss_def();
OpDef softmax_cross_entropy_def();  // (of.SoftmaxCrossEntropy, what SoftmaxCrossEntropyLoss expands to)
OpDef delay_def();                // delay.cpp (custom op of.test.Delay)
OpDef gather_def();               // gather.cpp
OpDef gemm_def();                 // gemm.cpp
OpDef instance_norm_def();        // instance_norm.cpp
OpDef layer_norm_def();           // layer_norm.cpp
OpDef matmul_def();               // matmul.cpp
OpDef pad_def();                  // pad.cpp
OpDef resize_def();               // resize.cpp
OpDef masked_softmax_def();        // softmax.cpp (of.MaskedSoftmax, made by fuse-masked-softmax)
// of.MaskedSoftmax's one shape rule, which fuse-masked-softmax asks before it fuses: the mask,
// leading 1s dropped, is x's last dims (softmax.cpp).
bool masked_softmax_fits(const Shape& x, const Shape& mask);
OpDef matmul_trans_b_def();       // matmul.cpp (of.MatMulTransB, made by fuse-transposed-weights)
OpDef stop_gradient_def();       // stop_gradient.cpp (of.StopGradient: torch's .detach(), as scripts/of_export.py writes it)
OpDef average_pool_def();         // pool.cpp
OpDef global_average_pool_def();
OpDef max_pool_def();
OpDef flatten_def();              // reshape.cpp
OpDef identity_def();
OpDef reshape_def();
OpDef squeeze_def();
OpDef unsqueeze_def();
OpDef cast_def();                 // (to the same dtype; other casts fold)
OpDef log_softmax_def();          // softmax.cpp
OpDef softmax_def();
OpDef transpose_def();            // transpose.cpp
OpDef relu_def();                 // unary.cpp
OpDef sigmoid_def();
OpDef tanh_def();
OpDef and_def();                  // compile_time.cpp (folded: shape arithmetic)
OpDef constant_of_shape_def();
OpDef equal_def();
OpDef greater_def();
OpDef less_def();
OpDef mod_def();
OpDef not_def();
OpDef or_def();
OpDef range_def();
OpDef reduce_prod_def();
OpDef scatter_nd_def();
OpDef shape_def();
OpDef trilu_def();
OpDef if_def();  // if_branch.cpp (If with a condition known when compiling: its taken branch)
OpDef dropout_def();              // dropout.cpp
OpDef clip_def();                 // pointwise.cpp
OpDef erf_def();
OpDef exp_def();
OpDef gelu_def();
OpDef hard_sigmoid_def();
OpDef hard_swish_def();
OpDef leaky_relu_def();
OpDef log_def();
OpDef abs_def();
OpDef sign_def();
OpDef floor_def();
OpDef ceil_def();
OpDef round_def();
OpDef sin_def();
OpDef cos_def();
OpDef softplus_def();
OpDef elu_def();
OpDef neg_def();
OpDef pow_def();
OpDef reciprocal_def();
OpDef sqrt_def();
OpDef prelu_def();                // prelu.cpp
OpDef reduce_l2_def();
OpDef reduce_log_sum_exp_def();
OpDef reduce_min_def();
OpDef reduce_max_def();           // reduce.cpp
OpDef reduce_mean_def();
OpDef reduce_sum_def();
OpDef reduce_sum_square_def();
OpDef reduce_l1_def();
OpDef slice_def();                // split.cpp
OpDef split_def();
OpDef expand_def();               // where.cpp
OpDef where_def();
OpDef gru_def();                  // recurrent.cpp
OpDef lstm_def();
OpDef rnn_def();

}  // namespace of::compiler
