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
(_index_add_symbolic: torch's own keeps one of a repeated index's additions). Functions torch 1.13
cannot export at all (losses, nn.Bilinear, Tensor.unflatten, torch.logaddexp, xlogy, ...) are
written out with ops whose gradients are torch's. The rest is
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


# The loss functions torch 1.13 cannot export (F.mse_loss, F.l1_loss, F.smooth_l1_loss,
# F.huber_loss, F.binary_cross_entropy, F.soft_margin_loss, F.margin_ranking_loss,
# F.hinge_embedding_loss, F.cosine_embedding_loss, F.poisson_nll_loss), written as the element-wise
# ops of torch's own definitions (aten's loss kernels) and reduced as `reduction` says: 0 none,
# 1 mean, 2 sum. Where picks each element's branch as torch's kernels do, so the gradients are
# theirs too.
def _const(g, value):
    return g.op("Constant", value_t=torch.tensor(value, dtype=torch.float32))


def _reduced(g, loss, reduction):
    reduction = symbolic_helper._maybe_get_const(reduction, "i")
    if reduction == 0:
        return loss
    if reduction == 1:
        return g.op("ReduceMean", loss, keepdims_i=0)
    if reduction == 2:
        return g.op("ReduceSum", loss, keepdims_i=0)
    return symbolic_helper._unimplemented("loss", f"reduction {reduction}", loss)


def _mse_loss_symbolic(g, input, target, reduction):
    d = g.op("Sub", input, target)
    return _reduced(g, g.op("Mul", d, d), reduction)


def _l1_loss_symbolic(g, input, target, reduction):
    return _reduced(g, g.op("Abs", g.op("Sub", input, target)), reduction)


def _piecewise_quadratic(g, input, target, bound, quadratic_scale, linear_scale):
    """|d| < bound: quadratic_scale * d * d; else linear_scale * (|d| - bound / 2)."""
    d = g.op("Sub", input, target)
    z = g.op("Abs", d)
    quadratic = g.op("Mul", g.op("Mul", d, d), _const(g, quadratic_scale))
    linear = g.op("Mul", g.op("Sub", z, _const(g, 0.5 * bound)), _const(g, linear_scale))
    return g.op("Where", g.op("Less", z, _const(g, bound)), quadratic, linear)


def _smooth_l1_loss_symbolic(g, input, target, reduction, beta=None):
    beta = 1.0 if beta is None else symbolic_helper._maybe_get_const(beta, "f")
    if not isinstance(beta, float):
        return symbolic_helper._unimplemented("smooth_l1_loss", "a beta known at export", input)
    if beta == 0.0:  # torch: the L1 loss
        return _l1_loss_symbolic(g, input, target, reduction)
    return _reduced(g, _piecewise_quadratic(g, input, target, beta, 0.5 / beta, 1.0), reduction)


def _huber_loss_symbolic(g, input, target, reduction, delta):
    delta = symbolic_helper._maybe_get_const(delta, "f")
    if not isinstance(delta, float):
        return symbolic_helper._unimplemented("huber_loss", "a delta known at export", input)
    return _reduced(g, _piecewise_quadratic(g, input, target, delta, 0.5, delta), reduction)


def _binary_cross_entropy_symbolic(g, input, target, weight, reduction):
    # -(t log(x) + (1 - t) log(1 - x)), each log clamped at -100 as torch's kernel does.
    floor = _const(g, -100.0)
    log_x = g.op("Max", g.op("Log", input), floor)
    log_1mx = g.op("Max", g.op("Log", g.op("Sub", _const(g, 1.0), input)), floor)
    loss = g.op("Neg", g.op("Add", g.op("Mul", target, log_x), g.op("Mul", g.op("Sub", _const(g, 1.0), target), log_1mx)))
    if weight is not None and not symbolic_helper._is_none(weight):
        loss = g.op("Mul", loss, weight)
    return _reduced(g, loss, reduction)


