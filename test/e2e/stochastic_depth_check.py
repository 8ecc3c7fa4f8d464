#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Stochastic depth as torchvision and timm write it (`noise.bernoulli_(1 - p)`), which torch 1.13
cannot export: scripts/of_export.py writes each draw as a Dropout of ones (times 1 - p), so a
training plan drops residual branches and an evaluation plan keeps them all, as torch's eval mode.

  stochastic_depth_check.py --bin BUILD/cli --work SCRATCH

Models: torchvision's ConvNeXt (convnext_tiny's code, stages (16, 32, 64) of one block) with
stochastic_depth_prob=0.5, its blocks' StochasticDepth in row mode; and a residual MLP with
StochasticDepth(0.5, "batch") and timm's drop_path (bernoulli_, scaled by the keep probability).

  1. The exports hold one Dropout per draw, on ones of the batch's shape (row mode: [N, 1, ...];
     batch mode: all ones), with ratio p.
  2. Evaluation: each training export compiled for inference gives torch's eval-mode outputs
     (within 1e-5): the draws are gone, nothing is scaled.
  3. Training (ConvNeXt, 12 AdamW steps, batch 8): seeded runs equal, --seed matters, a resume is
     exact and 2 devices give one's losses (test/e2e/seeded_training.py); the losses differ from
     the same model with stochastic_depth_prob=0; the loss falls.

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
        from torchvision.models.convnext import CNBlockConfig, ConvNeXt
        from torchvision.ops import StochasticDepth
        sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
        from of_export import export_for_training
    except ImportError as e:
        print(f"stochastic_depth: FAIL: cannot run: {e} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = lambda *p: os.path.join(args.work, *p)  # noqa: E731
    run = tool("stochastic_depth", args.bin)
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
              "mlp": (mlp, rows, [(0.25, [batch, 1]), (0.5, [1, 1])])}
    for name, (make, example, draws) in models.items():
        model = make().train()
        export_for_training(model, (torch.from_numpy(example),), w(f"{name}.onnx"), input_names=["input"],
                            output_names=["logits"])
        # 1. one Dropout per draw, on ones of the batch's shape, ratio p
        proto = onnx.load(w(f"{name}.onnx"))
        consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in proto.graph.node if n.op_type == "Constant"}
        producer = {o: n for n in proto.graph.node for o in n.output}

        def drawn_shape(ones):  # ConstantOfShape(Shape(the empty tensor drawn into))
            shape_of = producer[producer[ones].input[0]].input[0]
            return list(consts[shape_of].shape) if shape_of in consts else None

        got = sorted((round(float(consts[n.input[1]]), 6), drawn_shape(n.input[0]))
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

    # 3. training draws: seeded, layout-independent, and it matters
    export_for_training(convnext(0.0).train(), (torch.from_numpy(images[:batch]),), w("plain.onnx"), input_names=["input"],
                        output_names=["logits"])
    losses = losses_of(run, args.work, f"npy:{w('x.npy')},{w('y.npy')}")
    opt = ["--train", "--loss", "cross_entropy", "--optimizer", "adamw:lr=0.004"]
    run("ofc", w("convnext.onnx"), "-o", w("c1.ofp"), *opt)
    run("ofc", w("convnext.onnx"), "-o", w("c2.ofp"), *opt, "--devices", "2:cpu")
    run("ofc", w("plain.onnx"), "-o", w("p.ofp"), *opt)
    seeded, a, worst = seeded_failures(losses, w("c1.ofp"), w("c2.ofp"), args.work)
    failures += seeded
    if a == losses(w("p.ofp"), "p", "--seed", 3):
        failures.append("ConvNeXt with stochastic_depth_prob=0 gives the same losses: nothing is dropped")
    if not (a and a[max(a)] < a[min(a)]):
        failures.append(f"the loss did not fall over {len(a)} steps: {a}")

    for f in failures:
        print(f"stochastic_depth: FAIL: {f}")
    if failures:
        return 1
    print(f"stochastic_depth: pass: one Dropout per draw, evaluation as torch's eval mode, seeded runs equal, "
          f"loss {a[min(a)]:.3f} -> {a[max(a)]:.3f}, resume exact, 2 devices within {worst:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
