# SPDX-License-Identifier: Apache-2.0
"""Export a PyTorch model for `ofc --train`: torch.onnx.export in training mode without constant
folding (every parameter and buffer keeps its state_dict name), plus the one thing an ONNX file
cannot say by itself, which of its tensors torch trains. Parameters and buffers are all ONNX
initializers; a buffer used in arithmetic (a positional encoding added to the embeddings) or a
parameter with requires_grad=False (a fine-tuned model's frozen backbone) would otherwise train.
The names of the parameters that require grad go into the model's metadata, `of.requires_grad`
(one state_dict name per line; tied weights under each of their names), and ofc trains exactly
those. So does what the exporter drops with a warning: an nn.Embedding's padding_idx, whose row
torch's gradient never touches (`of.padding_idx`: "NAME INDEX" per line), and a BatchNorm made
with momentum=None, whose running statistics are the cumulative average of every batch (the
export writes the first batch's factor as its momentum; `of.batch_norm_cumulative`: its
running_mean's name per line).

    import sys; sys.path.insert(0, "scripts")          # this folder
    from of_export import export_for_training
    export_for_training(model, example, "model.onnx")  # extra keywords go to torch.onnx.export

A file exported otherwise gets the list afterwards: `mark_parameters(model, "model.onnx")`.
"""
import torch
import onnx

REQUIRES_GRAD_KEY = "of.requires_grad"
PADDING_IDX_KEY = "of.padding_idx"
BATCH_NORM_CUMULATIVE_KEY = "of.batch_norm_cumulative"


def trained_parameter_names(model):
    """The state_dict names of the parameters torch's optimizer moves: requires_grad ones, each
    alias of a tied weight included (the exporter keeps one of them)."""
    return sorted(name for name, t in model.state_dict(keep_vars=True).items()
                  if isinstance(t, torch.nn.Parameter) and t.requires_grad)


def state_dict_names(model):
    """Each tensor's state_dict names (a tied weight has several), by the tensor's id."""
    names = {}
    for name, t in model.state_dict(keep_vars=True).items():
        names.setdefault(id(t), []).append(name)
    return names


def padding_rows(model):
    """"NAME INDEX" of each nn.Embedding's padding row, under every state_dict name its weight has."""
    names = state_dict_names(model)
    rows = set()
    for module in model.modules():
        if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None:
            rows.update(f"{name} {module.padding_idx}" for name in names.get(id(module.weight), []))
    return sorted(rows)


def cumulative_batch_norms(model):
    """The running_mean names (every state_dict name) of the BatchNorms with momentum=None."""
    names = state_dict_names(model)
    out = set()
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.momentum is None \
                and module.track_running_stats and module.running_mean is not None:
            out.update(names.get(id(module.running_mean), []))
    return sorted(out)


def mark_parameters(model, path):
    """Writes into the ONNX file at `path` (in place) which of `model`'s parameters train, the
    padding rows of its embeddings and its cumulative BatchNorms."""
    proto = onnx.load(path)
    ours = (REQUIRES_GRAD_KEY, PADDING_IDX_KEY, BATCH_NORM_CUMULATIVE_KEY)
    kept = [p for p in proto.metadata_props if p.key not in ours]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    entries = {REQUIRES_GRAD_KEY: trained_parameter_names(model), PADDING_IDX_KEY: padding_rows(model),
               BATCH_NORM_CUMULATIVE_KEY: cumulative_batch_norms(model)}
    for key, lines in entries.items():
        if key != REQUIRES_GRAD_KEY and not lines:  # the list of parameters says "listed", even empty
            continue
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, "\n".join(lines)
    onnx.save(proto, path)


def export_for_training(model, args, path, opset_version=14, **kwargs):
    """torch.onnx.export as ofc --train wants it, then mark_parameters."""
    kwargs.setdefault("training", torch.onnx.TrainingMode.TRAINING)
    kwargs.setdefault("do_constant_folding", False)
    torch.onnx.export(model, args, path, opset_version=opset_version, **kwargs)
    mark_parameters(model, path)