def _soft_margin_loss_symbolic(g, input, target, reduction):
    return _reduced(g, g.op("Softplus", g.op("Neg", g.op("Mul", input, target))), reduction)


def _margin_ranking_loss_symbolic(g, input1, input2, target, margin, reduction):
    # max(0, -y (x1 - x2) + margin)
    gap = g.op("Mul", g.op("Neg", target), g.op("Sub", input1, input2))
    return _reduced(g, g.op("Relu", g.op("Add", gap, g.op("Cast", margin, to_i=1))), reduction)


def _hinge_embedding_loss_symbolic(g, input, target, margin, reduction):
    # aten: where(y != 1, max(margin - x, 0), 0) + where(y != -1, x, 0)
    zero = _const(g, 0.0)
    clamped = g.op("Relu", g.op("Sub", g.op("Cast", margin, to_i=1), input))
    not_one = g.op("Not", g.op("Equal", target, _const(g, 1.0)))
    not_minus_one = g.op("Not", g.op("Equal", target, _const(g, -1.0)))
    loss = g.op("Add", g.op("Where", not_one, clamped, zero), g.op("Where", not_minus_one, input, zero))
    return _reduced(g, loss, reduction)


def _cosine_embedding_loss_symbolic(g, input1, input2, target, margin, reduction):
    # aten: cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12)) over the last axis;
    # where(y == 1, 1 - cos, 0) + where(y == -1, max(0, cos - margin), 0)
    rank = symbolic_helper._get_tensor_rank(input1)
    if rank is None:
        return symbolic_helper._unimplemented("cosine_embedding_loss", "a rank known at export", input1)

    def last_sum(x):
        if GLOBALS.export_onnx_opset_version >= 13:
            return g.op("ReduceSum", x, g.op("Constant", value_t=torch.tensor([rank - 1])), keepdims_i=0)
        return g.op("ReduceSum", x, axes_i=[rank - 1], keepdims_i=0)
    eps = _const(g, 1e-12)
    dot = last_sum(g.op("Mul", input1, input2))
    norms = g.op("Mul", g.op("Add", last_sum(g.op("Mul", input1, input1)), eps), g.op("Add", last_sum(g.op("Mul", input2, input2)), eps))
    cos = g.op("Div", dot, g.op("Sqrt", norms))
    zero = _const(g, 0.0)
    positive = g.op("Where", g.op("Equal", target, _const(g, 1.0)), g.op("Sub", _const(g, 1.0), cos), zero)
    negative = g.op("Where", g.op("Equal", target, _const(g, -1.0)), g.op("Relu", g.op("Sub", cos, g.op("Cast", margin, to_i=1))), zero)
    return _reduced(g, g.op("Add", positive, negative), reduction)


def _poisson_nll_loss_symbolic(g, input, target, log_input, full, eps, reduction):
    log_input = symbolic_helper._maybe_get_const(log_input, "b")
    full = symbolic_helper._maybe_get_const(full, "b")
    eps = symbolic_helper._maybe_get_const(eps, "f")
    if not isinstance(log_input, bool) or not isinstance(full, bool) or not isinstance(eps, float):
        return symbolic_helper._unimplemented("poisson_nll_loss", "log_input, full and eps known at export", input)
    if log_input:  # exp(x) - t x
        loss = g.op("Sub", g.op("Exp", input), g.op("Mul", target, input))
    else:  # x - t log(x + eps)
        loss = g.op("Sub", input, g.op("Mul", target, g.op("Log", g.op("Add", input, _const(g, eps)))))
    if full:  # + Stirling's t log t - t + log(2 pi t) / 2 where t > 1
        stirling = g.op("Add", g.op("Sub", g.op("Mul", target, g.op("Log", target)), target),
                        g.op("Mul", _const(g, 0.5), g.op("Log", g.op("Mul", _const(g, 2 * 3.141592653589793), target))))
        loss = g.op("Add", loss, g.op("Where", g.op("Greater", target, _const(g, 1.0)), stirling, _const(g, 0.0)))
    return _reduced(g, loss, reduction)


