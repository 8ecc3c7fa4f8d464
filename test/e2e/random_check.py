#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Random numbers drawn by a model in training (torch.randn_like, torch.rand_like): deterministic
per seed, layout-independent, exact across a resume.

  random_check.py --bin BUILD/cli --work SCRATCH

Model: pytorch/examples' VAE, smaller (64 -> 32 -> 2x8 latents -> 32 -> 64), its encoder's hidden
layer through timm's drop_path (torch.rand_like of x's batch shape, floored: RandomUniformLike,
Floor) and its latents reparameterised with torch.randn_like (RandomNormalLike); its loss written as
it is there, a binary cross-entropy (with logits) summed plus the KL divergence, over the batch.
Exported with scripts/of_export.py; 12 Adam steps on fixed data (batch 16). PyTorch's generator
draws other numbers, so nothing here compares with PyTorch; instead:

  1. Two runs with --seed 3 give the same losses bit for bit; --seed 4 gives other losses.
  2. The numbers matter: the losses differ from the same model with no noise and no drop_path.
  3. It trains: the last step's loss is below the first's.
  4. A run stopped at step 6 (--checkpoint) and resumed to 12 reproduces steps 7..12 bit for bit.
  5. The same plan on 2 data-parallel devices gives the one-device losses within 1e-5 relative.

Exit 0 pass, 1 mismatch, 2 tool failure, 3 when torch is missing (a failure: setup installs it).
"""
import argparse
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
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
        sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
        from of_export import export_for_training
    except ImportError as e:
        print(f"random: FAIL: cannot run: {e} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = lambda *p: os.path.join(args.work, *p)  # noqa: E731

    run = tool("random", args.bin)

    def drop_path(x, drop_prob, training):  # timm's
        if drop_prob == 0.0 or not training:
            return x
        keep_prob = 1 - drop_prob
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
        random_tensor.floor_()
        return x.div(keep_prob) * random_tensor

    class VAE(nn.Module):
        def __init__(self, noisy):
            super().__init__()
            self.noisy = noisy
            self.fc1, self.fc21, self.fc22 = nn.Linear(64, 32), nn.Linear(32, 8), nn.Linear(32, 8)
            self.fc3, self.fc4 = nn.Linear(8, 32), nn.Linear(32, 64)

        def forward(self, input, label):
            h = F.relu(self.fc1(input))
            h = h + drop_path(h, 0.25 if self.noisy else 0.0, self.training)
            mu, logvar = self.fc21(h), self.fc22(h)
            eps = torch.randn_like(mu) if self.noisy else torch.zeros_like(mu)
            z = mu + eps * torch.exp(0.5 * logvar)
            logits = self.fc4(F.relu(self.fc3(z)))
            bce = F.binary_cross_entropy_with_logits(logits, label, reduction="sum")
            kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
            return (bce + kld) / input.shape[0]

    rng = np.random.default_rng(0)
    x = (rng.random((16 * 12, 64)) < 0.3).astype(np.float32)
    np.save(w("x.npy"), x)
    data = f"npy:{w('x.npy')},{w('x.npy')}"
    for noisy, name in ((True, "vae"), (False, "plain")):
        torch.manual_seed(0)
        model = VAE(noisy).train()
        example = (torch.from_numpy(x[:16]), torch.from_numpy(x[:16]))
        export_for_training(model, example, w(f"{name}.onnx"), input_names=["input", "label"])

    losses = losses_of(run, args.work, data)

    opt = ["--train", "--loss", "output", "--label", "label", "--optimizer", "adam:lr=0.01"]
    run("ofc", w("vae.onnx"), "-o", w("v1.ofp"), *opt)
    run("ofc", w("vae.onnx"), "-o", w("v2.ofp"), *opt, "--devices", "2:cpu")
    run("ofc", w("plain.onnx"), "-o", w("p.ofp"), *opt)
    failures, a, worst = seeded_failures(losses, w("v1.ofp"), w("v2.ofp"), args.work)
    if a == losses(w("p.ofp"), "p", "--seed", 3):
        failures.append("the model without noise gives the same losses: nothing is drawn")
    if not (a and a[max(a)] < a[min(a)]):
        failures.append(f"the loss did not fall over {len(a)} steps: {a}")

    for f in failures:
        print(f"random: FAIL: {f}")
    if failures:
        return 1
    print(f"random: pass: seeded runs equal, seed and noise matter, loss {a[min(a)]:.3f} -> {a[max(a)]:.3f}, resume exact, "
          f"2 devices within {worst:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
