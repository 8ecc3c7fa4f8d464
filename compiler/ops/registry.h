// SPDX-License-Identifier: Apache-2.0
// The operator registry: one alphabetical list of OpDefs (compiler/ops/registry.cpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ops/op_def.h"

namespace of::compiler {

const std::vector<OpDef>& all_ops();
// nullptr when the operator is not supported.
const OpDef* find_op(std::string_view domain, std::string_view onnx_type);
// "Add, AveragePool, ..." for error messages.
std::string supported_op_list();

}  // namespace of::compiler
