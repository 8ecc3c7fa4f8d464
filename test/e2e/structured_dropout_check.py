#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Dropout of whole rows or channels, which torch 1.13 cannot export in training: stochastic depth
as torchvision and timm write it (`noise.bernoulli_(1 - p)`) and nn.Dropout1d/2d/3d. scripts/of_export.py
writes each draw as a Dropout of ones, so a training plan drops residual branches and channels and
an evaluation plan keeps them all, unscaled, as torch's eval mode.

  structured_dropout_check.py --bin BUILD/cli --work SCRATCH

Models: torchvision's ConvNeXt (convnext_tiny's code, stages (16, 32, 64) of one block) with
stochastic_depth_prob=0.5, its blocks' StochasticDepth in row mode; a residual MLP with
StochasticDepth(0.5, "batch") and timm's drop_path (bernoulli_, scaled by the keep probability);
and the CNN of pytorch/examples' MNIST as it once was, with nn.Dropout2d(0.25) after its convolutions.

  1. The exports hold one Dropout per draw, on ones of the shape drawn (row mode: [N, 1, ...];
     batch mode: all ones; Dropout2d: [N, C, 1, 1]), with ratio p.
  2. Evaluation: each training export compiled for inference gives torch's eval-mode outputs
     (within 1e-5): the draws are gone, nothing is scaled.
  3. Training (ConvNeXt, 12 AdamW steps, batch 8; the CNN, 12 SGD steps): seeded runs equal, --seed matters, a resume is
     exact and 2 devices give one's losses (test/e2e/seeded_training.py); the losses differ from
     the same model with stochastic_depth_prob=0 (the CNN: Dropout2d(0)); the loss falls.

