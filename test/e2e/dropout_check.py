#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Dropout in training: deterministic per seed, layout-independent, exact across a resume.

  dropout_check.py --bin BUILD/cli --work SCRATCH

Model: Linear(64,128) -> ReLU -> Dropout(0.5) -> Linear(128,10), exported with the training
recipe; 12 SGD steps on fixed random data (batch 16). PyTorch's CPU generator draws other masks,
so nothing here compares with PyTorch (the zoo runs its models with p = 0); instead:

  1. Two runs with --seed 3 give the same losses bit for bit; --seed 4 gives other losses.
  2. Dropout drops: the losses differ from the same model exported with p = 0.
  3. A run stopped at step 6 (--checkpoint) and resumed to 12 reproduces steps 7..12 of the
     uninterrupted run bit for bit (masks are keyed by the piece's index in the whole run).
  4. The same plan on 2 data-parallel devices (--devices 2:cpu) gives the one-device losses
     within 1e-5 relative (the masks are the same; only summation order differs).

Exit 0 pass, 1 mismatch, 2 tool failure, 3 when torch is missing (a failure: setup installs it).
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seeded_training import losses_of, seeded_failures, tool  # noqa: E402

# A missing prerequisite (scripts/setup.sh installs every one) fails the check: a check that
# cannot run has not passed. Exit status 3 tells it apart from a mismatch.
CANNOT_RUN = 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"dropout: FAIL: cannot run: {e} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    w = lambda *p: os.path.join(args.work, *p)  # noqa: E731

    run = tool("dropout", args.bin)

    def export(p, path):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Dropout(p), torch.nn.Linear(128, 10))
        torch.onnx.export(model.train(), torch.zeros(16, 64), path, training=torch.onnx.TrainingMode.TRAINING,
                          do_constant_folding=False, opset_version=14, input_names=["input"], output_names=["logits"])

    rng = np.random.default_rng(0)
    np.save(w("x.npy"), rng.standard_normal((16 * 12, 64)).astype(np.float32))
    np.save(w("y.npy"), rng.integers(0, 10, 16 * 12).astype(np.int64))
    data = f"npy:{w('x.npy')},{w('y.npy')}"
    export(0.5, w("drop.onnx"))
    export(0.0, w("nodrop.onnx"))

    losses = losses_of(run, args.work, data)

    opt = ["--train", "--loss", "cross_entropy", "--optimizer", "sgd:lr=0.1"]
    run("ofc", w("drop.onnx"), "-o", w("d1.ofp"), *opt)
    run("ofc", w("drop.onnx"), "-o", w("d2.ofp"), *opt, "--devices", "2:cpu")
    run("ofc", w("nodrop.onnx"), "-o", w("n.ofp"), *opt)
    failures, a, worst = seeded_failures(losses, w("d1.ofp"), w("d2.ofp"), args.work)
    if a == losses(w("n.ofp"), "n", "--seed", 3):
        failures.append("Dropout(0.5) gives the losses of Dropout(0.0): nothing is dropped")

    for f in failures:
        print(f"dropout: FAIL: {f}")
    if failures:
        return 1
    print(f"dropout: pass: seeded runs equal, seed and p matter, resume exact, 2 devices within {worst:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
