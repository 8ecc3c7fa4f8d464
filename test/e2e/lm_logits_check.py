#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A language model's logits as users write them, fed a token file.

  lm_logits_check.py --bin BUILD/cli --work SCRATCH

Model: nn.Embedding(32, 8) -> nn.Linear(8, 32) on tokens [4, 8], exported with the training
recipe twice: returning logits [4, 8, 32] as the module computes them, and returning
logits.reshape(-1, 32), the rows F.cross_entropy wants. `ofc --train --loss cross_entropy` takes
a 3-D output's classes from axis 1, as F.cross_entropy does (here: 8 "classes", labels [4, 32]),
so:

  1. The [4, 8, 32] model with `ofrun --data tokens:` fails in one line saying what the logits
     of a language model must be (not an out-of-vocabulary token error), exit status 1.
  2. The reshaped model trains 3 steps on the same file (exit 0).

Exit 0 pass, 1 mismatch, 2 tool failure, 3 when torch is missing (a failure: setup installs it).
"""
import argparse
import os
import shutil
import subprocess
import sys

CANNOT_RUN = 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
        import torch.nn as nn
    except ImportError as e:
        print(f"lm_logits_check: FAIL: cannot import {e.name} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    class LM(nn.Module):
        def __init__(self, flat):
            super().__init__()
            self.emb, self.head, self.flat = nn.Embedding(32, 8), nn.Linear(8, 32), flat

        def forward(self, tokens):
            logits = self.head(self.emb(tokens))
            return logits.reshape(-1, 32) if self.flat else logits

    corpus = os.path.join(args.work, "corpus.u16")
    np.random.default_rng(0).integers(0, 32, 4 * 8 * 4 + 1).astype(np.uint16).tofile(corpus)
    data = f"tokens:{corpus},dtype=uint16"
    results = {}
    for flat in (False, True):
        torch.manual_seed(0)
        onnx_path, plan = os.path.join(args.work, f"lm{int(flat)}.onnx"), os.path.join(args.work, f"lm{int(flat)}.ofp")
        torch.onnx.export(LM(flat).train(), torch.zeros(4, 8, dtype=torch.long), onnx_path,
                          training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, opset_version=14)
        c = subprocess.run([os.path.join(args.bin, "ofc"), onnx_path, "-o", plan, "--train", "--loss", "cross_entropy"],
                           capture_output=True, text=True)
        if c.returncode != 0:
            print(f"lm_logits_check: FAIL: ofc failed on the {'flat' if flat else '3-D'} model: {c.stderr.strip()}")
            return 2
        results[flat] = subprocess.run([os.path.join(args.bin, "ofrun"), plan, "--data", data, "--steps", "3"],
                                       capture_output=True, text=True)
    bad = []
    r = results[False]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    want = "a language model's logits must be [batch*seq, vocab]"
    if r.returncode != 1 or len(lines) != 1 or want not in lines[0]:
        bad.append(f"the [4,8,32] model: exit {r.returncode}, stderr {r.stderr.strip()!r}; expected exit 1 and one line "
                   f"containing {want!r}")
    if results[True].returncode != 0:
        bad.append(f"the [32,32] model: exit {results[True].returncode}: {results[True].stderr.strip()}")
    for b in bad:
        print("lm_logits_check: FAIL: " + b)
    if not bad:
        print(f"lm_logits_check: ok: {lines[0]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