PyTorch draws other numbers, so training is not compared with PyTorch step by step (the zoo runs
these models with stochastic_depth_prob=0). Exit 0 pass, 1 mismatch, 2 tool failure, 3 when
torch is missing (a failure: setup installs it).
"""
import argparse
import functools
import os
import shutil
import sys

CANNOT_RUN = 3
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from seeded_training import losses_of, seeded_failures, tool  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        from torchvision.ops import StochasticDepth
        sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
        from of_export import export_for_training
    except ImportError as e:
        print(f"structured_dropout: FAIL: cannot run: {e} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = lambda *p: os.path.join(args.work, *p)  # noqa: E731
    run = tool("structured_dropout", args.bin)
    failures = []

    def drop_path(x, drop_prob, training, scale_by_keep=True):  # timm's (timm/layers/drop.py)
        if drop_prob == 0.0 or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
        if keep_prob > 0.0 and scale_by_keep:
            random_tensor.div_(keep_prob)
        return x * random_tensor

    class ResidualMlp(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.out = nn.Linear(16, 16), nn.Linear(16, 16), nn.Linear(16, 4)
            self.sd = StochasticDepth(0.5, "batch")

        def forward(self, x):
            x = x + self.sd(torch.relu(self.fc1(x)))
            x = x + drop_path(torch.relu(self.fc2(x)), 0.25, self.training)
            return self.out(x)

    def convnext(p):
        torch.manual_seed(0)
        setting = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
        return ConvNeXt(setting, stochastic_depth_prob=p, num_classes=10)

    def mlp():
        torch.manual_seed(0)
        return ResidualMlp()

    class Net(nn.Module):  # pytorch/examples' MNIST CNN, with its Dropout2d of old, on 3x32x32
        def __init__(self, p):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(3, 8, 3, 1), nn.Conv2d(8, 16, 3, 1)
            self.dropout1 = nn.Dropout2d(p)
            self.fc = nn.Linear(16 * 14 * 14, 10)

        def forward(self, x):
            x = F.relu(self.conv2(F.relu(self.conv1(x))))
            x = self.dropout1(F.max_pool2d(x, 2))
            return self.fc(torch.flatten(x, 1))

    def cnn(p):
        torch.manual_seed(0)
        return Net(p)

    rng = np.random.default_rng(0)
    batch = 8
    images = rng.standard_normal((batch * 12, 3, 32, 32)).astype(np.float32)
    labels = rng.integers(0, 10, batch * 12).astype(np.int64)
    np.save(w("x.npy"), images)
    np.save(w("y.npy"), labels)
    rows = rng.standard_normal((batch, 16)).astype(np.float32)

    # name: the model, its example, and (ratio, shape drawn) per draw: ConvNeXt's blocks draw with
    # p = 0, 0.25, 0.5 (torchvision's schedule; p = 0 draws nothing), one number per row
    models = {"convnext": (functools.partial(convnext, 0.5), images[:batch], [(0.25, [batch, 1, 1, 1]), (0.5, [batch, 1, 1, 1])]),
              "mlp": (mlp, rows, [(0.25, [batch, 1]), (0.5, [1, 1])]),
              "cnn": (functools.partial(cnn, 0.25), images[:batch], [(0.25, [batch, 16, 1, 1])])}
    for name, (make, example, draws) in models.items():
        model = make().train()
        export_for_training(model, (torch.from_numpy(example),), w(f"{name}.onnx"), input_names=["input"],
                            output_names=["logits"])
        # 1. one Dropout per draw, on ones of the batch's shape, ratio p
        proto = onnx.shape_inference.infer_shapes(onnx.load(w(f"{name}.onnx")), data_prop=True)
        consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in proto.graph.node if n.op_type == "Constant"}
        shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in proto.graph.value_info}
        got = sorted((round(float(consts[n.input[1]]), 6), shapes.get(n.input[0]))
                     for n in proto.graph.node if n.op_type == "Dropout")
        if got != sorted(draws):
            failures.append(f"{name}: the export's Dropouts (ratio, shape) are {got}, expected {sorted(draws)}")
        # 2. the training export compiled for inference is torch's eval mode
        run("ofc", w(f"{name}.onnx"), "-o", w(f"{name}-infer.ofp"))
        np.save(w(f"{name}-in.npy"), example)
        run("ofrun", w(f"{name}-infer.ofp"), "--input", f"input={w(f'{name}-in.npy')}", "--output", f"logits={w(f'{name}-out.npy')}")
        with torch.no_grad():
            want = model.eval()(torch.from_numpy(example)).numpy()
        out = np.load(w(f"{name}-out.npy"))
        err = float(np.max(np.abs(out - want)) / max(1e-12, float(np.max(np.abs(want)))))
        if not err <= 1e-5:
            failures.append(f"{name}: the inference plan of the training export is {err:.3g} (relative) off torch's eval mode")

    # 3. training draws: seeded, layout-independent, and they matter
    losses = losses_of(run, args.work, f"npy:{w('x.npy')},{w('y.npy')}")
    summary = []
    for name, plain, optimizer in (("convnext", convnext(0.0), "adamw:lr=0.004"), ("cnn", cnn(0.0), "sgd:lr=0.05")):
        export_for_training(plain.train(), (torch.from_numpy(images[:batch]),), w(f"{name}-plain.onnx"), input_names=["input"],
                            output_names=["logits"])
        opt = ["--train", "--loss", "cross_entropy", "--optimizer", optimizer]
        run("ofc", w(f"{name}.onnx"), "-o", w(f"{name}-1.ofp"), *opt)
        run("ofc", w(f"{name}.onnx"), "-o", w(f"{name}-2.ofp"), *opt, "--devices", "2:cpu")
        run("ofc", w(f"{name}-plain.onnx"), "-o", w(f"{name}-plain.ofp"), *opt)
        os.makedirs(w(name))  # its own checkpoint folder
        seeded, a, worst = seeded_failures(losses, w(f"{name}-1.ofp"), w(f"{name}-2.ofp"), w(name))
        failures += [f"{name}: {f}" for f in seeded]
        if a == losses(w(f"{name}-plain.ofp"), "p", "--seed", 3):
            failures.append(f"{name}: the same model without dropout gives the same losses: nothing is dropped")
        if not (a and a[max(a)] < a[min(a)]):
            failures.append(f"{name}: the loss did not fall over {len(a)} steps: {a}")
        summary.append(f"{name} loss {a[min(a)]:.3f} -> {a[max(a)]:.3f}, 2 devices within {worst:.2g}")

    for f in failures:
        print(f"structured_dropout: FAIL: {f}")
    if failures:
        return 1
    print(f"structured_dropout: pass: one Dropout per draw, evaluation as torch's eval mode, seeded runs equal, "
          f"resume exact; {'; '.join(summary)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