# F.pairwise_distance as torch computes it, the p-norm of x1 - x2 + eps over the last axis (torch
# 1.13's symbolic takes (sum (x1 - x2)^p)^(1 / (p + eps)): no absolute value, eps in the wrong
# place), and F.triplet_margin_loss on it: max(margin + d(a, p) - d(a, n), 0), with swap the
# nearer of d(a, n) and d(p, n).
def _p_norm_distance(g, x1, x2, p, eps, keepdim):
    rank = symbolic_helper._get_tensor_rank(x1)
    if not isinstance(p, float) or not isinstance(eps, float) or rank is None or p <= 0:
        return symbolic_helper._unimplemented("pairwise_distance", "p > 0, eps and a rank known at export", x1)
    d = g.op("Add", g.op("Sub", x1, x2), _const(g, eps))
    last = g.op("Constant", value_t=torch.tensor([max(rank, symbolic_helper._get_tensor_rank(x2) or 0) - 1]))
    if p == 1.0:
        return g.op("ReduceSum", g.op("Abs", d), last, keepdims_i=int(keepdim))
    if p == 2.0:
        return g.op("Sqrt", g.op("ReduceSum", g.op("Mul", d, d), last, keepdims_i=int(keepdim)))
    powered = g.op("Pow", g.op("Abs", d), _const(g, p))
    return g.op("Pow", g.op("ReduceSum", powered, last, keepdims_i=int(keepdim)), _const(g, 1.0 / p))


def _pairwise_distance_symbolic(g, x1, x2, p, eps, keepdim):
    return _p_norm_distance(g, x1, x2, symbolic_helper._maybe_get_const(p, "f"), symbolic_helper._maybe_get_const(eps, "f"),
                            bool(symbolic_helper._maybe_get_const(keepdim, "b")))


def _triplet_margin_loss_symbolic(g, anchor, positive, negative, margin, p, eps, swap, reduction):
    margin, p = symbolic_helper._maybe_get_const(margin, "f"), symbolic_helper._maybe_get_const(p, "f")
    eps, swap = symbolic_helper._maybe_get_const(eps, "f"), symbolic_helper._maybe_get_const(swap, "b")
    if not isinstance(margin, float) or not isinstance(swap, bool):
        return symbolic_helper._unimplemented("triplet_margin_loss", "margin and swap known at export", anchor)
    to_positive = _p_norm_distance(g, anchor, positive, p, eps, False)
    to_negative = _p_norm_distance(g, anchor, negative, p, eps, False)
    if swap:
        to_negative = g.op("Min", to_negative, _p_norm_distance(g, positive, negative, p, eps, False))
    loss = g.op("Relu", g.op("Add", g.op("Sub", to_positive, to_negative), _const(g, margin)))
    return _reduced(g, loss, reduction)


# nn.Bilinear (torch 1.13 cannot export aten::bilinear): y[..., k] = x1 W[k] x2 + b[k], W [out,
# in1, in2], as x1 times W laid out [in1, out * in2], reshaped to [..., out, in2], times x2 and
# summed over in2.
def _bilinear_symbolic(g, input1, input2, weight, bias):
    sizes = symbolic_helper._get_tensor_sizes(weight)
    rank = symbolic_helper._get_tensor_rank(input1)
    if not sizes or None in sizes or rank is None:
        return symbolic_helper._unimplemented("bilinear", "shapes known at export", input1)
    out, in1, in2 = sizes
    w = g.op("Reshape", g.op("Transpose", weight, perm_i=[1, 0, 2]), g.op("Constant", value_t=torch.tensor([in1, out * in2])))
    lead = g.op("Slice", g.op("Shape", input1), g.op("Constant", value_t=torch.tensor([0])), g.op("Constant", value_t=torch.tensor([rank - 1])))
    left = g.op("Reshape", g.op("MatMul", input1, w), g.op("Concat", lead, g.op("Constant", value_t=torch.tensor([out, in2])), axis_i=0))
    right = g.op("Unsqueeze", input2, g.op("Constant", value_t=torch.tensor([rank - 1])))
    y = g.op("ReduceSum", g.op("Mul", left, right), g.op("Constant", value_t=torch.tensor([rank])), keepdims_i=0)
    return y if bias is None or symbolic_helper._is_none(bias) else g.op("Add", y, bias)


