#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ranks, measured side by side in one run (issue 12's benchmarks):

(a) transfer: one register between two ranks as ofrun moves it (of_transport_bench: the runtime's
    UCX transport, event-driven, ready with the slot's bytes and the free back) next to
    ucx_perftest's active messages on the same transport (UCX_TLS), for 4 KiB, 1 MiB and 64 MiB.
    Latency: one slot, so each piece waits for its free (a round trip; ucx_perftest's am_lat is
    one way, so it is shown doubled). Bandwidth: two slots in turn (ucx_perftest am_bw).
(b) dp: the MLP trained data-parallel on 2 ranks (ofc --devices 2x1:cpu --dp 2, ofrun
    --launch-local, 1 thread each) next to PyTorch DDP with the gloo backend (2 processes,
    1 thread each), the same global batch 64 on the same random data; samples/s.
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import fmt, load_note, print_table  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [("4 KiB", 4096), ("1 MiB", 1 << 20), ("64 MiB", 64 << 20)]


def iters_for(size):
    return max(20, min(5000, (2 << 30) // size))  # about 2 GiB per run, at least 20 pieces


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def of_transfer(bench, tls, size, slots):
    env = dict(os.environ, UCX_TLS=tls)
    r = subprocess.run([bench, "--bytes", str(size), "--slots", str(slots), "--iters", str(iters_for(size))],
                       capture_output=True, text=True, env=env, timeout=300)
    m = re.search(r"us_per_piece ([0-9.]+) MBps ([0-9.]+)", r.stdout)
    if r.returncode != 0 or not m:
        return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
    return (float(m.group(1)), float(m.group(2))), None


def perftest(tls, size, test):
    """ucx_perftest server and client on loopback; (one-way latency µs, MB/s) from its Final line."""
    port = free_port()
    env = dict(os.environ, UCX_TLS=tls)
    n = str(iters_for(size))
    server = subprocess.Popen(["ucx_perftest", "-t", test, "-s", str(size), "-n", n, "-p", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out = ""
    for _ in range(50):  # the server needs a moment to listen
        time.sleep(0.1)
        c = subprocess.run(["ucx_perftest", "127.0.0.1", "-p", str(port), "-t", test, "-s", str(size), "-n", n],
                           capture_output=True, text=True, env=env, timeout=300)
        out = c.stdout
        if c.returncode == 0 and "Final:" in out:
            break
    server.communicate(timeout=60)
    m = re.search(r"Final:\s+\d+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", out)
    if not m:
        return None, "ucx_perftest gave no result"
    return (float(m.group(3)), float(m.group(5))), None


def median_of(runs):
    vals = [v for v, err in runs if v is not None]
    errs = [err for v, err in runs if v is None]
    return vals if vals else (errs[0] if errs else "no runs")


def transfer_table(a, bench):
    print(f"\n(a) one register between two ranks; {load_note()}\n")
    rows = []
    for tls in a.transports.split(","):
        for label, size in SIZES:
            lat_of = median_of([of_transfer(bench, tls, size, 1) for _ in range(a.repeats)])
            bw_of = median_of([of_transfer(bench, tls, size, 2) for _ in range(a.repeats)])
            lat_pt = median_of([perftest(tls, size, "ucp_am_lat") for _ in range(a.repeats)])
            bw_pt = median_of([perftest(tls, size, "ucp_am_bw") for _ in range(a.repeats)])
            of_rt = [v[0] for v in lat_of] if not isinstance(lat_of, str) else lat_of
            pt_rt = [2 * v[0] for v in lat_pt] if not isinstance(lat_pt, str) else lat_pt
            of_bw = [v[1] for v in bw_of] if not isinstance(bw_of, str) else bw_of
            pt_bw = [v[1] for v in bw_pt] if not isinstance(bw_pt, str) else bw_pt
            ratio = (f"{statistics.median(of_bw) / statistics.median(pt_bw):.2f}x"
                     if not isinstance(of_bw, str) and not isinstance(pt_bw, str) else "n/a")
            rows.append([tls, label, fmt(of_rt, "us"), fmt(pt_rt, "us"), fmt(of_bw) + " MB/s", fmt(pt_bw) + " MB/s", ratio])
    print_table(["UCX_TLS", "slot", "of round trip", "ucx_perftest 2 x am_lat", "of bandwidth", "ucx_perftest am_bw",
                 "of/perftest bw"], rows)


DDP_SCRIPT = r'''
import os, sys, time, torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F, numpy as np
rank, world, port, steps = int(sys.argv[1]), 2, sys.argv[2], int(sys.argv[3])
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
x = torch.from_numpy(np.load(sys.argv[4])); y = torch.from_numpy(np.load(sys.argv[5]))
per = 32
def step(i):
    b = (i * 64) % (len(x) - 64)
    xs, ys = x[b + rank * per:b + (rank + 1) * per], y[b + rank * per:b + (rank + 1) * per]
    opt.zero_grad(); F.cross_entropy(ddp(xs), ys).backward(); opt.step()
for i in range(5): step(i)
dist.barrier(); t = time.perf_counter()
for i in range(steps): step(i)
dist.barrier(); s = time.perf_counter() - t
if rank == 0: print(f"samples/s {steps * 64 / s:.1f}")
'''


def ddp_rate(tmp, x, y, steps):
    script = os.path.join(tmp, "ddp.py")
    with open(script, "w") as f:
        f.write(DDP_SCRIPT)
    port = str(free_port())
    procs = [subprocess.Popen(["/usr/bin/python3", script, str(r), port, str(steps), x, y], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    m = re.search(r"samples/s ([0-9.]+)", outs[0][0])
    return (float(m.group(1)), None) if m else (None, (outs[0][1].strip().splitlines() or ["failed"])[-1])


def of_dp_rate(a, tmp, data, steps):
    ofc, ofrun = (os.path.join(a.build, "cli", t) for t in ("ofc", "ofrun"))
    plan = os.path.join(tmp, "dp.ofp")
    subprocess.run([ofc, os.path.join(ROOT, "test", "fixtures", "mlp.onnx"), "-o", plan, "--train", "--loss", "cross_entropy",
                    "--optimizer", "sgd:lr=0.01,momentum=0.9", "--devices", "2x1:cpu", "--dp", "2"], check=True, capture_output=True)
    r = subprocess.run([ofrun, plan, "--launch-local", "--data", data, "--steps", str(steps), "--threads", "1", "--log-every", "0"],
                       capture_output=True, text=True, timeout=600)
    m = re.search(r"ofrun: trained .* ([0-9.]+) samples/s", r.stdout + r.stderr)
    return (float(m.group(1)), None) if m else (None, (r.stderr.strip().splitlines() or ["failed"])[-1])


def dp_table(a):
    import numpy as np
    print(f"\n(b) the MLP data-parallel on 2 ranks, global batch 64; {load_note()}\n")
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        x, y = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        np.save(x, rng.standard_normal((4096, 784)).astype(np.float32))
        np.save(y, rng.integers(0, 10, (4096,)).astype(np.int64))
        ofs = median_of([of_dp_rate(a, tmp, f"npy:{x},{y}", a.steps) for _ in range(a.repeats)])
        ddps = median_of([ddp_rate(tmp, x, y, a.steps) for _ in range(a.repeats)])
    ratio = f"{statistics.median(ofs) / statistics.median(ddps):.2f}x" if not isinstance(ofs, str) and not isinstance(ddps, str) else "n/a"
    print_table(["workload", "of 2 ranks (--launch-local)", "PyTorch DDP gloo (2 processes)", "of/DDP"],
                [["mlp dp=2, batch 64", fmt(ofs), fmt(ddps), ratio]])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--transports", default="sm,tcp")
    p.add_argument("--steps", type=int, default=200, help="training steps per dp run")
    p.add_argument("--only", choices=["transfer", "dp"], help="one table")
    a = p.parse_args()
    bench = os.path.join(a.build, "benchmarks", "of_transport_bench")
    if a.only != "dp":
        if not os.access(bench, os.X_OK):
            sys.exit(f"bench_transport: no {bench} (cmake --build {a.build} --target of_transport_bench)")
        transfer_table(a, bench)
    if a.only != "transfer":
        dp_table(a)


if __name__ == "__main__":
    main()
