# SPDX-License-Identifier: Apache-2.0
"""What every plan that draws random numbers in training must show (test/e2e/dropout_check.py,
random_check.py): PyTorch's generators draw other numbers, so instead of comparing with PyTorch:

  1. two runs with --seed 3 give the same losses bit for bit, --seed 4 others;
  2. a run stopped at step 6 (--checkpoint) and resumed to 12 reproduces steps 7..12 bit for bit;
  3. the same plan on 2 data-parallel devices gives the one-device losses within 1e-5 relative.
"""
import json
import math
import os
import subprocess
import sys


def tool(tag, bin_dir):
    """run(name, *argv): runs ofc or ofrun from bin_dir; a failure exits 2, naming it."""
    def run(name, *argv):
        p = subprocess.run([os.path.join(bin_dir, name), *map(str, argv)], capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{tag}: {name} failed (exit {p.returncode}): {p.stderr.strip()}")
            sys.exit(2)
    return run


def losses_of(run, work, data):
    """losses(plan, tag, *extra, steps=12): {step: loss} of an ofrun training run on `data`."""
    def losses(plan, tag, *extra, steps=12):
        metrics = os.path.join(work, f"{tag}.jsonl")
        run("ofrun", plan, "--data", data, "--steps", steps, "--no-shuffle", "--metrics", metrics, *extra)
        with open(metrics) as f:
            return {json.loads(line)["step"]: json.loads(line)["loss"] for line in f if line.strip()}
    return losses


def seeded_failures(losses, one_device, two_devices, work):
    """Checks 1-3 on the plans; returns (failures, the --seed 3 losses, the 2-device worst difference)."""
    failures = []
    a, b, other = losses(one_device, "a", "--seed", 3), losses(one_device, "b", "--seed", 3), losses(one_device, "c", "--seed", 4)
    if a != b:
        failures.append(f"two runs with --seed 3 differ: {a} vs {b}")
    if a == other:
        failures.append("--seed 4 gives the losses of --seed 3: the numbers ignore the seed")
    ck = os.path.join(work, "ck")
    losses(one_device, "r1", "--seed", 3, "--checkpoint", ck, steps=6)
    resumed = losses(one_device, "r1", "--seed", 3, "--checkpoint", ck, "--resume")
    tail = {s: l for s, l in resumed.items() if s > 6}
    if tail != {s: l for s, l in a.items() if s > 6}:
        failures.append(f"resumed steps 7..12 {tail} differ from the uninterrupted run {a}")
    dp = losses(two_devices, "dp", "--seed", 3)
    rel = [abs(dp[s] - a[s]) / abs(a[s]) if s in dp else math.inf for s in a]
    # Any NaN is a failure (max() alone skips a NaN that is not first), and so is a missing step.
    worst = math.inf if not rel or sorted(dp) != sorted(a) or any(math.isnan(r) for r in rel) else max(rel)
    if not worst <= 1e-5:
        failures.append(f"2 devices differ from one by {worst:.3g} relative: {dp} vs {a}")
    return failures, a, worst
