#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A training run's checkpoint is the model's whole state_dict, and it means what PyTorch means.

  state_dict_check.py --bin BUILD/cli --work SCRATCH

Model: test/fixtures/export/bn_mlp_train.onnx (make_export_fixtures.py): Linear -> BatchNorm1d
(train mode) -> ReLU -> Linear, with a bool buffer `keep` that only compile-time shape arithmetic
reads. Trains 30 SGD steps (momentum 0.9) on Fashion-MNIST with --checkpoint, then:

  1. model.safetensors loads into the torch module with load_state_dict(strict=True): parameters,
     BatchNorm's running statistics, num_batches_tracked (30, which the ONNX file does not carry)
     and the folded buffer `keep`.
  2. PyTorch's eval-mode loss and accuracy on the test split (running statistics) equal
     `ofrun --eval --checkpoint` (loss within 1e-4 relative plus half a printed digit, accuracy
     within 0.01 points: one sample in 10000).
  3. --resume to 40 steps leaves num_batches_tracked at 40.
  4. --init with a state_dict whose `keep` differs is refused in one line: the buffer was folded
     into the plan's constants, so other contents could not take effect.

Exit 0 pass, 1 mismatch, 2 tool failure, 3 when Fashion-MNIST or torch is missing (a failure: setup installs both).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
sys.path.insert(0, HERE)
FASHION = "/usr/share/datasets/fashion-mnist"
# A missing prerequisite (scripts/setup.sh installs every one) fails the check: a check that
# cannot run has not passed. Exit status 3 tells it apart from a mismatch.
CANNOT_RUN = 3
EVAL_LINE = re.compile(r"^ofrun: eval (\d+) samples, loss ([0-9.eE+-]+), accuracy ([0-9.]+)%$", re.M)


def tool(args, name, *argv, expect_fail=False):
    p = subprocess.run([os.path.join(args.bin, name), *map(str, argv)], capture_output=True, text=True)
    if expect_fail:
        return p
    if p.returncode != 0:
        print(f"state_dict: {name} failed (exit {p.returncode}): {p.stderr.strip()}")
        sys.exit(2)
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    try:
        import numpy as np
        import torch
        import torch.nn.functional as F
        from make_export_fixtures import BnMlp
        from make_training_fixtures import read_idx
        from torch_load_checkpoint import read_safetensors, write_safetensors
    except ImportError as e:
        print(f"state_dict: FAIL: cannot run: {e} (scripts/setup.sh installs it)")
        return CANNOT_RUN
    if not os.path.isdir(FASHION):
        print(f"state_dict: FAIL: cannot run: {FASHION} is missing (scripts/setup.sh installs dataset-fashion-mnist)")
        return CANNOT_RUN
    torch.set_num_threads(1)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    plan, ck = os.path.join(args.work, "t.ofp"), os.path.join(args.work, "ck")
    onnx = os.path.join(HERE, "..", "fixtures", "export", "bn_mlp_train.onnx")
    data = f"idx:{FASHION}"
    tool(args, "ofc", onnx, "-o", plan, "--train", "--loss", "cross_entropy", "--optimizer", "sgd:lr=0.05,momentum=0.9")
    tool(args, "ofrun", plan, "--data", data, "--steps", 30, "--checkpoint", ck)

    def latest():
        with open(os.path.join(ck, "latest")) as f:
            return os.path.join(ck, f.read().strip(), "model.safetensors")

    failures = []
    tensors, _ = read_safetensors(latest())
    model = BnMlp()
    try:
        model.load_state_dict(tensors, strict=True)
    except RuntimeError as e:
        print(f"state_dict: FAIL: load_state_dict(strict=True): {e}")
        return 1
    if int(model.bn.num_batches_tracked) != 30:
        failures.append(f"num_batches_tracked is {int(model.bn.num_batches_tracked)}, expected 30")

    # 2. Evaluation from the checkpoint, both sides with the running statistics.
    x = read_idx(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")).reshape(10000, -1).astype(np.float32) / np.float32(255)
    y = read_idx(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz")).astype(np.int64)
    model.eval()
    with torch.no_grad():
        logits = model(torch.from_numpy(x))
        loss = float(F.cross_entropy(logits, torch.from_numpy(y), reduction="none").double().mean())
        acc = 100.0 * float((logits.argmax(1) == torch.from_numpy(y)).double().mean())
    out = tool(args, "ofrun", plan, "--data", data, "--eval", "--checkpoint", ck).stdout
    m = EVAL_LINE.search(out)
    if not m:
        print(f"state_dict: ofrun --eval printed no eval line:\n{out}")
        return 2
    of_loss, of_acc = float(m.group(2)), float(m.group(3))
    quantum = 0.5 * 10.0 ** -len(m.group(2).split(".")[1])
    if abs(of_loss - loss) > 1e-4 * loss + quantum or abs(of_acc - acc) > 0.01 + 1e-9:
        failures.append(f"eval: of loss {of_loss} accuracy {of_acc}%, PyTorch {loss:.6f} {acc:.2f}%")

    # 3. Resume counts on.
    tool(args, "ofrun", plan, "--data", data, "--steps", 40, "--checkpoint", ck, "--resume")
    resumed, _ = read_safetensors(latest())
    if int(resumed["bn.num_batches_tracked"]) != 40:
        failures.append(f"after --resume to 40 steps num_batches_tracked is {int(resumed['bn.num_batches_tracked'])}")

    # 4. A folded buffer cannot be replaced.
    other = dict(tensors)
    other["keep"] = torch.zeros(10, dtype=torch.bool)
    bad = os.path.join(args.work, "other.safetensors")
    write_safetensors(bad, other)
    p = tool(args, "ofrun", plan, "--data", data, "--steps", 1, "--init", bad, expect_fail=True)
    lines = p.stderr.strip().splitlines()
    if p.returncode == 0 or len(lines) != 1 or "tensor 'keep'" not in lines[0] or "folded" not in lines[0]:
        failures.append(f"--init with another 'keep': exit {p.returncode}, stderr {p.stderr.strip()!r}")

    for f in failures:
        print(f"state_dict: FAIL: {f}")
    if failures:
        return 1
    print(f"state_dict: pass: strict load, num_batches_tracked 30 -> 40 on resume, eval loss {of_loss} "
          f"vs PyTorch {loss:.6f}, accuracy {of_acc}% vs {acc:.2f}%, a changed folded buffer refused")
    return 0


if __name__ == "__main__":
    sys.exit(main())
