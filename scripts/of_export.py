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

Two things the exporter loses from the forward itself: `.detach()`, which it writes as the tensor
itself (so a stop-gradient, a straight-through estimator's `x + (q - x).detach()`, would train
through), is written as the op `of.StopGradient`, which ofc passes on without a gradient; and a
result computed under `torch.no_grad()` from tensors that require grad, or read through `.data`
(the exporter writes the latter's value at export time as a constant), is refused in one line
naming the code, since ONNX cannot say where the gradient stops (write `.detach()` instead).

    import sys; sys.path.insert(0, "scripts")          # this folder
    from of_export import export_for_training
    export_for_training(model, example, "model.onnx")  # extra keywords go to torch.onnx.export

A file exported otherwise gets the list afterwards: `mark_parameters(model, "model.onnx")`.
"""
import contextlib
import os
import traceback

import torch
import onnx
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten

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


class LostGradientStop(ValueError):
    """The forward stops a gradient in a way an ONNX file cannot say."""


def _user_frame():
    """'file:line (function)' of the innermost frame outside torch and this file."""
    torch_dir = os.path.dirname(torch.__file__)
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(torch_dir) and frame.filename != __file__:
            return f"{frame.filename}:{frame.lineno} ({frame.name})"
    return "the model's forward"


class _GradientStopWatch(TorchFunctionMode):
    """Refuses, during one forward, what the exporter would write as an ordinary tensor although
    torch stops the gradient there."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        grad_tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        name = getattr(func, "__name__", str(func))
        if grad_tensors and not torch.is_grad_enabled():
            raise LostGradientStop(
                f"of_export: {_user_frame()}: {name} under torch.no_grad() reads tensors that require grad; the ONNX file "
                "cannot say that their gradient stops there, so ofc would train through it: write .detach() on them instead")
        if grad_tensors and name == "__get__" and getattr(getattr(func, "__self__", None), "__name__", "") == "data":
            raise LostGradientStop(
                f"of_export: {_user_frame()}: .data of a tensor that requires grad; the exporter writes its value now as a "
                "constant: write .detach() instead")
        return func(*args, **kwargs)


def check_gradient_stops(model, args):
    """Runs the forward once on `args` (as torch.onnx.export takes them) and raises LostGradientStop
    at a gradient stop the export would lose. The model's state and torch's RNG are restored."""
    if isinstance(args, torch.Tensor):
        args = (args,)
    kwargs = args[-1] if args and isinstance(args[-1], dict) else {}
    positional = args[:-1] if kwargs else args
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    try:
        with torch.random.fork_rng(devices=[]), torch.enable_grad(), _GradientStopWatch():
            model(*positional, **kwargs)
    finally:
        with torch.no_grad():
            for k, v in model.state_dict().items():
                v.copy_(state[k])


# How a .detach() travels through torch.onnx.export: a custom op's output would lose its shape in
# the exporter's shape inference (and a convolution reading it, its kernel's), so the symbolic
# writes two Identity nodes in a row, which keep the shape and which the exporter writes nowhere
# else; write_stop_gradients turns each such pair into one of.StopGradient.
def _detach_symbolic(g, x):
    return g.op("Identity", g.op("Identity", x))


# A symbolic registered for opset 9 serves every later opset the export asks for.
_SYMBOLIC_OPSET = 9


@contextlib.contextmanager
def _detach_marked():
    torch.onnx.register_custom_op_symbolic("aten::detach", _detach_symbolic, _SYMBOLIC_OPSET)
    try:
        yield
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::detach", _SYMBOLIC_OPSET)


def write_stop_gradients(proto):
    """Replaces, in `proto` (an onnx.ModelProto exported under _detach_marked), each pair of
    Identity nodes the first of which only the second reads by one of.StopGradient. Returns how many."""
    graph = proto.graph
    nodes = list(graph.node)
    uses = {}
    for n in nodes:
        for name in n.input:
            uses[name] = uses.get(name, 0) + 1
    for o in graph.output:
        uses[o.name] = uses.get(o.name, 0) + 1
    producer = {out: k for k, n in enumerate(nodes) for out in n.output}

    def identity(k):
        n = nodes[k]
        return n.op_type == "Identity" and n.domain in ("", "ai.onnx") and len(n.input) == 1 and len(n.output) == 1

    second_of = {}  # index of a pair's first -> index of its second
    for k in range(len(nodes)):  # in topological order: a pair's first comes before its second
        first = producer.get(nodes[k].input[0]) if identity(k) and nodes[k].input else None
        if first is not None and identity(first) and uses.get(nodes[first].output[0]) == 1 and first not in second_of.values():
            second_of[first] = k
    if not second_of:
        return 0
    seconds = set(second_of.values())
    rewritten, dropped = [], set()
    for k, n in enumerate(nodes):
        if k in second_of:
            dropped.add(n.output[0])
            rewritten.append(onnx.helper.make_node("StopGradient", [n.input[0]], [nodes[second_of[k]].output[0]],
                                                name=n.name.replace("Identity", "StopGradient"), domain="of"))
        elif k not in seconds:
            rewritten.append(n)
    kept_info = [v for v in graph.value_info if v.name not in dropped]
    del graph.value_info[:]
    graph.value_info.extend(kept_info)
    del graph.node[:]
    graph.node.extend(rewritten)
    if not any(o.domain == "of" for o in proto.opset_import):
        proto.opset_import.append(onnx.helper.make_opsetid("of", 1))
    return len(second_of)


def export_keeping_gradient_stops(model, args, path, **kwargs):
    """torch.onnx.export(model, args, path, **kwargs) with each `.detach()` written as
    of.StopGradient; a gradient stop ONNX cannot say is refused first (LostGradientStop)."""
    check_gradient_stops(model, args)
    with _detach_marked():
        torch.onnx.export(model, args, path, **kwargs)
    proto = onnx.load(path)
    if write_stop_gradients(proto):
        onnx.save(proto, path)


def export_for_training(model, args, path, opset_version=14, **kwargs):
    """torch.onnx.export as ofc --train wants it (`.detach()` kept as of.StopGradient), then
    mark_parameters."""
    kwargs.setdefault("training", torch.onnx.TrainingMode.TRAINING)
    kwargs.setdefault("do_constant_folding", False)
    export_keeping_gradient_stops(model, args, path, opset_version=opset_version, **kwargs)
    mark_parameters(model, path)
