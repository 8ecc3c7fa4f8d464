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
import json
import math
import os
import shutil
import subprocess
import sys

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

    def run(name, *argv):
        p = subprocess.run([os.path.join(args.bin, name), *map(str, argv)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"dropout: {name} failed (exit {p.returncode}): {p.stderr.strip()}")
            sys.exit(2)

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

    def losses(plan, tag, *extra, steps=12):
        metrics = w(f"{tag}.jsonl")
        run("ofrun", plan, "--data", data, "--steps", steps, "--no-shuffle", "--metrics", metrics, *extra)
        with open(metrics) as f:
            return {json.loads(l)["step"]: json.loads(l)["loss"] for l in f if l.strip()}

    opt = ["--train", "--loss", "cross_entropy", "--optimizer", "sgd:lr=0.1"]
    run("ofc", w("drop.onnx"), "-o", w("d1.ofp"), *opt)
    run("ofc", w("drop.onnx"), "-o", w("d2.ofp"), *opt, "--devices", "2:cpu")
    run("ofc", w("nodrop.onnx"), "-o", w("n.ofp"), *opt)
    failures = []
    a, b = losses(w("d1.ofp"), "a", "--seed", 3), losses(w("d1.ofp"), "b", "--seed", 3)
    other, plain = losses(w("d1.ofp"), "c", "--seed", 4), losses(w("n.ofp"), "n", "--seed", 3)
    if a != b:
        failures.append(f"two runs with --seed 3 differ: {a} vs {b}")
    if a == other:
        failures.append("--seed 4 gives the losses of --seed 3: the masks ignore the seed")
    if a == plain:
        failures.append("Dropout(0.5) gives the losses of Dropout(0.0): nothing is dropped")

    ck = w("ck")
    losses(w("d1.ofp"), "r1", "--seed", 3, "--checkpoint", ck, steps=6)
    resumed = losses(w("d1.ofp"), "r1", "--seed", 3, "--checkpoint", ck, "--resume")
    tail = {s: l for s, l in resumed.items() if s > 6}
    if tail != {s: l for s, l in a.items() if s > 6}:
        failures.append(f"resumed steps 7..12 {tail} differ from the uninterrupted run {a}")

    dp = losses(w("d2.ofp"), "dp", "--seed", 3)
    rel = [abs(dp[s] - a[s]) / abs(a[s]) if s in dp else math.inf for s in a]
    # Any NaN is a failure (max() alone skips a NaN that is not first), and so is a missing step.
    worst = math.inf if not rel or sorted(dp) != sorted(a) or any(math.isnan(r) for r in rel) else max(rel)
    if not worst <= 1e-5:
        failures.append(f"2 devices differ from one by {worst:.3g} relative: {dp} vs {a}")

    for f in failures:
        print(f"dropout: FAIL: {f}")
    if failures:
        return 1
    print(f"dropout: pass: seeded runs equal, seed and p matter, resume exact, 2 devices within {worst:.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
