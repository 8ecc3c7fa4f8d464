#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/of_export.py on what a forward does that an ONNX file cannot say by itself:

  - each .detach() is written as one of.StopGradient (a chain of them too), nothing else is;
  - refused in one line naming the code: a result computed under torch.no_grad() from tensors
    that require grad, .data of one, a torch.autograd.Function (its own backward), a reentrant
    torch.utils.checkpoint, a tensor of the model changed in place by the forward
    (nn.utils.spectral_norm, nn.Embedding(max_norm=...)), a gradient hook (on a tensor or a module),
    an nn.Embedding's scale_grad_by_freq; BatchNorm's running statistics are not;
  - the check leaves the model's state as it found it.

  of_export_check.py --work DIR
Exits non-zero, naming the case, on the first difference.
"""
import argparse
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

import onnx  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.utils.checkpoint as checkpoint  # noqa: E402
from of_export import ForwardNotExportable, check_forward, export_for_training  # noqa: E402

FAILURES = []


def expect(case, ok, detail=""):
    print(f"of_export_check {case}: {'ok' if ok else 'FAIL'}{': ' + detail if detail else ''}")
    if not ok:
        FAILURES.append(case)


class Detaches(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 4)

    def forward(self, x):
        h = self.a(x)
        w = self.b.weight
        return self.b(h.detach().detach()) + F.linear(h, w + (torch.sign(w) - w).detach()), h.detach()


class NoGrad(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)

    def forward(self, x):
        with torch.no_grad():
            target = self.a(x) * 2
        return self.a(x) - target


class Data(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)

    def forward(self, x):
        h = self.a(x)
        return h + h.data


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return -g


class Reverses(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)

    def forward(self, x):
        return GradReverse.apply(self.a(x))


class Reentrant(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)

    def forward(self, x):
        return checkpoint.checkpoint(self.a, x, use_reentrant=True)


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 4)

    def forward(self, x):
        h = self.a(x)
        h.register_hook(lambda g: g * 0.5)
        return h


class MaxNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.e = nn.Embedding(10, 8, max_norm=0.5)

    def forward(self, ids):
        return self.e(ids).sum(1)


def refused(case, model, args, *needles):
    try:
        check_forward(model, args)
    except ForwardNotExportable as e:
        text = str(e)
        expect(case, "\n" not in text and text.startswith("of_export: ") and all(n in text for n in needles), text)
        return
    expect(case, False, "not refused")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", required=True)
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    x = torch.randn(4, 8)

    path = os.path.join(args.work, "detaches.onnx")
    export_for_training(Detaches(), x, path)
    nodes = onnx.load(path).graph.node
    stops = [n for n in nodes if n.op_type == "StopGradient" and n.domain == "of"]
    # h.detach().detach() (two), the straight-through estimator's, the output's.
    expect("detach", len(stops) == 4 and not any(n.op_type == "Identity" for n in nodes),
           f"{len(stops)} of.StopGradient, ops {[n.op_type for n in nodes]}")

    refused("no_grad", NoGrad(), x, "under torch.no_grad()", "of_export_check.py", "(forward)", ".detach()")
    refused("data", Data(), x, ".data of a tensor that requires grad")
    refused("autograd_function", Reverses(), x, "torch.autograd.Function GradReverse has a backward of its own")
    refused("reentrant_checkpoint", Reentrant(), x, "use_reentrant=False")
    refused("spectral_norm", nn.utils.spectral_norm(nn.Linear(8, 4)), x, "in torch/nn/utils/spectral_norm.py")
    ids = torch.randint(0, 10, (4, 3))
    model = MaxNorm()
    before = model.e.weight.detach().clone()
    refused("max_norm", model, ids, "changes e.weight in place")
    expect("state_restored", torch.equal(model.e.weight.detach(), before))

    refused("embedding_scale_grad_by_freq", nn.Embedding(10, 8, scale_grad_by_freq=True), ids, "module 'Embedding'",
            "scale_grad_by_freq=True")
    hooked = nn.Sequential(nn.Linear(8, 4))
    hooked[0].register_full_backward_hook(lambda module, grad_in, grad_out: None)
    refused("module_backward_hook", hooked, x, "module '0' (Linear) has a backward hook")
    refused("tensor_hook", Hooked(), x, "Tensor.register_hook")

    bn = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.Linear(8, 4)).train()
    stats = {k: v.clone() for k, v in bn.state_dict().items()}
    try:
        check_forward(bn, x)
        expect("batch_norm", all(torch.equal(v, stats[k]) for k, v in bn.state_dict().items()))
    except ForwardNotExportable as e:
        expect("batch_norm", False, str(e))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
