// SPDX-License-Identifier: Apache-2.0
// Every operator ofc supports, in one alphabetical list. Nothing registers itself.
#include "compiler/ops/registry.h"

#include <fmt/format.h>

#include "compiler/ops/ops.h"

namespace of::compiler {

const std::vector<OpDef>& all_ops() {
  static const std::vector<OpDef> ops = {
      abs_def(),
      add_def(),
      and_def(),
      argmax_def(),
      argmin_def(),
      average_pool_def(),
      batch_norm_def(),
      cast_def(),
      ceil_def(),
      celu_def(),
      clip_def(),
      concat_def(),
      constant_of_shape_def(),
      conv_def(),
      conv_transpose_def(),
      cos_def(),
      cumsum_def(),
      depth_to_space_def(),
      div_def(),
      dropout_def(),
      einsum_def(),  // byte order: "Einsum" < "Elu"
      elu_def(),
      equal_def(),
      erf_def(),
      exp_def(),
      expand_def(),
      flatten_def(),
      floor_def(),
      gru_def(),  // byte order: "GRU" < "Gather"
      gather_def(),
      gather_elements_def(),
      gelu_def(),
      gemm_def(),
      global_average_pool_def(),
      greater_def(),
      greater_or_equal_def(),
      hard_sigmoid_def(),
      hard_swish_def(),
      identity_def(),
      if_def(),
      instance_norm_def(),
      is_inf_def(),
      is_nan_def(),
      lstm_def(),  // "LSTM" < "LayerNormalization"
      layer_norm_def(),
      leaky_relu_def(),
      less_def(),
      less_or_equal_def(),
      log_def(),
      log_softmax_def(),
      matmul_def(),
      max_def(),  // "Max" < "MaxPool"
      max_pool_def(),
      min_def(),
      mod_def(),
      mul_def(),
      neg_def(),
      negative_log_likelihood_loss_def(),
      not_def(),
      one_hot_def(),
      or_def(),
      prelu_def(),  // byte order: "PRelu" < "Pad"
      pad_def(),
      pow_def(),
      rnn_def(),  // byte order: "RNN" < "RandomNormal"
      random_normal_def(),
      random_normal_like_def(),
      random_uniform_def(),
      random_uniform_like_def(),
      range_def(),
      reciprocal_def(),
      reduce_l1_def(),
      reduce_l2_def(),
      reduce_log_sum_exp_def(),
      reduce_max_def(),
      reduce_mean_def(),
      reduce_min_def(),
      reduce_prod_def(),
      reduce_sum_def(),
      reduce_sum_square_def(),
      relu_def(),
      reshape_def(),
      resize_def(),
      round_def(),
      scatter_elements_def(),  // byte order: "ScatterElements" < "ScatterND"
      scatter_nd_def(),
      selu_def(),
      shape_def(),
      sigmoid_def(),
      sign_def(),
      sin_def(),
      slice_def(),
      softmax_def(),
      softmax_cross_entropy_loss_def(),
      softplus_def(),
      split_def(),
      sqrt_def(),
      squeeze_def(),
      sub_def(),
      tanh_def(),
      tile_def(),
      topk_def(),
      transpose_def(),
      trilu_def(),
      unsqueeze_def(),
      where_def(),
      gather_elements_kernel_def(),  // custom ops (domain-qualified) last, sorted too
      masked_softmax_def(),
      matmul_trans_b_def(),
      softmax_cross_entropy_def(),
      stop_gradient_def(),
      delay_def(),
  };
  return ops;
}

const OpDef* find_op(std::string_view domain, std::string_view onnx_type) {
  // Custom ops live in their own domain (e.g. "of.test" for Delay); ONNX's default domain is "".
  for (const OpDef& op : all_ops()) {
    bool custom = op.onnx_type.find('.') != std::string_view::npos;
    if (custom ? fmt::format("{}.{}", domain, onnx_type) == op.onnx_type
               : (domain.empty() || domain == "ai.onnx") && op.onnx_type == onnx_type)
      return &op;
  }
  return nullptr;
}

std::string supported_op_list() {
  std::vector<std::string_view> names;
  // Custom ops (a domain-qualified name, e.g. the test-only of.test.Delay) are not for users.
  for (const OpDef& op : all_ops())
    if (op.onnx_type.find('.') == std::string_view::npos) names.push_back(op.onnx_type);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace of::compiler
