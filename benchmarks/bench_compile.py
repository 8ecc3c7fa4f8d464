# SPDX-License-Identifier: Apache-2.0
# ofc's compile time and peak memory, against the size of the graph and the number of devices.
#   /usr/bin/python3 benchmarks/bench_compile.py [--build build] [--blocks 30,120,480,1920,7700]
#       [--devices 1,8,64,8x8,32x8,128x8] [--repeats 3] [--timeout 300]
# Ops table: the residual MLP of make_residual_mlp.py (torch.nn modules, width 16, batch 64) for
# training with SGD on one device, --blocks setting its size (7700 blocks: the scale issue's
# ~77k-task graph). Devices table: the GPT of bench_train.py (torch.nn, AdamW, one sequence per
# device) data-parallel over N CPU devices of one rank or R ranks of D. Columns: ONNX ops, plan
# tasks (and per device), plan file size, ofc's wall time (median of the repeats, check-plan
# included), ofc's peak RSS (the child's rusage) next to the model's weights, which ofc holds once
# (optimizer state it holds not at all). The last column is the growth rate: ofc's tasks per
# second, how RSS grows per added task, and how tasks and time grow from the row before.
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import load_note, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


def run_ofc(cmd, timeout):
    """One ofc run: (seconds, tasks) or an error string."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return f"over {timeout} s"
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        return err.strip().splitlines()[-1][:80] if err.strip() else f"exit {p.returncode}"
    tasks = int(out.split(" tasks")[0].rsplit("(", 1)[1])
    return seconds, tasks


def peak_rss(cmd, timeout):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            return usage.ru_maxrss * 1024 if status == 0 else None
        if time.monotonic() > deadline:
            p.kill()
            os.wait4(p.pid, 0)
            return None
        time.sleep(0.02)


def measure(cmd, plan, repeats, timeout):
    """A row's measured cells: tasks, plan MiB, seconds (median), peak RSS; or an error string."""
    secs = []
    for _ in range(repeats):
        r = run_ofc(cmd, timeout)
        if isinstance(r, str):
            return r
        secs.append(r[0])
        tasks = r[1]
    rss = peak_rss(cmd, timeout)
    if rss is None:
        return "the RSS run failed"
    return tasks, os.path.getsize(plan) / MiB, statistics.median(secs), rss


# The parent stays small: Linux counts the RSS a child had before exec (a copy of this process)
# into the child's peak, so whatever imports torch or onnx runs in a child of its own.
def python(code, *args):
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True, cwd=HERE).stdout


def model_facts(path):
    """(ONNX ops, bytes of the model's initializers)."""
    out = python("import onnx, sys; g = onnx.load(sys.argv[1]).graph; "
                 "print(len(g.node), sum(len(t.raw_data) for t in g.initializer))", path)
    ops, weights = out.split()
    return int(ops), int(weights)


def ops_table(a, tmp):
    rows, prev = [], None
    for blocks in [int(x) for x in a.blocks.split(",")]:
        model = os.path.join(tmp, f"res{blocks}.onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "make_residual_mlp.py"), "--blocks", str(blocks), "--out", model],
                       check=True)
        plan = os.path.join(tmp, f"res{blocks}.ofp")
        cmd = [os.path.join(a.build, "cli", "ofc"), model, "-o", plan, "--train", "--loss", "cross_entropy", "--optimizer", "sgd"]
        m = measure(cmd, plan, a.repeats, a.timeout)
        ops, weights = model_facts(model)
        if isinstance(m, str):
            rows.append([str(blocks), str(ops), f"n/a ({m})", "", "", "", "", ""])
            continue
        tasks, plan_mib, secs, rss = m
        growth = ""
        if prev:
            growth = f"{(rss - prev[1]) / (tasks - prev[0]):.0f} B RSS per added task"
        prev = (tasks, rss)
        rows.append([str(blocks), str(ops), str(tasks), f"{plan_mib:.1f} MiB", f"{secs:.2f} s", f"{rss / MiB:.0f} MiB",
                     f"{weights / MiB:.1f} MiB", f"{tasks / secs / 1000:.0f}k tasks/s" + (f"; {growth}" if growth else "")])
        os.remove(plan)
    print("\nofc --train --optimizer sgd, residual MLP (width 16, batch 64), one device\n")
    print_table(["blocks", "ONNX ops", "tasks", "plan", "ofc time", "ofc peak RSS", "weights", "growth"], rows)


GPT_EXPORT = """
import sys, torch
from bench_train import gpt_module
gpt = gpt_module()
torch.manual_seed(0)
torch.onnx.export(gpt.GPT().train(), torch.zeros(int(sys.argv[2]), gpt.SEQ, dtype=torch.int64), sys.argv[1],
                  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, opset_version=14,
                  input_names=["input"], output_names=["logits"])
"""


def devices_table(a, tmp):
    specs = a.devices.split(",")
    counts = [(lambda r, d: r * d)(*[int(x) for x in s.split("x")]) if "x" in s else int(s) for s in specs]
    # bench_train.py's GPT, exported with one sequence per device at the most devices (batch 8 at
    # least), so that --dp N splits the batch on every row.
    batch = max(8, max(counts))
    model = os.path.join(tmp, f"gpt_b{batch}.onnx")
    python(GPT_EXPORT, model, str(batch))
    weights = model_facts(model)[1]
    rows, prev = [], None
    for spec, n in zip(specs, counts):
        # "N": N devices of one rank; "RxD": R ranks of D devices (all-reduces between ranks halve
        # and double pairwise: R log R).
        plan = os.path.join(tmp, f"gpt{spec}.ofp")
        cmd = [os.path.join(a.build, "cli", "ofc"), model, "-o", plan, "--train", "--loss", "cross_entropy", "--label", "label",
               "--optimizer", "adamw", "--devices", f"{spec}:cpu", "--dp", str(n)]
        m = measure(cmd, plan, a.repeats, a.timeout)
        if isinstance(m, str):
            rows.append([spec, f"n/a ({m})", "", "", "", "", "", ""])
            continue
        tasks, plan_mib, secs, rss = m
        growth = f"{tasks / secs / 1000:.0f}k tasks/s"
        if prev and n > prev[0]:
            growth += f"; x{n / prev[0]:g} devices: x{tasks / prev[1]:.2f} tasks, x{secs / prev[2]:.2f} time"
        prev = (n, tasks, secs)
        rows.append([spec, str(tasks), f"{tasks / n:.0f}", f"{plan_mib:.1f} MiB", f"{secs:.2f} s", f"{rss / MiB:.0f} MiB",
                     f"{weights / MiB:.1f} MiB", growth])
        os.remove(plan)
    print(f"\nofc --train --optimizer adamw --dp N, GPT of bench_train.py at batch {batch}\n")
    print_table(["devices", "tasks", "per device", "plan", "ofc time", "ofc peak RSS", "weights", "growth"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--blocks", default="30,120,480,1920,7700")
    ap.add_argument("--devices", default="1,8,64,8x8,32x8,128x8", help="N (one rank) or RxD (R ranks of D devices), comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=300, help="seconds one ofc run may take")
    a = ap.parse_args()
    print(load_note())
    with tempfile.TemporaryDirectory() as tmp:
        if a.blocks:
            ops_table(a, tmp)
        if a.devices:
            devices_table(a, tmp)


if __name__ == "__main__":
    main()
