// SPDX-License-Identifier: Apache-2.0
// ONNX import: a model file (as torch.onnx.export writes it) into the logical graph. The only
// compiler file that includes onnx/protobuf headers.
#pragma once

#include <string>

#include "compiler/ir/graph.h"

namespace of::compiler {

// Throws of::Error naming the file (and node) for anything unreadable or unsupported.
Graph import_onnx_file(const std::string& path);
Graph import_onnx_bytes(const void* data, size_t size, const std::string& path);

}  // namespace of::compiler