# nn.Threshold with a threshold other than 0 (torch 1.13 exports only 0): x > threshold ? x : value.
def _threshold_symbolic(g, input, threshold, value):
    return g.op("Where", g.op("Greater", input, g.op("Cast", threshold, to_i=1)), input, g.op("Cast", value, to_i=1))


# Tensor functions torch 1.13 has no symbolic for, written with ops whose gradients give torch's.
def _unflatten_symbolic(g, input, dim, sizes):
    shape = symbolic_helper._get_tensor_sizes(input)
    dim, sizes = symbolic_helper._maybe_get_const(dim, "i"), symbolic_helper._maybe_get_const(sizes, "is")
    if not shape or None in shape or not isinstance(dim, int) or not isinstance(sizes, list):
        return symbolic_helper._unimplemented("unflatten", "shapes, dim and sizes known at export", input)
    dim = dim % len(shape)
    return g.op("Reshape", input, g.op("Constant", value_t=torch.tensor(shape[:dim] + list(sizes) + shape[dim + 1:])))


def _expm1_symbolic(g, input):
    # exp(x) - 1: within float32 rounding of torch's in absolute terms (not relative, near 0).
    return g.op("Sub", g.op("Exp", input), _const(g, 1.0))


def _logaddexp_symbolic(g, a, b):
    # m + log(exp(a - m) + exp(b - m)), m = max(a, b): its gradient is exp(a - out) however Max
    # splits a tie (the shift cancels), as torch's.
    m = g.op("Max", a, b)
    return g.op("Add", m, g.op("Log", g.op("Add", g.op("Exp", g.op("Sub", a, m)), g.op("Exp", g.op("Sub", b, m)))))


def _xlogy_symbolic(g, x, y):
    # 0 where x == 0 (whatever y), else x * log(y); both gradients 0 there, as torch's.
    x, y = g.op("Cast", x, to_i=1), g.op("Cast", y, to_i=1)
    zero = _const(g, 0.0)
    return g.op("Where", g.op("Equal", x, zero), zero, g.op("Mul", x, g.op("Log", y)))


def _hypot_symbolic(g, a, b):
    return g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))


def _frac_symbolic(g, input):
    # x - trunc(x), trunc(x) = sign(x) * floor(|x|): gradient 1, as torch's.
    return g.op("Sub", input, g.op("Mul", g.op("Sign", input), g.op("Floor", g.op("Abs", input))))


def _diff_symbolic(g, input, n, dim, prepend, append):
    n, dim = symbolic_helper._maybe_get_const(n, "i"), symbolic_helper._maybe_get_const(dim, "i")
    if n != 1 or not symbolic_helper._is_none(prepend) or not symbolic_helper._is_none(append) or not isinstance(dim, int):
        return symbolic_helper._unimplemented("diff", "n=1 and a dim known at export, without prepend or append", input)
    axis = g.op("Constant", value_t=torch.tensor([dim]))
    big = g.op("Constant", value_t=torch.tensor([2**62]))
    upper = g.op("Slice", input, g.op("Constant", value_t=torch.tensor([1])), big, axis)
    lower = g.op("Slice", input, g.op("Constant", value_t=torch.tensor([0])), g.op("Constant", value_t=torch.tensor([-1])), axis)
    return g.op("Sub", upper, lower)


