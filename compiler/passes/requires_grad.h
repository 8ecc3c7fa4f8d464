// SPDX-License-Identifier: Apache-2.0
// What torch trains that an ONNX file cannot say. It holds a module's parameters and its buffers
// alike as initializers (a positional encoding registered as a buffer looks like a weight), says
// nothing of a parameter's requires_grad (a fine-tuned backbone's frozen layers), and writes an
// nn.Embedding with padding_idx as a plain Gather (torch's gradient never touches that row).
// scripts/of_export.py lists the parameters that require grad and the padding rows in the
// model's metadata (Graph::requires_grad, Graph::padding_rows); without the list every float
// tensor the model names trains, and ofc names those whose readers leave it unsure.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace of::compiler {

// True when the model lists `name` among the parameters that require grad, or lists none.
bool listed_as_trained(const Graph& g, const std::string& name);

// Refuses a list that names none of the model's initializers (written for another model): it
// would freeze every weight without a word.
void check_requires_grad_list(const Graph& g);

// Of `weights` (trained, for a model without a list), those a torch.nn module could as well hold
// as a buffer: no op that reads a module's parameters (a product, convolution, normalization,
// embedding, recurrent cell) reads them, directly or through reshapes, nor an addition or product
// with such an op's output (a bias, a normalization's affine). A positional encoding added to the
// embeddings is one; so is a ViT's class token, which is a parameter: the model file cannot tell.
std::vector<ValueId> unsure_parameters(const Graph& g, const std::vector<ValueId>& weights);

// Gives each Gather that reads a listed embedding weight (along axis 0) the attribute
// `padding_idx`, which its gradient kernel skips; an index outside the table is refused.
void mark_padding_rows(Graph& g);

}  // namespace of::compiler
