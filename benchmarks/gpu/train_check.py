# SPDX-License-Identifier: Apache-2.0
"""The same plans trained on the GPU and on the CPU: losses step by step and the saved weights.

For each model (the MLP, the CNN and the small language model of test/fixtures, with the data
made here from fixed seeds, or the model's token file), compiles one training plan for
`--devices 1:cpu` and one for `--devices 1:cuda`, trains both for STEPS steps with a checkpoint
at the end (the GPU run's weights come back through the host: runtime/gpu/gpu_devices.h), and
prints one table: the largest relative difference of a step's loss, the largest absolute
difference of a saved weight, each run's samples/s (ofrun's last line), and a verdict against
the tolerance. The CUDA kernels sum in other orders than the CPU's (cuBLAS, block reductions),
so the runs agree within float rounding grown over the steps, not bit for bit.

Exit status: 0 when every model is within tolerance, 1 otherwise (2: usage).
    python3 benchmarks/gpu/train_check.py --bin DIR [--steps 20] [--rtol 1e-3]
DIR holds ofc and ofrun (the GPU bundle's bin/, or a build's cli/). --emulate runs the GPU plans
with ofrun --emulate-gpus (on this CPU: a check of this script, which must then agree bit for bit).
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "test", "fixtures")
FLOAT = r"[-+0-9.eE]+|nan|-?inf"


def run(cmd, env=None, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def read_safetensors(path):
    """name -> float64 array (F32 entries only: every trained weight here)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, e in header.items():
        if name == "__metadata__" or e["dtype"] != "F32":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32).astype(np.float64).reshape(e["shape"])
    return out


def models(tmp, steps):
    rng = np.random.default_rng(0)
    mlp_x, mlp_y = os.path.join(tmp, "mlp_x.npy"), os.path.join(tmp, "mlp_y.npy")
    np.save(mlp_x, rng.random((64 * steps, 784), dtype=np.float32))
    np.save(mlp_y, rng.integers(0, 10, 64 * steps).astype(np.int64))
    cnn_x, cnn_y = os.path.join(tmp, "cnn_x.npy"), os.path.join(tmp, "cnn_y.npy")
    np.save(cnn_x, rng.standard_normal((32 * steps, 3, 32, 32), dtype=np.float32))
    np.save(cnn_y, rng.integers(0, 10, 32 * steps).astype(np.int64))
    return [
        ("mlp", "mlp.onnx", f"npy:{mlp_x},{mlp_y}", "sgd:lr=0.05,momentum=0.9"),
        ("cnn", "cnn.onnx", f"npy:{cnn_x},{cnn_y}", "sgd:lr=0.01,momentum=0.9"),
        ("lm", "lm.onnx", "tokens:" + os.path.join(FIXTURES, "lm_corpus.u16"), "adamw:lr=0.001"),
    ]


def train(bins, tmp, name, onnx, data, optimizer, devices, steps, emulate=False):
    """Returns (losses, weights, samples/s) or raises RuntimeError with the tool's output."""
    folder = os.path.join(tmp, f"{name}-{devices.replace(':', '-')}")
    os.makedirs(folder)
    plan = os.path.join(folder, "train.ofp")
    rc, out = run([os.path.join(bins, "ofc"), os.path.join(FIXTURES, onnx), "-o", plan, "--train", "--loss", "cross_entropy",
                   "--optimizer", optimizer, "--devices", devices])
    if rc != 0:
        raise RuntimeError(f"ofc --devices {devices}: {out.strip()}")
    metrics, ck = os.path.join(folder, "m.jsonl"), os.path.join(folder, "ck")
    rc, out = run([os.path.join(bins, "ofrun"), plan, "--data", data, "--steps", str(steps), "--no-shuffle", "--log-every", "1",
                   "--metrics", metrics, "--checkpoint", ck, "--stall-timeout", "60"] + (["--emulate-gpus"] if emulate else []))
    if rc != 0:
        raise RuntimeError(f"ofrun ({devices}): {out.strip()}")
    with open(metrics) as f:
        losses = [json.loads(line)["loss"] for line in f if line.strip()]
    with open(os.path.join(ck, "latest")) as f:
        last = f.read().strip()
    weights = read_safetensors(os.path.join(ck, last, "model.safetensors"))
    m = list(re.finditer(rf"({FLOAT}) samples/s", out))
    return losses, weights, (float(m[-1].group(1)) if m else float("nan"))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True, help="folder with ofc and ofrun")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rtol", type=float, default=1e-3, help="largest relative loss difference allowed")
    p.add_argument("--emulate", action="store_true", help="GPU plans on this CPU (ofrun --emulate-gpus)")
    a = p.parse_args()
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="of-gpu-train-") as tmp:
        for name, onnx, data, optimizer in models(tmp, a.steps):
            try:
                cpu = train(a.bin, tmp, name, onnx, data, optimizer, "1:cpu", a.steps)
                gpu = train(a.bin, tmp, name, onnx, data, optimizer, "1:cuda", a.steps, a.emulate)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                rows.append([name, "-", "-", "-", "-", "-", f"FAIL: {str(e).splitlines()[-1] if str(e) else e}"])
                ok = False
                continue
            if len(cpu[0]) != a.steps or len(gpu[0]) != a.steps or sorted(cpu[1]) != sorted(gpu[1]):
                rows.append([name, f"{len(cpu[0])}/{len(gpu[0])}", "-", "-", "-", "-", "FAIL: the runs logged or saved different things"])
                ok = False
                continue
            loss_rel = max(abs(g - c) / max(abs(c), 1e-12) for c, g in zip(cpu[0], gpu[0]))
            weight_abs = max(float(np.max(np.abs(cpu[1][k] - gpu[1][k]))) if cpu[1][k].size else 0.0 for k in cpu[1])
            passed = np.isfinite(loss_rel) and loss_rel <= a.rtol
            ok &= bool(passed)
            rows.append([name, str(a.steps), f"{loss_rel:.2e}", f"{weight_abs:.2e}", f"{cpu[2]:.0f}", f"{gpu[2]:.0f}",
                         "ok" if passed else f"FAIL (rtol {a.rtol:g})"])
    head = ["model", "steps", "max rel loss diff", "max abs weight diff", "cpu samples/s", "gpu samples/s", "verdict"]
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
