#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""torch.nn's activations as `of` computes them, element by element, against PyTorch.

  activations_check.py --bin BUILD/cli --work DIR

Each module (GELU erf and tanh, SiLU, Hardswish, Hardsigmoid, ReLU6, LeakyReLU, Sigmoid, Tanh,
Hardtanh) is exported alone on 400001 points from -20 to 20 (default export, opset 14), compiled
by `ofc` and run by `ofrun`. Every output element must lie within max(16 ulp, 2x float32
PyTorch's own error) of PyTorch's float64 value: a relative tolerance on a whole tensor hides a
region where a formula cancels (Hardsigmoid's alpha * x + 0.5 near -3 was 3000 ulp off).
Exit status: 0 all within, 1 some element is not (the worst printed), 2 a tool failed.
"""
import os

os.environ.setdefault("GOMP_SPINCOUNT", "1000")

import argparse  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

ULPS = 16
TORCH_FACTOR = 2.0
MODULES = {
    "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh"), "silu": nn.SiLU(), "hardswish": nn.Hardswish(),
    "hardsigmoid": nn.Hardsigmoid(), "relu6": nn.ReLU6(), "leaky_relu": nn.LeakyReLU(0.1), "sigmoid": nn.Sigmoid(),
    "tanh": nn.Tanh(), "hardtanh": nn.Hardtanh(-2.0, 2.0),
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        lines = (p.stderr or p.stdout).strip().splitlines()
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed (exit {p.returncode}): {lines[-1] if lines else ''}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch.set_num_threads(1)
    x = torch.linspace(-20, 20, 400001).reshape(1, -1)
    xpath = os.path.join(args.work, "x.npy")
    np.save(xpath, x.numpy())
    failed = 0
    for name, m in MODULES.items():
        onnx_path, plan, ypath = (os.path.join(args.work, name + ext) for ext in (".onnx", ".ofp", ".y.npy"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(m.eval(), x, onnx_path, input_names=["x"], output_names=["y"], opset_version=14)
        try:
            run([os.path.join(args.bin, "ofc"), onnx_path, "-o", plan])
            run([os.path.join(args.bin, "ofrun"), plan, "--input", f"x={xpath}", "--output", f"y={ypath}"])
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"activations {name}: {e}")
            return 2
        got = torch.from_numpy(np.load(ypath)).double()
        with torch.no_grad():
            exact, t32 = m(x.double()), m(x).double()
        ulp = torch.finfo(torch.float32).eps * exact.abs()
        err, theirs = (got - exact).abs(), (t32 - exact).abs()
        bad = err > torch.maximum(ULPS * ulp, TORCH_FACTOR * theirs)
        worst = (err / ulp.clamp_min(1e-45)).max().item()
        print(f"activations {name}: {'ok' if not bad.any() else 'FAIL'}: worst {worst:.3g} ulp of float64 "
              f"(float32 PyTorch {(theirs / ulp.clamp_min(1e-45)).max().item():.3g} ulp); "
              f"{int(bad.sum())} of {x.numel()} beyond max({ULPS} ulp, {TORCH_FACTOR:g}x PyTorch's error)")
        if bad.any():
            failed += 1
            for i in torch.nonzero(bad.reshape(-1)).reshape(-1)[:4].tolist():
                print(f"  x = {x.reshape(-1)[i].item():.9g}: of {got.reshape(-1)[i].item():.9g}, "
                      f"float64 {exact.reshape(-1)[i].item():.9g}, float32 PyTorch {t32.reshape(-1)[i].item():.9g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
