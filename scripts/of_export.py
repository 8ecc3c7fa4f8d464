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

What the exporter loses from the forward itself: `.detach()`, which it writes as the tensor itself
(so a stop-gradient, a straight-through estimator's `x + (q - x).detach()`, would train through),
is written as the op `of.StopGradient`, which ofc passes on without a gradient; and
`noise.bernoulli_(1 - p)` (torchvision's stochastic depth, timm's drop_path) and nn.Dropout1d/2d/3d,
which torch 1.13 cannot export in training, as Dropouts of ones (_bernoulli_symbolic,
_feature_dropout_symbolic); and Tensor.index_add, from opset 16, as a ScatterElements that adds
(_index_add_symbolic: torch's own keeps one of a repeated index's additions). The rest is
refused in one line naming the code (check_forward): a result computed under `torch.no_grad()`
from tensors that require grad or read through `.data` (the exporter writes the latter's value at
export time as a constant), a torch.autograd.Function (its own backward), a reentrant
torch.utils.checkpoint, gradient hooks, nn.Embedding's scale_grad_by_freq, and a forward that
changes the model's tensors in place other than BatchNorm's statistics (spectral_norm, max_norm).

    import sys; sys.path.insert(0, "scripts")          # this folder
    from of_export import export_for_training
    export_for_training(model, example, "model.onnx")  # extra keywords go to torch.onnx.export

A file exported otherwise gets the list afterwards: `mark_parameters(model, "model.onnx")`.
"""
import contextlib
import inspect
import os
import traceback

import torch
import onnx
from torch.onnx import symbolic_helper, symbolic_opset9
from torch.onnx._globals import GLOBALS
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


class ForwardNotExportable(ValueError):
    """The forward does what an ONNX file cannot carry: stops a gradient other than by .detach(),
    has a backward of its own, or updates the model's tensors in place."""


def _where(frames=None):
    """'file:line (function)' of the innermost frame outside torch and this file, and, when torch's
    own code is deeper, its innermost frame there too."""
    torch_dir = os.path.dirname(torch.__file__)
    modes = os.path.join(torch_dir, "overrides.py")  # the TorchFunctionMode machinery, not the model's
    frames = [f for f in (frames or traceback.extract_stack()) if f.filename not in (__file__, modes)]
    user = next((f for f in reversed(frames) if not f.filename.startswith(torch_dir)), None)
    text = f"{user.filename}:{user.lineno} ({user.name})" if user else "the model's forward"
    if frames and frames[-1] is not user and frames[-1].filename.startswith(torch_dir):
        inner = frames[-1]
        text += f", in torch/{os.path.relpath(inner.filename, torch_dir)}:{inner.lineno} ({inner.name})"
    return text


def _custom_function():
    """The torch.autograd.Function whose forward is running (its class name), if one is."""
    frame = inspect.currentframe()
    while frame is not None:
        ctx = frame.f_locals.get("ctx")
        if isinstance(ctx, torch.autograd.function.BackwardCFunction):
            name = type(ctx).__name__
            return name[:-len("Backward")] if name.endswith("Backward") else name
        frame = frame.f_back
    return None


class _GradientStopWatch(TorchFunctionMode):
    """Refuses, during one forward, what the exporter would write as ordinary differentiable ops
    although torch's gradient differs there."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        grad_tensors = [t for t in tree_flatten((args, kwargs))[0] if isinstance(t, torch.Tensor) and t.requires_grad]
        name = getattr(func, "__name__", str(func))
        if grad_tensors and not torch.is_grad_enabled():
            function = _custom_function()
            if function == "CheckpointFunction":
                raise ForwardNotExportable(
                    f"of_export: {_where()}: torch.utils.checkpoint with use_reentrant=True, which torch.onnx.export cannot "
                    "write: pass use_reentrant=False (the same gradients; ofc's own --recompute saves memory alike)")
            if function is not None:
                raise ForwardNotExportable(
                    f"of_export: {_where()}: torch.autograd.Function {function} has a backward of its own, which an ONNX "
                    "file cannot carry: ofc would differentiate its forward's ops instead")
            raise ForwardNotExportable(
                f"of_export: {_where()}: {name} under torch.no_grad() reads tensors that require grad; the ONNX file "
                "cannot say that their gradient stops there, so ofc would train through it: write .detach() on them instead")
        if name == "register_hook" and grad_tensors:
            raise ForwardNotExportable(
                f"of_export: {_where()}: a gradient hook (Tensor.register_hook) changes the gradient, which an ONNX file "
                "cannot carry: ofc would train without it")
        if grad_tensors and name == "__get__" and getattr(getattr(func, "__self__", None), "__name__", "") == "data":
            raise ForwardNotExportable(
                f"of_export: {_where()}: .data of a tensor that requires grad; the exporter writes its value now as a "
                "constant: write .detach() instead")
        return func(*args, **kwargs)


def _updated_by_batch_norm(model):
    """The state_dict names a BatchNorm's forward updates, which ofc updates as torch does."""
    names = state_dict_names(model)
    out = set()
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and module.track_running_stats:
            for t in (module.running_mean, module.running_var, module.num_batches_tracked):
                if t is not None:
                    out.update(names.get(id(t), []))
    return out


def check_forward(model, args):
    """Runs the forward once on `args` (as torch.onnx.export takes them) and raises
    ForwardNotExportable where the export would differ from torch's training: a gradient stopped
    other than by .detach(), a torch.autograd.Function's own backward, a gradient hook (on a
    tensor or a module), an nn.Embedding's scale_grad_by_freq, or a tensor of the model
    that the forward changes in place (spectral_norm's power iteration, an nn.Embedding's
    max_norm), BatchNorm's running statistics aside. The model's state and torch's RNG are restored."""
    for name, module in model.named_modules():
        what = None
        if getattr(module, "_backward_hooks", None) or getattr(module, "_backward_pre_hooks", None):
            what = "has a backward hook (register_full_backward_hook), which changes gradients"
        elif isinstance(module, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and module.scale_grad_by_freq:
            what = "has scale_grad_by_freq=True, which scales its gradient by each index's count in the batch"
        if what:
            raise ForwardNotExportable(f"of_export: module '{name or type(module).__name__}' ({type(module).__name__}) {what}; "
                                       "an ONNX file cannot carry that, so ofc would train without it")
    if isinstance(args, torch.Tensor):
        args = (args,)
    kwargs = args[-1] if args and isinstance(args[-1], dict) else {}
    positional = args[:-1] if kwargs else args
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    try:
        with torch.random.fork_rng(devices=[]), torch.enable_grad(), _GradientStopWatch():
            model(*positional, **kwargs)
        batch_norm = _updated_by_batch_norm(model)
        changed = sorted(k for k, v in model.state_dict().items()
                         if k not in batch_norm and (v.shape != state[k].shape or not torch.equal(v.detach(), state[k])))
        if changed:
            raise ForwardNotExportable(
                f"of_export: the forward changes {', '.join(changed[:4])}{' ...' if len(changed) > 4 else ''} in place "
                "(nn.utils.spectral_norm's power iteration, an nn.Embedding's max_norm, a running average of its own): "
                "the ONNX file cannot carry that update, so ofc would train without it")
    finally:
        with torch.no_grad():
            for k, v in model.state_dict().items():
                if v.shape == state[k].shape:
                    v.copy_(state[k])


# How a .detach() travels through torch.onnx.export: a custom op's output would lose its shape in
# the exporter's shape inference (and a convolution reading it, its kernel's), so the symbolic
# writes two Identity nodes in a row, which keep the shape and which the exporter writes nowhere
# else; write_stop_gradients turns each such pair into one of.StopGradient.
def _detach_symbolic(g, x):
    return g.op("Identity", g.op("Identity", x))


# A symbolic registered for opset 9 serves every later opset the export asks for.
_SYMBOLIC_OPSET = 9


# `x.bernoulli_(p)` with a number p (torchvision's stochastic_depth, timm's drop_path): torch 1.13
# cannot export it ("out parameter is not supported for bernoulli"), and its own symbolic for the
# other forms, a draw compared with p, would keep drawing in an evaluation plan. Written instead as
# a Dropout of ones with ratio 1 - p, times p: in training 0 or 1 with probability p (one float
# rounding from 1: (1 / p) * p), keyed as ofc's Dropout masks are; in an evaluation plan, where
# ofc's Dropout is the identity, p itself, the draw's expectation, so the stochastic depth's
# `noise / p * x` is x exactly, as torch's eval mode returns it. Other forms (torch.bernoulli of
# a probability tensor) keep torch's symbolic.
def _bernoulli_symbolic(g, input, *args):
    p = symbolic_helper._maybe_get_const(args[0], "f") if args else None
    if not isinstance(p, float):
        return symbolic_opset9.bernoulli(g, input, *args)
    ones = g.op("ConstantOfShape", g.op("Shape", input), value_t=torch.tensor([1.0]))
    if p <= 0.0:  # never 1 (Dropout's ratio must stay below 1)
        return g.op("Mul", ones, g.op("Constant", value_t=torch.tensor(0.0)))
    kept = g.op("Dropout", ones, g.op("Constant", value_t=torch.tensor(1.0 - p)), g.op("Constant", value_t=torch.tensor(True)))
    return g.op("Mul", kept, g.op("Constant", value_t=torch.tensor(p)))


# nn.Dropout1d/2d/3d in training (`feature_dropout`: one draw per sample and channel), which
# torch 1.13 refuses to export in training mode: written as the input times a Dropout of ones of
# shape [N, C, 1, ...] with ratio p, torch's own noise (0 or 1 / (1 - p)) in training and ones,
# the identity, in an evaluation plan.
def _feature_dropout_symbolic(g, input, p, train):
    p = symbolic_helper._maybe_get_const(p, "f")
    train = symbolic_helper._maybe_get_const(train, "b")
    rank = symbolic_helper._get_tensor_rank(input)
    if not train or (isinstance(p, float) and p == 0.0):
        return input
    if not isinstance(p, float) or not isinstance(train, bool) or rank is None or rank < 2:
        return symbolic_helper._unimplemented("feature_dropout", "a probability, a training flag and a rank known at export", input)
    if p >= 1.0:  # every channel dropped (Dropout's ratio must stay below 1)
        return g.op("Mul", input, g.op("Constant", value_t=torch.tensor(0.0)))
    batch_channels = g.op("Slice", g.op("Shape", input), g.op("Constant", value_t=torch.tensor([0])),
                          g.op("Constant", value_t=torch.tensor([2])))
    shape = g.op("Concat", batch_channels, g.op("Constant", value_t=torch.ones(rank - 2, dtype=torch.int64)), axis_i=0)
    ones = g.op("ConstantOfShape", shape, value_t=torch.tensor([1.0]))
    noise = g.op("Dropout", ones, g.op("Constant", value_t=torch.tensor(p)), g.op("Constant", value_t=torch.tensor(True)))
    return g.op("Mul", input, noise)


# Tensor.index_add: torch writes data + ScatterElements(zeros, index, source) without a reduction at
# any opset, which keeps one of a repeated index's additions (torch warns; ofc refuses it). From
# opset 16, where ScatterElements takes reduction="add", written as one scatter-add into data.
def _index_add_symbolic(g, self, dim, index, other, alpha=None):
    dim = symbolic_helper._maybe_get_const(dim, "i")
    rank = symbolic_helper._get_tensor_rank(other)
    plain_alpha = alpha is None or symbolic_helper._is_none(alpha) or \
        symbolic_helper._maybe_get_const(alpha, "f") == 1
    if GLOBALS.export_onnx_opset_version < 16 or not isinstance(dim, int) or rank is None or \
            rank != symbolic_helper._get_tensor_rank(self) or not plain_alpha:
        return symbolic_opset9.index_add(g, self, dim, index, other, alpha)
    dim = dim % rank
    along = g.op("Reshape", index, g.op("Constant", value_t=torch.tensor([-1 if d == dim else 1 for d in range(rank)])))
    return g.op("ScatterElements", self, g.op("Expand", along, g.op("Shape", other)), other, axis_i=dim, reduction_s="add")


@contextlib.contextmanager
def _export_symbolics():
    """.detach() marked for write_stop_gradients, bernoulli_(p) and channel dropout written as Dropouts."""
    symbolics = {"aten::detach": _detach_symbolic, "aten::bernoulli": _bernoulli_symbolic,
                 "aten::feature_dropout": _feature_dropout_symbolic, "aten::feature_dropout_": _feature_dropout_symbolic,
                 "aten::index_add": _index_add_symbolic}
    for name, fn in symbolics.items():
        torch.onnx.register_custom_op_symbolic(name, fn, _SYMBOLIC_OPSET)
    try:
        yield
    finally:
        for name in symbolics:
            torch.onnx.unregister_custom_op_symbolic(name, _SYMBOLIC_OPSET)


def write_stop_gradients(proto):
    """Replaces, in `proto` (an onnx.ModelProto exported under _export_symbolics), each pair of
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
    of.StopGradient; what an ONNX file cannot carry is refused first (check_forward)."""
    check_forward(model, args)
    with _export_symbolics():
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