def _logcumsumexp_symbolic(g, input, dim):
    # m + log(cumsum(exp(x - m))), m the largest element along dim: the shift cancels in the
    # gradient (softmax-weighted prefix sums, as torch's), and no exp overflows.
    dim = symbolic_helper._maybe_get_const(dim, "i")
    if not isinstance(dim, int):
        return symbolic_helper._unimplemented("logcumsumexp", "a dim known at export", input)
    m = g.op("ReduceMax", input, axes_i=[dim], keepdims_i=1)
    total = g.op("CumSum", g.op("Exp", g.op("Sub", input, m)), g.op("Constant", value_t=torch.tensor(dim)))
    return g.op("Add", m, g.op("Log", total))


def _diag_embed_symbolic(g, input, offset, dim1, dim2):
    offset, dim1, dim2 = (symbolic_helper._maybe_get_const(v, "i") for v in (offset, dim1, dim2))
    sizes = symbolic_helper._get_tensor_sizes(input)
    if offset != 0 or not sizes or sizes[-1] is None or (dim1 % (len(sizes) + 1), dim2 % (len(sizes) + 1)) != (len(sizes) - 1, len(sizes)):
        return symbolic_helper._unimplemented("diag_embed", "offset 0 into the last two axes, and a size known at export", input)
    # x[..., i] on the diagonal of [..., n, n]: x[..., None] times the identity.
    unsqueezed = g.op("Unsqueeze", input, g.op("Constant", value_t=torch.tensor([len(sizes)])))
    return g.op("Mul", unsqueezed, g.op("Constant", value_t=torch.eye(sizes[-1])))


