# SPDX-License-Identifier: Apache-2.0
# Collective tasks against point-to-point boxing, side by side in one run: the data-parallel MLP
# (test/fixtures/mlp.onnx, batch 64, SGD with momentum) compiled for 1 ... 64 CPU devices of one
# rank, with collective tasks (the default) and with `ofc --no-collectives`.
#   /usr/bin/python3 benchmarks/bench_collectives.py [--build build] [--devices 1,2,4,8,16,32,64]
#       [--train-devices 2,4,8] [--repeats 3] [--steps 20] [--threads 2]
# Compile table: tasks and plan bytes (ofc's own count and the file), ofc's wall time (median of
# the repeats) and its peak RSS (the child's rusage), the planned arenas (ofdump --json).
# Train table: ofrun samples/s (median and range of the repeats, runs of the two plans
# alternating) on Fashion-MNIST, and the ratio.
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt, load_note, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = "idx:/usr/share/datasets/fashion-mnist"
SGD = ["--train", "--loss", "cross_entropy", "--optimizer", "sgd:lr=0.01,momentum=0.9"]


def timed(cmd):
    """Runs cmd; returns (seconds, stdout). Raises on failure."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {err.strip()}")
    return seconds, out


def peak_rss(cmd):
    """Peak RSS of one run of cmd, in bytes (wait4's rusage of that child alone)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed")
    return usage.ru_maxrss * 1024


def compile_plan(build, tmp, devices, collectives):
    plan = os.path.join(tmp, f"dp{devices}{'' if collectives else '-p2p'}.ofp")
    cmd = [os.path.join(build, "cli", "ofc"), os.path.join(ROOT, "test", "fixtures", "mlp.onnx"), "-o", plan] + SGD
    if devices > 1:
        cmd += ["--devices", f"{devices}:cpu"]
    if not collectives:
        cmd += ["--no-collectives"]
    return plan, cmd


def samples_per_s(build, plan, steps, threads):
    out = subprocess.run([os.path.join(build, "cli", "ofrun"), plan, "--data", DATA, "--steps", str(steps), "--seed", "1",
                          "--threads", str(threads)], capture_output=True, text=True, check=True).stdout
    last = [line for line in out.splitlines() if line.startswith("ofrun: trained")][-1]
    return float(last.split(" samples/s")[0].rsplit(", ", 1)[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--devices", default="1,2,4,8,16,32,64")
    ap.add_argument("--train-devices", default="2,4,8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    print(load_note())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in a.devices.split(",")]:
            for collectives in ([True] if n == 1 else [True, False]):
                plan, cmd = compile_plan(a.build, tmp, n, collectives)
                secs = []
                for _ in range(a.repeats):
                    s, out = timed(cmd)
                    secs.append(s)
                tasks = out.split(" tasks")[0].rsplit("(", 1)[1]
                rss = peak_rss(cmd)
                dump = json.loads(subprocess.run([os.path.join(a.build, "cli", "ofdump"), "--json", plan], capture_output=True,
                                                 text=True, check=True).stdout)
                arenas = sum(x["peak"] for x in dump["arenas"])
                rows.append([str(n), "collective" if collectives else "point to point", tasks,
                             f"{os.path.getsize(plan) / (1 << 20):.2f} MiB", f"{statistics.median(secs):.2f} s",
                             f"{rss / (1 << 20):.0f} MiB", f"{arenas / (1 << 20):.1f} MiB"])
        print("\nofc, data-parallel MLP (batch 64)\n")
        print_table(["devices", "boxing", "tasks", "plan", "ofc time", "ofc peak RSS", "arenas"], rows)
        rows = []
        for n in [int(x) for x in a.train_devices.split(",") if x]:
            plans = {c: compile_plan(a.build, tmp, n, c) for c in (True, False)}
            for plan, cmd in plans.values():
                subprocess.run(cmd, capture_output=True, check=True)
            rates = {True: [], False: []}
            for _ in range(a.repeats):
                for c in (True, False):
                    rates[c].append(samples_per_s(a.build, plans[c][0], a.steps, a.threads))
            ratio = statistics.median(rates[True]) / statistics.median(rates[False])
            rows.append([str(n), fmt(rates[True]), fmt(rates[False]), f"{ratio:.2f}x"])
        if rows:
            print(f"\nofrun --threads {a.threads}, {a.steps} steps, samples/s\n")
            print_table(["devices", "collective", "point to point", "collective / p2p"], rows)


if __name__ == "__main__":
    main()
