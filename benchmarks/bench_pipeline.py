#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Pipeline streaming, measured: the test Delay op stands for compute (each of 4 ops sleeps 20 ms
# per piece), so the figure shows how well the actors overlap stages, not how fast kernels are.
#   sequential: the 4 ops on one device with one worker thread: stages run one after another.
#   pipelined:  `ofc --devices 4:cpu --pp 4` (one op per stage/device), 4 worker threads.
# Ideal speed-up for S stages and M micro-batches: S*M / (S + M - 1) (fill and drain).
# Then the parallel MLP training plans of issue 4 next to the one-device plan, for their cost on
# this machine (N CPU devices share its cores, so this is overhead, not speed-up).
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt, load_note, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"bench_pipeline: {' '.join(cmd)} failed:\n{r.stderr}")
    return r.stdout + r.stderr


def pieces_time(out):
    m = re.search(r"ofrun: (\d+) pieces, ([0-9.]+) s", out)
    return float(m.group(2))


def samples_per_s(out):
    m = re.search(r"ofrun: trained .* ([0-9.]+) samples/s", out)
    return float(m.group(1))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default="build")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--micro-batches", type=int, default=16)
    p.add_argument("--steps", type=int, default=100, help="training steps per MLP run")
    a = p.parse_args()
    ofc, ofrun = (os.path.join(a.build, "cli", x) for x in ("ofc", "ofrun"))
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        import numpy as np
        x = os.path.join(tmp, "x.npy")
        np.save(x, np.ones((1, 16), np.float32))
        chain = os.path.join(ROOT, "test", "fixtures", "delay_chain.onnx")
        seq_plan, pipe_plan = os.path.join(tmp, "seq.ofp"), os.path.join(tmp, "pipe.ofp")
        run([ofc, chain, "-o", seq_plan])
        run([ofc, chain, "-o", pipe_plan, "--devices", "4:cpu", "--pp", "4"])
        m, s = a.micro_batches, 4
        seq, pipe = [], []
        for _ in range(a.repeats):
            seq.append(pieces_time(run([ofrun, seq_plan, "--input", f"x={x}", "--pieces", str(m), "--threads", "1"])))
            pipe.append(pieces_time(run([ofrun, pipe_plan, "--input", f"x={x}", "--pieces", str(m), "--threads", "4"])))
        speedup = statistics.median(seq) / statistics.median(pipe)
        ideal = s * m / (s + m - 1)
        print(f"\n4-stage pipeline of Delay(20 ms), {m} micro-batches")
        ms = lambda v: f"{statistics.median(v) * 1000:.0f} ms ({min(v) * 1000:.0f}–{max(v) * 1000:.0f})"  # noqa: E731
        print_table(["run", "time (median, range)", "speed-up", "of ideal"],
                    [["sequential (1 device, 1 thread)", ms(seq), "1.00", ""],
                     ["pipelined (--pp 4, 4 threads)", ms(pipe), f"{speedup:.2f}", f"{speedup / ideal:.2f} (ideal {ideal:.2f})"]])

        mlp = os.path.join(ROOT, "test", "fixtures", "mlp.onnx")
        data = "idx:/usr/share/datasets/fashion-mnist"
        # Micro-batches change the work per step (4 x 64 samples, one update): compare like with like.
        configs = [("1 device", []), ("dp 2", ["--devices", "2:cpu", "--dp", "2"]), ("tp 2", ["--devices", "2:cpu", "--tp", "2"]),
                   ("1 device, 4 micro-batches", ["--micro-batches", "4"]),
                   ("pp 2, 4 micro-batches", ["--devices", "2:cpu", "--pp", "2", "--micro-batches", "4"]),
                   ("dp 2 x tp 2", ["--devices", "4:cpu", "--dp", "2", "--tp", "2"])]
        rows = []
        base = None
        for name, flags in configs:
            # The same plan with every register slot in bytes of its own (ofc --no-memory-sharing),
            # and with the loose order (ofc --share-order loose), run interleaved with it: what
            # sharing bytes costs in speed, if anything.
            plans = {}
            for kind, extra in (("shared", []), ("loose", ["--share-order", "loose"]), ("apart", ["--no-memory-sharing"])):
                plans[kind] = os.path.join(tmp, f"mlp-{kind}.ofp")
                run([ofc, mlp, "-o", plans[kind], "--train", "--loss", "cross_entropy", "--optimizer", "sgd:lr=0.01,momentum=0.9"]
                    + flags + extra)
            rates = {kind: [] for kind in plans}
            for _ in range(a.repeats):
                for kind, plan in plans.items():
                    rates[kind].append(samples_per_s(run([ofrun, plan, "--data", data, "--steps", str(a.steps), "--threads", "2"])))
            base = base or statistics.median(rates["shared"])
            apart = statistics.median(rates["apart"])
            rows.append([name, fmt(rates["shared"]), f"{statistics.median(rates['shared']) / base:.2f}", fmt(rates["apart"]),
                         f"{statistics.median(rates['shared']) / apart:.2f}", f"{statistics.median(rates['loose']) / apart:.2f}"])
        print(f"\nMLP training on {os.cpu_count()} cores, ofrun --threads 2, {a.steps} steps")
        print_table(["plan", "samples/s", "vs 1 device", "bytes apart", "shared/apart", "loose/apart"], rows)


if __name__ == "__main__":
    main()