# nn.Conv1d/2d/3d(padding="same" | "valid") (torch 1.13 cannot export aten::_convolution_mode): a
# Conv with the pads torch computes, d * (k - 1) per axis, the odd one on the far side.
def _convolution_mode_symbolic(g, input, weight, bias, stride, padding, dilation, groups):
    mode = symbolic_helper._maybe_get_const(padding, "s")
    stride, dilation = symbolic_helper._maybe_get_const(stride, "is"), symbolic_helper._maybe_get_const(dilation, "is")
    groups = symbolic_helper._maybe_get_const(groups, "i")
    sizes = symbolic_helper._get_tensor_sizes(weight)
    if mode not in ("same", "valid") or not sizes or None in sizes or not isinstance(stride, list) or \
            not isinstance(dilation, list) or not isinstance(groups, int):
        return symbolic_helper._unimplemented("convolution", "padding 'same' or 'valid', and shapes known at export", input)
    kernel = sizes[2:]
    total = [d * (k - 1) if mode == "same" else 0 for d, k in zip(dilation, kernel)]
    args = [input, weight] + ([] if bias is None or symbolic_helper._is_none(bias) else [bias])
    return g.op("Conv", *args, kernel_shape_i=kernel, strides_i=stride, dilations_i=dilation, group_i=groups,
                pads_i=[t // 2 for t in total] + [t - t // 2 for t in total])


# nn.AdaptiveAvgPool2d to a size that does not divide the input (torch 1.13 refuses): its windows
# [floor(i H / oh), ceil((i + 1) H / oh)) overlap and vary in length, but the pooling is linear and
# separable: y = P_h x P_w^T with constant averaging matrices. Sizes that divide keep torch's
# AveragePool.
def _adaptive_sizes(input, output_size):
    """(input sizes, output size) of a 2-D adaptive pooling whose output does not divide its
    input, known at export; None where torch's own symbolic serves (sizes that divide)."""
    sizes = symbolic_helper._get_tensor_sizes(input)
    out = symbolic_helper._maybe_get_const(output_size, "is")
    if not sizes or len(sizes) != 4 or None in sizes[2:] or not isinstance(out, list) or len(out) != 2 or \
            all(s % o == 0 for s, o in zip(sizes[2:], out)):
        return None
    return sizes, out


def _adaptive_window(i, n, o):
    """Window i of o over n positions, as torch's adaptive pooling: [floor(i n / o), ceil((i + 1) n / o))."""
    return (i * n) // o, -((-(i + 1) * n) // o)


def _adaptive_avg_pool2d_symbolic(g, input, output_size):
    known = _adaptive_sizes(input, output_size)
    if known is None:
        return symbolic_opset9.adaptive_avg_pool2d(g, input, output_size)
    sizes, out = known

    def averaging(n, o):
        p = torch.zeros(o, n)
        for i in range(o):
            lo, hi = _adaptive_window(i, n, o)
            p[i, lo:hi] = 1.0 / (hi - lo)
        return p
    rows = g.op("MatMul", input, g.op("Constant", value_t=averaging(sizes[3], out[1]).t().contiguous()))
    return g.op("MatMul", g.op("Constant", value_t=averaging(sizes[2], out[0])), rows)


# nn.AdaptiveMaxPool2d to a size that does not divide the input (torch 1.13 refuses): the maximum
# over a rectangle is the maximum over its rows of the maxima over its columns, so per output
# column a ReduceMax over its window of columns, then per output row one over its rows. The
# gradient goes to the first maximum in row-major order, as torch's. The indices are not written
# (return_indices=True is refused by the exporter: an output nothing makes).
def _adaptive_max_pool2d_symbolic(g, input, output_size):
    known = _adaptive_sizes(input, output_size)
    if known is None:
        return symbolic_opset9.adaptive_max_pool2d(g, input, output_size)
    sizes, out = known

    def windows(x, axis, n, o):
        parts = []
        for i in range(o):
            lo, hi = _adaptive_window(i, n, o)
            part = g.op("Slice", x, g.op("Constant", value_t=torch.tensor([lo])), g.op("Constant", value_t=torch.tensor([hi])),
                        g.op("Constant", value_t=torch.tensor([axis])))
            parts.append(g.op("ReduceMax", part, axes_i=[axis], keepdims_i=1))
        return g.op("Concat", *parts, axis_i=axis)
    return windows(windows(input, 3, sizes[3], out[1]), 2, sizes[2], out[0]), None


# nn.EmbeddingBag (recommendation models' sparse features: DLRM's tables), which torch exports as
# an ONNX Loop over the bags (ofc refuses Loop). Written instead as:
#  - bags of one length (a 2-D input, whose offsets torch makes constant and evenly spaced): the
#    rows gathered as [bags, length, dim] and summed, averaged or maxed over the length;
#  - offsets given at run time (a 1-D input and its offsets), from opset 16: each row added into
#    its bag by ScatterElements(reduction="add"), the bag of entry i being the number of offsets
#    <= i, less one; a mean divides by the bag's size (an empty bag gives zeros, as torch's).
# per_sample_weights multiply the rows (mode sum); entries equal to padding_idx take no part (they
# add nothing, count for nothing and their row gets no gradient, as torch's). Refused by name:
# max over run-time offsets or with padding_idx, scale_grad_by_freq.
def _embedding_bag_symbolic(g, weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
                            include_last_offset, padding_idx=None):
    def refuse(what):
        raise RuntimeError(f"of_export: nn.EmbeddingBag {what}")
    mode = symbolic_helper._maybe_get_const(mode, "i")
    if symbolic_helper._maybe_get_const(scale_grad_by_freq, "b") is True:
        refuse("with scale_grad_by_freq=True is not supported")
    last = symbolic_helper._maybe_get_const(include_last_offset, "b") is True
    pad = None if padding_idx is None or symbolic_helper._is_none(padding_idx) else symbolic_helper._maybe_get_const(padding_idx, "i")
    if pad is not None and pad < 0:
        pad += symbolic_helper._get_tensor_sizes(weight)[0]
    weights = None if per_sample_weights is None or symbolic_helper._is_none(per_sample_weights) else per_sample_weights
    n = symbolic_helper._get_tensor_sizes(indices)
    dim = symbolic_helper._get_tensor_sizes(weight)[1]
    if not n or len(n) != 1 or n[0] is None or dim is None:
        refuse("needs the number of indices and the embedding size known at export")
    n = n[0]
    rows = g.op("Gather", weight, indices, axis_i=0)  # [n, dim]
    kept = None  # [n] float: 0 at padding_idx entries
    if pad is not None:
        if mode == 2:
            refuse("mode='max' with padding_idx is not supported")
        kept = g.op("Cast", g.op("Not", g.op("Equal", indices, g.op("Constant", value_t=torch.tensor(pad, dtype=torch.int64)))), to_i=1)
    scale = kept if weights is None else weights if kept is None else g.op("Mul", weights, kept)
    if scale is not None:
        rows = g.op("Mul", rows, g.op("Unsqueeze", scale, g.op("Constant", value_t=torch.tensor([1]))))
    starts = symbolic_helper._maybe_get_const(offsets, "is") if offsets.node().kind() == "onnx::Constant" else None
    if isinstance(starts, list):
        bags = len(starts) - (1 if last else 0)
        length = n // bags if bags > 0 else 0
        if bags > 0 and length > 0 and n == bags * length and starts[:bags] == list(range(0, n, length)):
            grouped = g.op("Reshape", rows, g.op("Constant", value_t=torch.tensor([bags, length, dim])))
            axis = g.op("Constant", value_t=torch.tensor([1]))
            if mode == 2:
                if GLOBALS.export_onnx_opset_version >= 18:
                    return g.op("ReduceMax", grouped, axis, keepdims_i=0), None, None, None
                return g.op("ReduceMax", grouped, axes_i=[1], keepdims_i=0), None, None, None
            total = g.op("ReduceSum", grouped, axis, keepdims_i=0)
            if mode == 0:
                return total, None, None, None
            if kept is None:
                return g.op("Div", total, g.op("Constant", value_t=torch.tensor(float(length)))), None, None, None
            count = g.op("ReduceSum", g.op("Reshape", kept, g.op("Constant", value_t=torch.tensor([bags, length]))), axis, keepdims_i=1)
            return g.op("Div", total, g.op("Max", count, g.op("Constant", value_t=torch.tensor(1.0)))), None, None, None
    if mode == 2:
        refuse("mode='max' with offsets given at run time is not supported")
    if GLOBALS.export_onnx_opset_version < 16:
        refuse("with offsets given at run time needs opset_version=16 or later (ScatterElements adds from 16)")
    bags = symbolic_helper._get_tensor_sizes(offsets)
    if not bags or bags[0] is None:
        refuse("needs the number of offsets known at export")
    bags = bags[0] - (1 if last else 0)
    starts = offsets if not last else g.op("Slice", offsets, g.op("Constant", value_t=torch.tensor([0])),
                                                g.op("Constant", value_t=torch.tensor([bags])))
    positions = g.op("Constant", value_t=torch.arange(n, dtype=torch.int64).unsqueeze(1))  # [n, 1]
    started = g.op("Cast", g.op("LessOrEqual", g.op("Unsqueeze", starts, g.op("Constant", value_t=torch.tensor([0]))), positions), to_i=1)
    bag = g.op("Sub", g.op("ReduceSum", started, g.op("Constant", value_t=torch.tensor([1])), keepdims_i=1),
               g.op("Constant", value_t=torch.tensor(1.0)))  # [n, 1]
    target = g.op("Expand", g.op("Cast", bag, to_i=7), g.op("Constant", value_t=torch.tensor([n, dim])))
    zeros = g.op("Constant", value_t=torch.zeros(bags, dim))
    total = g.op("ScatterElements", zeros, target, rows, axis_i=0, reduction_s="add")
    if mode == 0:
        return total, None, None, None
    if kept is None:
        ends = g.op("Concat", g.op("Slice", offsets, g.op("Constant", value_t=torch.tensor([1])),
                                   g.op("Constant", value_t=torch.tensor([bags + 1 if last else bags]))),
                    *([] if last else [g.op("Constant", value_t=torch.tensor([n]))]), axis_i=0)
        count = g.op("Cast", g.op("Sub", ends, starts), to_i=1)
    else:
        count = g.op("ScatterElements", g.op("Constant", value_t=torch.zeros(bags)), g.op("Cast", g.op("Squeeze", bag, g.op("Constant", value_t=torch.tensor([1]))), to_i=7),
                     kept, axis_i=0, reduction_s="add")
    count = g.op("Unsqueeze", g.op("Max", count, g.op("Constant", value_t=torch.tensor(1.0))), g.op("Constant", value_t=torch.tensor([1])))
    return g.op("Div", total, count), None, None, None


@contextlib.contextmanager
def _export_symbolics():
    """.detach() marked for write_stop_gradients, bernoulli_(p) and channel dropout written as
    Dropouts, and the functions torch 1.13 cannot export (losses, nn.Bilinear, ...) written out."""
    symbolics = {"aten::detach": _detach_symbolic, "aten::bernoulli": _bernoulli_symbolic,
                 "aten::feature_dropout": _feature_dropout_symbolic, "aten::feature_dropout_": _feature_dropout_symbolic,
                 "aten::index_add": _index_add_symbolic, "aten::mse_loss": _mse_loss_symbolic,
                 "aten::l1_loss": _l1_loss_symbolic, "aten::smooth_l1_loss": _smooth_l1_loss_symbolic,
                 "aten::huber_loss": _huber_loss_symbolic, "aten::binary_cross_entropy": _binary_cross_entropy_symbolic,
                 "aten::soft_margin_loss": _soft_margin_loss_symbolic,
                 "aten::margin_ranking_loss": _margin_ranking_loss_symbolic,
                 "aten::hinge_embedding_loss": _hinge_embedding_loss_symbolic,
                 "aten::cosine_embedding_loss": _cosine_embedding_loss_symbolic,
                 "aten::poisson_nll_loss": _poisson_nll_loss_symbolic, "aten::bilinear": _bilinear_symbolic,
                 "aten::threshold": _threshold_symbolic, "aten::pairwise_distance": _pairwise_distance_symbolic,
                 "aten::triplet_margin_loss": _triplet_margin_loss_symbolic,
                 "aten::adaptive_avg_pool2d": _adaptive_avg_pool2d_symbolic, "aten::unflatten": _unflatten_symbolic,
                 "aten::expm1": _expm1_symbolic, "aten::logaddexp": _logaddexp_symbolic, "aten::xlogy": _xlogy_symbolic,
                 "aten::hypot": _hypot_symbolic, "aten::frac": _frac_symbolic, "aten::diff": _diff_symbolic,
                 "aten::logcumsumexp": _logcumsumexp_symbolic, "aten::diag_embed": _diag_embed_symbolic,
                 "aten::_convolution_mode": _convolution_mode_symbolic, "aten::adaptive_max_pool2d": _adaptive_max_pool2d_symbolic}
    # torch's own embedding_bag symbolics are registered for opsets 10 and 11: the exporter takes
    # the latest at or below the export's, so ours is registered at 11 (ofc reads opset 13 on).
    at_opset = {name: _SYMBOLIC_OPSET for name in symbolics}
    symbolics["aten::embedding_bag"] = _embedding_bag_symbolic
    at_opset["aten::embedding_bag"] = 11
    for name, fn in symbolics.items():
        torch.onnx.register_custom_op_symbolic(name, fn, at_opset[name])
    try:
        yield
    finally:
        for name in symbolics:
            torch.onnx.unregister_custom_op_symbolic(name, at_opset[name])


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


def export_for_inference(model, args, path, opset_version=14, **kwargs):
    """torch.onnx.export(model, args, path) with the functions torch 1.13 cannot export written out
    (nn.Bilinear, nn.Threshold, an nn.AdaptiveAvgPool2d whose size does not divide its input,
    F.mse_loss and the other losses: _export_symbolics), for a model torch's default export refuses.
    The model is exported as it is: call model.eval() first."""
    with _export_symbolics():
        torch.onnx.export(model, args, path, opset_version=opset_version, **kwargs)
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
